//! The Markdown report: `summary --markdown` and `check --report` render as GitHub tables
//! (parsed back with a CommonMark parser), carry the exact peak of `summary --json`, keep
//! trace text from breaking out of its cell, and `check` keeps its exit codes.

use assert_cmd::Command;
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
use std::path::{Path, PathBuf};

fn memtide() -> Command {
    Command::new(env!("CARGO_BIN_EXE_memtide"))
}

fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sample-traces")
        .join(name)
}

/// The tables of a Markdown text: each a list of rows of cell texts (header row first).
fn tables(md: &str) -> Vec<Vec<Vec<String>>> {
    let mut out: Vec<Vec<Vec<String>>> = Vec::new();
    let (mut in_cell, mut row, mut cell) = (false, Vec::new(), String::new());
    for ev in Parser::new_ext(md, Options::ENABLE_TABLES) {
        match ev {
            Event::Start(Tag::Table(_)) => out.push(Vec::new()),
            Event::Start(Tag::TableCell) => {
                in_cell = true;
                cell.clear();
            }
            Event::End(TagEnd::TableCell) => {
                in_cell = false;
                row.push(std::mem::take(&mut cell));
            }
            Event::End(TagEnd::TableRow) | Event::End(TagEnd::TableHead) => {
                if let Some(t) = out.last_mut() {
                    t.push(std::mem::take(&mut row));
                }
            }
            Event::Text(t) | Event::Code(t) if in_cell => cell.push_str(&t),
            _ => {}
        }
    }
    out
}

fn stdout(args: &[&str], file: &Path) -> String {
    let o = memtide().args(args).arg(file).output().expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).expect("utf-8")
}

#[test]
fn summary_markdown_is_tables_with_the_exact_peak() {
    for name in [
        "train-3steps.jsonl",
        "cuda-oom.pickle",
        "cuda-oom.pt.trace.json.gz",
    ] {
        let f = sample(name);
        let md = stdout(&["summary", "--markdown"], &f);
        let json: serde_json::Value =
            serde_json::from_str(&stdout(&["summary", "--json"], &f)).expect("json");
        let t = tables(&md);
        assert!(
            t.len() >= 4,
            "{name}: figures, bands, live, steps tables: {md}"
        );
        let figures = &t[0];
        let peak_row = figures.iter().find(|r| r[0] == "peak").expect("a peak row");
        let exact = json["peak"]["bytes"].as_u64().expect("peak bytes");
        let grouped = exact
            .to_string()
            .as_bytes()
            .rchunks(3)
            .rev()
            .map(|c| std::str::from_utf8(c).expect("digits"))
            .collect::<Vec<_>>()
            .join(",");
        assert!(
            peak_row[1].contains(&format!("({grouped} B)")),
            "{name}: {peak_row:?} vs {exact}"
        );
        // Every row of a table has as many cells as its header.
        for table in &t {
            for r in table {
                assert_eq!(r.len(), table[0].len(), "{name}: ragged row {r:?}");
            }
        }
        assert!(
            !md.chars().any(|c| c.is_control() && c != '\n'),
            "{name}: control characters"
        );
    }
}

#[test]
fn markdown_snapshots() {
    for name in ["train-3steps.jsonl", "cuda-oom.pickle"] {
        let md = stdout(&["summary", "--markdown"], &sample(name));
        let md = md.replace(&sample("").display().to_string(), "<samples>/");
        insta::assert_snapshot!(format!("markdown_{}", name.replace(['.', '-'], "_")), md);
    }
}

#[test]
fn hostile_names_stay_in_their_cell() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("x.jsonl");
    std::fs::write(
        &p,
        "{\"memtide\":1,\"device\":\"cuda:0\"}\n{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":4096,\"cat\":\"activation\",\"name\":\"a|b<img src=x>\\u001b[2J\\n| injected | row |\"}\n",
    )
    .expect("write");
    let md = stdout(&["summary", "--markdown"], &p);
    assert!(!md.contains("<img"), "{md}");
    let live = tables(&md)
        .into_iter()
        .find(|t| t[0].first().is_some_and(|h| h == "size") && t[0].len() == 5)
        .expect("live table");
    assert_eq!(live.len(), 2, "one header and one row: {live:?}");
    assert!(live[1][3].starts_with("a|b<img src=x>"), "{:?}", live[1]);
}

#[test]
fn check_report_is_written_on_pass_and_fail_with_exit_codes_unchanged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = sample("train-3steps.jsonl");
    for (limit, code, word) in [("100GiB", 0, "ok:"), ("1GiB", 1, "FAIL:")] {
        let report = dir.path().join(format!("report-{code}.md"));
        let o = memtide()
            .args(["check", "--max-peak", limit, "--report"])
            .arg(&report)
            .arg(&f)
            .output()
            .expect("runs");
        assert_eq!(o.status.code(), Some(code));
        let md = std::fs::read_to_string(&report).expect("report written");
        assert!(md.starts_with("## memtide check"), "{md}");
        assert!(md.contains(word), "{md}");
        assert!(tables(&md).len() >= 3, "{md}");
    }
    // Never over its input.
    let copy = dir.path().join("t.jsonl");
    std::fs::copy(&f, &copy).expect("copy");
    let before = std::fs::read(&copy).expect("read");
    let o = memtide()
        .args(["check", "--max-peak", "1GiB", "--report"])
        .arg(&copy)
        .arg(&copy)
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read(&copy).expect("read"), before);
}
