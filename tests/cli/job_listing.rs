//! A job directory's files told apart (issue 50): a file that is certainly not a trace (a
//! whole pickle of a config dict or a Python object, a JSON document without a snapshot's
//! keys) is listed as skipped and never blocks `check DIR`; a damaged rank (a snapshot pickle
//! cut short) still blocks it (exit 2); `--exclude GLOB` leaves a file out by name.
//!
//! The non-trace pickles are the bytes CPython 3's `pickle.dumps` writes (copied here, not
//! made by memtide); the ranks are tests/fixtures/ranks (tools/gen_ranks.py), whose
//! `rank7.pickle` is cut short.

#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::path::{Path, PathBuf};

use crate::support::repo::memtide;

/// `pickle.dumps({"lr": 0.1})` (protocol 4).
const CONFIG_DICT: &[u8] =
    b"\x80\x04\x95\x12\x00\x00\x00\x00\x00\x00\x00}\x94\x8c\x02lr\x94G?\xb9\x99\x99\x99\x99\x99\x9as.";
/// `pickle.dumps(argparse.Namespace(lr=0.1))` (protocol 4).
const NAMESPACE: &[u8] = b"\x80\x04\x95/\x00\x00\x00\x00\x00\x00\x00\x8c\x08argparse\x94\x8c\tNamespace\x94\x93\x94)\x81\x94}\x94\x8c\x02lr\x94G?\xb9\x99\x99\x99\x99\x99\x9asb.";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/ranks")
        .join(name)
}

/// A job of ranks 0, 1 and 3 (no OOM, peaks under 60 MiB), a pickled config dict, a pickled
/// `Namespace` and a JSON config that names `segments` inside (detected as a snapshot JSON,
/// read whole, no snapshot key at the top); `damaged`: rank7.pickle too (cut short).
fn job(damaged: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for r in ["rank0.pickle", "rank1.pickle", "rank3.pickle"] {
        std::fs::copy(fixture(r), dir.path().join(r)).unwrap();
    }
    if damaged {
        std::fs::copy(fixture("rank7.pickle"), dir.path().join("rank7.pickle")).unwrap();
    }
    std::fs::write(dir.path().join("notes.pickle"), CONFIG_DICT).unwrap();
    std::fs::write(dir.path().join("args.pickle"), NAMESPACE).unwrap();
    std::fs::write(
        dir.path().join("config.json"),
        br#"{"model": {"segments": 4}, "lr": 0.1}"#,
    )
    .unwrap();
    dir
}

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = memtide().args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn skipped_names(v: &Value) -> Vec<String> {
    let mut n: Vec<String> = v["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            Path::new(s["file"].as_str().unwrap())
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    n.sort();
    n
}

#[test]
fn files_that_are_not_traces_are_skipped_and_the_ranks_pass() {
    let dir = job(false);
    let d = dir.path().display().to_string();
    let (code, out, err) = run(&["check", &d, "--max-peak", "1GiB"]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.starts_with("ok: every rank's peak is within"), "{out}");
    let note = out
        .lines()
        .find(|l| l.starts_with("note: skipped:"))
        .unwrap_or_else(|| panic!("no skipped note: {out}"));
    assert!(
        note.contains("3 files that are not traces nor memtide summaries")
            && note.contains("args.pickle")
            && note.contains("config.json")
            && note.contains("notes.pickle"),
        "{note}"
    );
    // --json: the same files, each with its reason; nothing unchecked.
    let (code, out, _) = run(&["check", &d, "--max-peak", "1GiB", "--json"]);
    assert_eq!(code, Some(0));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["outcome"], "pass");
    assert_eq!(v["ranks"], 3);
    assert_eq!(v["unchecked"].as_array().unwrap().len(), 0);
    assert_eq!(
        skipped_names(&v),
        ["args.pickle", "config.json", "notes.pickle"]
    );
    for s in v["skipped"].as_array().unwrap() {
        let reason = s["reason"].as_str().unwrap();
        assert!(reason.starts_with("not a trace"), "{reason}");
        if s["file"] == "notes.pickle" {
            assert!(
                reason.contains("neither 'segments' nor 'device_traces'"),
                "{reason}"
            );
        }
    }
    // summary DIR lists them the same way, with no error.
    let (code, out, err) = run(&["summary", &d, "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["errors"].as_array().unwrap().len(), 0);
    assert_eq!(
        skipped_names(&v),
        ["args.pickle", "config.json", "notes.pickle"]
    );
    // Alone, each is still an error (exit 2) with the reader's reason.
    let (code, _, err) = run(&[
        "summary",
        &dir.path().join("notes.pickle").display().to_string(),
    ]);
    assert_eq!(code, Some(2));
    assert!(err.contains("not a PyTorch memory snapshot"), "{err}");
}

#[test]
fn a_damaged_rank_still_blocks_the_gate() {
    let dir = job(true);
    let d = dir.path().display().to_string();
    let (code, out, _) = run(&["check", &d, "--max-peak", "1GiB"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        out.contains("error (exit 2: a pass needs every rank checked): 1 unreadable file not checked: rank7.pickle: byte offset")
            && out.contains("truncated"),
        "{out}"
    );
    let (code, out, _) = run(&["check", &d, "--max-peak", "1GiB", "--json"]);
    assert_eq!(code, Some(2));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["outcome"], "incomplete");
    assert_eq!(v["unchecked"][0]["reason"], "unreadable");
    assert_eq!(v["unchecked"][0]["files"][0]["file"], "rank7.pickle");
    assert!(!skipped_names(&v).contains(&"rank7.pickle".to_string()));
}

#[test]
fn exclude_leaves_a_damaged_file_out_by_name() {
    let dir = job(true);
    let d = dir.path().display().to_string();
    let (code, out, err) = run(&[
        "check",
        &d,
        "--max-peak",
        "1GiB",
        "--exclude",
        "rank7*",
        "--exclude",
        "*.json",
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(
        out.contains("note: skipped: 2 files left out by --exclude: rank7.pickle, config.json"),
        "{out}"
    );
    let (_, out, _) = run(&["summary", &d, "--json", "--exclude", "rank7.pickle"]);
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["errors"].as_array().unwrap().len(), 0);
    let reason = v["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["file"].as_str().unwrap().ends_with("rank7.pickle"))
        .unwrap()["reason"]
        .clone();
    assert_eq!(reason, "left out by --exclude (it matches rank7.pickle)");
    // A pattern that matches nothing leaves the damaged rank blocking.
    let (code, _, _) = run(&["check", &d, "--max-peak", "1GiB", "--exclude", "rank9*"]);
    assert_eq!(code, Some(2));
    // One trace, or a bad pattern: refused (exit 2).
    let one = fixture("rank0.pickle").display().to_string();
    let (code, _, err) = run(&["check", &one, "--max-peak", "1GiB", "--exclude", "x"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("--exclude leaves files of a job out"), "{err}");
    let (code, _, err) = run(&["summary", &d, "--exclude", "rank[0-"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("without its ']'"), "{err}");
}

/// Texts that open with `#` beside the ranks (a README, a launch script, a commented YAML
/// config) are skipped as not traces: they were read as JSONL, whose comments start so, and
/// blocked `check DIR` (exit 2, "README.md: line 3: expected a JSON object").
#[test]
fn texts_that_open_with_a_hash_are_skipped_not_unreadable() {
    let dir = job(false);
    let texts: [(&str, &[u8]); 3] = [
        ("README.md", b"# Run 12\n\nlr 0.1, batch 8\n"),
        (
            "launch.sh",
            b"#!/bin/bash\ntorchrun --nproc-per-node 4 train.py\n",
        ),
        ("sweep.yaml", b"# the sweep\nlr: 0.1\n"),
    ];
    for (name, text) in texts {
        std::fs::write(dir.path().join(name), text).unwrap();
    }
    let d = dir.path().display().to_string();
    let (code, out, err) = run(&["check", &d, "--max-peak", "1GiB", "--json"]);
    assert_eq!(code, Some(0), "{out}{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["outcome"], "pass", "{v}");
    assert_eq!(v["unchecked"].as_array().unwrap().len(), 0, "{v}");
    let skipped = skipped_names(&v);
    for (name, _) in texts {
        assert!(skipped.iter().any(|s| s == name), "{name}: {skipped:?}");
    }
}
