//! The `category` key PyTorch's own `_profile_to_snapshot` (torch/cuda/_memory_viz.py) writes
//! on each alloc entry — its memory profiler's category, lower-cased: `parameter`,
//! `optimizer_state`, `gradient`, `activation`, `input`, `temporary`, `autograd_detail`,
//! `unknown` — is read by the pickle and the JSON snapshot readers and used as the
//! allocation's category, recorded, not inferred (issue 50). The snapshots are written here in
//! that shape (frames `{"filename": "none", "line": 0, "name": …}`, every block live at the end
//! in one segment), each allocation of its own size so it can be told in the live list.

#![allow(clippy::unwrap_used)]

use serde_json::Value;

use crate::support::pickle_writer::P;
use crate::support::repo::summary_json;

const MIB: i64 = 1 << 20;
const BASE: i64 = 0x2000_0000;

/// (PyTorch's category, size in MiB, memtide's category).
const ALLOCS: [(Option<&str>, i64, &str); 7] = [
    (Some("parameter"), 3, "param"),
    (Some("optimizer_state"), 8, "optimizer"),
    (Some("gradient"), 4, "grad"),
    (Some("activation"), 2, "activation"),
    (Some("input"), 1, "input"),
    (Some("temporary"), 5, "temp"),
    (Some("autograd_detail"), 6, "autograd_detail"),
];
/// Two more: PyTorch's `unknown` and no key at all, left to inference.
const UNCATEGORISED: [(Option<&str>, i64); 2] = [(Some("unknown"), 7), (None, 9)];

fn all() -> Vec<(Option<&'static str>, i64)> {
    ALLOCS
        .iter()
        .map(|a| (a.0, a.1))
        .chain(UNCATEGORISED)
        .collect()
}

fn json_snapshot() -> String {
    let mut entries = Vec::new();
    let mut blocks = Vec::new();
    let mut addr = BASE;
    for (cat, mib) in all() {
        let size = mib * MIB;
        let cat = cat.map_or(String::new(), |c| format!(r#","category":"{c}""#));
        entries.push(format!(
            r#"{{"action":"alloc","addr":{addr},"size":{size},"stream":0,"frames":[{{"filename":"none","line":0,"name":"train.py(12): step"}}]{cat}}}"#
        ));
        blocks.push(format!(
            r#"{{"size":{size},"state":"active_allocated","requested_size":{size},"frames":[]}}"#
        ));
        addr += size;
    }
    format!(
        r#"{{"device_traces":[[{}],[]],"segments":[{{"device":0,"address":{BASE},"total_size":{},"stream":0,"blocks":[{}]}}]}}"#,
        entries.join(","),
        addr - BASE,
        blocks.join(",")
    )
}

/// `{"device_traces": [[alloc entries…]` of `allocs` (size in MiB, one after the other from
/// `BASE`), each with `_profile_to_snapshot`'s frame and its category when it has one; the
/// caller closes the device's list.
fn open_traces(p: &mut P, allocs: &[(Option<&str>, i64)]) {
    p.op(b'}')
        .op(b'(')
        .s("device_traces")
        .op(b']')
        .op(b'(')
        .op(b']')
        .op(b'(');
    let mut addr = BASE;
    for &(cat, mib) in allocs {
        p.op(b'}').op(b'(');
        p.s("action").s("alloc").s("addr").i(addr as i32);
        p.s("size").i((mib * MIB) as i32).s("stream").i(0);
        p.s("frames").op(b']').op(b'(');
        p.op(b'}').op(b'(');
        p.s("filename")
            .s("none")
            .s("line")
            .i(0)
            .s("name")
            .s("train.py(12): step");
        p.op(b'u').op(b'e');
        if let Some(c) = cat {
            p.s("category").s(c);
        }
        p.op(b'u');
        addr += mib * MIB;
    }
}

fn pickle_snapshot() -> Vec<u8> {
    let mut p = P::new();
    let total: i64 = all().iter().map(|a| a.1 * MIB).sum();
    open_traces(&mut p, &all());
    p.op(b'e').op(b']').op(b'e');
    p.s("segments").op(b']').op(b'(').op(b'}').op(b'(');
    p.s("device")
        .i(0)
        .s("address")
        .i(BASE as i32)
        .s("total_size")
        .i(total as i32);
    p.s("stream").i(0).s("blocks").op(b']').op(b'(');
    for (_, mib) in all() {
        p.op(b'}').op(b'(');
        p.s("size")
            .i((mib * MIB) as i32)
            .s("state")
            .s("active_allocated");
        p.s("requested_size").i((mib * MIB) as i32);
        p.op(b'u');
    }
    p.op(b'e').op(b'u').op(b'e').op(b'u').op(b'.');
    p.0
}

fn check(v: &Value, what: &str) {
    let live = v["peak"]["live"].as_array().unwrap();
    assert_eq!(live.len(), all().len(), "{what}");
    let by_size = |mib: i64| {
        live.iter()
            .find(|x| x["bytes"].as_i64() == Some(mib * MIB))
            .unwrap_or_else(|| panic!("{what}: no {mib} MiB allocation"))
    };
    for (pt, mib, ours) in ALLOCS {
        let x = by_size(mib);
        assert_eq!(x["category"], ours, "{what}: {pt:?}");
        assert_eq!(x["inferred"], false, "{what}: {pt:?} is recorded");
    }
    for (pt, mib) in UNCATEGORISED {
        assert_eq!(by_size(mib)["inferred"], true, "{what}: {pt:?} is inferred");
    }
    let notes: Vec<&str> = v["notes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n.as_str())
        .collect();
    assert!(
        notes.iter().any(
            |n| n.starts_with("7 of 9 allocations carry PyTorch's own category")
                && n.ends_with("used as recorded; the other 2 inferred")
        ),
        "{what}: {notes:?}"
    );
    // The persistent split reads the recorded figures: 3 MiB params, 4 grads, 8 optimizer.
    let p = &v["peak"]["persistent"];
    assert_eq!(
        (&p["params"], &p["grads"], &p["optimizer"], &p["source"]),
        (
            &Value::from(3 * MIB),
            &Value::from(4 * MIB),
            &Value::from(8 * MIB),
            &Value::from("recorded")
        ),
        "{what}: {p}"
    );
}

#[test]
fn the_profilers_category_is_the_allocations_category() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("profile.json");
    std::fs::write(&json, json_snapshot()).unwrap();
    check(&summary_json(&json), "json");
    let pickle = dir.path().join("profile.pickle");
    std::fs::write(&pickle, pickle_snapshot()).unwrap();
    check(&summary_json(&pickle), "pickle");
}

#[test]
fn every_allocation_categorised_makes_the_bands_recorded() {
    // Only the seven with a known category: nothing is left to infer.
    let mut p = P::new();
    let known: Vec<(Option<&str>, i64)> = ALLOCS.iter().map(|a| (a.0, a.1)).collect();
    open_traces(&mut p, &known);
    p.op(b'e').op(b'e').s("segments").op(b']').op(b'u').op(b'.');
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("all.pickle");
    std::fs::write(&path, p.0).unwrap();
    let v = summary_json(&path);
    assert_eq!(v["peak"]["bands_source"], "recorded");
    let live = v["peak"]["live"].as_array().unwrap();
    assert_eq!(live.len(), ALLOCS.len());
    assert!(live.iter().all(|x| x["inferred"] == false));
    let b = &v["peak"]["bands"];
    // persistent: params 3 + optimizer 8 + grads 4; activation: activation 2 + input 1 +
    // autograd_detail 6; workspace: temporary 5 (bands of docs/concepts.md).
    assert_eq!(
        (&b["persistent"], &b["activation"], &b["workspace"]),
        (
            &Value::from(15 * MIB),
            &Value::from(9 * MIB),
            &Value::from(5 * MIB)
        )
    );
}
