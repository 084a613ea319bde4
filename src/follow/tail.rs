//! Reads what was appended to a file since the last read, and notices truncation, deletion and
//! replacement (log rotation, a re-dumped snapshot, `x.json.tmp` renamed onto `x.json`).

use super::watch::{stat, Stat};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// What changed since the last poll.
#[derive(Debug, PartialEq, Eq)]
pub enum TailEvent {
    /// New bytes at the end (only for append-only formats).
    Appended(Vec<u8>),
    /// The file shrank, was replaced or was recreated: reload it whole.
    Reload(&'static str),
    /// The file is gone (it may come back).
    Missing,
}

/// Tails one file from a byte offset.
pub struct Tailer {
    path: PathBuf,
    offset: u64,
    last: Stat,
    /// Append-only formats (JSONL) are tailed; others reload on any change.
    appendable: bool,
}

/// Largest read per poll: decoding 1 MiB takes a few ms, so one huge append is applied in
/// slices with frames (and key presses) in between.
const MAX_READ: u64 = 1 << 20;

impl Tailer {
    /// Starts after `offset` bytes already read by the loader.
    pub fn new(path: &Path, offset: u64, appendable: bool) -> Tailer {
        Tailer {
            path: path.to_path_buf(),
            offset,
            last: stat(path),
            appendable,
        }
    }

    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Restarts after a reload that read `offset` bytes.
    pub fn reset(&mut self, offset: u64) {
        self.offset = offset;
        self.last = stat(&self.path);
    }

    /// Checks the file once. `Ok(None)`: nothing new.
    pub fn poll(&mut self) -> std::io::Result<Option<TailEvent>> {
        let now = stat(&self.path);
        if !now.exists {
            if self.last.exists {
                self.last = now;
                return Ok(Some(TailEvent::Missing));
            }
            return Ok(None);
        }
        let replaced = self.last.exists && now.ino != self.last.ino && self.last.ino != 0;
        let recreated = !self.last.exists;
        if replaced || recreated {
            self.last = now;
            return Ok(Some(TailEvent::Reload(if replaced {
                "the file was replaced"
            } else {
                "the file was recreated"
            })));
        }
        if now.len < self.offset {
            self.last = now;
            return Ok(Some(TailEvent::Reload("the file was truncated")));
        }
        if !self.appendable {
            let changed = now != self.last;
            self.last = now;
            return Ok(changed.then_some(TailEvent::Reload("the file changed")));
        }
        if now.len == self.offset {
            self.last = now;
            return Ok(None);
        }
        let want = (now.len - self.offset).min(MAX_READ);
        let mut f = File::open(&self.path)?;
        f.seek(SeekFrom::Start(self.offset))?;
        let mut buf = Vec::with_capacity(want as usize);
        f.take(want).read_to_end(&mut buf)?;
        self.offset += buf.len() as u64;
        // Keep the old stat when the read stopped early, so the next poll reads on.
        if self.offset >= now.len {
            self.last = now;
        }
        if buf.is_empty() {
            return Ok(None);
        }
        Ok(Some(TailEvent::Appended(buf)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn appends_truncation_and_replacement() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("run.jsonl");
        std::fs::write(&p, b"abc\n").expect("write");
        let mut t = Tailer::new(&p, 4, true);
        assert_eq!(t.poll().expect("poll"), None);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .expect("open");
        f.write_all(b"def\n").expect("append");
        assert_eq!(
            t.poll().expect("poll"),
            Some(TailEvent::Appended(b"def\n".to_vec()))
        );
        std::fs::write(&p, b"x\n").expect("truncate");
        assert!(matches!(
            t.poll().expect("poll"),
            Some(TailEvent::Reload(_))
        ));
        t.reset(2);
        let tmp = dir.path().join("run.jsonl.tmp");
        std::fs::write(&tmp, b"new content\n").expect("write tmp");
        std::fs::rename(&tmp, &p).expect("rename");
        assert_eq!(
            t.poll().expect("poll"),
            Some(TailEvent::Reload("the file was replaced"))
        );
        std::fs::remove_file(&p).expect("rm");
        assert_eq!(t.poll().expect("poll"), Some(TailEvent::Missing));
    }
}
