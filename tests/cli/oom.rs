//! The OOM explanation and `allocator_at_end` end to end: `summary --json` and `check` on the
//! OOM fixtures (tests/fixtures/oom, made by tools/gen_oom_snapshots.py), against the figures
//! the generator computed from its own allocator state (`.truth.json`), and the final
//! segments' totals against the generator's direct sums.

use assert_cmd::Command;
use serde_json::Value;
use std::path::PathBuf;

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/oom")
        .join(name)
}

fn summary(name: &str, extra: &[&str]) -> Value {
    let out = Command::cargo_bin("memtide")
        .expect("memtide binary")
        .arg("summary")
        .arg("--json")
        .args(extra)
        .arg(fixture(name))
        .output()
        .expect("run memtide");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn truth(name: &str) -> Value {
    let p = fixture(&name.replace(".pickle", ".truth.json"));
    serde_json::from_str(&std::fs::read_to_string(p).expect("truth")).expect("truth JSON")
}

const KEYS: [&str; 27] = [
    "index",
    "time_us",
    "device",
    "requested_bytes",
    "rounded_bytes",
    "pool",
    "device_free",
    "allocated",
    "reserved",
    "free_in_reserve",
    "largest_free_block",
    "capacity",
    "capacity_source",
    "outside_allocator",
    "outside_by_source",
    "verdict",
    "reasoning",
    "advice",
    "pinners",
    "fixes",
    "savings",
    "fixes_ceiling",
    "shortfall",
    "stack",
    "user_frame",
    "module",
    "horizon",
];

/// An OOM's figures and verdict in `summary --json` (what the state at the OOM decides).
pub(crate) const FIGURE_KEYS: [&str; 12] = [
    "index",
    "requested_bytes",
    "rounded_bytes",
    "pool",
    "device_free",
    "allocated",
    "reserved",
    "free_in_reserve",
    "largest_free_block",
    "capacity",
    "outside_allocator",
    "verdict",
];

#[test]
fn every_verdict_matches_the_generator_figures() {
    for (name, verdict) in [
        ("oom_live.pickle", "live_tensors"),
        ("oom_fragmented.pickle", "fragmentation"),
        ("oom_outside.pickle", "outside_allocator"),
        ("oom_too_large.pickle", "request_too_large"),
        // Two GPUs, the OOM on the second: the device a user names none of is that one.
        ("oom_second_device.pickle", "live_tensors"),
    ] {
        let got = summary(name, &["--capacity", "8GiB"]);
        let want = truth(name);
        let ooms = got["ooms"].as_array().expect("ooms");
        assert_eq!(ooms.len(), 1, "{name}");
        let o = ooms[0].as_object().expect("object");
        let keys: Vec<&str> = o.keys().map(String::as_str).collect();
        assert_eq!(keys, KEYS, "{name}: exactly the issue's keys, in order");
        let w = &want["ooms"][0];
        for k in FIGURE_KEYS {
            assert_eq!(o[k], w[k], "{name}: {k}");
        }
        assert_eq!(o["verdict"], verdict, "{name}");
        if let Some(device) = w.get("device") {
            assert_eq!(o["device"], *device, "{name}");
            assert_eq!(
                got["device"], *device,
                "{name}: the document is the OOM's device"
            );
        }
        assert!(!o["advice"].as_str().unwrap_or("").is_empty());
        // allocator_at_end = the generator's sums over the dumped segments.
        let end = &got["allocator_at_end"];
        for k in [
            "segments",
            "reserved",
            "allocated",
            "requested",
            "free_in_reserve",
            "largest_free_block",
        ] {
            assert_eq!(
                end[k], want["allocator_at_end"][k],
                "{name}: allocator_at_end.{k}"
            );
        }
    }
}

#[test]
fn a_named_device_wins_over_the_one_that_ran_out_of_memory() {
    let got = summary("oom_second_device.pickle", &["--device", "0"]);
    assert_eq!(got["device"], "cuda:0");
    assert!(
        got.get("ooms").is_none(),
        "cuda:0 ran out of nothing: {got}"
    );
    assert_eq!(got["peak"]["bytes"], 768 * 1024 * 1024);
    // Unnamed, every device is still listed, the OOM's first among the documents.
    let all = summary("oom_second_device.pickle", &[]);
    assert_eq!(all["devices"], serde_json::json!(["cuda:0", "cuda:1"]));
    let per: Vec<&str> = all["per_device"]
        .as_array()
        .expect("per_device")
        .iter()
        .filter_map(|d| d["device"].as_str())
        .collect();
    assert_eq!(per, ["cuda:0", "cuda:1"], "per_device stays in file order");
}

#[test]
fn advice_fits_the_verdict() {
    let frag = summary("oom_fragmented.pickle", &["--capacity", "8GiB"]);
    let a = frag["ooms"][0]["advice"].as_str().unwrap_or("");
    assert!(a.contains("expandable_segments:True"), "{a}");
    assert!(a.contains("max_split_size_mb"), "{a}");
    let live = summary("oom_live.pickle", &["--capacity", "8GiB"]);
    let a = live["ooms"][0]["advice"].as_str().unwrap_or("");
    assert!(a.contains("empty_cache() will not help"), "{a}");
    assert!(a.contains("activation checkpointing"), "{a}");
    assert!(
        a.contains("model.py:7"),
        "the biggest live allocations' frames: {a}"
    );
    let out = summary("oom_outside.pickle", &["--capacity", "8GiB"]);
    let a = out["ooms"][0]["advice"].as_str().unwrap_or("");
    assert!(a.contains("4.000 GiB"), "{a}");
}

#[test]
fn without_capacity_the_figures_are_null_and_the_verdict_says_what_is_missing() {
    let got = summary("oom_live.pickle", &[]);
    let o = &got["ooms"][0];
    assert_eq!(o["capacity"], Value::Null);
    assert_eq!(o["outside_allocator"], Value::Null);
    // 2 GiB requested > 2 MiB − 4 KiB free in the reserve + 1534 MiB driver free: no
    // release could serve it, whatever lies outside the allocator (issue 38).
    assert_eq!(o["verdict"], "live_tensors");
    let r = o["reasoning"].as_str().unwrap_or("");
    assert!(
        r.starts_with("2.000 GiB requested > 1.996 MiB free in the reserve + 1.498 GiB driver free = 1.500 GiB"),
        "{r}"
    );
    assert!(
        r.contains("outside the allocator unknown (no capacity)"),
        "{r}"
    );
    // 16 GiB > reserved 1 GiB + driver free 6.5 GiB: too large or outside; the capacity
    // decides, and the advice says which two remain.
    let got = summary("oom_too_large.pickle", &[]);
    let o = &got["ooms"][0];
    assert_eq!(o["verdict"], "unknown");
    let a = o["advice"].as_str().unwrap_or("");
    assert!(a.contains("request_too_large or outside_allocator"), "{a}");
    assert!(a.contains("--capacity"), "{a}");
    // Fragmentation needs no capacity.
    let got = summary("oom_fragmented.pickle", &[]);
    assert_eq!(got["ooms"][0]["verdict"], "fragmentation");
}

#[test]
fn check_fails_on_an_oom_with_its_verdict() {
    let out = Command::cargo_bin("memtide")
        .expect("memtide binary")
        .args(["check", "--max-peak", "100GiB", "--capacity", "8GiB"])
        .arg(fixture("oom_fragmented.pickle"))
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap_or("");
    assert!(
        first.starts_with("FAIL: out of memory at event #29"),
        "{text}"
    );
    assert!(first.contains("verdict fragmentation"), "{text}");
}

#[test]
fn text_summary_explains_the_oom_and_says_unavailable() {
    let out = Command::cargo_bin("memtide")
        .expect("memtide binary")
        .arg("summary")
        .arg(fixture("oom_live.pickle"))
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("out of memory at event #9"), "{text}");
    assert!(text.contains("verdict           live_tensors"), "{text}");
    assert!(text.contains("capacity          unavailable"), "{text}");
    assert!(
        text.contains("  reasoning         2.000 GiB requested > "),
        "{text}"
    );
    assert!(
        text.contains(
            "  fix               expandable_segments:True: does not fit under 7.500 GiB: OOM at #9"
        ),
        "{text}"
    );
}

#[test]
fn kineto_oom_gives_what_is_known_and_null_for_the_rest() {
    let out = Command::cargo_bin("memtide")
        .expect("memtide binary")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "summary",
            "--json",
            "sample-traces/cuda-oom.pt.trace.json.gz",
        ])
        .output()
        .expect("run");
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let o = &v["ooms"][0];
    // No blocks in a profiler trace: no largest free block, and no allocator_at_end.
    assert_eq!(o["largest_free_block"], Value::Null);
    assert!(v.get("allocator_at_end").is_none());
    assert_eq!(o["requested_bytes"], 1u64 << 30);
    assert_eq!(o["allocated"], 15_837_692_416u64);
    assert_eq!(o["reserved"], 16_108_224_512u64);
}

#[test]
fn snapshot_sample_matches_the_hand_figures() {
    // sample-traces/README.md: 1 GiB requested; 15104 MiB + 512 B live; 15362 MiB reserved;
    // 510 MiB driver free; free in the reserve 256 MiB + (2 MiB − 512 B); full of live tensors.
    let out = Command::cargo_bin("memtide")
        .expect("memtide binary")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "summary",
            "--json",
            "--capacity",
            "16GiB",
            "sample-traces/cuda-oom.pickle",
        ])
        .output()
        .expect("run");
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let o = &v["ooms"][0];
    let mib = 1u64 << 20;
    assert_eq!(o["requested_bytes"], 1024 * mib);
    assert_eq!(o["allocated"], 15104 * mib + 512);
    assert_eq!(o["reserved"], 15362 * mib);
    assert_eq!(o["device_free"], 534_773_760u64);
    assert_eq!(o["free_in_reserve"], 256 * mib + 2 * mib - 512);
    assert_eq!(o["largest_free_block"], 256 * mib);
    assert_eq!(o["outside_allocator"], 512 * mib);
    assert_eq!(o["verdict"], "live_tensors");
}

/// The replay ends exactly at the final segments (reserved and the set of active blocks) on
/// every committed snapshot that records its history faithfully; with `MEMTIDE_REAL_DIR` set,
/// also prints the figures of the snapshots there (other people's files, never committed).
#[test]
fn replay_ends_at_the_final_segments() {
    use memtide_core::allocator::{allocator_at_end, Model};
    use memtide_core::formats::Progress;
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<(PathBuf, bool)> = [
        "tests/fixtures/oom/oom_live.pickle",
        "tests/fixtures/oom/oom_fragmented.pickle",
        "tests/fixtures/oom/oom_outside.pickle",
        "tests/fixtures/oom/oom_too_large.pickle",
        "sample-traces/cuda-oom.pickle",
        "tests/fixtures/snapshot/two_devices_p4.pickle",
        "tests/fixtures/snapshot/expandable.pickle",
        "tests/fixtures/snapshot/small.json",
    ]
    .iter()
    .map(|p| (root.join(p), true))
    .collect();
    if let Some(dir) = std::env::var_os("MEMTIDE_REAL_DIR") {
        for e in std::fs::read_dir(dir).expect("dir").flatten() {
            if e.path().extension().is_some_and(|x| x == "pickle") {
                files.push((e.path(), false));
            }
        }
    }
    for (path, must) in files {
        let opened =
            memtide_core::open::open(&path, &Default::default(), &Progress::new()).expect("load");
        for h in opened.devices.iter().filter_map(|d| d.history()) {
            let end = allocator_at_end(&h.segments);
            let dev = h.device.clone();
            let m = Model::build(h.clone());
            let t = m.at_end().totals();
            println!(
                "{} {dev}: {} entries, at end (from segments) {end:?}; replay end reserved {} allocated {}; {:?}",
                path.display(),
                m.len(),
                t.reserved,
                t.allocated,
                m.report()
            );
            if must {
                assert!(
                    m.report().consistent(),
                    "{}: {:?}",
                    path.display(),
                    m.report()
                );
                assert_eq!(t.reserved, end.reserved, "{}", path.display());
                assert_eq!(t.allocated, end.allocated, "{}", path.display());
                assert_eq!(t.free_in_reserve, end.free_in_reserve, "{}", path.display());
                assert_eq!(
                    t.largest_free_block,
                    end.largest_free_block,
                    "{}",
                    path.display()
                );
            }
        }
    }
}

/// JSONL has `reserve` spans and `oom` lines (with `free`) but no blocks: what is known is
/// given, the largest free block is null, and when the reserve holds enough unused bytes the
/// verdict is `unknown`, naming the per-pool free blocks as missing.
#[test]
fn jsonl_oom_uses_reserve_spans_and_oom_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = |lines: &[&str]| -> Value {
        let p = dir.path().join("run.jsonl");
        std::fs::write(&p, lines.join("\n") + "\n").expect("write");
        let out = Command::cargo_bin("memtide")
            .expect("memtide binary")
            .args(["summary", "--json"])
            .arg(&p)
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).expect("JSON")
    };
    let head = r#"{"memtide":1,"device":"cuda:0","clock":"us","capacity":8589934592}"#;
    // 4 GiB reserved, 4,000,000,000 B live, another process holds 3 GiB: 1 GiB free.
    let v = run(&[
        head,
        r#"{"t":1,"op":"reserve","id":100,"size":4294967296}"#,
        r#"{"t":2,"op":"alloc","id":1,"size":4000000000,"cat":"activation"}"#,
        r#"{"t":3,"op":"oom","size":2147483648,"free":1073741824}"#,
    ]);
    let o = &v["ooms"][0];
    assert_eq!(o["index"], 2);
    assert_eq!(o["reserved"], 4_294_967_296u64);
    assert_eq!(o["allocated"], 4_000_000_000u64);
    assert_eq!(o["free_in_reserve"], 294_967_296u64);
    assert_eq!(o["largest_free_block"], Value::Null);
    assert_eq!(o["outside_allocator"], 3_221_225_472u64);
    assert_eq!(o["verdict"], "outside_allocator");
    // Half the reserve unused and more than the request: fragmentation cannot be ruled out.
    let v = run(&[
        head,
        r#"{"t":1,"op":"reserve","id":100,"size":4294967296}"#,
        r#"{"t":2,"op":"alloc","id":1,"size":2147483648,"cat":"activation"}"#,
        r#"{"t":3,"op":"oom","size":1073741824,"free":3221225472}"#,
    ]);
    let o = &v["ooms"][0];
    assert_eq!(o["verdict"], "unknown");
    let a = o["advice"].as_str().unwrap_or("");
    assert!(a.contains("free blocks of each pool"), "{a}");
    assert!(
        a.contains("fragmentation") && a.contains("live_tensors"),
        "{a}"
    );
    // No OOM: no `ooms` key at all (the schema of such files is unchanged).
    let v = run(&[head, r#"{"t":1,"op":"alloc","id":1,"size":1024}"#]);
    assert!(v.get("ooms").is_none() && v.get("allocator_at_end").is_none());
}

/// The text and Markdown reports of a file of several GPUs begin with the device that ran out
/// of memory, the others after it in file order.
#[test]
fn the_report_of_several_gpus_begins_with_the_one_that_ran_out() {
    for flag in [None, Some("--markdown")] {
        let out = Command::cargo_bin("memtide")
            .expect("memtide binary")
            .arg("summary")
            .args(flag)
            .arg(fixture("oom_second_device.pickle"))
            .output()
            .expect("run memtide");
        assert!(out.status.success());
        let text = String::from_utf8_lossy(&out.stdout);
        let heads: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("memtide summary ·") || l.starts_with("### memtide ·"))
            .map(|l| l.rsplit(" · ").next().unwrap_or(""))
            .collect();
        assert_eq!(heads, ["cuda:1", "cuda:0"], "{flag:?}: {text}");
        // The first line lists the devices in that order, each with its peak (as each
        // device's own document gives it) and its OOMs.
        let peak = |d: &str| {
            let doc = summary("oom_second_device.pickle", &["--device", d]);
            memtide_core::trace::human_bytes(doc["peak"]["bytes"].as_u64().expect("peak"))
        };
        let index = text.lines().next().unwrap_or("");
        assert!(index.contains("2 devices"), "{flag:?}: {index}");
        assert!(
            index.ends_with(&format!(
                "cuda:1 (peak {}, 1 OOM) · cuda:0 (peak {})",
                peak("cuda:1"),
                peak("cuda:0")
            )),
            "{flag:?}: {index}"
        );
        let oom = text
            .to_lowercase()
            .find("out of memory")
            .expect("the OOM is explained");
        let second = text.rfind("cuda:0").expect("cuda:0's report");
        assert!(
            oom < second,
            "{flag:?}: the OOM comes before cuda:0's report"
        );
    }
}

/// The advice names the biggest owners of what is live, not storages one by one: three 1 GiB
/// tensors of one line are one owner of 3 GiB (the bundled sample's advice named
/// `model.py:31 forward` twice; a published DiT run's named one line three times while it
/// held 98 allocations there). The file is built here, so the owners are known.
#[test]
fn the_advice_names_the_biggest_owners_of_live_memory() {
    use serde_json::json;
    const GIB: u64 = 1 << 30;
    let base = 0x7f00_0000_0000u64;
    let frame = |file: &str, line: u64, name: &str| json!([{"filename": format!("/w/{file}"), "line": line, "name": name}]);
    // (offset in GiB halves, size, frame)
    let allocs = [
        (0u64, GIB, frame("model.py", 10, "forward")),
        (2, GIB, frame("model.py", 10, "forward")),
        (4, GIB, frame("model.py", 10, "forward")),
        (6, 2 * GIB, frame("train.py", 20, "step")),
        (10, GIB / 2, frame("model.py", 30, "head")),
    ];
    let seg = 6 * GIB;
    let mut trace = vec![json!({"action": "segment_alloc", "addr": base, "size": seg,
        "stream": 0, "frames": frame("train.py", 5, "main")})];
    let mut blocks = Vec::new();
    for (half, size, f) in &allocs {
        let addr = base + half * (GIB / 2);
        trace
            .push(json!({"action": "alloc", "addr": addr, "size": size, "stream": 0, "frames": f}));
        blocks.push(
            json!({"address": addr, "size": size, "requested_size": size,
            "state": "active_allocated", "frames": f}),
        );
    }
    blocks.push(json!({"address": base + 11 * (GIB / 2), "size": GIB / 2,
        "requested_size": 0, "state": "inactive", "frames": []}));
    trace.push(
        json!({"action": "oom", "addr": 0, "size": 4 * GIB, "stream": 0,
        "device_free": GIB, "frames": frame("train.py", 21, "step")}),
    );
    let live = 5 * GIB + GIB / 2;
    let doc = json!({
        "segments": [{"device": 0, "address": base, "total_size": seg, "allocated_size": live,
            "active_size": live, "requested_size": live, "stream": 0, "segment_type": "large",
            "segment_pool_id": [0, 0], "is_expandable": false, "frames": [], "blocks": blocks}],
        "device_traces": [trace],
    });
    let dir = tempfile::tempdir().expect("tmp");
    let f = dir.path().join("owners.json");
    std::fs::write(&f, doc.to_string()).expect("write");
    let v = crate::support::repo::summary_json(&f);
    let o = &v["ooms"][0];
    assert_eq!(o["verdict"], "live_tensors", "{o}");
    let advice = o["advice"].as_str().expect("advice");
    let listed = advice
        .split("Biggest live: ")
        .nth(1)
        .and_then(|r| r.split(". ").next())
        .unwrap_or_else(|| panic!("{advice}"));
    let owners: Vec<&str> = listed.split("; ").collect();
    assert_eq!(owners.len(), 3, "{listed}");
    assert!(
        owners[0].starts_with("3.000 GiB (3 allocations) ")
            && owners[0].ends_with("model.py:10 forward"),
        "{listed}"
    );
    assert!(
        owners[1].starts_with("2.000 GiB ") && owners[1].ends_with("train.py:20 step"),
        "{listed}"
    );
    assert!(
        owners[2].starts_with("512.0 MiB ") && owners[2].ends_with("model.py:30 head"),
        "{listed}"
    );
}
