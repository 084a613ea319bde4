//! Right answers on real-shaped runs (issue 37): the band a person reading the stack would
//! choose, growth only over complete steps, memory from before the recording, user frames
//! of backward allocations, and doubtful results.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn memtide(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_memtide"))
        .args(args)
        .current_dir(root())
        .output()
        .expect("run memtide");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A scratch directory of this test binary (inside the target directory).
fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("right_answers");
    std::fs::create_dir_all(&d).expect("scratch dir");
    d.join(name)
}

// ------------------------------------------------------------------ growth over complete steps

/// The bundled OOM snapshot dies inside ProfilerStep#2: its two post-warm-up baselines are
/// both 8.250 GiB, so the baseline did not grow; the end of the trace (14.75 GiB, mid-step)
/// is no step boundary.
#[test]
fn oom_mid_step_is_no_growth() {
    let (code, out, err) = memtide(&[
        "check",
        "sample-traces/cuda-oom.pickle",
        "--max-growth",
        "10%",
    ]);
    assert!(
        out.contains("ok: step baseline growth +0.00% is within --max-growth 10.00%"),
        "{out}{err}"
    );
    assert!(!out.contains("FAIL: step baseline"), "{out}");
    // The run did run out of memory: that line still fails the gate (exit 1), on its own.
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("FAIL: out of memory"), "{out}");
    let (_, s, _) = memtide(&["summary", "sample-traces/cuda-oom.pickle"]);
    assert!(
        s.contains("baseline after warm-up: +0 B (+0.0 %) (over complete steps: the trace ends inside ProfilerStep#2"),
        "{s}"
    );
}

/// A run that truly leaks 1 GiB per step and then dies of OOM mid-step still fails, on its
/// complete steps alone (boundaries 2 GiB → 3 GiB: +50 %).
#[test]
fn true_leak_ending_in_oom_still_fails() {
    let gib = 1u64 << 30;
    let mut l = vec![r#"{"memtide":1,"device":"cuda:0","clock":"us"}"#.to_string()];
    l.push(format!(
        r#"{{"t":1,"op":"alloc","id":1,"size":{gib},"cat":"param"}}"#
    ));
    let mut t = 10;
    for step in 0..4u64 {
        l.push(format!(
            r#"{{"t":{t},"op":"mark","name":"step {step}","kind":"step"}}"#
        ));
        // an activation freed within the step, and a leaked GiB kept forever
        l.push(format!(
            r#"{{"t":{},"op":"alloc","id":{},"size":{gib},"cat":"activation"}}"#,
            t + 1,
            100 + step
        ));
        l.push(format!(r#"{{"t":{},"op":"alloc","id":{},"size":{gib},"cat":"activation","stack":["train.py:9 train_step"]}}"#, t + 2, 200 + step));
        if step < 3 {
            l.push(format!(
                r#"{{"t":{},"op":"free","id":{}}}"#,
                t + 3,
                100 + step
            ));
        } else {
            l.push(format!(r#"{{"t":{},"op":"oom","size":{gib}}}"#, t + 3));
        }
        t += 10;
    }
    let p = scratch("leak_then_oom.jsonl");
    std::fs::write(&p, l.join("\n") + "\n").expect("write");
    let ps = p.to_str().expect("utf-8 path");
    let (code, out, err) = memtide(&["check", ps, "--max-growth", "10%"]);
    assert_eq!(code, 1, "{out}{err}");
    // Boundaries after warm-up: step 1 starts at 2 GiB, step 2 at 3 GiB, step 3 at 4 GiB;
    // the end (6 GiB, inside step 3) is not one: +2 GiB over 2 GiB = +100 %.
    assert!(
        out.contains("FAIL: step baseline grew by 2.000 GiB (+100.00%) after warm-up"),
        "{out}"
    );
}

/// The bundled leaking run (point step marks, no OOM: its end is a boundary) still fails.
#[test]
fn bundled_leak_still_fails() {
    let (code, out, err) = memtide(&[
        "check",
        "sample-traces/train-leak.jsonl",
        "--max-growth",
        "10%",
    ]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains("FAIL: step baseline grew by 1.000 GiB (+15.38%)"),
        "{out}"
    );
}
