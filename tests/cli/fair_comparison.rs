//! `memtide diff`'s fair comparison — parity, each run's boundary, what the change bought and
//! cost, the methods recognised, `--require-parity` — checked against the hand-computed
//! reports of `tests/fixtures/fair/README.md` and PyTorch files of a real GPU
//! (`tests/data/gpu-h200`).

#![allow(clippy::unwrap_used)]

use crate::support::repo::{diff_json_paths, root, summary_json};
use assert_cmd::Command;
use serde_json::Value;
use std::path::{Path, PathBuf};

const MIB: i64 = 1 << 20;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/fair")
        .join(format!("{name}.jsonl"))
}

fn memtide() -> Command {
    Command::cargo_bin("memtide").expect("binary")
}

fn diff_json(a: &str, b: &str) -> Value {
    diff_json_paths(&fixture(a), &fixture(b), &[])
}

fn diff_text(a: &str, b: &str) -> String {
    let out = memtide()
        .arg("diff")
        .arg(fixture(a))
        .arg(fixture(b))
        .output()
        .expect("runs");
    assert!(out.status.success());
    String::from_utf8(out.stdout).expect("utf-8")
}

fn line<'a>(v: &'a Value, name: &str) -> &'a Value {
    &v["parity"]["lines"][name]
}

#[test]
fn a_checkpointed_twin_is_the_same_work_with_its_saving_and_time_cost() {
    let v = diff_json("base", "checkpointed");
    assert_eq!(v["parity"]["verdict"], "same_work");
    for l in ["parameters", "optimizer_state", "inputs", "steps", "phases"] {
        assert_eq!(line(&v, l)["state"], "same", "{l}: {}", line(&v, l));
    }
    assert_eq!(line(&v, "parameters")["a"]["count"], 33_554_432);
    assert_eq!(line(&v, "parameters")["a"]["bytes"], 128 * MIB);
    assert_eq!(line(&v, "optimizer_state")["b"]["bytes"], 256 * MIB);
    assert_eq!(
        line(&v, "inputs")["a"]["per_step"][0]["sizes"],
        serde_json::json!([4 * MIB])
    );
    assert_eq!(line(&v, "steps")["b"]["count"], 3);
    // README: 1060 MiB → 868 MiB; reserved 1280 → 1024 MiB; 1000 µs → 1250 µs.
    assert_eq!(v["a"]["peak"]["bytes"], 1060 * MIB);
    assert_eq!(v["b"]["peak"]["bytes"], 868 * MIB);
    assert_eq!(v["reserved_peak"]["a"], 1280 * MIB);
    assert_eq!(v["reserved_peak"]["b"], 1024 * MIB);
    assert_eq!(v["reserved_peak"]["delta"], -256 * MIB);
    assert_eq!(v["step_time"]["a"]["median_us"], 1000.0);
    assert_eq!(v["step_time"]["b"]["median_us"], 1250.0);
    assert_eq!(v["step_time"]["b"]["clock"], "trace");
    assert!((v["step_time"]["change"].as_f64().unwrap() - 0.25).abs() < 1e-12);
    let m = v["methods"].as_array().unwrap();
    assert_eq!(m.len(), 1, "{m:?}");
    assert_eq!(m[0]["method"], "activation_checkpointing");
    assert!(m[0]["a"].is_null() && m[0]["b"]["allocations"].as_u64().unwrap() > 0);
    for side in ["a", "b"] {
        let b = &v["boundary"][side];
        assert_eq!(b["kind"], "full_update");
        assert_eq!(b["full_updates"], 2);
        assert_eq!(b["lazy_state"]["step"], "step 0");
        assert_eq!(b["lazy_state"]["bytes"], 256 * MIB);
    }
    assert!(v["boundary"]["warning"].is_null());
    let t = diff_text("base", "checkpointed");
    assert!(t.contains("parity           same work"), "{t}");
    assert!(
        t.contains("B saves 192.0 MiB of peak allocated (−18.1 %) and saves 256.0 MiB of peak reserved (−20.0 %); at +25.0 % step time (trace time, not synchronized)"),
        "{t}"
    );
}

#[test]
fn two_sequence_lengths_are_different_work_naming_the_input_sizes() {
    let v = diff_json("base", "seq2x");
    assert_eq!(v["parity"]["verdict"], "different_work");
    assert_eq!(v["parity"]["differs"], serde_json::json!(["inputs"]));
    assert_eq!(
        line(&v, "inputs")["b"]["per_step"][0]["sizes"],
        serde_json::json!([8 * MIB])
    );
    let words = line(&v, "inputs")["words"].as_str().unwrap();
    assert!(
        words.contains("A 1 × 4.000 MiB per step vs B 1 × 8.000 MiB per step"),
        "{words}"
    );
    let methods: Vec<&str> = v["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["method"].as_str().unwrap())
        .collect();
    assert_eq!(methods, ["batch_or_sequence_change"]);
    assert!(v["bought_and_cost"]["headline"]
        .as_str()
        .unwrap()
        .starts_with("not a like-for-like saving"));
}

#[test]
fn forward_only_against_a_full_step_names_the_missing_phases_and_warns() {
    let v = diff_json("forward-only", "base");
    assert_eq!(v["parity"]["verdict"], "different_work");
    assert_eq!(
        v["parity"]["differs"],
        serde_json::json!(["optimizer_state", "phases"])
    );
    let p = line(&v, "phases");
    assert_eq!(
        p["a"],
        serde_json::json!({"forward": true, "backward": false, "optimizer": false})
    );
    assert!(p["words"]
        .as_str()
        .unwrap()
        .ends_with("A has no backward, optimizer step"));
    assert_eq!(line(&v, "optimizer_state")["a"]["bytes"], 0);
    assert_eq!(v["boundary"]["a"]["kind"], "forward_only");
    assert_eq!(v["boundary"]["b"]["kind"], "full_update");
    assert!(v["boundary"]["warning"]
        .as_str()
        .unwrap()
        .contains("A forward-only vs B full update"));
    assert_eq!(v["a"]["peak"]["bytes"], 388 * MIB);
}

#[test]
fn require_parity_fails_on_different_work_and_passes_on_the_same() {
    let out = memtide()
        .args(["diff", "--require-parity"])
        .arg(fixture("base"))
        .arg(fixture("seq2x"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("parity required: different work: inputs differ"),
        "{err}"
    );
    // The report is still printed (not the screen).
    assert!(String::from_utf8_lossy(&out.stdout).contains("parity           different work"));
    let out = memtide()
        .args(["diff", "--require-parity", "--json"])
        .arg(fixture("base"))
        .arg(fixture("checkpointed"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn mixed_precision_and_offloading_twins_are_named_and_keep_parity() {
    for (b, method, peak) in [
        ("amp", "mixed_precision", 868),
        ("offload", "offloading", 804),
    ] {
        let v = diff_json("base", b);
        assert_eq!(v["parity"]["verdict"], "same_work", "{b}");
        assert_eq!(v["b"]["peak"]["bytes"], peak * MIB, "{b}");
        let m = v["methods"].as_array().unwrap();
        assert_eq!(m.len(), 1, "{b}: {m:?}");
        assert_eq!(m[0]["method"], method);
    }
}

#[test]
fn boundaries_warm_up_only_and_cut_mid_step() {
    let v = diff_json("base", "one-step");
    assert_eq!(v["boundary"]["b"]["kind"], "warm_up_only");
    assert_eq!(v["b"]["peak"]["bytes"], 740 * MIB);
    assert!(v["step_time"]["b"].is_null(), "one step start: no duration");
    assert_eq!(line(&v, "steps")["words"], "differs: A 3 steps vs B 1 step");
    let v = diff_json("base", "cut");
    let b = &v["boundary"]["b"];
    assert_eq!(b["kind"], "full_update");
    assert_eq!(b["cut"]["step"], "step 3");
    assert_eq!(
        b["cut"]["missing"],
        serde_json::json!(["backward", "optimizer"])
    );
    assert!(v["boundary"]["warning"]
        .as_str()
        .unwrap()
        .contains("cut mid-step"));
}

#[test]
fn another_model_differs_in_parameters_and_optimizer_state() {
    let v = diff_json("base", "three-layers");
    assert_eq!(
        v["parity"]["differs"],
        serde_json::json!(["parameters", "optimizer_state"])
    );
    assert_eq!(line(&v, "parameters")["b"]["count"], 50_331_648);
    assert_eq!(line(&v, "parameters")["b"]["bytes"], 192 * MIB);
    assert_eq!(line(&v, "optimizer_state")["b"]["bytes"], 384 * MIB);
    assert_eq!(v["b"]["peak"]["bytes"], 1572 * MIB);
    let v = diff_json("base", "two-steps");
    assert_eq!(v["parity"]["differs"], serde_json::json!(["steps"]));
    assert_eq!(v["step_time"]["b"]["steps_timed"], 1);
    assert_eq!(v["step_time"]["b"]["warm_up_excluded"], false);
}

#[test]
fn a_synchronized_clock_is_said_to_be_one() {
    let v = diff_json("base", "base-synced");
    assert_eq!(v["step_time"]["a"]["clock"], "trace");
    assert_eq!(v["step_time"]["b"]["clock"], "synchronized");
    assert_eq!(v["step_time"]["b"]["median_us"], 1100.0);
}

/// A file with no categories, stacks, marks or parameter count: every parity line unknown,
/// `null` in JSON, and the verdict says what is missing.
#[test]
fn a_file_that_cannot_say_gives_cannot_tell_with_nulls() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bare.jsonl");
    let mut s = String::from("{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"seq\"}\n");
    for k in 0..4 {
        s.push_str(&format!(
            "{{\"t\":{},\"op\":\"alloc\",\"id\":{k},\"size\":1024}}\n",
            2 * k
        ));
        s.push_str(&format!(
            "{{\"t\":{},\"op\":\"free\",\"id\":{k}}}\n",
            2 * k + 1
        ));
    }
    std::fs::write(&p, s).unwrap();
    let v = diff_json_paths(&p, &p, &[]);
    assert_eq!(v["parity"]["verdict"], "cannot_tell");
    for l in ["parameters", "optimizer_state", "inputs", "steps", "phases"] {
        assert_eq!(line(&v, l)["state"], "unknown", "{l}");
    }
    assert!(line(&v, "parameters")["a"]["count"].is_null());
    assert!(line(&v, "parameters")["a"]["bytes"].is_null());
    assert!(line(&v, "optimizer_state")["a"]["bytes"].is_null());
    assert!(line(&v, "inputs")["a"]["source"].is_null());
    assert!(line(&v, "phases")["a"]["forward"].is_null());
    assert_eq!(v["parity"]["missing"].as_array().unwrap().len(), 5);
    assert!(
        v["reserved_peak"]["a"].is_null(),
        "no segments: unavailable, not 0"
    );
    assert!(v["step_time"]["a"].is_null(), "a seq clock has no time");
    assert_eq!(v["boundary"]["a"]["kind"], "cannot_tell");
    // --require-parity does not pass what it cannot check: exit 2, the report still printed.
    let out = memtide()
        .args(["diff", "--require-parity"])
        .arg(&p)
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not checkable: cannot tell"), "{err}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("parity           cannot tell"));
    // The same in JSON: the document, then exit 2.
    let out = memtide()
        .args(["diff", "--require-parity", "--json"])
        .arg(&p)
        .arg(&p)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["parity"]["verdict"], "cannot_tell");
}

#[test]
fn markdown_carries_the_parity_and_the_cost() {
    let out = memtide()
        .args(["diff", "--markdown"])
        .arg(fixture("base"))
        .arg(fixture("checkpointed"))
        .output()
        .unwrap();
    let md = String::from_utf8(out.stdout).unwrap();
    assert!(md.contains("**Parity: same work**"), "{md}");
    assert!(
        md.contains("| inputs | same: 1 × 4.000 MiB per step |"),
        "{md}"
    );
    assert!(
        md.contains("| peak reserved | 1.250 GiB | 1.000 GiB | −256.0 MiB (−20.0 %) |"),
        "{md}"
    );
    assert!(md.contains("- B adds activation checkpointing"), "{md}");
}

fn gpu(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/gpu-h200")
        .join(name)
}

/// Real snapshots (3 Adam steps, no step marks: updates end at each `Optimizer.step`): fp32
/// against bf16 autocast of the same MLP is the same work; the autocast casts show in the C++
/// frames. The MLP against the transformer block is a different model and batch.
#[test]
fn real_snapshots_from_a_gpu() {
    let v = diff_json_paths(
        &gpu("train_mlp_fp32_default.pickle"),
        &gpu("train_mlp_bf16_default.pickle"),
        &["--cpp-frames"],
    );
    assert_eq!(v["parity"]["verdict"], "same_work", "{}", v["parity"]);
    assert_eq!(line(&v, "steps")["a"]["by"], "optimizer_steps");
    assert_eq!(line(&v, "steps")["a"]["count"], 3);
    // The MLP's batch: torch.randn(512, 2048) fp32 = 4 MiB per step.
    assert_eq!(
        line(&v, "inputs")["a"]["per_step"][0]["sizes"],
        serde_json::json!([4 * MIB])
    );
    assert_eq!(v["boundary"]["a"]["kind"], "full_update");
    assert_eq!(v["boundary"]["a"]["full_updates"], 2);
    // Adam's moments of 2048×8192 + 8192 + 8192×2048 + 2048 weights, fp32, twice.
    let params: i64 = 2048 * 8192 + 8192 + 8192 * 2048 + 2048;
    assert_eq!(line(&v, "optimizer_state")["a"]["bytes"], 2 * 4 * params);
    assert_eq!(v["methods"][0]["method"], "mixed_precision");
    let v = diff_json_paths(
        &gpu("train_mlp_fp32_default.pickle"),
        &gpu("train_block_fp32_default.pickle"),
        &[],
    );
    assert_eq!(
        v["parity"]["differs"],
        serde_json::json!(["parameters", "optimizer_state", "inputs"])
    );
    // The block's batch: torch.randn(16, 256, 1024) fp32 = 16 MiB.
    assert_eq!(
        line(&v, "inputs")["b"]["per_step"][0]["sizes"],
        serde_json::json!([16 * MIB])
    );
}

/// The diff screen at 80×24 names the verdict on its first row and the reserved and
/// step-time differences after the peaks (insta snapshot).
#[test]
fn the_diff_screen_shows_the_verdict_at_80x24() {
    use memtide::tui::app::App;
    use memtide::tui::testing::Harness;
    use memtide::tui::theme::Theme;
    let app = App::new_diff(
        fixture("base"),
        fixture("seq2x"),
        Default::default(),
        Theme::default(),
        false,
    );
    let h = Harness::with_app(app, 80, 24);
    let f = h.app.diff().and_then(|d| d.fair.as_ref()).expect("fair");
    assert_eq!(f.parity.differs, ["inputs"]);
    let screen = h.screen();
    assert!(
        screen.lines().next().unwrap().contains("different work"),
        "{screen}"
    );
    insta::assert_snapshot!(screen);
    let app = App::new_diff(
        fixture("base"),
        fixture("checkpointed"),
        Default::default(),
        Theme::default(),
        false,
    );
    let h = Harness::with_app(app, 120, 40);
    let row1 = h.screen().lines().nth(1).unwrap().to_string();
    assert!(
        row1.contains("reserved −256.0 MiB · step time +25.0 %"),
        "{row1}"
    );
}

#[test]
fn summary_json_carries_the_same_boundary_object_as_each_side_of_diff() {
    // README: base is a full update after the state (2 of 3 steps, 256 MiB lazily in
    // step 0); forward-only shows no backward or optimizer step in its 3 steps; cut ends
    // inside its last step.
    let d = diff_json("base", "forward-only");
    let base = summary_json(&fixture("base"));
    assert_eq!(base["boundary"], d["boundary"]["a"]);
    assert_eq!(base["boundary"]["kind"], "full_update");
    assert_eq!(base["boundary"]["full_updates"], 2);
    assert_eq!(base["boundary"]["lazy_state"]["bytes"], 256 * MIB);
    let fwd = summary_json(&fixture("forward-only"));
    assert_eq!(fwd["boundary"], d["boundary"]["b"]);
    assert_eq!(fwd["boundary"]["kind"], "forward_only");
    assert_eq!(fwd["boundary"]["lazy_state"], Value::Null);
    let cut = summary_json(&fixture("cut"));
    assert_eq!(
        cut["boundary"]["cut"]["missing"],
        serde_json::json!(["backward", "optimizer"])
    );
}

#[test]
fn summary_json_boundary_is_null_when_the_trace_holds_no_allocation() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("samples-only.jsonl");
    std::fs::write(
        &p,
        concat!(
            "{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\"}\n",
            "{\"t\":1,\"op\":\"sample\",\"used\":1048576,\"scope\":\"process\"}\n",
            "{\"t\":2,\"op\":\"sample\",\"used\":2097152,\"scope\":\"process\"}\n",
        ),
    )
    .unwrap();
    let v = summary_json(&p);
    assert!(v.as_object().unwrap().contains_key("boundary"));
    assert_eq!(v["boundary"], Value::Null);
}

/// `f` on the diff screen opens the fair-comparison panel: every parity line, both
/// boundaries, the boundary warning and the bought/cost table, wrapped to 80 columns and
/// scrolled with `j`/`k`; `f` or Esc closes it; `?` lists the key (insta snapshot at 80×24).
#[test]
fn f_opens_the_fair_comparison_panel_at_80x24() {
    use memtide::tui::app::App;
    use memtide::tui::testing::Harness;
    use memtide::tui::theme::Theme;
    let app = App::new_diff(
        fixture("base"),
        fixture("forward-only"),
        Default::default(),
        Theme::default(),
        false,
    );
    let mut h = Harness::with_app(app, 80, 24);
    assert!(!h.screen().contains("boundary A"));
    h.press("f");
    let screen = h.screen();
    // README: forward-only differs in optimizer state and phases; its boundary is
    // forward-only; the windows differ.
    for want in [
        "fair comparison",
        "parity           different work: optimizer state, phases differ",
        "  parameters      same: 33,554,432 parameters, 128.0 MiB",
        "  optimizer state differs: A 256.0 MiB vs B none",
        "  inputs          same: 1 × 4.000 MiB per step",
        "  steps           same: 3 steps",
        "boundary A       full update after the optimizer state exists: 2 of 3 steps;",
        "boundary B       forward-only: no backward or optimizer step in 3 steps",
        "warning: the runs measured different windows",
    ] {
        assert!(screen.contains(want), "{want}\n{screen}");
    }
    insta::assert_snapshot!(screen);
    // The rest (the bought/cost table, the methods) is below: j scrolls to it.
    h.press("jjjjjjjjjjjj");
    let scrolled = h.screen();
    for want in [
        "peak allocated   1.035 GiB    388.0 MiB   −672.0 MiB (−63.4 %)",
        "peak reserved    1.250 GiB    1.250 GiB          0 B (+0.0 %)",
        "methods          none recognised",
    ] {
        assert!(scrolled.contains(want), "{want}\n{scrolled}");
    }
    let d = h.app.diff().unwrap();
    let max = d.fair_scroll;
    assert!(max > 0);
    h.press("j");
    assert_eq!(h.app.diff().unwrap().fair_scroll, max, "clamped at the end");
    h.press("k");
    assert_eq!(h.app.diff().unwrap().fair_scroll, max - 1);
    h.press("<Esc>");
    assert!(!h.app.diff().unwrap().fair_open);
    assert!(!h.screen().contains("boundary A"));
    h.press("f");
    assert!(h.app.diff().unwrap().fair_open);
    h.press("f");
    assert!(!h.app.diff().unwrap().fair_open);
    h.press("?");
    let help = h.screen();
    assert!(help.contains("fair comparison: parity lines"), "{help}");
}

/// Offloading named by no frame (README `offload-copies`): the staging buffers are copies
/// made by `aten::_to_copy` under a backward node, so the trace itself shows the method.
#[test]
fn offloading_is_recognised_from_copies_back_onto_the_device_in_backward() {
    let v = diff_json("base", "offload-copies");
    assert_eq!(v["parity"]["verdict"], "same_work");
    assert_eq!(v["b"]["peak"]["bytes"], 804 * MIB);
    let m = v["methods"].as_array().unwrap();
    assert_eq!(m.len(), 1, "{m:?}");
    assert_eq!(m[0]["method"], "offloading");
    assert!(m[0]["a"].is_null());
    let b = &m[0]["b"];
    assert_eq!(b["allocations"], 6);
    assert_eq!(b["bytes"], 6 * 256 * MIB);
    assert_eq!(
        b["example"],
        "aten::_to_copy during backward (a copy onto the device)"
    );
    assert!(diff_text("base", "offload-copies").contains(
        "B adds offloading (6 allocations, 1.500 GiB, e.g. aten::_to_copy during backward (a copy onto the device))"
    ));
    // The base run copies nothing back: no method on either side against itself.
    let v = diff_json("base", "base");
    assert_eq!(v["methods"], serde_json::json!([]));
}

/// A real `save_on_cpu` run (H200, `tests/data/gpu-h200/fair`): the trace names no offloading,
/// but its saved tensors come back onto the device through `aten::_to_copy` in backward —
/// by hand 20 per step, 186 MiB (see that README), 60 allocations and 558 MiB over its 3
/// steps; the plain run copies nothing back.
#[test]
fn a_real_save_on_cpu_trace_shows_offloading_by_its_copies_back() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/gpu-h200/fair");
    let v = diff_json_paths(
        &dir.join("kineto_base.pt.trace.json.gz"),
        &dir.join("kineto_save_on_cpu.pt.trace.json.gz"),
        &[],
    );
    let m = v["methods"].as_array().unwrap();
    assert_eq!(m.len(), 1, "{m:?}");
    assert_eq!(m[0]["method"], "offloading");
    assert!(m[0]["a"].is_null(), "the plain run copies nothing back");
    assert_eq!(m[0]["b"]["allocations"], 60);
    assert_eq!(m[0]["b"]["bytes"], 558 * MIB);
    assert_eq!(line(&v, "steps")["state"], "same");
    assert_eq!(
        line(&v, "inputs")["a"]["per_step"][0]["sizes"],
        serde_json::json!([2 * MIB])
    );
}

/// In a diff opened from the ranks overview, Esc closes the fair-comparison panel first,
/// then goes back to the overview.
#[test]
fn esc_in_a_ranks_diff_closes_the_fair_panel_before_going_back() {
    use memtide::tui::testing::Harness;
    let mut h = Harness::open_ranks(&[PathBuf::from("tests/fixtures/ranks")], 100, 30);
    h.press(" jj d"); // ranks 0 and 2, then their diff
    assert!(h.app.diff().is_some_and(|d| d.fair.is_some()));
    h.press("f");
    assert!(h.app.diff().unwrap().fair_open);
    h.press("<Esc>");
    let d = h.app.diff().expect("still the diff screen");
    assert!(!d.fair_open);
    h.press("<Esc>");
    assert!(h.app.ranks().is_some(), "then back to the overview");
}

/// Inputs that carry no label (issue 50): snapshots whose categories are inferred, the batch
/// made before the recording began, so no allocation names the inputs. A checkpointed twin
/// (each layer's activation made in the forward as without checkpointing, then freed under
/// the checkpoint) is the same work from the evidence: the first forward allocates the same
/// first and largest sizes (256 MiB, tools/gen_fair_fixtures.py). A twin with a doubled
/// sequence (512 MiB) cannot be told: the evidence disagrees, and a difference in what the
/// forward allocates may be the method's own, so it is said, not called different work.
#[test]
fn unlabelled_inputs_are_judged_from_the_first_forward() {
    let v = diff_json_paths(
        &root().join("tests/fixtures/fair/unlabelled.snapshot.json"),
        &root().join("tests/fixtures/fair/unlabelled-checkpointed.snapshot.json"),
        &[],
    );
    let p = &v["parity"];
    assert_eq!(p["verdict"], "same_work", "{p}");
    let words = p["words"].as_str().unwrap_or("");
    assert!(
        words.starts_with("same work (inferred: inputs from evidence: the first forward allocates 256.0 MiB first and 256.0 MiB at most in each"),
        "{words}"
    );
    assert_eq!(line(&v, "inputs")["state"], "same");
    // The parameters and Adam's state were found by what they are (no category recorded).
    assert_eq!(line(&v, "parameters")["state"], "same");
    assert_eq!(line(&v, "optimizer_state")["state"], "same");

    let v = diff_json_paths(
        &root().join("tests/fixtures/fair/unlabelled.snapshot.json"),
        &root().join("tests/fixtures/fair/unlabelled-seq2x.snapshot.json"),
        &[],
    );
    let p = &v["parity"];
    assert_eq!(p["verdict"], "cannot_tell", "{p}");
    let inputs = line(&v, "inputs");
    assert_eq!(inputs["state"], "unknown");
    assert!(
        inputs["words"].as_str().is_some_and(|w| w.contains(
            "the evidence disagrees: the first forward allocates A 256.0 MiB, 256.0 MiB vs B 512.0 MiB, 512.0 MiB"
        )),
        "{inputs}"
    );
}

/// A run with no step marks and no optimizer step is one region: its boundary says "the
/// whole run" (it read "no backward or optimizer step in no step marks and no optimizer
/// steps" on 48 of 95 published snapshots, and "no optimizer step: forward and backward in
/// … , no optimizer step"); a run of one step says so.
#[test]
fn a_run_without_steps_is_named_the_whole_run() {
    let root = root();
    for (file, kind, words) in [
        (
            "tests/fixtures/snapshot/expandable.pickle",
            "forward_only",
            "forward-only: no backward or optimizer step in the whole run (no step marks)",
        ),
        (
            "tests/fixtures/stacks/deepspeed_zero3.json",
            "no_optimizer_step",
            "no optimizer step: only forward and backward ran in the whole run (no step marks)",
        ),
        // One step: not "in 1 steps".
        (
            "tests/fixtures/tui/design.jsonl",
            "forward_only",
            "forward-only: no backward or optimizer step in its one step",
        ),
    ] {
        let v = summary_json(&root.join(file));
        assert_eq!(v["boundary"]["kind"], kind, "{file}");
        assert_eq!(v["boundary"]["words"], words, "{file}");
    }
}

/// A snapshot whose history holds a marker alone (every block predates the recording), or
/// that has no history, says it is one instant, not that it records no stacks: its blocks
/// have them (two published snapshots read "the file records no stacks, phase marks or
/// categories"), and a dump without history was called forward-only from its blocks' stacks,
/// though an instant cannot show that no backward ran.
#[test]
fn an_instant_with_stacks_says_it_is_one_instant() {
    let doc = serde_json::json!({
        "segments": [{"device": 0, "address": 4096, "total_size": 2 << 20,
            "allocated_size": 1 << 20, "active_size": 1 << 20, "requested_size": 1 << 20,
            "stream": 0, "segment_type": "large", "frames": [],
            "blocks": [
                {"address": 4096, "size": 1 << 20, "requested_size": 1 << 20,
                 "state": "active_allocated",
                 "frames": [{"filename": "/w/model.py", "line": 7, "name": "forward"}]},
                {"address": 4096 + (1 << 20), "size": 1 << 20, "requested_size": 0,
                 "state": "inactive", "frames": []}]}],
        "device_traces": [[{"action": "snapshot", "addr": 0, "size": 0, "stream": 0,
            "time_us": 9, "frames": []}]]
    });
    let dir = tempfile::tempdir().expect("tmp");
    let f = dir.path().join("instant.json");
    std::fs::write(&f, doc.to_string()).expect("write");
    let without = dir.path().join("no_history.json");
    let mut doc = doc;
    doc["device_traces"] = serde_json::json!([]);
    std::fs::write(&without, doc.to_string()).expect("write");
    for f in [f, without] {
        let v = summary_json(&f);
        assert_eq!(v["boundary"]["kind"], "cannot_tell", "{v}");
        assert_eq!(
            v["boundary"]["words"],
            "cannot tell: the file is one instant (no allocation made while it recorded): which phases ran is unknown"
        );
    }
}
