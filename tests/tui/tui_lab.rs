//! The cache lab screen (`memtide lab`), headless: lab actions through the real keymap →
//! reducer, playback from injected ticks (no sleeping), mouse buttons, the help overlay, and
//! insta snapshots. Expected numbers are the course's worked checks (issue 8) and hand
//! computation, never the lab's own output.

#![allow(clippy::unwrap_used)]

use memtide::tui::action::Action;
use memtide::tui::app::App;
use memtide::tui::lab::{Focus, LabLayout, LabState};
use memtide::tui::msg::Msg;
use memtide::tui::testing::Harness;
use memtide::tui::theme::Theme;
use memtide_core::lab::MAX_REQUESTS;
use ratatui::crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use std::time::{Duration, Instant};

fn lab(c: usize, s: u64, w: u16, h: u16) -> Harness {
    Harness::with_app(App::new_lab(c, s, Theme::default(), false), w, h)
}

fn st(h: &Harness) -> &LabState {
    h.app.lab().expect("lab screen")
}

fn click(h: &mut Harness, col: u16, row: u16) {
    h.send(Msg::Mouse(MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column: col,
        row,
        modifiers: KeyModifiers::NONE,
    }));
}

#[test]
fn worked_check_c4_s4_gives_4_misses_and_12_hits() {
    let mut h = lab(4, 4, 80, 24);
    // Before any step the prediction is on screen: s = 4 visits 0, 4, 8, 12.
    let s = h.screen();
    assert!(
        s.contains("the stride visits 4 distinct addresses per cycle;"),
        "{s}"
    );
    assert!(
        s.contains("with C = 4 entries the first 16 requests will miss 4 times"),
        "{s}"
    );
    for _ in 0..16 {
        h.press(" ");
    }
    let l = &st(&h).lab;
    assert_eq!((l.misses(), l.hits()), (4, 12));
    // The cycle 0, 4, 8, 12 fits: the most recent (12) first, the oldest (0) last.
    assert_eq!(l.slots(), &[12, 8, 4, 0]);
    let s = h.screen();
    assert!(
        s.contains("16 requests · 12 hits · 4 misses · hit rate 75.0%"),
        "{s}"
    );
    assert!(
        s.contains("check: the first 16 requests missed 4 times, as predicted"),
        "{s}"
    );
}

#[test]
fn worked_check_c2_s4_misses_every_time() {
    let mut h = lab(2, 4, 80, 24);
    assert!(h.screen().contains("will miss 16 times"));
    h.press("nnnnnnnnnnnnnnnn");
    let l = &st(&h).lab;
    assert_eq!((l.misses(), l.hits()), (16, 0));
    // Request 2 (address 8) evicts the least recently used entry, address 0.
    assert_eq!(l.history()[2].evicted, Some(0));
    assert!(h.screen().contains("miss, evicts 0"));
}

#[test]
fn controls_change_c_and_s_and_reset() {
    let mut h = lab(4, 4, 80, 24);
    h.press("   ");
    assert_eq!(st(&h).lab.issued(), 3);
    // C − 1 (c) resets; C + 1 twice (C) → 5.
    h.press("c");
    assert_eq!((st(&h).lab.capacity(), st(&h).lab.issued()), (3, 0));
    h.press("CC");
    assert_eq!(st(&h).lab.capacity(), 5);
    h.press("sSS");
    assert_eq!(st(&h).lab.stride(), 5);
    // Arrows change the focused control; Tab moves focus to the stride.
    h.press("<Left>");
    assert_eq!(st(&h).lab.capacity(), 4);
    h.press("<Down>");
    assert_eq!(st(&h).focus, Focus::Stride);
    h.press("<Right>");
    assert_eq!(st(&h).lab.stride(), 6);
    // Clamped to 1..=16 and 0..=16.
    for _ in 0..20 {
        h.press("c").press("s");
    }
    assert_eq!((st(&h).lab.capacity(), st(&h).lab.stride()), (1, 0));
    for _ in 0..20 {
        h.press("C").press("S");
    }
    assert_eq!((st(&h).lab.capacity(), st(&h).lab.stride()), (16, 16));
    // Reset empties the cache and restarts at request 0.
    h.press("   r");
    let l = &st(&h).lab;
    assert_eq!((l.issued(), l.hits(), l.misses()), (0, 0, 0));
    assert!(l.slots().is_empty());
}

#[test]
fn mouse_buttons_drive_the_controls() {
    let mut h = lab(4, 4, 80, 24);
    let l = LabLayout::new(80, 24);
    click(&mut h, l.cap_plus.x + 1, l.cap_plus.y);
    assert_eq!(st(&h).lab.capacity(), 5);
    click(&mut h, l.stride_minus.x, l.stride_minus.y);
    assert_eq!(st(&h).lab.stride(), 3);
    click(&mut h, l.step.x + 2, l.step.y);
    click(&mut h, l.step.x + 2, l.step.y);
    assert_eq!(st(&h).lab.issued(), 2);
    click(&mut h, l.reset.x, l.reset.y);
    assert_eq!(st(&h).lab.issued(), 0);
    // The buttons are where the screen draws them.
    let s = h.screen();
    let rows: Vec<&str> = s.lines().collect();
    let cap_row: Vec<char> = rows[l.cap_plus.y as usize].chars().collect();
    let plus: String = cap_row[l.cap_plus.x as usize..][..3].iter().collect();
    assert_eq!(plus, "[+]");
    let btn_row: Vec<char> = rows[l.step.y as usize].chars().collect();
    let step: String = btn_row[l.step.x as usize..][..8].iter().collect();
    assert_eq!(step, "[ Step ]");
}

#[test]
fn play_issues_two_requests_per_second_of_injected_ticks() {
    let mut h = lab(4, 4, 80, 24);
    let t0 = Instant::now();
    let at = |ms: u64| Msg::Tick {
        now: t0 + Duration::from_millis(ms),
    };
    h.send(at(0));
    h.press("p");
    assert!(st(&h).player.playing());
    h.send(at(400));
    assert_eq!(st(&h).lab.issued(), 0);
    h.send(at(500));
    assert_eq!(st(&h).lab.issued(), 1);
    h.send(at(3_000)); // 3 s of playback: 6 requests
    assert_eq!(st(&h).lab.issued(), 6);
    assert!(h.screen().contains("[ Pause ]"));
    h.press("p"); // pause
    h.send(at(60_000));
    assert_eq!(st(&h).lab.issued(), 6);
    // Play again from t = 60 s: 8 s later, 16 more requests.
    h.press("p");
    h.send(at(68_000));
    assert_eq!(st(&h).lab.issued(), 22);
}

#[test]
fn playback_stops_at_4096_requests() {
    let mut h = lab(3, 5, 80, 24);
    let t0 = Instant::now();
    h.send(Msg::Tick { now: t0 });
    h.press("p");
    // An hour of playback owes 7,200 requests; the lab stops at 4,096.
    h.send(Msg::Tick {
        now: t0 + Duration::from_secs(3600),
    });
    let s = st(&h);
    assert_eq!(s.lab.issued(), MAX_REQUESTS);
    assert!(!s.player.playing());
    assert!(h.screen().contains("stopped at 4,096 requests"));
    // Step and play refuse at the cap; reset starts over.
    h.press(" ");
    assert_eq!(st(&h).lab.issued(), MAX_REQUESTS);
    h.press("r ");
    assert_eq!(st(&h).lab.issued(), 1);
}

#[test]
fn changing_a_control_pauses_playback() {
    let mut h = lab(4, 4, 80, 24);
    let t0 = Instant::now();
    h.send(Msg::Tick { now: t0 });
    h.press("p");
    h.send(Msg::Tick {
        now: t0 + Duration::from_secs(2),
    });
    assert_eq!(st(&h).lab.issued(), 4);
    h.press("C");
    assert!(!st(&h).player.playing());
    assert_eq!(st(&h).lab.issued(), 0);
}

#[test]
fn help_lists_the_lab_keys_and_q_quits() {
    let mut h = lab(4, 4, 80, 24);
    h.press("?");
    let s = h.screen();
    for want in [
        "issue the next request",
        "play / pause (2 requests per second)",
        "reset: empty the cache",
        "capacity C + 1",
        "stride s − 1",
        "Space n",
    ] {
        assert!(s.contains(want), "{want}: {s}");
    }
    // Any key closes the overlay without acting.
    h.press(" ");
    assert!(!h.app.shared.help);
    assert_eq!(st(&h).lab.issued(), 0);
    h.send(Msg::Action(Action::Quit));
    assert!(h.app.shared.quit);
}

#[test]
fn the_screen_says_it_is_a_toy_unlike_gpu_memory() {
    let h = lab(4, 4, 80, 24);
    let s = h.screen();
    assert!(
        s.contains("teaching toy, deliberately unlike GPU memory"),
        "{s}"
    );
    assert!(
        s.contains("not bytes, aliases, lifetimes or an allocator"),
        "{s}"
    );
}

#[test]
fn lab_80x24() {
    let mut h = lab(4, 4, 80, 24);
    h.press("      "); // six requests: 4 misses, then hits on 0 and 4
    insta::assert_snapshot!(h.screen());
}

#[test]
fn lab_before_any_step_80x24() {
    let h = lab(2, 4, 80, 24);
    insta::assert_snapshot!(h.screen());
}

#[test]
fn lab_40x10() {
    let mut h = lab(4, 4, 40, 10);
    h.press("   ");
    insta::assert_snapshot!(h.screen());
}

#[test]
fn every_listed_lab_and_diff_key_maps_to_its_action() {
    use memtide::tui::keymap::{map_key, Input, Mode, DIFF, LAB};
    use ratatui::crossterm::event::{KeyCode, KeyEvent};
    for (mode, table) in [(Mode::Lab, LAB), (Mode::Diff, DIFF)] {
        for b in table {
            for k in b.keys {
                let ev = match k.input {
                    Input::Key(code) => KeyEvent::new(code, KeyModifiers::NONE),
                    Input::Ctrl(c) => KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL),
                    _ => continue, // click
                };
                let got = map_key(mode, ev);
                assert_eq!(got, Some(b.action), "{mode:?} {}", k.label);
            }
        }
    }
}

#[test]
fn lab_help_80x24() {
    let mut h = lab(4, 4, 80, 24);
    h.press("?");
    insta::assert_snapshot!(h.screen());
}
