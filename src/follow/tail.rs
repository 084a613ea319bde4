//! Reads what was appended to a file since the last read, and notices truncation, deletion,
//! replacement (log rotation, a re-dumped snapshot, `x.json.tmp` renamed onto `x.json`) and
//! a rewrite in place (a restarted job truncating the file and writing past its old length:
//! the bytes already read are no longer there).

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
    /// The file's first bytes and the bytes just before `offset`, as read (up to [`PRINT`]
    /// each): where either differs on a later look, the file was rewritten in place.
    head: Vec<u8>,
    tail: Vec<u8>,
}

/// Bytes kept of each end of what was read, to tell a rewrite from an append.
const PRINT: u64 = 4096;

/// Up to `len` bytes of `path` from `from` (fewer where the file ends first).
fn read_at(path: &Path, from: u64, len: u64) -> std::io::Result<Vec<u8>> {
    let mut f = File::open(path)?;
    f.seek(SeekFrom::Start(from))?;
    let mut buf = Vec::with_capacity(len as usize);
    f.take(len).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Largest read per poll: decoding 1 MiB takes a few ms, so one huge append is applied in
/// slices with frames (and key presses) in between.
const MAX_READ: u64 = 1 << 20;

impl Tailer {
    /// Starts after `offset` bytes already read by the loader.
    pub fn new(path: &Path, offset: u64, appendable: bool) -> Tailer {
        let mut t = Tailer {
            path: path.to_path_buf(),
            offset,
            last: stat(path),
            appendable,
            head: Vec::new(),
            tail: Vec::new(),
        };
        t.remember();
        t
    }

    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Restarts after a reload that read `offset` bytes.
    pub fn reset(&mut self, offset: u64) {
        self.offset = offset;
        self.last = stat(&self.path);
        self.remember();
    }

    /// The ends of what was read, as the file holds them now (empty where unreadable: the
    /// next poll says what became of the file).
    fn ends(&self) -> (Vec<u8>, Vec<u8>) {
        let head = read_at(&self.path, 0, self.offset.min(PRINT)).unwrap_or_default();
        let from = self
            .offset
            .saturating_sub(PRINT)
            .max(PRINT.min(self.offset));
        let tail = read_at(&self.path, from, self.offset - from).unwrap_or_default();
        (head, tail)
    }

    fn remember(&mut self) {
        (self.head, self.tail) = self.ends();
    }

    /// Whether the bytes already read changed: the file was truncated and written again
    /// (past its old length, or to it), which its size alone does not show.
    fn rewritten(&self) -> bool {
        let (head, tail) = self.ends();
        head != self.head || tail != self.tail
    }

    /// Takes in `buf`, read at the old offset: the ends of what was read move on.
    fn extend(&mut self, buf: &[u8]) {
        let room = (PRINT as usize).saturating_sub(self.head.len());
        self.head.extend_from_slice(&buf[..room.min(buf.len())]);
        self.offset += buf.len() as u64;
        let from = self
            .offset
            .saturating_sub(PRINT)
            .max(PRINT.min(self.offset));
        // The tail: the bytes from `from` to the offset, from the old tail and `buf`.
        let keep = (self.offset - from) as usize;
        let mut tail = std::mem::take(&mut self.tail);
        tail.extend_from_slice(&buf[buf.len().saturating_sub(keep)..]);
        let cut = tail.len().saturating_sub(keep);
        tail.drain(..cut);
        self.tail = tail;
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
        if self.appendable && now != self.last && self.rewritten() {
            self.last = now;
            return Ok(Some(TailEvent::Reload(
                "the file was rewritten in place (the bytes already read changed)",
            )));
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
        let buf = read_at(&self.path, self.offset, want)?;
        self.extend(&buf);
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

    const REWRITTEN: Option<TailEvent> = Some(TailEvent::Reload(
        "the file was rewritten in place (the bytes already read changed)",
    ));

    /// Truncated and written again past its old length (a restarted job on the same path),
    /// or to the very same length: the size only grew or stayed, the bytes read changed.
    #[test]
    fn a_rewrite_in_place_is_no_append() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("run.jsonl");
        let first = b"{\"t\":1}\n".repeat(100);
        std::fs::write(&p, &first).expect("write");
        let mut t = Tailer::new(&p, first.len() as u64, true);
        let mut grown = first.clone();
        grown.extend_from_slice(b"{\"t\":2}\n");
        std::fs::write(&p, &grown).expect("append");
        assert_eq!(
            t.poll().expect("poll"),
            Some(TailEvent::Appended(b"{\"t\":2}\n".to_vec()))
        );
        // A new run: another first line, longer than the old file.
        let mut again = b"{\"t\":9}\n".to_vec();
        again.extend_from_slice(&grown);
        std::fs::write(&p, &again).expect("rewrite");
        assert_eq!(t.poll().expect("poll"), REWRITTEN);
        // Read again whole: the same length written anew differs at its end.
        t.reset(again.len() as u64);
        let n = again.len();
        again[n - 2] = b'7';
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(&p, &again).expect("rewrite");
        assert_eq!(t.poll().expect("poll"), REWRITTEN);
    }

    /// Past 8 KiB, the first 4 KiB and the 4 KiB before the offset are what is compared; the
    /// ends follow the appends, so a rewrite of the last bytes read is seen.
    #[test]
    fn the_ends_follow_the_appends() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("run.jsonl");
        std::fs::write(&p, b"").expect("write");
        let mut t = Tailer::new(&p, 0, true);
        let mut all = Vec::new();
        for k in 0..40u8 {
            let chunk = vec![b'a' + k % 26; 700];
            all.extend_from_slice(&chunk);
            std::fs::write(&p, &all).expect("append");
            assert_eq!(t.poll().expect("poll"), Some(TailEvent::Appended(chunk)));
            assert_eq!(t.head, all[..all.len().min(4096)]);
            let from = all.len().saturating_sub(4096).max(all.len().min(4096));
            assert_eq!(t.tail, all[from..]);
        }
        let n = all.len();
        all[n - 100] = b'#';
        all.push(b'\n');
        std::fs::write(&p, &all).expect("rewrite");
        assert_eq!(t.poll().expect("poll"), REWRITTEN);
    }
}
