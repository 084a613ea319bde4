//! An Nsight export beside a snapshot whose segments were made before its history began
//! (the usual way: recording starts after warm-up). The driver placed the three segments
//! side by side; each is PyTorch's and must be matched to its allocation in the export by
//! address and size, so that external memory is only what no segment accounts for. Before,
//! the three were joined into one 68 MiB range that matched nothing, and all three were
//! counted again as external.
//!
//! The run, by hand (MiB; e0…e5 10 µs apart from T0):
//!
//! | event | entry | PyTorch allocated |
//! |---|---|---|
//! | before | segments P (20) at X, Q (40) at X+20, R (8) at X+60 | 0 |
//! | e0 | alloc 8 in P | 8 |
//! | e1 | alloc 30 in Q | 38 |
//! | e2 | alloc 4 in R | 42 |
//! | e3 | free 4 in R | 38 |
//! | e4 | segment_free R | 38 |
//! | e5 | free 30 in Q | 8 |
//!
//! The export (pid 4242, device 0): P, Q, R made before the capture (`start = 0`), R freed
//! at 38 µs; NCCL's 64 MiB made 500 µs before T0, never freed. External at the peak (e2):
//! 64 MiB; reserved 68 MiB from the start to e4.

use crate::external_sources::{at, summary_json, write_export_of, Usage, Variant, MIB, PID, T0_US};
use serde_json::{json, Value};

const X: u64 = 0x7f00_0000_0000;
const NCCL: u64 = 0x7f10_0000_0000;

fn snapshot() -> Value {
    let frames = json!([{"filename": "train.py", "line": 10, "name": "step"}]);
    let entries = [
        (0, "alloc", X, 8 * MIB),
        (10, "alloc", X + 20 * MIB, 30 * MIB),
        (20, "alloc", X + 60 * MIB, 4 * MIB),
        (30, "free_completed", X + 60 * MIB, 4 * MIB),
        (40, "segment_free", X + 60 * MIB, 8 * MIB),
        (50, "free_completed", X + 20 * MIB, 30 * MIB),
    ];
    let traces: Vec<Value> = entries
        .iter()
        .map(|&(us, action, addr, size)| {
            json!({"action": action, "addr": addr, "size": size, "stream": 0,
                   "time_us": T0_US + us, "frames": frames})
        })
        .collect();
    let segment = |address: u64, total: u64, used: u64| {
        let mut blocks = vec![];
        if used > 0 {
            blocks.push(
                json!({"address": address, "size": used, "requested_size": used,
                               "state": "active_allocated", "frames": frames}),
            );
        }
        blocks.push(json!({"address": address + used, "size": total - used,
                           "requested_size": 0, "state": "inactive", "frames": []}));
        json!({"device": 0, "address": address, "total_size": total,
               "allocated_size": used, "active_size": used, "requested_size": used,
               "stream": 0, "segment_type": "large", "frames": frames, "blocks": blocks})
    };
    json!({
        "segments": [segment(X, 20 * MIB, 8 * MIB), segment(X + 20 * MIB, 40 * MIB, 0)],
        "device_traces": [traces],
    })
}

fn export_rows() -> Vec<Usage> {
    let seg = |addr: u64, mib: u64| (0, PID, addr, (mib * MIB) as i64, 2, 0, 0x7f11, Some(1));
    vec![
        seg(X, 20),
        seg(X + 20 * MIB, 40),
        seg(X + 60 * MIB, 8),
        (
            at(-500),
            PID,
            NCCL,
            (64 * MIB) as i64,
            2,
            0,
            0x7f22,
            Some(3),
        ),
        (
            at(38),
            PID,
            X + 60 * MIB,
            (8 * MIB) as i64,
            2,
            1,
            0x7f11,
            None,
        ),
    ]
}

#[test]
fn segments_made_before_the_history_are_matched_one_by_one_and_left_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let snap = dir.path().join("snap.json");
    std::fs::write(&snap, snapshot().to_string()).expect("write snapshot");
    let export = dir.path().join("run.sqlite");
    write_export_of(&export, Variant::default(), &export_rows());
    let j = summary_json(&[snap.as_os_str(), "--nsys".as_ref(), export.as_os_str()]);
    let n = &j["nsys"];
    assert_eq!(n["pytorch_segments"], json!(3), "{n}");
    assert_eq!(n["pytorch_segments_before_history"], json!(3), "{n}");
    assert_eq!(n["external"], json!(1), "{n}");
    let peak = &j["peak"];
    assert_eq!(peak["index"], json!(2), "{peak}");
    assert_eq!(peak["bands"]["external"], json!(64 * MIB), "{peak}");
    assert_eq!(
        peak["external_by_source"]["nccl"],
        json!(64 * MIB),
        "{peak}"
    );
    assert_eq!(peak["bytes"], json!(106 * MIB), "{peak}");
    assert_eq!(j["reserved_peak"], json!(68 * MIB));
}
