//! `param_count` in a JSONL header (written by the recorder): a real recorder run
//! (tests/fixtures/jsonl/recorder_adam.jsonl, made by tools/gen_recorder_fixture.py) gives
//! bytes per parameter in `summary --json`, the text and the Markdown report. Every expected
//! figure comes from the model's definition, by hand (see the generator's docstring).

use assert_cmd::Command;
use std::path::PathBuf;

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/jsonl/recorder_adam.jsonl")
}

fn run(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_memtide"))
        .args(args)
        .arg(fixture())
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).expect("utf-8")
}

/// Linear(64, 32) + Linear(32, 8): weights and biases.
const PARAMS: u64 = 64 * 32 + 32 + 32 * 8 + 8;
/// Adam keeps one 0-d fp32 `step` tensor per parameter tensor (4 tensors).
const STEP_BYTES: u64 = 4 * 4;

#[test]
fn recorder_header_param_count_gives_bytes_per_param() {
    assert_eq!(PARAMS, 2344);
    let v: serde_json::Value = serde_json::from_str(&run(&["summary", "--json"])).expect("json");
    let p = &v["peak"]["persistent"];
    assert_eq!(p["param_count"], PARAMS, "{p}");
    assert_eq!(p["params"], 4 * PARAMS);
    assert_eq!(p["grads"], 4 * PARAMS);
    assert_eq!(p["optimizer"], 8 * PARAMS + STEP_BYTES);
    assert_eq!(p["source"], "recorded");
    assert_eq!(p["model"], "fp32 Adam: 16");
    let bpp = p["bytes_per_param"].as_f64().expect("bytes per param");
    let want = (16 * PARAMS + STEP_BYTES) as f64 / PARAMS as f64;
    assert!((bpp - want).abs() < 1e-12, "{bpp} vs {want}");
    let text = run(&["summary"]);
    assert!(
        text.contains("→ 16.0 B/param × 2,344 params (fp32 Adam: 16) · recorded"),
        "{text}"
    );
    let md = run(&["summary", "--markdown"]);
    assert!(
        md.contains("16.0 B/param × 2,344 parameters; model: fp32 Adam: 16."),
        "{md}"
    );
}

#[test]
fn a_header_without_param_count_leaves_it_unknown() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("no_count.jsonl");
    let text = std::fs::read_to_string(fixture()).expect("fixture");
    let (header, rest) = text.split_once('\n').expect("a header line");
    let mut h: serde_json::Value = serde_json::from_str(header).expect("header json");
    h.as_object_mut().expect("object").remove("param_count");
    std::fs::write(&p, format!("{h}\n{rest}")).expect("write");
    let o = Command::new(env!("CARGO_BIN_EXE_memtide"))
        .args(["summary", "--json"])
        .arg(&p)
        .output()
        .expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let pe = &v["peak"]["persistent"];
    assert!(
        pe["param_count"].is_null() && pe["bytes_per_param"].is_null(),
        "{pe}"
    );
    assert_eq!(pe["params"], 4 * PARAMS, "the split stays known");
}

#[test]
fn a_bad_param_count_is_refused_at_the_header() {
    let dir = tempfile::tempdir().expect("tempdir");
    for bad in ["-3", "1.5", "\"many\"", "[1]"] {
        let p = dir.path().join("bad.jsonl");
        std::fs::write(
            &p,
            format!("{{\"memtide\":1,\"device\":\"cpu\",\"param_count\":{bad}}}\n{{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":4,\"cat\":\"param\"}}\n"),
        )
        .expect("write");
        let o = Command::new(env!("CARGO_BIN_EXE_memtide"))
            .args(["summary", "--json"])
            .arg(&p)
            .output()
            .expect("runs");
        assert_eq!(o.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("param_count must be a whole number"),
            "{bad}: {err}"
        );
        assert!(err.contains("line 1"), "{bad}: {err}");
    }
}

#[test]
fn diff_shows_the_persistent_split_and_bytes_per_param_of_both() {
    let f = fixture();
    let o = Command::new(env!("CARGO_BIN_EXE_memtide"))
        .args(["diff", "--json"])
        .arg(&f)
        .arg(&f)
        .output()
        .expect("runs");
    assert!(o.status.success());
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    for k in ["a", "b"] {
        let p = &v[k]["persistent"];
        assert_eq!(p["param_count"], PARAMS, "{p}");
        assert_eq!(p["optimizer"], 8 * PARAMS + STEP_BYTES);
    }
    let o = Command::new(env!("CARGO_BIN_EXE_memtide"))
        .arg("diff")
        .arg(&f)
        .arg(&f)
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&o.stdout);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("per param"))
        .expect("a per-param row");
    assert_eq!(line.matches("16.0 B/param").count(), 2, "{line}");
    let md = Command::new(env!("CARGO_BIN_EXE_memtide"))
        .args(["diff", "--markdown"])
        .arg(&f)
        .arg(&f)
        .output()
        .expect("runs");
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.contains("| B/param | 16.0 | 16.0 | - |"), "{md}");
}
