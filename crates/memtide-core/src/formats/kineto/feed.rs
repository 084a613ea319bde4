//! A refillable byte window under the JSON parser: each trace event is parsed from a slice
//! (serde_json's fast slice reader) and the window slides on, so memory stays constant and a
//! parse error maps to an exact byte offset.

mod skip;

use crate::formats::memory_timeline::line_col_offset;
use crate::formats::source::Progress;
use std::io::{self, Read};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{
    channel, sync_channel, Receiver, RecvError, Sender, SyncSender, TryRecvError, TrySendError,
};
use std::sync::Arc;

const CHUNK: usize = 8 << 20;
/// Size of a read-ahead chunk. With four in flight (two queued, one being filled, one
/// parsed) the window costs ~8 MiB, and a chunk is still in the shared cache when parsed.
const AHEAD_CHUNK: usize = 2 << 20;
/// Largest single JSON value (string, number, …) the window widens for: 64 MiB.
pub(crate) const MAX_VALUE: usize = 64 << 20;

/// Why the stream could not be read on.
#[derive(Debug)]
pub(crate) enum FeedError {
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

/// The window: `buf[pos..end]` is unread, `base` is the stream offset of `buf[0]`. `S` is
/// what a chunk may bring parsed ahead (see [`Spec`]).
pub(crate) struct Feed<R, S = ()> {
    src: Src<R, S>,
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
    /// Why the input ended early, when it was cut (a `.gz` cut inside its data): what was
    /// read before the cut is parsed, and [`Feed::end`] reports the cut.
    cut: Option<io::Error>,
    /// The newest chunk's values parsed ahead, if any.
    spec: Option<Spec<S>>,
}

/// Values of a chunk parsed ahead on another thread, from stream offset `start` to `end`: the
/// parser takes them over when it reaches `start` itself (see [`Feed::take_spec`]).
pub(crate) struct Spec<S> {
    pub start: u64,
    pub end: u64,
    pub part: S,
}

/// Where more input comes from: any reader, or the read-ahead thread's chunks (taken over
/// without copying: the unread tail is put into the gap in front of the next chunk).
enum Src<R, S> {
    /// A plain reader: unit tests, and a load on one thread.
    Read(R),
    Chunks(ReadAhead<S>),
}

/// Room kept in front of each chunk for the unread tail of the previous one.
const GAP: usize = 64 << 10;

impl<S> Feed<io::Empty, S> {
    /// A feed over the read-ahead thread's chunks.
    pub fn chunks(ra: ReadAhead<S>, progress: Progress) -> Self {
        Feed::with_src(Src::Chunks(ra), Vec::new(), progress)
    }
}

impl<R: Read, S> Feed<R, S> {
    pub fn new(r: R, progress: Progress) -> Self {
        Feed::with_src(Src::Read(r), vec![0; CHUNK], progress)
    }

    fn with_src(src: Src<R, S>, buf: Vec<u8>, progress: Progress) -> Self {
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
            cut: None,
            spec: None,
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
            // A gzip stream cut short: the data before the cut is still good (a value it
            // cuts is a truncation; a whole document is refused by `end`).
            io::ErrorKind::UnexpectedEof => {
                self.eof = true;
                self.cut = Some(e);
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
        let Chunk {
            buf: mut nb,
            n,
            lines: chunk_lines,
            spec,
            ..
        } = match ra.next_chunk() {
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
            // A value longer than the gap: keep it and append the chunk's bytes, up to the
            // limit on one value (as `fill` has it for a plain reader).
            if left + n > MAX_VALUE {
                ra.recycle(nb);
                return Err(self.too_long());
            }
            let more = (left + n).saturating_sub(self.buf.len());
            if let Err(msg) =
                crate::budget::try_grow(&mut self.buf, more, "the buffer for one JSON value")
            {
                ra.recycle(nb);
                return Err(FeedError::Json {
                    offset: self.offset(),
                    line: self.lines + 1,
                    msg,
                });
            }
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
        // Offsets are the stream's: still right whichever way the chunk was taken over.
        self.spec = spec;
        Ok(true)
    }

    /// The values parsed ahead from the current offset on, if a chunk brought some: the
    /// window moves past them. Called where the parser would parse the value at `start`.
    pub fn take_spec(&mut self) -> Option<S> {
        if self.spec.as_ref()?.start != self.offset() {
            return None;
        }
        let sp = self.spec.take()?;
        let to = usize::try_from(sp.end as i64 - self.base).ok()?;
        (to >= self.pos && to <= self.end).then(|| {
            self.pos = to;
            sp.part
        })
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
                return Err(self.too_long());
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

    /// The error for a value longer than [`MAX_VALUE`], at the value's start.
    fn too_long(&self) -> FeedError {
        FeedError::Json {
            offset: self.offset(),
            line: self.lines + 1,
            msg: format!(
                "a single JSON value exceeds the {} MiB limit on one value",
                MAX_VALUE >> 20
            ),
        }
    }

    /// Reads until the window holds at least `want` unread bytes or the input ends: false
    /// when nothing more came. A value cut off by the window's end is parsed again after
    /// this, so asking for twice what it had keeps the work linear in the value's length.
    fn fill_to(&mut self, want: usize) -> Result<bool, FeedError> {
        let mut any = false;
        while self.end - self.pos < want {
            if !self.fill()? {
                return Ok(any);
            }
            any = true;
        }
        Ok(any)
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

    /// The end of a whole document (after [`Feed::peek`] found no more input): an error
    /// when the input was cut, though the cut fell after the document's last byte (a `.gz`
    /// whose compressed data or trailer is missing cannot be trusted).
    pub fn end(&mut self) -> Result<(), FeedError> {
        match self.cut.take() {
            Some(e) => Err(FeedError::Io(e)),
            None => Ok(()),
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
                // An error at the window's last byte may be a value cut there (serde_json
                // calls `-`, `1.` or `1e` an invalid number, not an early end): read on.
                Err(e)
                    if !self.eof
                        && line_col_offset(slice, e.line(), e.column()) + 1
                            >= slice.len() as u64 => {}
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
            let had = self.end - self.pos;
            if !self.fill_to(had.saturating_mul(2).max(had + 1))? {
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
pub(crate) struct ReadAhead<S = ()> {
    rx: Receiver<io::Result<Chunk<S>>>,
    back: Sender<Vec<u8>>,
    done: bool,
    /// With a parse-ahead thread: the split of each chunk between it and the parser.
    split: Option<Arc<Split>>,
    /// The size of a chunk's data.
    chunk: usize,
}

/// Where the share of a chunk parsed ahead begins, in 1/1024ths of the chunk. Whichever side
/// waits for the other gives it less: the parser finding no chunk ready moves it on, the
/// parse-ahead thread finding the parser's queue full moves it back. So the two stay busy
/// whatever else shares the cores (the reader, a gunzip, other processes).
pub(crate) struct Split(AtomicU32);

impl Split {
    const ONE: u32 = 1024;
    const STEP: u32 = 8;
    const RANGE: std::ops::RangeInclusive<u32> = 64..=960;

    fn new() -> Self {
        Split(AtomicU32::new(Split::ONE / 2))
    }

    /// The byte of an `n`-byte chunk where its share parsed ahead begins.
    fn at(&self, n: usize) -> usize {
        let f = self.0.load(Ordering::Relaxed) as usize;
        n / Split::ONE as usize * f + n % Split::ONE as usize * f / Split::ONE as usize
    }

    fn nudge(&self, by: i64) {
        let f = i64::from(self.0.load(Ordering::Relaxed)) + by;
        let f = f.clamp(
            i64::from(*Split::RANGE.start()),
            i64::from(*Split::RANGE.end()),
        );
        self.0.store(f as u32, Ordering::Relaxed);
    }

    /// The parser waited: it takes more of each chunk.
    fn parser_waited(&self) {
        self.nudge(i64::from(Split::STEP));
    }

    /// The parse-ahead thread waited: it takes more of each chunk.
    fn ahead_waited(&self) {
        self.nudge(-i64::from(Split::STEP));
    }
}

/// One chunk of the stream: data at `buf[GAP..GAP + n]`, from stream offset `at`.
struct Chunk<S> {
    buf: Vec<u8>,
    n: usize,
    at: u64,
    /// Newlines in the data.
    lines: u64,
    spec: Option<Spec<S>>,
}

impl<S> Chunk<S> {
    /// The end of the stream.
    fn last() -> Self {
        Chunk {
            buf: Vec::new(),
            n: 0,
            at: 0,
            lines: 0,
            spec: None,
        }
    }
}

impl<S> ReadAhead<S> {
    /// The next chunk; None at the end.
    fn next_chunk(&mut self) -> io::Result<Option<Chunk<S>>> {
        if self.done {
            return Ok(None);
        }
        let next = match (&self.split, self.rx.try_recv()) {
            (_, Ok(x)) => Ok(x),
            (Some(split), Err(TryRecvError::Empty)) => {
                split.parser_waited();
                self.rx.recv()
            }
            (None, Err(TryRecvError::Empty)) => self.rx.recv(),
            (_, Err(TryRecvError::Disconnected)) => Err(RecvError),
        };
        match next {
            Ok(Ok(Chunk { n: 0, .. })) | Err(_) => {
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
        if buf.len() >= GAP + self.chunk {
            let _ = self.back.send(buf);
        }
    }
}

/// Runs `f` on a [`ReadAhead`] fed from `r` by a scoped reader thread.
pub(crate) fn with_read_ahead<R: Read + Send, T>(
    r: R,
    progress: &Progress,
    f: impl FnOnce(ReadAhead) -> T,
) -> T {
    with_parse_ahead(
        r,
        progress,
        None::<&fn(&[u8], usize) -> Option<(usize, usize, ())>>,
        f,
    )
}

/// [`with_read_ahead`], and when `ahead` is given, a second thread runs it on each chunk's
/// data before the parser gets the chunk: `ahead` returns the data's range it parsed and
/// what it found there, which becomes the chunk's [`Spec`].
pub(crate) fn with_parse_ahead<R, S, A, T>(
    r: R,
    progress: &Progress,
    ahead: Option<&A>,
    f: impl FnOnce(ReadAhead<S>) -> T,
) -> T
where
    R: Read + Send,
    S: Send,
    A: Fn(&[u8], usize) -> Option<(usize, usize, S)> + Sync,
{
    with_chunks_of(AHEAD_CHUNK, r, progress, ahead, f)
}

/// [`with_parse_ahead`] with chunks of `chunk` bytes (tests use small ones).
pub(crate) fn with_chunks_of<R, S, A, T>(
    chunk: usize,
    r: R,
    progress: &Progress,
    ahead: Option<&A>,
    f: impl FnOnce(ReadAhead<S>) -> T,
) -> T
where
    R: Read + Send,
    S: Send,
    A: Fn(&[u8], usize) -> Option<(usize, usize, S)> + Sync,
{
    let (back, back_rx) = channel::<Vec<u8>>();
    let progress = progress.clone();
    let split = ahead.map(|_| Arc::new(Split::new()));
    std::thread::scope(|s| {
        let rx = match ahead {
            None => {
                let (tx, rx) = sync_channel(2);
                s.spawn(move || read_chunks(r, chunk, &progress, &back_rx, &tx));
                rx
            }
            Some(ahead) => {
                let (tx, read_rx) = sync_channel(1);
                s.spawn(move || read_chunks(r, chunk, &progress, &back_rx, &tx));
                let (tx, rx) = sync_channel(1);
                let split = split.clone();
                s.spawn(move || {
                    if let Some(split) = split {
                        parse_chunks_ahead(ahead, &split, &read_rx, &tx)
                    }
                });
                rx
            }
        };
        let ra = ReadAhead {
            rx,
            back,
            done: false,
            split: split.clone(),
            chunk,
        };
        // `ra` is dropped inside `f` or at its end: the threads then stop sending.
        f(ra)
    })
}

/// The reader thread: fills chunks (reusing those sent back) until the end or an error.
fn read_chunks<R: Read, S>(
    mut r: R,
    chunk: usize,
    progress: &Progress,
    back_rx: &Receiver<Vec<u8>>,
    tx: &SyncSender<io::Result<Chunk<S>>>,
) {
    let mut at = 0u64;
    loop {
        let mut buf = back_rx.try_recv().unwrap_or_else(|_| vec![0; GAP + chunk]);
        let mut n = 0;
        let res = loop {
            if GAP + n == buf.len() {
                break Ok(());
            }
            match r.read(&mut buf[GAP + n..]) {
                Ok(0) => break Ok(()),
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted && !progress.is_cancelled() => {}
                Err(e) => break Err(e),
            }
        };
        let last = n == 0 || res.is_err();
        // A partial chunk before an error is still delivered, then the error.
        let lines = count_lines(&buf[GAP..GAP + n]);
        let next = Chunk {
            buf,
            n,
            at,
            lines,
            spec: None,
        };
        at += n as u64;
        if n > 0 && tx.send(Ok(next)).is_err() {
            return;
        }
        if let Err(e) = res {
            let _ = tx.send(Err(e));
            return;
        }
        if last {
            let _ = tx.send(Ok(Chunk::last()));
            return;
        }
    }
}

/// The parse-ahead thread: passes each chunk on with what `ahead` parsed of it, from the
/// byte that `split` names on.
fn parse_chunks_ahead<S, A>(
    ahead: &A,
    split: &Split,
    rx: &Receiver<io::Result<Chunk<S>>>,
    tx: &SyncSender<io::Result<Chunk<S>>>,
) where
    A: Fn(&[u8], usize) -> Option<(usize, usize, S)>,
{
    while let Ok(mut msg) = rx.recv() {
        if let Ok(c) = &mut msg {
            if c.n > 0 {
                c.spec = ahead(&c.buf[GAP..GAP + c.n], split.at(c.n))
                    .filter(|&(start, end, _)| start <= end && end <= c.n)
                    .map(|(start, end, part)| Spec {
                        start: c.at + start as u64,
                        end: c.at + end as u64,
                        part,
                    });
            }
        }
        match tx.try_send(msg) {
            Ok(()) => {}
            Err(TrySendError::Full(msg)) => {
                split.ahead_waited();
                if tx.send(msg).is_err() {
                    return;
                }
            }
            Err(TrySendError::Disconnected(_)) => return,
        }
    }
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

    /// The split names a byte inside the chunk, moves by whichever side waited and stays in
    /// its range.
    #[test]
    fn the_split_moves_to_the_side_that_waited() {
        let s = Split::new();
        assert_eq!(s.at(2 << 20), 1 << 20);
        assert_eq!(s.at(1001), 500);
        s.parser_waited();
        assert_eq!(s.at(1024), 512 + Split::STEP as usize);
        for _ in 0..1000 {
            s.parser_waited();
        }
        assert_eq!(s.at(1024), *Split::RANGE.end() as usize);
        for _ in 0..1000 {
            s.ahead_waited();
        }
        assert_eq!(s.at(1024), *Split::RANGE.start() as usize);
        // No overflow for the largest chunk a value may widen the window to.
        assert!(s.at(usize::MAX) < usize::MAX);
    }

    #[test]
    fn values_cut_at_the_window_end_are_reread() {
        // A number that ends exactly at a read boundary must not be taken as complete.
        let progress = Progress::new();
        let data: &[u8] = b"12345, 6";
        let mut feed: Feed<_> = Feed::new(data, progress);
        let v: u64 = feed.value().expect("number");
        assert_eq!(v, 12345);
        feed.expect(b',', ",").expect("comma");
        assert!(matches!(feed.value::<u64>(), Err(FeedError::Eof { .. })));
    }
}
