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
