//! The only place that knows key codes and mouse buttons: (mode, key) → [`Action`]. The
//! help overlay and `docs/keys.md` are generated from [`bindings`], the one source of truth.

use super::action::Action;
use ratatui::crossterm::event::{
    KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};

/// Which keys are live: the search prompt takes text, the others share the normal map.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Normal,
    Search,
    Inspect,
    Help,
    /// The cache lab screen.
    Lab,
    /// The diff screen.
    Diff,
}

/// One row of the normal-mode key table: the keys (as shown to users) and the action.
pub struct Binding {
    pub keys: &'static [&'static str],
    pub action: Action,
}

/// The normal-mode key table (one source of truth for keys, help and docs).
pub fn bindings() -> &'static [Binding] {
    const B: &[Binding] = &[
        Binding {
            keys: &["h", "←"],
            action: Action::CursorLeft,
        },
        Binding {
            keys: &["l", "→"],
            action: Action::CursorRight,
        },
        Binding {
            keys: &["H", "PgUp"],
            action: Action::PageLeft,
        },
        Binding {
            keys: &["L", "PgDn"],
            action: Action::PageRight,
        },
        Binding {
            keys: &["+", "=", "wheel up"],
            action: Action::ZoomIn,
        },
        Binding {
            keys: &["-", "wheel down"],
            action: Action::ZoomOut,
        },
        Binding {
            keys: &["Home"],
            action: Action::Home,
        },
        Binding {
            keys: &["End", "G"],
            action: Action::End,
        },
        Binding {
            keys: &["p"],
            action: Action::JumpPeak,
        },
        Binding {
            keys: &["["],
            action: Action::PrevMark,
        },
        Binding {
            keys: &["]"],
            action: Action::NextMark,
        },
        Binding {
            keys: &["{"],
            action: Action::PrevStepPeak,
        },
        Binding {
            keys: &["}"],
            action: Action::NextStepPeak,
        },
        Binding {
            keys: &["k", "↑"],
            action: Action::SelectUp,
        },
        Binding {
            keys: &["j", "↓"],
            action: Action::SelectDown,
        },
        Binding {
            keys: &["Enter"],
            action: Action::Inspect,
        },
        Binding {
            keys: &["a"],
            action: Action::JumpAlloc,
        },
        Binding {
            keys: &["f"],
            action: Action::JumpFree,
        },
        Binding {
            keys: &["Esc"],
            action: Action::Back,
        },
        Binding {
            keys: &["g"],
            action: Action::ToggleGroup,
        },
        Binding {
            keys: &["/"],
            action: Action::SearchStart,
        },
        Binding {
            keys: &["n"],
            action: Action::NextMatch,
        },
        Binding {
            keys: &["N"],
            action: Action::PrevMatch,
        },
        Binding {
            keys: &["b"],
            action: Action::ToggleBands,
        },
        Binding {
            keys: &["t"],
            action: Action::ToggleAxis,
        },
        Binding {
            keys: &["d"],
            action: Action::NextDevice,
        },
        Binding {
            keys: &["F"],
            action: Action::ToggleFollow,
        },
        Binding {
            keys: &["y"],
            action: Action::Copy,
        },
        Binding {
            keys: &["e"],
            action: Action::Export,
        },
        Binding {
            keys: &["?"],
            action: Action::Help,
        },
        Binding {
            keys: &["q", "Ctrl-C"],
            action: Action::Quit,
        },
        Binding {
            keys: &["click"],
            action: Action::ClickAt { col: 0, row: 0 },
        },
    ];
    B
}

/// Maps a key press in `mode` to an action. Release/repeat events are ignored (Windows and
/// kitty-protocol terminals send them too).
pub fn map_key(mode: Mode, key: KeyEvent) -> Option<Action> {
    if key.kind != KeyEventKind::Press {
        return None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    if ctrl && matches!(key.code, KeyCode::Char('c')) {
        return Some(Action::Quit);
    }
    match mode {
        Mode::Search => match key.code {
            KeyCode::Enter => Some(Action::SearchSubmit),
            KeyCode::Esc => Some(Action::SearchCancel),
            KeyCode::Backspace => Some(Action::SearchBackspace),
            KeyCode::Char(c) if !ctrl => Some(Action::SearchChar(c)),
            _ => None,
        },
        Mode::Help => match key.code {
            KeyCode::Char('q') => Some(Action::Quit),
            // Any other key closes the overlay.
            _ => Some(Action::Back),
        },
        Mode::Normal | Mode::Inspect => normal(key.code),
        Mode::Lab => lab(key.code),
        Mode::Diff => diff(key.code),
    }
}

fn normal(code: KeyCode) -> Option<Action> {
    Some(match code {
        KeyCode::Char('h') | KeyCode::Left => Action::CursorLeft,
        KeyCode::Char('l') | KeyCode::Right => Action::CursorRight,
        KeyCode::Char('H') | KeyCode::PageUp => Action::PageLeft,
        KeyCode::Char('L') | KeyCode::PageDown => Action::PageRight,
        KeyCode::Char('+') | KeyCode::Char('=') => Action::ZoomIn,
        KeyCode::Char('-') => Action::ZoomOut,
        KeyCode::Home => Action::Home,
        KeyCode::End | KeyCode::Char('G') => Action::End,
        KeyCode::Char('p') => Action::JumpPeak,
        KeyCode::Char('[') => Action::PrevMark,
        KeyCode::Char(']') => Action::NextMark,
        KeyCode::Char('{') => Action::PrevStepPeak,
        KeyCode::Char('}') => Action::NextStepPeak,
        KeyCode::Char('k') | KeyCode::Up => Action::SelectUp,
        KeyCode::Char('j') | KeyCode::Down => Action::SelectDown,
        KeyCode::Enter => Action::Inspect,
        KeyCode::Char('a') => Action::JumpAlloc,
        KeyCode::Char('f') => Action::JumpFree,
        KeyCode::Esc => Action::Back,
        KeyCode::Char('g') => Action::ToggleGroup,
        KeyCode::Char('/') => Action::SearchStart,
        KeyCode::Char('n') => Action::NextMatch,
        KeyCode::Char('N') => Action::PrevMatch,
        KeyCode::Char('b') => Action::ToggleBands,
        KeyCode::Char('t') => Action::ToggleAxis,
        KeyCode::Char('d') => Action::NextDevice,
        KeyCode::Char('F') => Action::ToggleFollow,
        KeyCode::Char('y') => Action::Copy,
        KeyCode::Char('e') => Action::Export,
        KeyCode::Char('?') => Action::Help,
        KeyCode::Char('q') => Action::Quit,
        _ => return None,
    })
}

/// The cache lab's key table (its help overlay and the lab section of docs/keys.md).
pub fn lab_bindings() -> &'static [Binding] {
    const B: &[Binding] = &[
        Binding {
            keys: &["Space", "n"],
            action: Action::LabStep,
        },
        Binding {
            keys: &["p"],
            action: Action::LabPlay,
        },
        Binding {
            keys: &["r"],
            action: Action::LabReset,
        },
        Binding {
            keys: &["c"],
            action: Action::LabCapacityLess,
        },
        Binding {
            keys: &["C"],
            action: Action::LabCapacityMore,
        },
        Binding {
            keys: &["s"],
            action: Action::LabStrideLess,
        },
        Binding {
            keys: &["S"],
            action: Action::LabStrideMore,
        },
        Binding {
            keys: &["Tab", "↑", "↓", "k", "j"],
            action: Action::LabFocus,
        },
        Binding {
            keys: &["←", "h", "-"],
            action: Action::LabDecrease,
        },
        Binding {
            keys: &["→", "l", "+", "="],
            action: Action::LabIncrease,
        },
        Binding {
            keys: &["?"],
            action: Action::Help,
        },
        Binding {
            keys: &["q", "Ctrl-C"],
            action: Action::Quit,
        },
        Binding {
            keys: &["click"],
            action: Action::LabClick,
        },
    ];
    B
}

fn lab(code: KeyCode) -> Option<Action> {
    Some(match code {
        KeyCode::Char(' ') | KeyCode::Char('n') => Action::LabStep,
        KeyCode::Char('p') => Action::LabPlay,
        KeyCode::Char('r') => Action::LabReset,
        KeyCode::Char('c') => Action::LabCapacityLess,
        KeyCode::Char('C') => Action::LabCapacityMore,
        KeyCode::Char('s') => Action::LabStrideLess,
        KeyCode::Char('S') => Action::LabStrideMore,
        KeyCode::Tab | KeyCode::Up | KeyCode::Down | KeyCode::Char('k') | KeyCode::Char('j') => {
            Action::LabFocus
        }
        KeyCode::Left | KeyCode::Char('h') | KeyCode::Char('-') => Action::LabDecrease,
        KeyCode::Right | KeyCode::Char('l') | KeyCode::Char('+') | KeyCode::Char('=') => {
            Action::LabIncrease
        }
        KeyCode::Char('?') => Action::Help,
        KeyCode::Char('q') => Action::Quit,
        _ => return None,
    })
}

/// The diff screen's key table.
pub fn diff_bindings() -> &'static [Binding] {
    const B: &[Binding] = &[
        Binding {
            keys: &["h", "←"],
            action: Action::CursorLeft,
        },
        Binding {
            keys: &["l", "→"],
            action: Action::CursorRight,
        },
        Binding {
            keys: &["Home"],
            action: Action::Home,
        },
        Binding {
            keys: &["End", "G"],
            action: Action::End,
        },
        Binding {
            keys: &["["],
            action: Action::DiffPrevStep,
        },
        Binding {
            keys: &["]"],
            action: Action::DiffNextStep,
        },
        Binding {
            keys: &["p"],
            action: Action::DiffPeakA,
        },
        Binding {
            keys: &["P"],
            action: Action::DiffPeakB,
        },
        Binding {
            keys: &["m"],
            action: Action::DiffMostDifferent,
        },
        Binding {
            keys: &["?"],
            action: Action::Help,
        },
        Binding {
            keys: &["q", "Ctrl-C"],
            action: Action::Quit,
        },
        Binding {
            keys: &["click"],
            action: Action::ClickAt { col: 0, row: 0 },
        },
    ];
    B
}

fn diff(code: KeyCode) -> Option<Action> {
    Some(match code {
        KeyCode::Char('h') | KeyCode::Left => Action::CursorLeft,
        KeyCode::Char('l') | KeyCode::Right => Action::CursorRight,
        KeyCode::Home => Action::Home,
        KeyCode::End | KeyCode::Char('G') => Action::End,
        KeyCode::Char('[') => Action::DiffPrevStep,
        KeyCode::Char(']') => Action::DiffNextStep,
        KeyCode::Char('p') => Action::DiffPeakA,
        KeyCode::Char('P') => Action::DiffPeakB,
        KeyCode::Char('m') => Action::DiffMostDifferent,
        KeyCode::Char('?') => Action::Help,
        KeyCode::Char('q') => Action::Quit,
        _ => return None,
    })
}

/// Maps a mouse event: wheel zooms, a left click places the cursor.
pub fn map_mouse(m: MouseEvent) -> Option<Action> {
    match m.kind {
        MouseEventKind::ScrollUp => Some(Action::ZoomIn),
        MouseEventKind::ScrollDown => Some(Action::ZoomOut),
        MouseEventKind::Down(MouseButton::Left) => Some(Action::ClickAt {
            col: m.column,
            row: m.row,
        }),
        _ => None,
    }
}

/// The key table as Markdown (docs/keys.md is this text; a test keeps them equal).
pub fn markdown() -> String {
    let mut s = String::from(
        "# memtide explorer keys\n\nGenerated from `src/tui/keymap.rs` (`memtide::tui::keymap::markdown`).\n\n| keys | action |\n|---|---|\n",
    );
    for b in bindings() {
        let keys: Vec<String> = b.keys.iter().map(|k| format!("`{k}`")).collect();
        s.push_str(&format!(
            "| {} | {} |\n",
            keys.join(" "),
            b.action.describe()
        ));
    }
    s.push_str("\nIn the search prompt: type to search (fuzzy, names and frames), `Enter` jumps to the biggest match, `Esc` cancels, `Backspace` deletes.\n");
    for (title, table) in [
        ("Cache lab (`memtide lab`)", lab_bindings()),
        ("Diff (`memtide diff A B`, `memtide A B`)", diff_bindings()),
    ] {
        s.push_str(&format!("\n## {title}\n\n| keys | action |\n|---|---|\n"));
        for b in table {
            let keys: Vec<String> = b.keys.iter().map(|k| format!("`{k}`")).collect();
            s.push_str(&format!(
                "| {} | {} |\n",
                keys.join(" "),
                b.action.describe()
            ));
        }
    }
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    #[test]
    fn every_listed_key_maps_to_its_action() {
        for b in bindings() {
            for k in b.keys {
                let code = match *k {
                    "←" => KeyCode::Left,
                    "→" => KeyCode::Right,
                    "↑" => KeyCode::Up,
                    "↓" => KeyCode::Down,
                    "PgUp" => KeyCode::PageUp,
                    "PgDn" => KeyCode::PageDown,
                    "Home" => KeyCode::Home,
                    "End" => KeyCode::End,
                    "Enter" => KeyCode::Enter,
                    "Esc" => KeyCode::Esc,
                    s if s.chars().count() == 1 => KeyCode::Char(s.chars().next().unwrap()),
                    _ => continue, // mouse, chords, Ctrl-C: checked below
                };
                assert_eq!(map_key(Mode::Normal, key(code)), Some(b.action), "{k}");
            }
        }
        let cc = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(map_key(Mode::Search, cc), Some(Action::Quit));
    }

    #[test]
    fn release_events_are_ignored_and_search_takes_text() {
        let mut k = key(KeyCode::Char('q'));
        k.kind = KeyEventKind::Release;
        assert_eq!(map_key(Mode::Normal, k), None);
        assert_eq!(
            map_key(Mode::Search, key(KeyCode::Char('q'))),
            Some(Action::SearchChar('q'))
        );
    }
}
