//! Repeated phases fold (issue 53): a server's trace of 600 compiled-graph calls
//! (tests/fixtures/serving/compiled.kineto.json, written by tools/gen_serving.py) shows each
//! phase name once in `summary` — its count, the highest peak and where — in the text,
//! `--markdown` and `--json` (`windows_folded`); `--windows all` lists every window as
//! before. The figures are the fixture README's, by hand.

use crate::support::repo::memtide;
use serde_json::{json, Value};
use std::path::Path;

const MIB: u64 = 1 << 20;
const A: &str = "## Call CompiledFxGraph fa1b2c3 ##";
const B: &str = "## Call CompiledFxGraph fd4e5f6 ##";

fn summary(args: &[&str]) -> String {
    let file =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/serving/compiled.kineto.json");
    let o = memtide()
        .arg("summary")
        .arg(file)
        .args(args)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).expect("utf-8")
}

/// The lines of the text report's `windows:` section.
fn window_lines(text: &str) -> Vec<&str> {
    text.lines()
        .skip_while(|l| *l != "windows:")
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect()
}

#[test]
fn the_text_report_folds_each_phase_name_into_one_line() {
    let text = summary(&[]);
    let lines = window_lines(&text);
    assert_eq!(
        lines,
        [
            "  phase      setup            #0–#0  peak 1.008 GiB at #0",
            &format!("  phase      {A} × 400  highest peak 1.014 GiB at #601 (in #601–#602)"),
            &format!("  phase      {B} × 200  highest peak 1.011 GiB at #401 (in #401–#402)"),
            "  (phases of one name folded: how many, and the highest peak among them; summary --windows all lists every window)",
        ],
        "{text}"
    );
}

#[test]
fn windows_all_lists_every_window_as_before() {
    let text = summary(&["--windows", "all"]);
    let lines = window_lines(&text);
    // 601 phase windows: the first and last 250, the peak's (call 300), 100 left out.
    assert_eq!(lines.len(), 250 + 250 + 1 + 1, "{}", lines.len());
    assert_eq!(
        lines.last().copied(),
        Some("  … 100 more windows not listed (listed: the first and last 250 of each kind, and the peak's)")
    );
    assert!(lines.contains(&format!("  phase      {A} #601–#602  peak 1.014 GiB at #601").as_str()));
    assert!(!text.contains(" × "), "nothing folded under --windows all");
}

#[test]
fn markdown_folds_too_and_lists_every_window_when_asked() {
    let md = summary(&["--markdown"]);
    assert!(
        md.contains(&format!(
            "| phase | {A} × 400 | #601–#602 | 1.014 GiB | #601 |"
        )),
        "{md}"
    );
    let rows = |md: &str| md.matches("| phase | ## Call CompiledFxGraph").count();
    assert_eq!(rows(&md), 2, "{md}");
    let all = summary(&["--markdown", "--windows", "all"]);
    assert_eq!(
        rows(&all),
        500,
        "the first and last 250 windows, the peak's among them"
    );
}

#[test]
fn json_keeps_windows_and_adds_the_fold() {
    let doc: Value = serde_json::from_str(&summary(&["--json"])).expect("json");
    // `windows` keeps its meaning: the windows listed, one by one.
    assert_eq!(doc["windows"].as_array().map(Vec::len), Some(501));
    assert_eq!(doc["windows_omitted"], json!(100));
    let folded = doc["windows_folded"].as_array().expect("windows_folded");
    let rows: Vec<(&str, u64, u64, u64, u64)> = folded
        .iter()
        .map(|f| {
            (
                f["name"].as_str().unwrap_or(""),
                f["count"].as_u64().unwrap_or(0),
                f["peak_bytes"].as_u64().unwrap_or(0),
                f["peak_index"].as_u64().unwrap_or(0),
                f["first_index"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("setup", 1, 1032 * MIB, 0, 0),
            // Call 300's 6 MiB block: event 1 + 2 × 300.
            (A, 400, 1038 * MIB, 601, 601),
            // Calls 200 and 500 both reach 1035 MiB: the first one is named.
            (B, 200, 1035 * MIB, 401, 401),
        ]
    );
    assert!(folded.iter().all(|f| f["kind"] == "phase"));
}

#[test]
fn a_run_without_repeated_phases_is_listed_as_before() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/train-3steps.jsonl");
    let o = memtide()
        .arg("summary")
        .arg(&file)
        .arg("--json")
        .output()
        .expect("runs");
    let doc: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert!(doc.get("windows_folded").is_none(), "no phase name repeats");
    let folded = memtide().arg("summary").arg(&file).output().expect("runs");
    let all = memtide()
        .arg("summary")
        .arg(&file)
        .args(["--windows", "all"])
        .output()
        .expect("runs");
    assert_eq!(folded.stdout, all.stdout);
}
