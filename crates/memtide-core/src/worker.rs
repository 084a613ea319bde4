//! A named thread that owns the value it works on, and gives the value back when no thread
//! can be started (the caller then does the work itself); independent jobs shared out over
//! a few threads (`map_on`); the progress such work shares ([`Progress`]).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

/// Shared progress of long work another thread watches: how much is done of the total (a
/// load: bytes of the file read, compressed bytes for `.gz`, of its size; the OOM fix list's
/// replays: ops replayed of the ops every started replay holds), and a cancellation flag the
/// work honours where it can.
#[derive(Clone, Debug, Default)]
pub struct Progress {
    pub done: Arc<AtomicU64>,
    pub total: Arc<AtomicU64>,
    pub cancel: Arc<AtomicBool>,
}

impl Progress {
    pub fn new() -> Self {
        Progress::default()
    }
    pub fn done(&self) -> u64 {
        self.done.load(Ordering::Relaxed)
    }
    pub fn total(&self) -> u64 {
        self.total.load(Ordering::Relaxed)
    }
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
    pub fn is_cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }
}

/// The number of threads to work with: `MEMTIDE_JOBS` when set, else the cores.
pub fn default_jobs() -> usize {
    jobs_asked().unwrap_or_else(cores)
}

/// Threads for `n` independent runs of about the same length (the replays of a fix list or
/// of `whatif`): `MEMTIDE_JOBS` when set, else one a run (at most 16) or the cores if more.
/// Runs that share fewer cores than they are finish together as the cores are shared out,
/// instead of the last of them starting after the others (five on two cores: two and a half
/// runs' time, not three).
pub(crate) fn jobs_for_runs(n: usize) -> usize {
    jobs_asked().unwrap_or_else(|| cores().max(n.min(16)))
}

/// `MEMTIDE_JOBS`, when set to a positive number.
fn jobs_asked() -> Option<usize> {
    std::env::var("MEMTIDE_JOBS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Starts thread `name` running `work(value)`. When the thread cannot start: `Err` with the
/// value (`None` only if a poisoned hand-over lost it). The handle yields `None` only if the
/// value never reached the thread.
pub(crate) fn spawn<T, R>(
    name: &str,
    value: T,
    work: impl FnOnce(T) -> R + Send + 'static,
) -> Result<JoinHandle<Option<R>>, Option<T>>
where
    T: Send + 'static,
    R: Send + 'static,
{
    // The value travels in a slot: if the thread cannot start, the closure holding the
    // slot's other end is dropped and the value is taken back out.
    let slot = Arc::new(Mutex::new(Some(value)));
    let theirs = Arc::clone(&slot);
    let started = std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let value = theirs.lock().ok().and_then(|mut s| s.take());
            value.map(work)
        });
    started.map_err(|_| slot.lock().ok().and_then(|mut s| s.take()))
}

/// `work(k)` for every `k` in `0..n`, on at most `jobs` threads (the caller's one of them),
/// each taking the next `k` when it is free; the results in the order of `k`, the same
/// whatever the number of threads. A thread that cannot start leaves its share to the
/// others.
pub(crate) fn map_on<R: Send>(
    name: &str,
    jobs: usize,
    n: usize,
    work: impl Fn(usize) -> R + Sync,
) -> Vec<R> {
    let jobs = jobs.clamp(1, n.max(1));
    if jobs == 1 {
        return (0..n).map(work).collect();
    }
    let next = AtomicUsize::new(0);
    let take = || {
        let mut got = Vec::new();
        loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            if k >= n {
                return got;
            }
            got.push((k, work(k)));
        }
    };
    let mut all = std::thread::scope(|s| {
        let take = &take;
        let helpers: Vec<_> = (1..jobs)
            .filter_map(|i| {
                std::thread::Builder::new()
                    .name(format!("{name}-{i}"))
                    .spawn_scoped(s, take)
                    .ok()
            })
            .collect();
        let mut all = take();
        for h in helpers {
            match h.join() {
                Ok(got) => all.extend(got),
                Err(p) => std::panic::resume_unwind(p),
            }
        }
        all
    });
    all.sort_unstable_by_key(|(k, _)| *k);
    all.into_iter().map(|(_, r)| r).collect()
}

/// `(first(), second())`, `first` on a thread of its own while this one runs `second` when
/// `jobs` allows two threads (else, or when no thread can start, one after the other here).
pub(crate) fn both<A: Send, B>(
    name: &str,
    jobs: usize,
    first: impl FnOnce() -> A + Send,
    second: impl FnOnce() -> B,
) -> (A, B) {
    if jobs < 2 {
        return (first(), second());
    }
    // The closure travels in a slot: if the thread cannot start, it is taken back.
    let slot = Mutex::new(Some(first));
    std::thread::scope(|s| {
        let theirs = &slot;
        let started = std::thread::Builder::new()
            .name(name.into())
            .spawn_scoped(s, move || {
                theirs.lock().ok().and_then(|mut f| f.take()).map(|f| f())
            });
        let b = second();
        let a = match started.map(|h| h.join()) {
            Ok(Ok(Some(a))) => a,
            Ok(Err(p)) => std::panic::resume_unwind(p),
            // Not started (or started without its work): run it here.
            Ok(Ok(None)) | Err(_) => match slot.lock().ok().and_then(|mut f| f.take()) {
                Some(f) => f(),
                None => unreachable_slot(),
            },
        };
        (a, b)
    })
}

/// The slot's work was neither done by the thread nor left in the slot: only a poisoned
/// lock can do that, and then the thread panicked, which `both` resumes before.
fn unreachable_slot() -> ! {
    std::panic::resume_unwind(Box::new("memtide: a worker's work was lost"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_on_gives_every_result_once_in_order_on_any_number_of_threads() {
        let calls = AtomicUsize::new(0);
        for jobs in [0, 1, 2, 3, 8, 40] {
            calls.store(0, Ordering::Relaxed);
            let got = map_on("memtide-test", jobs, 17, |k| {
                calls.fetch_add(1, Ordering::Relaxed);
                k * k
            });
            assert_eq!(
                got,
                (0..17).map(|k| k * k).collect::<Vec<_>>(),
                "jobs {jobs}"
            );
            assert_eq!(calls.load(Ordering::Relaxed), 17, "jobs {jobs}");
        }
        assert!(map_on("memtide-test", 2, 0, |k| k).is_empty());
    }

    #[test]
    fn both_runs_each_once_and_gives_both_results() {
        for jobs in [1, 2] {
            let calls = AtomicUsize::new(0);
            let (a, b) = both(
                "memtide-test",
                jobs,
                || {
                    calls.fetch_add(1, Ordering::Relaxed);
                    std::thread::current().name().map(str::to_string)
                },
                || {
                    calls.fetch_add(10, Ordering::Relaxed);
                    7
                },
            );
            assert_eq!(b, 7);
            assert_eq!(calls.load(Ordering::Relaxed), 11);
            // Two jobs: the first ran on the named thread.
            assert_eq!(
                a.as_deref() == Some("memtide-test"),
                jobs == 2,
                "jobs {jobs}"
            );
        }
    }

    #[test]
    fn the_thread_gets_the_value_and_its_name() {
        let h = spawn("memtide-test", 20, |v| {
            (v + 1, std::thread::current().name().map(str::to_string))
        });
        let got = h.ok().and_then(|h| h.join().ok()).flatten();
        assert_eq!(got, Some((21, Some("memtide-test".to_string()))));
    }
}
