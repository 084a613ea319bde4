//! Caps on what a side file may hold (a category sidecar, a rank's summary, a rules, theme or
//! device-log file): a reader that refuses to go past a limit on the bytes it yields (after
//! gzip, so a small `.gz` that inflates to gigabytes is refused at the limit, never held),
//! and whole-file reads of small text files that check the size first. The error names the
//! limit; the caller names the file.

use std::io::{self, Read};
use std::path::Path;

/// The error a [`Limited`] reader returns past its limit (carried inside an `io::Error`).
#[derive(Debug, thiserror::Error)]
#[error("{what} holds more than {}{}, the limit memtide reads", show(*.limit), gzip_note(*.gzip))]
pub(crate) struct TooLarge {
    pub what: &'static str,
    pub limit: u64,
    /// Whether the bytes counted are a gzip stream's decompressed content.
    pub gzip: bool,
}

fn gzip_note(gzip: bool) -> &'static str {
    if gzip {
        " once decompressed"
    } else {
        ""
    }
}

/// A byte count for a message: `64 MiB`, `1 GiB`, or bytes.
fn show(n: u64) -> String {
    match n {
        n if n >= 1 << 30 && n % (1 << 30) == 0 => format!("{} GiB", n >> 30),
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n => format!("{n} bytes"),
    }
}

/// The limit an I/O error says was passed, if it is a [`TooLarge`].
pub(crate) fn too_large(e: &io::Error) -> Option<&TooLarge> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<TooLarge>())
}

/// Reads `inner` until it ends, or fails with [`TooLarge`] once more than `limit` bytes came.
pub(crate) struct Limited<R> {
    inner: R,
    left: u64,
    what: &'static str,
    limit: u64,
    gzip: bool,
}

impl<R: Read> Limited<R> {
    /// `what` names the content in the error (e.g. "a category sidecar").
    pub fn new(inner: R, limit: u64, what: &'static str, gzip: bool) -> Self {
        Limited {
            inner,
            left: limit,
            what,
            limit,
            gzip,
        }
    }
}

impl<R: Read> Read for Limited<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        // One byte past the limit tells "exactly at the limit" from "over it".
        let want = buf
            .len()
            .min(usize::try_from(self.left.saturating_add(1)).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        if n as u64 > self.left {
            self.left = 0;
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                TooLarge {
                    what: self.what,
                    limit: self.limit,
                    gzip: self.gzip,
                },
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// Reads a file whole (a regular file only, see [`super::source::open_regular`]), refusing
/// one over `limit` bytes before reading it (and one that grows past it while read).
pub(crate) fn read_file(path: &Path, limit: u64, what: &'static str) -> io::Result<Vec<u8>> {
    let f = super::source::open_regular(path)?;
    let len = f.metadata()?.len();
    if len > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            TooLarge {
                what,
                limit,
                gzip: false,
            },
        ));
    }
    let mut bytes = Vec::with_capacity(len as usize);
    Limited::new(f, limit, what, false).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// `read_file` for a text file: its bytes as UTF-8.
pub fn read_text_file(path: &Path, limit: u64, what: &'static str) -> io::Result<String> {
    String::from_utf8(read_file(path, limit, what)?).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_at_the_limit_passes_and_one_byte_more_is_refused() {
        let data = vec![7u8; 1000];
        let mut out = Vec::new();
        Limited::new(&data[..], 1000, "a test file", false)
            .read_to_end(&mut out)
            .unwrap();
        assert_eq!(out, data);
        let mut out = Vec::new();
        let e = Limited::new(&data[..], 999, "a test file", true)
            .read_to_end(&mut out)
            .unwrap_err();
        let t = too_large(&e).expect("TooLarge");
        assert_eq!((t.limit, t.what), (999, "a test file"));
        assert!(out.len() <= 1000);
        assert_eq!(
            e.to_string(),
            "a test file holds more than 999 bytes once decompressed, the limit memtide reads"
        );
    }

    #[test]
    fn a_text_file_over_its_limit_is_refused_before_it_is_read() {
        let p = std::env::temp_dir().join(format!("memtide-limit-{}.toml", std::process::id()));
        std::fs::write(&p, "x = 1\n").unwrap();
        let fits = read_text_file(&p, 6, "a rules file");
        let over = read_text_file(&p, 5, "a rules file");
        let _ = std::fs::remove_file(&p);
        assert_eq!(fits.unwrap(), "x = 1\n");
        let e = over.unwrap_err();
        assert!(too_large(&e).is_some(), "{e}");
        assert!(e.to_string().contains("5 bytes"), "{e}");
        assert_eq!(show(64 << 20), "64 MiB");
        assert_eq!(show(2 << 30), "2 GiB");
    }
}
