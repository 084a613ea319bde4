//! `memtide._native`: the compiled half of the `memtide` Python package — the command line
//! (`main`), opening a file on a thread with progress (`start_open`), the opened trace's
//! questions (`NativeTrace`) and the gates and comparisons (`check`, `diff`, `whatif`). Every
//! answer comes from the same code the `memtide` binary runs; the Python half
//! (`python/memtide/`) shapes them into objects.

#[path = "../../../src/abort_restore.rs"]
mod abort_restore;
#[path = "../../../src/alloc_guard.rs"]
mod alloc_guard;
mod cli_entry;
mod commands;
mod errors;
mod loading;
mod open;
mod questions;
mod trace;

use pyo3::prelude::*;

/// Counts heap bytes against `MEMTIDE_MAX_MEMORY` (when set) and turns allocation failures
/// into errors, as in the `memtide` binary.
#[global_allocator]
static ALLOC: alloc_guard::Guard = alloc_guard::Guard;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(cli_entry::main, m)?)?;
    m.add_function(wrap_pyfunction!(loading::start_open, m)?)?;
    m.add_function(wrap_pyfunction!(commands::check, m)?)?;
    m.add_function(wrap_pyfunction!(commands::diff, m)?)?;
    m.add_function(wrap_pyfunction!(commands::whatif, m)?)?;
    m.add_class::<loading::Loading>()?;
    m.add_class::<trace::NativeTrace>()?;
    Ok(())
}
