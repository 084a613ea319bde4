//! Input plumbing every reader shares: opening a file (gzip, the peek for detection, progress
//! and cancellation), reading ahead on a second thread, caps on side files, format detection,
//! the memo of byte spans already interned, and the readers' typed error.

pub mod bytes_memo;
pub mod detect;
pub mod error;
pub mod gzip;
pub mod limit;
pub mod read_ahead;
pub mod source;
