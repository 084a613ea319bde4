//! A refillable byte window under the JSON parser: each trace event is parsed from a slice
//! (serde_json's fast slice reader) and the window slides on, so memory stays constant and a
//! parse error maps to an exact byte offset.

use crate::formats::memory_timeline::line_col_offset;
use crate::formats::source::Progress;
use std::io::{self, Read};
use std::sync::mpsc::{channel, sync_channel, Receiver, Sender};

const CHUNK: usize = 8 << 20;
/// Size of a read-ahead chunk. With four in flight (two queued, one being filled, one
/// parsed) the window costs ~8 MiB, and a chunk is still in the shared cache when parsed.
const AHEAD_CHUNK: usize = 2 << 20;
/// Largest single JSON value (string, number, …) the window widens for: 64 MiB.
pub const MAX_VALUE: usize = 64 << 20;

/// Why the stream could not be read on.
#[derive(Debug)]
pub enum FeedError {
    /// The input ended inside a value; `offset` is the total decompressed length.
    Eof {
        offset: u64,
    },
    /// Malformed JSON at a byte offset of the decompressed stream.
    Json {
        offset: u64,
        line: u64,
        msg: String,
    },
    Io(io::Error),
    Cancelled,
}

/// The window: `buf[pos..end]` is unread, `base` is the stream offset of `buf[0]`.
pub struct Feed<R> {
    src: Src<R>,
    buf: Vec<u8>,
    /// First byte of `buf` that is stream data (chunks keep a gap in front).
    start: usize,
    pos: usize,
    end: usize,
    /// Stream offset of `buf[0]` (negative while a chunk's gap is in front of offset 0).
    base: i64,
    eof: bool,
    progress: Progress,
    /// Newlines before `buf[start]`, for line numbers in messages.
    lines: u64,
    /// Read-ahead chunks: newlines in `buf[start..end]` (the reader thread counts each
    /// chunk's, so the parser only counts the short tail carried over).
    buf_lines: u64,
    /// Whitespace is only JSON's four (space, tab, CR, LF), as serde_json has it.
    strict: bool,
}

/// Where more input comes from: any reader, or the read-ahead thread's chunks (taken over
/// without copying: the unread tail is put into the gap in front of the next chunk).
enum Src<R> {
    /// A plain reader: unit tests, and a load on one thread.
    Read(R),
    Chunks(ReadAhead),
}

/// Room kept in front of each chunk for the unread tail of the previous one.
const GAP: usize = 64 << 10;

impl Feed<io::Empty> {
    /// A feed over the read-ahead thread's chunks.
    pub fn chunks(ra: ReadAhead, progress: Progress) -> Self {
        Feed::with_src(Src::Chunks(ra), Vec::new(), progress)
    }
}

impl<R: Read> Feed<R> {
    pub fn new(r: R, progress: Progress) -> Self {
        Feed::with_src(Src::Read(r), vec![0; CHUNK], progress)
    }

    fn with_src(src: Src<R>, buf: Vec<u8>, progress: Progress) -> Self {
        Feed {
            src,
            buf,
            start: 0,
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
            progress,
            lines: 0,
            buf_lines: 0,
            strict: false,
        }
    }

    /// Between tokens, accept only JSON whitespace (a form feed is an error, as inside a
    /// value parsed by serde_json).
    pub fn strict(mut self) -> Self {
        self.strict = true;
        self
    }

    /// Stream offset of the next unread byte.
    pub fn offset(&self) -> u64 {
        (self.base + self.pos as i64) as u64
    }

    fn read_error(&mut self, e: io::Error) -> Result<bool, FeedError> {
        match e.kind() {
            // A gzip stream cut short: the data before the cut is still good.
            io::ErrorKind::UnexpectedEof => {
                self.eof = true;
                Ok(false)
            }
            io::ErrorKind::Interrupted if self.progress.is_cancelled() => Err(FeedError::Cancelled),
            _ if self.progress.is_cancelled() => Err(FeedError::Cancelled),
            _ => Err(FeedError::Io(e)),
        }
    }

    /// Takes the next chunk over; the unread tail goes into its gap (or, if longer than the
    /// gap, the chunk is appended by copying).
    fn fill_chunk(&mut self) -> Result<bool, FeedError> {
        let Src::Chunks(ra) = &mut self.src else {
            return Ok(false);
        };
        let (mut nb, n, chunk_lines) = match ra.next_chunk() {
            Ok(Some(x)) => x,
            Ok(None) => {
                self.eof = true;
                return Ok(false);
            }
            Err(e) => return self.read_error(e),
        };
        let tail_lines = count_lines(&self.buf[self.pos..self.end]);
        self.lines += self.buf_lines - tail_lines;
        self.buf_lines = tail_lines + chunk_lines;
        let left = self.end - self.pos;
        if left <= GAP {
            let ns = GAP - left;
            nb[ns..GAP].copy_from_slice(&self.buf[self.pos..self.end]);
            // The old buf[pos] is the new buf[ns].
            self.base += self.pos as i64 - ns as i64;
            let old = std::mem::replace(&mut self.buf, nb);
            ra.recycle(old);
            self.start = ns;
            self.pos = ns;
            self.end = GAP + n;
        } else {
            // A value longer than the gap: keep it and append the chunk's bytes.
            self.buf.copy_within(self.pos..self.end, 0);
            self.base += self.pos as i64;
            self.end = left;
            self.start = 0;
            self.pos = 0;
            self.buf.truncate(self.end);
            self.buf.extend_from_slice(&nb[GAP..GAP + n]);
            self.end = self.buf.len();
            ra.recycle(nb);
        }
        Ok(true)
    }

    /// Reads more input; false at the end of the stream.
    fn fill(&mut self) -> Result<bool, FeedError> {
        if self.eof {
            return Ok(false);
        }
        if matches!(self.src, Src::Chunks(_)) {
            return self.fill_chunk();
        }
        let Src::Read(r) = &mut self.src else {
            return Ok(false);
        };
        if self.pos > 0 {
            self.lines +=
                memchr::memchr_iter(b'\n', &self.buf[self.start..self.pos]).count() as u64;
            self.buf.copy_within(self.pos..self.end, 0);
            self.base += self.pos as i64;
            self.end -= self.pos;
            self.pos = 0;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            // One value larger than the window: widen it, up to a limit (a value of a trace
            // is a few KiB; a 4 GiB string is a hostile file, not a trace).
            if self.buf.len() >= MAX_VALUE {
                return Err(FeedError::Json {
                    offset: self.base as u64,
                    line: self.lines + 1,
                    msg: format!(
                        "a single JSON value exceeds the {} MiB limit on one value",
                        MAX_VALUE >> 20
                    ),
                });
            }
            let more = self.buf.len();
            crate::budget::try_grow(&mut self.buf, more, "the buffer for one JSON value").map_err(
                |msg| FeedError::Json {
                    offset: self.base as u64,
                    line: self.lines + 1,
                    msg,
                },
            )?;
            self.buf.resize(self.buf.len() * 2, 0);
        }
        loop {
            match r.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e)
                    if e.kind() == io::ErrorKind::Interrupted && !self.progress.is_cancelled() => {}
                Err(e) => return self.read_error(e),
            }
        }
    }

    /// The next non-whitespace byte, not consumed; None at the end of the stream.
    pub fn peek(&mut self) -> Result<Option<u8>, FeedError> {
        loop {
            while self.pos < self.end
                && if self.strict {
                    matches!(self.buf[self.pos], b' ' | b'\n' | b'\r' | b'\t')
                } else {
                    self.buf[self.pos].is_ascii_whitespace()
                }
            {
                self.pos += 1;
            }
            if self.pos < self.end {
                return Ok(Some(self.buf[self.pos]));
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    pub fn bump(&mut self) {
        self.pos += 1;
    }

    /// Consumes `c` (after whitespace) or fails saying what was expected.
    pub fn expect(&mut self, c: u8, what: &str) -> Result<(), FeedError> {
        match self.peek()? {
            Some(x) if x == c => {
                self.bump();
                Ok(())
            }
            Some(x) => Err(self.error_here(format!("expected {what}, found {:?}", char::from(x)))),
            None => Err(FeedError::Eof {
                offset: self.offset(),
            }),
        }
    }

    pub fn error_here(&self, msg: String) -> FeedError {
        let line = self.lines
            + 1
            + memchr::memchr_iter(b'\n', &self.buf[self.start..self.pos]).count() as u64;
        FeedError::Json {
            offset: self.offset(),
            line,
            msg,
        }
    }

    /// Parses one value at the window's start with `f`, which returns the value and the bytes
    /// it used (None: more input needed). Refills and retries when the value is cut off.
    pub fn parse<O>(
        &mut self,
        mut f: impl FnMut(&[u8]) -> Result<Option<(O, usize)>, serde_json::Error>,
    ) -> Result<O, FeedError> {
        loop {
            let slice = &self.buf[self.pos..self.end];
            match f(slice) {
                Ok(Some((o, used))) => {
                    self.pos += used;
                    return Ok(o);
                }
                Ok(None) => {}
                Err(e) if e.is_eof() => {}
                Err(e) if e.is_io() => return Err(FeedError::Io(e.into())),
                Err(e) => {
                    let rel = line_col_offset(slice, e.line(), e.column());
                    let line = self.lines
                        + memchr::memchr_iter(b'\n', &self.buf[self.start..self.pos]).count()
                            as u64
                        + e.line() as u64;
                    let msg = e.to_string();
                    let msg = match msg.rfind(" at line ") {
                        Some(i) => msg[..i].to_string(),
                        None => msg,
                    };
                    return Err(FeedError::Json {
                        offset: self.offset() + rel,
                        line,
                        msg,
                    });
                }
            }
            if !self.fill()? {
                return Err(FeedError::Eof {
                    offset: (self.base + self.end as i64) as u64,
                });
            }
        }
    }

    /// Parses one owned value. A value touching the window's end may be a cut-off number,
    /// so it is parsed again with more input (values here have no side effects).
    pub fn value<T: serde::de::DeserializeOwned>(&mut self) -> Result<T, FeedError> {
        let at_eof = self.eof;
        self.parse(|s| {
            let mut it = serde_json::Deserializer::from_slice(s).into_iter::<T>();
            match it.next() {
                Some(Ok(_)) if it.byte_offset() == s.len() && !at_eof => Ok(None),
                Some(Ok(v)) => Ok(Some((v, it.byte_offset()))),
                Some(Err(e)) => Err(e),
                None => Ok(None),
            }
        })
    }
}

/// Newlines in `b`: byte-wide sums over runs of 255 (which the compiler vectorises; a
/// search for each newline is slower where lines are short).
fn count_lines(b: &[u8]) -> u64 {
    b.chunks(255)
        .map(|c| c.iter().fold(0u8, |n, &x| n + u8::from(x == b'\n')) as u64)
        .sum()
}

/// Chunks read (and decompressed) on another thread, so I/O and gunzip overlap parsing.
/// Buffers come back through `back` and are reused: no fresh pages per chunk.
pub struct ReadAhead {
    /// A chunk: its buffer, its length after the gap and the newlines in it.
    rx: Receiver<io::Result<(Vec<u8>, usize, u64)>>,
    back: Sender<Vec<u8>>,
    done: bool,
}

impl ReadAhead {
    /// The next chunk: data at `buf[GAP..GAP + n]`, with its newlines; None at the end.
    fn next_chunk(&mut self) -> io::Result<Option<(Vec<u8>, usize, u64)>> {
        if self.done {
            return Ok(None);
        }
        match self.rx.recv() {
            Ok(Ok((_, 0, _))) | Err(_) => {
                self.done = true;
                Ok(None)
            }
            Ok(Ok(x)) => Ok(Some(x)),
            Ok(Err(e)) => {
                self.done = true;
                Err(e)
            }
        }
    }

    fn recycle(&mut self, buf: Vec<u8>) {
        if buf.len() >= GAP + AHEAD_CHUNK {
            let _ = self.back.send(buf);
        }
    }
}

/// Runs `f` on a [`ReadAhead`] fed from `r` by a scoped reader thread.
pub fn with_read_ahead<R: Read + Send, T>(
    mut r: R,
    progress: &Progress,
    f: impl FnOnce(ReadAhead) -> T,
) -> T {
    let (tx, rx) = sync_channel::<io::Result<(Vec<u8>, usize, u64)>>(2);
    let (back, back_rx) = channel::<Vec<u8>>();
    std::thread::scope(|s| {
        let progress = progress.clone();
        s.spawn(move || loop {
            let mut buf = back_rx
                .try_recv()
                .unwrap_or_else(|_| vec![0; GAP + AHEAD_CHUNK]);
            let mut n = 0;
            let res = loop {
                if GAP + n == buf.len() {
                    break Ok(());
                }
                match r.read(&mut buf[GAP + n..]) {
                    Ok(0) => break Ok(()),
                    Ok(k) => n += k,
                    Err(e)
                        if e.kind() == io::ErrorKind::Interrupted && !progress.is_cancelled() => {}
                    Err(e) => break Err(e),
                }
            };
            let last = n == 0 || res.is_err();
            // A partial chunk before an error is still delivered, then the error.
            let lines = count_lines(&buf[GAP..GAP + n]);
            if n > 0 && tx.send(Ok((buf, n, lines))).is_err() {
                return;
            }
            if let Err(e) = res {
                let _ = tx.send(Err(e));
                return;
            }
            if last {
                let _ = tx.send(Ok((Vec::new(), 0, 0)));
                return;
            }
        });
        let ra = ReadAhead {
            rx,
            back,
            done: false,
        };
        // `ra` is dropped inside `f` or at its end: the reader thread then stops sending.
        f(ra)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Yields its bytes, then behaves like the cancelled input reader.
    struct Cancels {
        data: &'static [u8],
        progress: Progress,
    }
    impl Read for Cancels {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.data.is_empty() {
                self.progress.cancel();
                return Err(crate::formats::source::cancelled_io());
            }
            let k = buf.len().min(self.data.len()).min(7);
            buf[..k].copy_from_slice(&self.data[..k]);
            self.data = &self.data[k..];
            Ok(k)
        }
    }

    #[test]
    fn cancellation_stops_instead_of_retrying() {
        let progress = Progress::new();
        let r = Cancels {
            data: b"{\"traceEvents\": [{\"ph\": \"i\"}, ",
            progress: progress.clone(),
        };
        let res = with_read_ahead(r, &progress, |ra| {
            let mut feed = Feed::chunks(ra, progress.clone());
            let mut n = 0;
            feed.expect(b'{', "{")?;
            while feed.peek()?.is_some() {
                feed.bump();
                n += 1;
            }
            Ok::<_, FeedError>(n)
        });
        assert!(matches!(res, Err(FeedError::Cancelled)), "{res:?}");
    }

    #[test]
    fn values_cut_at_the_window_end_are_reread() {
        // A number that ends exactly at a read boundary must not be taken as complete.
        let progress = Progress::new();
        let data: &[u8] = b"12345, 6";
        let mut feed = Feed::new(data, progress);
        let v: u64 = feed.value().expect("number");
        assert_eq!(v, 12345);
        feed.expect(b',', ",").expect("comma");
        assert!(matches!(feed.value::<u64>(), Err(FeedError::Eof { .. })));
    }
}
