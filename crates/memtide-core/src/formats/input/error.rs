//! Typed reader errors: every one says where (line or byte offset) and what was expected.

/// An error from any reader.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// A bad line of a line-oriented format (1-based line number).
    #[error("line {line}: {reason}")]
    Line { line: u64, reason: String },
    /// A bad byte sequence (0-based byte offset into the decompressed stream).
    #[error("byte offset {offset}: {reason}")]
    At { offset: u64, reason: String },
    /// The file holds nothing to read.
    #[error("{0}")]
    Empty(String),
    /// The content matches no format memtide reads.
    #[error("unrecognised format: {0}")]
    Unrecognised(String),
    /// Readable, but not what the user asked (e.g. a device that is not in the file).
    #[error("{0}")]
    Invalid(String),
    /// Certainly not a memory trace, though its format was recognised: a whole, well-formed
    /// pickle or JSON document whose top-level value is not a snapshot's (a pickled config
    /// dict, a pickled Python object). A job's listing skips such a file; a damaged trace
    /// (cut short, malformed) is never this.
    #[error("{0}")]
    NotATrace(String),
    /// A side file (`--rules`, `--categories`) that cannot be read: `what` names it
    /// (`rules file r.toml`), `reason` says where in it and why.
    #[error("{what}: {reason}")]
    SideFile { what: String, reason: String },
    /// A device-usage log (`--device-log`) that cannot be read.
    #[error(transparent)]
    DeviceLog(#[from] crate::formats::device_log::DeviceLogError),
    /// Not a `source`: the message already holds the I/O error's text, and a chain printer
    /// (anyhow's `{:#}`) would repeat it.
    #[error("I/O error: {0}")]
    Io(std::io::Error),
    /// A damaged gzip stream (a cut or wrong trailer, trailing garbage, corrupt data): the
    /// offset is the file's (compressed bytes), not the decompressed stream's.
    #[error("{0}")]
    Gzip(super::gzip::GzipDamage),
    /// Loading was cancelled by the caller.
    #[error("cancelled")]
    Cancelled,
}

impl From<std::io::Error> for FormatError {
    /// A cancellation or gzip damage carried by the error keeps its meaning.
    fn from(e: std::io::Error) -> Self {
        super::source::io_or_cancel(e)
    }
}

impl FormatError {
    pub fn line(line: u64, reason: impl Into<String>) -> Self {
        FormatError::Line {
            line,
            reason: reason.into(),
        }
    }
    pub fn at(offset: u64, reason: impl Into<String>) -> Self {
        FormatError::At {
            offset,
            reason: reason.into(),
        }
    }
}
