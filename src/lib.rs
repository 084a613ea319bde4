//! memtide — a terminal explorer for the memory timeline of deep-learning training runs.
//!
//! The core (readers, trace model, index, analyses) is the `memtide-core` crate and knows
//! nothing about terminals; this crate is the binary's edge: `cli` wires the commands, `tui`
//! is a thin layer that draws the core's answers, `follow` watches files that grow.

#![forbid(unsafe_code)]

pub mod cli;
pub mod follow;
pub mod output_file;
pub use memtide_report::{picture, report_line, safe_text};
pub mod tui;

pub use cli::{run, Cli};

/// The exit status of an error (bad input, a file that cannot be read): 2.
pub const EXIT_ERROR: u8 = cli::EXIT_ERROR;

/// The `memtide` command on `argv` (`argv[0]` is the program name): the memory budget from
/// the environment, the parse and the run, as the binary and the wheel's `memtide` both do.
/// What is the process's own (the allocator, the signal dispositions) is the caller's.
pub fn main_with<I, T>(argv: I) -> std::process::ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::Parser as _;
    if let Err(e) = memtide_core::budget::init_from_env() {
        eprintln!("memtide: error: {}", safe_text::one_line(&e.to_string()));
        return std::process::ExitCode::from(EXIT_ERROR);
    }
    match Cli::try_parse_from(argv) {
        Ok(cli) => run(cli),
        Err(e) => cli::usage_error(e),
    }
}
