//! `whatif` for one device: the runs to compare (the file's own settings first, or PyTorch's
//! defaults, then each `--alloc-conf`), replayed from the snapshot's allocator history when
//! there is one, else from the trace's allocations (an estimate), beside what the file
//! recorded.

use super::ceiling::Ceiling;
use super::config::AllocConf;
use super::input::{SimInput, SimOp};
use super::run::{run, RunOptions, RunResult};
use super::validate::{recorded_peak, recorded_reserved};
use crate::allocator::replay::History;
use crate::trace::{human_bytes, Seq, Trace};
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
    /// The capacity given for this run (or the file's), as the ceiling's text names it.
    pub capacity: Option<u64>,
    /// What every run is replayed under (None: no ceiling, reserved peaks only).
    pub ceiling: Option<Ceiling>,
}

/// The file's own settings replayed against the file's own OOM.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct ModelCheck {
    /// The file's first OOM (`#N` as shown).
    pub file_oom: u64,
    /// `reproduced` (the model runs out at that very request), `ran_out_earlier` or
    /// `served` (the model is off).
    pub result: &'static str,
    /// How far off the model is, in bytes (0 when reproduced; for `served`, a lower bound).
    pub off_by: Option<u64>,
    /// One line in words.
    pub text: String,
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

/// Runs the file's own settings (or the defaults) and then each of `confs`, on a device
/// that holds at most `capacity` bytes (None: unlimited). [`whatif_under`] with that figure as
/// the ceiling.
pub fn whatif(
    trace: &Trace,
    history: Option<&History>,
    confs: &[AllocConf],
    capacity: Option<u64>,
) -> Result<WhatIf, super::ConfError> {
    let mut w = whatif_under(trace, history, confs, capacity.map(Ceiling::given).as_ref())?;
    w.capacity = capacity;
    Ok(w)
}

/// Runs the file's own settings (or the defaults) and then each of `confs`, every one under
/// the same `ceiling` ([`super::ceiling::derive`]); the first run is checked against the
/// file's own OOM ([`ModelCheck`]).
pub fn whatif_under(
    trace: &Trace,
    history: Option<&History>,
    confs: &[AllocConf],
    ceiling: Option<&Ceiling>,
) -> Result<WhatIf, super::ConfError> {
    let input = input_for(trace, history);
    whatif_on(
        trace,
        history,
        &input,
        confs,
        ceiling,
        crate::worker::jobs_for_runs(confs.len() + 1),
    )
}

/// [`whatif_under`] on a replay input already built, its runs (independent replays of the
/// same input) shared out over at most `jobs` threads; the result is the same for any `jobs`.
pub(crate) fn whatif_on(
    trace: &Trace,
    history: Option<&History>,
    input: &SimInput,
    confs: &[AllocConf],
    ceiling: Option<&Ceiling>,
    jobs: usize,
) -> Result<WhatIf, super::ConfError> {
    let own = recorded_conf(trace).transpose()?;
    let defaults = AllocConf::default();
    let first = match &own {
        Some(c) => (c, "recorded"),
        None => (&defaults, "defaults"),
    };
    let runs = replays(
        trace,
        history,
        input,
        Some(first),
        confs,
        ceiling,
        &RunsOn::threads(jobs),
    );
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
        capacity: ceiling.and_then(|c| c.capacity),
        ceiling: ceiling.cloned(),
    })
}

/// Where a set of replays runs: on at most `jobs` threads, each run's ops counted into
/// `progress` when given (its total raised by the ops of every run before they start).
#[derive(Clone, Debug, Default)]
pub(crate) struct RunsOn {
    pub jobs: usize,
    pub progress: Option<crate::worker::Progress>,
}

impl RunsOn {
    pub(crate) fn threads(jobs: usize) -> RunsOn {
        RunsOn {
            jobs,
            progress: None,
        }
    }
}

/// The replays of `confs` (after the file's own settings `own`, with their source, when
/// given: that run starts from the recorded layout and is checked against the file's OOM),
/// each under `ceiling`, as `on` says, in the order given; OOMs at their `#N`.
pub(crate) fn replays(
    trace: &Trace,
    history: Option<&History>,
    input: &SimInput,
    own: Option<(&AllocConf, &'static str)>,
    confs: &[AllocConf],
    ceiling: Option<&Ceiling>,
    on: &RunsOn,
) -> Vec<RunResult> {
    let opts = RunOptions {
        capacity: ceiling.map(|c| c.bytes),
        device: trace.device.clone(),
        progress: on.progress.clone(),
        ..RunOptions::default()
    };
    // The file's own run starts from its recorded layout.
    let own_opts = RunOptions {
        recorded_layout: true,
        ..opts.clone()
    };
    let first = usize::from(own.is_some());
    if let Some(p) = &on.progress {
        let ops = (input.ops.len() * (confs.len() + first)) as u64;
        p.total.fetch_add(ops, std::sync::atomic::Ordering::Relaxed);
    }
    let mut runs =
        crate::worker::map_on("memtide-whatif", on.jobs, confs.len() + first, |k| {
            match (k.checked_sub(first).and_then(|k| confs.get(k)), own) {
                (Some(c), _) => {
                    let mut r = run(input, c, &opts);
                    r.settings_source = "--alloc-conf".into();
                    r
                }
                (None, Some((c, source))) => {
                    let mut r = run(input, c, &own_opts);
                    r.settings_source = source.into();
                    if ceiling.is_some() {
                        r.model_check = model_check(trace, history, input, &r);
                    }
                    r
                }
                (None, None) => run(input, &AllocConf::default(), &opts),
            }
        });
    // Served under a ceiling the run may not have had (an upper bound): it depends on what
    // lay outside the allocator, never "would have fit".
    if ceiling.is_some_and(|c| !c.proven()) {
        for r in runs.iter_mut().filter(|r| r.outcome == "would_have_fit") {
            r.outcome = "depends";
        }
    }
    // Positions on the event axis become the `#N` users see (as `summary`'s OOMs).
    for r in &mut runs {
        if let Some(o) = &mut r.oom {
            o.index = trace.event_number(Seq(o.index));
        }
    }
    runs
}

/// The first run (the file's own settings) against the file's first OOM request: where the
/// model ran out, or that it served the request, and by how much it is off.
pub(crate) fn model_check(
    trace: &Trace,
    history: Option<&History>,
    input: &SimInput,
    r: &RunResult,
) -> Option<ModelCheck> {
    let file_at = input
        .ops
        .iter()
        .zip(&input.at)
        .find(|(op, _)| matches!(op, SimOp::RecordedOom { .. }))
        .map(|(_, &at)| at)?;
    let n = |at: u64| trace.event_number(Seq(at));
    let file_oom = n(file_at);
    let shortfall = r.oom_shortfall.map_or("?".into(), human_bytes);
    match (&r.oom, r.recorded_oom_spare) {
        (Some(o), _) if o.index == file_at => Some(ModelCheck {
            file_oom,
            result: "reproduced",
            off_by: Some(0),
            text: format!(
                "the model reproduces the file's OOM at #{file_oom}: the {} request is {shortfall} short under the ceiling",
                o.requested_bytes.map_or("?".into(), human_bytes)
            ),
        }),
        (Some(o), _) if o.index < file_at => {
            let recorded = history
                .and_then(|h| recorded_reserved(h).get(o.index as usize).copied())
                .map_or(String::new(), |b| {
                    format!(" (the file's reserve there: {})", human_bytes(b))
                });
            Some(ModelCheck {
                file_oom,
                result: "ran_out_earlier",
                off_by: r.oom_shortfall,
                text: format!(
                    "the model is off: it runs out at #{}, before the file's OOM at #{file_oom}, needing {shortfall} more than the ceiling where the recorded run was served{recorded}",
                    n(o.index)
                ),
            })
        }
        (_, Some((_, spare))) => Some(ModelCheck {
            file_oom,
            result: "served",
            off_by: Some(spare),
            text: format!(
                "the model is off: it serves the file's OOM request at #{file_oom} with {} to spare under the ceiling (its reserve there is at least that much below what the allocator really needed)",
                human_bytes(spare)
            ),
        }),
        _ => None,
    }
}
