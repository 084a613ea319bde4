//! `scripts/gpu-conformance` on a machine without a GPU (it says so and exits 0), and its
//! comparison code (`scripts/gpu_conformance/compare.py`, standard-library Python) on the CPU:
//! cases built from the repository's OOM fixtures, whose expected figures come from sources
//! other than memtide (the fixtures' own truth files, written by their generator, and the
//! independent Python replay of `scripts/conformance --replay`), pass; a wrong expected figure,
//! a missing key and a wrong verdict fail with exit 1; a command memtide lacks is skipped.

#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};
use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use crate::support::repo::root_buf as root;

use crate::support::repo::memtide_path as memtide;

fn python(args: &[&str]) -> Output {
    Command::new("python3")
        .args(args)
        .current_dir(root())
        .output()
        .expect("python3 runs (install Python 3 to run this test)")
}

fn compare(dir: &Path) -> (i32, String) {
    let o = python(&[
        "scripts/gpu_conformance/compare.py",
        dir.to_str().unwrap(),
        "--memtide",
        memtide().to_str().unwrap(),
    ]);
    let report = fs::read_to_string(dir.join("report.md")).unwrap_or_default();
    (o.status.code().unwrap_or(-1), report)
}

/// The independent replay's figures for one file and device.
fn replay(file: &Path) -> Value {
    let o = python(&["scripts/conformance", "--replay", file.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["cuda:0"].clone()
}

fn check(figure: &str, path: &str, expected: Value) -> Value {
    json!({"figure": figure, "memtide": path, "expected": expected,
           "counter": "test", "window": "whole file", "tolerance": 0})
}

/// Cases over the four OOM fixtures: the verdict, requested bytes and reserved at the OOM
/// from the truth file, the peak and reserved peak from the replay.
fn oom_cases(dir: &Path) -> Vec<Value> {
    let fixtures = root().join("tests/fixtures/oom");
    let mut cases = Vec::new();
    for name in ["oom_fragmented", "oom_live", "oom_outside", "oom_too_large"] {
        let file = format!("{name}.pickle");
        fs::copy(fixtures.join(&file), dir.join(&file)).unwrap();
        let truth: Value = serde_json::from_str(
            &fs::read_to_string(fixtures.join(format!("{name}.truth.json"))).unwrap(),
        )
        .unwrap();
        let oom = &truth["ooms"][0];
        let r = replay(&dir.join(&file));
        let mut command = vec![json!("summary"), json!("--json"), json!("{file}")];
        if let Some(c) = truth["capacity"].as_u64() {
            command.extend([json!("--capacity"), json!(format!("{c}B"))]);
        }
        cases.push(json!({
            "name": name, "file": file, "command": command,
            "checks": [
                check("verdict", "ooms[0].verdict", oom["verdict"].clone()),
                check("requested", "ooms[0].requested_bytes", oom["requested_bytes"].clone()),
                check("reserved at the OOM", "ooms[0].reserved", oom["reserved"].clone()),
                check("peak", "peak.bytes", r["peak_bytes"].clone()),
                check("reserved peak", "reserved_peak", r["reserved_peak"].clone()),
            ]
        }));
    }
    cases
}

fn write_manifest(dir: &Path, cases: &[Value], skipped: Value) {
    let m = json!({"versions": {"torch": "test", "gpu": "none"}, "cases": cases,
                   "skipped": skipped});
    fs::write(
        dir.join("cases.json"),
        serde_json::to_vec_pretty(&m).unwrap(),
    )
    .unwrap();
}

#[test]
fn without_a_gpu_it_says_so_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let o = Command::new(root().join("scripts/gpu-conformance"))
        .arg(dir.path())
        .env("NVIDIA_SMI", dir.path().join("no-nvidia-smi"))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("no GPU"), "{out}");
    let report = fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(report.contains("Not run: no GPU"), "{report}");
    assert!(!dir.path().join("cases.json").exists());
}

#[test]
fn matching_figures_pass_and_every_check_is_a_row() {
    let dir = tempfile::tempdir().unwrap();
    let cases = oom_cases(dir.path());
    write_manifest(
        dir.path(),
        &cases,
        json!([{"name": "two_ranks", "reason": "no second GPU"}]),
    );
    let (rc, report) = compare(dir.path());
    assert_eq!(rc, 0, "{report}");
    assert!(report.contains("**20 of 20 checks pass**"), "{report}");
    let rows = report
        .lines()
        .filter(|l| l.starts_with("| oom_") && l.ends_with("| pass |"))
        .count();
    assert_eq!(rows, 20, "{report}");
    assert!(report.contains("- two_ranks: no second GPU"), "{report}");
    // The verdicts are the truth files', not a copy of memtide's: all four differ.
    for v in [
        "fragmentation",
        "live_tensors",
        "outside_allocator",
        "request_too_large",
    ] {
        assert!(report.contains(&format!("| {v} | {v} |")), "{v}: {report}");
    }
}

#[test]
fn a_wrong_figure_a_missing_key_and_a_wrong_verdict_fail() {
    let dir = tempfile::tempdir().unwrap();
    let mut cases = oom_cases(dir.path());
    let peak = cases[0]["checks"][3]["expected"].as_u64().unwrap();
    cases[0]["checks"][3]["expected"] = json!(peak + 512);
    cases[1]["checks"][0]["expected"] = json!("fragmentation");
    cases[2]["checks"][1]["memtide"] = json!("ooms[5].requested_bytes");
    write_manifest(dir.path(), &cases, json!([]));
    let (rc, report) = compare(dir.path());
    assert_eq!(rc, 1, "{report}");
    assert!(report.contains("**17 of 20 checks pass**"), "{report}");
    let failed: Vec<&str> = report.lines().filter(|l| l.ends_with("| FAIL |")).collect();
    assert_eq!(failed.len(), 3, "{report}");
    assert!(
        failed[0].starts_with("| oom_fragmented | peak |"),
        "{report}"
    );
    assert!(failed[1].starts_with("| oom_live | verdict |"), "{report}");
    assert!(failed[2].contains("missing"), "{report}");
}

#[test]
fn tolerance_at_least_observed_and_a_command_memtide_lacks() {
    let dir = tempfile::tempdir().unwrap();
    let cases = oom_cases(dir.path());
    let peak = cases[0]["checks"][3]["expected"].as_u64().unwrap();
    let file = cases[0]["file"].clone();
    let extra = vec![
        json!({"name": "tolerant", "file": file, "command": ["summary", "--json", "{file}"],
               "checks": [
                   {"figure": "peak within 1 %", "memtide": "peak.bytes",
                    "expected": peak + peak / 200, "counter": "c", "tolerance": 0.01},
                   {"figure": "peak not within 0.1 %", "memtide": "peak.bytes",
                    "expected": peak + peak / 200, "counter": "c", "tolerance": 0.001},
                   {"figure": "peak at least", "memtide": "peak.bytes",
                    "expected": peak - 1, "counter": "c", "op": "ge"},
                   {"figure": "peak at least, too high", "memtide": "peak.bytes",
                    "expected": peak + 1, "counter": "c", "op": "ge"},
                   {"figure": "observed", "observed": true, "expected": true, "counter": "c"},
                   {"figure": "unknown expected", "memtide": "peak.bytes",
                    "expected": null, "counter": "c"}]}),
        json!({"name": "future", "optional": true, "file": file,
               "command": ["no-such-command", "{file}"], "checks": [
                   {"figure": "x", "memtide": "x", "expected": 1, "counter": "c"}]}),
    ];
    write_manifest(dir.path(), &extra, json!([]));
    let (rc, report) = compare(dir.path());
    assert_eq!(rc, 1, "{report}");
    let verdict = |figure: &str| {
        report
            .lines()
            .find(|l| l.starts_with(&format!("| tolerant | {figure} |")))
            .unwrap_or_else(|| panic!("{figure}: {report}"))
            .rsplit('|')
            .nth(1)
            .unwrap()
            .trim()
            .to_string()
    };
    assert_eq!(verdict("peak within 1 %"), "pass");
    assert_eq!(verdict("peak not within 0.1 %"), "FAIL");
    assert_eq!(verdict("peak at least"), "pass");
    assert_eq!(verdict("peak at least, too high"), "FAIL");
    assert_eq!(verdict("observed"), "pass");
    assert_eq!(verdict("unknown expected"), "FAIL");
    assert!(
        report.contains("- future: memtide has no `no-such-command` command"),
        "{report}"
    );
}

#[test]
fn the_kineto_figure_is_the_traces_own_total_allocated() {
    // The helper run.py uses for Kineto cases, on a fixture of eight hand-written events
    // (tests/cli/kineto.rs spells them out): cuda:0's Total Allocated reaches 6 MiB, cuda:1's
    // 512 B; the CPU event is not a CUDA device.
    let o = python(&[
        "-c",
        "import sys, json; sys.path.insert(0, 'scripts/gpu_conformance'); import compare; \
         print(json.dumps(compare.kineto_total_allocated_max('tests/fixtures/kineto/cuda.json')))",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v, json!({"cuda:0": 6291456, "cuda:1": 512}));
}

#[test]
fn a_missing_manifest_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let (rc, _) = compare(dir.path());
    assert_eq!(rc, 2);
}
