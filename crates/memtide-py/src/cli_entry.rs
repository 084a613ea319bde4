//! `memtide._native.main(argv)`: the `memtide` command as the wheel installs it — the same
//! parse and run as the binary (`src/main.rs`), returning the exit status.

use pyo3::prelude::*;
use std::process::ExitCode;

/// Runs the command line `argv` (`argv[0]` is the program name) and returns its exit status.
/// The caller restores the signal dispositions the binary has (SIGINT default).
#[pyfunction]
pub fn main(py: Python<'_>, argv: Vec<String>) -> u8 {
    py.detach(|| {
        // The process is the command now: out of memory exits as the binary's does.
        memtide_core::budget::library_mode(false);
        crate::alloc_guard::return_large_frees_to_the_system();
        crate::abort_restore::install();
        status(memtide::main_with(argv))
    })
}

/// The number an [`ExitCode`] carries (std offers no getter: the one equal to it).
fn status(code: ExitCode) -> u8 {
    (0..=u8::MAX)
        .find(|&n| ExitCode::from(n) == code)
        .unwrap_or(memtide::EXIT_ERROR)
}
