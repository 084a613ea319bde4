//! A distributed job (tests/fixtures/ranks, written by tools/gen_ranks.py): `summary DIR`,
//! `summary DIR --json`, `check DIR` and a directory of per-rank `summary --json` files.
//! Every figure is checked against the binary's own single-file `summary --json` of each
//! rank (an independent path: one file, no rank code), and the spread is computed here.

#![allow(clippy::unwrap_used)]

use serde_json::Value;
use std::path::{Path, PathBuf};

use crate::support::repo::{memtide, summary_json};

fn job() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ranks")
}

fn file(name: &str) -> String {
    job().join(name).display().to_string()
}

/// The rank files that are traces, with the rank each one is.
const TRACES: [(&str, u64); 7] = [
    ("rank0.pickle", 0),
    ("rank1.pickle", 1),
    ("rank2.pickle", 2),
    ("rank3.pickle", 3),
    ("rank4.pickle", 4),
    ("rank5.pickle", 5),
    // Its name gives no rank: distributedInfo.rank does.
    ("node1_worker.pt.trace.json", 6),
];

/// `memtide summary FILE --json` of one file.
fn own_summary(name: &str) -> Value {
    let out = memtide()
        .args(["summary", &file(name), "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Peaks of each rank from the single-file summaries.
fn own_peaks() -> Vec<(u64, u64)> {
    TRACES
        .iter()
        .map(|(name, rank)| (*rank, own_summary(name)["peak"]["bytes"].as_u64().unwrap()))
        .collect()
}

#[test]
fn each_rank_s_summary_is_that_file_s_own_summary() {
    let v = summary_json(&job());
    let ranks = v["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), TRACES.len());
    for (name, rank) in TRACES {
        let r = ranks
            .iter()
            .find(|r| r["file"].as_str().unwrap().ends_with(name))
            .unwrap_or_else(|| panic!("{name} has no row"));
        assert_eq!(r["rank"], rank, "{name}");
        assert_eq!(r["summary"], own_summary(name), "{name}");
        let points = r["timeline"].as_array().unwrap();
        assert!(
            !points.is_empty() && points.len() <= 200,
            "{name}: a short sparkline"
        );
        let top = points.iter().filter_map(Value::as_u64).max().unwrap();
        assert_eq!(
            Some(top),
            r["summary"]["peak"]["bytes"].as_u64(),
            "{name}: the sparkline keeps the peak"
        );
    }
    let from: Vec<&str> = ranks
        .iter()
        .map(|r| r["rank_from"].as_str().unwrap())
        .collect();
    assert_eq!(
        from,
        ["file name"; 6]
            .into_iter()
            .chain(["distributed"])
            .collect::<Vec<_>>()
    );
}

#[test]
fn the_worst_rank_and_the_spread_match_the_single_file_summaries() {
    let peaks = own_peaks();
    let (worst, max) = peaks
        .iter()
        .copied()
        .max_by_key(|&(r, p)| (p, std::cmp::Reverse(r)))
        .unwrap();
    let min = peaks.iter().map(|p| p.1).min().unwrap();
    let mut sorted: Vec<u64> = peaks.iter().map(|p| p.1).collect();
    sorted.sort_unstable();
    let median = sorted[sorted.len() / 2]; // 7 ranks: the middle one
    let v = summary_json(&job());
    assert_eq!(v["worst_rank"], worst);
    assert_eq!(worst, 2, "the fixture's embedding rank");
    let s = &v["spread"];
    assert_eq!(s["ranks"], 7);
    assert_eq!(s["max_peak"], max);
    assert_eq!(s["min_peak"], min);
    assert_eq!(s["median_peak"], median);
    assert_eq!(s["max_minus_median"], max - median);
    let ratio = s["max_over_min"].as_f64().unwrap();
    assert!((ratio - max as f64 / min as f64).abs() < 1e-12);
    assert_eq!(v["oom_ranks"], serde_json::json!([4]));
    // The worst rank's peak is its own file's.
    let worst_row = v["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rank"] == worst)
        .unwrap();
    assert_eq!(
        worst_row["summary"]["peak"]["bytes"],
        own_summary("rank2.pickle")["peak"]["bytes"]
    );
}

#[test]
fn the_unreadable_file_is_listed_with_its_error_and_the_note_is_skipped() {
    let single = memtide()
        .args(["summary", &file("rank7.pickle")])
        .output()
        .unwrap();
    assert_eq!(single.status.code(), Some(2));
    let single_err = String::from_utf8_lossy(&single.stderr).to_string();
    let v = summary_json(&job());
    let errors = v["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 1);
    assert!(errors[0]["file"]
        .as_str()
        .unwrap()
        .ends_with("rank7.pickle"));
    let e = errors[0]["error"].as_str().unwrap();
    assert!(e.contains("truncated"), "{e}");
    assert!(
        single_err.contains(e),
        "the same error as alone: {single_err} / {e}"
    );
    let skipped = v["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1);
    assert!(skipped[0]["file"].as_str().unwrap().ends_with("README.md"));
    assert!(skipped[0]["reason"]
        .as_str()
        .unwrap()
        .starts_with("not a trace"));
}

#[test]
fn the_text_table_names_the_worst_rank_and_every_rank() {
    let out = memtide().args(["summary", &file("")]).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("7 ranks read of 8 files"), "{text}");
    let worst_line = text.lines().find(|l| l.starts_with("worst rank")).unwrap();
    assert!(
        worst_line.contains("2 ·") && worst_line.contains("rank2.pickle"),
        "{worst_line}"
    );
    let starred: Vec<&str> = text.lines().filter(|l| l.starts_with('*')).collect();
    assert_eq!(starred.len(), 1);
    assert!(starred[0].contains("rank2.pickle"));
    for (name, _) in TRACES {
        assert!(text.contains(name), "{name}");
    }
    assert!(text.contains("unreadable:") && text.contains("rank7.pickle: byte offset"));
    assert!(text.contains("out of memory    rank 4 (2)"), "{text}");
}

#[test]
fn a_list_of_files_is_a_job_and_a_single_file_is_unchanged() {
    let out = memtide()
        .args([
            "summary",
            &file("rank0.pickle"),
            &file("rank1.pickle"),
            &file("rank3.pickle"),
            "--json",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ranks"].as_array().unwrap().len(), 3);
    assert_eq!(v["worst_rank"], 1);
    // One file: the plain summary object, no `ranks`.
    let one = own_summary("rank0.pickle");
    assert!(one.get("ranks").is_none() && one.get("peak").is_some());
}

#[test]
fn check_exit_codes() {
    let dir = file("");
    let code = |args: &[&str]| memtide().args(args).output().unwrap();
    // Ranks 0, 1, 3 (no OOM): under a generous limit, 0.
    let ok = code(&[
        "check",
        &file("rank0.pickle"),
        &file("rank1.pickle"),
        &file("rank3.pickle"),
        "--max-peak",
        "1GiB",
    ]);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );
    // Over the limit: 1, naming the ranks over it.
    let over = code(&[
        "check",
        &file("rank0.pickle"),
        &file("rank1.pickle"),
        &file("rank3.pickle"),
        "--max-peak",
        "20MiB",
    ]);
    assert_eq!(over.status.code(), Some(1));
    let text = String::from_utf8_lossy(&over.stdout).to_string();
    let fail = text.lines().find(|l| l.starts_with("FAIL")).unwrap();
    assert!(
        fail.contains("2 ranks over")
            && fail.contains("rank 1 (rank1.pickle)")
            && fail.contains("rank 3 (rank3.pickle)"),
        "{fail}"
    );
    assert!(!fail.contains("rank 0 "), "{fail}");
    // Imbalance: 0 within, 1 over.
    let within = code(&[
        "check",
        &file("rank0.pickle"),
        &file("rank1.pickle"),
        &file("rank3.pickle"),
        "--max-imbalance",
        "1000%",
    ]);
    assert_eq!(within.status.code(), Some(0));
    let unbalanced = code(&[
        "check",
        &file("rank0.pickle"),
        &file("rank1.pickle"),
        &file("rank3.pickle"),
        "--max-imbalance",
        "10%",
    ]);
    assert_eq!(unbalanced.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&unbalanced.stdout).contains("over --max-imbalance 10.00%"));
    // The whole job: rank 4's OOM fails it; the unreadable file is noted, not fatal.
    let all = code(&["check", &dir, "--max-peak", "1GiB"]);
    assert_eq!(all.status.code(), Some(1));
    let text = String::from_utf8_lossy(&all.stdout).to_string();
    assert!(
        text.contains("FAIL: out of memory on 1 rank: rank 4 (rank4.pickle)"),
        "{text}"
    );
    assert!(
        text.contains("unreadable file not checked: rank7.pickle"),
        "{text}"
    );
    // Nothing readable: 2.
    let none = code(&[
        "check",
        &file("rank7.pickle"),
        &file("README.md"),
        "--max-peak",
        "1GiB",
    ]);
    assert_eq!(none.status.code(), Some(2));
    let empty = tempfile::tempdir().unwrap();
    let none = code(&[
        "check",
        &empty.path().display().to_string(),
        "--max-peak",
        "1GiB",
    ]);
    assert_eq!(none.status.code(), Some(2));
    // --max-imbalance needs a job.
    let single = code(&["check", &file("rank0.pickle"), "--max-imbalance", "10%"]);
    assert_eq!(single.status.code(), Some(2));
}

#[test]
fn a_directory_of_summaries_gives_the_same_table() {
    let tmp = tempfile::tempdir().unwrap();
    for (name, _) in TRACES {
        let out = memtide()
            .args(["summary", &file(name), "--json"])
            .output()
            .unwrap();
        std::fs::write(tmp.path().join(format!("{name}.json")), &out.stdout).unwrap();
    }
    let table = |dir: &Path| {
        let out = memtide()
            .args(["summary", &dir.display().to_string()])
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    // The rows, file names aside (`rank0.pickle` vs `rank0.pickle.json`).
    let rows = |t: &str| -> Vec<String> {
        t.lines()
            .skip(1)
            .take_while(|l| !l.starts_with("skipped") && !l.starts_with("unreadable"))
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                l.replace(".pickle.json", ".pickle")
                    .replace(".trace.json.json", ".trace.json")
            })
            .collect()
    };
    assert_eq!(rows(&table(tmp.path())), rows(&table(&job())));
    let v = summary_json(tmp.path());
    let traces = summary_json(&job());
    assert_eq!(v["spread"], traces["spread"]);
    assert_eq!(v["worst_rank"], traces["worst_rank"]);
    for (a, b) in v["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .zip(traces["ranks"].as_array().unwrap())
    {
        assert_eq!(a["rank"], b["rank"]);
        assert_eq!(a["rank_from"], b["rank_from"]);
        assert_eq!(a["summary"]["peak"], b["summary"]["peak"]);
        assert_eq!(
            a["timeline"],
            Value::Null,
            "a summary file carries no timeline"
        );
    }
}

/// Three ranks with one peak (the same file copied as ranks 3, 0 and 5, listed in that
/// order on the command line): every answer names rank 0, the lowest rank among equal peaks
/// (issue 50: `summary` said rank 0, `check` rank 5).
#[test]
fn tied_ranks_are_named_the_same_everywhere() {
    let tmp = tempfile::tempdir().unwrap();
    let files: Vec<String> = [3, 0, 5]
        .iter()
        .map(|r| {
            let p = tmp.path().join(format!("rank{r}.pickle"));
            std::fs::copy(file("rank1.pickle"), &p).unwrap();
            p.display().to_string()
        })
        .collect();
    let peak = own_summary("rank1.pickle")["peak"]["bytes"]
        .as_u64()
        .unwrap();
    let dir = tmp.path().display().to_string();
    for inputs in [vec![dir.clone()], files.clone()] {
        let run = |extra: &[&str]| {
            let mut args: Vec<&str> = extra[..1].to_vec();
            args.extend(inputs.iter().map(String::as_str));
            args.extend(&extra[1..]);
            memtide().args(&args).output().unwrap()
        };
        let v: Value = serde_json::from_slice(&run(&["summary", "--json"]).stdout).unwrap();
        assert_eq!(v["worst_rank"], 0, "{inputs:?}");
        assert_eq!(v["spread"]["max_rank"], 0);
        assert_eq!(v["spread"]["max_peak"], peak);
        let text = String::from_utf8(run(&["summary"]).stdout).unwrap();
        let worst = text.lines().find(|l| l.starts_with("worst rank")).unwrap();
        assert!(worst.starts_with("worst rank       0 ·"), "{worst}");
        // The spread says every rank ties (it named rank 0 as both ends).
        let human = memtide_core::trace::human_bytes(peak);
        let spread = text.lines().find(|l| l.starts_with("spread")).unwrap();
        assert!(
            spread.contains(&format!("max/min 1.00× (every rank {human})")),
            "{spread}"
        );
        let starred: Vec<&str> = text.lines().filter(|l| l.starts_with('*')).collect();
        assert!(
            starred.len() == 1 && starred[0].contains("rank0.pickle"),
            "{text}"
        );

        let ok = run(&["check", "--max-peak", "1GiB"]);
        assert_eq!(ok.status.code(), Some(0));
        let line = String::from_utf8(ok.stdout).unwrap();
        assert!(
            line.contains("(highest: rank 0 (rank0.pickle) "),
            "{inputs:?}: {line}"
        );
        let v: Value =
            serde_json::from_slice(&run(&["check", "--max-peak", "1GiB", "--json"]).stdout)
                .unwrap();
        assert_eq!(v["peak"]["highest"]["rank"], 0);
        let v: Value =
            serde_json::from_slice(&run(&["check", "--max-peak", "1MiB", "--json"]).stdout)
                .unwrap();
        let over: Vec<u64> = v["peak"]["over"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["rank"].as_u64().unwrap())
            .collect();
        assert_eq!(over, [0, 3, 5]);
        let v: Value =
            serde_json::from_slice(&run(&["check", "--max-imbalance", "10%", "--json"]).stdout)
                .unwrap();
        assert_eq!(v["imbalance"]["max_rank"], 0);
        let text = String::from_utf8(run(&["check", "--max-imbalance", "10%"]).stdout).unwrap();
        assert!(
            text.contains(&format!("max/min 1.00× (every rank {human})")),
            "{text}"
        );
    }
}
