//! The explorer's budget view (`B`, issue 53): the serving budget per stage of the device
//! shown — before trace, weights, activation peak, KV cache, graphs, outside, headroom —
//! each with its bytes, source and legend, and the capture ladder. The reducer's steps (open,
//! close by `B` or `Esc`, the allocator view and the budget view taking turns, a trace with no
//! serving memory), the figures of tests/fixtures/serving/README.md worked out by hand, and
//! the screens at 80×24 in colour, mono (`NO_COLOR`) and ASCII (insta).

#![allow(clippy::unwrap_used)]

use memtide::tui::explorer::budget::NONE;
use memtide::tui::testing::Harness;
use memtide::tui::theme::Theme;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

fn capture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/serving/capture.kineto.json")
}

/// Absolute paths differ between machines; only file names reach the snapshots.
fn scrub(s: String) -> String {
    let dir = capture().parent().unwrap().display().to_string();
    s.replace(&dir, "<serving>")
}

/// (name, bytes, source) of each row of the open view.
fn rows(h: &Harness) -> Vec<(&'static str, Option<u64>, Option<&'static str>)> {
    let v = h
        .explorer()
        .budget
        .as_ref()
        .expect("the budget view is open");
    v.figures
        .iter()
        .map(|f| (f.name, f.bytes, f.source))
        .collect()
}

#[test]
fn b_opens_the_budget_of_the_device_shown_and_b_or_esc_closes_it() {
    let mut h = Harness::open(&capture(), 80, 24);
    assert!(h.explorer().budget.is_none());
    h.press("B");
    // The fixture README's figures, by hand.
    assert_eq!(
        rows(&h),
        [
            ("before trace", Some(3072 * MIB), Some("trace")),
            ("weights", None, None),
            ("activation peak", Some(4 * MIB), Some("inferred")),
            ("KV cache", None, None),
            ("graphs", Some(60 * MIB), Some("trace")),
            ("outside", None, None),
            ("headroom", Some((8192 - 3262) * MIB), Some("computed")),
        ]
    );
    let v = h.explorer().budget.as_ref().unwrap();
    assert_eq!(v.capacity, Some(8192 * MIB));
    assert_eq!(
        v.ladder.as_deref(),
        Some("size 16: +20.00 MiB (1 capture) · size 8: +40.00 MiB (1 capture)")
    );
    // It takes the panel below the timeline.
    let l = h.explorer().layout(80, 24);
    assert!(l.panel.height > 0 && l.live.height == 0, "{l:?}");
    h.press("B");
    assert!(h.explorer().budget.is_none(), "B closes it");
    h.press("B<Esc>");
    assert!(h.explorer().budget.is_none(), "Esc closes it");
}

#[test]
fn the_allocator_view_and_the_budget_view_take_turns() {
    let mut h = Harness::open(&capture(), 80, 24);
    h.press("s");
    assert!(h.explorer().alloc.is_some());
    h.press("B");
    assert!(h.explorer().budget.is_some() && h.explorer().alloc.is_none());
    h.press("s");
    assert!(h.explorer().alloc.is_some() && h.explorer().budget.is_none());
}

#[test]
fn a_trace_without_serving_memory_says_so_and_opens_nothing() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/train-3steps.jsonl");
    let mut h = Harness::open(&f, 80, 24);
    h.press("B");
    assert!(h.explorer().budget.is_none());
    assert_eq!(h.app.shared.status.as_deref(), Some(NONE));
    assert!(h.screen().contains("no serving budget"));
}

#[test]
fn the_help_lists_the_budget_key() {
    let mut h = Harness::open(&capture(), 80, 40);
    h.press("?");
    let s = h.screen();
    assert!(s.contains("budget view: serving memory per stage"), "{s}");
}

#[test]
fn budget_view_80x24() {
    let mut h = Harness::open(&capture(), 80, 24);
    h.press("B");
    let s = scrub(h.screen());
    // Every stage readable at 80 columns: name, bytes or unknown, source, legend.
    for line in [
        "before trace",
        "3.000 GiB",
        "live at trace start",
        "60.00 MiB",
        "CUDA-graph pools",
        "4.814 GiB",
        "left of the capacity",
        "ladder: size 16: +20.00 MiB (1 capture) · size 8: +40.00 MiB (1 capture)",
        "headroom = capacity − reserve peak (memory outside PyTorch not measured)",
        "trace = measured · inferred = attributed by frames · computed = derived",
    ] {
        assert!(s.contains(line), "{line:?} missing:\n{s}");
    }
    insta::assert_snapshot!(s);
}

#[test]
fn budget_view_mono_80x24() {
    // NO_COLOR picks the mono theme: glyphs, brackets and words carry the view.
    let theme = Theme::builtin("mono").expect("mono theme");
    let mut h = Harness::open_with(&capture(), 80, 24, theme, false);
    h.press("B");
    insta::assert_snapshot!(scrub(h.screen()));
}

#[test]
fn budget_view_ascii_80x24() {
    let mut h = Harness::open_with(&capture(), 80, 24, Theme::default(), true);
    h.press("B");
    let s = scrub(h.screen());
    // The before-trace row in the unknown band's ASCII glyph, the headroom in its own.
    assert!(
        s.contains(": before trace      3.000 GiB [::::      ]  37% trace"),
        "{s}"
    );
    assert!(
        s.contains("~ headroom          4.814 GiB [~~~~~~    ]  60% computed"),
        "{s}"
    );
    insta::assert_snapshot!(s);
}

#[test]
fn the_smallest_screen_shows_what_fits() {
    // 40×10: the panel has a row or two; the title first, nothing drawn outside it.
    let mut h = Harness::open(&capture(), 40, 10);
    h.press("B");
    assert!(h.explorer().budget.is_some());
    let s = h.screen();
    assert!(s.contains("serving budget"), "{s}");
    assert!(s.lines().all(|l| l.chars().count() <= 40), "{s}");
}
