//! Kineto reader on small hand-made traces (tests/fixtures/kineto): expected values are worked
//! out by hand from the fixture events, written next to each assertion.

use memtide_core::analysis::Summary;
use memtide_core::formats::{FormatError, LoadOptions, Progress};
use memtide_core::index::Index;
use memtide_core::open::{open, OpenError, OpenOptions};
use memtide_core::trace::{Band, MarkKind, Seq, StorageKind, Trace};
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kineto")
        .join(name)
}

/// The devices' traces of `path` opened through the door, or the reader's error.
fn read(path: &Path, categories: Option<&str>) -> Result<Vec<Trace>, FormatError> {
    let opts = LoadOptions {
        categories: categories.map(fixture),
        ..LoadOptions::default()
    };
    open(path, &OpenOptions::from(opts), &Progress::new())
        .map(|o| o.devices.into_iter().map(|d| d.trace).collect())
        .map_err(|e| match e {
            OpenError::Read { source, .. } | OpenError::SideFile(source) => source,
            other => panic!("not a reader's error: {other}"),
        })
}

fn one(name: &str) -> Trace {
    let mut l = read(&fixture(name), None).expect("loads");
    assert_eq!(l.len(), 1);
    l.remove(0)
}

fn totals(t: &Trace) -> Vec<u64> {
    let ix = Index::build(t);
    (0..t.len() as u64).map(|i| ix.total(Seq(i)).0).collect()
}

fn stack_of(t: &Trace, src: u64) -> (String, Vec<String>) {
    let id = (0..t.storage_count())
        .map(|i| memtide_core::trace::AllocId(i as u32))
        .find(|&id| t.src_id(id) == Some(src))
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
        .map(|w| (&*w.name, w.peak_bytes, w.peak_index))
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
    let names: Vec<_> = l.iter().map(|t| t.device.as_str()).collect();
    assert_eq!(names, ["cuda:0", "cuda:1", "cpu"], "accelerators first");
    let t = &l[0];
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
        Some((memtide_core::trace::Bytes(8 * MIB), Seq(3)))
    );
    assert!((0..t.storage_count())
        .any(|i| t.storage_kind(memtide_core::trace::AllocId(i as u32)) == StorageKind::Segment));
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
    assert_eq!(totals(&l[1]), vec![512]);
    assert_eq!(totals(&l[2]), vec![64]);
    assert!(!l[2].has_reserved);
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
        .map(|i| memtide_core::trace::AllocId(i as u32))
        .filter(|&id| t.name(id) == memtide_core::formats::PREEXISTING)
        .count();
    assert_eq!(pre, 3, "two freed blocks and the 5000 B that stays");
}

#[test]
fn file_order_decides_equal_timestamps_and_index_is_time_order() {
    let t = one("unsorted.json");
    // Time order: +100 @10, +200 @20, −100 @20 (file order among equal ts), +300 @30.
    assert_eq!(totals(&t), vec![100, 300, 200, 500]);
    let ix = Index::build(&t);
    let p = Summary::build(&t, &ix).peak.expect("peak");
    assert_eq!(p.bytes, 500);
    assert_eq!(p.index, 3, "the +300 event is the last in time order");
    assert_eq!(
        p.source_index, 1,
        "and the 2nd entry of traceEvents in the file"
    );
    assert_eq!(t.src_index(Seq(1)), 2);
    assert_eq!(t.event_number(Seq(1)), 1);
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
    let t = &l[0];
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
    assert_eq!(totals(&l[0]), vec![1000, 5000, 4000]);

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
    let t = &l[0];
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
    let t = &l[0];
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
    read(&p, None).expect("loads").remove(0)
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
    use memtide_core::formats::step_like;
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

// ------------------------------------------------------------------------------------------
// Real shapes (issue 14): no Addr, threads out of time order, distributedInfo, device types,
// and check refusing figures its reader doubted. Ground truth is a brute-force replay written
// here (a running sum of Bytes in (ts, file order) order), never memtide's own output.

/// One `[memory]` event as a test writes it.
#[derive(Clone, Copy)]
struct Ev {
    ts: f64,
    tid: u64,
    bytes: i64,
    dev_type: i64,
    dev_id: i64,
    addr: Option<u64>,
    total_alloc: Option<i64>,
}

fn ev(ts: f64, tid: u64, bytes: i64, dev_type: i64, dev_id: i64) -> Ev {
    Ev {
        ts,
        tid,
        bytes,
        dev_type,
        dev_id,
        addr: None,
        total_alloc: None,
    }
}

fn ev_json(e: &Ev) -> String {
    let mut args = format!(
        r#""Device Type":{},"Device Id":{},"Bytes":{}"#,
        e.dev_type, e.dev_id, e.bytes
    );
    if let Some(a) = e.addr {
        args.push_str(&format!(r#","Addr":{a}"#));
    }
    if let Some(t) = e.total_alloc {
        args.push_str(&format!(r#","Total Allocated":{t}"#));
    }
    format!(
        r#"{{"ph":"i","s":"t","name":"[memory]","pid":1,"tid":{},"ts":{},"args":{{{args}}}}}"#,
        e.tid, e.ts
    )
}

/// A trace whose traceEvents are `pre` (any JSON events) then the memory events, in the order
/// given; `header` is spliced in before traceEvents.
fn trace_text(header: &str, pre: &[String], evs: &[Ev]) -> String {
    let mut all: Vec<String> = pre.to_vec();
    all.extend(evs.iter().map(ev_json));
    format!(
        "{{\"schemaVersion\":1,{header}\"traceEvents\":[\n{}\n]}}",
        all.join(",\n")
    )
}

fn load_all(text: &str) -> Vec<Trace> {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("t.json");
    std::fs::write(&p, text).expect("write");
    read(&p, None).expect("loads")
}

/// Brute force: the device's events in time order (ties: file order) as (file position in
/// traceEvents, bytes), and the running totals after each from `start`.
fn brute(evs: &[Ev], first_pos: usize, ty: i64, id: i64, start: i64) -> (Vec<usize>, Vec<i64>) {
    let mut mine: Vec<(f64, usize, i64)> = evs
        .iter()
        .enumerate()
        .filter(|(_, e)| e.dev_type == ty && e.dev_id == id)
        .map(|(i, e)| (e.ts, first_pos + i, e.bytes))
        .collect();
    mine.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut sum = start;
    let totals = mine
        .iter()
        .map(|m| {
            sum += m.2;
            sum
        })
        .collect();
    (mine.iter().map(|m| m.1).collect(), totals)
}

/// First position of the maximum.
fn first_max(v: &[i64]) -> (usize, i64) {
    let mut best = (0, i64::MIN);
    for (i, &x) in v.iter().enumerate() {
        if x > best.1 {
            best = (i, x);
        }
    }
    best
}

struct Lcg(u64);
impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// Random alloc/free streams without Addr on cuda:0 and the CPU, on two threads whose events
/// are written thread by thread (so the file is out of time order).
fn random_no_addr(seed: u64, n: usize) -> Vec<Ev> {
    let mut r = Lcg(seed);
    let mut evs = Vec::new();
    for (ty, id) in [(1, 0), (0, -1)] {
        for tid in [1u64, 2] {
            let mut live: Vec<i64> = Vec::new();
            let mut ts = 1000.0 + tid as f64;
            for _ in 0..n {
                ts += (r.below(4) as f64) * 0.5; // equal timestamps happen
                let b = if !live.is_empty() && r.below(3) == 0 {
                    let k = r.below(live.len() as u64) as usize;
                    -live.swap_remove(k)
                } else {
                    let b = (r.below(1 << 20) as i64 + 1) * 512;
                    live.push(b);
                    b
                };
                evs.push(ev(ts, tid, b, ty, id));
            }
        }
    }
    evs
}

#[test]
fn no_addr_events_are_the_running_sum_of_bytes_on_cuda_and_cpu() {
    for seed in [1u64, 7, 42] {
        let evs = random_no_addr(seed, 700); // > 1 index block per device
        let traces = load_all(&trace_text("", &[], &evs));
        assert_eq!(
            traces.iter().map(|t| t.device.as_str()).collect::<Vec<_>>(),
            ["cuda:0", "cpu"]
        );
        for (t, (ty, id)) in traces.iter().zip([(1, 0), (0, -1)]) {
            let (pos, want) = brute(&evs, 0, ty, id, 0);
            let got: Vec<i64> = totals(t).into_iter().map(|x| x as i64).collect();
            assert_eq!(got, want, "seed {seed} {}", t.device);
            assert!(!t.identities_known());
            assert_eq!(t.storage_count(), 0, "no allocation is invented");
            let ix = Index::build(t);
            assert!(ix.live_at(t, Seq(0)).is_empty());
            // Band totals at any instant (replayed from a block checkpoint) and the peak of
            // any range agree with the brute-force sums too.
            for (i, &w) in want.iter().enumerate() {
                assert_eq!(ix.bands_at(t, Seq(i as u64)).get(Band::Unknown) as i64, w);
            }
            let mut r = Lcg(seed);
            for _ in 0..50 {
                let a = r.below(want.len() as u64) as usize;
                let b = a + r.below((want.len() - a) as u64) as usize;
                let (k, m) = first_max(&want[a..=b]);
                let (at, bytes) = ix.argmax(Seq(a as u64), Seq(b as u64)).expect("range");
                assert_eq!((at.idx(), bytes.0 as i64), (a + k, m), "range {a}..={b}");
            }
            let s = Summary::build(t, &ix);
            let p = s.peak.as_ref().expect("peak");
            let (at, max) = first_max(&want);
            assert_eq!((p.bytes as i64, p.index), (max, at as u64), "seed {seed}");
            assert_eq!(p.source_index, pos[at] as u64, "file position of the peak");
            assert_eq!(s.final_bytes as i64, *want.last().expect("events"));
            assert_eq!(p.bands[Band::Unknown.idx()] as i64, max);
            assert!(s.live_unavailable.is_some());
            assert!(!s.unmatched_frees_known, "unknowable, not 0");
            assert!(s.to_json(&[])["unmatched_frees"].is_null());
            assert!(s.doubtful.is_empty(), "{:?}", s.doubtful);
            let j = s.to_json(&[]);
            assert!(j["peak"]["live"].is_null(), "{j}");
            assert!(j["peak"]["live_count"].is_null());
            assert!(j["peak"]["live_unavailable"]
                .as_str()
                .is_some_and(|w| w.contains("no addresses")));
            assert_eq!(j["peak"]["bands_source"], "unavailable");
            // The running sum is not split: persistent, activation and workspace are
            // unavailable (null), never 0; every byte is in the unknown band.
            for b in ["persistent", "activation", "workspace"] {
                assert!(j["peak"]["bands"][b].is_null(), "{b}: {j}");
            }
            assert_eq!(j["peak"]["bands"]["unknown"].as_i64(), Some(max));
            let text = memtide_report::summary::render_text(&s);
            for b in ["persistent", "activation", "workspace"] {
                let line = text
                    .lines()
                    .find(|l| l.trim_start().starts_with(b))
                    .unwrap_or_else(|| panic!("{b}: {text}"));
                assert!(line.contains("unavailable"), "{line}");
            }
            let md = memtide_report::markdown::render(&s);
            assert!(md.contains("| persistent | unavailable | - |"), "{md}");
        }
    }
}

#[test]
fn no_addr_totals_start_from_total_allocated_or_the_lowest_point() {
    // Total Allocated after each event = 5000 + the running sum: 5000 B were live before.
    let bytes = [300i64, -200, 1000, -1100, 50];
    let mut sum = 0;
    let evs: Vec<Ev> = bytes
        .iter()
        .enumerate()
        .map(|(i, &b)| {
            sum += b;
            Ev {
                total_alloc: Some(5000 + sum),
                ..ev(10.0 + i as f64, 1, b, 1, 0)
            }
        })
        .collect();
    let t = load_all(&trace_text("", &[], &evs)).remove(0);
    let (_, want) = brute(&evs, 0, 1, 0, 5000);
    let got: Vec<i64> = totals(&t).into_iter().map(|x| x as i64).collect();
    assert_eq!(got, want);
    assert!(
        t.warnings.iter().any(|w| w.contains("5000 bytes")),
        "{:?}",
        t.warnings
    );
    // No total: frees of memory from before profiling take the sum to −800 at its lowest,
    // so at least 800 B were live from the start.
    let evs: Vec<Ev> = [-500i64, 200, -500, 1000]
        .iter()
        .enumerate()
        .map(|(i, &b)| ev(10.0 + i as f64, 1, b, 0, -1))
        .collect();
    let t = load_all(&trace_text("", &[], &evs)).remove(0);
    let (_, raw) = brute(&evs, 0, 0, -1, 0);
    let low = raw.iter().copied().min().unwrap_or(0).min(0);
    let got: Vec<i64> = totals(&t).into_iter().map(|x| x as i64).collect();
    assert_eq!(got, raw.iter().map(|x| x - low).collect::<Vec<_>>());
    assert_eq!(Index::build(&t).baseline().total(), 800);
    assert!(
        t.warnings.iter().any(|w| w.contains("lower bounds")),
        "{:?}",
        t.warnings
    );
}

#[test]
fn a_device_with_some_events_without_addr_is_a_running_sum_too() {
    // Addr on some events only: matching by address would mix two models; the totals are
    // the running sum of all Bytes, and the live set is unavailable.
    let evs = [
        Ev {
            addr: Some(1),
            ..ev(1.0, 1, 100, 1, 0)
        },
        ev(2.0, 1, 50, 1, 0),
        Ev {
            addr: Some(1),
            ..ev(3.0, 1, -100, 1, 0)
        },
        ev(4.0, 1, 25, 1, 0),
    ];
    let t = load_all(&trace_text("", &[], &evs)).remove(0);
    let (_, want) = brute(&evs, 0, 1, 0, 0);
    let got: Vec<i64> = totals(&t).into_iter().map(|x| x as i64).collect();
    assert_eq!(got, want);
    assert!(!t.identities_known());
    assert!(
        t.warnings
            .iter()
            .any(|w| w.contains("2 of 4 [memory] events carry no Addr")),
        "{:?}",
        t.warnings
    );
}

fn memtide() -> assert_cmd::Command {
    assert_cmd::Command::new(env!("CARGO_BIN_EXE_memtide"))
}

#[test]
fn check_max_peak_fails_on_a_no_addr_trace_over_1gib() {
    // 2.5 GiB at the peak on cuda:0, in 256 MiB pieces; most are freed again.
    let piece = 256 * MIB as i64;
    let mut evs = Vec::new();
    for i in 0..10 {
        evs.push(ev(100.0 + i as f64, 1, piece, 1, 0));
    }
    for i in 0..9 {
        evs.push(ev(200.0 + i as f64, 1, -piece, 1, 0));
    }
    evs.push(ev(300.0, 1, 4096, 0, -1));
    let (_, want) = brute(&evs, 0, 1, 0, 0);
    let (_, peak) = first_max(&want);
    assert!(peak > 1 << 30);
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("old.json");
    std::fs::write(&p, trace_text("", &[], &evs)).expect("write");
    let out = memtide()
        .args(["check", "--max-peak", "1GiB"])
        .arg(&p)
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains(&format!("({peak} B)")), "{stdout}");
    assert!(
        stdout.contains("biggest live: unavailable"),
        "never invented: {stdout}"
    );
    // Under a limit above the true peak it passes (no doubtful warning on this file).
    let out = memtide()
        .args(["check", "--max-peak", "3GiB"])
        .arg(&p)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    // The text summary says the live set is unavailable; JSON says null.
    let out = memtide().arg("summary").arg(&p).output().expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!("{} B", grouped(peak as u64))),
        "{text}"
    );
    assert!(text.contains("live set is unavailable"), "{text}");
    assert!(text.contains("unmatched frees  unavailable"), "{text}");
}

fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn explorer_says_the_live_set_is_unavailable() {
    let evs = random_no_addr(3, 50);
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("old.json");
    std::fs::write(&p, trace_text("", &[], &evs)).expect("write");
    let mut h = memtide::tui::testing::Harness::open(&p, 120, 30);
    let screen = h.screen();
    assert!(screen.contains("storages unavailable"), "{screen}");
    assert!(screen.contains("records no addresses"), "{screen}");
    h.press("<Enter>");
    assert!(
        h.app
            .shared
            .status
            .as_deref()
            .is_some_and(|s| s.contains("records no addresses")),
        "{:?}",
        h.app.shared.status
    );
}

/// A `ProfilerStep#N` span on a thread.
fn step_span(n: u64, tid: u64, ts: f64, dur: f64) -> String {
    format!(
        r#"{{"ph":"X","cat":"user_annotation","name":"ProfilerStep#{n}","pid":1,"tid":{tid},"ts":{ts},"dur":{dur}}}"#
    )
}

#[test]
fn out_of_order_threads_number_events_in_time_order() {
    // Three steps of 100 µs. The autograd thread (tid 2) is written before the main thread
    // (tid 1), as real traces do; both allocate and free with addresses, in every step.
    let mut r = Lcg(9);
    let mut main = Vec::new();
    let mut autograd = Vec::new();
    let mut addr = 1u64;
    for step in 0..3u64 {
        for (tid, list) in [(1u64, &mut main), (2u64, &mut autograd)] {
            let mut live = Vec::new();
            for k in 0..40u64 {
                let ts = (step * 100 + 1 + k * 2 + tid) as f64 + 0.25;
                let e = if !live.is_empty() && r.below(3) == 0 {
                    let (a, b): (u64, i64) = live.remove(0);
                    Ev {
                        addr: Some(a),
                        ..ev(ts, tid, -b, 1, 0)
                    }
                } else {
                    let b = (r.below(1000) as i64 + 1) * 64;
                    live.push((addr, b));
                    addr += 1;
                    Ev {
                        addr: Some(addr - 1),
                        ..ev(ts, tid, b, 1, 0)
                    }
                };
                list.push(e);
            }
        }
    }
    let spans: Vec<String> = (0..3u64)
        .map(|n| step_span(n, 1, (n * 100) as f64, 100.0))
        .collect();
    let evs: Vec<Ev> = autograd.iter().chain(main.iter()).copied().collect();
    let text = trace_text("", &spans, &evs);
    let t = load_all(&text).remove(0);
    let (pos, want) = brute(&evs, spans.len(), 1, 0, 0);
    let got: Vec<i64> = totals(&t).into_iter().map(|x| x as i64).collect();
    assert_eq!(got, want);
    let ix = Index::build(&t);
    let s = Summary::build(&t, &ix);
    let p = s.peak.as_ref().expect("peak");
    let (at, max) = first_max(&want);
    assert_eq!((p.index, p.bytes as i64), (at as u64, max));
    assert_eq!(p.source_index, pos[at] as u64);
    assert_eq!(s.windows.len(), 3);
    for w in &s.windows {
        let pi = w.peak_index.expect("window peak");
        assert!(w.first_index <= w.last_index, "{w:?}");
        assert!(w.first_index <= pi && pi <= w.last_index, "{w:?}");
        // The window's peak is the brute-force maximum over its own range.
        let range = &want[w.first_index as usize..=w.last_index as usize];
        let (k, m) = first_max(range);
        assert_eq!(
            (pi, w.peak_bytes.map(|b| b as i64)),
            ((w.first_index as usize + k) as u64, Some(m))
        );
        assert_eq!(w.peak_source_index, Some(pos[pi as usize] as u64));
        assert_eq!(w.first_source_index, pos[w.first_index as usize] as u64);
    }
    // The same through the binary's JSON.
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("ooo.json");
    std::fs::write(&f, &text).expect("write");
    let out = memtide()
        .args(["summary", "--json"])
        .arg(&f)
        .output()
        .expect("runs");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(j["peak"]["index"], at as u64);
    assert_eq!(j["peak"]["source_index"], pos[at] as u64);
    for w in j["windows"].as_array().expect("windows") {
        let (a, b, k) = (
            w["first_index"].as_u64().expect("first"),
            w["last_index"].as_u64().expect("last"),
            w["peak_index"].as_u64().expect("peak"),
        );
        assert!(a <= k && k <= b, "{w}");
    }
}

#[test]
fn distributed_info_is_read_and_shown() {
    let header = r#""distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8, "pg_count": 2, "pg_config": [{"pg_name": "0", "ranks": [0, 1]}], "nccl_version": "2.18.1"},"#;
    let evs = [Ev {
        addr: Some(16),
        ..ev(1.0, 1, 512, 1, 0)
    }];
    let text = trace_text(header, &[], &evs);
    let t = load_all(&text).remove(0);
    let d = t.distributed.clone().expect("distributedInfo");
    assert_eq!((d.rank, d.world_size), (Some(3), Some(8)));
    assert_eq!(d.backend.as_deref(), Some("nccl"));
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("rank3.json");
    std::fs::write(&f, &text).expect("write");
    let out = memtide().arg("summary").arg(&f).output().expect("runs");
    let s = String::from_utf8_lossy(&out.stdout);
    assert!(s.contains("rank 3 of 8 · nccl"), "{s}");
    let out = memtide()
        .args(["summary", "--json"])
        .arg(&f)
        .output()
        .expect("runs");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(j["distributed"]["rank"], 3);
    assert_eq!(j["distributed"]["world_size"], 8);
    assert_eq!(j["distributed"]["backend"], "nccl");
    // The explorer header names the rank.
    let h = memtide::tui::testing::Harness::open(&f, 120, 30);
    assert!(h.screen().contains("rank 3 of 8"), "{}", h.screen());
    // Numeric strings are read; a shape that is not an object is a warning with its offset.
    let t = load_all(&trace_text(
        r#""distributedInfo": {"rank": "1", "world_size": "2"},"#,
        &[],
        &evs,
    ))
    .remove(0);
    assert_eq!(t.distributed.and_then(|d| d.world_size), Some(2));
    let text = trace_text(r#""distributedInfo": "rank0","#, &[], &evs);
    let at = text.find("\"rank0\"").expect("value");
    let t = load_all(&text).remove(0);
    assert!(t.distributed.is_none());
    assert!(
        t.warnings
            .iter()
            .any(|w| w.contains(&format!("distributedInfo at byte {at}"))),
        "{:?}",
        t.warnings
    );
    assert!(t.doubtful_warnings().next().is_none());
}

#[test]
fn device_types_are_named_as_pytorch_names_them() {
    // c10::DeviceType: 1 CUDA, 6 HIP, 8 MAIA, 12 XPU, 13 MPS, 19 MTIA, 20 PrivateUse1.
    let cases: [(&str, i64, &str); 8] = [
        ("1", 0, "cuda:0"),
        ("6", 1, "hip:1"),
        ("8", 0, "maia:0"),
        ("12", 1, "xpu:1"),
        ("13", 0, "mps:0"),
        ("19", 2, "mtia:2"),
        ("20", 0, "privateuseone:0"),
        ("\"xpu\"", 3, "xpu:3"),
    ];
    for (ty, id, name) in cases {
        let text = format!(
            r#"{{"traceEvents":[{{"ph":"i","name":"[memory]","tid":1,"ts":1,"args":{{"Device Type":{ty},"Device Id":{id},"Bytes":64,"Addr":5}}}}]}}"#
        );
        let t = load_all(&text).remove(0);
        assert_eq!(t.device, name, "Device Type {ty}");
        assert_eq!(totals(&t), vec![64]);
    }
    // Devices of several types in one file are kept apart; the CPU comes last.
    let evs = [
        Ev {
            addr: Some(1),
            ..ev(1.0, 1, 10, 12, 0)
        },
        Ev {
            addr: Some(2),
            ..ev(2.0, 1, 20, 1, 0)
        },
        Ev {
            addr: Some(3),
            ..ev(3.0, 1, 30, 0, -1)
        },
    ];
    let names: Vec<String> = load_all(&trace_text("", &[], &evs))
        .into_iter()
        .map(|t| t.device)
        .collect();
    assert_eq!(names, ["cuda:0", "xpu:0", "cpu"]);
}

#[test]
fn check_exits_2_when_the_reader_doubts_the_figures() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Address 1 allocated twice without a free between: "reused an address that was still
    // live" — the totals may be wrong, so check refuses to say ok.
    let reuse = [
        Ev {
            addr: Some(1),
            ..ev(1.0, 1, 20, 0, -1)
        },
        Ev {
            addr: Some(1),
            ..ev(2.0, 1, 30, 0, -1)
        },
        Ev {
            addr: Some(1),
            ..ev(3.0, 1, -30, 0, -1)
        },
    ];
    let f = dir.path().join("reuse.json");
    std::fs::write(&f, trace_text("", &[], &reuse)).expect("write");
    let out = memtide()
        .args(["check", "--max-peak", "1GiB"])
        .arg(&f)
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("reused an address"), "{err}");
    assert!(err.contains("--allow-warnings"), "{err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("ok"));
    let out = memtide()
        .args(["check", "--max-peak", "1GiB", "--allow-warnings"])
        .arg(&f)
        .output()
        .expect("runs");
    let so = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{so}");
    assert!(
        so.starts_with("ok:") && so.contains("allowed by --allow-warnings"),
        "{so}"
    );
    // The summary marks the doubtful warning.
    let out = memtide().arg("summary").arg(&f).output().expect("runs");
    let so = String::from_utf8_lossy(&out.stdout);
    assert!(so.contains("! 1 allocations reused an address"), "{so}");

    // Informational warnings only (a free of memory allocated before profiling): ok.
    let pre = [
        Ev {
            addr: Some(9),
            ..ev(1.0, 1, -64, 0, -1)
        },
        Ev {
            addr: Some(1),
            ..ev(2.0, 1, 32, 0, -1)
        },
    ];
    let f = dir.path().join("pre.json");
    std::fs::write(&f, trace_text("", &[], &pre)).expect("write");
    let out = memtide()
        .args(["check", "--max-peak", "1GiB"])
        .arg(&f)
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A truncated trace: the peak may be in the part that is lost.
    let text = trace_text("", &[], &reuse[..1]).replace("]}", "");
    let f = dir.path().join("cut.json");
    std::fs::write(&f, format!("{text},{{\"ph\":\"i\",\"na")).expect("write");
    let out = memtide()
        .args(["check", "--max-peak", "1GiB"])
        .arg(&f)
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("truncated"), "{err}");
}

/// `diff` of two traces without addresses: persistent, activation and workspace are
/// unavailable at each peak and in the delta (null in JSON), never 0; the unknown band holds
/// the running totals' difference.
#[test]
fn diff_of_two_no_addr_traces_leaves_the_split_unavailable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut peaks = Vec::new();
    let files: Vec<PathBuf> = [3u64, 11]
        .iter()
        .map(|&seed| {
            let evs = random_no_addr(seed, 300);
            let (_, want) = brute(&evs, 0, 1, 0, 0);
            peaks.push(first_max(&want).1);
            let p = dir.path().join(format!("run{seed}.json"));
            std::fs::write(&p, trace_text("", &[], &evs)).expect("write");
            p
        })
        .collect();
    let v = crate::support::repo::diff_json_paths(&files[0], &files[1], &[]);
    for b in ["persistent", "activation", "workspace"] {
        assert!(v["a"]["peak"]["bands"][b].is_null(), "{b}: {v}");
        assert!(v["b"]["peak"]["bands"][b].is_null(), "{b}: {v}");
        assert!(v["band_delta_at_peaks"][b].is_null(), "{b}: {v}");
    }
    assert_eq!(
        v["band_delta_at_peaks"]["unknown"].as_i64(),
        Some(peaks[1] - peaks[0])
    );
    let out = memtide().arg("diff").args(&files).output().expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("persistent "))
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(line.matches("unavailable").count(), 3, "{line}");
}
