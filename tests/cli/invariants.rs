//! Invariants of `summary --json` over every trace in the repository, every device of each
//! (issue 50): the bands add up to the peak; what the allocator holds at the peak fits in its
//! reserve; the external band never exceeds what its source measured beyond the reserve; an
//! OOM's allocated bytes fit in its reserve. A failure names the file, the device and the
//! figure.

#![allow(clippy::unwrap_used)]

use crate::support::repo::{memtide, root, trace_files};
use serde_json::Value;

/// `summary --json` of one device of a file, or None where the file is not read.
fn summary(p: &std::path::Path, device: Option<&str>) -> Option<Value> {
    let mut c = memtide();
    c.arg("summary").arg(p).arg("--json");
    if let Some(d) = device {
        c.args(["--device", d]);
    }
    let o = c.output().ok()?;
    o.status.success().then_some(())?;
    serde_json::from_slice(&o.stdout).ok()
}

/// Each readable file's summary for each of its devices, labelled `file · device`.
fn every_device_summary() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for p in trace_files() {
        let name = p.strip_prefix(root()).unwrap().display().to_string();
        let Some(v) = summary(&p, None) else { continue };
        let devices: Vec<String> = v["devices"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|d| d.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        if devices.len() <= 1 {
            let d = v["device"].as_str().unwrap_or("?").to_string();
            out.push((format!("{name} · {d}"), v));
            continue;
        }
        for d in devices {
            if let Some(v) = summary(&p, Some(&d)) {
                out.push((format!("{name} · {d}"), v));
            }
        }
    }
    out
}

#[test]
fn every_summary_of_every_file_holds_its_invariants() {
    let all = every_device_summary();
    assert!(all.len() >= 60, "too few summaries: {}", all.len());
    let mut checked_reserve = 0;
    for (at, v) in &all {
        let p = &v["peak"];
        let Some(peak) = p["bytes"].as_u64() else {
            continue;
        };
        // The bands add up to the peak (external null: unavailable, not counted).
        let bands = p["bands"].as_object().unwrap();
        let sum: u64 = bands.values().filter_map(Value::as_u64).sum();
        assert_eq!(
            sum, peak,
            "{at}: the bands {bands:?} add up to {sum}, not the peak {peak}"
        );
        let external = bands.get("external").and_then(Value::as_u64);
        // The external band by source adds up to the band.
        if let (Some(e), Some(by)) = (external, p["external_by_source"].as_object()) {
            let s: u64 = by.values().filter_map(Value::as_u64).sum();
            assert_eq!(
                s, e,
                "{at}: external by source {by:?} ≠ the external band {e}"
            );
        }
        // What the allocator holds at the peak is in its reserve then, so below its highest.
        if let Some(r) = v["reserved_peak"].as_u64() {
            let inside = peak - external.unwrap_or(0);
            assert!(
                inside <= r,
                "{at}: {inside} B inside the allocator at the peak > the reserved peak {r} B"
            );
            checked_reserve += 1;
        }
        // Each OOM: the allocator's bytes within its reserve.
        for o in v["ooms"].as_array().into_iter().flatten() {
            if let (Some(a), Some(r)) = (o["allocated"].as_u64(), o["reserved"].as_u64()) {
                assert!(
                    a <= r,
                    "{at}: OOM #{} allocated {a} > reserved {r}",
                    o["index"]
                );
            }
            if let Some(s) = o["shortfall"].as_u64() {
                assert!(s > 0, "{at}: a shortfall of 0 B is no shortfall");
            }
        }
        // The persistent split: its known parts within the persistent band, and optimizer
        // state never without parameters to be the state of (known, or unknown: null).
        let split = &p["persistent"];
        if let Some(total) = split["total"].as_u64() {
            let band = bands.get("persistent").and_then(Value::as_u64);
            assert_eq!(
                Some(total),
                band,
                "{at}: persistent split {split} ≠ the band"
            );
            let parts: u64 = [
                "params",
                "grads",
                "optimizer",
                "buffers",
                "other",
                "private_pool",
            ]
            .iter()
            .filter_map(|k| split[*k].as_u64())
            .sum();
            assert!(
                parts <= total,
                "{at}: the persistent split's parts {parts} > its total {total}: {split}"
            );
            if split["optimizer"].as_u64().is_some_and(|o| o > 0) {
                assert_ne!(
                    split["params"].as_u64(),
                    Some(0),
                    "{at}: optimizer state with no parameters: {split}"
                );
            }
        }
        // The live rows at the peak never hold more than the peak.
        let live: u64 = p["live"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["bytes"].as_u64())
            .sum();
        assert!(live <= peak, "{at}: live rows {live} > the peak {peak}");
    }
    assert!(
        checked_reserve >= 20,
        "too few files with a reserve: {checked_reserve}"
    );
}

/// A file that holds more at its peak than its reserve ever reached contradicts itself: said,
/// and doubted (`check` exits 2 unless --allow-warnings) — the invariant above found one among
/// the repository's own fixtures.
#[test]
fn a_reserve_below_the_peak_is_doubted() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("impossible.jsonl");
    std::fs::write(
        &f,
        concat!(
            "{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\"}\n",
            "{\"t\":1,\"op\":\"reserve\",\"id\":100,\"size\":1073741824}\n",
            "{\"t\":2,\"op\":\"alloc\",\"id\":1,\"size\":1610612736,\"cat\":\"activation\"}\n",
            "{\"t\":3,\"op\":\"free\",\"id\":1}\n",
        ),
    )
    .unwrap();
    let o = memtide().arg("summary").arg(&f).output().unwrap();
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("the file's highest reserve (1.000 GiB) is below the 1.500 GiB it says the framework held at the peak"),
        "{text}"
    );
    let c = memtide()
        .args(["check", "--max-peak", "100GiB"])
        .arg(&f)
        .output()
        .unwrap();
    assert_eq!(c.status.code(), Some(2), "{c:?}");
}
