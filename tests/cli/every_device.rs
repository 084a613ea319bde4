//! `check` gates every device of a file that has events (issue 47, item 1): a snapshot whose
//! cuda:0 peaks at 3 MiB and cuda:1 at 300 GiB fails a 1 GiB gate — as text, as `--json`,
//! as a rank of `check DIR` and as a `summary --json` file of that rank — and `--device 0`
//! narrows the gate to the device that passes. The files are built here (a JSON snapshot, as
//! `torch.cuda.memory._snapshot()` writes it): each device's figures are its one allocation.

#![allow(clippy::unwrap_used)]

use crate::support::repo::memtide;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

/// A snapshot of one allocation per device (`sizes[d]` bytes on cuda:d, in a segment of its
/// own), an OOM after it on the devices in `oom`, an entry of an unknown action (which puts
/// the device's figures in doubt) on those in `doubted`.
fn snapshot(dir: &Path, name: &str, sizes: &[u64], oom: &[usize], doubted: &[usize]) -> PathBuf {
    let mut segments = Vec::new();
    let mut traces = Vec::new();
    for (d, &size) in sizes.iter().enumerate() {
        let addr = 0x7f00_0000_0000u64 + ((d as u64) << 44);
        let frames = json!([{"filename": "/w/train.py", "line": 10 + d, "name": "main"}]);
        let mut t = vec![
            json!({"action": "segment_alloc", "addr": addr, "size": size, "stream": 0, "frames": frames}),
            json!({"action": "alloc", "addr": addr, "size": size, "stream": 0, "frames": frames}),
        ];
        if oom.contains(&d) {
            t.push(
                json!({"action": "oom", "addr": 0, "size": 2 * GIB, "stream": 0,
                "device_free": GIB, "frames": frames}),
            );
        }
        if doubted.contains(&d) {
            t.push(json!({"action": "a_newer_action", "addr": addr, "size": 1, "stream": 0}));
        }
        traces.push(Value::Array(t));
        segments.push(json!({
            "device": d, "address": addr, "total_size": size, "allocated_size": size,
            "active_size": size, "requested_size": size, "stream": 0,
            "segment_type": "large", "segment_pool_id": [0, 0], "is_expandable": false,
            "frames": frames,
            "blocks": [{"address": addr, "size": size, "requested_size": size,
                "state": "active_allocated", "frames": frames}],
        }));
    }
    let p = dir.join(name);
    let doc = json!({"segments": segments, "device_traces": traces});
    std::fs::write(&p, serde_json::to_vec(&doc).unwrap()).unwrap();
    p
}

fn check(args: &[&str]) -> (i32, String, String) {
    let out = memtide().arg("check").args(args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn the_second_device_over_the_limit_fails_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let f = snapshot(dir.path(), "two.json", &[3 * MIB, 300 * GIB], &[], &[]);
    let (code, out, err) = check(&[s(&f), "--max-peak", "1GiB"]);
    assert_eq!(code, 1, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].starts_with("ok: cuda:0: peak 3.000 MiB (3145728 B)"),
        "{out}"
    );
    assert!(
        lines[1].starts_with("FAIL: cuda:1: peak 300.0 GiB (322122547200 B)"),
        "{out}"
    );

    let (code, out, _) = check(&[s(&f), "--max-peak", "1GiB", "--json"]);
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["kind"].as_str(), v["outcome"].as_str()),
        (Some("devices"), Some("fail"))
    );
    let per: Vec<(&str, &str, u64)> = v["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["device"].as_str().unwrap(),
                d["outcome"].as_str().unwrap(),
                d["peak"]["peak"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        per,
        [("cuda:0", "pass", 3 * MIB), ("cuda:1", "fail", 300 * GIB)]
    );

    // `--device` narrows the gate: the first device alone passes, as one device.
    let (code, out, _) = check(&[s(&f), "--max-peak", "1GiB", "--device", "0", "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        (v["kind"].as_str(), v["device"].as_str()),
        (Some("device"), Some("cuda:0"))
    );
}

#[test]
fn an_oom_on_the_second_of_three_devices_fails_the_gate() {
    let dir = tempfile::tempdir().unwrap();
    // cuda:1 ran out of memory at 78 GiB; the others are small. A 100 GiB gate passes every
    // peak, but the OOM fails it.
    let f = snapshot(
        dir.path(),
        "three.json",
        &[MIB, 78 * GIB, 2 * MIB],
        &[1],
        &[],
    );
    let (code, out, err) = check(&[s(&f), "--max-peak", "100GiB"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("FAIL: cuda:1: out of memory at event")),
        "{out}"
    );
    assert_eq!(out.matches("ok: cuda:").count(), 2, "{out}");
}

#[test]
fn a_rank_file_of_several_devices_is_gated_on_each_in_check_dir() {
    let dir = tempfile::tempdir().unwrap();
    snapshot(dir.path(), "rank0.json", &[3 * MIB, 300 * GIB], &[], &[]);
    snapshot(dir.path(), "rank1.json", &[2 * MIB, 4 * MIB], &[], &[]);
    let d = s(dir.path());
    let (code, out, err) = check(&[d, "--max-peak", "1GiB", "--jobs", "1"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains(
            "FAIL: 1 rank over --max-peak 1.000 GiB: rank 0 (rank0.json) on cuda:1 300.0 GiB"
        ),
        "{out}"
    );
    let (_, out, _) = check(&[d, "--max-peak", "1GiB", "--jobs", "1", "--json"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["peak"]["over"][0]["device"], "cuda:1", "{v}");
    assert_eq!(v["peak"]["over"][0]["peak"], 300 * GIB, "{v}");

    // The same rank given as its `summary --json` file: the row reads `per_device`.
    let sums = tempfile::tempdir().unwrap();
    for r in ["rank0", "rank1"] {
        let o = memtide()
            .args(["summary", "--json"])
            .arg(dir.path().join(format!("{r}.json")))
            .output()
            .unwrap();
        assert!(o.status.success());
        std::fs::write(sums.path().join(format!("{r}.summary.json")), o.stdout).unwrap();
    }
    let (code, out, err) = check(&[s(sums.path()), "--max-peak", "1GiB", "--jobs", "1"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("on cuda:1 300.0 GiB"), "{out}");
}

#[test]
fn a_device_that_cannot_be_gated_keeps_a_multi_device_file_from_passing() {
    let dir = tempfile::tempdir().unwrap();
    let f = snapshot(dir.path(), "two.json", &[3 * MIB, 5 * MIB], &[], &[1]);
    let (code, out, err) = check(&[s(&f), "--max-peak", "1GiB"]);
    assert_eq!(code, 2, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[0].starts_with("ok: cuda:0: peak 3.000 MiB"), "{out}");
    assert!(
        lines[1].starts_with("error (exit 2: a pass needs every device checked): cuda:1: not checked: cannot vouch for the figures of cuda:1"),
        "{out}"
    );
    let (code, out, _) = check(&[s(&f), "--max-peak", "1GiB", "--json"]);
    assert_eq!(code, 2);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["outcome"], "incomplete");
    assert_eq!(v["unchecked"][0]["device"], "cuda:1");
    // `--allow-warnings` gates it; `--device 0` leaves it out.
    assert_eq!(
        check(&[s(&f), "--max-peak", "1GiB", "--allow-warnings"]).0,
        0
    );
    assert_eq!(check(&[s(&f), "--max-peak", "1GiB", "--device", "0"]).0, 0);
    // Over the limit elsewhere, the file fails whatever the doubt.
    assert_eq!(check(&[s(&f), "--max-peak", "1MiB"]).0, 1);

    // `--max-growth` cannot be gated on either device (no step marks): the first reason is
    // the error (exit 2, as for one device), nothing on standard output.
    let (code, out, err) = check(&[s(&f), "--max-growth", "5%", "--allow-warnings"]);
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(err.contains("--max-growth needs step marks"), "{err}");
}

#[test]
fn check_follow_gates_every_device_at_open_and_after_a_rewrite() {
    let dir = tempfile::tempdir().unwrap();
    let f = snapshot(dir.path(), "two.json", &[3 * MIB, 300 * GIB], &[], &[]);
    let (code, out, err) = check(&["-f", s(&f), "--max-peak", "1GiB", "--idle-exit", "0.5"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.starts_with("FAIL: cuda:1: peak 300.0 GiB"), "{out}");
    let (code, out, err) = check(&[
        "-f",
        s(&f),
        "--max-peak",
        "1GiB",
        "--idle-exit",
        "0.5",
        "--device",
        "0",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("ok: peak 3.000 MiB"), "{out}");

    // Followed while small on both devices, then replaced by a run whose cuda:1 is over.
    let small = snapshot(dir.path(), "small.json", &[3 * MIB, 5 * MIB], &[], &[]);
    let big = snapshot(dir.path(), "big.json", &[3 * MIB, 300 * GIB], &[], &[]);
    let run = dir.path().join("run.json");
    std::fs::copy(&small, &run).unwrap();
    let child = std::process::Command::new(crate::support::repo::memtide_path())
        .args(["check", "-f"])
        .arg(&run)
        .args(["--max-peak", "1GiB", "--idle-exit", "20"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(700));
    std::fs::rename(&big, &run).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("FAIL: cuda:1: peak 300.0 GiB"), "{text}");
}
