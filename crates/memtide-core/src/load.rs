//! Loading a file for analysis: read it ([`crate::formats`]), infer the categories a file does
//! not carry ([`crate::analysis::infer`]), merge a device-usage log when one is named
//! ([`crate::device_merge`]), check the byte sums. The one entry point the
//! binary, the tests and the benchmarks use.

use crate::analysis::infer::{infer, Rules};
use crate::device_merge;
use crate::formats::{self, device_log, jsonl, source, Format, FormatError, Progress};
use crate::trace::{BandsSource, Trace};
pub use formats::{LoadOptions, Loaded};
use std::io::Read;
use std::path::Path;

/// Reads `path` whole, detecting its format from content, and infers categories where the
/// file has none.
pub fn load(path: &Path, opts: &LoadOptions, progress: &Progress) -> Result<Loaded, FormatError> {
    // Read the (small) rules file first: a bad path fails before a long parse.
    let rules = rules(opts)?;
    let log = match &opts.device_log {
        Some(d) => Some(device_log::read(&d.path, opts.lenient)?),
        None => None,
    };
    let mut loaded = formats::read(path, opts, progress)?;
    infer_missing(&mut loaded.traces, &rules);
    if let (Some(log), Some(d)) = (&log, &opts.device_log) {
        if !matches!(
            loaded.format,
            Format::SnapshotPickle | Format::SnapshotJson | Format::Kineto
        ) {
            return Err(jsonl_refuses_log(path));
        }
        device_merge::merge_all(&mut loaded.traces, log, d);
    }
    formats::check_byte_sums(&loaded.traces)?;
    Ok(loaded)
}

/// `--device-log` with a file it cannot merge with (JSONL, an `export_memory_timeline` file).
fn jsonl_refuses_log(path: &Path) -> FormatError {
    FormatError::Invalid(format!(
        "--device-log merges with a PyTorch snapshot or Kineto trace; {} is not one (memtide JSONL records device samples as its own `sample` lines)",
        path.display()
    ))
}

/// The user's category rules (`--rules FILE`), or none.
pub fn rules(opts: &LoadOptions) -> Result<Rules, FormatError> {
    let Some(path) = &opts.rules else {
        return Ok(Rules::default());
    };
    let text = source::open_regular(path)
        .and_then(std::io::read_to_string)
        .map_err(|e| {
            FormatError::Invalid(format!("cannot read rules file {}: {e}", path.display()))
        })?;
    Rules::parse(&text)
        .map_err(|e| FormatError::Invalid(format!("rules file {}: {e}", path.display())))
}

/// Infers the categories of every trace whose reader found none.
pub fn infer_missing(traces: &mut [Trace], rules: &Rules) {
    for t in traces
        .iter_mut()
        .filter(|t| t.bands_source == BandsSource::Inferred)
    {
        infer(t, rules);
    }
}

/// A file opened to be followed: its traces and, for JSONL, the decoder that continues after
/// `offset` bytes (other formats are reloaded whole when they change).
#[derive(Debug)]
pub struct Followable {
    pub loaded: Loaded,
    pub decoder: Option<jsonl::JsonlDecoder>,
    pub offset: u64,
}

/// Reads `path` for following: JSONL resumably, any other format whole.
pub fn load_followable(
    path: &Path,
    opts: &LoadOptions,
    progress: &Progress,
) -> Result<Followable, FormatError> {
    let mut head = [0u8; 4096];
    let n = source::open_regular(path)
        .map_err(source::not_regular)?
        .read(&mut head)?;
    // An empty file may be a recording that has not written its header yet.
    if n == 0 || formats::detect(&head[..n]) == Some(Format::Jsonl) {
        if opts.device_log.is_some() {
            return Err(jsonl_refuses_log(path));
        }
        let (trace, decoder, offset) = formats::read_jsonl_resumable(path, opts, progress)?;
        return Ok(Followable {
            loaded: Loaded {
                format: Format::Jsonl,
                traces: vec![trace],
            },
            decoder: Some(decoder),
            offset,
        });
    }
    // Measured before reading, so a change during the load still triggers a reload.
    let offset = std::fs::metadata(path).map_or(0, |m| m.len());
    Ok(Followable {
        loaded: load(path, opts, progress)?,
        decoder: None,
        offset,
    })
}
