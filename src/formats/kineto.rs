//! Kineto Chrome traces and export_memory_timeline files — reader under construction (issue 6).

use super::detect::Format;
use super::error::FormatError;
use super::source::{Input, Progress};
use super::LoadOptions;
use crate::trace::Trace;

/// Reads every device of a Kineto trace or memory timeline.
pub fn read(
    _source: &str,
    _input: Input,
    _format: Format,
    _opts: &LoadOptions,
    _progress: &Progress,
) -> Result<Vec<Trace>, FormatError> {
    Err(FormatError::Unrecognised(
        "Kineto traces are not supported by this build yet".into(),
    ))
}
