//! Rendered screens on ratatui's TestBackend, as insta snapshots (80×24, 200×50, 40×10, plus
//! the inspector, help, ASCII, mono and error screens). Review changes with `cargo insta review`.

#![allow(clippy::unwrap_used)]

use memtide::tui::testing::Harness;
use memtide::tui::theme::Theme;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tui")
        .join(name)
}

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
    let h = Harness::open(&fixture("bad.jsonl"), 80, 24);
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
