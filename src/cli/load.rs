//! Loading a file for a headless command: read, pick the device, index.

use super::InputArgs;
use anyhow::{bail, Context, Result};
use memtide_core::formats::device_log::DeviceLogOptions;
use memtide_core::formats::{self, LoadOptions, Loaded, Progress};
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
    }
}

/// Reads `path` with context for error messages.
pub fn load(path: &Path, a: &InputArgs) -> Result<Loaded> {
    let progress = Progress::new();
    memtide_core::load::load(path, &load_options(a), &progress)
        .with_context(|| format!("cannot read {}", path.display()))
}

/// Index of the device the user asked for, else the first device with events.
pub fn pick_device(loaded: &Loaded, want: Option<&str>) -> Result<usize> {
    let traces = &loaded.traces;
    if traces.is_empty() {
        bail!("the file holds no device traces");
    }
    match want {
        Some(w) => {
            if let Ok(n) = w.parse::<usize>() {
                if let Some(i) = traces
                    .iter()
                    .position(|t| device_ordinal(&t.device) == Some(n))
                {
                    return Ok(i);
                }
                if n < traces.len() {
                    return Ok(n);
                }
            }
            if let Some(i) = traces.iter().position(|t| t.device == w) {
                return Ok(i);
            }
            let names: Vec<&str> = traces.iter().map(|t| t.device.as_str()).collect();
            bail!("no device {w:?} in this file; it has: {}", names.join(", "))
        }
        None => Ok(traces.iter().position(|t| !t.is_empty()).unwrap_or(0)),
    }
}

fn device_ordinal(name: &str) -> Option<usize> {
    name.rsplit(':').next()?.parse().ok()
}

/// A trace with its index.
pub struct Indexed {
    pub trace: Trace,
    pub index: Index,
}

/// Indexes every trace of a loaded file.
pub fn index_all(loaded: Loaded) -> (formats::Format, Vec<Indexed>) {
    let format = loaded.format;
    let v = loaded
        .traces
        .into_iter()
        .map(|trace| {
            let index = Index::build(&trace);
            Indexed { trace, index }
        })
        .collect();
    (format, v)
}
