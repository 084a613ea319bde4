//! The serving budget (`summary --json` `budget`, docs/serving.md) on the hand-made capture
//! trace of tests/fixtures/serving (written by tools/gen_serving.py): every figure equals the
//! one worked out by hand in tests/fixtures/serving/README.md.

use crate::support::repo::memtide;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/serving")
        .join(name)
}

fn summary(args: &[&str], name: &str) -> String {
    let o = memtide()
        .arg("summary")
        .args(args)
        .arg(fixture(name))
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).expect("utf-8")
}

#[test]
fn capture_trace_budget_is_the_hand_figures() {
    let doc: Value =
        serde_json::from_str(&summary(&["--json"], "capture.kineto.json")).expect("json");
    let b = &doc["budget"];
    assert_eq!(
        b["before_trace"],
        json!(3072 * MIB),
        "first Total Allocated − its Bytes"
    );
    assert_eq!(
        b["graphs"],
        json!(60 * MIB),
        "20 MiB + 40 MiB of reserve grown in captures"
    );
    assert_eq!(
        b["captures"],
        json!([
            {"size": 16, "bytes_added": 20 * MIB, "captures": 1},
            {"size": 8, "bytes_added": 40 * MIB, "captures": 1}
        ])
    );
    assert_eq!(
        b["activation_peak"],
        json!(4 * MIB),
        "the warm-up's 4 MiB under aten::mm"
    );
    assert_eq!(
        b["weights"],
        Value::Null,
        "no weight loader in the trace: unknown, not 0"
    );
    assert_eq!(b["kv_cache"], Value::Null);
    assert_eq!(
        b["outside"],
        Value::Null,
        "nothing measures memory outside PyTorch"
    );
    assert_eq!(b["capacity"], json!(8192 * MIB));
    assert_eq!(
        b["headroom"],
        json!((8192 - 3262) * MIB),
        "capacity − reserve peak"
    );
    let stages: Vec<(&str, u64, &str)> = b["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| {
            (
                s["name"].as_str().expect("name"),
                s["bytes"].as_u64().expect("bytes"),
                s["source"].as_str().expect("source"),
            )
        })
        .collect();
    assert_eq!(
        stages,
        [
            ("before trace", 3072 * MIB, "trace"),
            ("activation peak", 4 * MIB, "inferred"),
            ("graph capture", 60 * MIB, "trace")
        ]
    );
}

#[test]
fn blocks_made_during_a_capture_are_private_pool_not_activation() {
    let doc: Value =
        serde_json::from_str(&summary(&["--json"], "capture.kineto.json")).expect("json");
    let p = &doc["peak"];
    // Live at the peak: 10 + 6 + 40 MiB made inside the captures, 2 MiB after them.
    assert_eq!(p["persistent"]["private_pool"], json!(56 * MIB));
    assert_eq!(p["bands"]["activation"], json!(0));
    let pool: Vec<u64> = p["live"]
        .as_array()
        .expect("live")
        .iter()
        .filter(|e| e["category"] == "private_pool")
        .map(|e| e["bytes"].as_u64().expect("bytes"))
        .collect();
    assert_eq!(pool, [40 * MIB, 10 * MIB, 6 * MIB]);
}

#[test]
fn text_and_markdown_show_the_ladder() {
    let text = summary(&[], "capture.kineto.json");
    assert!(
        text.contains(
            "capture ladder   size 16: +20.00 MiB (1 capture) · size 8: +40.00 MiB (1 capture)"
        ),
        "{text}"
    );
    assert!(text.contains("weights unknown"), "{text}");
    let md = summary(&["--markdown"], "capture.kineto.json");
    assert!(md.contains("| graphs | 60.00 MiB |"), "{md}");
    assert!(md.contains("| weights | unknown |"), "{md}");
}

#[test]
fn a_training_trace_has_no_budget() {
    let o = memtide()
        .args(["summary", "--json"])
        .arg(crate::support::repo::sample("cuda-oom.pickle"))
        .output()
        .expect("runs");
    let doc: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(doc["budget"], Value::Null);
}

/// tests/fixtures/snapshot/fields.{pickle,json} (tools/gen_snapshots.py `fields`): one 20 MiB
/// segment of private pool (1, 2) at the dump, whose 4 MiB block was allocated with
/// `pool_id` (1, 2) under a module's `forward`; nothing live before the history began.
#[test]
fn a_snapshot_private_pool_is_graph_memory_named_by_its_pool() {
    for name in ["fields.pickle", "fields.json"] {
        let o = memtide()
            .args(["summary", "--json"])
            .arg(
                Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/fixtures/snapshot")
                    .join(name),
            )
            .output()
            .expect("runs");
        let doc: Value = serde_json::from_slice(&o.stdout).expect("json");
        let b = &doc["budget"];
        assert_eq!(b["graphs"], json!(20 * MIB), "{name}");
        assert_eq!(
            b["captures"],
            json!([{"size": null, "bytes_added": 20 * MIB, "pool": "(1, 2)"}]),
            "{name}"
        );
        assert_eq!(b["before_trace"], json!(0), "{name}");
        assert_eq!(b["capacity"], Value::Null, "{name}");
        assert_eq!(
            b["headroom"],
            Value::Null,
            "{name}: no capacity, no headroom"
        );
        let cats: Vec<(u64, &str)> = doc["peak"]["live"]
            .as_array()
            .expect("live")
            .iter()
            .map(|e| {
                (
                    e["bytes"].as_u64().expect("bytes"),
                    e["category"].as_str().expect("cat"),
                )
            })
            .collect();
        assert!(
            cats.contains(&(4 * MIB, "private_pool")),
            "{name}: {cats:?}"
        );
    }
}
