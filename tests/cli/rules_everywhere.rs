//! `--rules [[frames]]` reaches every answer alike: the rules file is read once by the door
//! and each device reads its frames under it, so marking the bundled OOM's `model.py` as
//! library code takes `model.py:31` out of `summary` (text, `--json`, `--markdown`: the live
//! rows, the OOM's advice and savings) and `check` (text, `--json`, `--report`) at once —
//! where before only the live table followed the rules.

#![allow(clippy::unwrap_used)]

use crate::support::repo::memtide;
use std::io::Write as _;

const SAMPLE: &str = "sample-traces/cuda-oom.pickle";

fn outputs(rules: Option<&std::path::Path>) -> Vec<(String, String)> {
    let runs: &[&[&str]] = &[
        &["summary", SAMPLE],
        &["summary", SAMPLE, "--json"],
        &["summary", SAMPLE, "--markdown"],
        &["check", SAMPLE, "--max-peak", "1GiB", "--capacity", "16GiB"],
        &[
            "check",
            SAMPLE,
            "--max-peak",
            "1GiB",
            "--capacity",
            "16GiB",
            "--json",
        ],
        &["check", SAMPLE, "--max-peak", "1GiB", "--report", "-"],
    ];
    runs.iter()
        .map(|args| {
            let mut c = memtide();
            c.args(*args);
            if let Some(r) = rules {
                c.arg("--rules").arg(r);
            }
            let o = c.output().unwrap();
            (
                args.join(" "),
                String::from_utf8_lossy(&o.stdout).into_owned(),
            )
        })
        .collect()
}

#[test]
fn frame_rules_change_the_user_frame_in_every_output_alike() {
    for (what, out) in outputs(None) {
        assert!(
            out.contains("model.py:31"),
            "{what}: the sample's own frame: {out}"
        );
    }
    let mut rules = tempfile::Builder::new().suffix(".toml").tempfile().unwrap();
    rules
        .write_all(b"[[frames]]\ninternal = \"model.py\"\n")
        .unwrap();
    for (what, out) in outputs(Some(rules.path())) {
        assert!(
            !out.contains("model.py:31"),
            "{what}: rules not applied: {out}"
        );
        // The frame under it takes the user frame's place.
        assert!(out.contains("train.py:57"), "{what}: {out}");
    }
}
