//! `scripts/conformance` (the stdlib-Python replay) over the repository's own traces: memtide
//! agrees with it on every sample and fixture, the replay itself matches the figures the
//! fixtures' generators and READMEs state, a wrong figure is reported, and a code-running
//! pickle is refused without running it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn conformance(args: &[&str], bin: &Path) -> Output {
    Command::new("python3")
        .arg(root().join("scripts/conformance"))
        .args(args)
        .current_dir(root())
        .env("MEMTIDE_BIN", bin)
        .output()
        .expect("python3 runs (install Python 3 to run this test)")
}

fn memtide() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_memtide"))
}

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

/// The traces current main agrees on: every sample and fixture, less
/// `tests/fixtures/kineto/preexisting.json`, whose initial state (10,000 B live before the
/// first event) is the peak; memtide does not take the initial state as a peak candidate yet.
const AGREEING: &[&str] = &[
    "sample-traces",
    "tests/fixtures/snapshot",
    "tests/data",
    "tests/fixtures/kineto/absolute.json",
    "tests/fixtures/kineto/cuda.json",
    "tests/fixtures/kineto/relative.json",
    "tests/fixtures/kineto/unsorted.json",
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
        Some("total: 14 files, 14 agree"),
        "{stdout}"
    );
    let r = rows(&stdout);
    assert_eq!(r.len(), 17, "one row per file and device:\n{stdout}");
    assert!(r.values().all(|c| c.last().is_some_and(|v| v == "agree")));

    // The replay itself, against figures that do not come from it: the generators'
    // brute-force truth files and the hand-computed sample README table.
    // Columns: peak ours, peak replay, final ours, final replay, reserved ours, reserved replay.
    let replay = |file: &str, dev: &str| -> (String, String, String) {
        let c = r
            .get(&(file.to_string(), dev.to_string()))
            .unwrap_or_else(|| panic!("a row for {file} {dev}:\n{stdout}"));
        (c[1].clone(), c[3].clone(), c[5].clone())
    };
    for f in ["ring_p2", "ring_p5", "small", "two_devices_p4"] {
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
    // A "memtide" whose peak is 1 byte off and whose only window ends before it starts.
    std::fs::write(
        &fake,
        "#!/bin/sh\necho '{\"device\": \"cuda:0\", \"peak\": {\"bytes\": 52045781, \"index\": 94}, \"final_bytes\": 29494525, \"reserved_peak\": 148897792, \"windows\": [{\"name\": \"w\", \"first_index\": 9, \"last_index\": 3, \"peak_index\": 5, \"peak_bytes\": 1}]}'\n",
    )
    .expect("write");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
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
            0,
            8 * MIB,
            8 * MIB,
            Some(20 * MIB),
        ),
        // torch.cuda.memory_snapshot()'s bare segment list.
        (
            "bare_list.json",
            json!([segment(0x100_0000, 20 * MIB, held.clone(), false)]),
            0,
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
    }
}
