//! `scripts/conformance` (the stdlib-Python replay) over the repository's own traces: memtide
//! agrees with it on every sample and fixture, the replay itself matches the figures the
//! fixtures' generators and READMEs state, a wrong figure is reported, and a code-running
//! pickle is refused without running it.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output};

use crate::support::repo::root_buf as root;

fn conformance(args: &[&str], bin: &Path) -> Output {
    Command::new("python3")
        .arg(root().join("scripts/conformance"))
        .args(args)
        .current_dir(root())
        .env("MEMTIDE_BIN", bin)
        .output()
        .expect("python3 runs (install Python 3 to run this test)")
}

use crate::support::repo::memtide_path as memtide;

/// Rows of the table: (file, device) → the columns after them.
fn rows(stdout: &str) -> HashMap<(String, String), Vec<String>> {
    stdout
        .lines()
        .skip(1)
        .filter(|l| !l.starts_with("skipped ") && !l.starts_with("total: "))
        .map(|l| {
            let cols: Vec<String> = l.split_whitespace().map(str::to_string).collect();
            ((cols[0].clone(), cols[2].clone()), cols[3..].to_vec())
        })
        .collect()
}

/// Every sample and fixture: memtide agrees on all of them, including the history-less
/// snapshots (one instant, event #0), pinned host memory (`host:pinned`) and
/// `tests/fixtures/kineto/preexisting.json`, whose initial state (10,000 B live before the
/// first event) is the peak.
const AGREEING: &[&str] = &[
    "sample-traces",
    "tests/fixtures/snapshot",
    "tests/fixtures/kineto",
    "tests/data",
    // Links into the core crate (its tests read them there): a walk does not follow them.
    "tests/data/snapshot-baseline",
    "tests/data/kineto-cpu-baseline",
];

#[test]
#[ignore = "needs python3: runs scripts/conformance (CI runs it with --include-ignored)"]
fn repository_traces_agree_with_the_replay() {
    let out = conformance(AGREEING, &memtide());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout.lines().last(),
        // 22, and the 19 traces of tests/data/gpu-h200 (12 training and 2 OOM snapshots, a
        // Kineto trace, 2 ranks, and fair/'s two Kineto traces of a plain and an offloading
        // run): real GPU files, where the replay counts blocks as PyTorch does.
        Some("total: 41 files, 41 agree"),
        "{stdout}"
    );
    // Truth files, categories sidecars and other non-trace JSON: one count line, not a list.
    let skipped: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("skipped "))
        .collect();
    assert_eq!(
        skipped,
        // tests/data/gpu-h200 adds cases.json and the 6 files of cases.d/.
        ["skipped 28 other JSON files (not traces; --verbose lists them)"],
        "{stdout}"
    );
    let r = rows(&stdout);
    assert_eq!(
        r.len(),
        52,
        "one row per file and device (30, and 22 for gpu-h200: its three Kineto traces have cpu and cuda:0):\n{stdout}"
    );
    assert!(r.values().all(|c| c.last().is_some_and(|v| v == "agree")));
    for (file, dev) in [
        ("tests/fixtures/snapshot/no_history.pickle", "cuda:1"),
        ("tests/fixtures/snapshot/segments_list.json", "cuda:0"),
        ("tests/fixtures/snapshot/fields.pickle", "host:pinned"),
        ("tests/fixtures/kineto/preexisting.json", "cpu"),
    ] {
        assert!(
            r.contains_key(&(file.to_string(), dev.to_string())),
            "a row for {file} {dev}:\n{stdout}"
        );
    }

    // The replay itself, against figures that do not come from it: the generators'
    // brute-force truth files and the hand-computed sample README table.
    // Columns: peak ours, peak replay, final ours, final replay, reserved ours, reserved replay.
    let replay = |file: &str, dev: &str| -> (String, String, String) {
        let c = r
            .get(&(file.to_string(), dev.to_string()))
            .unwrap_or_else(|| panic!("a row for {file} {dev}:\n{stdout}"));
        (c[1].clone(), c[3].clone(), c[5].clone())
    };
    for f in [
        "ring_p2",
        "ring_p5",
        "small",
        "two_devices_p4",
        "late_start",
        "no_history",
        "segments_list",
        "expandable",
        "fields",
    ] {
        let truth: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(
                root().join(format!("tests/fixtures/snapshot/{f}.truth.json")),
            )
            .expect("truth"),
        )
        .expect("parses");
        let file = match f {
            "ring_p5" => "tests/fixtures/snapshot/ring_p5.pickle.gz".to_string(),
            "small" => "tests/fixtures/snapshot/small.json".to_string(),
            "segments_list" => "tests/fixtures/snapshot/segments_list.json".to_string(),
            _ => format!("tests/fixtures/snapshot/{f}.pickle"),
        };
        for (dev, t) in truth["devices"].as_object().expect("devices") {
            assert_eq!(
                replay(&file, dev),
                (
                    t["peak_bytes"].to_string(),
                    t["final_bytes"].to_string(),
                    t["reserved_peak"].to_string()
                ),
                "{file} {dev}"
            );
        }
    }
    for f in [
        "sample-traces/cuda-oom.pickle",
        "sample-traces/cuda-oom.pt.trace.json.gz",
    ] {
        assert_eq!(
            replay(f, "cuda:0"),
            (
                "15837692416".into(),
                "15837692416".into(),
                "16108224512".into()
            ),
            "{f}: sample-traces/README.md"
        );
    }
    assert_eq!(
        replay("tests/data/kineto-cpu-baseline/trace.json.gz", "cpu"),
        ("301460984".into(), "40236872".into(), "null".into()),
        "tests/data/README.md"
    );
}

#[test]
#[ignore = "needs python3: runs scripts/conformance (CI runs it with --include-ignored)"]
fn a_wrong_figure_is_a_disagreement() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = dir.path().join("memtide");
    let fake_summary = |json: &str| {
        std::fs::write(&fake, format!("#!/bin/sh\necho '{json}'\n")).expect("write");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        }
    };
    // A "memtide" whose peak is 1 byte off and whose only window ends before it starts.
    fake_summary(
        r#"{"device": "cuda:0", "events": 126, "peak": {"bytes": 52050945, "index": 94, "at": "event"}, "final_bytes": 29498880, "reserved_peak": 148897792, "windows": [{"name": "w", "first_index": 9, "last_index": 3, "peak_index": 5, "peak_bytes": 1}]}"#,
    );
    let out = conformance(&["tests/fixtures/snapshot/small.json"], &fake);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert_eq!(
        stdout.lines().last(),
        Some("total: 1 files, 0 agree"),
        "{stdout}"
    );
    assert!(stdout.contains("DISAGREE (peak; window: "), "{stdout}");
    assert!(stdout.contains("ends before it starts"), "{stdout}");

    // Right figures, wrong instant: late_start's peak is the initial state, not event #0, and
    // it has 129 events, not 128.
    fake_summary(
        r#"{"device": "cuda:0", "events": 128, "peak": {"bytes": 50332160, "index": 0, "at": "event"}, "final_bytes": 32534528, "reserved_peak": 205520896, "windows": []}"#,
    );
    let out = conformance(&["tests/fixtures/snapshot/late_start.pickle"], &fake);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("events 128 != replay 129"), "{stdout}");
    assert!(
        stdout.contains("peak at #0 (event), replay: at start"),
        "{stdout}"
    );
}

#[test]
#[ignore = "needs python3: runs scripts/conformance (CI runs it with --include-ignored)"]
fn usage_errors_exit_2_and_code_running_pickles_are_not_run() {
    let out = conformance(&[], &memtide());
    assert_eq!(out.status.code(), Some(2));
    let out = conformance(&["no/such/dir"], &memtide());
    assert_eq!(out.status.code(), Some(2));

    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("ran");
    let cmd = format!("touch {}", marker.display());
    // Protocol 2: GLOBAL posix.system, MARK, BINUNICODE cmd, TUPLE, REDUCE, STOP.
    let mut p = b"\x80\x02cposix\nsystem\n(X".to_vec();
    p.extend_from_slice(&(cmd.len() as u32).to_le_bytes());
    p.extend_from_slice(cmd.as_bytes());
    p.extend_from_slice(b"tR.");
    std::fs::write(dir.path().join("evil.pickle"), &p).expect("write");
    let out = conformance(&[dir.path().to_str().expect("utf-8 path")], &memtide());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!marker.exists(), "the pickle ran code");
    assert!(
        stdout.contains("evil.pickle: pickle not read: refused global posix.system"),
        "{stdout}"
    );
    assert_eq!(stdout.lines().last(), Some("total: 0 files, 0 agree"));
}

fn replay_of(path: &Path) -> serde_json::Value {
    let out = Command::new("python3")
        .arg(root().join("scripts/conformance"))
        .arg("--replay")
        .arg(path)
        .output()
        .expect("python3 runs (install Python 3 to run this test)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("replay JSON")
}

/// A file name, its contents, and the replay's expected events, peak, final and reserved peak.
type Case = (&'static str, serde_json::Value, u64, u64, u64, Option<u64>);

/// The replay on the shapes issue 14 names, with figures computed by hand (MiB = 2^20 B).
#[test]
#[ignore = "needs python3: runs scripts/conformance (CI runs it with --include-ignored)"]
fn the_replay_gets_every_shape_right_by_hand() {
    use serde_json::json;
    const MIB: u64 = 1 << 20;
    const A: u64 = 0x7f00_0000_0000;
    let dir = tempfile::tempdir().expect("tempdir");
    let entry = |action: &str, addr: u64, size: u64| json!({"action": action, "addr": addr, "size": size, "stream": 0, "frames": []});
    let block = |addr: u64, size: u64, state: &str| json!({"address": addr, "size": size, "requested_size": size, "state": state, "frames": []});
    let segment = |addr: u64, size: u64, blocks: Vec<serde_json::Value>, expandable: bool| {
        json!({"device": 0, "address": addr, "total_size": size, "stream": 0,
               "segment_type": "large", "is_expandable": expandable, "blocks": blocks})
    };
    let held = vec![
        block(0x100_0000, 8 * MIB, "active_allocated"),
        block(0x180_0000, 12 * MIB, "inactive"),
    ];
    let memory = |ts: u64, bytes: i64, total: Option<i64>| {
        let mut args = json!({"Bytes": bytes, "Device Type": 1, "Device Id": 0});
        if let Some(t) = total {
            args["Total Allocated"] = json!(t);
        }
        json!({"ph": "i", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts, "args": args})
    };
    // (file, contents, events, peak, final, reserved) on cuda:0
    let cases: Vec<Case> = vec![
        // map A (20), alloc 10 in it, map A+20 (20), free, unmap A (40): reserved 40, not 80.
        (
            "expandable.json",
            json!({"segments": [], "device_traces": [[
                entry("segment_map", A, 20 * MIB), entry("alloc", A, 10 * MIB),
                entry("segment_map", A + 20 * MIB, 20 * MIB), entry("free_completed", A, 10 * MIB),
                entry("segment_unmap", A, 40 * MIB)]]}),
            5,
            10 * MIB,
            0,
            Some(40 * MIB),
        ),
        // 20 MiB mapped before the history, unmapped in it; 2 + 2 MiB mapped and kept.
        (
            "expandable_before.json",
            json!({"segments": [segment(A + 64 * MIB, 4 * MIB, vec![], true)], "device_traces": [[
                entry("segment_unmap", A, 20 * MIB), entry("segment_map", A + 64 * MIB, 2 * MIB),
                entry("segment_map", A + 66 * MIB, 2 * MIB)]]}),
            3,
            0,
            0,
            Some(20 * MIB),
        ),
        // The first entry frees 8 MiB allocated before the history: the start is the peak.
        (
            "initial_peak.json",
            json!({"segments": [segment(0x6000, 2 * MIB, vec![block(0x6000, MIB, "active_allocated")], false)],
                   "device_traces": [[entry("free_completed", 0x5000, 8 * MIB), entry("alloc", 0x6000, MIB)]]}),
            2,
            8 * MIB,
            MIB,
            Some(2 * MIB),
        ),
        // No history: one instant, 8 MiB allocated in a 20 MiB segment.
        (
            "no_history.json",
            json!({"segments": [segment(0x100_0000, 20 * MIB, held.clone(), false)], "device_traces": [[]]}),
            1,
            8 * MIB,
            8 * MIB,
            Some(20 * MIB),
        ),
        // torch.cuda.memory_snapshot()'s bare segment list.
        (
            "bare_list.json",
            json!([segment(0x100_0000, 20 * MIB, held.clone(), false)]),
            1,
            8 * MIB,
            8 * MIB,
            Some(20 * MIB),
        ),
        // Kineto without Addr, threads out of time order: time order gives 100, 300, 250.
        (
            "kineto_no_addr.json",
            json!({"traceEvents": [memory(3, -50, None), memory(1, 100, None), memory(2, 200, None)]}),
            3,
            300,
            250,
            None,
        ),
        // Total Allocated after each event: 10,000 B live before the first (a free of 2,000).
        (
            "kineto_baseline.json",
            json!({"traceEvents": [memory(1, -2000, Some(8000)), memory(2, 1000, Some(9000))]}),
            2,
            10000,
            9000,
            None,
        ),
    ];
    for (name, contents, events, peak, fin, reserved) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, contents.to_string()).expect("write");
        let r = replay_of(&path);
        let d = &r["cuda:0"];
        assert_eq!(d["events"], json!(events), "{name}: {r}");
        assert_eq!(d["peak_bytes"], json!(peak), "{name}: {r}");
        assert_eq!(d["final_bytes"], json!(fin), "{name}: {r}");
        assert_eq!(d["reserved_peak"], json!(reserved), "{name}: {r}");
        if name == "no_history.json" || name == "bare_list.json" {
            // the dump is event #0: nothing is live before it
            assert_eq!(d["initial_bytes"], json!(0), "{name}: {r}");
        }
    }

    // Older PyTorch blocks have no `address`: the replay walks the segment (address + the sizes
    // of the blocks before), so the 8 MiB block at 0x110_0000 is the one the trace frees.
    let bare = |size: u64, state: &str| json!({"size": size, "requested_size": size, "state": state, "frames": []});
    let path = dir.path().join("no_block_address.json");
    let walked = json!({"segments": [segment(0x100_0000, 20 * MIB,
                            vec![bare(MIB, "active_allocated"), bare(8 * MIB, "active_allocated"), bare(11 * MIB, "inactive")], false)],
                        "device_traces": [[entry("alloc", 0x110_0000, 8 * MIB), entry("alloc", 0x100_0000, MIB)]]});
    std::fs::write(&path, walked.to_string()).expect("write");
    let r = replay_of(&path);
    assert_eq!(r["cuda:0"]["initial_bytes"], json!(0), "{r}");
    assert_eq!(r["cuda:0"]["peak_bytes"], json!(9 * MIB), "{r}");

    // Pinned host memory: its own device, every host segment whatever its `device`, the same
    // rules: a 2 MiB segment, alloc 1 MiB, alloc 512 KiB, free the 1 MiB.
    let path = dir.path().join("host.json");
    let host = json!({"segments": [], "device_traces": [[]],
                      "host_segments": [segment(A, 2 * MIB, vec![block(A, MIB, "inactive"), block(A + MIB, MIB / 2, "active_allocated")], false)],
                      "host_traces": [entry("segment_alloc", A, 2 * MIB), entry("alloc", A, MIB),
                                      entry("alloc", A + MIB, MIB / 2), entry("free_completed", A, MIB)]});
    std::fs::write(&path, host.to_string()).expect("write");
    let r = replay_of(&path);
    let h = &r["host:pinned"];
    assert_eq!(
        (
            &h["events"],
            &h["peak_bytes"],
            &h["final_bytes"],
            &h["reserved_peak"]
        ),
        (
            &json!(4),
            &json!(3 * MIB / 2),
            &json!(MIB / 2),
            &json!(2 * MIB)
        ),
        "{r}"
    );
    assert!(
        r.get("cuda:0").is_none(),
        "no cuda device without segments or entries: {r}"
    );
}
