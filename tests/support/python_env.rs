//! The Python environment the slow suites borrow (`scripts/setup-python-env` makes it) and
//! running a command there with its output on failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The environment `scripts/setup-python-env` makes: `MEMTIDE_PY_ENV`, else
/// `$HOME/.cache/memtide/py-env` (None without either).
pub fn env_dir() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("MEMTIDE_PY_ENV") {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("HOME").map(|h| Path::new(&h).join(".cache/memtide/py-env"))
}

/// Runs `cmd`, failing the test with its stdout and stderr when it fails.
pub fn run(cmd: &mut Command, what: &str) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A command's standard output as text.
pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A command's standard output then its standard error, as text (a test runner's report).
pub fn stdout_and_stderr(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The cargo target directory a test binary was built in (`…/target/debug/memtide` →
/// `…/target`), so a wheel reuses that build instead of compiling everything again.
pub fn target_dir(bin: &Path) -> PathBuf {
    bin.parent()
        .and_then(Path::parent)
        .expect("target dir")
        .to_path_buf()
}

/// One wheel build at a time in a test binary: maturin stages the extension at one path of
/// the shared target directory (`target/maturin/lib_native.so`), and two builds at once (the
/// Python API's and the pytest marker's tests) took it from under each other.
static ONE_BUILD: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Builds the `memtide-cli` wheel from `root` with the environment's maturin (dev profile:
/// the code the other tests run) into `out`; returns the `.whl`.
pub fn build_wheel(env: &Path, root: &Path, target: &Path, out: &Path) -> PathBuf {
    let _one = ONE_BUILD.lock().unwrap_or_else(|e| e.into_inner());
    let maturin = env.join("bin/maturin");
    assert!(
        maturin.exists(),
        "no maturin at {}: run scripts/setup-python-env",
        maturin.display()
    );
    run(
        Command::new(&maturin)
            .current_dir(root)
            .args(["build", "--profile", "dev", "--out"])
            .arg(out)
            .env("CARGO_TARGET_DIR", target),
        "maturin build",
    );
    std::fs::read_dir(out)
        .expect("wheel dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .expect("a .whl was built")
}

/// A fresh virtual environment at `venv` (from the environment's Python) holding nothing but
/// `wheel` (no index: the wheel has no dependencies); returns its python.
pub fn venv_with(env: &Path, venv: &Path, wheel: &Path) -> PathBuf {
    run(
        Command::new(env.join("bin/python"))
            .args(["-m", "venv"])
            .arg(venv),
        "python -m venv",
    );
    let py = venv.join("bin/python");
    run(
        Command::new(&py)
            .args(["-m", "pip", "install", "--quiet", "--no-index", "--no-deps"])
            .arg(wheel),
        "pip install the wheel",
    );
    py
}

/// Lends the venv of `py` the environment's `module` (torch, pytest, …): a `.pth` line appends
/// that package's site-packages after the venv's own, so the wheel's packages still win.
pub fn borrow(env: &Path, py: &Path, module: &str) {
    let from = run(
        Command::new(env.join("bin/python")).args([
            "-c",
            &format!(
                "import os, {module}; print(os.path.dirname(os.path.dirname({module}.__file__)))"
            ),
        ]),
        &format!("find {module}"),
    );
    let site = run(
        Command::new(py).args([
            "-c",
            "import sysconfig; print(sysconfig.get_path('purelib'))",
        ]),
        "venv site-packages",
    );
    std::fs::write(
        Path::new(stdout(&site).trim()).join(format!("zz-{module}-from-test-env.pth")),
        stdout(&from).trim(),
    )
    .expect("write .pth");
}

/// The `memtide-cli` wheel of this checkout (built beside the test binary `bin`) installed
/// alone into a fresh virtual environment under `tmp`, with `borrowed` lent from the cached
/// environment `env` after the venv's own packages (the wheel's `memtide` wins over anything
/// there); returns the venv's python.
pub fn venv_with_the_wheel(env: &Path, bin: &Path, tmp: &Path, borrowed: &[&str]) -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let wheel = build_wheel(env, root, &target_dir(bin), &tmp.join("wheels"));
    let py = venv_with(env, &tmp.join("venv"), &wheel);
    for module in borrowed {
        borrow(env, &py, module);
    }
    py
}
