//! Windows (steady, step:N, marks:A..B, reset_peak), step trends and leak detection, and
//! `diff` — checked against the hand-computed figures of `sample-traces/README.md`.

use assert_cmd::Command;
use memtide_core::analysis::{diff, trend, window_peak, WindowError, WindowSpec};
use memtide_core::formats::Progress;
use memtide_core::index::Index;
use memtide_core::open::OpenOptions;
use memtide_core::trace::Trace;
use std::path::Path;

const MIB: u64 = 1 << 20;

use crate::support::repo::sample;

/// The first device of `path`, opened through the door: its trace and index.
fn open(path: &Path) -> (Trace, Index) {
    let d = memtide_core::open::open(path, &OpenOptions::default(), &Progress::new())
        .expect("load")
        .take(0)
        .expect("a device");
    (d.trace, d.index)
}

fn window_bytes(t: &Trace, i: &Index, spec: &str) -> u64 {
    let r = WindowSpec::parse(spec)
        .expect("spec")
        .resolve(t, i)
        .expect("resolves");
    window_peak(t, i, r.lo, r.hi).expect("peak").bytes.0
}

#[test]
fn every_window_kind_on_the_plain_sample() {
    let (t, i) = open(&sample("train-3steps.jsonl"));
    // README: steady steps peak at 9536 MiB; the warm-up step 0 at 7488 MiB.
    assert_eq!(window_bytes(&t, &i, "steady"), 9536 * MIB);
    assert_eq!(window_bytes(&t, &i, "step:0"), 7488 * MIB);
    assert_eq!(window_bytes(&t, &i, "step:step 1"), 9536 * MIB);
    assert_eq!(window_bytes(&t, &i, "reset_peak"), 9536 * MIB);
    assert_eq!(window_bytes(&t, &i, "all"), 9536 * MIB);
    // From the setup phase to the start of step 1: step 0's peak.
    assert_eq!(window_bytes(&t, &i, "marks:setup..step 1"), 7488 * MIB);
    let r = WindowSpec::parse("steady")
        .expect("p")
        .resolve(&t, &i)
        .expect("r");
    assert_eq!(r.label, "step 2");
    assert!(matches!(
        WindowSpec::parse("nonsense"),
        Err(WindowError::Syntax(_))
    ));
    assert!(matches!(
        WindowSpec::parse("marks:a"),
        Err(WindowError::Syntax(_))
    ));
    assert!(WindowSpec::parse("step:9")
        .expect("p")
        .resolve(&t, &i)
        .is_err());
    assert!(WindowSpec::parse("marks:nope..step 1")
        .expect("p")
        .resolve(&t, &i)
        .is_err());
}

#[test]
fn checkpointed_steady_peak_is_lower_by_the_readme_figure() {
    let (a, ia) = open(&sample("train-3steps.jsonl"));
    let (b, ib) = open(&sample("train-checkpointed.jsonl"));
    let pa = window_bytes(&a, &ia, "steady");
    let pb = window_bytes(&b, &ib, "steady");
    assert_eq!(
        pa - pb,
        1024 * MIB,
        "README: checkpointing saves 1024 MiB at the peak"
    );
    let d = diff(&a, &ia, &b, &ib);
    assert_eq!(d.aligned_by, "step marks");
    assert_eq!(d.steps.len(), 3);
    assert_eq!(d.steps[2].delta(), Some(-(1024 * MIB as i128)));
    assert_eq!(d.steps[0].delta(), Some(0));
    assert_eq!(
        d.band_delta[memtide_core::trace::Band::Activation.idx()],
        -(1024 * MIB as i128)
    );
    assert_ne!(d.most_different[0], 0, "the warm-up step does not differ");
}

#[test]
fn leak_sample_is_flagged_with_its_leaking_allocations() {
    let (t, i) = open(&sample("train-leak.jsonl"));
    let tr = trend(&t, &i);
    // Baselines (README): step 0 starts with params + NCCL (3072 MiB); after the warm-up the
    // boundaries are 6144 + 512, 6144 + 1024, and the end at 6144 + 1536 MiB.
    let b: Vec<u64> = tr.steps.iter().map(|s| s.baseline.0 / MIB).collect();
    assert_eq!(b, vec![3072, 6656, 7168]);
    assert_eq!(tr.final_bytes.0 / MIB, 7680);
    assert!(tr.rising);
    assert_eq!(tr.growth_bytes, Some(1024 * MIB as i128));
    let top = tr.survivors.first().expect("survivors");
    assert_eq!(top.name, "act layers.0.mlp");
    assert_eq!(top.count, 3);
    assert_eq!(top.bytes.0, 1536 * MIB);
    // The plain run does not rise.
    let (p, ip) = open(&sample("train-3steps.jsonl"));
    let tp = trend(&p, &ip);
    assert!(!tp.rising);
    assert_eq!(tp.growth, Some(0.0));
    assert!(tp.survivors.is_empty());
}

#[test]
fn traces_without_marks() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("nomarks.jsonl");
    std::fs::write(
        &p,
        "{\"memtide\":1}\n{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":100}\n{\"t\":2,\"op\":\"alloc\",\"id\":2,\"size\":50}\n{\"t\":3,\"op\":\"free\",\"id\":1}\n",
    )
    .expect("write");
    let (t, i) = open(&p);
    assert!(WindowSpec::Steady.resolve(&t, &i).is_err());
    assert!(WindowSpec::ResetPeak.resolve(&t, &i).is_err());
    assert_eq!(window_bytes(&t, &i, "all"), 150);
    let tr = trend(&t, &i);
    assert!(tr.steps.is_empty() && tr.growth.is_none());
    let d = diff(&t, &i, &t, &i);
    assert_eq!(d.aligned_by, "event index (no step marks)");
    assert_eq!(d.steps.len(), 1);
    assert_eq!(d.steps[0].delta(), Some(0));
    // check --max-growth needs steps: a clear error, exit 2.
    Command::new(env!("CARGO_BIN_EXE_memtide"))
        .args(["check", &p.display().to_string(), "--max-growth", "1%"])
        .assert()
        .code(2);
}

#[test]
fn cli_diff_json_and_growth_gate() {
    let out = Command::new(env!("CARGO_BIN_EXE_memtide"))
        .args(["diff", &sample("train-3steps.jsonl").display().to_string()])
        .arg(sample("train-checkpointed.jsonl"))
        .arg("--json")
        .output()
        .expect("diff");
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["peak_delta"].as_i64(), Some(-(1024 * MIB as i64)));
    assert_eq!(
        v["band_delta_at_peaks"]["activation"].as_i64(),
        Some(-(1024 * MIB as i64))
    );
    assert_eq!(v["steps"].as_array().expect("steps").len(), 3);
    Command::new(env!("CARGO_BIN_EXE_memtide"))
        .args([
            "check",
            &sample("train-leak.jsonl").display().to_string(),
            "--max-growth",
            "1%",
        ])
        .assert()
        .code(1);
    Command::new(env!("CARGO_BIN_EXE_memtide"))
        .args([
            "check",
            &sample("train-3steps.jsonl").display().to_string(),
            "--max-growth",
            "1%",
        ])
        .assert()
        .code(0);
    let out = Command::new(env!("CARGO_BIN_EXE_memtide"))
        .args([
            "summary",
            &sample("train-3steps.jsonl").display().to_string(),
            "--json",
            "--window",
            "steady",
        ])
        .output()
        .expect("summary");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["window"]["spec"], "steady");
    assert_eq!(v["window"]["label"], "step 2");
    assert_eq!(v["peak"]["bytes"].as_u64(), Some(9536 * MIB));
    assert_eq!(v["peak"]["mark"], "step 2");
}
