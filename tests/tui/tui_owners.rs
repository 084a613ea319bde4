//! Who owns the bytes, in the explorer (issue 17): live rows show the user frame
//! (`file.py:123 function`) of real-shaped absolute paths, the stack tree (`g` to the fourth
//! grouping; Enter expands, `/` filters), the inspector with torch.compile attribution, the
//! header's persistent breakdown with bytes per parameter, relative and absolute times.
//! Expected figures come from the fixtures' documentation (sample-traces/README.md, the
//! generators' comments) or from the stacks themselves, parsed here by hand.

#![allow(clippy::unwrap_used)]

use memtide::tui::app::GroupMode;
use memtide::tui::testing::Harness;
use std::io::Write;
use std::path::PathBuf;

use crate::support::repo::root;

fn sample(name: &str) -> PathBuf {
    root().join("sample-traces").join(name)
}

#[test]
fn every_live_row_at_120_columns_shows_its_user_frame() {
    // cuda-oom.pickle's frames are absolute: /home/alice/llm-train/*.py (the user's) and
    // /usr/local/lib/python3.11/site-packages/torch/... (PyTorch).
    let mut h = Harness::open(&sample("cuda-oom.pickle"), 120, 40);
    for keys in ["p", "o"] {
        h.press(keys);
        let s = h.screen();
        let ex = h.explorer();
        let tr = &ex.device().unwrap().trace;
        let rows: Vec<&str> = s
            .lines()
            .skip_while(|l| !l.starts_with(" live at"))
            .skip(1)
            .take(ex.live.rows.len().min(ex.layout(120, 40).live_rows()))
            .collect();
        assert!(!rows.is_empty(), "{s}");
        for (line, e) in rows.iter().zip(&ex.live.rows) {
            // The innermost frame under the user's directory, `path:line:function`.
            let frame = tr
                .stack(e.id)
                .into_iter()
                .find(|f| f.starts_with("/home/alice/llm-train/"))
                .expect("every storage of the sample has user code in its stack");
            let mut parts = frame.rsplitn(3, ':');
            let (func, lineno, path) = (
                parts.next().unwrap(),
                parts.next().unwrap(),
                parts.next().unwrap(),
            );
            let file = path.strip_prefix("/home/alice/llm-train/").unwrap();
            let want = format!("{file}:{lineno} {func}");
            assert!(line.contains(&want), "{keys}: {line:?} lacks {want:?}");
            assert!(
                !line.contains("site-packages") && !line.contains("(unnamed)"),
                "{line}"
            );
        }
    }
}

#[test]
fn g_cycles_to_the_stack_tree_whose_top_level_sums_to_the_peak() {
    let mut h = Harness::open(&sample("cuda-oom.pickle"), 100, 30);
    h.press("p");
    let modes: Vec<GroupMode> = (0..4)
        .map(|_| {
            h.press("g");
            h.explorer().live.group
        })
        .collect();
    assert_eq!(
        modes,
        [
            GroupMode::ByBand,
            GroupMode::ByFrame,
            GroupMode::Tree,
            GroupMode::List
        ]
    );
    h.press("ggg");
    let lv = &h.explorer().live;
    // sample-traces/README.md: the snapshot's peak is 15,837,692,416 B.
    let top: u64 = lv
        .tree_rows
        .iter()
        .filter(|r| r.depth == 0)
        .map(|r| r.bytes)
        .sum();
    assert_eq!(top, 15_837_692_416);
    // Collapsed by default: only the top level; sorted by bytes.
    assert!(lv.tree_rows.iter().all(|r| r.depth == 0 && !r.expanded));
    assert!(lv.tree_rows.windows(2).all(|w| w[0].bytes >= w[1].bytes));
    // User frames only: no PyTorch file anywhere in the tree.
    assert!(lv
        .tree_rows
        .iter()
        .all(|r| !r.frame.contains("site-packages")));
    let first = lv.tree_rows[0].clone();
    assert!(first.children > 0);
    h.press("<Enter>");
    let lv = &h.explorer().live;
    assert!(lv.tree_rows[0].expanded);
    let kids: Vec<_> = lv
        .tree_rows
        .iter()
        .skip(1)
        .take_while(|r| r.depth == 1)
        .collect();
    assert_eq!(kids.len(), first.children);
    // A node's bytes are its children's plus its own.
    let sum: u64 = kids.iter().map(|r| r.bytes).sum();
    assert_eq!(sum + lv.tree_rows[0].self_bytes, first.bytes);
    insta::assert_snapshot!("stack_tree_100x30", h.terminal().backend());
    // Enter again collapses it.
    h.press("<Enter>");
    assert!(!h.explorer().live.tree_rows[0].expanded);
}

#[test]
fn slash_filters_the_tree_and_esc_clears_it() {
    let mut h = Harness::open(&sample("cuda-oom.pickle"), 100, 30);
    h.press("pggg");
    let all = h.explorer().live.tree_rows.len();
    h.press("/data.py<Enter>");
    let lv = &h.explorer().live;
    assert!(!lv.tree_rows.is_empty());
    // Every row is on a path to a frame of data.py, and the matches are revealed.
    assert!(lv
        .tree_rows
        .iter()
        .any(|r| r.matched && r.frame.contains("data.py")));
    assert!(lv.tree_rows.iter().all(|r| r.matched || r.expanded));
    assert!(h.screen().contains("tree filtered by \"data.py\""));
    h.press("<Esc>");
    assert_eq!(h.explorer().live.tree_rows.len(), all);
    assert!(h.explorer().search.query.is_empty());
    h.press("/zzqq<Enter>");
    assert!(h.explorer().live.tree_rows.is_empty());
    assert!(h.screen().contains("no frame matches \"zzqq\""));
    h.press("<Esc>");
    assert_eq!(h.explorer().live.tree_rows.len(), all);
}

#[test]
fn inspector_shows_the_full_path_compiled_region_and_forward_frame() {
    // tools/gen_snapshots.py `fields`: a 4 MiB alloc in generated Inductor code whose FX
    // fields point at /workspace/model.py line 9, compile_context "Torch-Compiled Region:
    // 0/1", forward_frames = /workspace/model.py line 9 in forward.
    let mut h = Harness::open(&root().join("tests/fixtures/snapshot/fields.json"), 120, 40);
    h.press("p");
    let i = h
        .explorer()
        .live
        .rows
        .iter()
        .position(|e| e.bytes.0 == 4 << 20)
        .expect("the 4 MiB alloc is live at the peak");
    h.press(&"j".repeat(i));
    h.press("<Enter>");
    let s = h.screen();
    assert!(
        s.contains("user frame /workspace/model.py:9:forward"),
        "{s}"
    );
    assert!(
        s.contains("compiled region Torch-Compiled Region: 0/1 · addmm"),
        "{s}"
    );
    assert!(s.contains("forward frame model.py:9 forward"), "{s}");
    insta::assert_snapshot!("inspector_compiled_120x40", h.terminal().backend());
}

/// fp32 Adam on 1,500 parameters (tests/cli/owners.rs works the figures by hand): params
/// 6,000 B, grads 6,000 B, optimizer 12,008 B, a 100 B buffer: (6,000 + 6,000 + 12,008) /
/// 1,500 = 16.0 B/param.
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
{"t":1012,"op":"alloc","id":12,"size":50,"cat":"activation","stack":["/venv/lib/python3.11/site-packages/torch/nn/functional.py:1777 relu","/home/u/proj/model.py:30 forward","/home/u/proj/train.py:9 main"]}
{"t":1013,"op":"free","id":12}
"#;

#[test]
fn header_shows_the_persistent_breakdown_and_bytes_per_param() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("adam.jsonl");
    std::fs::File::create(&path)
        .unwrap()
        .write_all(ADAM.as_bytes())
        .unwrap();
    let mut h = Harness::open(&path, 160, 30);
    h.press("p");
    let s = h.screen();
    let header = s.lines().nth(1).unwrap();
    // 6,000 B = 5.9 KiB, 12,008 B = 11.7 KiB (binary units).
    assert!(
        header.contains(
            "(params 5.9Ki + grads 5.9Ki + optim 11.7Ki + buffers 100B · 16.0 B/param (fp32 Adam: 16))"
        ),
        "{header}"
    );
    // The peak is the activation at t=1012 µs: 1,011 µs after the first event; T: absolute.
    assert!(header.contains("t=+1.011 ms"), "{header}");
    h.press("T");
    assert!(h.screen().lines().nth(1).unwrap().contains("t=1.012 ms"));
    // The activation row: user frame with the op beside it, not torch's file.
    assert!(s.contains("model.py:30 forward"), "{s}");
    assert!(!s.contains("functional.py"), "{s}");
    h.press("T");
    insta::assert_snapshot!("header_breakdown_160x30", h.terminal().backend());
}

#[test]
fn a_trace_of_zero_bytes_draws_an_empty_plot() {
    let mut f = tempfile::Builder::new()
        .suffix(".jsonl")
        .tempfile()
        .unwrap();
    f.write_all(
        br#"{"memtide":1,"device":"cpu","clock":"us"}
{"t":1,"op":"mark","name":"step 0","kind":"step"}
{"t":2,"op":"alloc","id":1,"size":0,"cat":"activation"}
{"t":3,"op":"free","id":1}
"#,
    )
    .unwrap();
    let h = Harness::open(f.path(), 80, 24);
    let s = h.screen();
    let plot: Vec<&str> = s.lines().skip(2).take(8).collect();
    // No scale to label (not `1B / 0B / 0B`) and no peak markers: only the bottom says 0B.
    assert!(!s.contains("1B"), "{s}");
    assert!(!s.contains('▼'), "{s}");
    assert_eq!(s.matches("0B┤").count(), 1, "{s}");
    assert!(plot.iter().all(|l| !l.contains('█')), "{s}");
}

#[test]
fn a_search_jump_names_the_storage_by_its_user_frame() {
    // train3.jsonl (gen_train3.py): "probe" matches the view attn_probe of layer2.attn,
    // allocated at model.py:31 attention.
    let mut h = Harness::open(&root().join("tests/fixtures/tui/train3.jsonl"), 120, 30);
    h.press("<Home>/probe<Enter>");
    let status = h.screen().lines().last().unwrap().to_string();
    assert!(
        status.contains("match 1/1: 64.00 MiB layer2.attn  model.py:31 attention"),
        "{status}"
    );
}
