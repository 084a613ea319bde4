//! Writing test files the way a running job does: over the old bytes in place, the length
//! never dropping on the way (no truncation for a follower to see).

use std::io::Write as _;
use std::path::Path;

/// Writes `bytes` over `path` from its first byte, keeping its inode; what lies past them
/// stays.
pub fn overwrite_in_place(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open for writing");
    f.write_all(bytes).expect("overwrite");
}
