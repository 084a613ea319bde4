//! The terminal explorer (issue 4): under construction.

use crate::cli::ExploreArgs;
use anyhow::Result;
use std::process::ExitCode;

/// Opens the explorer on the given files.
pub fn run_explore(args: &ExploreArgs) -> Result<ExitCode> {
    let _ = args;
    anyhow::bail!("the explorer is not built yet; use `memtide summary FILE`")
}

/// Opens the cache lab screen.
pub fn run_lab(args: &crate::cli::LabArgs) -> Result<ExitCode> {
    let _ = args;
    anyhow::bail!("the lab screen is not built yet; use `memtide lab --json` or `--text`")
}
