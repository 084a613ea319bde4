//! Following a trace file that is still being written: change notification (inotify on the
//! parent directory, or polling for NFS) and tailing the appended bytes. Used by the explorer's
//! follow mode and by `check -f`. Not part of the terminal-free core: it owns threads and the
//! file-system watcher. A file not there yet is waited for (`appear`).

pub mod appear;
pub mod tail;
pub mod watch;

pub use appear::{appeared, wait_for, Waited};
pub use tail::{TailEvent, Tailer};
pub use watch::{WatchMode, Watcher};
