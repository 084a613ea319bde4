//! `memtide check --json` agrees with the text verdict: over the bundled samples and a few
//! fixtures, with several limits, each limit passes or fails in the JSON exactly as its
//! `ok:` / `FAIL:` line says, the peak in bytes is the one the line prints, and the exit code
//! is the same (errors: exit 2 both ways, nothing on standard output with `--json`).

#![allow(clippy::unwrap_used)]

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

fn run(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_memtide"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Text and JSON of one invocation, after checking the exit codes agree.
fn both(args: &[&str]) -> Option<(i32, Vec<String>, Value)> {
    let (code, text, err) = run(args);
    let mut j = args.to_vec();
    j.push("--json");
    let (jcode, json, jerr) = run(&j);
    assert_eq!(code, jcode, "{args:?}: exit codes differ");
    if code == 2 && text.is_empty() {
        // Could not gate: the same error, no JSON.
        assert_eq!(json, "", "{args:?}");
        assert_eq!(err, jerr, "{args:?}");
        return None;
    }
    let v: Value = serde_json::from_str(&json).unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert_eq!(v["exit_code"], code, "{args:?}");
    let lines = text.lines().map(String::from).collect();
    Some((code, lines, v))
}

/// Whether one of `lines` starts with `p`.
fn has(lines: &[String], p: &str) -> bool {
    lines.iter().any(|l| l.starts_with(p))
}

/// The limit's pass/fail in the JSON, and in the text: its `ok` line starts with `ok`, its
/// `FAIL` line with `fail` and holds `fail_has`.
fn agree(args: &[&str], lines: &[String], gate: &Value, ok: &str, fail: &str) {
    agree_with(args, lines, gate, ok, fail, "")
}

fn agree_with(args: &[&str], lines: &[String], gate: &Value, ok: &str, fail: &str, fail_has: &str) {
    let o = has(lines, ok);
    let f = lines
        .iter()
        .any(|l| l.starts_with(fail) && l.contains(fail_has));
    match gate["passed"].as_bool() {
        None => assert!(!o && !f, "{args:?}: a line for an ungated limit: {lines:?}"),
        Some(false) => assert!(f && !o, "{args:?}: JSON fails {ok}: {lines:?}"),
        Some(true) => assert!(!f, "{args:?}: JSON passes {ok}: {lines:?}"),
    }
}

fn check_device(args: &[&str]) -> bool {
    let Some((code, lines, v)) = both(args) else {
        return false;
    };
    let outcome = v["outcome"].as_str().unwrap();
    assert_eq!(
        outcome,
        ["pass", "fail", "incomplete"][usize::try_from(code).unwrap()],
        "{args:?}"
    );
    if v["kind"] == "device" {
        one_device(args, &lines, &v);
        return true;
    }
    // Several devices: each gated device's lines name it after the first word.
    assert_eq!(v["kind"], "devices", "{args:?}");
    let devices = v["devices"].as_array().unwrap();
    assert!(devices.len() >= 2 || !v["unchecked"].as_array().unwrap().is_empty());
    let worst = devices
        .iter()
        .map(|d| d["outcome"].as_str().unwrap())
        .fold("pass", |a, b| {
            if a == "fail" || b == "fail" {
                "fail"
            } else {
                a
            }
        });
    if worst == "fail" {
        assert_eq!(outcome, "fail", "{args:?}");
    }
    for d in devices {
        let name = format!("{}: ", d["device"].as_str().unwrap());
        let own: Vec<String> = lines
            .iter()
            .filter_map(|l| {
                let (word, rest) = l.split_once(": ")?;
                let rest = rest.strip_prefix(&name)?;
                (!rest.starts_with("not checked")).then(|| format!("{word}: {rest}"))
            })
            .collect();
        one_device(args, &own, d);
    }
    let unchecked = lines
        .iter()
        .filter(|l| l.contains(": not checked: "))
        .count();
    assert_eq!(
        unchecked,
        v["unchecked"].as_array().unwrap().len() + v["skipped"].as_array().unwrap().len(),
        "{args:?}"
    );
    true
}

/// One device's verdict `v` against its lines.
fn one_device(args: &[&str], lines: &[String], v: &Value) {
    let outcome = v["outcome"].as_str().unwrap();
    match v["oom"]["gated"].as_bool() {
        None => assert!(
            !lines.iter().any(|l| l.contains(": out of memory at event")),
            "{args:?}"
        ),
        Some(true) => assert!(has(lines, "FAIL: out of memory at event"), "{args:?}"),
        Some(false) => assert!(has(lines, "note: out of memory at event"), "{args:?}"),
    }
    agree(
        args,
        lines,
        &v["growth"],
        "ok: step baseline",
        "FAIL: step baseline",
    );
    agree(args, lines, &v["peak"], "ok: peak", "FAIL: peak");
    if v["peak"]["passed"] == true && !has(lines, "ok: peak") {
        // The ok line is left out only when another limit failed.
        assert_eq!(outcome, "fail", "{args:?}");
    }
    if let Some(l) = lines.iter().find(|l| l.contains(": peak ")) {
        let bytes = format!("({} B)", v["peak"]["peak"]);
        assert!(l.contains(&bytes), "{args:?}: {l} lacks {bytes}");
    }
}

fn check_job(args: &[&str]) -> bool {
    let Some((code, lines, v)) = both(args) else {
        return false;
    };
    assert_eq!(
        v["outcome"],
        ["pass", "fail", "incomplete"][usize::try_from(code).unwrap()],
        "{args:?}"
    );
    match v["oom"]["gated"].as_bool() {
        None => assert!(
            !lines.iter().any(|l| l.contains("out of memory on")),
            "{args:?}"
        ),
        Some(g) => assert!(
            has(
                &lines,
                if g {
                    "FAIL: out of memory on"
                } else {
                    "note: out of memory on"
                }
            ),
            "{args:?}"
        ),
    }
    agree_with(
        args,
        &lines,
        &v["peak"],
        "ok: every rank's peak",
        "FAIL: ",
        " over --max-peak ",
    );
    agree(
        args,
        &lines,
        &v["imbalance"],
        "ok: rank peaks differ",
        "FAIL: rank peaks differ",
    );
    agree(
        args,
        &lines,
        &v["growth"],
        "ok: every rank's step",
        "FAIL: step baseline grew",
    );
    let unchecked = lines
        .iter()
        .filter(|l| {
            l.starts_with("error (exit 2")
                || (l.starts_with("note: ")
                    && !l.contains("out of memory on")
                    && !l.starts_with("note: skipped: "))
        })
        .count();
    assert_eq!(
        unchecked,
        v["unchecked"].as_array().unwrap().len(),
        "{args:?}"
    );
    // Each skipped file is in the JSON; the text names each (one line per kind of reason).
    let skipped = v["skipped"].as_array().unwrap();
    for s in skipped {
        let file = s["file"].as_str().unwrap();
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with("note: skipped: ") && l.contains(file)),
            "{args:?}: {file}"
        );
    }
    true
}

const FLAGS: &[&[&str]] = &[
    &["--max-peak", "1GiB"],
    &["--max-peak", "9GiB"],
    &["--max-peak", "100TiB"],
    &["--max-growth", "1%"],
    &["--max-growth", "50%"],
    &["--max-peak", "12GiB", "--max-growth", "1%"],
    &["--max-peak", "16GiB", "--capacity", "16GiB"],
    &["--max-peak", "1KiB", "--window", "steady"],
    &["--max-peak", "1B", "--allow-warnings"],
];

#[test]
fn check_json_agrees_with_the_text_on_the_samples_and_fixtures() {
    let mut files: Vec<String> =
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces"))
            .unwrap()
            .map(|e| format!("sample-traces/{}", e.unwrap().file_name().to_string_lossy()))
            .filter(|f| !f.ends_with(".md"))
            .collect();
    files.sort();
    files.extend(
        [
            "tests/fixtures/oom/oom_fragmented.pickle",
            "tests/fixtures/oom/oom_expandable_saves.pickle",
            "tests/fixtures/oom/truncated_history.pickle",
            "tests/fixtures/ranks/rank4.pickle",
            "tests/fixtures/ranks/node1_worker.pt.trace.json",
            "tests/fixtures/kineto/unsorted.json",
            "tests/fixtures/snapshot/two_devices_p4.pickle",
        ]
        .map(String::from),
    );
    let mut gated = 0;
    for f in &files {
        for flags in FLAGS {
            let mut args = vec!["check", f.as_str()];
            args.extend_from_slice(flags);
            gated += usize::from(check_device(&args));
        }
    }
    // Most of these are gated (the rest are refused the same way with and without --json).
    assert!(gated >= files.len() * FLAGS.len() / 2, "only {gated} gated");
}

#[test]
fn check_dir_json_agrees_with_the_text() {
    let sets: &[&[&str]] = &[
        &["--max-peak", "1GiB", "--max-imbalance", "10%"],
        &["--max-peak", "90MiB"],
        &["--max-imbalance", "1000%"],
        &["--max-growth", "1%"],
        &["--max-peak", "1GiB", "--allow-warnings"],
    ];
    let mut gated = 0;
    for dir in ["tests/fixtures/ranks", "sample-traces"] {
        for flags in sets {
            let mut args = vec!["check", dir, "--jobs", "1"];
            args.extend_from_slice(flags);
            gated += usize::from(check_job(&args));
        }
    }
    assert!(gated >= 6, "only {gated} gated");
}

#[test]
fn check_json_with_report_to_standard_output_is_refused() {
    let (code, out, err) = run(&[
        "check",
        "sample-traces/train-3steps.jsonl",
        "--max-peak",
        "1GiB",
        "--json",
        "--report",
        "-",
    ]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(err.contains("--json and --report -"), "{err}");
}

/// Every key of the `--json` objects (top level and one level down) is named in
/// docs/ci-gates.md.
#[test]
fn check_json_keys_are_documented() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ci-gates.md"))
            .unwrap();
    let runs: &[&[&str]] = &[
        &[
            "check",
            "sample-traces/train-3steps.jsonl",
            "--max-peak",
            "9GiB",
            "--window",
            "step:1",
            "--max-growth",
            "1%",
        ],
        &[
            "check",
            "sample-traces/cuda-oom.pickle",
            "--max-peak",
            "1GiB",
        ],
        &[
            "check",
            "tests/fixtures/snapshot/two_devices_p4.pickle",
            "--max-peak",
            "40MiB",
        ],
        &[
            "check",
            "tests/fixtures/ranks",
            "--max-peak",
            "90MiB",
            "--max-imbalance",
            "10%",
            "--jobs",
            "1",
        ],
    ];
    let mut seen = 0;
    for args in runs {
        let mut a = args.to_vec();
        a.push("--json");
        let (_, out, _) = run(&a);
        let v: Value = serde_json::from_str(&out).unwrap();
        let mut keys: Vec<String> = Vec::new();
        for (k, x) in v.as_object().unwrap() {
            keys.push(k.clone());
            let inner = match x {
                Value::Array(a) => a.first().cloned().unwrap_or(Value::Null),
                other => other.clone(),
            };
            if let Some(o) = inner.as_object() {
                keys.extend(o.keys().cloned());
            }
        }
        for k in keys {
            seen += 1;
            assert!(
                doc.contains(&format!("`{k}`")),
                "docs/ci-gates.md does not name `{k}`"
            );
        }
    }
    assert!(seen > 40, "{seen} keys");
}
