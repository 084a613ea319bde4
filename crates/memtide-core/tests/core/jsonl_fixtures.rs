//! Hand-written JSONL v1 traces (from the spec in docs/formats.md only) with hand-computed
//! expectations in `tests/fixtures/jsonl/*.expect`, and the reader's errors on bad input.

use memtide_core::analysis::{final_bytes, global_peak, live_entries, windows_of};
use memtide_core::formats::{LoadOptions, Progress};
use memtide_core::index::Index;
use memtide_core::open::{open, OpenOptions};
use memtide_core::trace::{MarkKind, Trace};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/jsonl")
        .join(name)
}

fn expect(name: &str) -> BTreeMap<String, u64> {
    std::fs::read_to_string(fixture(name))
        .expect("expect file")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (k, v) = l.split_once(' ').expect("key value");
            (k.to_string(), v.trim().parse().expect("number"))
        })
        .collect()
}

fn read(name: &str) -> (Trace, Index) {
    let o = open(&fixture(name), &OpenOptions::default(), &Progress::new()).expect("loads");
    let d = o.take(0).expect("a device");
    (d.trace, d.index)
}

fn check(stem: &str) -> (Trace, Index) {
    let (trace, index) = read(&format!("{stem}.jsonl"));
    let e = expect(&format!("{stem}.expect"));
    let peak = global_peak(&trace, &index).expect("events");
    assert_eq!(peak.bytes.0, e["peak_bytes"], "{stem}: peak bytes");
    assert_eq!(
        trace.src_index(peak.at),
        e["peak_index"],
        "{stem}: peak index"
    );
    assert_eq!(final_bytes(&index).0, e["final_bytes"], "{stem}: final");
    if let Some(&r) = e.get("reserved_peak") {
        assert_eq!(index.reserved_peak().expect("reserved").0 .0, r);
    }
    (trace, index)
}

#[test]
fn frees_apply_before_allocs_at_equal_t_and_zero_length_is_never_live() {
    check("equal_t");
}

#[test]
fn views_keep_storage_alive_and_external_spans_count() {
    let (trace, index) = check("views_external");
    assert_eq!(trace.device, "cuda:1");
    let peak = global_peak(&trace, &index).expect("peak");
    let live = live_entries(&trace, &index, peak.at, None);
    let big = live.iter().find(|e| e.name == "big").expect("big is live");
    assert!(big.retained_by_view);
    assert_eq!(big.views, 2);
    assert_eq!(big.live_views, 1, "only view 3 still holds it");
    assert_eq!(big.frame, "model.py:3 forward");
    let nccl = live
        .iter()
        .find(|e| e.name == "nccl")
        .expect("external live");
    assert_eq!(nccl.band.name(), "external");
    assert_eq!(trace.time_us(peak.at), Some(0.25)); // ns clock: t=250 ns
}

#[test]
fn samples_give_external_and_reset_peak_windows() {
    let (trace, index) = check("samples_reset");
    let resets = windows_of(&trace, &index, MarkKind::ResetPeak);
    assert_eq!(resets.len(), 1);
    // After the reset (positions 9..12) the highest total is 1200 (alloc of id 12).
    assert_eq!(resets[0].peak.expect("peak").bytes.0, 1200);
    let steps = windows_of(&trace, &index, MarkKind::Step);
    assert_eq!(steps.len(), 2);
    assert_eq!(steps[0].peak.expect("p").bytes.0, 1600);
    assert_eq!(steps[1].peak.expect("p").bytes.0, 1200);
}

/// The trace of `text` read as a file through the door, or the reader's error.
fn load_text(text: &[u8], lenient: bool) -> Result<Trace, String> {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("t.jsonl");
    std::fs::write(&p, text).expect("write");
    let opts = LoadOptions {
        lenient,
        ..LoadOptions::default()
    };
    open(&p, &OpenOptions::from(opts), &Progress::new())
        .map(|o| o.take(0).expect("a device").trace)
        .map_err(|e| e.format_error().expect("the reader's error").to_string())
}

fn err(text: &[u8]) -> String {
    match load_text(text, false) {
        Ok(_) => panic!("expected an error for {:?}", String::from_utf8_lossy(text)),
        Err(e) => e.to_string(),
    }
}

const H: &str = "{\"memtide\":1}\n";

#[test]
fn bad_inputs_give_clear_errors_with_line_numbers() {
    let e = err(b"\x00\x01\x02\xff garbage");
    assert!(e.contains("unrecognised format"), "{e}");
    // A cut line followed by another is an error (a torn *last* line is a line still being
    // written: tests/cli/hostile.rs).
    let e = err(format!("{H}{{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":10\n{{\"t\":2,\"op\":\"free\",\"id\":1}}\n").as_bytes());
    assert!(
        e.starts_with("line 2:") && e.contains("invalid JSON"),
        "{e}"
    );
    let e = err(format!("{H}{{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":-10}}\n").as_bytes());
    assert!(e.contains("line 2") && e.contains("non-negative"), "{e}");
    let e = err(format!("{H}{{\"t\":5,\"op\":\"mark\",\"name\":\"a\"}}\n{{\"t\":4,\"op\":\"mark\",\"name\":\"b\"}}\n").as_bytes());
    assert!(e.contains("line 3") && e.contains("backwards"), "{e}");
    let e = err(format!("{H}{{\"t\":1,\"op\":\"explode\"}}\n").as_bytes());
    assert!(e.contains("unknown op"), "{e}");
    let e = err(format!("{H}{{\"op\":\"alloc\"}}\n").as_bytes());
    assert!(e.contains("\"t\""), "{e}");
    let e = err(b"{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":1}\n");
    assert!(e.contains("line 1") && e.contains("header"), "{e}");
    let e = err(b"");
    assert!(e.contains("empty"), "{e}");
    let e = err(b"# only a comment\n\n");
    assert!(e.contains("header"), "{e}");
    let e = err(format!("{H}{{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":1}}\n{{\"t\":2,\"op\":\"alloc\",\"id\":1,\"size\":1}}\n").as_bytes());
    assert!(e.contains("line 3") && e.contains("already live"), "{e}");
    let e = err(b"{\"memtide\":2}\n");
    assert!(e.contains("version"), "{e}");
}

#[test]
fn free_of_unknown_id_is_a_counted_warning() {
    let t = load_text(
        format!(
            "{H}{{\"t\":1,\"op\":\"free\",\"id\":42}}\n{{\"t\":2,\"op\":\"release\",\"id\":43}}\n"
        )
        .as_bytes(),
        false,
    )
    .expect("unmatched frees are not fatal");
    assert_eq!(t.unmatched_frees, 2);
    assert!(t.warnings.iter().any(|w| w.contains("unknown id 42")));
}

#[test]
fn lenient_skips_and_counts_bad_lines() {
    let text = format!(
        "{H}{{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":10}}\nnot json\n{{\"t\":2,\"op\":\"alloc\",\"id\":2,\"size\":-1}}\n{{\"t\":3,\"op\":\"alloc\",\"id\":3,\"size\":5}}\n"
    );
    let t = load_text(text.as_bytes(), true).expect("lenient");
    assert_eq!(t.skipped_lines, 2);
    let index = Index::build(&t);
    assert_eq!(global_peak(&t, &index).expect("peak").bytes.0, 15);
    assert!(t.warnings.iter().any(|w| w.contains("line 3")));
}

#[test]
fn header_only_has_no_events_and_unknown_fields_are_kept() {
    let t = load_text(
        b"{\"memtide\":1,\"device\":\"cuda:3\",\"run\":\"abc\"}\n",
        false,
    )
    .expect("ok");
    assert!(t.is_empty());
    assert!(t.meta.iter().any(|(k, v)| k == "run" && v == "\"abc\""));
    let t = load_text(
        format!("{H}{{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":10,\"dtype\":\"bf16\"}}\n")
            .as_bytes(),
        false,
    )
    .expect("ok");
    let x = t.extra.values().next().expect("extra kept");
    assert_eq!(t.strings.str(*x), "{\"dtype\":\"bf16\"}");
}

#[test]
fn torn_last_line_waits_for_its_newline() {
    use memtide_core::formats::{JsonlDecoder, JsonlOptions};
    let mut trace = Trace::new("cuda:0", "t", "jsonl");
    let mut dec = JsonlDecoder::new(JsonlOptions::default());
    dec.feed(
        &mut trace,
        b"{\"memtide\":1}\n{\"t\":1,\"op\":\"alloc\",\"id\":1,\"si",
    )
    .expect("torn line is not an error");
    dec.feed(
        &mut trace,
        b"ze\":10}\n{\"t\":2,\"op\":\"alloc\",\"id\":2,\"size\":5}\n",
    )
    .expect("completed");
    // t=2's group may still grow: it is applied at the next t or at finish.
    assert_eq!(trace.len(), 1);
    dec.finish(&mut trace).expect("finish");
    assert_eq!(trace.len(), 2);
}
