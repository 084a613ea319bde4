//! `check --report` in CI (issue 52): on the file `$GITHUB_STEP_SUMMARY` names it appends
//! (a line written earlier in the step and a first check's report stay), `--report-append`
//! appends to any file, any other `--report` file is replaced; appending never writes over an
//! input, not even through a symlink.

use crate::support::repo::{memtide, sample};
use std::path::Path;

fn check_report(report: &Path, limit: &str, summary: Option<&Path>, extra: &[&str]) -> i32 {
    let mut c = memtide();
    c.args(["check", "--max-peak", limit, "--report"])
        .arg(report)
        .args(extra)
        .arg(sample("train-3steps.jsonl"))
        .env_remove("GITHUB_STEP_SUMMARY");
    if let Some(s) = summary {
        c.env("GITHUB_STEP_SUMMARY", s);
    }
    let o = c.output().expect("runs");
    o.status.code().unwrap_or(-1)
}

/// How many reports `md` holds (each starts with this heading).
fn reports(md: &str) -> usize {
    md.matches("## memtide check").count()
}

#[test]
fn the_step_summary_is_appended_to_and_keeps_what_was_there() {
    let dir = tempfile::tempdir().expect("tempdir");
    let summary = dir.path().join("step_summary_abc");
    // A line an earlier command of the step wrote, without a final newline.
    std::fs::write(&summary, "Build took 3 min").expect("write");
    assert_eq!(check_report(&summary, "100GiB", Some(&summary), &[]), 0);
    assert_eq!(check_report(&summary, "1GiB", Some(&summary), &[]), 1);
    let md = std::fs::read_to_string(&summary).expect("read");
    assert!(
        md.starts_with("Build took 3 min\n\n## memtide check"),
        "{md}"
    );
    assert_eq!(reports(&md), 2, "{md}");
    let (first, second) = md.split_at(md.rfind("## memtide check").expect("second"));
    assert!(first.contains("ok:"), "{first}");
    assert!(second.contains("FAIL:"), "{second}");
    // One blank line between the two reports, no more.
    assert!(
        first.ends_with("\n\n") && !first.ends_with("\n\n\n"),
        "{md}"
    );
}

#[test]
fn report_append_appends_anywhere_and_a_plain_report_replaces() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("report.md");
    std::fs::write(&out, "# Memory gates\n").expect("write");
    assert_eq!(check_report(&out, "100GiB", None, &["--report-append"]), 0);
    assert_eq!(check_report(&out, "1GiB", None, &["--report-append"]), 1);
    let md = std::fs::read_to_string(&out).expect("read");
    assert!(md.starts_with("# Memory gates\n\n## memtide check"), "{md}");
    assert_eq!(reports(&md), 2, "{md}");
    // Without --report-append (and not the step summary): replaced.
    assert_eq!(check_report(&out, "100GiB", None, &[]), 0);
    let md = std::fs::read_to_string(&out).expect("read");
    assert!(md.starts_with("## memtide check"), "{md}");
    assert_eq!(reports(&md), 1, "{md}");
    // A summary variable naming another file changes nothing here.
    let other = dir.path().join("other");
    assert_eq!(check_report(&out, "100GiB", Some(&other), &[]), 0);
    assert_eq!(reports(&std::fs::read_to_string(&out).expect("read")), 1);
    // A new file is created.
    let fresh = dir.path().join("new.md");
    assert_eq!(
        check_report(&fresh, "100GiB", None, &["--report-append"]),
        0
    );
    let md = std::fs::read_to_string(&fresh).expect("read");
    assert!(md.starts_with("## memtide check"), "{md}");
}

#[test]
fn appending_never_touches_an_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = dir.path().join("t.jsonl");
    std::fs::copy(sample("train-3steps.jsonl"), &copy).expect("copy");
    let before = std::fs::read(&copy).expect("read");
    let o = memtide()
        .args(["check", "--max-peak", "1GiB", "--report-append", "--report"])
        .arg(&copy)
        .arg(&copy)
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("never overwrites what it reads"), "{err}");
    assert_eq!(std::fs::read(&copy).expect("read"), before);
    // The step summary pointing at the input (through a symlink): refused too.
    #[cfg(unix)]
    {
        let link = dir.path().join("summary");
        std::os::unix::fs::symlink(&copy, &link).expect("symlink");
        let o = memtide()
            .args(["check", "--max-peak", "1GiB", "--report"])
            .arg(&link)
            .arg(&copy)
            .env("GITHUB_STEP_SUMMARY", &link)
            .output()
            .expect("runs");
        assert_eq!(o.status.code(), Some(2));
        assert_eq!(std::fs::read(&copy).expect("read"), before);
    }
}

#[test]
fn report_append_needs_report() {
    let o = memtide()
        .args(["check", "--max-peak", "1GiB", "--report-append"])
        .arg(sample("train-3steps.jsonl"))
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--report"), "{err}");
}

#[test]
fn a_job_report_appends_to_the_step_summary_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let summary = dir.path().join("summary.md");
    std::fs::write(&summary, "before\n").expect("write");
    let o = memtide()
        .args(["check", "--max-peak", "100GiB", "--report"])
        .arg(&summary)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ranks"))
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .expect("runs");
    assert!(o.status.code().is_some_and(|c| c <= 1), "{o:?}");
    let md = std::fs::read_to_string(&summary).expect("read");
    assert!(md.starts_with("before\n\n"), "{md}");
    assert!(md.len() > "before\n\n".len() + 20, "{md}");
}
