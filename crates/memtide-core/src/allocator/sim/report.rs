//! `whatif` for one device: the runs to compare (the file's own settings first, or PyTorch's
//! defaults, then each `--alloc-conf`), replayed from the snapshot's allocator history when
//! there is one, else from the trace's allocations (an estimate), beside what the file
//! recorded.

use super::config::AllocConf;
use super::input::SimInput;
use super::run::{run, RunOptions, RunResult};
use super::validate::recorded_peak;
use crate::allocator::replay::History;
use crate::trace::Trace;
use serde::Serialize;

/// What the file recorded (snapshots with segments).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Recorded {
    pub reserved_peak: u64,
    /// Segments at the recorded reserved peak.
    pub segments: u64,
    /// Segments in the final dump.
    pub segments_at_end: u64,
    /// The file's own settings as a `PYTORCH_CUDA_ALLOC_CONF` string.
    pub alloc_conf: Option<String>,
}

/// The `whatif --json` document.
#[derive(Clone, Debug, Serialize)]
pub struct WhatIf {
    pub device: String,
    pub recorded: Option<Recorded>,
    pub runs: Vec<RunResult>,
    /// Whether the figures are estimates (no allocator information in the source).
    pub estimate: bool,
    pub capacity: Option<u64>,
}

/// The file's own allocator settings (`allocator_settings`), when it records them.
pub fn recorded_conf(trace: &Trace) -> Option<Result<AllocConf, super::ConfError>> {
    let (_, text) = trace.meta.iter().find(|(k, _)| k == "allocator_settings")?;
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    Some(AllocConf::from_settings(&v))
}

/// The replay input of a device: its allocator history when the file has one, else its
/// trace.
pub fn input_for(trace: &Trace, history: Option<&History>) -> SimInput {
    match history {
        Some(h) => SimInput::from_history(h),
        None => SimInput::from_trace(trace),
    }
}

/// Runs the file's own settings (or the defaults) and then each of `confs`.
pub fn whatif(
    trace: &Trace,
    history: Option<&History>,
    confs: &[AllocConf],
    capacity: Option<u64>,
) -> Result<WhatIf, super::ConfError> {
    let input = input_for(trace, history);
    let own = recorded_conf(trace).transpose()?;
    let opts = RunOptions {
        capacity,
        device: trace.device.clone(),
        ..RunOptions::default()
    };
    let mut runs = Vec::new();
    let (first, source) = match &own {
        Some(c) => (c.clone(), "recorded"),
        None => (AllocConf::default(), "defaults"),
    };
    // The file's own run starts from its recorded layout.
    let own_opts = RunOptions {
        recorded_layout: true,
        ..opts.clone()
    };
    let mut r = run(&input, &first, &own_opts);
    r.settings_source = source.into();
    runs.push(r);
    for c in confs {
        let mut r = run(&input, c, &opts);
        r.settings_source = "--alloc-conf".into();
        runs.push(r);
    }
    let recorded = history.filter(|h| !h.segments.is_empty() || !h.entries.is_empty());
    let recorded = recorded.and_then(|h| {
        let (reserved_peak, segments) = recorded_peak(h)?;
        Some(Recorded {
            reserved_peak,
            segments,
            segments_at_end: h.segments.len() as u64,
            alloc_conf: own.as_ref().map(AllocConf::to_conf_string),
        })
    });
    Ok(WhatIf {
        device: trace.device.clone(),
        recorded,
        estimate: !input.from_snapshot,
        runs,
        capacity,
    })
}
