//! The committed trace files, shared by the tests that check every one of them (part of
//! `support`): every file under the fixtures, data and samples that the caller's `keep`
//! accepts, sorted.

use std::path::{Path, PathBuf};

pub fn files(keep: impl Fn(&Path) -> bool) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    let mut dirs: Vec<PathBuf> = ["tests/fixtures", "tests/data", "sample-traces"]
        .iter()
        .map(|d| root.join(d))
        .collect();
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).expect("fixture directory").flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if keep(&p) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}
