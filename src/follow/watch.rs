//! Change notification for one file. inotify watches the parent directory (a watch on the file
//! itself dies after the first rename-replace); `--poll` compares size, mtime (ns) and inode
//! itself, because notify's PollWatcher only sees mtime to the second.

use crossbeam_channel::{bounded, Receiver, Sender};
use notify::{RecursiveMode, Watcher as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How changes are noticed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchMode {
    /// inotify (or the platform's native watcher) on the parent directory.
    Notify,
    /// Stat the file every interval (NFS and other shared file systems).
    Poll(Duration),
}

/// Sends a unit signal whenever the file may have changed; receivers re-stat and decide.
pub struct Watcher {
    rx: Receiver<()>,
    _native: Option<notify::RecommendedWatcher>,
    _poll: Option<PollHandle>,
}

struct PollHandle {
    stop: Sender<()>,
}

impl Drop for PollHandle {
    fn drop(&mut self) {
        let _ = self.stop.send(());
    }
}

/// File identity and shape, compared by the poller and the tailer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Stat {
    pub len: u64,
    pub mtime_ns: i128,
    pub ino: u64,
    pub exists: bool,
}

/// Reads the file's size, mtime and inode (all zero when it does not exist).
pub fn stat(path: &Path) -> Stat {
    match std::fs::metadata(path) {
        Ok(m) => {
            let mtime_ns = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as i128);
            #[cfg(unix)]
            let ino = std::os::unix::fs::MetadataExt::ino(&m);
            #[cfg(not(unix))]
            let ino = 0;
            Stat {
                len: m.len(),
                mtime_ns,
                ino,
                exists: true,
            }
        }
        Err(_) => Stat::default(),
    }
}

impl Watcher {
    /// Starts watching `path`. Falls back to polling every 250 ms when the native watcher
    /// cannot be set up.
    pub fn new(path: &Path, mode: WatchMode) -> Watcher {
        let (tx, rx) = bounded::<()>(1);
        if mode == WatchMode::Notify {
            if let Some(w) = native(path, tx.clone()) {
                return Watcher {
                    rx,
                    _native: Some(w),
                    _poll: None,
                };
            }
        }
        let every = match mode {
            WatchMode::Poll(d) => d,
            WatchMode::Notify => Duration::from_millis(250),
        };
        Watcher {
            rx,
            _native: None,
            _poll: Some(poll(path.to_path_buf(), every, tx)),
        }
    }

    /// The signal channel: one `()` pending at most (signals coalesce).
    pub fn signals(&self) -> &Receiver<()> {
        &self.rx
    }
}

fn native(path: &Path, tx: Sender<()>) -> Option<notify::RecommendedWatcher> {
    let name = path.file_name()?.to_os_string();
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let mut w = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        if let Ok(ev) = res {
            // Only events about our file name (appends, renames onto it, removal).
            if ev
                .paths
                .iter()
                .any(|p| p.file_name() == Some(name.as_os_str()))
            {
                let _ = tx.try_send(());
            }
        }
    })
    .ok()?;
    w.watch(&dir, RecursiveMode::NonRecursive).ok()?;
    Some(w)
}

fn poll(path: PathBuf, every: Duration, tx: Sender<()>) -> PollHandle {
    let (stop_tx, stop_rx) = bounded::<()>(1);
    std::thread::spawn(move || {
        let mut last = stat(&path);
        loop {
            match stop_rx.recv_timeout(every) {
                Ok(()) | Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return,
                Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
            }
            let now = stat(&path);
            if now != last {
                last = now;
                if tx.try_send(()).is_err() && tx.is_empty() {
                    return; // receiver gone
                }
            }
        }
    });
    PollHandle { stop: stop_tx }
}
