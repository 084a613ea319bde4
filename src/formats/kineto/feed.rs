//! A refillable byte window under the JSON parser: each trace event is parsed from a slice
//! (serde_json's fast slice reader) and the window slides on, so memory stays constant and a
//! parse error maps to an exact byte offset.

use crate::formats::memory_timeline::line_col_offset;
use crate::formats::source::Progress;
use std::io::{self, Read};

const CHUNK: usize = 8 << 20;

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
    r: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    base: u64,
    eof: bool,
    progress: Progress,
    /// Newlines before `buf[0]`, for line numbers in messages.
    lines: u64,
}

impl<R: Read> Feed<R> {
    pub fn new(r: R, progress: Progress) -> Self {
        Feed {
            r,
            buf: vec![0; CHUNK],
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
            progress,
            lines: 0,
        }
    }

    /// Stream offset of the next unread byte.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Reads more input; false at the end of the stream.
    fn fill(&mut self) -> Result<bool, FeedError> {
        if self.eof {
            return Ok(false);
        }
        if self.pos > 0 {
            self.lines += memchr::memchr_iter(b'\n', &self.buf[..self.pos]).count() as u64;
            self.buf.copy_within(self.pos..self.end, 0);
            self.base += self.pos as u64;
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            // One value larger than the window: widen it.
            self.buf.resize(self.buf.len() * 2, 0);
        }
        loop {
            match self.r.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                // A gzip stream cut short: the data before the cut is still good.
                Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                    self.eof = true;
                    return Ok(false);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    if self.progress.is_cancelled() {
                        return Err(FeedError::Cancelled);
                    }
                }
                Err(e) => return Err(FeedError::Io(e)),
            }
        }
    }

    /// The next non-whitespace byte, not consumed; None at the end of the stream.
    pub fn peek(&mut self) -> Result<Option<u8>, FeedError> {
        loop {
            while self.pos < self.end && self.buf[self.pos].is_ascii_whitespace() {
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
        let line =
            self.lines + 1 + memchr::memchr_iter(b'\n', &self.buf[..self.pos]).count() as u64;
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
                        + memchr::memchr_iter(b'\n', &self.buf[..self.pos]).count() as u64
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
                    offset: self.base + self.end as u64,
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
