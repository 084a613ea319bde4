//! Where things are: the repository, its samples and fixtures, and the `memtide` binary under
//! test (the helpers the suites had each written for themselves, now once).

use assert_cmd::Command;
use std::path::{Path, PathBuf};

/// The repository's root (the root package's manifest directory).
pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The repository's root, owned.
pub fn root_buf() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A file of `sample-traces/`.
pub fn sample(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("sample-traces")
        .join(name)
}

/// A file of `tests/fixtures/tui/`.
pub fn tui_fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tui")
        .join(name)
}

/// The `memtide` binary under test, as a command.
pub fn memtide() -> Command {
    Command::new(env!("CARGO_BIN_EXE_memtide"))
}

/// The `memtide` binary under test, as a command that does not inherit `MEMTIDE_MAX_MEMORY`.
pub fn memtide_unlimited() -> Command {
    let mut c = Command::cargo_bin("memtide").expect("binary");
    c.env_remove("MEMTIDE_MAX_MEMORY");
    c
}

/// The `memtide` binary under test, as a path.
pub fn memtide_path() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_memtide"))
}
