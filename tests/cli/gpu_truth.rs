//! Real ground truth from a GPU, checked on the CPU: `tests/data/gpu-h200/` holds the files
//! `scripts/gpu-conformance` wrote on an NVIDIA H200 (torch 2.11.0+cu130) with PyTorch's own
//! counters for each in `cases.json` (`max_memory_allocated()`, `max_memory_reserved()`,
//! `memory_allocated()`, …). Every check of `cases.json` is judged by the same code the GPU
//! run used (`scripts/gpu_conformance/compare.py`'s `evaluate`, through python3) against this
//! build's memtide. A check that fails for a known reason is listed in [`EXPECTED_FAILURES`]
//! with that reason; the test fails when any other check fails, when a listed one starts
//! passing (so the list is kept honest), or when a case is skipped or disappears.
//!
//! A second test runs the independent replay (`scripts/conformance --replay`, no memtide
//! code) on every training snapshot: its block-size convention must give PyTorch's own
//! counters exactly, or it would not be ground truth for the synthetic fixtures.

#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Checks known to fail, as (case, figure, reason). Each must still fail; every other check
/// must pass.
const EXPECTED_FAILURES: &[(&str, &str, &str)] = &[(
    "recorder",
    "peak",
    "memtide_record sees tensor storages only (a TorchDispatchMode): the cuBLAS workspaces the \
     caching allocator hands out to the forward thread's and the autograd thread's cuBLAS \
     handles (32 MiB each on this H200) and the 1 MiB cuBLASLt workspace are no tensor, and \
     each storage is written at its nbytes, not its 512 B block (the 4 B loss: 508 B). \
     671,293,444 B + 2 x 33,554,432 + 1,048,576 + 508 = 739,451,392 B = max_memory_allocated()",
)];

/// How many checks `cases.json` holds: a case that vanishes is noticed.
const CHECKS: usize = 70;

use crate::support::repo::root_buf as root;

fn data() -> PathBuf {
    root().join("tests/data/gpu-h200")
}

fn python(args: &[&str]) -> std::process::Output {
    Command::new("python3")
        .args(args)
        .current_dir(root())
        .output()
        .expect("python3 runs (install Python 3 to run this test)")
}

/// Copies `from` into `to` (compare.py's helpers read the files in place; nothing is written
/// into the repository).
fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// Every check of `dir/cases.json` judged by compare.py's `evaluate`: one JSON object per
/// check (case, figure, expected, memtide, verdict) or per skipped case (case, skipped).
const EVALUATE: &str = r#"
import json, sys
sys.path.insert(0, "scripts/gpu_conformance")
import compare
out_dir, memtide = sys.argv[1], sys.argv[2]
manifest = json.load(open(out_dir + "/cases.json", encoding="utf-8"))
rows = []
for s in manifest.get("skipped", []):
    rows.append({"case": s["name"], "skipped": s["reason"]})
for case in manifest["cases"]:
    got, skipped = compare.evaluate(case, memtide, out_dir)
    if skipped:
        rows.append({"case": case["name"], "skipped": skipped})
    for r in got:
        rows.append({"case": case["name"], "figure": r["figure"], "expected": r["expected"],
                     "memtide": r["memtide"], "verdict": r["verdict"]})
print(json.dumps(rows))
"#;

#[test]
fn every_pytorch_counter_matches_or_is_a_listed_failure() {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&data(), dir.path());
    let o = python(&[
        "-c",
        EVALUATE,
        dir.path().to_str().unwrap(),
        env!("CARGO_BIN_EXE_memtide"),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let rows: Vec<Value> = serde_json::from_slice(&o.stdout).unwrap();
    let mut problems = Vec::new();
    let mut failed = BTreeSet::new();
    let mut checks = 0;
    for r in &rows {
        let case = r["case"].as_str().unwrap();
        if let Some(why) = r.get("skipped") {
            problems.push(format!("{case}: skipped ({why})"));
            continue;
        }
        checks += 1;
        let figure = r["figure"].as_str().unwrap();
        let listed = EXPECTED_FAILURES
            .iter()
            .any(|&(c, f, _)| c == case && f == figure);
        let passed = r["verdict"] == "pass";
        let what = format!(
            "{case} / {figure}: expected {}, memtide {}",
            r["expected"], r["memtide"]
        );
        match (passed, listed) {
            (true, true) => problems.push(format!(
                "{what}: passes now; remove it from EXPECTED_FAILURES"
            )),
            (false, false) => problems.push(format!("{what}: FAILS")),
            (false, true) => {
                failed.insert((case.to_string(), figure.to_string()));
            }
            (true, false) => {}
        }
    }
    for &(c, f, _) in EXPECTED_FAILURES {
        let seen = rows.iter().any(|r| r["case"] == c && r["figure"] == f);
        if !seen {
            problems.push(format!("{c} / {f}: listed, but no such check"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert_eq!(checks, CHECKS, "checks in cases.json");
    assert_eq!(failed.len(), EXPECTED_FAILURES.len());
}

/// The recorder's shortfall is exactly the allocator's own allocations no tensor holds: the
/// reason listed above, measured (not a tolerance).
#[test]
fn the_recorders_shortfall_is_the_cublas_workspaces_and_rounding() {
    let cases: Value =
        serde_json::from_str(&fs::read_to_string(data().join("cases.json")).unwrap()).unwrap();
    let rec = cases["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "recorder")
        .unwrap();
    let peak = rec["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["figure"] == "peak")
        .unwrap()["expected"]
        .as_u64()
        .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_memtide"))
        .args(["summary", "--json"])
        .arg(data().join("recorder_cuda.jsonl"))
        .output()
        .unwrap();
    let s: Value = serde_json::from_slice(&o.stdout).unwrap();
    let framework =
        s["peak"]["bytes"].as_u64().unwrap() - s["peak"]["bands"]["external"].as_u64().unwrap();
    // Two 32 MiB cuBLAS workspaces (one per thread's handle), the 1 MiB cuBLASLt workspace,
    // and the 4 B loss scalar in a 512 B block.
    assert_eq!(framework + 2 * (32 << 20) + (1 << 20) + (512 - 4), peak);
}

/// PyTorch's counters from the independent replay: peak and final in blocks (the convention
/// of `scripts/conformance`'s BLOCK SIZES), reserved peak from the segment entries.
#[test]
fn the_independent_replay_gives_pytorchs_counters() {
    let cases: Value =
        serde_json::from_str(&fs::read_to_string(data().join("cases.json")).unwrap()).unwrap();
    let mut seen = 0;
    for case in cases["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        if !name.starts_with("train_") || name.ends_with("_whatif") {
            continue;
        }
        let file = data().join(case["file"].as_str().unwrap());
        let o = python(&["scripts/conformance", "--replay", file.to_str().unwrap()]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let replay: Value = serde_json::from_slice(&o.stdout).unwrap();
        let dev = &replay["cuda:0"];
        for c in case["checks"].as_array().unwrap() {
            let key = match c["figure"].as_str().unwrap() {
                "peak" => "peak_bytes",
                "final" => "final_bytes",
                "reserved peak" => "reserved_peak",
                _ => continue,
            };
            assert_eq!(dev[key], c["expected"], "{name}: {key}");
        }
        seen += 1;
    }
    assert_eq!(seen, 12, "training snapshots in cases.json");
}

/// compare.py's "le" check (the recorder's peak from the next GPU run on): at most the
/// counter, and within the tolerance below it.
#[test]
fn an_at_most_check_fails_above_the_counter_and_too_far_below() {
    let o = python(&[
        "-c",
        "import sys; sys.path.insert(0, 'scripts/gpu_conformance'); import compare; \
         print([compare.judge(1000, g, 0.1, 'le') for g in (1000, 950, 900, 899, 1001)])",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "['pass', 'pass', 'pass', 'FAIL', 'FAIL']"
    );
}
