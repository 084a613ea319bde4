use clap::Parser as _;
use std::process::ExitCode;

mod abort_restore;
mod alloc_guard;

/// Counts heap bytes against `MEMTIDE_MAX_MEMORY` and turns allocation failures into errors.
#[global_allocator]
static ALLOC: alloc_guard::Guard = alloc_guard::Guard;

fn main() -> ExitCode {
    alloc_guard::return_large_frees_to_the_system();
    abort_restore::install();
    if let Err(e) = memtide_core::budget::init_from_env() {
        eprintln!(
            "memtide: error: {}",
            memtide::safe_text::one_line(&e.to_string())
        );
        return ExitCode::from(memtide::cli::EXIT_ERROR);
    }
    match memtide::Cli::try_parse() {
        Ok(cli) => memtide::run(cli),
        Err(e) => memtide::cli::usage_error(e),
    }
}
