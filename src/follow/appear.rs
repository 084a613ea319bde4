//! Waiting for a followed file that is not there yet (`memtide -f run.jsonl` started before
//! the recorder created it), as `tail -F` waits: the file is looked at every 100 ms until it
//! exists and holds its first bytes.

use std::path::Path;
use std::time::{Duration, Instant};

/// How often a missing file is looked for.
pub const LOOK_EVERY: Duration = Duration::from_millis(100);

/// Whether `path` can be read yet: it exists and, when a regular file, holds a byte (a file
/// just created whose first line is not written yet is waited for too).
pub fn appeared(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| !m.is_file() || m.len() > 0)
}

/// How a wait ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Waited {
    /// The file is there (at once, or after a wait).
    Appeared,
    /// `stop` said so (the user quit).
    Stopped,
    /// `limit` passed first.
    TimedOut,
}

/// Waits until [`appeared`]`(path)`, looking every [`LOOK_EVERY`]; gives up after `limit`
/// (None: never), or when `stop()` turns true.
pub fn wait_for(path: &Path, limit: Option<Duration>, stop: &dyn Fn() -> bool) -> Waited {
    let start = Instant::now();
    loop {
        if appeared(path) {
            return Waited::Appeared;
        }
        if stop() {
            return Waited::Stopped;
        }
        if limit.is_some_and(|l| start.elapsed() >= l) {
            return Waited::TimedOut;
        }
        std::thread::sleep(LOOK_EVERY);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_waited_for_until_it_has_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("run.jsonl");
        assert!(!appeared(&p));
        std::fs::write(&p, b"").unwrap();
        assert!(!appeared(&p), "an empty file is not there yet");
        assert_eq!(
            wait_for(&p, Some(Duration::from_millis(250)), &|| false),
            Waited::TimedOut
        );
        assert_eq!(wait_for(&p, None, &|| true), Waited::Stopped);
        std::fs::write(&p, b"{}\n").unwrap();
        assert!(appeared(&p));
        assert_eq!(wait_for(&p, None, &|| false), Waited::Appeared);
    }

    #[test]
    fn a_file_written_later_by_another_thread_ends_the_wait() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/run.jsonl");
        let q = p.clone();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            std::fs::create_dir_all(q.parent().unwrap()).unwrap();
            std::fs::write(&q, b"{}\n").unwrap();
        });
        // A generous limit: the writer's 300 ms are far inside it.
        assert_eq!(
            wait_for(&p, Some(Duration::from_secs(60)), &|| false),
            Waited::Appeared
        );
        writer.join().unwrap();
    }
}
