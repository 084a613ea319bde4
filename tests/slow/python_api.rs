//! The Python API (`import memtide`, issue 41) from the built wheel: builds it with maturin,
//! installs it into a fresh virtual environment (pytest borrowed from the cached one that
//! `scripts/setup-python-env` makes) and runs `python/tests_api` against it and this build's
//! `memtide` binary: `summary()` equal to `summary --json` on every bundled file, `check`
//! agreeing with `memtide check`, a failing `assert memtide.check(...)` showing the reason.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::python_env::{run, stdout};

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
    let maturin = env.join("bin/maturin");
    assert!(
        maturin.exists(),
        "no maturin at {}: run scripts/setup-python-env",
        maturin.display()
    );
    let bin = Path::new(env!("CARGO_BIN_EXE_memtide"));
    // …/target/debug/memtide → …/target: the wheel reuses this build.
    let target = bin
        .parent()
        .and_then(Path::parent)
        .expect("target dir")
        .to_path_buf();
    let tmp = tempfile::tempdir().expect("tempdir");
    let wheels = tmp.path().join("wheels");
    run(
        Command::new(&maturin)
            .current_dir(root)
            .args(["build", "--profile", "dev", "--out"])
            .arg(&wheels)
            .env("CARGO_TARGET_DIR", &target),
        "maturin build",
    );
    let wheel = std::fs::read_dir(&wheels)
        .expect("wheel dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .expect("a .whl was built");
    let venv = tmp.path().join("venv");
    run(
        Command::new(env.join("bin/python"))
            .args(["-m", "venv"])
            .arg(&venv),
        "python -m venv",
    );
    let py = venv.join("bin/python");
    run(
        Command::new(&py)
            .args(["-m", "pip", "install", "--quiet", "--no-index", "--no-deps"])
            .arg(&wheel),
        "pip install the wheel",
    );
    // pytest from the cached environment, after the venv's own packages (the wheel's
    // `memtide` wins over anything there).
    let cached = run(
        Command::new(env.join("bin/python")).args([
            "-c",
            "import os, pytest; print(os.path.dirname(os.path.dirname(pytest.__file__)))",
        ]),
        "find pytest",
    );
    let site = run(
        Command::new(&py).args([
            "-c",
            "import sysconfig; print(sysconfig.get_path('purelib'))",
        ]),
        "venv site-packages",
    );
    std::fs::write(
        Path::new(&text(&site)).join("zz-pytest-from-test-env.pth"),
        text(&cached),
    )
    .expect("write .pth");
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
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "pytest failed:\n{report}");
    assert!(report.contains(" passed"), "{report}");
}
