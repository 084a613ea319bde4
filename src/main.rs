use std::process::ExitCode;

mod abort_restore;
mod alloc_guard;

/// Counts heap bytes against `MEMTIDE_MAX_MEMORY` and turns allocation failures into errors.
#[global_allocator]
static ALLOC: alloc_guard::Guard = alloc_guard::Guard;

fn main() -> ExitCode {
    alloc_guard::return_large_frees_to_the_system();
    abort_restore::install();
    memtide::main_with(std::env::args_os())
}
