//! Kineto reader on small hand-made traces (tests/fixtures/kineto): expected values are worked
//! out by hand from the fixture events, written next to each assertion.

use memtide::analysis::Summary;
use memtide::formats::{load, FormatError, LoadOptions, Loaded, Progress};
use memtide::index::Index;
use memtide::trace::{Band, MarkKind, Seq, StorageKind, Trace};
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kineto")
        .join(name)
}

fn read(path: &Path, categories: Option<&str>) -> Result<Loaded, FormatError> {
    let opts = LoadOptions {
        categories: categories.map(fixture),
        ..LoadOptions::default()
    };
    load(path, &opts, &Progress::new())
}

fn one(name: &str) -> Trace {
    let mut l = read(&fixture(name), None).expect("loads");
    assert_eq!(l.traces.len(), 1);
    l.traces.remove(0)
}

fn totals(t: &Trace) -> Vec<u64> {
    let ix = Index::build(t);
    (0..t.len() as u64).map(|i| ix.total(Seq(i)).0).collect()
}

fn stack_of(t: &Trace, src: u64) -> (String, Vec<String>) {
    let id = (0..t.storage_count())
        .map(|i| memtide::trace::AllocId(i as u32))
        .find(|&id| t.storages.src_id[id.idx()] == src)
        .expect("storage with that address");
    (
        t.name(id).to_string(),
        t.stack(id).into_iter().map(String::from).collect(),
    )
}

#[test]
fn relative_timestamps_attribution_and_marks() {
    let t = one("relative.json");
    assert_eq!(t.device, "cpu");
    // Bytes: +1000, +4000, −1000, +3000, −4000, +500.
    assert_eq!(totals(&t), vec![1000, 5000, 4000, 7000, 3000, 3500]);
    let ix = Index::build(&t);
    let s = Summary::build(&t, &ix);
    let p = s.peak.as_ref().expect("peak");
    assert_eq!((p.bytes, p.index), (7000, 3));
    assert_eq!(
        p.time_us,
        Some(210.0),
        "ts as written, relative to the base"
    );
    assert_eq!(p.live_count, 2); // addr 2 (4000) and addr 3 (3000)
    assert_eq!(
        s.reserved_peak, None,
        "Total Reserved 0 on CPU: unavailable"
    );
    assert_eq!(s.final_bytes, 3500);
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);

    // ts 111 lies in aten::empty [110,115) inside train.py(10): step [100.5, 299.5).
    let (name, stack) = stack_of(&t, 1);
    assert_eq!(name, "aten::empty");
    assert_eq!(stack, ["aten::empty", "train.py(10): step"]);
    // ts 121.5: aten::empty_strided [121,123) inside aten::mm [120,130); kernels ignored.
    let (name, stack) = stack_of(&t, 2);
    assert_eq!(name, "aten::empty_strided");
    assert_eq!(
        stack,
        ["aten::empty_strided", "aten::mm", "train.py(10): step"]
    );
    // Thread 2 has no spans.
    let (name, stack) = stack_of(&t, 3);
    assert_eq!(name, "(no enclosing op)");
    assert!(stack.is_empty());
    // Only a Python frame encloses ts 250.25: it names the allocation.
    assert_eq!(stack_of(&t, 4).0, "train.py(10): step");

    // ProfilerStep#0 [100,200) holds events 0–2, #1 [200,300) events 3–5; forward [101,141) 0–1.
    let marks: Vec<_> = t
        .marks
        .iter()
        .map(|m| {
            (
                t.mark_name(m).to_string(),
                m.kind,
                m.at.0,
                m.end.map(|e| e.0),
            )
        })
        .collect();
    assert_eq!(
        marks,
        vec![
            ("ProfilerStep#0".into(), MarkKind::Step, 0, Some(2)),
            ("forward".into(), MarkKind::Phase, 0, Some(1)),
            ("ProfilerStep#1".into(), MarkKind::Step, 3, Some(5)),
        ]
    );
    let steps: Vec<_> = s
        .windows
        .iter()
        .filter(|w| w.kind == "step")
        .map(|w| (w.name.as_str(), w.peak_bytes, w.peak_index))
        .collect();
    assert_eq!(
        steps,
        vec![
            ("ProfilerStep#0", Some(5000), Some(1)),
            ("ProfilerStep#1", Some(7000), Some(3))
        ]
    );
    // Names are searchable strings of the trace.
    assert!(t.strings.lookup("aten::empty_strided").is_some());
}

#[test]
fn absolute_timestamps_give_the_same_replay() {
    let t = one("absolute.json");
    assert_eq!(totals(&t), vec![1000, 5000, 4000, 7000, 3000, 3500]);
    let ix = Index::build(&t);
    let p = Summary::build(&t, &ix).peak.expect("peak");
    assert_eq!(p.index, 3);
    assert_eq!(p.time_us, Some(1_669_329_643_000_210.0));
    assert_eq!(stack_of(&t, 2).0, "aten::empty_strided");
    assert_eq!(
        t.marks.iter().filter(|m| m.kind == MarkKind::Step).count(),
        2
    );
}

#[test]
fn cuda_devices_reserved_segments_capacity_and_oom() {
    let l = read(&fixture("cuda.json"), None).expect("loads");
    let names: Vec<_> = l.traces.iter().map(|t| t.device.as_str()).collect();
    assert_eq!(names, ["cuda:0", "cuda:1", "cpu"], "accelerators first");
    let t = &l.traces[0];
    // cuda:0 Bytes: +1, +2, −1, +4, −4, −2 MiB.
    assert_eq!(totals(t), vec![MIB, 3 * MIB, 2 * MIB, 6 * MIB, 2 * MIB, 0]);
    assert_eq!(t.capacity.map(|c| c.0), Some(85_899_345_920));
    assert!(t.has_reserved);
    let ix = Index::build(t);
    // Total Reserved after each event: 2, 4, 4, 8, 8, 2 MiB.
    let reserved: Vec<u64> = (0..6).map(|i| ix.reserved_at(t, Seq(i)).0).collect();
    assert_eq!(
        reserved,
        vec![2 * MIB, 4 * MIB, 4 * MIB, 8 * MIB, 8 * MIB, 2 * MIB]
    );
    assert_eq!(
        ix.reserved_peak(),
        Some((memtide::trace::Bytes(8 * MIB), Seq(3)))
    );
    assert!((0..t.storage_count())
        .any(|i| t.storage_kind(memtide::trace::AllocId(i as u32)) == StorageKind::Segment));
    // Segments are not a band.
    let b = ix.bands_at(t, Seq(3));
    assert_eq!(b.total(), 6 * MIB);
    // The OOM at ts 45 (1 GiB requested) sits at the last event at or before it: #3 (ts 40).
    let oom: Vec<_> = t.marks.iter().filter(|m| m.kind == MarkKind::Oom).collect();
    assert_eq!(oom.len(), 1);
    assert_eq!(oom[0].at, Seq(3));
    assert_eq!(oom[0].size.map(|s| s.0), Some(1 << 30));
    // ProfilerStep#0 [5,65) on the CPU (twice, two threads) and its GPU-time copy: one step.
    let steps: Vec<_> = t
        .marks
        .iter()
        .filter(|m| m.kind == MarkKind::Step)
        .map(|m| (t.mark_name(m), m.at.0, m.end.map(|e| e.0)))
        .collect();
    assert_eq!(steps, vec![("ProfilerStep#0", 0, Some(5))]);
    // cuda:1 and the CPU hold one allocation each.
    assert_eq!(totals(&l.traces[1]), vec![512]);
    assert_eq!(totals(&l.traces[2]), vec![64]);
    assert!(!l.traces[2].has_reserved);
}

#[test]
fn memory_from_before_profiling_is_a_baseline() {
    let t = one("preexisting.json");
    // Total Allocated is exactly what the trace must show after each event.
    assert_eq!(totals(&t), vec![8000, 9000, 6000, 5000]);
    assert_eq!(t.unmatched_frees, 2, "frees of addresses 9 and 8");
    assert!(
        t.warnings.iter().any(|w| w.contains("before profiling")),
        "{:?}",
        t.warnings
    );
    let pre = (0..t.storage_count())
        .map(|i| memtide::trace::AllocId(i as u32))
        .filter(|&id| t.name(id) == memtide::formats::kineto::PREEXISTING)
        .count();
    assert_eq!(pre, 3, "two freed blocks and the 5000 B that stays");
}

#[test]
fn file_order_decides_equal_timestamps_and_index_is_file_position() {
    let t = one("unsorted.json");
    // Time order: +100 @10, +200 @20, −100 @20 (file order among equal ts), +300 @30.
    assert_eq!(totals(&t), vec![100, 300, 200, 500]);
    let ix = Index::build(&t);
    let p = Summary::build(&t, &ix).peak.expect("peak");
    assert_eq!(p.bytes, 500);
    assert_eq!(
        p.index, 1,
        "the +300 event is the 2nd [memory] event in the file"
    );
    assert_eq!(t.src_index(Seq(1)), 2);
}

#[test]
fn malformed_json_reports_the_byte_offset() {
    let text = std::fs::read_to_string(fixture("relative.json")).expect("fixture");
    // Break the colon after the third "Bytes" key.
    let mut at = 0;
    for _ in 0..3 {
        at += text[at..].find("\"Bytes\"").expect("Bytes key") + 1;
    }
    let colon = at - 1 + "\"Bytes\"".len();
    assert_eq!(&text[colon..colon + 1], ":");
    let mut bad = text.clone().into_bytes();
    bad[colon] = b';';
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("bad.json");
    std::fs::write(&p, &bad).expect("write");
    match read(&p, None) {
        Err(FormatError::At { offset, reason }) => {
            assert_eq!(offset, colon as u64, "{reason}");
            let line = text[..colon].matches('\n').count() + 1;
            assert!(reason.contains(&format!("line {line}")), "{reason}");
        }
        other => panic!("expected a positioned error, got {other:?}"),
    }
    // Garbage that is not JSON at all inside the array.
    let p2 = dir.path().join("bad2.json");
    std::fs::write(&p2, b"{\"traceEvents\": [{\"ph\": \"i\"}, @@@]}").expect("write");
    match read(&p2, None) {
        Err(FormatError::At { offset, .. }) => assert_eq!(offset, 30),
        other => panic!("expected a positioned error, got {other:?}"),
    }
}

#[test]
fn truncated_trace_opens_with_a_warning() {
    let text = std::fs::read_to_string(fixture("relative.json")).expect("fixture");
    // Cut inside the 4th [memory] event: events 0–2 (plus the metadata event) are complete.
    let mut at = 0;
    for _ in 0..4 {
        at += text[at..].find("[memory]").expect("memory event") + 1;
    }
    let cut = at + 20;
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("cut.json");
    std::fs::write(&p, &text.as_bytes()[..cut]).expect("write");
    let l = read(&p, None).expect("a truncated trace still opens");
    let t = &l.traces[0];
    assert_eq!(totals(t), vec![1000, 5000, 4000]);
    let w = t
        .warnings
        .iter()
        .find(|w| w.contains("truncated"))
        .expect("a truncation warning");
    assert!(w.contains(&format!("at byte {cut}")), "{w}");
    assert!(w.contains("the 4 events read"), "{w}");

    // Also through gzip (the profiler died while the .gz was written).
    use std::io::Write;
    let p = dir.path().join("cut.json.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&text.as_bytes()[..cut]).expect("gzip");
    std::fs::write(&p, gz.finish().expect("gzip")).expect("write");
    let l = read(&p, None).expect("opens");
    assert_eq!(totals(&l.traces[0]), vec![1000, 5000, 4000]);

    // A .gz file itself cut short: whatever decompresses before the cut is shown. Padding
    // events put the cut beyond the first 64 KiB (the part read for format detection).
    let pad = "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 7, \"tid\": 1, \"ts\": 0},\n"
        .repeat(2000);
    let text = text.replacen("\"traceEvents\": [", &format!("\"traceEvents\": [{pad}"), 1);
    let cut = cut + pad.len();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none());
    gz.write_all(text.as_bytes()).expect("gzip");
    let full = gz.finish().expect("gzip");
    // Stored (uncompressed) deflate: byte k of the JSON sits near byte k + header of the .gz.
    let p = dir.path().join("cut2.json.gz");
    std::fs::write(&p, &full[..cut + 10]).expect("write");
    let l = read(&p, None).expect("a cut .gz still opens");
    let t = &l.traces[0];
    assert!(
        t.warnings.iter().any(|w| w.contains("truncated")),
        "{:?}",
        t.warnings
    );
    assert!(
        totals(t).starts_with(&[1000, 5000, 4000]),
        "{:?}",
        totals(t)
    );
}

#[test]
fn empty_or_memoryless_traces_are_clear_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("nomem.json");
    std::fs::write(
        &p,
        br#"{"traceEvents": [{"ph":"X","cat":"cpu_op","name":"aten::mm","ts":1,"dur":2,"tid":1}]}"#,
    )
    .expect("write");
    match read(&p, None) {
        Err(FormatError::Empty(m)) => assert!(m.contains("profile_memory"), "{m}"),
        other => panic!("expected Empty, got {other:?}"),
    }
}

#[test]
fn category_sidecar_labels_and_recategorises_allocations() {
    let l = read(
        &fixture("relative.json"),
        Some("relative.categories.raw.json"),
    )
    .expect("loads");
    let t = &l.traces[0];
    let ix = Index::build(t);
    let band = |at: u64| ix.bands_at(t, Seq(at));
    // e0 PARAMETER 1000; e1 ACTIVATION 4000; e2 frees e0.
    assert_eq!(band(1).get(Band::Persistent), 1000);
    assert_eq!(band(1).get(Band::Activation), 4000);
    // At 200 µs the 4000 B become GRADIENT: applied at the first event after (e3, 210 µs),
    // where an Unknown 3000 B is allocated too.
    assert_eq!(band(2).get(Band::Activation), 4000);
    assert_eq!(band(3).get(Band::Persistent), 4000);
    assert_eq!(band(3).get(Band::Activation), 0);
    assert_eq!(band(3).get(Band::Unknown), 3000);
    // e5: TEMPORARY 500.
    assert_eq!(band(5).get(Band::Workspace), 500);
    assert_eq!(totals(t), vec![1000, 5000, 4000, 7000, 3000, 3500]);
    let s = Summary::build(t, &ix);
    assert_eq!(s.bands_source, "recorded");
    assert!(s
        .warnings
        .iter()
        .any(|w| w.contains("4 of 4 allocations matched")));
}

#[test]
fn memory_timeline_coalesced_rows_are_reproduced() {
    let t = one("timeline.json");
    let ix = Index::build(&t);
    // Rows (PARAMETER, OPTIMIZER_STATE, INPUT, TEMPORARY, ACTIVATION, GRADIENT,
    // AUTOGRAD_DETAIL, Unknown) → (persistent, activation, workspace, unknown):
    let want = [
        (100, 0, 0, 0),
        (150, 30, 0, 7),
        (150 + 20, 10, 0, 7),
        (150 + 20, 40, 5, 0),
    ];
    for (i, w) in want.iter().enumerate() {
        let b = ix.bands_at(&t, Seq(i as u64));
        assert_eq!(
            (
                b.get(Band::Persistent),
                b.get(Band::Activation),
                b.get(Band::Workspace),
                b.get(Band::Unknown)
            ),
            *w,
            "row {i}"
        );
    }
    assert_eq!(t.ts(Seq(2)).0, 1_002_000, "µs times stored as ns");
}

#[test]
fn memory_timeline_raw_rows_are_replayed() {
    let t = one("timeline.raw.json");
    let ix = Index::build(&t);
    // PREEXISTING 100 PARAMETER; CREATE 30 ACTIVATION; CREATE 8 Unknown;
    // INCREMENT_VERSION 30 ACTIVATION→GRADIENT; DESTROY 8 Unknown; DESTROY 30 GRADIENT.
    let rows: Vec<(u64, u64, u64)> = (0..t.len() as u64)
        .map(|i| {
            let b = ix.bands_at(&t, Seq(i));
            (
                b.get(Band::Persistent),
                b.get(Band::Activation),
                b.get(Band::Unknown),
            )
        })
        .collect();
    assert_eq!(
        rows,
        vec![
            (100, 30, 0),
            (100, 30, 8),
            (130, 0, 8),
            (130, 0, 0),
            (100, 0, 0)
        ]
    );
    assert_eq!(t.unmatched_frees, 0);
}

fn mem_json(events: &[(f64, u64, i64, i64)]) -> String {
    let evs: Vec<String> = events
        .iter()
        .map(|(ts, addr, b, ta)| {
            format!(
                r#"{{"ph":"i","cat":"cpu_instant_event","s":"t","name":"[memory]","pid":1,"tid":1,"ts":{ts},"args":{{"Total Reserved":0,"Total Allocated":{ta},"Bytes":{b},"Device Id":-1,"Device Type":0,"Addr":{addr}}}}}"#
            )
        })
        .collect();
    format!("{{\"traceEvents\":[{}]}}", evs.join(","))
}

fn load_text(text: &str) -> Trace {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("t.json");
    std::fs::write(&p, text).expect("write");
    read(&p, None).expect("loads").traces.remove(0)
}

#[test]
fn total_allocated_conventions_and_mismatch_warning() {
    // Allocator reporting the total after allocs but before frees (anchors §1's CPU example).
    let t = load_text(&mem_json(&[
        (1.0, 1, 20, 20),
        (2.0, 1, -20, 20),
        (3.0, 2, 8, 8),
    ]));
    assert_eq!(totals(&t), vec![20, 0, 8]);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    // A total that jumps by 1000 mid-trace: warned, and the memory follows Bytes.
    let t = load_text(&mem_json(&[
        (1.0, 1, 20, 20),
        (2.0, 2, 30, 1050),
        (3.0, 1, -20, 1030),
    ]));
    assert_eq!(totals(&t), vec![20, 50, 30]);
    assert!(
        t.warnings
            .iter()
            .any(|w| w.contains("differs from Total Allocated at 2 of 3")),
        "{:?}",
        t.warnings
    );
}

#[test]
fn reallocating_a_live_address_closes_the_old_block() {
    let t = load_text(&mem_json(&[
        (1.0, 1, 20, 20),
        (2.0, 1, 30, 50),
        (3.0, 1, -30, 20),
    ]));
    // The re-alloc closes the 20 B block: 20, 30, 0 (Total Allocated disagrees and says so).
    assert_eq!(totals(&t), vec![20, 30, 0]);
    assert!(t.warnings.iter().any(|w| w.contains("reused an address")));
}

#[test]
fn step_names() {
    use memtide::formats::kineto::step_like;
    for s in [
        "ProfilerStep#3",
        "step1",
        "step0_warmup",
        "Step 2",
        "train_step_4",
    ] {
        assert!(step_like(s), "{s}");
    }
    for s in [
        "optimizer_step",
        "Optimizer.step#AdamW.step",
        "forward",
        "stepper",
    ] {
        assert!(!step_like(s), "{s}");
    }
}

#[test]
fn events_longer_than_the_chunk_gap_cross_chunk_boundaries() {
    // 60 spans with 200 KB args (12 MB in all, beyond the 8 MiB chunks and their 64 KiB gap),
    // each followed by one allocation of i+1 bytes inside it.
    let big = "x".repeat(200_000);
    let mut evs = Vec::new();
    for i in 0..60u64 {
        let ts = 10 * i + 1;
        evs.push(format!(
            r#"{{"ph":"X","cat":"cpu_op","name":"op{i}","tid":1,"ts":{ts},"dur":5,"args":{{"Concrete Inputs":["{big}"]}}}}"#
        ));
        evs.push(format!(
            r#"{{"ph":"i","name":"[memory]","tid":1,"ts":{}.5,"args":{{"Bytes":{},"Addr":{i},"Total Allocated":{}}}}}"#,
            ts + 1,
            i + 1,
            (i + 1) * (i + 2) / 2
        ));
    }
    let t = load_text(&format!("{{\"traceEvents\":[{}]}}", evs.join(",\n")));
    assert_eq!(t.len(), 60);
    assert_eq!(totals(&t).last().copied(), Some(60 * 61 / 2));
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    assert_eq!(stack_of(&t, 59).0, "op59");
}
