//! Opening a file on a Rust thread ([`crate::call::Work`]: inside the call's memory budget):
//! Python polls [`Loading`] for progress (bytes read of the file's size) while the GIL is
//! free, cancels it on Ctrl-C (a read that never returns is left to end on its own), and takes
//! the trace at the end.

use crate::call::{budget_of, Work};
use crate::open::{open, OpenFail, Opened, Options};
use memtide_core::formats::Progress;
use memtide_report::InputOptions;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::{Mutex, TryLockError};
use std::time::Duration;

/// A file being read on its own thread.
#[pyclass(frozen, module = "memtide._native")]
pub struct Loading {
    path: PathBuf,
    /// `max_memory=` as given, kept for the trace's later calls.
    max_memory: Option<String>,
    /// The reader's byte counter and cancel flag (also inside `work`).
    progress: Progress,
    work: Mutex<Work<Result<Opened, OpenFail>>>,
}

/// Starts reading `path` on a thread; see `memtide.open` for the arguments.
#[pyfunction]
#[pyo3(signature = (path, *, device=None, capacity=None, device_log=None, device_log_tz=None,
    device_log_offset=None, oom_message=None, nsys=None, server_log=None, categories=None, rules=None,
    lenient=false, cpp_frames=false, single_thread=false, allocator_history=false,
    max_memory=None))]
#[allow(clippy::too_many_arguments)]
pub fn start_open(
    path: PathBuf,
    device: Option<String>,
    capacity: Option<String>,
    device_log: Option<PathBuf>,
    device_log_tz: Option<i64>,
    device_log_offset: Option<i64>,
    oom_message: Option<PathBuf>,
    nsys: Option<PathBuf>,
    server_log: Option<PathBuf>,
    categories: Option<PathBuf>,
    rules: Option<PathBuf>,
    lenient: bool,
    cpp_frames: bool,
    single_thread: bool,
    allocator_history: bool,
    max_memory: Option<String>,
) -> PyResult<Loading> {
    let budget = budget_of(max_memory.as_deref())?;
    let options = Options {
        input: InputOptions {
            device,
            lenient,
            device_log,
            device_log_tz,
            device_log_offset,
            oom_message,
            nsys,
            server_log,
            categories,
            rules,
            cpp_frames,
            single_thread,
        },
        capacity,
        whole_histories: allocator_history,
    };
    let progress = Progress::new();
    let p = progress.clone();
    let file = path.clone();
    let work = Work::start("memtide-open", budget, progress.clone(), move || {
        open(&file, &options, &p)
    })?;
    Ok(Loading {
        path,
        max_memory,
        progress,
        work: Mutex::new(work),
    })
}

#[pymethods]
impl Loading {
    /// `(bytes read, file size)`; the size is 0 until the file is opened.
    fn progress(&self) -> (u64, u64) {
        (self.progress.done(), self.progress.total())
    }

    /// Whether the reading has ended (then `finish` returns at once); false while another
    /// thread waits in `finish`.
    fn done(&self, py: Python<'_>) -> bool {
        match self.work.try_lock() {
            Ok(mut g) => {
                let w = &mut *g;
                py.detach(|| w.poll(Duration::ZERO))
            }
            Err(_) => false,
        }
    }

    /// Asks the reader to stop; `finish` then raises `memtide.Cancelled`. A read blocked in
    /// the system (a pipe nobody writes) ends when its read returns.
    fn cancel(&self) {
        self.progress.cancel();
    }

    /// Waits for the reading (GIL released; Ctrl-C cancels it and raises
    /// `KeyboardInterrupt`) and returns the trace, or raises why not.
    fn finish(&self, py: Python<'_>) -> PyResult<crate::trace::NativeTrace> {
        // Another thread may be in `done` for a moment: wait for it as for the work.
        let mut g = loop {
            match self.work.try_lock() {
                Ok(g) => break g,
                Err(TryLockError::WouldBlock) => {
                    py.detach(|| std::thread::sleep(crate::call::TICK));
                    py.check_signals()?;
                }
                Err(TryLockError::Poisoned(_)) => {
                    return Err(PyRuntimeError::new_err(
                        "the reading thread's state is poisoned",
                    ))
                }
            }
        };
        let done = crate::call::wait(py, &mut g)?;
        drop(g);
        let opened = crate::errors::settle(py, Some(&self.path), done, |e| {
            crate::errors::open_error(py, &self.path, e)
        })?;
        Ok(crate::trace::NativeTrace::new(
            opened,
            self.max_memory.clone(),
        ))
    }
}
