//! `memtide._native`: the compiled half of the `memtide` Python package — the command line
//! (`main`), opening a file on a thread with progress (`start_open`), the opened trace's
//! questions (`NativeTrace`) and the gates and comparisons (`check`, `diff`, `whatif`), each
//! call run so that it ends in an answer or an exception, never the interpreter's end
//! (`call.rs`). Every answer comes from the same code the `memtide` binary runs; the Python half
//! (`python/memtide/`) shapes them into objects.

#[path = "../../../src/abort_restore.rs"]
mod abort_restore;
#[path = "../../../src/alloc_guard.rs"]
mod alloc_guard;
mod call;
mod cli_entry;
mod commands;
mod errors;
mod loading;
mod open;
mod questions;
mod rows;
mod trace;

use pyo3::prelude::*;

/// Counts heap bytes against the budget of the call running (`max_memory=`,
/// `MEMTIDE_MAX_MEMORY`) and turns allocation failures into exceptions (the core's budget in
/// library mode: no refusal ends the interpreter; the wheel's `memtide` command turns that
/// off and behaves as the binary).
#[global_allocator]
static ALLOC: alloc_guard::Guard = alloc_guard::Guard;

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    memtide_core::budget::library_mode(true);
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
