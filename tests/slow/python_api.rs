//! The Python API (`import memtide`, issue 41) from the built wheel: builds it with maturin,
//! installs it into a fresh virtual environment (pytest borrowed from the cached one that
//! `scripts/setup-python-env` makes) and runs `python/tests_api` against it and this build's
//! `memtide` binary: `summary()` equal to `summary --json` on every bundled file, `check`
//! agreeing with `memtide check`, a failing `assert memtide.check(...)` showing the reason.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::python_env::{run, stdout, stdout_and_stderr, venv_with_the_wheel};

fn env_dir() -> PathBuf {
    crate::support::python_env::env_dir().expect("MEMTIDE_PY_ENV or HOME")
}

fn text(o: &Output) -> String {
    stdout(o).trim().to_string()
}

#[test]
#[ignore = "needs maturin and pytest: run scripts/setup-python-env, then cargo test -- --include-ignored"]
fn the_python_api_from_the_wheel() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let env = env_dir();
    let bin = Path::new(env!("CARGO_BIN_EXE_memtide"));
    let tmp = tempfile::tempdir().expect("tempdir");
    let venv = tmp.path().join("venv");
    // pytest from the cached environment, after the venv's own packages (the wheel's
    // `memtide` wins over anything there).
    let py = venv_with_the_wheel(&env, bin, tmp.path(), &["pytest"]);
    let from = run(
        Command::new(&py)
            .current_dir(tmp.path())
            .args(["-c", "import memtide; print(memtide.__file__)"]),
        "import memtide",
    );
    assert!(
        text(&from).starts_with(&venv.display().to_string()),
        "memtide came from {}, not the wheel",
        text(&from)
    );
    let tests = root.join("python/tests_api");
    let out = Command::new(&py)
        .current_dir(tmp.path())
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider"])
        .arg(&tests)
        .env("MEMTIDE_BIN", bin)
        .output()
        .expect("run pytest");
    let report = stdout_and_stderr(&out);
    assert!(out.status.success(), "pytest failed:\n{report}");
    assert!(report.contains(" passed"), "{report}");
}
