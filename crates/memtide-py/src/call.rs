//! Every call into Rust ends as an answer or a Python exception, never by ending or hanging
//! the interpreter: the work runs on a thread of its own inside a memory-budget scope
//! (`memtide_core::budget::recoverable`; the extension runs the budget in its library mode,
//! where no refusal exits the process), while the calling thread waits with the GIL released
//! and looks for Ctrl-C every [`TICK`]. On Ctrl-C the work is cancelled (a reader stops at its
//! next read) and left to end on its own (it owns what it reads: an `Arc` of the trace, its
//! own copies of the arguments), and the caller gets `KeyboardInterrupt` at once. A call's
//! budget is `max_memory=` or `MEMTIDE_MAX_MEMORY`: the most heap the call may add.

use memtide_core::budget;
use memtide_core::formats::Progress;
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::Mutex;
use std::time::Duration;

/// How often a waiting call looks for Ctrl-C.
pub const TICK: Duration = Duration::from_millis(50);

/// A call's memory budget: the bytes it may add and where the figure came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budget {
    pub bytes: u64,
    /// `max_memory=` or `MEMTIDE_MAX_MEMORY`, for the error message.
    pub source: &'static str,
}

/// A size as `max_memory=` or `MEMTIDE_MAX_MEMORY` give it: bytes (`1000000`), the
/// variable's letters (`512M`, `4G`) or a unit (`512MiB`, `4GB`).
fn parse(text: &str) -> Option<u64> {
    budget::parse_size(text).or_else(|| {
        memtide_report::sizes::size("max_memory", text)
            .ok()
            .map(|b| b.0)
    })
}

/// The budget of a call: `max_memory` (the argument's text) when given, else
/// `MEMTIDE_MAX_MEMORY` from the environment as it is now; None without either.
pub fn budget_of(max_memory: Option<&str>) -> PyResult<Option<Budget>> {
    if let Some(text) = max_memory {
        return match parse(text) {
            Some(bytes) => Ok(Some(Budget {
                bytes,
                source: "max_memory=",
            })),
            None => Err(PyValueError::new_err(format!(
                "max_memory={text:?} is not a size: expected bytes (an int) or e.g. \"512M\", \"4GiB\""
            ))),
        };
    }
    match std::env::var("MEMTIDE_MAX_MEMORY") {
        Ok(v) if !v.trim().is_empty() => match parse(&v) {
            Some(bytes) => Ok(Some(Budget {
                bytes,
                source: "MEMTIDE_MAX_MEMORY",
            })),
            None => Err(PyValueError::new_err(format!(
                "MEMTIDE_MAX_MEMORY={v:?} is not a size (expected e.g. 4G, 512M, 1000000)"
            ))),
        },
        _ => Ok(None),
    }
}

/// The budgets of the calls running now: (ticket, the heap in bytes each allows). The
/// allocator's limit is the smallest of them; none, no limit.
static ACTIVE: Mutex<Vec<(u64, u64)>> = Mutex::new(Vec::new());
static TICKETS: AtomicU64 = AtomicU64::new(0);

/// A budget in force while this lives: the heap may grow by its bytes from what it was when
/// the call began (the memory of every memtide call running meanwhile counts against it).
struct InForce {
    ticket: u64,
}

impl InForce {
    fn new(b: &Budget) -> InForce {
        let ticket = TICKETS.fetch_add(1, Ordering::Relaxed);
        let base = budget::live().max(0) as u64;
        let mut active = ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
        active.push((ticket, base.saturating_add(b.bytes)));
        budget::set_limit(active.iter().map(|a| a.1).min());
        InForce { ticket }
    }
}

impl Drop for InForce {
    fn drop(&mut self) {
        let mut active = ACTIVE.lock().unwrap_or_else(|e| e.into_inner());
        active.retain(|a| a.0 != self.ticket);
        budget::set_limit(active.iter().map(|a| a.1).min());
    }
}

/// How a call's work ended.
pub struct Done<R> {
    /// What the work returned.
    pub value: R,
    /// Memory ran short meanwhile: the budget's refusal (why), or the system's (None).
    pub short: Option<Short>,
}

/// Memory that ran short during a call.
#[derive(Clone, Debug)]
pub enum Short {
    /// The budget refused an allocation.
    Budget(Budget),
    /// The system refused one (a reader reports it as its error).
    System,
}

/// Work running on its own thread: poll it, cancel it, take its answer.
pub struct Work<R> {
    rx: Receiver<(R, Option<String>)>,
    got: Option<(R, Option<String>)>,
    progress: Progress,
    budget: Option<(Budget, InForce)>,
    refusals: u64,
}

impl<R: Send + 'static> Work<R> {
    /// Starts `f` on a thread named `name`, inside a budget scope, `budget` in force until
    /// this is dropped or its answer taken; `progress` is the cancel flag `f` honours (a
    /// reader's), cancelled on Ctrl-C or when the budget refuses memory.
    pub fn start(
        name: &str,
        budget: Option<Budget>,
        progress: Progress,
        f: impl FnOnce() -> R + Send + 'static,
    ) -> PyResult<Work<R>> {
        let refusals = budget::refusals();
        let budget = budget.map(|b| {
            let g = InForce::new(&b);
            (b, g)
        });
        let (tx, rx) = mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                let out = budget::recoverable(f);
                // Nobody waits any more after Ctrl-C: the answer is dropped here.
                let _ = tx.send(out);
            })
            .map_err(|e| PyRuntimeError::new_err(format!("cannot start a thread: {e}")))?;
        Ok(Work {
            rx,
            got: None,
            progress,
            budget,
            refusals,
        })
    }

    /// Waits up to `wait` (the caller releases the GIL) and says whether the answer is in;
    /// cancels the work once the budget refused memory, so a reader stops at its next read.
    pub fn poll(&mut self, wait: Duration) -> bool {
        if self.got.is_some() {
            return true;
        }
        let got = match self.rx.recv_timeout(wait) {
            Ok(v) => Some(v),
            Err(RecvTimeoutError::Timeout) => None,
            // The thread ended without an answer (a panic): `take` says so.
            Err(RecvTimeoutError::Disconnected) => return true,
        };
        if self.budget.is_some() && budget::refusals() != self.refusals {
            self.progress.cancel();
        }
        self.got = got;
        self.got.is_some()
    }

    /// Asks the work to stop (a reader's next read ends it).
    pub fn cancel(&self) {
        self.progress.cancel();
    }

    /// The answer, once [`Work::poll`] said it is in; the budget is lifted. Err: the thread
    /// ended without one (a panic) or it was already taken.
    pub fn take(&mut self) -> PyResult<Done<R>> {
        let budget = self.budget.take().map(|(b, _in_force)| b);
        let Some((value, over)) = self.got.take() else {
            return Err(PyRuntimeError::new_err(
                "memtide's worker thread ended without an answer (a bug: please report it)",
            ));
        };
        let short = match (over, budget) {
            (Some(_), Some(b)) => Some(Short::Budget(b)),
            _ if budget::refusals() != self.refusals => Some(Short::System),
            _ => None,
        };
        Ok(Done { value, short })
    }
}

/// Runs `f` as [`Work`] and waits for it with the GIL released, looking for Ctrl-C every
/// [`TICK`]: Ctrl-C cancels the work and raises `KeyboardInterrupt` at once.
pub fn run<R: Send + 'static>(
    py: Python<'_>,
    name: &str,
    budget: Option<Budget>,
    progress: Progress,
    f: impl FnOnce() -> R + Send + 'static,
) -> PyResult<Done<R>> {
    let mut work = Work::start(name, budget, progress, f)?;
    wait(py, &mut work)
}

/// Waits for `work` as [`run`] does.
pub fn wait<R: Send + 'static>(py: Python<'_>, work: &mut Work<R>) -> PyResult<Done<R>> {
    loop {
        if py.detach(|| work.poll(TICK)) {
            return work.take();
        }
        if let Err(e) = py.check_signals() {
            work.cancel();
            return Err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_as_the_variable_and_the_cli_write_them() {
        assert_eq!(parse("512M"), Some(512 << 20));
        assert_eq!(parse("4G"), Some(4 << 30));
        assert_eq!(parse("1000000"), Some(1_000_000));
        assert_eq!(parse("4GiB"), Some(4 << 30));
        assert_eq!(parse("64 KiB"), Some(64 << 10));
        assert_eq!(parse("lots"), None);
        assert_eq!(parse("-1"), None);
    }
}
