//! The binary's headless commands: exit codes, output shape, clear errors.

use predicates::prelude::*;
use std::path::Path;

use crate::support::repo::memtide;

fn sample(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sample-traces")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn summary_json_has_every_schema_key() {
    let out = memtide()
        .args(["summary", &sample("train-3steps.jsonl"), "--json"])
        .output()
        .expect("runs");
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    for k in [
        "source",
        "format",
        "devices",
        "events",
        "axis",
        "peak",
        "reserved_peak",
        "final_bytes",
        "unmatched_frees",
        "warnings",
    ] {
        assert!(v.get(k).is_some(), "missing key {k}");
    }
    let p = &v["peak"];
    for k in [
        "bytes",
        "index",
        "time_us",
        "mark",
        "bands",
        "bands_source",
        "live",
    ] {
        assert!(p.get(k).is_some(), "missing peak.{k}");
    }
    for b in [
        "persistent",
        "activation",
        "workspace",
        "external",
        "unknown",
    ] {
        assert!(p["bands"][b].is_u64(), "band {b}");
    }
    let sum: u64 = [
        "persistent",
        "activation",
        "workspace",
        "external",
        "unknown",
    ]
    .iter()
    .map(|b| p["bands"][b].as_u64().unwrap_or(0))
    .sum();
    assert_eq!(
        sum,
        p["bytes"].as_u64().expect("bytes"),
        "peak.bytes is the sum of the bands"
    );
    assert_eq!(v["format"], "jsonl");
    assert_eq!(v["axis"], "event");
    assert_eq!(p["bands_source"], "recorded");
    assert!(p["live"].as_array().expect("live").len() <= 20);
    let first = &p["live"][0];
    for k in ["bytes", "band", "name", "frame", "views"] {
        assert!(first.get(k).is_some(), "missing live[0].{k}");
    }
}

#[test]
fn summary_text_is_readable() {
    memtide()
        .args(["summary", &sample("train-3steps.jsonl")])
        .assert()
        .success()
        .stdout(predicate::str::contains("peak"))
        .stdout(predicate::str::contains("GiB"))
        .stdout(predicate::str::contains(
            "a 64.00 MiB view keeps 1.000 GiB alive",
        ))
        .stdout(predicate::str::contains("step 1"));
}

#[test]
fn check_gates_on_the_peak() {
    // The plain sample peaks at 9536 MiB (sample-traces/README.md).
    memtide()
        .args([
            "check",
            &sample("train-3steps.jsonl"),
            "--max-peak",
            "10GiB",
        ])
        .assert()
        .code(0)
        .stdout(predicate::str::starts_with("ok:"));
    memtide()
        .args(["check", &sample("train-3steps.jsonl"), "--max-peak", "9GiB"])
        .assert()
        .code(1)
        .stdout(predicate::str::contains("FAIL: peak 9.312 GiB"))
        .stdout(predicate::str::contains("attn.scores"));
    memtide()
        .args([
            "check",
            &sample("train-3steps.jsonl"),
            "--max-peak",
            "9999220736B",
        ])
        .assert()
        .code(0);
    memtide()
        .args([
            "check",
            &sample("train-3steps.jsonl"),
            "--max-peak",
            "12 parsecs",
        ])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("invalid size"));
}

#[test]
fn bad_files_exit_nonzero_with_a_clear_message() {
    let dir = tempfile::tempdir().expect("tmp");
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"memtide\":1}\n{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":-5}\n",
    )
    .expect("write");
    memtide()
        .args(["summary", &bad.display().to_string()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("bad.jsonl"))
        .stderr(predicate::str::contains("line 2"));
    let missing = memtide()
        .args(["summary", "/nonexistent/trace.jsonl"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("cannot read"));
    // The OS's reason is said once (an I/O error is not also printed as its own cause).
    let err = String::from_utf8_lossy(&missing.get_output().stderr).into_owned();
    assert_eq!(err.matches("os error 2").count(), 1, "{err}");
    let header_only = dir.path().join("h.jsonl");
    std::fs::write(&header_only, "{\"memtide\":1}\n").expect("write");
    memtide()
        .args(["summary", &header_only.display().to_string()])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no events"));
}

#[test]
fn check_refuses_lenient_skips_unless_warnings_are_allowed() {
    // A bad line skipped by --lenient is missing from every figure: check cannot say ok.
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("skip.jsonl");
    std::fs::write(
        &p,
        "{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\"}\n{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":64}\n{\"t\":2,\"op\":\"alloc\",\"id\":\n{\"t\":3,\"op\":\"free\",\"id\":1}\n",
    )
    .expect("write");
    let f = p.display().to_string();
    let out = memtide()
        .args(["check", &f, "--max-peak", "1GiB", "--lenient"])
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("skipped 1 bad line"), "{err}");
    memtide()
        .args([
            "check",
            &f,
            "--max-peak",
            "1GiB",
            "--lenient",
            "--allow-warnings",
        ])
        .assert()
        .code(0)
        .stdout(predicate::str::starts_with("ok:"));
}

/// A peak in the initial state (before event 0) is named so by `check`, and its biggest live
/// storages are those of that state (the fixture's pre-existing weights), not after event 0.
#[test]
fn check_names_a_peak_at_start() {
    let f = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/snapshot/late_start.pickle");
    let out = memtide()
        .args(["check", "--allow-warnings", "--max-peak", "1KiB"])
        .arg(&f)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("at start (before the first event)"), "{text}");
    assert!(!text.contains("at event #0"), "{text}");
    // tools/gen_snapshots.py makes the weights in nn/modules/linear.py:109 __init__ called
    // from /workspace/train.py:70 __init__: check names the user frame.
    assert!(
        text.contains("train.py:70 __init__"),
        "the weights live from the start: {text}"
    );
}

/// A trace whose allocation name and mark carry a bidi override, a zero-width space, a tag
/// character, a line separator, a newline, DEL and a C1 control.
fn spoofing_trace(dir: &Path) -> std::path::PathBuf {
    let name = "evil\u{202e}gpj.exe\u{200b}\u{e0041}\u{2028}\nok: forged\u{7f}\u{85}";
    let header = r#"{"memtide":1,"device":"cuda:0","clock":"us"}"#;
    let alloc = serde_json::json!({"t": 1, "op": "alloc", "id": 1, "size": 4096, "cat": "activation", "name": name, "stack": [format!("train.py:3 {name}")]});
    let mark = serde_json::json!({"t": 2, "op": "mark", "name": name, "kind": "phase"});
    let p = dir.join("spoof.jsonl");
    std::fs::write(&p, format!("{header}\n{alloc}\n{mark}\n")).expect("write");
    p
}

/// Characters that disguise or break text never reach standard output raw.
fn assert_no_spoofing_chars(text: &str) {
    for c in [
        '\u{202e}',
        '\u{200b}',
        '\u{e0041}',
        '\u{2028}',
        '\u{7f}',
        '\u{85}',
        '\u{1b}',
    ] {
        assert!(
            !text.contains(c),
            "U+{:04X} reached the output raw:\n{text}",
            u32::from(c)
        );
    }
}

#[test]
fn text_output_escapes_format_characters_and_newlines_in_names() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = spoofing_trace(dir.path());
    for args in [
        vec!["summary"],
        vec!["summary", "--markdown"],
        vec!["summary", "--tree"],
    ] {
        let out = memtide().args(&args).arg(&p).output().expect("runs");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).expect("utf-8");
        assert_no_spoofing_chars(&text);
        assert!(
            !text.lines().any(|l| l.starts_with("ok: forged")),
            "{args:?}: a name forged a line:\n{text}"
        );
        assert!(
            text.contains("\\u{202e}"),
            "{args:?}: the override is shown:\n{text}"
        );
    }
}

#[test]
fn json_output_escapes_del_c1_and_format_characters_and_reads_back_exactly() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = spoofing_trace(dir.path());
    let out = memtide()
        .args(["summary", "--json"])
        .arg(&p)
        .output()
        .expect("runs");
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).expect("utf-8");
    assert_no_spoofing_chars(&text);
    assert!(text.contains(r"\u202e") && text.contains(r"\u0085") && text.contains(r"\u007f"));
    let v: serde_json::Value = serde_json::from_str(&text).expect("json");
    let want = "evil\u{202e}gpj.exe\u{200b}\u{e0041}\u{2028}\nok: forged\u{7f}\u{85}";
    assert_eq!(v["peak"]["live"][0]["label"], want, "{text}");
}

#[test]
fn usage_errors_quote_values_terminal_safe() {
    let out = memtide()
        .args(["summary", "--jobs", "\u{1b}[2J\u{202e}\u{9b}1", "x"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).expect("utf-8");
    assert!(err.contains("--jobs"), "{err}");
    assert_no_spoofing_chars(&err);
    assert!(!err.contains('\u{9b}'), "{err}");
    // Help and version still print as clap prints them, exit 0.
    memtide().arg("--version").assert().success();
    memtide()
        .args(["summary", "--help"])
        .assert()
        .success()
        .stdout(predicate::str::contains("Usage:"));
}

#[test]
fn a_misspelled_command_gets_did_you_mean_and_a_missing_file_no_such_file() {
    let dir = tempfile::tempdir().expect("tmp");
    memtide()
        .current_dir(dir.path())
        .args(["sumary", "run.pickle"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("did you mean `memtide summary`?"));
    memtide()
        .current_dir(dir.path())
        .arg("whatfi")
        .assert()
        .code(2)
        .stderr(predicate::str::contains("did you mean `memtide whatif`?"));
    memtide()
        .current_dir(dir.path())
        .arg("nothere.pickle")
        .assert()
        .code(2)
        .stderr(predicate::str::contains(
            "cannot open nothere.pickle: no such file",
        ));
}

/// PyTorch on ROCm calls its GPUs `cuda:N`; their traces name them `hip:N`: `--device cuda:0`
/// picks `hip:0`, and says so.
#[test]
fn device_cuda_n_names_a_rocm_trace_s_hip_n() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cuda = std::fs::read_to_string(root.join("tests/fixtures/kineto/cuda.json")).expect("read");
    let amd = cuda.replace("\"Device Type\": 1", "\"Device Type\": 6");
    assert_ne!(amd, cuda);
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("amd.json");
    std::fs::write(&p, amd).expect("write");
    let out = memtide()
        .args(["summary", "--json", "--device", "cuda:0"])
        .arg(&p)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["device"], "hip:0");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--device cuda:0 taken as this file's hip:0")
    );
    memtide()
        .args(["summary", "--device", "cuda:7"])
        .arg(&p)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("no device \"cuda:7\""));
}

/// Every command's `--help` ends with examples.
#[test]
fn every_help_has_examples() {
    for cmd in [
        vec!["--help"],
        vec!["summary", "--help"],
        vec!["check", "--help"],
        vec!["replay", "--help"],
        vec!["diff", "--help"],
        vec!["lab", "--help"],
        vec!["plot", "--help"],
        vec!["whatif", "--help"],
        vec!["completions", "--help"],
        vec!["man", "--help"],
    ] {
        let out = memtide().args(&cmd).output().expect("runs");
        assert!(out.status.success(), "{cmd:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        let ex = text
            .find("Examples:")
            .unwrap_or_else(|| panic!("{cmd:?}: no examples:\n{text}"));
        assert!(text[ex..].contains("memtide "), "{cmd:?}");
    }
}

/// A newline in a rank file's name cannot forge a line of `check`'s verdict.
#[test]
fn a_rank_file_name_cannot_forge_a_verdict_line() {
    let dir = tempfile::tempdir().expect("tmp");
    let sample = std::fs::read(sample("train-3steps.jsonl")).expect("sample");
    std::fs::write(dir.path().join("rank0.jsonl"), &sample).expect("write");
    std::fs::write(
        dir.path()
            .join("rank1.jsonl\nok: every rank is under the limit"),
        &sample,
    )
    .expect("write");
    let out = memtide()
        .args(["check", "--max-peak", "1KiB"])
        .arg(dir.path())
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.lines().any(|l| l.starts_with("ok:")),
        "a file name forged a line:\n{text}"
    );
    assert!(
        text.contains("\\nok: every rank"),
        "the name is shown escaped:\n{text}"
    );
}
