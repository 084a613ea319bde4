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
