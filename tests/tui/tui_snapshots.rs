//! Rendered screens on ratatui's TestBackend, as insta snapshots (80×24, 200×50, 40×10, plus
//! the inspector, help, ASCII, mono and error screens). Review changes with `cargo insta review`.

#![allow(clippy::unwrap_used)]

use memtide::tui::testing::Harness;
use memtide::tui::theme::Theme;
use std::path::Path;

use crate::support::repo::tui_fixture as fixture;

/// Absolute paths differ between machines; only file names reach the snapshots.
fn scrub(s: String) -> String {
    s.replace(&fixture("").display().to_string(), "<fixtures>/")
}

#[test]
fn peak_80x24() {
    let h = Harness::open(&fixture("train3.jsonl"), 80, 24);
    insta::assert_snapshot!(scrub(h.screen()));
}

#[test]
fn peak_200x50() {
    let h = Harness::open(&fixture("train3.jsonl"), 200, 50);
    insta::assert_snapshot!(scrub(h.screen()));
}

#[test]
fn peak_40x10() {
    let h = Harness::open(&fixture("train3.jsonl"), 40, 10);
    insta::assert_snapshot!(scrub(h.screen()));
}

#[test]
fn inspect_retained_storage_100x30() {
    let mut h = Harness::open(&fixture("train3.jsonl"), 100, 30);
    h.press("p<Enter>");
    insta::assert_snapshot!(scrub(h.screen()));
}

#[test]
fn help_overlay_80x40() {
    let mut h = Harness::open(&fixture("train3.jsonl"), 80, 40);
    h.press("?");
    insta::assert_snapshot!(scrub(h.screen()));
}

#[test]
fn design_example_ascii_80x24() {
    let mut h = Harness::open_with(&fixture("design.jsonl"), 80, 24, Theme::default(), true);
    // Between t=12 and t=30 only the view holds fc.weight.
    h.press("<Home>llllll");
    insta::assert_snapshot!(scrub(h.screen()));
}

#[test]
fn mono_shades_80x24() {
    let theme = Theme::builtin("mono").expect("mono theme");
    let h = Harness::open_with(&fixture("train3.jsonl"), 80, 24, theme, false);
    insta::assert_snapshot!(scrub(h.screen()));
}

#[test]
fn search_prompt_80x24() {
    let mut h = Harness::open(&fixture("train3.jsonl"), 80, 24);
    h.press("/adam.py");
    insta::assert_snapshot!(scrub(h.screen()));
}

#[test]
fn error_screen_80x24() {
    // Relative to the package root (cargo's working directory for tests), so the message
    // wraps the same wherever the repository is cloned.
    let h = Harness::open(Path::new("tests/fixtures/tui/bad.jsonl"), 80, 24);
    insta::assert_snapshot!(scrub(h.screen()));
}

#[test]
fn too_small_30x8() {
    let mut h = Harness::open(&fixture("train3.jsonl"), 80, 24);
    h.send(memtide::tui::msg::Msg::Resize {
        width: 30,
        height: 8,
    });
    insta::assert_snapshot!(h.screen());
}

#[test]
fn help_overlay_two_columns_130x24() {
    let mut h = Harness::open(&fixture("train3.jsonl"), 130, 24);
    h.press("?");
    insta::assert_snapshot!(scrub(h.screen()));
}

#[test]
fn time_axis_80x24() {
    let mut h = Harness::open(&fixture("train3.jsonl"), 80, 24);
    h.press("t");
    insta::assert_snapshot!(scrub(h.screen()));
}

#[test]
fn loading_screen_shows_bytes_rate_and_eta() {
    use memtide::tui::app::{App, Screen};
    use memtide::tui::msg::Msg;
    use memtide::tui::update::{start, update};
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};
    let mut app = App::new(
        "big.jsonl".into(),
        Default::default(),
        Theme::default(),
        false,
    );
    update(
        &mut app,
        Msg::Resize {
            width: 80,
            height: 24,
        },
    );
    let _ = start(&mut app);
    let progress = match &app.explorer().expect("explorer").screen {
        Screen::Loading(l) => l.progress.clone(),
        _ => panic!("loading"),
    };
    progress.total.store(100_000_000, Ordering::Relaxed);
    let t0 = Instant::now();
    update(&mut app, Msg::Tick { now: t0 });
    progress.done.store(25_000_000, Ordering::Relaxed);
    update(
        &mut app,
        Msg::Tick {
            now: t0 + Duration::from_secs(1),
        },
    );
    // 25 MB in 1 s: 25.0 MB/s, 75 MB left: ETA 3.0 s, 25 %.
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(80, 24)).unwrap();
    term.draw(|f| memtide::tui::ui::draw(f, &app)).unwrap();
    let s = memtide::tui::testing::buffer_text(term.backend().buffer());
    assert!(s.contains("25.0 MB/s"), "{s}");
    assert!(s.contains("ETA 3.0 s"), "{s}");
    assert!(s.contains(" 25%"), "{s}");
    insta::assert_snapshot!(s);
}

#[test]
fn capacity_ceiling_80x24() {
    // train3 with a 600 MiB device: the ceiling fits the scale, so it is drawn as a line.
    let text = std::fs::read_to_string(fixture("train3.jsonl")).unwrap();
    let text = text.replacen(
        "\"clock\":\"us\"",
        "\"clock\":\"us\",\"capacity\":629145600",
        1,
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("train3-cap.jsonl");
    std::fs::write(&path, text).unwrap();
    let h = Harness::open(&path, 80, 24);
    let s = h.screen();
    let ceiling_rows = s.lines().filter(|l| l.contains("══════")).count();
    assert_eq!(ceiling_rows, 1, "{s}");
    insta::assert_snapshot!(s.replace(&dir.path().display().to_string(), "<tmp>"));
}

use crate::support::repo::sample;

/// Every screen and overlay at 80×24, the size of a fresh SSH session: (name, file, keys).
const SCREENS_80X24: [(&str, &str, &str); 9] = [
    ("help", "train3", "?"),
    (
        "help_scrolled_to_the_end",
        "train3",
        "?<PgDn><PgDn><PgDn><PgDn>",
    ),
    ("inspector", "cuda-oom", "p<Enter>"),
    ("oom_panel", "cuda-oom", "o"),
    ("stack_tree", "cuda-oom", "pggg"),
    ("allocator_help", "cuda-oom", "ps?"),
    ("band_filter", "cuda-oom", "pb"),
    ("search_results", "train3", "/attn<Enter>"),
    ("live_by_band", "cuda-oom", "pg"),
];

fn open_80x24(file: &str, keys: &str) -> Harness {
    let path = match file {
        "train3" => fixture("train3.jsonl"),
        _ => sample(&format!("{file}.pickle")),
    };
    let mut h = Harness::open(&path, 80, 24);
    h.press(keys);
    h
}

#[test]
fn every_screen_at_80x24() {
    for (name, file, keys) in SCREENS_80X24 {
        let h = open_80x24(file, keys);
        insta::assert_snapshot!(format!("screen_80x24_{name}"), scrub(h.screen()));
    }
}

/// At 80×24 the header keeps the peak and reserved figures, the status row `? help` and
/// `q quit`, and the help overlay never cuts a key or a word: each description is whole or
/// ends in `…` after a whole word.
#[test]
fn at_80x24_nothing_important_is_cut() {
    use memtide::tui::keymap;
    let helps: Vec<&str> = keymap::help_rows(&[keymap::EXPLORER, keymap::ALLOCATOR])
        .into_iter()
        .map(|(_, d)| d)
        .collect();
    for (name, file, keys) in SCREENS_80X24 {
        let h = open_80x24(file, keys);
        let screen = h.screen();
        let rows: Vec<&str> = screen.lines().collect();
        if !keys.contains('?') {
            assert!(
                rows[0].contains("peak ") && rows[0].contains("reserved "),
                "{name}: {}",
                rows[0]
            );
            // The hints (unless a message holds the row): `? help` and `q quit` both stay.
            let status = rows.last().copied().unwrap_or("");
            if status.starts_with(" ? help") {
                assert!(status.contains("q quit"), "{name}: {status}");
            }
            continue;
        }
        for row in rows.iter().filter(|r| r.starts_with('│')) {
            let inner = row.trim_matches('│').trim_end();
            // A row is "KEYS  description": the description starts after the key column.
            let shown = helps
                .iter()
                .find(|d| inner.ends_with(*d))
                .map(|_| true)
                .unwrap_or_else(|| {
                    inner.ends_with('…')
                        && helps.iter().any(|d| {
                            let cut = inner
                                .rsplit("  ")
                                .next()
                                .unwrap_or("")
                                .trim_end_matches('…');
                            d.starts_with(cut.trim()) && d[cut.trim().len()..].starts_with(' ')
                        })
                });
            assert!(shown, "{name}: a help row is cut mid-word: {row:?}");
        }
    }
}
