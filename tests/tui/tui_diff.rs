//! The diff screen (`memtide diff A B`, `memtide A B`), headless: both files load through the
//! real effect path, alignment by step marks on the bundled samples, the shared cursor, and
//! insta snapshots. Expected figures come from `sample-traces/README.md` (computed by hand
//! from the generator's schedule), not from memtide's output.

#![allow(clippy::unwrap_used)]

use memtide::tui::app::App;
use memtide::tui::diffview::{col_of, segment_at, DiffState};
use memtide::tui::msg::Msg;
use memtide::tui::testing::Harness;
use memtide::tui::theme::Theme;
use std::path::Path;

const MIB: i128 = 1 << 20;

use crate::support::repo::sample;

fn open(a: &str, b: &str, w: u16, h: u16) -> Harness {
    let app = App::new_diff(
        sample(a),
        sample(b),
        Default::default(),
        Theme::default(),
        false,
    );
    Harness::with_app(app, w, h)
}

fn plain_vs_checkpointed(w: u16, h: u16) -> Harness {
    open("train-3steps.jsonl", "train-checkpointed.jsonl", w, h)
}

fn st(h: &Harness) -> &DiffState {
    h.app.diff().expect("diff screen")
}

#[test]
fn peaks_and_band_deltas_match_the_samples_readme() {
    let h = plain_vs_checkpointed(120, 40);
    let d = st(&h).diff.as_ref().expect("both loaded");
    // README: plain 9536 MiB, checkpointed 8512 MiB; activation 3136 vs 2112 MiB.
    assert_eq!(d.peak_a.unwrap().bytes.0, 9_999_220_736);
    assert_eq!(d.peak_b.unwrap().bytes.0, 8_925_478_912);
    assert_eq!(d.band_delta[1], -1024 * MIB);
    assert_eq!(d.band_delta[0], 0);
    assert_eq!(d.aligned_by, "step marks");
    let s = h.screen();
    assert!(s.contains("peak A 9.312 GiB"), "{s}");
    assert!(s.contains("peak B 8.312 GiB"), "{s}");
    assert!(s.contains("B − A −1.000 GiB"), "{s}");
}

#[test]
fn steps_are_aligned_over_the_same_spans() {
    let h = plain_vs_checkpointed(120, 40);
    let s = st(&h);
    let d = s.diff.as_ref().unwrap();
    let (a, b) = (s.a.dev.as_ref().unwrap(), s.b.dev.as_ref().unwrap());
    // Three steps each; the step-2 delta is −1024 MiB (8512 − 9536), step 0 is warm-up.
    assert_eq!(d.steps.len(), 3);
    assert_eq!(d.steps[2].delta(), Some(-1024 * MIB));
    assert_eq!(d.steps[1].delta(), Some(-1024 * MIB));
    let width = s.cols_a.len();
    assert_eq!(width, s.cols_b.len());
    assert_eq!(
        width,
        memtide::tui::layout::Layout::new(h.app.shared.width, h.app.shared.height, false)
            .plot
            .width as usize
    ); // same plot width as the explorer
    let steps: Vec<_> = s.segments.iter().filter(|g| g.step.is_some()).collect();
    assert_eq!(steps.len(), 3);
    for (k, g) in steps.iter().enumerate() {
        let (ra, rb) = (
            d.steps[k].a.as_ref().unwrap(),
            d.steps[k].b.as_ref().unwrap(),
        );
        // Each step's first column starts at that step's first event, in both runs, and its
        // last column ends at the step's last event.
        assert_eq!(s.cols_a[g.x0].lo, ra.lo, "A step {k}");
        assert_eq!(s.cols_b[g.x0].lo, rb.lo, "B step {k}");
        assert_eq!(s.cols_a[g.x1 - 1].hi, ra.hi, "A step {k}");
        assert_eq!(s.cols_b[g.x1 - 1].hi, rb.hi, "B step {k}");
        // The marks are those of the traces: each run's step k starts at a step mark named so.
        let mark = |dev: &memtide::tui::app::Device, at| {
            dev.trace
                .marks
                .iter()
                .find(|m| m.at == at && m.kind == memtide_core::trace::MarkKind::Step)
                .map(|m| dev.trace.mark_name(m).to_string())
        };
        assert_eq!(
            mark(a, ra.lo).as_deref(),
            Some(format!("step {k}").as_str())
        );
        assert_eq!(
            mark(b, rb.lo).as_deref(),
            Some(format!("step {k}").as_str())
        );
    }
    // Steps share the width equally (±1 column for rounding).
    let widths: Vec<usize> = steps.iter().map(|g| g.x1 - g.x0).collect();
    assert!(
        widths.iter().max().unwrap() - widths.iter().min().unwrap() <= 1,
        "{widths:?}"
    );
    // The peaks (both in step 1 per the README) are marked inside step 1's span.
    let pa = s.peak_col_a.unwrap();
    let pb = s.peak_col_b.unwrap();
    assert_eq!(segment_at(&s.segments, pa), segment_at(&s.segments, pb));
    assert_eq!(
        s.segments[segment_at(&s.segments, pa).unwrap()].step,
        Some(1)
    );
    // The peak column shows the peak itself (peak-preserving columns).
    assert_eq!(s.cols_a[pa].bands.total(), 9_999_220_736);
    assert_eq!(s.cols_b[pb].bands.total(), 8_925_478_912);
}

#[test]
fn one_cursor_moves_both_runs() {
    let mut h = plain_vs_checkpointed(120, 40);
    // Opens at A's peak column.
    assert_eq!(Some(st(&h).cursor), st(&h).peak_col_a);
    h.press("<Home>");
    assert_eq!(st(&h).cursor, 0);
    let s = h.screen();
    assert!(s.contains("cursor before steps"), "{s}");
    // ] jumps to the next aligned step: the first event of step 0 in both runs.
    h.press("]");
    let s0 = st(&h);
    let d = s0.diff.clone().unwrap();
    let c = s0.cursor;
    assert_eq!(s0.cols_a[c].lo, d.steps[0].a.as_ref().unwrap().lo);
    assert_eq!(s0.cols_b[c].lo, d.steps[0].b.as_ref().unwrap().lo);
    h.press("]]");
    let c2 = st(&h).cursor;
    let s2 = st(&h);
    assert_eq!(s2.cols_a[c2].lo, d.steps[2].a.as_ref().unwrap().lo);
    assert_eq!(s2.cols_b[c2].lo, d.steps[2].b.as_ref().unwrap().lo);
    // l moves one column in both plots: each run's shown range advances.
    let (a0, b0) = (s2.cols_a[c2].hi, s2.cols_b[c2].hi);
    h.press("l");
    let s3 = st(&h);
    assert_eq!(s3.cursor, c2 + 1);
    assert!(s3.cols_a[c2 + 1].lo > a0 && s3.cols_b[c2 + 1].lo > b0);
    let s = h.screen();
    assert!(s.contains("cursor step 2"), "{s}");
    h.press("h[");
    assert_eq!(st(&h).cursor, st(&h).segments[2].x0); // back to step 1's start
                                                      // p / P: each run's peak.
    h.press("P");
    assert_eq!(Some(st(&h).cursor), st(&h).peak_col_b);
    h.press("p");
    assert_eq!(Some(st(&h).cursor), st(&h).peak_col_a);
    let s = h.screen();
    assert!(s.contains("A #77 9.312 GiB"), "{s}");
}

#[test]
fn m_visits_the_steps_that_differ_most() {
    let mut h = plain_vs_checkpointed(120, 40);
    h.press("m");
    let s = h.screen();
    // Steps 1 and 2 both differ by −1024 MiB; step 0 (warm-up) not at all.
    assert!(
        s.contains("step 1: peaks differ by −1.000 GiB (1 of 3"),
        "{s}"
    );
    let st1 = st(&h);
    let d = st1.diff.as_ref().unwrap();
    let at = d.steps[1].a.as_ref().unwrap().peak_at;
    assert_eq!(Some(st1.cursor), col_of(&st1.cols_a, at));
    // The table flags the most different steps.
    let flagged: Vec<&str> = s.lines().filter(|l| l.contains("◆")).collect();
    assert_eq!(flagged.len(), 2, "{s}");
    assert!(flagged[0].contains("step 1") && flagged[1].contains("step 2"));
}

#[test]
fn traces_without_marks_align_by_event_index() {
    let dir = tempfile::tempdir().unwrap();
    let head = r#"{"memtide":1,"device":"cuda:0","clock":"us","source":"test","meta":{}}"#;
    let write = |name: &str, body: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, format!("{head}\n{body}")).unwrap();
        p
    };
    // A: 1 MiB, then 2 MiB more (peak 3 MiB at event 1), then frees. 3 events.
    let a = write(
        "a.jsonl",
        r#"{"t":1,"op":"alloc","id":1,"size":1048576,"cat":"activation"}
{"t":2,"op":"alloc","id":2,"size":2097152,"cat":"activation"}
{"t":3,"op":"free","id":2}
"#,
    );
    // B: 4 MiB of activations (peak at event 0), freed. 2 events.
    let b = write(
        "b.jsonl",
        r#"{"t":1,"op":"alloc","id":1,"size":4194304,"cat":"activation"}
{"t":2,"op":"free","id":1}
"#,
    );
    let h = Harness::with_app(
        App::new_diff(a, b, Default::default(), Theme::default(), false),
        80,
        24,
    );
    let s = st(&h);
    let d = s.diff.as_ref().unwrap();
    assert_eq!(d.aligned_by, "event index (no step marks)");
    assert_eq!(s.segments.len(), 1);
    let w = s.cols_a.len();
    assert_eq!((s.segments[0].x0, s.segments[0].x1), (0, w));
    // Each run spans the whole width: first column at event 0, last at its last event.
    assert_eq!((s.cols_a[0].lo.0, s.cols_a[w - 1].hi.0), (0, 2));
    assert_eq!((s.cols_b[0].lo.0, s.cols_b[w - 1].hi.0), (0, 1));
    assert_eq!(d.band_delta[1], MIB); // activation: 4 − 3 MiB
    assert_eq!(s.ymax, 4 << 20); // the shared scale is the higher peak
    let scr = h.screen();
    assert!(scr.contains("peak A 3.000 MiB"), "{scr}");
    assert!(scr.contains("peak B 4.000 MiB"), "{scr}");
}

#[test]
fn a_bad_file_shows_the_error_and_sets_a_failing_exit_code() {
    let bad = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tui/bad.jsonl");
    let app = App::new_diff(
        sample("train-3steps.jsonl"),
        bad,
        Default::default(),
        Theme::default(),
        false,
    );
    let mut h = Harness::with_app(app, 80, 24);
    let s = h.screen();
    assert!(s.contains("cannot compare"), "{s}");
    // The error view wraps long paths; the file name may straddle a line.
    let unwrapped: String = s.split_whitespace().collect();
    assert!(unwrapped.contains("bad.jsonl"), "{s}");
    assert_eq!(
        h.app.shared.outcome,
        memtide::tui::app::Outcome::InputFailed
    );
    h.press("q");
    assert!(h.app.shared.quit);
}

#[test]
fn help_lists_the_diff_keys() {
    let mut h = plain_vs_checkpointed(80, 24);
    h.press("?");
    let s = h.screen();
    assert!(s.contains("cursor to A's peak"), "{s}");
    assert!(s.contains("next of the steps that differ most"), "{s}");
    h.press("x");
    assert!(!h.app.shared.help);
}

#[test]
fn resize_keeps_the_alignment() {
    let mut h = plain_vs_checkpointed(80, 24);
    h.send(Msg::Resize {
        width: 150,
        height: 40,
    });
    let s = st(&h);
    assert_eq!(s.cols_a.len(), 150 - 9);
    let g = s.segments.iter().find(|g| g.step == Some(2)).unwrap();
    let d = s.diff.as_ref().unwrap();
    assert_eq!(s.cols_b[g.x0].lo, d.steps[2].b.as_ref().unwrap().lo);
}

/// Absolute paths never reach the screens (only file names), so snapshots are portable.
#[test]
fn diff_80x24() {
    let h = plain_vs_checkpointed(80, 24);
    insta::assert_snapshot!(h.screen());
}

#[test]
fn diff_120x40() {
    let h = plain_vs_checkpointed(120, 40);
    insta::assert_snapshot!(h.screen());
}

#[test]
fn diff_leak_40x10() {
    let h = open("train-3steps.jsonl", "train-leak.jsonl", 40, 10);
    insta::assert_snapshot!(h.screen());
}

#[test]
fn loading_screen_names_both_runs_until_both_are_read() {
    use memtide::tui::effect::Effect;
    use memtide::tui::update::{start, update};
    let mut a = App::new_diff(
        sample("train-3steps.jsonl"),
        sample("train-checkpointed.jsonl"),
        Default::default(),
        Theme::default(),
        false,
    );
    update(
        &mut a,
        Msg::Resize {
            width: 80,
            height: 24,
        },
    );
    let fx = start(&mut a);
    // One load per file, each on a worker.
    let loads: Vec<_> = fx
        .iter()
        .filter_map(|e| match e {
            Effect::Load { gen, path, .. } => Some((*gen, path.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(loads.len(), 2);
    assert_ne!(loads[0].0, loads[1].0);
    let mut h = Harness::with_app(a, 80, 24);
    // with_app ran start again: a fresh pair of loads replaced the first (stale gens ignored).
    assert!(st(&h).diff.is_some());
    // A reply for an unknown generation changes nothing.
    h.send(Msg::Loaded {
        gen: 9_999,
        result: Err("stale".into()),
    });
    assert!(st(&h).error.is_none());
    // Before any reply, the screen lists both files.
    let mut b = App::new_diff(
        sample("train-3steps.jsonl"),
        sample("train-leak.jsonl"),
        Default::default(),
        Theme::default(),
        false,
    );
    update(
        &mut b,
        Msg::Resize {
            width: 80,
            height: 24,
        },
    );
    let _ = start(&mut b);
    let backend = ratatui::backend::TestBackend::new(80, 24);
    let mut term = ratatui::Terminal::new(backend).unwrap();
    term.draw(|f| memtide::tui::ui::draw(f, &b)).unwrap();
    let s = memtide::tui::testing::buffer_text(term.backend().buffer());
    assert!(s.contains("loading both runs"), "{s}");
    assert!(s.contains("A  train-3steps.jsonl"), "{s}");
    assert!(s.contains("B  train-leak.jsonl"), "{s}");
}

/// Longer synthetic runs with different step counts (20 vs 15 steps of 10,000 events): the
/// steps B lacks get empty spans, the table shows them as missing, each run's peak column
/// holds its global peak, and every size draws.
#[test]
fn runs_with_different_step_counts() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, events: u64, seed: u64| {
        let p = dir.path().join(name);
        let mut f = std::io::BufWriter::new(std::fs::File::create(&p).unwrap());
        memtide_core::synth::jsonl(events, seed, &mut f).unwrap();
        drop(f);
        p
    };
    let a = write("a.jsonl", 200_000, 1);
    let b = write("b.jsonl", 150_000, 2);
    let mut h = Harness::with_app(
        App::new_diff(a, b, Default::default(), Theme::default(), false),
        120,
        40,
    );
    let s = st(&h);
    assert_eq!(s.error, None);
    let d = s.diff.as_ref().expect("loaded");
    let na = d.steps.iter().filter(|p| p.a.is_some()).count();
    let nb = d.steps.iter().filter(|p| p.b.is_some()).count();
    assert_eq!((d.steps.len(), na, nb), (20, 20, 15));
    for g in s
        .segments
        .iter()
        .filter(|g| g.step.is_some_and(|k| k >= 15))
    {
        assert!(g.b.is_none());
        assert!(s.cols_b[g.x0..g.x1].iter().all(|c| c.empty));
        assert!(s.cols_a[g.x0..g.x1].iter().all(|c| !c.empty));
    }
    let (pa, pb) = (d.peak_a.unwrap(), d.peak_b.unwrap());
    assert_eq!(s.cols_a[s.peak_col_a.unwrap()].bands.total(), pa.bytes.0);
    assert_eq!(s.cols_b[s.peak_col_b.unwrap()].bands.total(), pb.bytes.0);
    assert_eq!(s.ymax, pa.bytes.0.max(pb.bytes.0));
    for (w, hh) in [(40, 10), (80, 24), (200, 50)] {
        h.send(Msg::Resize {
            width: w,
            height: hh,
        });
        assert!(h.screen().contains("memtide diff"));
    }
    h.press("]]]m[pP<End>l<Home>h");
    assert_eq!(st(&h).cursor, 0);
}

/// At 80 columns, two run names too long to stand whole beside the verdict are shown by the
/// words that differ (the files are copies of the samples under long names that share their
/// beginning and end).
#[test]
fn at_80_columns_long_run_names_show_where_they_differ() {
    let dir = tempfile::tempdir().unwrap();
    let name = |n: &str| format!("llama3_8b_fsdp_bf16_seq4096_{n}_memory_snapshot.jsonl");
    let (a, b) = (
        dir.path().join(name("ckpt_off")),
        dir.path().join(name("ckpt_on")),
    );
    std::fs::copy(sample("train-3steps.jsonl"), &a).unwrap();
    std::fs::copy(sample("train-checkpointed.jsonl"), &b).unwrap();
    let app = App::new_diff(a, b, Default::default(), Theme::default(), false);
    let h = Harness::with_app(app, 80, 24);
    let s = h.screen();
    let header = s.lines().next().unwrap();
    assert!(header.contains("A …off… · B …on…"), "{header}");
    assert!(header.contains("same work"), "{header}");
    // Wide enough, the names stand whole.
    let app = App::new_diff(
        dir.path().join(name("ckpt_off")),
        dir.path().join(name("ckpt_on")),
        Default::default(),
        Theme::default(),
        false,
    );
    let h = Harness::with_app(app, 200, 40);
    let s = h.screen();
    assert!(s.lines().next().unwrap().contains(&name("ckpt_on")), "{s}");
}
