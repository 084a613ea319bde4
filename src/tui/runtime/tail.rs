//! The tail worker: waits for change signals (inotify on the parent directory, or polling),
//! reads appended bytes and reports truncation/replacement as `Msg::Tail`. A newer tail
//! generation makes older threads exit.

use crate::follow::{Tailer, WatchMode, Watcher};
use crate::tui::msg::Msg;
use crossbeam_channel::Sender;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The newest tail generation; threads of older generations stop.
static CURRENT: AtomicU64 = AtomicU64::new(0);

/// Safety-net poll interval when no signal arrives (missed events, odd file systems).
const BACKSTOP: Duration = Duration::from_millis(500);

pub fn spawn(
    gen: u64,
    path: PathBuf,
    offset: Option<u64>,
    appendable: bool,
    mode: WatchMode,
    tx: Sender<Msg>,
) {
    CURRENT.store(gen, Ordering::SeqCst);
    let _ = std::thread::Builder::new()
        .name("memtide-tail".into())
        .spawn(move || {
            let watcher = Watcher::new(&path, mode);
            let offset = offset.unwrap_or_else(|| crate::follow::watch::stat(&path).len);
            let mut tail = Tailer::new(&path, offset, appendable);
            loop {
                if CURRENT.load(Ordering::SeqCst) != gen {
                    return;
                }
                let _ = watcher.signals().recv_timeout(BACKSTOP);
                // A short debounce: bursts of writes arrive as one batch.
                std::thread::sleep(Duration::from_millis(15));
                loop {
                    if CURRENT.load(Ordering::SeqCst) != gen {
                        return;
                    }
                    match tail.poll() {
                        Ok(Some(ev)) => {
                            let stop = matches!(ev, crate::follow::TailEvent::Reload(_));
                            if tx
                                .send(Msg::Tail {
                                    gen,
                                    event: ev,
                                    now: Instant::now(),
                                })
                                .is_err()
                            {
                                return;
                            }
                            if stop {
                                return; // the reload starts a new tail generation
                            }
                        }
                        Ok(None) => break,
                        Err(_) => break,
                    }
                }
            }
        });
}
