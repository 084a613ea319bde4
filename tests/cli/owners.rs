//! Who owns the peak: user frames, the stack tree and the persistent breakdown, checked
//! against figures computed by hand (or by an independent replay in the test) from JSONL
//! written here.

use memtide_core::analysis::{global_peak, stack_tree, FrameView, Summary, TreeFrames, TreeNode};
use memtide_core::formats::Progress;
use memtide_core::index::Index;
use memtide_core::open::{open, OpenOptions};
use memtide_core::trace::Trace;
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::io::Write;

/// `text` written to a JSONL file and opened through the door: its trace and index.
fn load_text(text: &str) -> (Trace, Index) {
    let mut f = tempfile::Builder::new()
        .suffix(".jsonl")
        .tempfile()
        .expect("temp");
    f.write_all(text.as_bytes()).expect("write");
    let d = open(f.path(), &OpenOptions::default(), &Progress::new())
        .expect("loads")
        .take(0)
        .expect("a device");
    (d.trace, d.index)
}

/// fp32 Adam on two parameters of 1,000 and 500 elements (numbers by hand):
/// params 6,000 B, grads 6,000 B, optimizer 2 × 6,000 B + 2 step tensors × 4 B = 12,008 B,
/// one 100 B buffer; then a 50 B activation makes the peak.
const ADAM: &str = r#"{"memtide":1,"device":"cpu","clock":"us","param_count":1500}
{"t":1,"op":"alloc","id":1,"size":4000,"cat":"param","name":"fc1.weight","stack":["/home/u/proj/model.py:10 __init__","/home/u/proj/train.py:5 main"]}
{"t":2,"op":"alloc","id":2,"size":2000,"cat":"param","name":"fc2.weight","stack":["/home/u/proj/model.py:11 __init__","/home/u/proj/train.py:5 main"]}
{"t":3,"op":"alloc","id":3,"size":100,"cat":"buffer","name":"bn.running_mean"}
{"t":4,"op":"alloc","id":4,"size":4000,"cat":"grad","name":"fc1.weight.grad"}
{"t":5,"op":"alloc","id":5,"size":2000,"cat":"grad","name":"fc2.weight.grad"}
{"t":6,"op":"alloc","id":6,"size":4000,"cat":"optimizer","name":"fc1.weight.exp_avg"}
{"t":7,"op":"alloc","id":7,"size":4000,"cat":"optimizer","name":"fc1.weight.exp_avg_sq"}
{"t":8,"op":"alloc","id":8,"size":2000,"cat":"optimizer","name":"fc2.weight.exp_avg"}
{"t":9,"op":"alloc","id":9,"size":2000,"cat":"optimizer","name":"fc2.weight.exp_avg_sq"}
{"t":10,"op":"alloc","id":10,"size":4,"cat":"optimizer","name":"fc1.weight.step"}
{"t":11,"op":"alloc","id":11,"size":4,"cat":"optimizer","name":"fc2.weight.step"}
{"t":12,"op":"alloc","id":12,"size":50,"cat":"activation","stack":["/venv/lib/python3.11/site-packages/torch/nn/functional.py:1777 relu","/home/u/proj/model.py:30 forward","/home/u/proj/train.py:9 main"]}
{"t":13,"op":"free","id":12}
"#;

#[test]
fn persistent_breakdown_of_fp32_adam_is_16_bytes_per_param() {
    let (trace, index) = load_text(ADAM);
    let s = Summary::build(&trace, &index);
    let p = s.peak.as_ref().expect("peak");
    assert_eq!(p.bytes, 6_000 + 100 + 6_000 + 12_008 + 50);
    let b = p.persistent.as_ref().expect("persistent");
    assert_eq!(b.params, Some(6_000));
    assert_eq!(b.grads, Some(6_000));
    assert_eq!(b.optimizer, Some(12_008));
    assert_eq!(b.buffers, Some(100));
    assert_eq!(b.other, 0);
    assert_eq!(b.total, 24_108);
    assert_eq!(b.param_count, Some(1_500));
    let bpp = b.bytes_per_param.expect("known count");
    assert!((bpp - 24_008.0 / 1_500.0).abs() < 1e-9, "{bpp}");
    assert_eq!(format!("{bpp:.1}"), "16.0");
    assert_eq!(b.model, "fp32 Adam: 16");
    assert_eq!(b.source, "recorded");
    let v = s.to_json(&["cpu".to_string()]);
    assert_eq!(v["peak"]["persistent"]["param_count"], 1500);
    assert_eq!(v["peak"]["persistent"]["optimizer"], 12008);
    // The activation row: its user frame, not torch, with the op beside it.
    let act = p.live.iter().find(|e| e.bytes.0 == 50).expect("activation");
    assert_eq!(act.user_frame, "model.py:30 forward");
    assert_eq!(act.innermost, "relu");
    assert_eq!(act.user_frame_full, "/home/u/proj/model.py:30 forward");
    assert_eq!(act.label, "relu");
    assert_eq!(
        v["peak"]["live"].as_array().expect("rows").len(),
        p.live.len()
    );
}

#[test]
fn unknown_param_count_and_odd_ratios_are_said_not_guessed() {
    let odd = ADAM.replace(",\"param_count\":1500", "").replace(
        "\"size\":4000,\"cat\":\"optimizer\",\"name\":\"fc1.weight.exp_avg_sq\"",
        "\"size\":9000,\"cat\":\"optimizer\",\"name\":\"fc1.weight.exp_avg_sq\"",
    );
    let (trace, index) = load_text(&odd);
    let s = Summary::build(&trace, &index);
    let b = s
        .peak
        .as_ref()
        .and_then(|p| p.persistent.clone())
        .expect("persistent");
    assert_eq!(b.param_count, None);
    assert_eq!(b.bytes_per_param, None);
    assert!(b.model.starts_with("fits no usual model"), "{}", b.model);
    let v = s.to_json(&["cpu".to_string()]);
    assert!(v["peak"]["persistent"]["bytes_per_param"].is_null());
}

fn check_sums(n: &TreeNode) {
    let kids: u64 = n.children.iter().map(|c| c.bytes).sum();
    let kid_count: usize = n.children.iter().map(|c| c.count).sum();
    assert_eq!(
        n.bytes,
        n.self_bytes + kids + n.omitted_bytes,
        "{}",
        n.frame
    );
    assert_eq!(
        n.count,
        n.self_count + kid_count + n.omitted_count,
        "{}",
        n.frame
    );
    assert!(n.children.windows(2).all(|w| w[0].bytes >= w[1].bytes));
    n.children.iter().for_each(check_sums);
}

const POOL: [&str; 6] = [
    "/venv/lib/python3.11/site-packages/torch/nn/functional.py:1777 relu",
    "/home/u/proj/model.py:30 forward",
    "/home/u/proj/model.py:31 forward",
    "/home/u/proj/train.py:9 main",
    "/usr/lib/python3.11/runpy.py:88 _run_code",
    "aten::addmm",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Random allocs (stacks drawn from a pool) and frees: at the peak, every node's bytes are
    /// its own plus its children's, and the top level sums to the peak's live bytes as an
    /// independent replay of the lines counts them.
    #[test]
    fn tree_sums_hold_at_the_peak(
        ops in proptest::collection::vec((1u64..5000, proptest::collection::vec(0usize..6, 0..5), any::<bool>()), 1..40),
        all in any::<bool>(),
        depth in 0usize..5,
        width in 1usize..4,
    ) {
        let mut text = String::from("{\"memtide\":1,\"device\":\"cpu\",\"clock\":\"us\"}\n");
        let mut live: BTreeMap<usize, u64> = BTreeMap::new();
        let (mut cur, mut peak) = (0u64, 0u64);
        let mut t = 1;
        for (i, (size, stack, free_one)) in ops.iter().enumerate() {
            let frames: Vec<String> = stack.iter().map(|&k| format!("{:?}", POOL[k])).collect();
            text.push_str(&format!(
                "{{\"t\":{t},\"op\":\"alloc\",\"id\":{},\"size\":{size},\"stack\":[{}]}}\n",
                i + 1,
                frames.join(",")
            ));
            t += 1;
            live.insert(i + 1, *size);
            cur += size;
            peak = peak.max(cur);
            if *free_one && i % 3 == 0 {
                if let Some((&id, &sz)) = live.iter().next() {
                    text.push_str(&format!("{{\"t\":{t},\"op\":\"free\",\"id\":{id}}}\n"));
                    t += 1;
                    live.remove(&id);
                    cur -= sz;
                }
            }
        }
        let (trace, index) = load_text(&text);
        let p = global_peak(&trace, &index).expect("a peak");
        prop_assert_eq!(p.bytes.0, peak);
        let ids = p.live(&trace, &index);
        let view = FrameView::new(&trace, &Default::default());
        let mode = if all { TreeFrames::All } else { TreeFrames::User };
        let tree = stack_tree(&trace, &ids, &view, mode);
        prop_assert_eq!(tree.bytes, peak);
        prop_assert_eq!(tree.count, ids.len());
        check_sums(&tree);
        let b = tree.bounded(depth, width);
        prop_assert_eq!(b.bytes, peak);
        check_sums(&b);
    }
}

use crate::support::repo::memtide;

fn sample(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sample-traces")
        .join(name)
}

#[test]
fn summary_text_shows_user_frames_tree_breakdown_and_relative_time() {
    let mut f = tempfile::Builder::new()
        .suffix(".jsonl")
        .tempfile()
        .expect("temp");
    f.write_all(ADAM.as_bytes()).expect("write");
    let out = memtide()
        .args(["summary", "--tree"])
        .arg(f.path())
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("persistent       23.54 KiB = params 5.859 KiB + grads 5.859 KiB + optimizer 11.73 KiB + buffers 100 B → 16.0 B/param × 1,500 params (fp32 Adam: 16) · recorded"),
        "{text}"
    );
    assert!(
        text.contains("t=+11.000 ms") || text.contains("t=+0.011 ms"),
        "{text}"
    );
    assert!(text.contains("stack tree at the peak"), "{text}");
    assert!(text.contains("train.py:5 main"), "{text}");
    let abs = memtide()
        .args(["summary", "--absolute-time"])
        .arg(f.path())
        .output()
        .expect("runs");
    assert!(String::from_utf8_lossy(&abs.stdout).contains("t=12 us"));
    // --frames all: the file's own top frame again.
    let all = memtide()
        .args(["summary", "--frames", "all"])
        .arg(sample("train-3steps.jsonl"))
        .output()
        .expect("runs");
    assert!(all.status.success());
}

#[test]
fn frame_patterns_in_the_rules_toml_and_bad_ones() {
    let mut f = tempfile::Builder::new()
        .suffix(".jsonl")
        .tempfile()
        .expect("temp");
    f.write_all(ADAM.as_bytes()).expect("write");
    let mut rules = tempfile::Builder::new()
        .suffix(".toml")
        .tempfile()
        .expect("temp");
    rules
        .write_all(b"[[frames]]\ninternal = \"proj/model.py\"\n")
        .expect("write");
    let out = memtide()
        .args(["summary", "--json", "--rules"])
        .arg(rules.path())
        .arg(f.path())
        .output()
        .expect("runs");
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let act = v["peak"]["live"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["bytes"] == 50)
        .expect("activation row")
        .clone();
    assert_eq!(act["user_frame"], "train.py:9 main");
    assert_eq!(act["innermost"], "relu");
    let mut bad = tempfile::Builder::new()
        .suffix(".toml")
        .tempfile()
        .expect("temp");
    bad.write_all(b"[[frames]]\ninternal = \"\"\n")
        .expect("write");
    let out = memtide()
        .args(["summary", "--rules"])
        .arg(bad.path())
        .arg(f.path())
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("[[frames]] entry 1"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// tools/gen_snapshots.py `fields`: an alloc in generated Inductor code with FX fields
/// (`fx_original_trace` = /workspace/model.py line 9), `compile_context` "Torch-Compiled
/// Region: 0/1" and `forward_frames` = /workspace/model.py line 9, in forward.
#[test]
fn compiled_code_shows_the_model_line_region_and_forward_line() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/snapshot/fields.json");
    let d = open(&path, &OpenOptions::default(), &Progress::new())
        .expect("loads")
        .take(0)
        .expect("a device");
    let (trace, index) = (d.trace, d.index);
    let s = Summary::build(&trace, &index);
    let p = s.peak.as_ref().expect("peak");
    let row = p
        .live
        .iter()
        .find(|e| e.bytes.0 == 4 << 20)
        .expect("the 4 MiB alloc");
    assert_eq!(row.user_frame, "model.py:9 forward");
    assert_eq!(row.compiled, "Torch-Compiled Region: 0/1 · addmm");
    assert_eq!(row.forward_frame, "model.py:9 forward");
    assert!(!row.user_frame.contains("torchinductor"));
}
