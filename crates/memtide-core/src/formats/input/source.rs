//! Opening an input file: transparent gzip, a peek at the first bytes for detection, and a
//! byte counter for progress and cancellation.

use super::error::FormatError;
use super::gzip::GzipReader;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;
use std::sync::atomic::Ordering;

/// A load's progress: bytes of the file read so far (compressed bytes for `.gz`), the file
/// size, and a cancellation flag the reader honours.
pub use crate::worker::Progress;

/// Counts bytes read from the file and stops on cancellation.
struct Counting<R> {
    inner: R,
    progress: Progress,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.progress.is_cancelled() {
            return Err(cancelled_io());
        }
        let n = self.inner.read(buf)?;
        self.progress.done.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// An opened input: the decompressed stream, with its first bytes already read into `head`.
pub struct Input {
    pub head: Vec<u8>,
    pub rest: Box<dyn Read + Send>,
    pub gzip: bool,
    pub file_size: u64,
    /// Bytes skipped before `head`: a UTF-8 byte-order mark (3) some editors and Windows
    /// tools write before JSON text, else 0. Offsets in errors count from after it.
    pub skipped: u64,
}

/// The UTF-8 byte-order mark.
const BOM: &[u8] = b"\xef\xbb\xbf";

impl Input {
    /// The same input with the rest read (and inflated) ahead on a second thread when
    /// `threads` allow and the file is big enough for that to pay (`input/read_ahead.rs`):
    /// any gzip file over 1 MiB, a plain one over 128 MiB (below that, measured, moving the
    /// read calls to a thread gained nothing).
    pub fn read_ahead(mut self, threads: crate::formats::Threads) -> Input {
        let from = if self.gzip {
            GZIP_READ_AHEAD_FROM
        } else {
            PLAIN_READ_AHEAD_FROM
        };
        if threads.second_for(self.file_size, from) {
            self.rest = super::read_ahead::ReadAhead::spawn(self.rest);
        }
        self
    }

    /// A reader over the whole decompressed content (head first).
    pub fn into_reader(self) -> impl Read + Send {
        io::Cursor::new(self.head).chain(self.rest)
    }
}

/// A refusal of `open_regular` is a plain statement, not an "I/O error".
pub(crate) fn not_regular(e: io::Error) -> FormatError {
    if e.kind() == io::ErrorKind::InvalidInput {
        FormatError::Invalid(e.to_string())
    } else {
        FormatError::Io(e)
    }
}

/// The payload of the `io::Error` a cancelled read returns: typed, so that a cancellation
/// is told apart from other interruptions by its type (not by its message) after it crossed
/// `Read` layers (gzip, serde) that pass the error through.
#[derive(Debug, thiserror::Error)]
#[error("cancelled")]
pub(crate) struct CancelledRead;

/// The error a read returns once loading was cancelled. Not `Interrupted`: `read_to_end`
/// retries those, and a cancelled load would spin instead of ending.
pub(crate) fn cancelled_io() -> io::Error {
    io::Error::other(CancelledRead)
}

/// Whether `e` is the cancellation marker of [`cancelled_io`].
pub(crate) fn is_cancel(e: &io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<CancelledRead>())
}

/// Maps the cancellation marker back to [`FormatError::Cancelled`], and damage found in a
/// gzip stream to [`FormatError::Gzip`] (which says where in the file).
pub(crate) fn io_or_cancel(e: io::Error) -> FormatError {
    if is_cancel(&e) {
        return FormatError::Cancelled;
    }
    if let Some(t) = super::limit::too_large(&e) {
        return FormatError::Invalid(t.to_string());
    }
    if super::gzip::damage(&e).is_none() {
        return FormatError::Io(e);
    }
    match e
        .into_inner()
        .map(|inner| inner.downcast::<super::gzip::GzipDamage>())
    {
        Some(Ok(d)) => FormatError::Gzip(*d),
        Some(Err(other)) => FormatError::Io(io::Error::other(other)),
        None => FormatError::Io(io::Error::other("I/O error")),
    }
}

const HEAD: usize = 64 * 1024;

/// The compressed bytes the gzip reader takes at a time (flate2's own decoder takes 32 KiB).
const GZIP_INPUT_BUFFER: usize = 128 << 10;

/// Smaller files are read on the parser's thread (a thread costs more than it saves there).
const GZIP_READ_AHEAD_FROM: u64 = 1 << 20;
const PLAIN_READ_AHEAD_FROM: u64 = 128 << 20;

/// Opens `path` for reading if it is a regular file (symlinks followed). A FIFO, socket,
/// device or directory is refused before it is opened, so a pipe with no writer (or
/// `/dev/zero`, `/proc/kmsg`) cannot hang or flood a load: the error says what it is. The
/// open itself never blocks (`O_NONBLOCK`: a FIFO put in the file's place between the check
/// and the open is opened without waiting for a writer), and the handle is checked again:
/// what is read is the regular file checked. Every file memtide reads — traces, `--nsys`,
/// `--oom-message`, rules, themes, device logs, sidecars — is opened here.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let meta = std::fs::metadata(path)?;
    refuse_special(path, &meta)?;
    if meta.len() == 0 && is_kernel_fs(path) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is a kernel interface file, not a trace", path.display()),
        ));
    }
    let file = open_nonblocking(path)?;
    refuse_special(path, &file.metadata()?)?;
    Ok(file)
}

/// Refuses what is not a regular file, saying what it is.
fn refuse_special(path: &Path, meta: &std::fs::Metadata) -> io::Result<()> {
    if meta.is_file() {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} is {}, not a regular file: memtide reads trace files (save a stream to a file first; .gz is read directly)",
            path.display(),
            file_kind(meta)
        ),
    ))
}

/// Opens for reading without waiting on a FIFO's writer (reads of a regular file ignore the
/// flag).
fn open_nonblocking(path: &Path) -> io::Result<File> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NONBLOCK);
    }
    o.open(path)
}

/// What kind of file system object `meta` describes, for an error message.
fn file_kind(meta: &std::fs::Metadata) -> &'static str {
    let t = meta.file_type();
    if t.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if t.is_socket() {
            return "a socket";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
    }
    "not a regular file"
}

/// `/proc` and `/sys` files report size 0 and may block or never end when read.
fn is_kernel_fs(path: &Path) -> bool {
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    abs.starts_with("/proc") || abs.starts_with("/sys")
}

/// The buffer under a plain file: it serves the small reads (the magic, a JSON snapshot's
/// parser) and is smaller than every big reader's request (read-ahead chunks of 1 MiB, the
/// pickle's 4 MiB, JSONL's 4 MiB, Kineto's 2 and 8 MiB), so those bypass its copy once it is
/// drained. At 1 MiB, the read-ahead's 1 MiB chunks went through it, copied, all the way.
const FILE_BUFFER: usize = 256 << 10;

/// Opens `path`, unwrapping gzip when the content (not the name) says so.
pub fn open(path: &Path, progress: &Progress) -> Result<Input, FormatError> {
    let file = open_regular(path).map_err(not_regular)?;
    let file_size = file.metadata().map(|m| m.len()).unwrap_or(0);
    progress.total.store(file_size, Ordering::Relaxed);
    progress.done.store(0, Ordering::Relaxed);
    let raw = BufReader::with_capacity(
        FILE_BUFFER,
        Counting {
            inner: file,
            progress: progress.clone(),
        },
    );
    from_reader(raw, file_size)
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted && !is_cancel(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Wraps an open byte stream as `open` does: gzip unwrapped when the content (not the name)
/// says so, a UTF-8 byte-order mark dropped, the first 64 KiB in `head`. Also the entry for
/// in-memory input (the fuzz driver).
pub fn from_reader<R: Read + Send + 'static>(
    mut raw: R,
    file_size: u64,
) -> Result<Input, FormatError> {
    let mut magic = [0u8; 2];
    let n = read_up_to(&mut raw, &mut magic)?;
    let prefix = io::Cursor::new(magic[..n].to_vec()).chain(raw);
    let gzip = n == 2 && magic == [0x1f, 0x8b];
    let mut rest: Box<dyn Read + Send> = if gzip {
        Box::new(BufReader::with_capacity(
            1 << 20,
            GzipReader::new(BufReader::with_capacity(GZIP_INPUT_BUFFER, prefix)),
        ))
    } else {
        Box::new(prefix)
    };
    let mut head = vec![0u8; HEAD];
    let n = read_up_to(&mut rest, &mut head).map_err(io_or_cancel)?;
    head.truncate(n);
    // No format memtide reads starts with these bytes (a pickle starts with 0x80 or an
    // opcode below 0x80), so a BOM is text's and is dropped before detection.
    let skipped = if head.starts_with(BOM) {
        head.drain(..BOM.len());
        BOM.len() as u64
    } else {
        0
    };
    Ok(Input {
        head,
        rest,
        gzip,
        file_size,
        skipped,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod cancel_tests {
    use super::*;
    use std::io::{Cursor, Write};

    /// 256 KiB that compress poorly, so the stream is still being read after `head`.
    fn noise() -> Vec<u8> {
        let mut x: u32 = 1;
        (0..256 * 1024)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                (x >> 16) as u8
            })
            .collect()
    }

    fn cancelled_after_head(bytes: Vec<u8>) -> Result<Vec<u8>, FormatError> {
        let progress = Progress::new();
        let len = bytes.len() as u64;
        let raw = BufReader::with_capacity(
            1024,
            Counting {
                inner: Cursor::new(bytes),
                progress: progress.clone(),
            },
        );
        let input = from_reader(raw, len)?;
        progress.cancel();
        let mut all = Vec::new();
        input
            .into_reader()
            .read_to_end(&mut all)
            .map_err(io_or_cancel)?;
        Ok(all)
    }

    #[test]
    fn a_cancelled_read_is_the_typed_cancel_plain_and_through_gzip() {
        let plain = noise();
        let r = cancelled_after_head(plain.clone());
        assert!(matches!(r, Err(FormatError::Cancelled)), "{r:?}");
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&plain).unwrap();
        let r = cancelled_after_head(gz.finish().unwrap());
        assert!(matches!(r, Err(FormatError::Cancelled)), "{r:?}");
        // Another interruption is not a cancel.
        let other = io::Error::new(io::ErrorKind::Interrupted, "cancelled");
        assert!(!is_cancel(&other));
        assert!(is_cancel(&cancelled_io()));
    }

    /// A FIFO put in a checked file's place is opened without waiting for a writer (the
    /// open would block forever otherwise), and the handle is refused as what it is.
    #[cfg(unix)]
    #[test]
    fn a_fifo_is_opened_without_blocking_and_refused_by_its_handle() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|s| s.success()) {
            return; // no mkfifo here: the nonblocking open cannot be shown
        }
        let f = open_nonblocking(&fifo).unwrap();
        let e = refuse_special(&fifo, &f.metadata().unwrap()).unwrap_err();
        assert!(e.to_string().contains("a FIFO (named pipe)"), "{e}");
        let e = open_regular(&fifo).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let e = open_regular(Path::new("/dev/zero")).unwrap_err();
        assert!(e.to_string().contains("a character device"), "{e}");
    }
}
