//! Loading a file for a headless command: read, pick the device, index.

use super::InputArgs;
use anyhow::{bail, Context, Result};
use memtide_core::formats::device_log::DeviceLogOptions;
use memtide_core::formats::{self, Histories, LoadOptions, Loaded, Progress, Threads};
use memtide_core::index::Index;
use memtide_core::trace::Trace;
use std::path::Path;

/// Converts CLI input flags to reader options.
pub fn load_options(a: &InputArgs) -> LoadOptions {
    LoadOptions {
        lenient: a.lenient,
        cpp_frames: a.cpp_frames,
        categories: a.categories.clone(),
        rules: a.rules.clone(),
        device_log: a.device_log.clone().map(|path| DeviceLogOptions {
            path,
            tz_east_us: a.device_log_tz,
            offset_us: a.device_log_offset.unwrap_or(0),
        }),
        nsys: a.nsys.clone(),
        threads: if a.single_thread {
            Threads::One
        } else {
            Threads::Auto
        },
        // The headless commands read the histories themselves; the explorer asks for models.
        allocator_models: false,
        // What they read a history for is an OOM's explanation and the final segments
        // (`whatif` asks for whole histories).
        histories: Histories::ForOoms,
    }
}

/// The side files the input flags name (`--device-log`, `--categories`, `--rules`): inputs
/// like the trace, which no output may overwrite.
pub fn side_files(a: &InputArgs) -> Vec<&Path> {
    [
        a.device_log.as_deref(),
        a.nsys.as_deref(),
        a.categories.as_deref(),
        a.rules.as_deref(),
        a.oom_message.as_deref(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// Reads `path` with context for error messages.
pub fn load(path: &Path, a: &InputArgs) -> Result<Loaded> {
    load_with(path, &load_options(a))
}

/// As [`load`], with every allocator history whole (`whatif` replays them).
pub fn load_whole(path: &Path, a: &InputArgs) -> Result<Loaded> {
    let opts = LoadOptions {
        histories: Histories::Whole,
        ..load_options(a)
    };
    load_with(path, &opts)
}

fn load_with(path: &Path, opts: &LoadOptions) -> Result<Loaded> {
    let progress = Progress::new();
    match memtide_core::load::load(path, opts, &progress) {
        Ok(l) => Ok(l),
        // A side file's error names that file: "cannot read TRACE" would blame the trace.
        Err(e @ (formats::FormatError::DeviceLog(_) | formats::FormatError::SideFile { .. })) => {
            Err(e.into())
        }
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Index of the device the user asked for, else the first device with events
/// ([`memtide_core::load::pick_device`]).
pub fn pick_device(loaded: &Loaded, want: Option<&str>) -> Result<usize> {
    let traces = &loaded.traces;
    if traces.is_empty() {
        bail!("the file holds no device traces");
    }
    let devices = traces.iter().map(|t| (t.device.as_str(), !t.is_empty()));
    let i = memtide_core::load::pick_device(devices, want)?;
    if let Some(w) = want.filter(|w| memtide_core::load::is_rocm_alias(w, &traces[i].device)) {
        crate::errln!(
            "memtide: note: --device {w} taken as this file's {} (PyTorch on ROCm names its hip devices cuda)",
            traces[i].device
        );
    }
    Ok(i)
}

/// A trace with its index and, for a snapshot's CUDA device, its allocator history.
pub struct Indexed {
    pub trace: Trace,
    pub index: Index,
    pub allocator: Option<memtide_core::allocator::History>,
}

/// Sets every trace's capacity from `--capacity SIZE` (the user's figure wins over the file's).
pub fn apply_capacity(loaded: &mut Loaded, capacity: Option<&str>) -> Result<()> {
    if let Some(c) = capacity {
        let c = super::flags::capacity(c)?;
        for t in &mut loaded.traces {
            t.capacity = Some(c);
            t.capacity_source = Some("--capacity".into());
        }
    }
    Ok(())
}

/// The largest `--oom-message` file read (a whole job log is fine; a stray multi-gigabyte
/// file is refused rather than read into memory).
const OOM_MESSAGE_MAX: u64 = 256 << 20;

/// Reads and parses `--oom-message FILE` (bytes that are not UTF-8, as job logs may hold,
/// read as U+FFFD); returns the message and the file's name for reports.
pub fn read_oom_message(
    path: &Path,
) -> Result<(memtide_core::formats::oom_message::OomMessage, String)> {
    let name = path.display().to_string();
    let len = std::fs::metadata(path)
        .with_context(|| format!("--oom-message {name}: cannot read it"))?
        .len();
    if len > OOM_MESSAGE_MAX {
        bail!(
            "--oom-message {name}: {len} bytes, more than the {} MiB read: paste PyTorch's message into a file of its own",
            OOM_MESSAGE_MAX >> 20
        );
    }
    let bytes =
        std::fs::read(path).with_context(|| format!("--oom-message {name}: cannot read it"))?;
    let m = memtide_core::formats::oom_message::parse(&String::from_utf8_lossy(&bytes))
        .with_context(|| format!("--oom-message {name}"))?;
    Ok((m, name))
}

/// Applies `--oom-message FILE` to the trace of the message's GPU (`cuda:N`; a file of one
/// device: that one): its capacity, and its driver free where the file lacks it. Notes where
/// the figures disagree go to stderr. Call before [`apply_capacity`] (`--capacity` wins).
pub fn apply_oom_message(loaded: &mut Loaded, a: &InputArgs) -> Result<()> {
    let Some(path) = &a.oom_message else {
        return Ok(());
    };
    let (m, name) = read_oom_message(path)?;
    let want = format!("cuda:{}", m.gpu);
    let one = loaded.traces.len() == 1;
    let Some(t) = loaded
        .traces
        .iter_mut()
        .enumerate()
        .find(|(i, t)| t.device == want || (one && *i == 0))
        .map(|(_, t)| t)
    else {
        bail!(
            "--oom-message {name}: the message is of GPU {}, and the file has no {want}",
            m.gpu
        );
    };
    for note in memtide_core::formats::oom_message::apply(t, &m, &name) {
        crate::errln!("memtide: note: --oom-message {note}");
    }
    Ok(())
}

/// Indexes every trace of a loaded file.
pub fn index_all(loaded: Loaded) -> (formats::Format, Vec<Indexed>) {
    let format = loaded.format;
    let mut allocators = loaded.allocators;
    let v = loaded
        .traces
        .into_iter()
        .map(|trace| {
            let index = Index::build(&trace);
            let allocator = allocators
                .iter()
                .position(|h| h.device == trace.device)
                .map(|i| allocators.swap_remove(i));
            Indexed {
                trace,
                index,
                allocator,
            }
        })
        .collect();
    (format, v)
}
