//! Loading a file for analysis: read it ([`crate::formats`]), infer the categories a file does
//! not carry ([`crate::analysis::infer`]), merge a device-usage log when one is named
//! ([`crate::device_merge`]) and an Nsight Systems export ([`crate::nsys_merge`]), check the
//! byte sums. The one entry point the
//! binary, the tests and the benchmarks use.

use crate::analysis::frames::FrameRules;
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
    let nsys = match &opts.nsys {
        Some(p) => Some(formats::nsys::read(p)?),
        None => None,
    };
    let mut loaded = formats::read(path, opts, progress)?;
    infer_missing(&mut loaded.traces, &rules);
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
pub fn share_time_origin(traces: &mut [Trace]) {
    let origin = traces
        .iter()
        .filter(|t| t.clock.has_time())
        .filter_map(|t| t.timestamps().first().copied())
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

/// The user's category rules (`--rules FILE`), or none.
pub fn rules(opts: &LoadOptions) -> Result<Rules, FormatError> {
    let Some(path) = &opts.rules else {
        return Ok(Rules::default());
    };
    let text = read_rules_file(path)?;
    Rules::parse(&text).map_err(|e| FormatError::SideFile {
        what: format!("rules file {}", path.display()),
        reason: e.to_string(),
    })
}

/// The user's frame patterns (`[[frames]]` tables of the `--rules FILE`), or none.
pub fn frame_rules(opts: &LoadOptions) -> Result<FrameRules, FormatError> {
    let Some(path) = &opts.rules else {
        return Ok(FrameRules::default());
    };
    let text = read_rules_file(path)?;
    FrameRules::parse(&text).map_err(|e| FormatError::SideFile {
        what: format!("rules file {}", path.display()),
        reason: e.to_string(),
    })
}

/// The most a rules file may hold (a few hundred rules take a few KiB).
pub const RULES_MAX: u64 = 16 << 20;

/// The text of a `--rules` file, refused past [`RULES_MAX`].
fn read_rules_file(path: &Path) -> Result<String, FormatError> {
    formats::limit::read_text_file(path, RULES_MAX, "a rules file").map_err(|e| {
        FormatError::SideFile {
            what: format!("cannot read rules file {}", path.display()),
            reason: e.to_string(),
        }
    })
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
        loaded: load(path, opts, progress)?,
        decoder: None,
        offset,
    })
}

/// `--device` names no device of the file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no device {want:?} in this file; it has: {}", available.join(", "))]
pub struct UnknownDevice {
    pub want: String,
    pub available: Vec<String>,
}

/// Which of a file's devices the user means: `want` is a device name (`cuda:1`; on a ROCm
/// build PyTorch calls its `hip:N` devices `cuda:N`, so `cuda:N` names `hip:N` and the other
/// way round when the file has no device of that exact name), an ordinal (`1`: the device
/// whose name ends in `:1`, else the second device), or None for the first device with events
/// (else the first). `devices` gives each device's name and whether it has events, in file
/// order. The one rule every command and screen uses.
pub fn pick_device<'a>(
    devices: impl IntoIterator<Item = (&'a str, bool)>,
    want: Option<&str>,
) -> Result<usize, UnknownDevice> {
    let devices: Vec<(&str, bool)> = devices.into_iter().collect();
    let Some(want) = want else {
        return Ok(devices.iter().position(|&(_, busy)| busy).unwrap_or(0));
    };
    let ordinal = |name: &str| name.rsplit(':').next()?.parse::<usize>().ok();
    if let Some(i) = devices.iter().position(|&(name, _)| name == want) {
        return Ok(i);
    }
    if let Some(i) = devices
        .iter()
        .position(|&(name, _)| is_rocm_alias(want, name))
    {
        return Ok(i);
    }
    if let Ok(n) = want.parse::<usize>() {
        if let Some(i) = devices
            .iter()
            .position(|&(name, _)| ordinal(name) == Some(n))
        {
            return Ok(i);
        }
        if n < devices.len() {
            return Ok(n);
        }
    }
    Err(UnknownDevice {
        want: want.to_string(),
        available: devices.iter().map(|&(name, _)| name.to_string()).collect(),
    })
}

/// Whether `want` and `name` are one GPU under PyTorch's two names for it (`cuda:N` as
/// ROCm's PyTorch calls `hip:N`).
pub fn is_rocm_alias(want: &str, name: &str) -> bool {
    let split = |s: &str| {
        s.split_once(':')
            .map(|(kind, n)| (kind.to_string(), n.to_string()))
    };
    match (split(want), split(name)) {
        (Some((a, n)), Some((b, m))) => {
            n == m && matches!((a.as_str(), b.as_str()), ("cuda", "hip") | ("hip", "cuda"))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_names_a_rocm_device_and_hip_a_cuda_one() {
        let amd = [("cpu", true), ("hip:0", true), ("hip:1", true)];
        assert_eq!(pick_device(amd, Some("cuda:1")), Ok(2));
        assert_eq!(pick_device(amd, Some("hip:0")), Ok(1));
        assert_eq!(pick_device(DEVS, Some("hip:0")), Ok(2));
        // An exact name wins over the alias, and other kinds never alias.
        let both = [("hip:0", true), ("cuda:0", true)];
        assert_eq!(pick_device(both, Some("cuda:0")), Ok(1));
        assert!(pick_device(amd, Some("xpu:1")).is_err());
        assert!(pick_device(amd, Some("cuda:2")).is_err());
    }

    const DEVS: [(&str, bool); 3] = [("cpu", true), ("cuda:1", false), ("cuda:0", true)];

    #[test]
    fn a_device_is_picked_by_name_then_ordinal_then_position() {
        assert_eq!(pick_device(DEVS, Some("cuda:1")), Ok(1));
        assert_eq!(pick_device(DEVS, Some("0")), Ok(2), "ordinal of cuda:0");
        assert_eq!(pick_device(DEVS, Some("1")), Ok(1), "ordinal of cuda:1");
        assert_eq!(pick_device([("cpu", true), ("x", true)], Some("1")), Ok(1));
    }

    #[test]
    fn without_a_choice_the_first_device_with_events() {
        assert_eq!(pick_device([("a", false), ("b", true)], None), Ok(1));
        assert_eq!(pick_device([("a", false), ("b", false)], None), Ok(0));
    }

    #[test]
    fn an_unknown_device_lists_the_file_s_devices() {
        let e = pick_device(DEVS, Some("xpu:0")).expect_err("not in the file");
        assert_eq!(
            e.to_string(),
            "no device \"xpu:0\" in this file; it has: cpu, cuda:1, cuda:0"
        );
        assert!(pick_device(DEVS, Some("7")).is_err());
    }
}
