//! Runs the Python recorder's pytest suite (python/tests) with real PyTorch, from the cached
//! virtual environment made by `scripts/setup-python-env`, so `cargo test` covers it.

use std::path::Path;
use std::process::Command;

use crate::support::python_env::{env_dir, stdout_and_stderr};

fn has_torch(python: &Path) -> bool {
    python.exists()
        && Command::new(python)
            .args(["-c", "import torch, pytest"])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
}

/// Runs the recorder's pytest suite. Ignored by a plain `cargo test` (a machine without the
/// 5 GB environment reports it *ignored*, with the reason); `.ci/run` sets the environment up
/// and runs it with `--include-ignored`, where a missing environment fails the test.
#[test]
#[ignore = "needs torch: run scripts/setup-python-env, then cargo test -- --include-ignored"]
fn python_recorder_suite_passes() {
    let python = env_dir().map(|d| d.join("bin").join("python"));
    let ready = python.as_deref().is_some_and(has_torch);
    let Some(python) = python.filter(|_| ready) else {
        panic!(
            "the recorder tests need scripts/setup-python-env (no environment with torch and pytest at {})",
            env_dir().map_or("$HOME/.cache/memtide/py-env".into(), |d| d.display().to_string())
        );
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(&python)
        .current_dir(root)
        .args([
            "-m",
            "pytest",
            "python/tests",
            "-q",
            "-p",
            "no:cacheprovider",
        ])
        .env("MEMTIDE_BIN", env!("CARGO_BIN_EXE_memtide"))
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run pytest");
    let text = stdout_and_stderr(&out);
    assert!(
        out.status.success(),
        "python recorder tests failed:\n{text}"
    );
    // A run that collected nothing would also exit 0 with -q on some versions: insist on work.
    assert!(text.contains(" passed"), "no python tests ran:\n{text}");
    assert!(
        !text.contains(" skipped"),
        "python tests must not skip:\n{text}"
    );
}
