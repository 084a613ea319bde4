//! The real PyTorch trace in tests/data/kineto-cpu-baseline against PyTorch's own numbers
//! (refs.json, live_at_max.json, memory_timeline.json): never against our own output.

use memtide_core::analysis::Summary;
use memtide_core::formats::{LoadOptions, Progress};
use memtide_core::index::Index;
use memtide_core::open::{open as open_file, OpenOptions};
use memtide_core::trace::{Band, Seq, Trace};
use serde_json::Value;
use std::io::Read;
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/kineto-cpu-baseline"
    ))
}

fn refs() -> Value {
    let s = std::fs::read_to_string(dir().join("refs.json")).expect("refs.json");
    serde_json::from_str(&s).expect("refs.json parses")
}

fn open(categories: bool) -> (Trace, Index) {
    let opts = LoadOptions {
        categories: categories.then(|| dir().join("memory_timeline.raw.json.gz")),
        ..LoadOptions::default()
    };
    let opened = open_file(
        &dir().join("trace.json.gz"),
        &OpenOptions::from(opts),
        &Progress::new(),
    )
    .expect("loads");
    assert_eq!(opened.devices.len(), 1, "one device (CPU)");
    let device = opened.devices.into_iter().next().expect("a device");
    (device.trace, device.index)
}

fn u(v: &Value) -> u64 {
    v.as_u64().expect("an integer")
}

/// Position of the peak event among the file's `[memory]` events, found in the raw text:
/// the `[memory]` event carrying refs' `Ev Idx`.
fn oracle_peak_position(ev_idx: u64) -> u64 {
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(dir().join("trace.json.gz")).expect("gz"))
        .read_to_string(&mut text)
        .expect("decompress");
    let key = format!("\"Ev Idx\": {ev_idx}\n");
    let at = text.find(&key).expect("the peak event is in the file");
    text[..at].matches("\"name\": \"[memory]\"").count() as u64 - 1
}

#[test]
fn peak_final_live_and_reserved_match_refs() {
    let r = refs();
    let (trace, index) = open(false);
    assert_eq!(trace.device, "cpu");
    assert_eq!(trace.len() as u64, u(&r["memory_event_count"]));
    let s = Summary::build(&trace, &index);
    let p = s.peak.as_ref().expect("a peak");
    assert_eq!(p.bytes, u(&r["max_total_allocated"]));
    assert_eq!(
        p.time_us,
        r["ts_of_max"].as_f64(),
        "peak ts exactly as in refs"
    );
    let ev_idx = u(&r["event_at_max"]["Ev Idx"]);
    assert_eq!(p.index, oracle_peak_position(ev_idx));
    assert_eq!(p.live_count as u64, u(&r["replay"]["live_at_max"]["count"]));
    assert_eq!(s.final_bytes, u(&r["final_total_allocated"]));
    assert_eq!(s.reserved_peak, None, "CPU trace: reserved unavailable");
    assert_eq!(s.unmatched_frees, u(&r["replay"]["unmatched_frees"]));
    // Summary JSON: reserved_peak is null, time_us prints as refs' ts.
    let j = s.to_json(std::slice::from_ref(&trace.device));
    assert!(j["reserved_peak"].is_null());
    assert_eq!(j["peak"]["time_us"], r["ts_of_max"]);
    assert_eq!(j["format"], "kineto");
}

#[test]
fn live_set_at_peak_equals_live_at_max_json() {
    let s = std::fs::read_to_string(dir().join("live_at_max.json")).expect("live_at_max.json");
    let v: Value = serde_json::from_str(&s).expect("parses");
    let list = v["live"].as_array().expect("a list of live allocations");
    let mut want: Vec<(u64, u64)> = list
        .iter()
        .map(|e| (u(&e["Addr"]), u(&e["Bytes"])))
        .collect();
    let (trace, index) = open(false);
    let (at, _) = index
        .argmax(Seq(0), Seq(trace.len() as u64 - 1))
        .expect("peak");
    let mut got: Vec<(u64, u64)> = index
        .live_at(&trace, at)
        .into_iter()
        .map(|id| (trace.src_id(id).expect("a storage"), trace.size(id).0))
        .collect();
    want.sort_unstable();
    got.sort_unstable();
    assert_eq!(got, want);
}

#[test]
fn step_windows_match_refs_per_span() {
    let r = refs();
    let (trace, index) = open(false);
    let s = Summary::build(&trace, &index);
    let spans = r["per_span"].as_object().expect("per_span");
    let mut steps = 0;
    for (name, span) in spans {
        let w = s
            .windows
            .iter()
            .find(|w| *w.name == **name)
            .unwrap_or_else(|| panic!("a window for {name}"));
        let expect_kind = if name.starts_with("step") {
            "step"
        } else {
            "phase"
        };
        assert_eq!(w.kind, expect_kind, "{name}");
        if w.kind == "step" {
            steps += 1;
        }
        assert_eq!(
            w.last_index - w.first_index + 1,
            u(&span["n_memory_events"]),
            "{name}: events in the window"
        );
        assert_eq!(
            w.peak_bytes,
            Some(u(&span["max_total_allocated"])),
            "{name}"
        );
        assert_eq!(w.peak_time_us, span["ts_of_max"].as_f64(), "{name}");
    }
    assert_eq!(steps, 3);
    let step_marks = trace
        .marks
        .iter()
        .filter(|m| m.kind == memtide_core::trace::MarkKind::Step)
        .count();
    assert_eq!(step_marks, 3);
    assert!(trace.marks.windows(2).all(|w| w[0].at <= w[1].at), "sorted");
}

#[test]
fn categories_sidecar_reproduces_pytorch_breakdown_at_peak() {
    let r = refs();
    let b = &r["memory_timeline_summary"]["peak_breakdown"];
    let (trace, index) = open(true);
    let s = Summary::build(&trace, &index);
    let p = s.peak.as_ref().expect("peak");
    assert_eq!(p.bytes, u(&r["max_total_allocated"]));
    let persistent = u(&b["PARAMETER"]) + u(&b["OPTIMIZER_STATE"]) + u(&b["GRADIENT"]);
    let activation = u(&b["INPUT"]) + u(&b["ACTIVATION"]) + u(&b["AUTOGRAD_DETAIL"]);
    assert_eq!(p.bands[Band::Persistent.idx()], persistent);
    assert_eq!(p.bands[Band::Activation.idx()], activation);
    assert_eq!(p.bands[Band::Workspace.idx()], u(&b["TEMPORARY"]));
    assert_eq!(p.bands[Band::Unknown.idx()], u(&b["Unknown(None)"]));
    assert_eq!(p.bands[Band::External.idx()], 0);
    assert_eq!(s.bands_source, "recorded");
    // The README table, as printed there.
    assert_eq!(persistent, 39_201_136);
    assert_eq!(activation, 261_735_432);
}

/// The persistent breakdown at the peak, from the sidecar's categories, equals PyTorch's own
/// PARAMETER / GRADIENT / OPTIMIZER_STATE at its peak (refs.json).
#[test]
fn persistent_breakdown_at_peak_equals_pytorch_categories() {
    let r = refs();
    let b = &r["memory_timeline_summary"]["peak_breakdown"];
    let (trace, index) = open(true);
    let s = Summary::build(&trace, &index);
    let p = s.peak.as_ref().expect("peak");
    let x = p.persistent.as_ref().expect("persistent at the peak");
    assert_eq!(x.params, Some(u(&b["PARAMETER"])));
    assert_eq!(x.grads, Some(u(&b["GRADIENT"])));
    assert_eq!(x.optimizer, Some(u(&b["OPTIMIZER_STATE"])));
    assert_eq!(x.total, p.bands[Band::Persistent.idx()]);
    assert_eq!(x.source, "recorded");
    // The trace records no parameter count: bytes per parameter is unknown, not guessed.
    assert_eq!(x.param_count, None);
    assert_eq!(x.bytes_per_param, None);
}

/// Stronger than the peak: after every µs of the run, our per-category totals equal PyTorch's
/// coalesced timeline row for that µs.
#[test]
fn categories_sidecar_follows_every_timeline_row() {
    let r = refs();
    let base_ns = r["trace_header"]["baseTimeNanoseconds"]
        .as_i64()
        .expect("base");
    // PyTorch buckets by `int(t_ns / 1000)`: Python's int true division, correctly rounded to a
    // double (spacing 0.25 µs here) and then truncated, so .875 and up can land in the next µs.
    let bucket = |ts_ns: i64| {
        let t = ts_ns + base_ns;
        ((t / 1000) as f64 + (t % 1000) as f64 / 1000.0) as i64
    };
    let s = std::fs::read_to_string(dir().join("memory_timeline.json")).expect("timeline");
    let tl: (Vec<i64>, Vec<Vec<i64>>) = serde_json::from_str(&s).expect("parses");
    let (trace, index) = open(true);
    // Column order: PARAMETER, OPTIMIZER_STATE, INPUT, TEMPORARY, ACTIVATION, GRADIENT,
    // AUTOGRAD_DETAIL, Unknown → bands.
    let band_of = [0usize, 0, 1, 2, 1, 0, 1, 4];
    let ts: Vec<i64> = trace.timestamps().collect();
    let mut checked = 0;
    let mut mismatches = Vec::new();
    for (t_us, row) in tl.0.iter().zip(&tl.1) {
        // Last event whose epoch µs (bucketed as PyTorch does) is <= t.
        let n = ts.partition_point(|&x| bucket(x) <= *t_us);
        if n == 0 {
            continue;
        }
        let at = Seq(n as u64 - 1);
        if bucket(ts[at.idx()]) != *t_us {
            continue; // a time point with no [memory] event (a category change only)
        }
        let mut want = [0u64; Band::COUNT];
        for (k, v) in row[1..].iter().enumerate() {
            want[band_of[k]] += *v as u64;
        }
        let got = index.bands_at(&trace, at).0;
        if got != want {
            mismatches.push((*t_us, got, want));
        }
        checked += 1;
    }
    assert!(checked > 5000, "checked {checked} time points");
    assert!(
        mismatches.is_empty(),
        "{} of {checked} rows differ, first: {:?}",
        mismatches.len(),
        mismatches.first()
    );
}

#[test]
fn memory_timeline_files_open_on_their_own() {
    let r = refs();
    let m = &r["memory_timeline_summary"];
    let b = &m["peak_breakdown"];
    for f in ["memory_timeline.json", "memory_timeline.raw.json.gz"] {
        let opened = open_file(&dir().join(f), &OpenOptions::default(), &Progress::new())
            .unwrap_or_else(|e| panic!("{f}: {e}"));
        assert_eq!(opened.format, memtide_core::formats::Format::MemoryTimeline);
        let (trace, index) = (&opened.devices[0].trace, &opened.devices[0].index);
        let s = Summary::build(trace, index);
        let p = s.peak.as_ref().expect("peak");
        assert_eq!(p.bytes, u(&m["peak_total_bytes"]), "{f}");
        assert_eq!(
            p.bands[Band::Persistent.idx()],
            u(&b["PARAMETER"]) + u(&b["OPTIMIZER_STATE"]) + u(&b["GRADIENT"]),
            "{f}"
        );
        assert_eq!(
            p.bands[Band::Activation.idx()],
            u(&b["INPUT"]) + u(&b["ACTIVATION"]) + u(&b["AUTOGRAD_DETAIL"]),
            "{f}"
        );
        assert_eq!(p.bands[Band::Unknown.idx()], u(&b["Unknown(None)"]), "{f}");
        assert_eq!(s.final_bytes, u(&m["final_total_bytes"]), "{f}");
        assert_eq!(s.bands_source, "recorded");
    }
}
