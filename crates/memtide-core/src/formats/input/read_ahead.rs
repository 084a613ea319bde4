//! Reading ahead on a second thread: the file's read calls (and, for `.gz`, the inflating)
//! run there into a few reused chunks while the parser works on the chunk before. The bytes
//! and errors the parser sees are exactly those of the wrapped reader, in order.

use std::io::{self, Read};
use std::sync::mpsc::{sync_channel as bounded, Receiver, SyncSender as Sender};

/// Size of one chunk handed from the reading thread to the parser.
const CHUNK: usize = 1 << 20;
/// Chunks in flight: bounds the memory read ahead (and how far progress runs ahead).
const IN_FLIGHT: usize = 4;

/// A reader whose source is read on its own thread. Dropping it stops that thread at its
/// next chunk.
pub(crate) struct ReadAhead {
    full: Receiver<io::Result<Vec<u8>>>,
    empty: Sender<Vec<u8>>,
    cur: Vec<u8>,
    pos: usize,
    done: bool,
}

impl ReadAhead {
    /// Starts reading `inner` on a new thread; falls back to reading it here when no thread
    /// can be started.
    pub fn spawn(inner: Box<dyn Read + Send>) -> Box<dyn Read + Send> {
        Self::with_chunk(inner, CHUNK)
    }

    fn with_chunk(inner: Box<dyn Read + Send>, chunk: usize) -> Box<dyn Read + Send> {
        let (full_tx, full) = bounded(IN_FLIGHT);
        let (empty, empty_rx) = bounded(IN_FLIGHT + 1);
        for _ in 0..IN_FLIGHT {
            // Chunks are allocated on first use by the reading thread.
            let _ = empty.send(Vec::new());
        }
        let started = crate::worker::spawn("memtide-read", inner, move |inner| {
            pump(inner, chunk, &full_tx, &empty_rx);
        });
        match started {
            Ok(_) => Box::new(ReadAhead {
                full,
                empty,
                cur: Vec::new(),
                pos: 0,
                done: false,
            }),
            // No thread: the reader is read here.
            Err(inner) => inner.unwrap_or_else(|| Box::new(io::empty())),
        }
    }
}

/// The reading thread: fills chunks until the end, an error, or the parser is gone.
fn pump(
    mut inner: Box<dyn Read + Send>,
    chunk: usize,
    full: &Sender<io::Result<Vec<u8>>>,
    empty: &Receiver<Vec<u8>>,
) {
    while let Ok(mut buf) = empty.recv() {
        buf.resize(chunk, 0);
        let (n, err) = fill(&mut inner, &mut buf);
        buf.truncate(n);
        // The end of the stream is an empty chunk.
        let end = n == 0 && err.is_none();
        if (n > 0 || end) && full.send(Ok(buf)).is_err() {
            return;
        }
        if let Some(e) = err {
            let _ = full.send(Err(e));
            return;
        }
        if end {
            return;
        }
    }
}

/// Reads until `buf` is full or the stream ends (retrying interruptions, as `read_exact`
/// does): the bytes read, and the error that stopped it, if one did.
fn fill(r: &mut dyn Read, buf: &mut [u8]) -> (usize, Option<io::Error>) {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return (n, Some(e)),
        }
    }
    (n, None)
}

impl Read for ReadAhead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.cur.len() {
            if self.done || out.is_empty() {
                return Ok(0);
            }
            let spent = std::mem::take(&mut self.cur);
            self.pos = 0;
            let _ = self.empty.send(spent);
            match self.full.recv() {
                Ok(Ok(buf)) if buf.is_empty() => {
                    self.done = true;
                    return Ok(0);
                }
                Ok(Ok(buf)) => self.cur = buf,
                Ok(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
                Err(_) => {
                    self.done = true;
                    return Err(io::Error::other("the reading thread stopped"));
                }
            }
        }
        let n = out.len().min(self.cur.len() - self.pos);
        out[..n].copy_from_slice(&self.cur[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Gives `data` in pieces of `step` bytes, then fails with `err` if set (else ends).
    struct Pieces {
        data: Vec<u8>,
        at: usize,
        step: usize,
        err: Option<io::ErrorKind>,
        interrupted: bool,
    }

    impl Read for Pieces {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            if self.interrupted {
                self.interrupted = false;
                return Err(io::ErrorKind::Interrupted.into());
            }
            self.interrupted = self.at.is_multiple_of(3);
            if self.at == self.data.len() {
                return match self.err {
                    Some(k) => Err(io::Error::new(k, "boom")),
                    None => Ok(0),
                };
            }
            let n = self.step.min(out.len()).min(self.data.len() - self.at);
            out[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    fn data(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 31 % 251) as u8).collect()
    }

    fn pieces(n: usize, step: usize, err: Option<io::ErrorKind>) -> Box<dyn Read + Send> {
        Box::new(Pieces {
            data: data(n),
            at: 0,
            step,
            err,
            interrupted: false,
        })
    }

    #[test]
    fn every_byte_arrives_in_order_whatever_the_chunk_and_read_sizes() {
        for (n, step, chunk, out) in [
            (0, 1, 4, 7),
            (1, 1, 4, 7),
            (1000, 7, 16, 5),
            (1000, 100, 3, 64),
            (4096, 4096, 4096, 4096),
            (10_000, 333, 1000, 1),
        ] {
            let mut r = ReadAhead::with_chunk(pieces(n, step, None), chunk);
            let mut got = Vec::new();
            let mut buf = vec![0u8; out];
            loop {
                let k = r.read(&mut buf).unwrap();
                if k == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..k]);
            }
            assert_eq!(got, data(n), "n={n} step={step} chunk={chunk} out={out}");
            assert_eq!(r.read(&mut buf).unwrap(), 0, "the end stays the end");
        }
    }

    #[test]
    fn an_error_arrives_after_the_bytes_before_it() {
        let mut r = ReadAhead::with_chunk(pieces(5000, 64, Some(io::ErrorKind::InvalidData)), 1000);
        let mut got = Vec::new();
        let err = r.read_to_end(&mut got).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert_eq!(got, data(5000));
    }

    #[test]
    fn dropping_the_reader_stops_the_thread() {
        // An endless source: the thread must notice the parser is gone, not read forever.
        // It is dropped (flag set) when the thread ends.
        struct Endless(std::sync::Arc<std::sync::atomic::AtomicBool>);
        impl Read for Endless {
            fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
                out.fill(1);
                Ok(out.len())
            }
        }
        impl Drop for Endless {
            fn drop(&mut self) {
                self.0.store(true, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let ended = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut r = ReadAhead::with_chunk(Box::new(Endless(ended.clone())), 1024);
        let mut buf = [0u8; 10];
        r.read_exact(&mut buf).unwrap();
        assert_eq!(buf, [1u8; 10]);
        drop(r);
        let t = std::time::Instant::now();
        while !ended.load(std::sync::atomic::Ordering::SeqCst) {
            assert!(t.elapsed().as_secs() < 30, "the reading thread never ended");
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }
}
