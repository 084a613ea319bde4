//! The repository's files the core's own tests read (tests only).

use std::path::PathBuf;

/// The repository's root (the core lives in `crates/memtide-core`).
pub(crate) fn repo_root() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every snapshot that ran out of memory: the OOM fixtures in name order, then the bundled
/// sample.
pub(crate) fn oom_snapshots() -> Vec<PathBuf> {
    let root = repo_root();
    let mut files: Vec<PathBuf> = std::fs::read_dir(root.join("tests/fixtures/oom"))
        .map(|d| d.filter_map(|e| Some(e.ok()?.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|x| x == "pickle"));
    files.sort();
    files.push(root.join("sample-traces/cuda-oom.pickle"));
    files
}
