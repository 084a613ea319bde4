//! The door's reading step: read a file ([`crate::formats`]), infer the categories it does
//! not carry ([`crate::analysis::infer`]), merge a device-usage log when one is named
//! ([`crate::device_merge`]) and an Nsight Systems export (`nsys_merge`), check the
//! byte sums. [`crate::open::open`] indexes what it hands back; [`load`] alone is the door's
//! public way to the raw read, for what times or inspects the read itself.

use crate::analysis::frames::FrameRules;
use crate::analysis::infer::{infer, Rules};
use crate::device_merge;
use crate::formats::{self, device_log, jsonl, source, Format, FormatError, Progress};
use crate::trace::{BandsSource, Trace};
use formats::{LoadOptions, Loaded};
use std::io::Read;
use std::path::Path;

/// The door's reading step alone: reads `path` whole, detecting its format from content,
/// infers categories where the file has none (under the `--rules` file's category rules, read
/// here), merges the side sources and checks the sums — no index, no device facts. For what
/// times or inspects the read itself (the readers' benchmarks); every other consumer opens
/// with [`open`](crate::open::open) and reads each [`Device`](crate::open::Device)'s trace.
pub fn load(path: &Path, opts: &LoadOptions, progress: &Progress) -> Result<Loaded, FormatError> {
    // Read the (small) rules file first: a bad path fails before a long parse.
    let rules = UserRules::read(opts)?;
    load_with(path, opts, &rules.categories, progress)
}

/// [`load`] under category rules already read (the door reads the `--rules` file once).
pub(crate) fn load_with(
    path: &Path,
    opts: &LoadOptions,
    rules: &Rules,
    progress: &Progress,
) -> Result<Loaded, FormatError> {
    let log = match &opts.device_log {
        Some(d) => Some(device_log::read(&d.path, opts.lenient)?),
        None => None,
    };
    let nsys = match &opts.nsys {
        Some(p) => Some(formats::nsys::read(p, progress)?),
        None => None,
    };
    let mut loaded = formats::read(path, opts, progress)?;
    infer_missing(&mut loaded.traces, rules);
    if let Some(export) = &nsys {
        if !matches!(loaded.format, Format::SnapshotPickle | Format::SnapshotJson) {
            return Err(FormatError::Invalid(format!(
                "--nsys merges with a PyTorch memory snapshot (its segments tell PyTorch's own cudaMalloc calls apart from other libraries'); {} is not one",
                path.display()
            )));
        }
        crate::nsys_merge::merge_all(&mut loaded.traces, export)?;
    }
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
    share_time_origin(&mut loaded.traces);
    Ok(loaded)
}

/// Gives every device of one file one time origin: the earliest event over all of them (the
/// devices of a snapshot or a profiler trace share one clock), so a time on `cuda:0` and one
/// on `cpu` compare.
pub(crate) fn share_time_origin(traces: &mut [Trace]) {
    let origin = traces
        .iter()
        .filter(|t| t.clock.has_time())
        .filter_map(|t| t.timestamps().next())
        .min();
    for t in traces.iter_mut().filter(|t| t.clock.has_time()) {
        t.time_origin_ns = origin;
    }
}

/// `--device-log` with a file it cannot merge with (JSONL, an `export_memory_timeline` file).
fn jsonl_refuses_log(path: &Path) -> FormatError {
    FormatError::Invalid(format!(
        "--device-log merges with a PyTorch snapshot or Kineto trace; {} is not one (memtide JSONL records device samples as its own `sample` lines)",
        path.display()
    ))
}

/// What a `--rules FILE` says, read once: the category rules (`[[rule]]`) and the frame
/// patterns (`[[frames]]`). The door reads it once and every answer takes it from the
/// [`crate::open::Opened`] (or [`crate::open::OpenOptions::rules`], read ahead for a job of
/// many files).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct UserRules {
    pub categories: Rules,
    pub frames: FrameRules,
}

impl UserRules {
    /// The rules of `opts.rules`, or none.
    pub fn read(opts: &LoadOptions) -> Result<UserRules, FormatError> {
        let Some(path) = &opts.rules else {
            return Ok(UserRules::default());
        };
        let text = read_rules_file(path)?;
        let bad = |reason: String| FormatError::SideFile {
            what: format!("rules file {}", path.display()),
            reason,
        };
        Ok(UserRules {
            categories: Rules::parse(&text).map_err(|e| bad(e.to_string()))?,
            frames: FrameRules::parse(&text).map_err(|e| bad(e.to_string()))?,
        })
    }
}

/// The most a rules file may hold (a few hundred rules take a few KiB).
pub(crate) const RULES_MAX: u64 = 16 << 20;

/// The text of a `--rules` file, refused past [`RULES_MAX`].
fn read_rules_file(path: &Path) -> Result<String, FormatError> {
    formats::limit::read_text_file(path, RULES_MAX, "a rules file").map_err(|e| {
        FormatError::SideFile {
            what: format!("cannot read rules file {}", path.display()),
            reason: e.to_string(),
        }
    })
}

/// Infers the categories of every trace whose reader found none (the door's inference step,
/// public for readers driven directly: the fuzzers, the snapshot benchmark's steps).
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
pub(crate) struct Followable {
    pub loaded: Loaded,
    pub decoder: Option<jsonl::JsonlDecoder>,
    pub offset: u64,
}

/// Reads `path` for following: JSONL resumably, any other format whole.
pub(crate) fn load_followable(
    path: &Path,
    opts: &LoadOptions,
    rules: &Rules,
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
        if opts.nsys.is_some() {
            return Err(FormatError::Invalid(format!(
                "--nsys merges with a PyTorch memory snapshot; {} is memtide JSONL (its recorder measures external memory itself)",
                path.display()
            )));
        }
        let (trace, decoder, offset) = formats::read_jsonl_resumable(path, opts, progress)?;
        return Ok(Followable {
            loaded: Loaded {
                format: Format::Jsonl,
                traces: vec![trace],
                allocators: Vec::new(),
                models: crate::allocator::Models::none(),
            },
            decoder: Some(decoder),
            offset,
        });
    }
    // Measured before reading, so a change during the load still triggers a reload.
    let offset = std::fs::metadata(path).map_or(0, |m| m.len());
    Ok(Followable {
        loaded: load_with(path, opts, rules, progress)?,
        decoder: None,
        offset,
    })
}
