//! The command line's way into the report layer's prologue ([`memtide_report::prologue`]):
//! the input flags as [`InputOptions`], the opening's notes said on stderr as they come.

use super::InputArgs;
use anyhow::Result;
use memtide_core::formats::LoadOptions;
use memtide_core::open::{Device, OpenError, OpenOptions, Opened};
use memtide_report::prologue;
pub use memtide_report::InputOptions;
use std::path::Path;

impl From<&InputArgs> for InputOptions {
    fn from(a: &InputArgs) -> InputOptions {
        InputOptions {
            device: a.device.clone(),
            lenient: a.lenient,
            device_log: a.device_log.clone(),
            device_log_tz: a.device_log_tz,
            device_log_offset: a.device_log_offset,
            oom_message: a.oom_message.clone(),
            nsys: a.nsys.clone(),
            server_log: a.server_log.clone(),
            categories: a.categories.clone(),
            rules: a.rules.clone(),
            cpp_frames: a.cpp_frames,
            single_thread: a.single_thread,
        }
    }
}

/// A note of the opening, on stderr.
pub fn say(note: &str) {
    crate::errln!("memtide: note: {note}");
}

/// Converts CLI input flags to reader options.
pub fn load_options(a: &InputArgs) -> LoadOptions {
    InputOptions::from(a).load_options()
}

/// The side files the input flags name: inputs like the trace, which no output may overwrite.
pub fn side_files(a: &InputArgs) -> Vec<&Path> {
    [
        a.device_log.as_deref(),
        a.nsys.as_deref(),
        a.categories.as_deref(),
        a.rules.as_deref(),
        a.oom_message.as_deref(),
        a.server_log.as_deref(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// The open options of the input flags, `--oom-message` read, and `capacity`.
pub fn open_options(a: &InputArgs, capacity: Option<&str>) -> Result<OpenOptions> {
    InputOptions::from(a).open_options(capacity)
}

/// Opens `path` through the core's door with the input flags and `--capacity`; the notes of
/// the opening go to stderr.
pub fn open(path: &Path, a: &InputArgs, capacity: Option<&str>) -> Result<Opened> {
    prologue::open(path, &a.into(), capacity, &mut say)
}

/// Opens `path` with `opts`, saying the opening's notes on stderr.
pub fn open_with(path: &Path, opts: &OpenOptions) -> Result<Opened> {
    prologue::open_with(path, opts, &Default::default(), &mut say)
}

/// The opening's notes, each a `memtide: note:` line on stderr.
pub fn say_notes(opened: &Opened) {
    prologue::say_notes(opened, &mut say);
}

/// The core's opening error as the command line says it.
pub fn open_error(e: OpenError) -> anyhow::Error {
    prologue::open_error(e)
}

/// Index of the device the user asked for, else the first that ran out of memory, else the
/// first that held memory, else the first with events.
pub fn pick_device(opened: &Opened, want: Option<&str>) -> Result<usize> {
    prologue::pick_device(opened, want, &mut say)
}

/// Opens `path` and takes the device the user asked for.
pub fn open_device(path: &Path, a: &InputArgs, capacity: Option<&str>) -> Result<Device> {
    prologue::open_device(path, &a.into(), capacity, &mut say)
}
