//! The byte stream under the JSON parser: counts bytes and lines so a parser error's
//! line/column becomes a byte offset, and turns cancellation into an error the parser does not
//! retry (std's byte iterator retries `Interrupted` forever).

use crate::formats::source::Progress;
use std::cell::RefCell;
use std::io::{self, Read};
use std::rc::Rc;

/// Newline offsets of the most recent chunks, enough to place an error's line exactly.
struct Chunk {
    lines_before: u64,
    newlines: Vec<u64>,
}

/// Position state, shared with the caller while the parser owns the reader.
pub struct Position {
    pub offset: u64,
    lines: u64,
    recent: [Chunk; 2],
    cancelled: bool,
}

/// A reader that tracks its position in the decompressed stream.
pub struct Tracker<R> {
    inner: R,
    progress: Progress,
    pos: Rc<RefCell<Position>>,
}

impl<R: Read> Tracker<R> {
    pub fn new(inner: R, progress: Progress) -> (Self, Rc<RefCell<Position>>) {
        let empty = || Chunk {
            lines_before: 0,
            newlines: Vec::new(),
        };
        let pos = Rc::new(RefCell::new(Position {
            offset: 0,
            lines: 0,
            recent: [empty(), empty()],
            cancelled: false,
        }));
        (
            Tracker {
                inner,
                progress,
                pos: pos.clone(),
            },
            pos,
        )
    }
}

impl Position {
    pub fn was_cancelled(&self) -> bool {
        self.cancelled
    }

    /// Byte offset of (1-based) `line`, `column`, if its line start is still known; else the
    /// best lower bound (the start of the oldest chunk remembered).
    pub fn offset_of(&self, line: usize, column: usize) -> (u64, bool) {
        let col = (column as u64).saturating_sub(1);
        if line <= 1 {
            return (col, true);
        }
        let want = line as u64 - 1; // the newline ending line `line - 1`, 1-based count
        for c in &self.recent {
            if want > c.lines_before && want <= c.lines_before + c.newlines.len() as u64 {
                let nl = c.newlines[(want - c.lines_before - 1) as usize];
                return (nl + 1 + col, true);
            }
        }
        let oldest = self.recent[0]
            .newlines
            .first()
            .copied()
            .unwrap_or(self.offset);
        (oldest, false)
    }
}

impl<R: Read> Read for Tracker<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut guard = self.pos.borrow_mut();
        let this = &mut *guard;
        if self.progress.is_cancelled() {
            this.cancelled = true;
            return Err(io::Error::other("cancelled"));
        }
        let n = match self.inner.read(buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted && self.progress.is_cancelled() => {
                this.cancelled = true;
                return Err(io::Error::other("cancelled"));
            }
            Err(e) => return Err(e),
        };
        if n > 0 {
            let this = &mut *guard;
            // Rotate: the older record is reused for this chunk.
            this.recent.swap(0, 1);
            let base = this.offset;
            let c = &mut this.recent[1];
            c.lines_before = this.lines;
            c.newlines.clear();
            c.newlines
                .extend(memchr::memchr_iter(b'\n', &buf[..n]).map(|p| base + p as u64));
            this.lines += c.newlines.len() as u64;
            this.offset += n as u64;
        }
        Ok(n)
    }
}
