//! A short deterministic slice of the `fuzz_readers` mutation driver: a few thousand mutants
//! per reader, in-process, with no panic and no hang.

#[path = "../../examples/fuzz_readers/engine.rs"]
mod engine;

use std::time::Duration;

#[test]
fn mutated_fixtures_never_panic_or_hang() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    // Small seeds only: the slice runs in a debug build.
    let seeds = engine::load_seeds(root, 32 << 10);
    for (r, pool) in seeds.per_reader.iter().enumerate() {
        assert!(!pool.is_empty(), "no seeds for {}", engine::READERS[r]);
    }
    // Cases per reader, sized to a few seconds each in a debug build (a pickle case costs
    // ~50 ms there: the reader zeroes a 4 MiB buffer; an nsys case writes, mutates and reads
    // an SQLite file); MEMTIDE_FUZZ_SLICE=N scales them by N.
    let scale: u64 = std::env::var("MEMTIDE_FUZZ_SLICE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let cases: Vec<u64> = [50, 50, 300, 1000, 300, 1000, 1000, 1000, 500]
        .iter()
        .map(|c| c * scale)
        .collect();
    let (stats, failures) = engine::run(
        &seeds,
        engine::Config {
            readers: (0..engine::READERS.len()).collect(),
            cases: cases.clone(),
            first: 0,
            seed: 16,
            limit: Duration::from_secs(20),
            out: None,
            max_hangs: 1,
            deadline: None,
            progress: None,
        },
    );
    for (r, s) in stats.iter().enumerate() {
        eprintln!(
            "{}: {} cases, {} ok, {} errors, {:.2} s (slowest: case {}, {:.3} s)",
            engine::READERS[r],
            s.cases,
            s.ok,
            s.err,
            s.time.as_secs_f64(),
            s.slowest.1,
            s.slowest.0.as_secs_f64()
        );
        assert_eq!(s.cases, cases[r], "{}", engine::READERS[r]);
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Found by the driver: a Kineto span whose `ts + dur` passes i64::MAX nanoseconds.
#[test]
fn kineto_span_end_past_i64_max_is_no_panic() {
    let t = br#"{"traceEvents":[
 {"ph":"X","cat":"cpu_op","name":"a","ts":9223372036854775,"dur":1e12,"pid":1,"tid":1},
 {"ph":"i","cat":"cpu_instant_event","name":"[memory]","ts":1,"pid":1,"tid":1,
  "args":{"Addr":1,"Bytes":8,"Total Allocated":8,"Total Reserved":8,"Device Type":1,"Device Id":0}}]}"#;
    let _ = engine::run_reader(2, t);
}

/// Found by the driver: memory-timeline byte counts of i64::MIN and sums past i64::MAX.
#[test]
fn memory_timeline_extreme_bytes_are_no_panic() {
    let raw = b"[[1,1,-9223372036854775808,0],[2,2,-9223372036854775808,0],\
                [3,3,-9223372036854775808,0],[3,3,5,1]]";
    let _ = engine::run_reader(4, raw);
    let coalesced = b"[[1,2],[[0,-9223372036854775808,0,0,0,0,0,0,0],\
                      [0,9223372036854775807,9223372036854775807,0,0,0,0,0,0]]]";
    let _ = engine::run_reader(4, coalesced);
}

/// Issue 47's class in the driver: `many_siblings` repeats a JSONL allocation as distinct
/// allocations (ids) of distinct lines, the header untouched, and the reader takes them.
#[test]
fn many_siblings_makes_distinct_allocations_of_distinct_lines() {
    let header = "{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\"}";
    let seed = format!(
        "{header}\n{{\"t\":1,\"op\":\"alloc\",\"id\":7,\"size\":512,\"stack\":[\"/p/m.py:3 f\"]}}\n"
    );
    let mut b = seed.into_bytes();
    let mut rng = engine::Rng::new(5);
    assert!(engine::many_siblings(&mut b, &mut rng));
    let text = String::from_utf8(b.clone()).expect("UTF-8");
    assert_eq!(text.lines().next(), Some(header));
    let rows: Vec<serde_json::Value> = text
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert!(rows.len() > 1, "{text}");
    let ids: std::collections::HashSet<u64> =
        rows.iter().map(|r| r["id"].as_u64().expect("id")).collect();
    let frames: std::collections::HashSet<&str> = rows
        .iter()
        .map(|r| r["stack"][0].as_str().expect("frame"))
        .collect();
    assert_eq!((ids.len(), frames.len()), (rows.len(), rows.len()));
    assert!(frames.contains("/p/m.py:4 f") && ids.contains(&8));
    assert!(rows.iter().all(|r| r["size"] == 512 && r["t"] == 1));
    assert!(engine::run_reader(3, &b));
}

/// Found by the driver: an annotation span starting at i64::MAX nanoseconds (a `ts` past
/// it, clamped), whose one-nanosecond end overflowed.
#[test]
fn kineto_annotation_at_i64_max_is_no_panic() {
    let t = br#"{"traceEvents":[
 {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","ts":99999999999999999999999999999,"dur":1,"pid":1,"tid":1},
 {"ph":"i","cat":"cpu_instant_event","name":"[memory]","ts":1,"pid":1,"tid":1,
  "args":{"Addr":1,"Bytes":8,"Total Allocated":8,"Total Reserved":8,"Device Type":1,"Device Id":0}}]}"#;
    let _ = engine::run_reader(2, t);
}
