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
    let b = &budget(&[], "capture.kineto.json");
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

const GIB: u64 = 1 << 30;

/// `summary --json` with `args`, the budget of `name`.
fn budget(args: &[&str], name: &str) -> Value {
    let doc: Value =
        serde_json::from_str(&summary(&[&["--json"], args].concat(), name)).expect("json");
    doc["budget"].clone()
}

/// tests/fixtures/serving/pools.pickle (tools/gen_serving.py), figures worked out in
/// tests/fixtures/serving/README.md: an allocator-faithful snapshot of a server's start.
#[test]
fn pools_snapshot_budget_is_the_hand_figures() {
    let b = budget(&["--capacity", "16GiB"], "pools.pickle");
    assert_eq!(
        b["before_trace"],
        json!(0),
        "every block made in the history"
    );
    assert_eq!(
        b["weights"],
        json!(2048 * MIB),
        "the block under load_weights"
    );
    assert_eq!(
        b["kv_cache"],
        json!(4096 * MIB),
        "the KV cache made in one piece"
    );
    assert_eq!(
        b["graphs"],
        json!(96 * MIB),
        "graph pools (1, 0) 64 MiB + (2, 0) 32 MiB; the MemPool and the released pool not"
    );
    assert_eq!(
        b["activation_peak"],
        json!(512 * MIB),
        "the profile run's long-lived block"
    );
    assert_eq!(b["outside"], Value::Null);
    assert_eq!(b["capacity"], json!(16 * GIB));
    assert_eq!(
        b["headroom"],
        json!(16 * GIB - 6260 * MIB),
        "capacity − reserve peak (2048 + 4096 + 64 + 32 + 20 MiB)"
    );
    assert_eq!(
        b["captures"],
        json!([
            {"size": null, "bytes_added": 10 * MIB, "pool": "(0, 1)", "mem_pool": true},
            {"size": null, "bytes_added": 64 * MIB, "pool": "(1, 0)"},
            {"size": null, "bytes_added": 32 * MIB, "pool": "(2, 0)"},
            {"size": null, "bytes_added": 0, "pool": "(3, 0)", "released": true}
        ])
    );
    assert_eq!(
        b["stages"],
        json!([
            {"name": "before trace", "bytes": 0, "source": "trace"},
            {"name": "load weights", "bytes": 2048 * MIB, "source": "inferred"},
            {"name": "activation peak", "bytes": 512 * MIB, "source": "inferred"},
            {"name": "KV cache", "bytes": 4096 * MIB, "source": "inferred"},
            {"name": "graph capture", "bytes": 96 * MIB, "source": "trace"}
        ])
    );
    assert_eq!(b["reconcile"], json!([]), "no --server-log");
    let text = summary(&[], "pools.pickle");
    assert!(
        text.contains("capture ladder   MemPool (0, 1): 10.00 MiB · pool (1, 0): 64.00 MiB · pool (2, 0): 32.00 MiB · pool (3, 0): released"),
        "{text}"
    );
}

/// The printed GiB × 2^30 and half its last digit, as the parser reads them.
fn logged(gib: f64, decimals: i32) -> (u64, u64) {
    let g = GIB as f64;
    (
        (gib * g).round() as u64,
        (0.5 * g * 10f64.powi(-decimals)).round() as u64,
    )
}

#[test]
fn a_vllm_log_is_reconciled_with_the_snapshot() {
    let log = fixture("pools.vllm.log");
    let log = log.to_str().expect("utf-8 path");
    let b = budget(&["--server-log", log], "pools.pickle");
    let got: Vec<(String, u64, u64, Value, Value, u64, Value)> = b["reconcile"]
        .as_array()
        .expect("reconcile")
        .iter()
        .map(|r| {
            (
                r["figure"].as_str().expect("figure").to_string(),
                r["logged"].as_u64().expect("logged"),
                r["precision"].as_u64().expect("precision"),
                r["trace"].clone(),
                r["agrees"].clone(),
                r["line"].as_u64().expect("line"),
                r["rank"].clone(),
            )
        })
        .collect();
    let row = |f: &str, (l, p): (u64, u64), t: Value, a: Value, line: u64| {
        (f.to_string(), l, p, t, a, line, json!(0))
    };
    assert_eq!(
        got,
        [
            // Rank 0's `Model loading took 2.0000 GiB` (rank 1's 2.0625 is another device's).
            row("weights", logged(2.0, 4), json!(2048 * MIB), json!(true), 2),
            row(
                "activation_peak",
                logged(0.5, 2),
                json!(512 * MIB),
                json!(true),
                4
            ),
            row("outside", logged(0.25, 2), Value::Null, Value::Null, 4),
            row(
                "graphs_estimate",
                logged(0.25, 2),
                json!(96 * MIB),
                json!(false),
                5
            ),
            row(
                "kv_cache",
                logged(4.0, 2),
                json!(4096 * MIB),
                json!(true),
                6
            ),
            // 0.09 GiB = 92.16 MiB: within 0.005 GiB of the trace's 96 MiB.
            row("graphs", logged(0.09, 2), json!(96 * MIB), json!(true), 10),
        ]
    );
    assert_eq!(b["reconcile"][3]["compared_with"], json!("graphs"));
    assert_eq!(b["reconcile"][0]["server"], json!("vllm"));
    // The trace knows every stage: none comes from the log.
    assert!(b["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .all(|s| s["source"] != "server_log"));
    let text = summary(&["--server-log", log], "pools.pickle");
    for want in [
        "server log       ",
        "pools.vllm.log, vLLM, rank 0",
        "reconcile        weights 2.0000 GiB as logged, 2.000 GiB in the trace",
        "graph memory estimated 0.25 GiB, measured 96.00 MiB in the capture, 160.0 MiB apart",
        "KV cache 4.00 GiB as logged, 4.000 GiB in the trace",
        "non-torch memory 0.25 GiB as logged, unknown in the trace",
    ] {
        assert!(text.contains(want), "{want:?} in\n{text}");
    }
    let md = summary(&["--server-log", log, "--markdown"], "pools.pickle");
    assert!(
        md.contains("- line 5: graph memory estimated 0.25 GiB, measured 96.00 MiB in the capture"),
        "{md}"
    );
}

#[test]
fn an_sglang_log_gives_the_stages_the_trace_cannot() {
    let log = fixture("capture.sglang.log");
    let log = log.to_str().expect("utf-8 path");
    let b = budget(&["--server-log", log], "capture.kineto.json");
    assert_eq!(
        b["weights"],
        Value::Null,
        "the budget's own figures stay the trace's"
    );
    assert_eq!(
        b["stages"],
        json!([
            {"name": "before trace", "bytes": 3072 * MIB, "source": "trace"},
            {"name": "load weights", "bytes": logged(2.5, 2).0, "source": "server_log"},
            {"name": "activation peak", "bytes": 4 * MIB, "source": "inferred"},
            // K size 0.25 GB + V size 0.25 GB: SGLang's GB is 2^30 bytes.
            {"name": "KV cache", "bytes": 2 * logged(0.25, 2).0, "source": "server_log"},
            {"name": "graph capture", "bytes": 60 * MIB, "source": "trace"}
        ])
    );
    let r = &b["reconcile"];
    let last = &r[6];
    assert_eq!(last["figure"], json!("free_after_graphs"));
    assert_eq!(last["compared_with"], json!("headroom"));
    assert_eq!(last["trace"], json!(4930 * MIB));
    assert_eq!(
        last["agrees"],
        json!(true),
        "4.81 GiB ± 0.005 holds 4930 MiB (4.8145 GiB)"
    );
    assert_eq!(r[0]["figure"], json!("distributed_init"));
    assert_eq!(r[0]["compared_with"], Value::Null);
    assert_eq!(r[0]["trace"], Value::Null);
    let text = summary(&["--server-log", log], "capture.kineto.json");
    for want in [
        "load weights 2.500 GiB (server log)",
        "KV cache 0.50 GiB as logged, unknown in the trace",
        "graph memory 0.06 GiB as logged, 60.00 MiB in the trace",
        "free after graph capture 4.81 GiB as logged, headroom 4.814 GiB in the trace",
        "distributed init 0.13 GiB as logged\n",
    ] {
        assert!(text.contains(want), "{want:?} in\n{text}");
    }
}

#[test]
fn a_log_without_a_memory_line_is_an_error_naming_it() {
    let dir = tempfile::tempdir().expect("tmp");
    let bad = dir.path().join("server.log");
    let mut bytes = b"INFO starting\n\x1b]0;pwned\x07\x1b[2J\0\xff\xfe GiB GB\n".to_vec();
    bytes.extend(std::iter::repeat_n(b'A', 1 << 20));
    std::fs::write(&bad, &bytes).expect("write");
    let o = memtide()
        .args(["summary", "--server-log"])
        .arg(&bad)
        .arg(fixture("capture.kineto.json"))
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--server-log"), "{err}");
    assert!(err.contains("server.log"), "{err}");
    assert!(err.contains("no vLLM or SGLang memory line"), "{err}");
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
    assert!(o.stdout.is_empty());
}

#[test]
fn a_server_log_gives_a_training_trace_a_budget() {
    let o = memtide()
        .args(["summary", "--json", "--server-log"])
        .arg(fixture("pools.vllm.log"))
        .arg(crate::support::repo::sample("cuda-oom.pickle"))
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: Value = serde_json::from_slice(&o.stdout).expect("json");
    let b = &doc["budget"];
    assert_eq!(b["graphs"], Value::Null, "no capture, no pool");
    assert_eq!(b["reconcile"].as_array().map(Vec::len), Some(6));
    assert_eq!(b["reconcile"][4]["figure"], json!("kv_cache"));
    assert_eq!(b["reconcile"][4]["trace"], Value::Null);
}

#[test]
fn a_log_without_the_device_s_rank_says_whose_lines_it_took() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("tp.log");
    std::fs::write(
        &log,
        "[2026-12-06 10:00:09 TP3] Capture cuda graph end. Time elapsed: 2.00 s. mem usage=0.06 GB. avail mem=4.81 GB.\n\
[2026-12-06 10:00:09 TP2] Capture cuda graph end. Time elapsed: 2.00 s. mem usage=0.50 GB. avail mem=4.00 GB.\n",
    )
    .expect("write");
    let log = log.to_str().expect("utf-8 path");
    let text = summary(&["--server-log", log], "capture.kineto.json");
    assert!(
        text.contains(
            "SGLang, rank 2 (the log has no rank 0, this device's: the lowest rank's lines)"
        ),
        "{text}"
    );
    let b = budget(&["--server-log", log], "capture.kineto.json");
    assert_eq!(b["reconcile"][0]["rank"], json!(2));
    assert_eq!(b["reconcile"][0]["logged"], json!(logged(0.5, 2).0));
}
