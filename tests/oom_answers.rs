//! Helper A2's integration tests: a job directory's skipped files summarised with a count
//! (issue 35); the what-if replay under the ceiling the allocator really had (issue 42); OOM
//! verdicts from what the file holds (issue 38).

#![allow(clippy::unwrap_used)]

use assert_cmd::Command;
use std::path::{Path, PathBuf};

fn memtide() -> Command {
    Command::new(env!("CARGO_BIN_EXE_memtide"))
}

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

// ---------------------------------------------------------------- issue 35: skipped files

/// A job directory: one rank file (the bundled sample), `notes` text files, one subdirectory.
fn noisy_job(notes: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        repo("sample-traces/cuda-oom.pickle"),
        dir.path().join("rank0.pickle"),
    )
    .unwrap();
    for i in 0..notes {
        std::fs::write(
            dir.path().join(format!("note{i:03}.md")),
            format!("notes {i}\n"),
        )
        .unwrap();
    }
    std::fs::create_dir(dir.path().join("logs")).unwrap();
    dir
}

#[test]
fn summary_dir_summarises_hundreds_of_skipped_files_in_one_line() {
    let job = noisy_job(615);
    let out = memtide().arg("summary").arg(job.path()).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(
            "615 files that are not traces nor memtide summaries: note000.md, note001.md, \
             note002.md, … and 612 more"
        ),
        "{text}"
    );
    assert!(text.contains("logs/: a directory"), "{text}");
    assert!(
        !text.contains("note003.md"),
        "names past the third are counted: {text}"
    );
    assert!(text.lines().count() < 20, "{} lines", text.lines().count());
    // The JSON keeps every file (it is for programs).
    let out = memtide()
        .arg("summary")
        .arg(job.path())
        .arg("--json")
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["skipped"].as_array().unwrap().len(), 616);
}

#[test]
fn markdown_and_check_report_summarise_skipped_files_too() {
    let job = noisy_job(40);
    let md = memtide()
        .arg("summary")
        .arg(job.path())
        .arg("--markdown")
        .output()
        .unwrap();
    let md = String::from_utf8(md.stdout).unwrap();
    assert_eq!(md.matches("skipped").count(), 2, "{md}");
    assert!(md.contains("40 files that are not traces"), "{md}");
    let report = memtide()
        .arg("check")
        .arg(job.path())
        .args(["--max-peak", "100GiB", "--report", "-"])
        .output()
        .unwrap();
    let report = String::from_utf8(report.stdout).unwrap();
    assert!(report.contains("… and 37 more"), "{report}");
    assert!(!report.contains("note039.md"), "{report}");
}

#[test]
fn a_single_skipped_file_keeps_its_reason() {
    let job = noisy_job(1);
    let out = memtide().arg("summary").arg(job.path()).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("note000.md: not a trace nor a memtide summary (it starts with bytes 6e 6f 74 65 73 20 30"),
        "{text}"
    );
}

#[test]
fn the_ranks_screen_counts_skipped_files() {
    use memtide::tui::testing::Harness;
    let job = noisy_job(615);
    let h = Harness::open_ranks(&[job.path().to_path_buf()], 120, 30);
    let screen = h.screen();
    assert!(
        screen.contains(
            "skipped 616 (not traces): note000.md, note001.md, note002.md, … and 613 more"
        ),
        "{screen}"
    );
}
