//! Effect execution: loading (read + index + per-device facts) and search, as plain
//! functions (tests run them inline) and on worker threads (the runtime); OSC 52 copy text.

use crate::tui::device::{Device, FollowLoad};
use crate::tui::effect::Behind;
use crate::tui::find;
use crate::tui::msg::Msg;
use base64::Engine;
use crossbeam_channel::Sender;
use memtide_core::formats::{Histories, Progress};
use memtide_core::open::{Follow, OpenError, OpenOptions};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Opens `path` through the core's door, off the UI thread; the devices come back as soon
/// as they are read and indexed, their dearer facts computed behind (`warm_behind`).
pub fn load(
    path: &Path,
    opts: &OpenOptions,
    progress: &Progress,
) -> Result<Vec<Arc<Device>>, String> {
    let opened = memtide_core::open::open(path, &with_models(opts), progress)
        .map_err(|e| open_error_text(&e))?;
    Ok(warm_behind(opened.devices))
}

/// The devices shared at once, their dearer facts (the OOM explanations with the fix list's
/// replays, the doubts, the external split) computed on a thread of their own, so the first
/// screen does not wait for them: a page that asks before they are done waits for that
/// thread's answer (each fact is computed once). Computed here when no thread can start.
/// Not for a followed file, whose device is changed in place on each append.
fn warm_behind(devices: Vec<Device>) -> Vec<Arc<Device>> {
    let shared: Vec<Arc<Device>> = devices.into_iter().map(Arc::new).collect();
    let theirs = shared.clone();
    let started = std::thread::Builder::new()
        .name("memtide-warm".into())
        .spawn(move || theirs.iter().for_each(|d| d.warm()));
    if started.is_err() {
        shared.iter().for_each(|d| d.warm());
    }
    shared
}

/// The explorer's open options: the allocator models are replayed on a thread of their own
/// once the indexes are built (behind the first screen).
fn with_models(opts: &OpenOptions) -> OpenOptions {
    let mut o = opts.clone();
    o.read.allocator_models = true;
    o.read.histories = Histories::Whole;
    o
}

/// The error as the explorer's error screen says it (the reader's error, a side file's as it
/// names itself).
fn open_error_text(e: &OpenError) -> String {
    match e {
        OpenError::Read { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

/// The devices with every fact computed, shared.
fn ready(devices: Vec<Device>) -> Vec<Arc<Device>> {
    devices
        .into_iter()
        .map(|d| {
            d.warm();
            Arc::new(d)
        })
        .collect()
}

/// Opens a file to follow: JSONL keeps its decoder and offset; other formats are read whole.
/// A file not there yet (or still empty) is waited for, `waiting` set meanwhile, until it
/// appears or the load is cancelled.
pub fn load_follow(
    path: &Path,
    opts: &OpenOptions,
    progress: &Progress,
    waiting: &AtomicBool,
) -> Result<FollowLoad, String> {
    if !crate::follow::appeared(path) {
        waiting.store(true, Ordering::Relaxed);
        let waited = crate::follow::wait_for(path, None, &|| progress.is_cancelled());
        waiting.store(false, Ordering::Relaxed);
        if waited != crate::follow::Waited::Appeared {
            return Err(format!("{} did not appear", path.display()));
        }
    }
    let mut opened = memtide_core::open::open_followed(path, &with_models(opts), progress)
        .map_err(|e| open_error_text(&e))?;
    let Follow { decoder, offset } = opened.take_follow();
    Ok(FollowLoad {
        devices: ready(opened.devices),
        appendable: decoder.is_some(),
        decoder: decoder.map(Box::new),
        offset,
    })
}

/// The reply to a search request (`at`: the cursor).
pub fn search(gen: u64, query: &str, device: &Device, at: memtide_core::trace::Seq) -> Msg {
    let (matches, strings) = find::search(device, query, at);
    Msg::SearchDone {
        gen,
        matches,
        strings,
    }
}

/// Spawns a loader thread for generation `gen`: `read` runs there, `reply` wraps its
/// result; a panic inside the reader becomes an error message, not a hang.
pub fn spawn_reader<T: 'static>(
    gen: u64,
    tx: Sender<Msg>,
    read: impl FnOnce() -> Result<T, String> + Send + 'static,
    reply: fn(u64, Result<T, String>) -> Msg,
) {
    let spawned = std::thread::Builder::new()
        .name("memtide-load".into())
        .spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(read))
                .unwrap_or_else(|_| Err(PANICKED.into()));
            let _ = tx.send(reply(gen, r));
        });
    if spawned.is_err() {
        // Without a thread we cannot load; the UI shows nothing better than a hang, so say so.
        eprintln!("memtide: cannot start the loader thread");
    }
}

/// Waits on a thread of its own for `fact` of `device`, then says so (`Msg::Ready`), whether
/// or not the wait ended well: the page asks the device again. Without a thread nothing is
/// said: the explorer's next tick fills a waiting allocator view in, and any key redraws
/// the OOM panel, once the fact is there.
pub fn wait_behind(device: Arc<Device>, fact: Behind, tx: Sender<Msg>) {
    let _ = std::thread::Builder::new()
        .name("memtide-wait".into())
        .spawn(move || {
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| fact.wait(&device)));
            let _ = tx.send(Msg::Ready(fact));
        });
}

/// Reads a job's rank files on `jobs` threads (0: every core) and returns the messages in
/// the order they happened (tests and the inline harness).
pub fn load_ranks(
    gen: u64,
    files: &[memtide_core::ranks::RankFile],
    opts: &memtide_core::ranks::RankOptions,
    jobs: usize,
    progress: &[Progress],
) -> Vec<Msg> {
    let out = std::sync::Mutex::new(Vec::new());
    run_ranks(gen, files, opts, jobs, progress, &|m| {
        if let Ok(mut v) = out.lock() {
            v.push(m);
        }
    });
    out.into_inner().unwrap_or_default()
}

/// Starts the ranks pool on a coordinating thread; each file's start and end come back as
/// messages while the UI keeps running.
pub fn spawn_ranks(
    gen: u64,
    files: Vec<memtide_core::ranks::RankFile>,
    opts: memtide_core::ranks::RankOptions,
    jobs: usize,
    progress: Vec<Progress>,
    tx: Sender<Msg>,
) {
    let spawned = std::thread::Builder::new()
        .name("memtide-ranks".into())
        .spawn(move || {
            run_ranks(gen, &files, &opts, jobs, &progress, &|m| {
                let _ = tx.send(m);
            })
        });
    if spawned.is_err() {
        eprintln!("memtide: cannot start the loader threads");
    }
}

fn run_ranks(
    gen: u64,
    files: &[memtide_core::ranks::RankFile],
    opts: &memtide_core::ranks::RankOptions,
    jobs: usize,
    progress: &[Progress],
    send: &(dyn Fn(Msg) + Sync),
) {
    use memtide_core::ranks::RankEvent;
    let jobs = if jobs == 0 {
        memtide_core::ranks::default_jobs()
    } else {
        jobs
    };
    memtide_core::ranks::load_all(files, opts, jobs, progress, &|ev| {
        send(match ev {
            RankEvent::Started(file) => Msg::RankStarted { gen, file },
            RankEvent::Done(file, outcome) => Msg::RankLoaded { gen, file, outcome },
        })
    });
}

const PANICKED: &str = "internal error while reading the file";

/// A live-set request: generation, position, grouping, device.
pub type LiveRequest = (
    u64,
    memtide_core::trace::Seq,
    crate::tui::liveset::GroupMode,
    Arc<Device>,
);

/// The reply to a live-set request.
pub fn live(req: &LiveRequest) -> Msg {
    let (gen, at, group, dev) = req;
    Msg::LiveDone {
        gen: *gen,
        result: Box::new(crate::tui::liveset::compute_in(
            &dev.trace,
            &dev.index,
            &dev.frames,
            *at,
            *group,
        )),
    }
}

/// Starts a worker thread that always runs the newest queued request (older ones are stale
/// and skipped unrun: typing or holding a key queues one per event).
pub fn spawn_latest<T: Send + 'static>(
    name: &str,
    out: Sender<Msg>,
    run: impl Fn(&T) -> Msg + Send + 'static,
) -> std::io::Result<Sender<T>> {
    let (tx, rx) = crossbeam_channel::unbounded::<T>();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            while let Ok(mut req) = rx.recv() {
                while let Ok(newer) = rx.try_recv() {
                    req = newer;
                }
                if out.send(run(&req)).is_err() {
                    break;
                }
            }
        })?;
    Ok(tx)
}

/// A search request: generation, query, device, cursor.
pub type SearchRequest = (u64, String, Arc<Device>, memtide_core::trace::Seq);

/// The OSC 52 escape that puts `text` on the terminal's clipboard (works over SSH).
pub fn osc52(text: &str) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
    format!("\x1b]52;c;{b64}\x07")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    #[test]
    fn osc52_is_base64_of_the_text() {
        // "hi" in base64 is "aGk=" (RFC 4648 test vectors style).
        assert_eq!(super::osc52("hi"), "\x1b]52;c;aGk=\x07");
    }
}
