//! PyTorch snapshot reader against independent ground truth: the real-run baseline's (tests/data)
//! `baseline.truth.json` (computed from the file by PyTorch-side tooling; block sizes by
//! `scripts/conformance --replay`, equal to the emulator's own) and the fixtures'
//! `.truth.json` (brute-force replay in `tools/gen_snapshots.py`).
#![allow(clippy::unwrap_used)]

use memtide_core::analysis::Summary;
use memtide_core::formats::{LoadOptions, Progress};
use memtide_core::open::{OpenOptions, Opened};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The real-run files copied into the repository (see tests/data/README.md).
fn data(p: &str) -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/")).join(p)
}

fn fixture(p: &str) -> PathBuf {
    Path::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/snapshot/"
    ))
    .join(p)
}

/// `path` opened through the door.
fn open(path: &Path, opts: &LoadOptions) -> Opened {
    memtide_core::open::open(path, &OpenOptions::from(opts.clone()), &Progress::new())
        .expect("opens")
}

fn summaries(path: &Path, opts: &LoadOptions) -> Vec<Summary> {
    let opened = open(path, opts);
    assert_eq!(opened.format.name(), "snapshot");
    opened
        .devices
        .iter()
        .map(|d| Summary::build(&d.trace, &d.index))
        .collect()
}

fn read_json(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).expect("read truth")).expect("json")
}

#[test]
fn baseline_matches_truth() {
    let truth = read_json(&data("snapshot-baseline/baseline.truth.json"));
    let s = summaries(
        &data("snapshot-baseline/baseline.pickle"),
        &LoadOptions::default(),
    );
    assert_eq!(s.len(), 1);
    let s = &s[0];
    assert_eq!(s.device, "cuda:0");
    assert_eq!(s.events, truth["entries"].as_u64().unwrap());
    let p = s.peak.as_ref().expect("peak");
    // Blocks as memory_allocated() counts them: the independent replay's figure, which is
    // also the allocator emulation's own (it made the file).
    let blocks = &truth["block_sizes"];
    assert_eq!(p.bytes, blocks["peak_allocated_bytes"].as_u64().unwrap());
    assert_eq!(
        p.bytes,
        truth["generator_stats"]["emulator_peak_allocated_bytes_blocks"]
            .as_u64()
            .unwrap()
    );
    assert_eq!(p.index, blocks["peak_index"].as_u64().unwrap());
    assert_eq!(p.index, truth["peak_index"].as_u64().unwrap());
    // The requests stay visible: at that instant they sum to the requested-bytes peak.
    let opened = open(
        &data("snapshot-baseline/baseline.pickle"),
        &LoadOptions::default(),
    );
    let (t, ix) = (&opened.devices[0].trace, &opened.devices[0].index);
    let live = ix.live_at(t, memtide_core::trace::Seq(p.index));
    assert_eq!(live.len(), p.live_count);
    let requested: u64 = live
        .iter()
        .map(|&id| t.requested_size(id).unwrap_or(t.size(id)).0)
        .sum();
    assert_eq!(requested, truth["peak_allocated_bytes"].as_u64().unwrap());
    assert_eq!(
        p.time_us.map(|t| t as u64),
        truth["peak_time_us"].as_u64(),
        "peak time"
    );
    assert_eq!(
        p.live_count as u64,
        truth["peak_live_count"].as_u64().unwrap()
    );
    assert_eq!(
        s.final_bytes,
        blocks["final_allocated_bytes"].as_u64().unwrap()
    );
    assert_eq!(s.reserved_peak, truth["peak_reserved_bytes"].as_u64());
    assert_eq!(
        s.unmatched_frees,
        truth["unmatched_free_completed"].as_u64().unwrap()
    );
    assert_eq!(s.bands_source, "inferred");

    // Top live entries: sizes in order, and each (size, innermost Python frame) is among ours.
    let top = truth["top10_live_at_peak"].as_array().unwrap();
    for (i, e) in top.iter().enumerate() {
        assert_eq!(p.live[i].bytes.0, e["size"].as_u64().unwrap(), "live #{i}");
        let frame = e["innermost_python_frame"].as_str().unwrap();
        let size = e["size"].as_u64().unwrap();
        assert!(
            p.live.iter().any(|l| l.bytes.0 == size && l.frame == frame),
            "{size} B at {frame} not among the live entries"
        );
    }
}

fn check_fixture(file: &str, truth_file: &str) {
    let truth = read_json(&fixture(truth_file));
    let s = summaries(&fixture(file), &LoadOptions::default());
    let devs = truth["devices"].as_object().unwrap();
    assert_eq!(s.len(), devs.len(), "{file}: devices");
    for (dev, t) in devs {
        let s = s
            .iter()
            .find(|s| &s.device == dev)
            .unwrap_or_else(|| panic!("{file}: no {dev}"));
        let p = s.peak.as_ref().expect("peak");
        let ctx = format!("{file} {dev}");
        assert_eq!(s.events, t["events"].as_u64().unwrap(), "{ctx} events");
        assert_eq!(p.bytes, t["peak_bytes"].as_u64().unwrap(), "{ctx} peak");
        let at_start = t["peak_at"].as_str().unwrap() == "start";
        assert_eq!(p.at_start, at_start, "{ctx} peak at start");
        if !at_start {
            assert_eq!(p.index, t["peak_index"].as_u64().unwrap(), "{ctx} index");
        }
        // the JSON says so: `"index": null, "at": "start"`
        let j = s.to_json(&[]);
        assert_eq!(
            j["peak"]["index"].as_u64(),
            t["peak_index"].as_u64(),
            "{ctx} json index"
        );
        assert_eq!(j["peak"]["at"], t["peak_at"], "{ctx} json at");
        assert_eq!(
            s.reserved_peak_index,
            t["reserved_peak_index"].as_u64(),
            "{ctx} reserved index"
        );
        assert_eq!(
            j["reserved_peak_at"].as_str() == Some("start"),
            t["reserved_peak"].is_u64() && t["reserved_peak_index"].is_null(),
            "{ctx} reserved at start"
        );
        assert_eq!(
            p.time_us.map(|x| x as u64),
            t["peak_time_us"].as_u64(),
            "{ctx} time"
        );
        assert_eq!(p.live_count as u64, t["peak_live_count"].as_u64().unwrap());
        let sizes: Vec<u64> = p.live.iter().map(|l| l.bytes.0).collect();
        let want: Vec<u64> = t["peak_live_sizes_top20"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(sizes, want, "{ctx} live sizes");
        assert_eq!(
            s.final_bytes,
            t["final_bytes"].as_u64().unwrap(),
            "{ctx} final"
        );
        assert_eq!(
            s.reserved_peak,
            t["reserved_peak"].as_u64(),
            "{ctx} reserved"
        );
        assert_eq!(
            s.unmatched_frees,
            t["unmatched_frees"].as_u64().unwrap(),
            "{ctx} unmatched"
        );
    }
}

#[test]
fn two_devices_protocol4() {
    check_fixture("two_devices_p4.pickle", "two_devices_p4.truth.json");
}

#[test]
fn ring_buffer_protocol2() {
    check_fixture("ring_p2.pickle", "ring_p2.truth.json");
    // the fixture really exercises the ring-buffer cases
    let t = read_json(&fixture("ring_p2.truth.json"));
    assert!(t["devices"]["cuda:0"]["unmatched_frees"].as_u64().unwrap() > 0);
    assert!(t["devices"]["cuda:0"]["ghost_blocks"].as_u64().unwrap() > 0);
}

#[test]
fn ring_buffer_protocol5_gzip() {
    check_fixture("ring_p5.pickle.gz", "ring_p5.truth.json");
}

#[test]
fn json_form_plain_and_gzip() {
    check_fixture("small.json", "small.truth.json");
    check_fixture("small.json.gz", "small.truth.json");
}

#[test]
fn history_began_late_peak_is_the_initial_state() {
    check_fixture("late_start.pickle", "late_start.truth.json");
    let t = read_json(&fixture("late_start.truth.json"));
    assert_eq!(
        t["devices"]["cuda:0"]["peak_at"], "start",
        "the fixture must exercise it"
    );
    let s = &summaries(&fixture("late_start.pickle"), &LoadOptions::default())[0];
    let p = s.peak.as_ref().unwrap();
    assert_eq!(p.time_us, None, "the initial state has no time of its own");
    // the 30 MiB weight freed by the first entries is in the live set at the peak
    assert!(p.live.iter().any(|l| l.bytes.0 == 30 << 20));
    let text = memtide_report::summary::render_text(s);
    assert!(text.contains("at start"), "{text}");
    // the history cut is said, with what it means for the peak
    assert!(
        s.warnings
            .iter()
            .any(|w| w.contains("trace_alloc_overflowed") && w.contains("lower bound")),
        "{:?}",
        s.warnings
    );
    let settings = s.allocator_settings.as_ref().unwrap();
    assert_eq!(settings["trace_alloc_overflowed"], true);
}

#[test]
fn history_less_dump_is_one_instant() {
    check_fixture("no_history.pickle", "no_history.truth.json");
    let s = summaries(&fixture("no_history.pickle"), &LoadOptions::default());
    // said as a note (a fact about the file), not a warning (a doubt about the figures)
    assert!(
        s[0].notes.iter().any(|w| w.contains("no trace history")),
        "{:?}",
        s[0].notes
    );
    assert!(s[0].warnings.is_empty(), "{:?}", s[0].warnings);
    // the block list with frames
    let p = s[0].peak.as_ref().unwrap();
    assert!(p.live.iter().all(|l| !l.frame.is_empty()), "{:?}", p.live);
}

#[test]
fn bare_segment_list_pickle_and_json() {
    check_fixture("segments_list.pickle", "segments_list.truth.json");
    check_fixture("segments_list.json", "segments_list.truth.json");
}

#[test]
fn bare_lists_that_are_not_segments_are_refused() {
    // pickle.dumps([1, 2], protocol=4) and pickle.dumps([{"a": 1}], protocol=2)
    let e =
        load_bytes(b"\x80\x04\x95\t\x00\x00\x00\x00\x00\x00\x00]\x94(K\x01K\x02e.").unwrap_err();
    assert!(e.contains("not a segment dict"), "{e}");
    let e = load_bytes(b"\x80\x02]q\x00}q\x01X\x01\x00\x00\x00aq\x02K\x01sa.").unwrap_err();
    assert!(e.contains("not a segment dict"), "{e}");
    // a dict that is no snapshot
    let e = load_bytes(b"\x80\x04\x95\n\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x01a\x94K\x01s.")
        .unwrap_err();
    assert!(e.contains("neither 'segments' nor 'device_traces'"), "{e}");
}

/// A snapshot with no segment and no history row on any device (dumped from a run whose
/// work stayed on the CPU, as a published one was) says so, in every command, with exit 2:
/// it said "header only?" in `summary` and "no allocations to replay" in `whatif`.
#[test]
fn a_snapshot_that_recorded_nothing_says_so_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let pickle = dir.path().join("empty.pickle");
    std::fs::write(
        &pickle,
        crate::support::pickle_writer::snapshot(0, |_, _| {}),
    )
    .unwrap();
    let json = dir.path().join("empty.json");
    std::fs::write(&json, r#"{"segments": [], "device_traces": [[]]}"#).unwrap();
    for f in [&pickle, &json] {
        for args in [
            &["summary"][..],
            &["summary", "--json"],
            &["check", "--max-peak", "1G"],
            &["whatif", "--alloc-conf", "expandable_segments:True"],
        ] {
            let out = crate::support::repo::memtide()
                .args(args)
                .arg(f)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?} {err}");
            assert!(
                err.contains("holds no segment and no recorded allocation on any device"),
                "{args:?} {err}"
            );
            assert!(err.contains(&*f.display().to_string()), "{args:?} {err}");
        }
    }
    // One recorded row is enough to read.
    let one = dir.path().join("one.json");
    std::fs::write(
        &one,
        r#"{"segments": [], "device_traces": [[{"action": "alloc", "addr": 4096, "size": 512}]]}"#,
    )
    .unwrap();
    crate::support::repo::summary_json(&one);
    // Its row names no frame and no label: the text says so (it left the column blank).
    let out = crate::support::repo::memtide()
        .arg("summary")
        .arg(&one)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let row = text
        .lines()
        .skip_while(|l| !l.starts_with("top 1 live"))
        .nth(1)
        .unwrap_or_else(|| panic!("{text}"));
    assert!(row.ends_with("(no stack recorded)"), "{row}");
}

#[test]
fn expandable_segments_reserved_is_the_union_of_mapped_ranges() {
    check_fixture("expandable.pickle", "expandable.truth.json");
    let t = read_json(&fixture("expandable.truth.json"));
    assert_eq!(t["devices"]["cuda:0"]["reserved_peak"], 90u64 << 20);
    let s = &summaries(&fixture("expandable.pickle"), &LoadOptions::default())[0];
    assert!(
        !s.warnings.iter().any(|w| w.contains("reserved")),
        "{:?}",
        s.warnings
    );
}

/// The issue's example: map A (20 MiB), map A+20 MiB (20 MiB), unmap A (40 MiB).
#[test]
fn unmap_spanning_two_maps_closes_both() {
    const MIB: u64 = 1 << 20;
    let a = 0x7000_0000_0000u64;
    let doc = serde_json::json!({"segments": [], "device_traces": [[
        {"action": "segment_map", "addr": a, "size": 20 * MIB},
        {"action": "segment_map", "addr": a + 20 * MIB, "size": 20 * MIB},
        {"action": "segment_unmap", "addr": a, "size": 40 * MIB},
        {"action": "segment_map", "addr": a, "size": 10 * MIB},
    ]]});
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.json");
    std::fs::write(&f, doc.to_string()).unwrap();
    let opened = open(&f, &LoadOptions::default());
    let (t, ix) = (&opened.devices[0].trace, &opened.devices[0].index);
    let s = Summary::build(t, ix);
    assert_eq!(s.reserved_peak, Some(40 * MIB));
    assert_eq!(s.reserved_peak_index, Some(1));
    assert_eq!(ix.reserved_at(t, memtide_core::trace::Seq(2)).0, 0);
    assert_eq!(ix.reserved_at(t, memtide_core::trace::Seq(3)).0, 10 * MIB);
}

fn fields_checks(file: &str) {
    check_fixture(file, "fields.truth.json");
    let opened = open(&fixture(file), &LoadOptions::default());
    let d = opened
        .devices
        .iter()
        .find(|d| d.trace.device == "cuda:0")
        .unwrap();
    let t = &d.trace;
    assert!(opened
        .devices
        .iter()
        .any(|d| d.trace.device == "host:pinned"));
    let a = 0x7F70_0000_0000u64;
    let id = (0..t.storage_count())
        .map(|i| memtide_core::trace::AllocId(i as u32))
        .find(|&id| {
            t.src_id(id).unwrap() == a
                && t.storage_kind(id) == memtide_core::trace::StorageKind::Block
        })
        .unwrap();
    // annotate adds to user_metadata, never replaces it
    assert_eq!(t.name(id), "stepA; layer1; extra", "{file}");
    // pool, stream, compile context and forward frames kept on the allocation
    let extra: Value = serde_json::from_str(&t.strings.str(t.extra[&id])).unwrap();
    assert_eq!(extra["pool_id"], serde_json::json!([1, 2]), "{file}");
    assert_eq!(extra["stream"], 94_000_000, "{file}");
    assert_eq!(extra["compile_context"], "Torch-Compiled Region: 0/1");
    assert!(extra["forward_frames"][0]
        .as_str()
        .unwrap()
        .contains("model.py"));
    // FX fields are part of the frame
    assert!(
        t.stack(id)
            .iter()
            .any(|f| f.contains("fx op=call_function node=addmm") && f.contains("model.py")),
        "{:?}",
        t.stack(id)
    );
    // user_defined is a mark
    let m = t
        .marks
        .iter()
        .find(|m| m.kind == memtide_core::trace::MarkKind::Note)
        .unwrap();
    assert_eq!((t.mark_name(m), m.at.0), ("checkpoint-1", 4));
    let w = &t.warnings;
    assert!(
        w.iter()
            .any(|w| w.contains("1 annotate entries name an address")),
        "{w:?}"
    );
    assert!(w.iter().any(|w| w.contains("some_future_action")), "{w:?}");
    assert!(
        !w.iter().any(|w| w.contains("trace_alloc_overflowed")),
        "{w:?}"
    );
    // the settings (unknown ones too) are shown in the summary
    let s = Summary::build(t, &d.index);
    let text = memtide_report::summary::render_text(&s);
    assert!(text.contains("max_split_size=134217728") && text.contains("a_future_setting"));
}

#[test]
fn pytorch_2_x_fields_pickle() {
    fields_checks("fields.pickle");
}

#[test]
fn pytorch_2_x_fields_json_with_object_metadata_and_string_frames() {
    fields_checks("fields.json");
    let opened = open(&fixture("fields.json"), &LoadOptions::default());
    let t = &opened.devices[0].trace;
    let id = (0..t.storage_count())
        .map(|i| memtide_core::trace::AllocId(i as u32))
        .find(|&id| t.src_id(id).unwrap() == 0x7F70_0040_0000)
        .unwrap();
    let meta: Value = serde_json::from_str(t.name(id)).unwrap();
    assert_eq!(meta["tag"], "x");
    assert_eq!(t.stack(id)[0], "compiled_fn.py:12");
}

#[test]
fn oom_entries_become_marks() {
    let truth = read_json(&fixture("two_devices_p4.truth.json"));
    let ooms = truth["devices"]["cuda:1"]["ooms"].as_array().unwrap();
    assert!(!ooms.is_empty());
    let opened = open(&fixture("two_devices_p4.pickle"), &LoadOptions::default());
    let t = opened
        .devices
        .iter()
        .map(|d| &d.trace)
        .find(|t| t.device == "cuda:1")
        .unwrap();
    let marks: Vec<_> = t
        .marks
        .iter()
        .filter(|m| m.kind == memtide_core::trace::MarkKind::Oom)
        .collect();
    assert_eq!(marks.len(), ooms.len());
    for (m, o) in marks.iter().zip(ooms) {
        assert_eq!(m.at.0, o["index"].as_u64().unwrap());
        assert_eq!(m.size.map(|b| b.0), o["size"].as_u64());
        assert_eq!(m.free.map(|b| b.0), o["device_free"].as_u64());
    }
    // annotations became step marks too
    assert!(t
        .marks
        .iter()
        .any(|m| m.kind == memtide_core::trace::MarkKind::Step));
}

#[test]
fn cpp_frames_hidden_by_default_and_after_python_when_kept() {
    let p = data("snapshot-baseline/baseline.pickle");
    let plain = open(&p, &LoadOptions::default());
    let t = &plain.devices[0].trace;
    let any_cpp = (0..t.storage_count())
        .flat_map(|i| t.stack(memtide_core::trace::AllocId(i as u32)))
        .any(|f| f.starts_with("??"));
    assert!(!any_cpp, "C++ frames must be hidden by default");
    let opts = LoadOptions {
        cpp_frames: true,
        ..LoadOptions::default()
    };
    let with = open(&p, &opts);
    let t = &with.devices[0].trace;
    let mut saw_cpp = false;
    for i in 0..t.storage_count() {
        let st = t.stack(memtide_core::trace::AllocId(i as u32));
        if let Some(first_cpp) = st.iter().position(|f| f.starts_with("??")) {
            saw_cpp = true;
            assert!(
                st[first_cpp..].iter().all(|f| f.starts_with("??")),
                "Python frames come first: {st:?}"
            );
        }
    }
    assert!(saw_cpp);
}

/// PyTorch's own categories for the same run (kineto-cpu-baseline/memory_timeline.json, at
/// the peak): PARAMETER + OPTIMIZER_STATE + GRADIENT = 39,201,136 B persistent; ACTIVATION +
/// INPUT + AUTOGRAD_DETAIL = 261,735,432 B activation; Unknown 524,416 B. Inference has
/// only frames and lifetimes, so we ask for agreement within 10 % on each band.
#[test]
fn inferred_bands_close_to_pytorch_categories() {
    let tl = read_json(&data("kineto-cpu-baseline/memory_timeline.json"));
    // [times, rows]; row = [0, PARAMETER, OPTIMIZER_STATE, INPUT, TEMPORARY, ACTIVATION,
    // GRADIENT, AUTOGRAD_DETAIL, Unknown]; take the row with the largest total.
    let rows = tl[1].as_array().unwrap();
    let row = rows
        .iter()
        .map(|r| {
            r.as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap() as u64)
                .collect::<Vec<u64>>()
        })
        .max_by_key(|r| r.iter().sum::<u64>())
        .unwrap();
    let persistent = row[1] + row[2] + row[6];
    let activation = row[3] + row[5] + row[7];
    let s = summaries(
        &data("snapshot-baseline/baseline.pickle"),
        &LoadOptions::default(),
    );
    let p = s[0].peak.as_ref().unwrap();
    let got_p = p.bands[memtide_core::trace::Band::Persistent.idx()];
    let got_a = p.bands[memtide_core::trace::Band::Activation.idx()];
    let close = |a: u64, b: u64| (a as f64 - b as f64).abs() <= 0.10 * b as f64;
    assert!(
        close(got_p, persistent),
        "persistent {got_p} vs {persistent}"
    );
    assert!(
        close(got_a, activation),
        "activation {got_a} vs {activation}"
    );
}

#[test]
fn user_rules_override() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.toml");
    std::fs::write(
        &rules,
        "[[rule]]\nmatch = \"functional.py\"\nband = \"workspace\"\n",
    )
    .unwrap();
    let opts = LoadOptions {
        rules: Some(rules),
        ..LoadOptions::default()
    };
    let s = summaries(&data("snapshot-baseline/baseline.pickle"), &opts);
    let p = s[0].peak.as_ref().unwrap();
    // every top live entry at the peak comes from nn/functional.py (see the truth file)
    assert!(p.live.iter().take(10).all(|l| l.band.name() == "workspace"));
}

fn load_bytes(bytes: &[u8]) -> Result<Vec<memtide_core::trace::Trace>, String> {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.pickle");
    std::fs::write(&f, bytes).unwrap();
    memtide_core::open::open(&f, &OpenOptions::default(), &Progress::new())
        .map(|o| o.devices.into_iter().map(|d| d.trace).collect())
        .map_err(|e| e.format_error().expect("the reader's error").to_string())
}

#[test]
fn code_running_pickles_are_refused() {
    // pickle.dumps(os.system) with protocol 2 / 4: GLOBAL and STACK_GLOBAL
    let e = load_bytes(b"\x80\x02cposix\nsystem\nq\x00.").unwrap_err();
    assert!(e.contains("GLOBAL") && e.contains("byte offset 2"), "{e}");
    let e = load_bytes(
        b"\x80\x04\x95\x14\x00\x00\x00\x00\x00\x00\x00\x8c\x05posix\x94\x8c\x06system\x94\x93\x94.",
    )
    .unwrap_err();
    assert!(
        e.contains("STACK_GLOBAL") && e.contains("byte offset"),
        "{e}"
    );
    // REDUCE after a dict
    let e = load_bytes(b"\x80\x04}N\x86R.").unwrap_err();
    assert!(e.contains("REDUCE"), "{e}");
}

#[test]
fn truncated_and_mistyped_files_give_offsets() {
    let full = std::fs::read(fixture("ring_p2.pickle")).unwrap();
    for cut in [3, 100, full.len() / 2, full.len() - 1] {
        let e = load_bytes(&full[..cut]).unwrap_err();
        assert!(e.contains("byte offset") && e.contains("truncated"), "{e}");
    }
    // {"device_traces": [[{"action": "alloc", "addr": 1, "size": "big"}]]}, protocol 4
    let b = b"\x80\x04\x95E\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\rdevice_traces\x94]\x94]\x94}\x94(\x8c\x06action\x94\x8c\x05alloc\x94\x8c\x04addr\x94K\x01\x8c\x04size\x94\x8c\x03big\x94uaas.";
    let e = load_bytes(b).unwrap_err();
    assert!(
        e.contains("'size' must be an int") && e.contains("byte offset"),
        "{e}"
    );
}

#[test]
fn json_errors_have_lines() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.json");
    std::fs::write(
        &f,
        "{\"segments\": [],\n \"device_traces\": [[{\"action\": \"alloc\", \"size\": 1,}]]}",
    )
    .unwrap();
    let e = memtide_core::open::open(&f, &OpenOptions::default(), &Progress::new())
        .unwrap_err()
        .format_error()
        .expect("the reader's error")
        .to_string();
    assert!(
        e.starts_with("byte offset 67: ") && e.contains("(line 2)"),
        "{e}"
    );
}

/// Expandable segments (map, then a partial unmap), an unmatched free, an OOM and an unknown
/// action, with every figure worked out by hand in the comments.
#[test]
fn hand_computed_expandable_segments() {
    const MIB: u64 = 1 << 20;
    let doc = serde_json::json!({
        "segments": [{"device": 0, "address": 0x100000, "total_size": 4 * MIB,
            "blocks": [
                {"size": MIB, "requested_size": 1_000_000, "state": "active_allocated", "frames": []},
                {"size": 3 * MIB, "requested_size": 0, "state": "inactive", "frames": []}]}],
        "device_traces": [[
            // reserved: final 4 MiB - net (8 - 4) MiB = 0 before the first event
            // blocks: the unmatched free's 300 B rounds to 512 B, live from the start
            {"action": "segment_map", "addr": 0x100000, "size": 8 * MIB, "time_us": 10},   // 0: reserved 8 MiB
            // still allocated at the dump: the final segments give its block, 1 MiB
            {"action": "alloc", "addr": 0x100000, "size": 1_000_000, "time_us": 11,
             "frames": [{"filename": "/w/train.py", "line": 3, "name": "forward"},
                        {"filename": "??", "line": 0, "name": "aten::empty"}]},             // 1: 1,049,088
            {"action": "segment_unmap", "addr": 0x500000, "size": 4 * MIB, "time_us": 12}, // 2: reserved 4 MiB
            // 2,000,000 B rounds to 2,000,384 (3,907 × 512); expandable: split, not whole
            {"action": "alloc", "addr": 0x200000, "size": 2_000_000, "time_us": 13},        // 3: 3,049,472 (peak)
            {"action": "free_completed", "addr": 0x200000, "size": 2_000_000, "time_us": 14}, // 4: 1,049,088
            {"action": "free_completed", "addr": 0x900000, "size": 300, "time_us": 15},     // 5: unmatched: 1,048,576
            {"action": "oom", "size": 5, "device_free": 7, "time_us": 16},                  // 6
            {"action": "user_defined", "addr": 0, "size": 0, "time_us": 17}                 // 7: a mark
        ]]
    });
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("x.json");
    std::fs::write(&f, doc.to_string()).unwrap();
    let opened = open(&f, &LoadOptions::default());
    let (t, ix) = (&opened.devices[0].trace, &opened.devices[0].index);
    let s = Summary::build(t, ix);
    let p = s.peak.as_ref().unwrap();
    assert_eq!(s.events, 8);
    assert_eq!((p.bytes, p.index), (3_049_472, 3));
    assert_eq!(p.time_us, Some(13.0));
    assert_eq!(s.final_bytes, MIB);
    // Each block keeps what was asked for.
    let asked: Vec<(u64, u64)> = p
        .live
        .iter()
        .map(|l| (l.bytes.0, l.requested.map_or(0, |r| r.0)))
        .collect();
    assert_eq!(
        asked,
        vec![(2_000_384, 2_000_000), (MIB, 1_000_000), (512, 300)]
    );
    assert_eq!(s.unmatched_frees, 1);
    assert_eq!(s.reserved_peak, Some(8 * MIB));
    assert_eq!(s.reserved_peak_index, Some(0));
    assert_eq!(ix.reserved_at(t, memtide_core::trace::Seq(2)).0, 4 * MIB);
    assert_eq!(ix.reserved_at(t, memtide_core::trace::Seq(7)).0, 4 * MIB);
    // the total before event 0 includes the unmatched free (live from the start)
    assert_eq!(ix.total(memtide_core::trace::Seq(0)).0, 512);
    let oom = t
        .marks
        .iter()
        .find(|m| m.kind == memtide_core::trace::MarkKind::Oom)
        .unwrap();
    assert_eq!(
        (oom.at.0, oom.size.map(|b| b.0), oom.free.map(|b| b.0)),
        (6, Some(5), Some(7))
    );
    // user_defined entries are marks (named by their user_metadata, else "user_defined")
    assert!(t
        .marks
        .iter()
        .any(|m| m.kind == memtide_core::trace::MarkKind::Note
            && t.mark_name(m) == "user_defined"
            && m.at.0 == 7));
    // C++ frame hidden; the Python frame is the top frame
    let live = &p.live;
    assert!(live.iter().any(|l| l.frame == "/w/train.py:3:forward"));
}

/// The explorer on a history-less dump: one instant with every block listed.
#[test]
fn explorer_history_less_lists_the_blocks() {
    let mut h = memtide::tui::testing::Harness::open(&fixture("no_history.pickle"), 120, 30);
    let s = h.screen();
    assert!(!s.contains("0 storages"), "{s}");
    assert!(s.contains("16 storages"), "{s}");
    h.press("p");
    assert!(h.screen().contains("16 storages"));
}

/// The explorer says when the peak is the initial state.
#[test]
fn explorer_peak_at_start() {
    let mut h = memtide::tui::testing::Harness::open(&fixture("late_start.pickle"), 120, 30);
    let s = h.screen();
    assert!(s.contains("at start"), "{s}");
    // opening says the history was cut
    assert!(s.contains("history was cut"), "{s}");
    h.press("p");
    assert!(h.screen().contains("initial state"), "{}", h.screen());
}

/// The inspector shows the kept fields of an allocation and the file's allocator settings.
#[test]
fn explorer_inspector_shows_fields_and_settings() {
    let mut h = memtide::tui::testing::Harness::open(&fixture("fields.pickle"), 200, 50);
    h.press("p<Enter>");
    let s = h.screen();
    assert!(
        s.contains("fields:") && s.contains("Torch-Compiled Region"),
        "{s}"
    );
    assert!(s.contains("allocator settings of the file"), "{s}");
}

/// `summary` and `check` on the new shapes, through the binary: a history-less dump and a
/// bare list are gated like any trace; a cut history is doubted (exit 2) unless allowed.
#[test]
fn cli_summary_and_check_on_new_shapes() {
    use assert_cmd::Command;
    for f in [
        "no_history.pickle",
        "segments_list.pickle",
        "segments_list.json",
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_memtide"))
            .args(["summary", "--json"])
            .arg(fixture(f))
            .output()
            .unwrap();
        assert!(out.status.success(), "{f}: {out:?}");
        let j: Value = serde_json::from_slice(&out.stdout).unwrap();
        // Σ block sizes of the dump (the generator's truth; 13,654,741 B requested).
        let truth = read_json(&fixture(&format!(
            "{}.truth.json",
            f.split('.').next().unwrap()
        )));
        assert_eq!(j["peak"]["bytes"], truth["devices"]["cuda:0"]["peak_bytes"]);
        assert_eq!(j["peak"]["bytes"], 13_657_600, "{f}");
        assert_eq!(j["reserved_peak"], 106_954_752, "{f}");
        let code = |limit: &str| {
            Command::new(env!("CARGO_BIN_EXE_memtide"))
                .args(["check", "--max-peak", limit])
                .arg(fixture(f))
                .output()
                .unwrap()
                .status
                .code()
        };
        assert_eq!(code("1GiB"), Some(0), "{f}");
        assert_eq!(code("10MiB"), Some(1), "{f}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_memtide"))
        .args(["summary", "--json"])
        .arg(fixture("late_start.pickle"))
        .output()
        .unwrap();
    let j: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["peak"]["index"], Value::Null);
    assert_eq!(j["peak"]["at"], "start");
    let code = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_memtide"))
            .args(["check", "--max-peak", "1GiB"])
            .args(extra)
            .arg(fixture("late_start.pickle"))
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(code(&[]), Some(2));
    assert_eq!(code(&["--allow-warnings"]), Some(0));
}

/// A snapshot whose memory is on cuda:1 while cuda:0 holds a `snapshot` marker alone (a
/// published one, dumped on a machine whose second GPU ran the work): every answer is about
/// cuda:1, where it was about cuda:0's 0 B ("first with events" took the marker).
#[test]
fn a_device_with_markers_alone_gives_way_to_the_one_that_held_memory() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("second.json");
    let doc = serde_json::json!({
        "segments": [{"device": 1, "address": 1 << 21, "total_size": 2 << 20,
            "allocated_size": 1 << 20, "active_size": 1 << 20, "requested_size": 1 << 20,
            "stream": 0, "segment_type": "large", "frames": [],
            "blocks": [
                {"address": 1 << 21, "size": 1 << 20, "requested_size": 1 << 20,
                 "state": "active_allocated", "frames": []},
                {"address": 3 << 20, "size": 1 << 20, "requested_size": 0,
                 "state": "inactive", "frames": []}]}],
        "device_traces": [
            [{"action": "snapshot", "addr": 0, "size": 0, "stream": 0, "time_us": 5}],
            [{"action": "snapshot", "addr": 0, "size": 0, "stream": 0, "time_us": 5}]]
    });
    std::fs::write(&f, doc.to_string()).unwrap();
    let v = crate::support::repo::summary_json(&f);
    assert_eq!(v["device"], "cuda:1", "{v}");
    assert_eq!(v["peak"]["bytes"], 1 << 20, "{v}");
    let h = memtide::tui::testing::Harness::open(&f, 100, 30);
    assert_eq!(h.explorer().device().unwrap().name(), "cuda:1");
    // --device still wins.
    let out = crate::support::repo::memtide()
        .args(["summary", "--json", "--device", "0"])
        .arg(&f)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["device"], "cuda:0", "{v}");
}
