//! The only place that knows key codes and mouse buttons: one key table per mode (keys as
//! shown, the input they match, the action, its help line). Matching, the `?` help overlay
//! and `docs/keys.md` are all derived from these tables.

use super::action::{
    Action, DiffAction as D, ExplorerAction as E, LabAction as L, RanksAction as R,
};
use ratatui::crossterm::event::{
    KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseButton, MouseEvent, MouseEventKind,
};

/// Which keys are live: the search prompt takes text, the help overlay closes on any key,
/// the others each have a table.
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
    /// The explorer's allocator view (its table first, then the explorer's).
    Allocator,
    /// The ranks overview.
    Ranks,
}

/// An input a table row matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    Key(KeyCode),
    /// A key with Ctrl held.
    Ctrl(char),
    WheelUp,
    WheelDown,
    /// A left click (the action gets the cell).
    Click,
}

/// One key of a row: as shown to users, and what it matches.
#[derive(Clone, Copy, Debug)]
pub struct Key {
    pub label: &'static str,
    pub input: Input,
}

/// One row of a key table.
pub struct Binding {
    pub keys: &'static [Key],
    pub action: Action,
    /// The help line (the overlay and docs/keys.md).
    pub help: &'static str,
}

/// A printable key: its label is the character it matches (ASCII).
const fn c(label: &'static str) -> Key {
    Key {
        label,
        input: Input::Key(KeyCode::Char(label.as_bytes()[0] as char)),
    }
}

const fn k(label: &'static str, code: KeyCode) -> Key {
    Key {
        label,
        input: Input::Key(code),
    }
}

const LEFT: Key = k("←", KeyCode::Left);
const RIGHT: Key = k("→", KeyCode::Right);
const UP: Key = k("↑", KeyCode::Up);
const DOWN: Key = k("↓", KeyCode::Down);
const HOME: Key = k("Home", KeyCode::Home);
const END: Key = k("End", KeyCode::End);
const CTRL_C: Key = Key {
    label: "Ctrl-C",
    input: Input::Ctrl('c'),
};
const CLICK: Key = Key {
    label: "click",
    input: Input::Click,
};

const fn row(keys: &'static [Key], action: Action, help: &'static str) -> Binding {
    Binding { keys, action, help }
}

const fn e(a: E) -> Action {
    Action::Explorer(a)
}

const fn d(a: D) -> Action {
    Action::Diff(a)
}

const fn l(a: L) -> Action {
    Action::Lab(a)
}

const fn r(a: R) -> Action {
    Action::Ranks(a)
}

/// The explorer's key table (normal and inspector modes).
pub const EXPLORER: &[Binding] = &[
    row(&[c("h"), LEFT], e(E::CursorLeft), "cursor one column left"),
    row(
        &[c("l"), RIGHT],
        e(E::CursorRight),
        "cursor one column right",
    ),
    row(
        &[c("H"), k("PgUp", KeyCode::PageUp)],
        e(E::PageLeft),
        "page left",
    ),
    row(
        &[c("L"), k("PgDn", KeyCode::PageDown)],
        e(E::PageRight),
        "page right",
    ),
    row(
        &[
            c("+"),
            c("="),
            Key {
                label: "wheel up",
                input: Input::WheelUp,
            },
        ],
        e(E::ZoomIn),
        "zoom in around the cursor",
    ),
    row(
        &[
            c("-"),
            Key {
                label: "wheel down",
                input: Input::WheelDown,
            },
        ],
        e(E::ZoomOut),
        "zoom out",
    ),
    row(&[HOME], e(E::Home), "first event"),
    row(&[END, c("G")], e(E::End), "last event"),
    row(&[c("p")], e(E::JumpPeak), "jump to the global peak"),
    row(&[c("[")], e(E::PrevMark), "previous mark (step/phase)"),
    row(&[c("]")], e(E::NextMark), "next mark (step/phase)"),
    row(&[c("{")], e(E::PrevStepPeak), "previous step's own peak"),
    row(&[c("}")], e(E::NextStepPeak), "next step's own peak"),
    row(
        &[c("o")],
        e(E::NextOom),
        "next out-of-memory event (OOM panel)",
    ),
    row(&[c("O")], e(E::PrevOom), "previous out-of-memory event"),
    row(
        &[c("x")],
        e(E::ToggleOomPanel),
        "pin / unpin the OOM panel (opens on an OOM)",
    ),
    row(
        &[c("J")],
        e(E::OomDown),
        "scroll the OOM panel down (advice, fixes)",
    ),
    row(&[c("K")], e(E::OomUp), "scroll the OOM panel up"),
    row(
        &[c("s")],
        e(E::ToggleAllocator),
        "allocator view: segments, blocks at cursor",
    ),
    row(
        &[c("B")],
        e(E::ToggleBudget),
        "budget view: serving memory per stage, sources",
    ),
    row(
        &[c("k"), UP],
        e(E::SelectUp),
        "select previous live row (scroll inspector)",
    ),
    row(
        &[c("j"), DOWN],
        e(E::SelectDown),
        "select next live row (scroll inspector)",
    ),
    row(
        &[k("Enter", KeyCode::Enter)],
        e(E::Inspect),
        "inspect storage (tree: expand / collapse)",
    ),
    row(&[c("a")], e(E::JumpAlloc), "inspector: jump to its alloc"),
    row(&[c("f")], e(E::JumpFree), "inspector: jump to its free"),
    row(
        &[k("Esc", KeyCode::Esc)],
        e(E::Back),
        "close inspector / help / budget / search",
    ),
    row(
        &[c("g")],
        e(E::ToggleGroup),
        "live set: list / by band / by frame / tree",
    ),
    row(
        &[c("/")],
        e(E::SearchStart),
        "search name/category/frame (tree: filter)",
    ),
    row(
        &[c("n")],
        e(E::NextMatch),
        "next match (live at the cursor first)",
    ),
    row(&[c("N")], e(E::PrevMatch), "previous match"),
    row(&[c("b")], e(E::ToggleBands), "cycle shown bands"),
    row(&[c("t")], e(E::ToggleAxis), "event axis / time axis"),
    row(
        &[c("T")],
        e(E::ToggleAbsoluteTime),
        "times relative to the trace start / absolute",
    ),
    row(
        &[c("w")],
        e(E::ToggleWhatif),
        "whatif overlay (--alloc-conf) on / off",
    ),
    row(&[c("d")], e(E::NextDevice), "next device"),
    row(
        &[c("F")],
        e(E::ToggleFollow),
        "follow the growing file on/off (-f)",
    ),
    row(
        &[c("y")],
        e(E::Copy),
        "copy the selection's summary (OSC 52)",
    ),
    row(&[c("e")], e(E::Export), "export the view (SVG)"),
    row(&[c("?")], e(E::Help), "this help"),
    row(&[c("q"), CTRL_C], Action::Quit, "quit (cancels a load)"),
    row(
        &[CLICK],
        e(E::ClickAt { col: 0, row: 0 }),
        "place the cursor",
    ),
];

/// The allocator view's key table (`s` in the explorer); the explorer's keys work under it
/// (cursor moves, `o`/`O`, `p`: the view follows the cursor).
pub const ALLOCATOR: &[Binding] = &[
    row(
        &[c("k"), UP],
        e(E::AllocUp),
        "allocator: previous segment / block",
    ),
    row(
        &[c("j"), DOWN],
        e(E::AllocDown),
        "allocator: next segment / block",
    ),
    row(
        &[k("Enter", KeyCode::Enter)],
        e(E::AllocEnter),
        "allocator: a segment's blocks / a block's stack and lifetime",
    ),
    row(
        &[c("S")],
        e(E::AllocSort),
        "allocator: sort by size / free bytes / address",
    ),
    row(
        &[c("s"), k("Esc", KeyCode::Esc)],
        e(E::ToggleAllocator),
        "close the allocator view",
    ),
];

/// The cache lab's key table.
pub const LAB: &[Binding] = &[
    row(
        &[k("Space", KeyCode::Char(' ')), c("n")],
        l(L::Step),
        "issue the next request",
    ),
    row(
        &[c("p")],
        l(L::Play),
        "play / pause (2 requests per second)",
    ),
    row(
        &[c("r")],
        l(L::Reset),
        "reset: empty the cache, back to request 0",
    ),
    row(&[c("c")], l(L::CapacityLess), "capacity C − 1 (resets)"),
    row(&[c("C")], l(L::CapacityMore), "capacity C + 1 (resets)"),
    row(&[c("s")], l(L::StrideLess), "stride s − 1 (resets)"),
    row(&[c("S")], l(L::StrideMore), "stride s + 1 (resets)"),
    row(
        &[k("Tab", KeyCode::Tab), UP, DOWN, c("k"), c("j")],
        l(L::Focus),
        "focus the other control (C / s)",
    ),
    row(
        &[LEFT, c("h"), c("-")],
        l(L::Decrease),
        "focused control − 1 (resets)",
    ),
    row(
        &[RIGHT, c("l"), c("+"), c("=")],
        l(L::Increase),
        "focused control + 1 (resets)",
    ),
    row(&[c("?")], l(L::Help), "this help"),
    row(&[c("q"), CTRL_C], Action::Quit, "quit (cancels a load)"),
    row(
        &[CLICK],
        l(L::ClickAt { col: 0, row: 0 }),
        "press a [-] [+] or Step / Play / Reset button",
    ),
];

/// The diff screen's key table.
pub const DIFF: &[Binding] = &[
    row(&[c("h"), LEFT], d(D::CursorLeft), "cursor one column left"),
    row(
        &[c("l"), RIGHT],
        d(D::CursorRight),
        "cursor one column right",
    ),
    row(&[HOME], d(D::Home), "first event"),
    row(&[END, c("G")], d(D::End), "last event"),
    row(
        &[c("[")],
        d(D::PrevStep),
        "cursor to the previous aligned step",
    ),
    row(&[c("]")], d(D::NextStep), "cursor to the next aligned step"),
    row(&[c("p")], d(D::PeakA), "cursor to A's peak"),
    row(&[c("P")], d(D::PeakB), "cursor to B's peak"),
    row(
        &[c("m")],
        d(D::MostDifferent),
        "next of the steps that differ most",
    ),
    row(
        &[c("f")],
        d(D::Fair),
        "fair comparison: parity lines, each run's boundary, what B bought and cost (f closes)",
    ),
    row(
        &[c("j"), DOWN],
        d(D::FairScroll(1)),
        "scroll the fair-comparison panel down",
    ),
    row(
        &[c("k"), UP],
        d(D::FairScroll(-1)),
        "scroll the fair-comparison panel up",
    ),
    row(
        &[k("Esc", KeyCode::Esc)],
        d(D::CloseFair),
        "close the fair-comparison panel",
    ),
    row(&[c("?")], d(D::Help), "this help"),
    row(&[c("q"), CTRL_C], Action::Quit, "quit (cancels a load)"),
    row(
        &[CLICK],
        d(D::ClickAt { col: 0, row: 0 }),
        "place the cursor",
    ),
];

/// The ranks overview's key table.
pub const RANKS: &[Binding] = &[
    row(&[c("k"), UP], r(R::Up), "previous rank"),
    row(&[c("j"), DOWN], r(R::Down), "next rank"),
    row(&[k("PgUp", KeyCode::PageUp)], r(R::PageUp), "page up"),
    row(&[k("PgDn", KeyCode::PageDown)], r(R::PageDown), "page down"),
    row(&[HOME, c("g")], r(R::Home), "first row"),
    row(&[END, c("G")], r(R::End), "last row"),
    row(
        &[c("w")],
        r(R::Worst),
        "select the worst rank (highest peak)",
    ),
    row(&[c("s")], r(R::Sort), "sort by rank / by peak"),
    row(
        &[k("Space", KeyCode::Char(' '))],
        r(R::Mark),
        "mark / unmark the rank for a diff (two at most)",
    ),
    row(&[k("Esc", KeyCode::Esc)], r(R::Unmark), "clear the marks"),
    row(
        &[k("Enter", KeyCode::Enter)],
        r(R::Open),
        "open the rank in the explorer (two marked: their diff); Esc returns",
    ),
    row(
        &[c("d")],
        r(R::Diff),
        "diff the two marked ranks; Esc returns",
    ),
    row(&[c("?")], r(R::Help), "this help"),
    row(&[c("q"), CTRL_C], Action::Quit, "quit (cancels the loads)"),
    row(&[CLICK], r(R::ClickAt { col: 0, row: 0 }), "select a rank"),
];

/// Whether `key` is the press of Esc (a page opened from the ranks overview returns to it).
pub fn is_back(key: &KeyEvent) -> bool {
    key.kind == KeyEventKind::Press && key.code == KeyCode::Esc
}

/// Rows a page key scrolls the help overlay (clamped to its end).
pub const HELP_PAGE: i32 = 10;

/// The tables the `?` overlay lists under the page's `mode`: the allocator view's keys, then
/// the explorer's that still work under it; else the page's own table.
pub fn help_tables(mode: Mode) -> Vec<&'static [Binding]> {
    match mode {
        Mode::Allocator => vec![ALLOCATOR, EXPLORER],
        m => vec![table(m)],
    }
}

/// The overlay's rows of `tables`: each binding's keys (joined) and what it does.
pub fn help_rows(tables: &[&'static [Binding]]) -> Vec<(String, &'static str)> {
    tables
        .iter()
        .flat_map(|t| t.iter())
        .map(|b| {
            let keys: Vec<&str> = b.keys.iter().map(|k| k.label).collect();
            (keys.join(" "), b.help)
        })
        .collect()
}

/// The help overlay's geometry for the page's `mode` on a `width` × `height` screen.
pub fn help_geometry(mode: Mode, width: u16, height: u16) -> super::layout::HelpGeometry {
    let rows = help_rows(&help_tables(mode));
    let key_w = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(4);
    let desc_w = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(10);
    super::layout::HelpGeometry::new(
        ratatui::layout::Rect::new(0, 0, width, height),
        rows.len(),
        key_w,
        desc_w,
    )
}

/// The key table of `mode` (the search prompt and the help overlay have none: they take
/// text / close on any key).
pub fn table(mode: Mode) -> &'static [Binding] {
    match mode {
        Mode::Normal | Mode::Inspect => EXPLORER,
        Mode::Lab => LAB,
        Mode::Diff => DIFF,
        Mode::Allocator => ALLOCATOR,
        Mode::Ranks => RANKS,
        Mode::Search | Mode::Help => &[],
    }
}

/// The first row of `table` with a key matching `input`, as its action.
fn lookup(table: &[Binding], input: Input) -> Option<Action> {
    table
        .iter()
        .find(|b| b.keys.iter().any(|k| k.input == input))
        .map(|b| b.action)
}

/// Maps a key press in `mode` to an action. Release/repeat events are ignored (Windows and
/// kitty-protocol terminals send them too).
pub fn map_key(mode: Mode, key: KeyEvent) -> Option<Action> {
    if key.kind != KeyEventKind::Press {
        return None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    if ctrl && matches!(key.code, KeyCode::Char('c')) {
        return Some(Action::Quit); // in every mode, the prompt included
    }
    match mode {
        Mode::Search => Some(Action::Explorer(match key.code {
            KeyCode::Enter => E::SearchSubmit,
            KeyCode::Esc => E::SearchCancel,
            KeyCode::Backspace => E::SearchBackspace,
            KeyCode::Char(c) if !ctrl => E::SearchChar(c),
            _ => return None,
        })),
        Mode::Help => match key.code {
            KeyCode::Char('q') => Some(Action::Quit),
            KeyCode::Char('j') | KeyCode::Down => Some(Action::ScrollHelp(1)),
            KeyCode::Char('k') | KeyCode::Up => Some(Action::ScrollHelp(-1)),
            KeyCode::PageDown | KeyCode::Char(' ') => Some(Action::ScrollHelp(HELP_PAGE)),
            KeyCode::PageUp => Some(Action::ScrollHelp(-HELP_PAGE)),
            // Any other key closes the overlay.
            _ => Some(Action::CloseHelp),
        },
        Mode::Allocator => lookup(ALLOCATOR, Input::Key(key.code))
            .or_else(|| lookup(EXPLORER, Input::Key(key.code))),
        _ => lookup(table(mode), Input::Key(key.code)),
    }
}

/// Maps a mouse event in `mode` (the page's mode, under any help overlay): the table's
/// wheel and click rows.
pub fn map_mouse(mode: Mode, m: MouseEvent) -> Option<Action> {
    let table = match mode {
        Mode::Search | Mode::Allocator => EXPLORER,
        _ => table(mode),
    };
    match m.kind {
        MouseEventKind::ScrollUp => lookup(table, Input::WheelUp),
        MouseEventKind::ScrollDown => lookup(table, Input::WheelDown),
        MouseEventKind::Down(MouseButton::Left) => {
            lookup(table, Input::Click).map(|a| a.at_cell(m.column, m.row))
        }
        _ => None,
    }
}

fn markdown_table(s: &mut String, table: &[Binding]) {
    s.push_str("| keys | action |\n|---|---|\n");
    for b in table {
        let keys: Vec<String> = b.keys.iter().map(|k| format!("`{}`", k.label)).collect();
        s.push_str(&format!("| {} | {} |\n", keys.join(" "), b.help));
    }
}

/// The key tables as Markdown: docs/keys.md is this text (a test keeps them equal;
/// `UPDATE_DOCS=1 cargo test --test tui tui_keys::docs_keys_md` rewrites it).
pub fn markdown() -> String {
    let mut s = String::from(
        "# memtide explorer keys\n\nGenerated from the key tables in `src/tui/keymap.rs` (`memtide::tui::keymap::markdown`); regenerate with `UPDATE_DOCS=1 cargo test --test tui tui_keys::docs_keys_md`.\n\n",
    );
    markdown_table(&mut s, EXPLORER);
    s.push_str("\nIn the search prompt: type to search (fuzzy: names, categories and frames), `Enter` goes to the best match, `Esc` cancels, `Backspace` deletes. Matches are ranked: those holding the query's words whole before scattered letters, then those live at the cursor (selected where they are: the cursor stays, on the peak if it was there), then a match by name, module path or category before one by a user frame, before one by a library frame only, then the biggest first.\n");
    s.push_str("\n## Allocator view (`s`)\n\nThe explorer's keys keep working (cursor moves, `o`/`O`, `p`): the view follows the cursor.\n\n");
    markdown_table(&mut s, ALLOCATOR);
    for (title, table) in [
        ("Cache lab (`memtide lab`)", LAB),
        ("Diff (`memtide diff A B`, `memtide A B`)", DIFF),
        (
            "Ranks overview (`memtide DIR`, `memtide r0 r1 r2 …`; Esc in a rank's explorer or diff returns to it)",
            RANKS,
        ),
    ] {
        s.push_str(&format!("\n## {title}\n\n"));
        markdown_table(&mut s, table);
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
        // A key listed twice in one table would map to the first row only.
        for (mode, table) in [
            (Mode::Normal, EXPLORER),
            (Mode::Allocator, ALLOCATOR),
            (Mode::Lab, LAB),
            (Mode::Diff, DIFF),
            (Mode::Ranks, RANKS),
        ] {
            for b in table {
                for k in b.keys {
                    match k.input {
                        Input::Key(code) => {
                            assert_eq!(map_key(mode, key(code)), Some(b.action), "{}", k.label)
                        }
                        Input::Ctrl(ch) => {
                            let ev = KeyEvent::new(KeyCode::Char(ch), KeyModifiers::CONTROL);
                            assert_eq!(map_key(mode, ev), Some(b.action), "{}", k.label)
                        }
                        _ => {}
                    }
                }
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
            Some(Action::Explorer(E::SearchChar('q')))
        );
    }
}
