use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    memtide::run(memtide::Cli::parse())
}
