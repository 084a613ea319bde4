//! The command line's way into the core's one door ([`memtide_core::open()`]): the input
//! flags as open options, the core's errors with the file they concern, the device picked.

use super::InputArgs;
use anyhow::{bail, Context, Result};
use memtide_core::formats::device_log::DeviceLogOptions;
use memtide_core::formats::{Histories, LoadOptions, Progress, Threads};
use memtide_core::open::{OpenError, OpenOptions, Opened};
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

/// The open options of the input flags, `--oom-message` read, and `capacity` (the
/// command's `--capacity`, parsed; None where the command does not apply one).
pub fn open_options(a: &InputArgs, capacity: Option<&str>) -> Result<OpenOptions> {
    let oom_message = match &a.oom_message {
        Some(p) => Some(memtide_core::open::read_oom_message(p).map_err(open_error)?),
        None => None,
    };
    let capacity = capacity.map(super::flags::capacity).transpose()?;
    Ok(OpenOptions {
        read: load_options(a),
        capacity,
        oom_message,
        rules: None,
    })
}

/// Opens `path` through the core's door with the input flags and `--capacity`; the notes of
/// the opening go to stderr.
pub fn open(path: &Path, a: &InputArgs, capacity: Option<&str>) -> Result<Opened> {
    open_with(path, &open_options(a, capacity)?)
}

/// As [`open`], with every allocator history whole (`whatif` replays them).
pub fn open_whole(path: &Path, a: &InputArgs) -> Result<Opened> {
    let mut opts = open_options(a, None)?;
    opts.read.histories = Histories::Whole;
    open_with(path, &opts)
}

/// Opens `path` with `opts`, saying the opening's notes on stderr.
pub fn open_with(path: &Path, opts: &OpenOptions) -> Result<Opened> {
    let opened = memtide_core::open::open(path, opts, &Progress::new()).map_err(open_error)?;
    say_notes(&opened);
    Ok(opened)
}

/// The opening's notes, each a `memtide: note:` line on stderr.
pub fn say_notes(opened: &Opened) {
    for note in &opened.notes {
        crate::errln!("memtide: note: {note}");
    }
}

/// The core's opening error as the command line says it: the trace's error under "cannot
/// read TRACE", a side file's as it names itself.
pub fn open_error(e: OpenError) -> anyhow::Error {
    match e {
        OpenError::Read { path, source } => {
            anyhow::Error::new(source).context(format!("cannot read {}", path.display()))
        }
        OpenError::SideFile(source) => source.into(),
        other => other.into(),
    }
}

/// Index of the device the user asked for, else the first device with events (the core's
/// rule: [`Opened::pick`]).
pub fn pick_device(opened: &Opened, want: Option<&str>) -> Result<usize> {
    if opened.devices.is_empty() {
        bail!("the file holds no device traces");
    }
    let i = opened.pick(want)?;
    if let Some(note) = opened.alias_note(want, i) {
        crate::errln!("memtide: note: {note}");
    }
    Ok(i)
}

/// Opens `path` and takes the device the user asked for.
pub fn open_device(
    path: &Path,
    a: &InputArgs,
    capacity: Option<&str>,
) -> Result<memtide_core::open::Device> {
    let opened = open(path, a, capacity)?;
    let i = pick_device(&opened, a.device.as_deref())?;
    opened
        .take(i)
        .with_context(|| format!("{}: no trace", path.display()))
}
