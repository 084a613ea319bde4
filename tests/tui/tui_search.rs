//! The explorer's search ranks what was meant first (issue 52): the query's words whole
//! before scattered letters, matches live at the cursor before others (so `n`/`N` keep the
//! cursor, on the peak when it opened there; `p` returns), a match by name or category before
//! one by a user frame before one by a library frame, then the biggest. Hand-made traces
//! whose every storage is placed to test one rule against the sizes' order.

#![allow(clippy::unwrap_used)]

use crate::support::repo::sample;
use memtide::tui::find::{ranked, search, Fit, Place, Rank};
use memtide::tui::testing::Harness;
use memtide_core::formats::Progress;
use memtide_core::open::{open, OpenOptions};
use memtide_core::trace::Seq;

const HEADER: &str = r#"{"memtide":1,"device":"cuda:0","clock":"us"}"#;

/// Opens JSONL `lines` (after the header) as one device.
fn device(lines: &[&str]) -> memtide_core::open::Device {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.jsonl");
    std::fs::write(&p, format!("{HEADER}\n{}\n", lines.join("\n"))).unwrap();
    let o = open(&p, &OpenOptions::default(), &Progress::new()).unwrap();
    o.take(0).unwrap()
}

/// The names of the matches, best first.
fn names(d: &memtide_core::open::Device, q: &str, at: u64) -> Vec<String> {
    search(d, q, Seq(at))
        .0
        .into_iter()
        .map(|id| d.trace.name(id).to_string())
        .collect()
}

#[test]
fn names_and_categories_before_user_frames_before_library_frames_whatever_the_sizes() {
    // Sizes grow down the list, so "biggest first" alone would reverse it. All live at #5.
    let d = device(&[
        r#"{"t":1,"op":"alloc","id":1,"size":1024,"cat":"activation","name":"loss_scaler","stack":["torch/amp/grad_scaler.py:10 unscale_","train.py:5 main"]}"#,
        r#"{"t":2,"op":"alloc","id":2,"size":2048,"cat":"activation","name":"act","stack":["model.py:3 scale_up","train.py:5 main"]}"#,
        r#"{"t":3,"op":"alloc","id":3,"size":4096,"cat":"activation","name":"buf","stack":["torch/amp/grad_scaler.py:10 unscale_","train.py:5 main"]}"#,
        r#"{"t":4,"op":"alloc","id":4,"size":8192,"cat":"activation","name":"s_c_a_l_e","stack":["train.py:5 main"]}"#,
        // Whole in its name, but freed before the cursor.
        r#"{"t":5,"op":"alloc","id":5,"size":16384,"cat":"activation","name":"scale_tmp","stack":["train.py:6 main"]}"#,
        r#"{"t":6,"op":"free","id":5}"#,
        r#"{"t":7,"op":"alloc","id":6,"size":32,"cat":"param","name":"w","stack":["train.py:7 main"]}"#,
    ]);
    // At #6 (the last event): 1–4 and w live, scale_tmp freed.
    let r = ranked(&d, "scale", Seq(6));
    let got: Vec<(String, Rank)> =
        r.0.iter()
            .map(|&(id, k)| (d.trace.name(id).to_string(), k))
            .collect();
    assert_eq!(
        got,
        vec![
            ("loss_scaler".into(), (Fit::Whole, true, Place::Name)),
            ("act".into(), (Fit::Whole, true, Place::UserFrame)),
            ("buf".into(), (Fit::Whole, true, Place::LibraryFrame)),
            ("scale_tmp".into(), (Fit::Whole, false, Place::Name)),
            ("s_c_a_l_e".into(), (Fit::Fuzzy, true, Place::Name)),
        ]
    );
    // A category matches as a name: `param` finds w (no string holds it).
    assert_eq!(names(&d, "param", 6), vec!["w"]);
}

#[test]
fn a_category_outranks_a_library_frame_with_the_same_word() {
    let d = device(&[
        r#"{"t":1,"op":"alloc","id":1,"size":1048576,"cat":"activation","name":"x","stack":["torch/optim/adam.py:9 _multi_tensor_adam","train.py:5 main"]}"#,
        r#"{"t":2,"op":"alloc","id":2,"size":1024,"cat":"optimizer","name":"m","stack":["torch/optim/sgd.py:1 step","train.py:5 main"]}"#,
    ]);
    assert_eq!(names(&d, "optim", 1), vec!["m", "x"]);
    assert!(search(&d, "  ", Seq(1)).0.is_empty());
}

#[test]
fn adam_on_the_sample_stays_on_the_peak_and_p_returns_after_n_leaves_it() {
    // train-3steps.jsonl: the peak is #77; Adam's eight state tensors (256 MiB each) are live
    // there, its twelve `adam foreach temp` buffers are not (sample-traces/README.md).
    let mut h = Harness::open(&sample("train-3steps.jsonl"), 80, 24);
    let peak = h.explorer().view.cursor;
    assert_eq!(peak, Seq(77));
    h.press("/adam<Enter>");
    let ex = h.explorer();
    assert_eq!(ex.search.matches.len(), 20);
    let d = ex.device().unwrap().clone();
    let cat = |i: usize| d.trace.category(h.explorer().search.matches[i]).name();
    for i in 0..8 {
        assert_eq!(cat(i), "optimizer", "match {i}");
    }
    for i in 8..20 {
        assert_eq!(cat(i), "temp", "match {i}");
    }
    assert_eq!(h.explorer().view.cursor, peak);
    let selected = h.explorer().live.selected_entry().map(|e| e.id);
    assert_eq!(selected, Some(h.explorer().search.matches[0]));
    // n through the seven other optimizer tensors: the cursor stays on the peak.
    for i in 1..8 {
        h.press("n");
        assert_eq!(h.explorer().search.current, Some(i));
        assert_eq!(h.explorer().view.cursor, peak, "match {i}");
        let sel = h.explorer().live.selected_entry().map(|e| e.id);
        assert_eq!(sel, Some(h.explorer().search.matches[i]));
    }
    // The ninth is a temp of an optimizer step: the cursor goes there, and says how back.
    h.press("n");
    assert_ne!(h.explorer().view.cursor, peak);
    let status = h.app.shared.status.clone().unwrap_or_default();
    assert!(
        status.starts_with("match 9/20 (p: back to the peak)"),
        "{status}"
    );
    h.press("p");
    assert_eq!(h.explorer().view.cursor, peak);
}
