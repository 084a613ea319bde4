//! PyTorch CUDA memory snapshots (pickle or JSON) — reader under construction (issue 3).

use super::detect::Format;
use super::error::FormatError;
use super::source::{Input, Progress};
use super::LoadOptions;
use crate::trace::Trace;

/// Reads every device of a snapshot.
pub fn read(
    _source: &str,
    _input: Input,
    _format: Format,
    _opts: &LoadOptions,
    _progress: &Progress,
) -> Result<Vec<Trace>, FormatError> {
    Err(FormatError::Unrecognised(
        "PyTorch snapshot files are not supported by this build yet".into(),
    ))
}
