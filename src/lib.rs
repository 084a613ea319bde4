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
