//! The pytest marker from the wheel (issue 52): in a fresh virtual environment holding only
//! the `memtide-cli` wheel (pytest and a CPU torch borrowed from the cached environment), a
//! test file marked `@pytest.mark.memtide(...)` passes under its limit and fails over it with
//! the gate's reason, the peak's biggest storages and the path of the saved trace in pytest's
//! output; `--memtide-dir` keeps every trace; an unmarked test imports neither torch nor
//! memtide. The figures are torch's own tensor sizes: a 32 MiB `torch.empty(8 << 20)` over a
//! 16 MiB limit, 1 MiB kept per step (in a module-level cache) against a 1% growth limit.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::python_env::{run, stdout, stdout_and_stderr, venv_with_the_wheel};

fn env_dir() -> PathBuf {
    crate::support::python_env::env_dir().expect("MEMTIDE_PY_ENV or HOME")
}

const TESTS: &str = r#"
import pytest
import torch

import memtide_record


@pytest.mark.memtide(max_peak="64MiB")
def test_under():
    x = torch.ones(1 << 20)  # 4 MiB
    y = x * 2
    assert float(y.sum()) == 2 * (1 << 20)


@pytest.mark.memtide(max_peak=16 * 2**20)
def test_over():
    big = torch.empty(8 << 20)  # 32 MiB of float32
    big.fill_(1.0)
    assert big.numel() == 8 << 20


@pytest.mark.memtide(max_peak=True)
def test_bad_limit():
    pass


# A leak outlives the test: a module-level cache (a local list would be freed on return).
CACHE = []


@pytest.mark.memtide(max_growth="1%")
def test_leak():
    for i in range(4):
        memtide_record.step(i)
        CACHE.append(torch.ones(1 << 18))  # 1 MiB more at every step's start
"#;

const PLAIN: &str = r#"
import sys


def test_plain():
    # Registered by the wheel's entry point, the plugin stays idle for an unmarked test.
    assert "torch" not in sys.modules
    assert "memtide" not in sys.modules
    assert "memtide_record" not in sys.modules
"#;

fn pytest(py: &Path, dir: &Path, args: &[&str]) -> (Output, String) {
    let out = Command::new(py)
        .current_dir(dir)
        .args(["-m", "pytest", "-p", "no:cacheprovider", "-rA"])
        .args(args)
        .output()
        .expect("run pytest");
    let text = stdout_and_stderr(&out);
    (out, text)
}

/// The path after `trace: ` on the line that names `test`'s trace.
fn trace_path(report: &str, test: &str) -> PathBuf {
    let line = report
        .lines()
        .find(|l| l.starts_with("trace: ") && l.contains(test))
        .unwrap_or_else(|| panic!("no trace line for {test}:\n{report}"));
    PathBuf::from(
        line.trim_start_matches("trace: ")
            .split("  ")
            .next()
            .unwrap_or(""),
    )
}

#[test]
#[ignore = "needs maturin, pytest and torch: run scripts/setup-python-env, then cargo test -- --include-ignored"]
fn the_pytest_marker_from_the_wheel() {
    let env = env_dir();
    let bin = Path::new(env!("CARGO_BIN_EXE_memtide"));
    let tmp = tempfile::tempdir().expect("tempdir");
    let py = venv_with_the_wheel(&env, bin, tmp.path(), &["pytest", "torch"]);
    let dir = tmp.path().join("project");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("test_memory.py"), TESTS).expect("write tests");
    std::fs::write(dir.join("test_plain.py"), PLAIN).expect("write tests");

    // The marker is registered by the wheel's entry point (no conftest, no -p).
    let markers = run(
        Command::new(&py)
            .current_dir(&dir)
            .args(["-m", "pytest", "--markers"]),
        "pytest --markers",
    );
    assert!(
        stdout(&markers).contains("@pytest.mark.memtide(max_peak=None, max_growth=None"),
        "{}",
        stdout(&markers)
    );
    let (out, plain) = pytest(&py, &dir, &["test_plain.py"]);
    assert!(out.status.success(), "{plain}");

    // Under the limit: passes; over it: fails with the reason, the owners, the trace.
    let (out, report) = pytest(&py, &dir, &["test_memory.py"]);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(report.contains("3 failed, 1 passed"), "{report}");
    // A limit of the wrong type fails its test before it runs, saying why.
    assert!(
        report.contains("@pytest.mark.memtide: max_peak=True: expected bytes"),
        "{report}"
    );
    assert!(
        report.contains("PASSED test_memory.py::test_under"),
        "{report}"
    );
    assert!(
        report.contains("FAILED test_memory.py::test_over"),
        "{report}"
    );
    assert!(
        report.contains("memtide: FAIL: peak 32.00 MiB (33554432 B)")
            && report.contains("exceeds --max-peak 16.00 MiB by 16.00 MiB"),
        "{report}"
    );
    assert!(report.contains("biggest at the peak:"), "{report}");
    // The owner is named by the test's own line.
    assert!(
        report.contains("32.000 MiB") && report.contains("test_memory.py:"),
        "{report}"
    );
    assert!(
        report.contains("memtide: FAIL: step baseline grew by"),
        "{report}"
    );
    let over = trace_path(&report, "test_over");
    assert!(over.is_file(), "the failing test's trace is kept: {over:?}");
    assert!(report.contains(&format!("open it: memtide {}", over.display())));
    // The trace is what the gate judged: `memtide check` on it fails the same way.
    let again = Command::new(bin)
        .args(["check", "--max-peak", "16MiB"])
        .arg(&over)
        .output()
        .expect("memtide check");
    assert_eq!(again.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&again.stdout).contains("peak 32.00 MiB (33554432 B)"));
    // The passing test's trace was deleted; only the failures' are left.
    let kept: Vec<String> = std::fs::read_dir(over.parent().expect("dir"))
        .expect("list")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert!(kept.iter().all(|k| !k.contains("test_under")), "{kept:?}");
    let _ = std::fs::remove_dir_all(over.parent().expect("dir"));

    // --memtide-dir keeps every marked test's trace there.
    let keep = tmp.path().join("traces");
    let (out, report) = pytest(
        &py,
        &dir,
        &[
            "test_memory.py",
            "--memtide-dir",
            keep.to_str().expect("utf-8"),
        ],
    );
    assert_eq!(out.status.code(), Some(1), "{report}");
    let mut kept: Vec<String> = std::fs::read_dir(&keep)
        .expect("the directory is made")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    kept.sort();
    assert_eq!(
        kept,
        vec![
            "test_memory.py_test_leak.jsonl",
            "test_memory.py_test_over.jsonl",
            "test_memory.py_test_under.jsonl",
        ],
        "{report}"
    );
    let under = keep.join("test_memory.py_test_under.jsonl");
    let ok = Command::new(bin)
        .args(["check", "--max-peak", "64MiB"])
        .arg(&under)
        .output()
        .expect("memtide check");
    assert_eq!(ok.status.code(), Some(0), "{:?}", ok);
}
