//! The one prologue every answer starts with: the file opened through the core's door
//! ([`memtide_core::open()`]) under the [`InputOptions`], the opening's notes handed to the
//! front end as they come, the device meant picked by the core's rule; the core's errors
//! worded with the file they concern.

use crate::options::InputOptions;
use anyhow::{bail, Context, Result};
use memtide_core::formats::{Histories, Progress};
use memtide_core::open::{Device, OpenError, OpenOptions, Opened};
use std::path::Path;

/// Where an answer's notes go as they come (`memtide: note: …` on the command line's stderr;
/// Python's stderr): one line each.
pub type Say<'a> = &'a mut dyn FnMut(&str);

/// Opens `path` through the core's door with `input` and `capacity`; the notes of the
/// opening go to `say`.
pub fn open(path: &Path, input: &InputOptions, capacity: Option<&str>, say: Say) -> Result<Opened> {
    open_with(path, &input.open_options(capacity)?, &Progress::new(), say)
}

/// As [`open`], with every allocator history whole (`whatif` replays them).
pub fn open_whole(path: &Path, input: &InputOptions, say: Say) -> Result<Opened> {
    let mut opts = input.open_options(None)?;
    opts.read.histories = Histories::Whole;
    open_with(path, &opts, &Progress::new(), say)
}

/// Opens `path` with `opts`, the opening's notes to `say`.
pub fn open_with(path: &Path, opts: &OpenOptions, progress: &Progress, say: Say) -> Result<Opened> {
    let opened = memtide_core::open::open(path, opts, progress).map_err(open_error)?;
    say_notes(&opened, say);
    Ok(opened)
}

/// The opening's notes, each to `say`.
pub fn say_notes(opened: &Opened, say: Say) {
    for note in &opened.notes {
        say(note);
    }
}

/// The core's opening error as the front ends say it: the trace's error under "cannot read
/// TRACE", a side file's as it names itself.
pub fn open_error(e: OpenError) -> anyhow::Error {
    match e {
        OpenError::Read { path, source } => {
            anyhow::Error::new(source).context(format!("cannot read {}", path.display()))
        }
        OpenError::SideFile(source) => source.into(),
        other => other.into(),
    }
}

/// Index of the device `want` names, else the first that ran out of memory, else the first
/// with events (the core's rule:
/// [`Opened::pick`]); a note to `say` when a ROCm name stood for a CUDA one.
pub fn pick_device(opened: &Opened, want: Option<&str>, say: Say) -> Result<usize> {
    if opened.devices.is_empty() {
        bail!("the file holds no device traces");
    }
    let i = opened.pick(want)?;
    if let Some(note) = opened.alias_note(want, i) {
        say(&note);
    }
    Ok(i)
}

/// Opens `path` and takes the device `input` names.
pub fn open_device(
    path: &Path,
    input: &InputOptions,
    capacity: Option<&str>,
    say: Say,
) -> Result<Device> {
    let opened = open(path, input, capacity, say)?;
    let i = pick_device(&opened, input.device.as_deref(), say)?;
    opened
        .take(i)
        .with_context(|| format!("{}: no trace", path.display()))
}
