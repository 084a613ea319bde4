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

/// Where the repository keeps traces: the samples and every fixture directory.
const TRACE_DIRS: [&str; 4] = [
    "sample-traces",
    "tests/fixtures",
    "tests/data",
    "crates/memtide-core/tests/fixtures",
];

/// Every file under the repository's trace directories whose name a trace may have
/// (symbolic links not followed: the fixture links point inside the repository, which is
/// walked anyway), sorted; generator truth files left out.
pub fn trace_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() {
                walk(&e.path(), out);
            } else if t.is_file() {
                out.push(e.path());
            }
        }
    }
    let mut files = Vec::new();
    for d in TRACE_DIRS {
        walk(&root().join(d), &mut files);
    }
    files.sort();
    files.retain(|p| {
        let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        !n.ends_with(".truth.json")
            && [".pickle", ".json", ".jsonl", ".gz", ".pt"]
                .iter()
                .any(|x| n.ends_with(x))
    });
    files
}

/// `memtide summary PATH --json` (a trace or a job directory), asserting it succeeds.
pub fn summary_json(path: &Path) -> serde_json::Value {
    json_of(memtide().arg("summary").arg(path).arg("--json"))
}

/// `memtide diff --json [EXTRA] A B`, asserting it succeeds.
pub fn diff_json_paths(a: &Path, b: &Path, extra: &[&str]) -> serde_json::Value {
    json_of(
        memtide()
            .arg("diff")
            .arg("--json")
            .args(extra)
            .arg(a)
            .arg(b),
    )
}

/// The JSON a memtide command prints, asserting it succeeds.
fn json_of(cmd: &mut Command) -> serde_json::Value {
    let out = cmd.output().expect("memtide runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the command prints JSON")
}
