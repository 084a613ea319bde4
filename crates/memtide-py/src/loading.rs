//! Opening a file on a Rust thread: Python polls [`Loading`] for progress (bytes read of the
//! file's size) while the GIL is free, cancels it on Ctrl-C, and takes the trace at the end.

use crate::open::{open, OpenFail, Opened, Options};
use memtide::cli::InputArgs;
use memtide_core::formats::Progress;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::Mutex;
use std::thread::JoinHandle;

/// A file being read on its own thread.
#[pyclass(frozen, module = "memtide._native")]
pub struct Loading {
    path: PathBuf,
    progress: Progress,
    thread: Mutex<Option<JoinHandle<Result<Opened, OpenFail>>>>,
}

/// Starts reading `path` on a thread; see `memtide.open` for the arguments.
#[pyfunction]
#[pyo3(signature = (path, *, device=None, capacity=None, device_log=None, device_log_tz=None,
    device_log_offset=None, oom_message=None, nsys=None, categories=None, rules=None,
    lenient=false, cpp_frames=false, single_thread=false, allocator_history=false))]
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
    categories: Option<PathBuf>,
    rules: Option<PathBuf>,
    lenient: bool,
    cpp_frames: bool,
    single_thread: bool,
    allocator_history: bool,
) -> PyResult<Loading> {
    let options = Options {
        input: InputArgs {
            device,
            lenient,
            device_log,
            device_log_tz,
            device_log_offset,
            oom_message,
            nsys,
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
    let thread = std::thread::Builder::new()
        .name("memtide-open".into())
        .spawn(move || open(&file, &options, &p))
        .map_err(|e| PyRuntimeError::new_err(format!("cannot start the reading thread: {e}")))?;
    Ok(Loading {
        path,
        progress,
        thread: Mutex::new(Some(thread)),
    })
}

#[pymethods]
impl Loading {
    /// `(bytes read, file size)`; the size is 0 until the file is opened.
    fn progress(&self) -> (u64, u64) {
        (self.progress.done(), self.progress.total())
    }

    /// Whether the thread has finished (then `finish` returns at once).
    fn done(&self) -> bool {
        match self.thread.lock() {
            Ok(g) => g.as_ref().is_none_or(JoinHandle::is_finished),
            Err(_) => true,
        }
    }

    /// Asks the reader to stop; `finish` then raises `memtide.Cancelled`.
    fn cancel(&self) {
        self.progress.cancel();
    }

    /// Waits for the thread (GIL released) and returns the trace, or raises why not.
    fn finish(&self, py: Python<'_>) -> PyResult<crate::trace::NativeTrace> {
        let handle = self
            .thread
            .lock()
            .map_err(|_| PyRuntimeError::new_err("the reading thread's state is poisoned"))?
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("finish() was already called"))?;
        let joined = py.detach(|| handle.join());
        match joined {
            Ok(Ok(opened)) => Ok(crate::trace::NativeTrace::new(opened)),
            Ok(Err(e)) => Err(crate::errors::open_error(py, &self.path, &e)),
            Err(_) => Err(PyRuntimeError::new_err(format!(
                "memtide panicked while reading {}",
                self.path.display()
            ))),
        }
    }
}
