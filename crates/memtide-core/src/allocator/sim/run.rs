//! One simulated run: a [`SimInput`] replayed through the [`Engine`] under one
//! [`AllocConf`], with the figures `memtide whatif` reports — reserved and allocated peaks,
//! segments, fragmentation at the reserved peak, the reserved timeline, the first OOM with
//! its explanation — and the list of what the model simplifies.

use super::config::AllocConf;
use super::engine::{Engine, Refusal, SegEvent};
use super::input::{SimInput, SimOp};
use crate::allocator::explain::{
    explain, unservable, OomExplanation, OomFacts, PoolFacts, Verdict,
};
use crate::allocator::rounding::PoolKind;
use crate::allocator::state::{fragmentation, PoolKey};
use crate::worker::Progress;
use serde::Serialize;
use std::sync::atomic::Ordering;

/// How to run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Bytes the device can hold (None: unlimited, no OOM possible).
    pub capacity: Option<u64>,
    /// Keep the reserved timeline (change points).
    pub timeline: bool,
    /// Keep the segment events the model makes (for validation).
    pub segment_events: bool,
    /// Skip the recorded run's releases ([`SimOp::Release`]).
    pub no_releases: bool,
    /// Skip the recorded run's OOM requests (validation: the recorded run never got them).
    pub no_recorded_ooms: bool,
    /// Device name for the OOM explanation.
    pub device: String,
    /// Start from the recorded state before the history at its recorded addresses and take
    /// the addresses the recorded run's `cudaMalloc` returned (the run under the file's own
    /// settings): else the prologue is allocated first at the model's own addresses.
    pub recorded_layout: bool,
    /// Ops replayed, added to `done` as the run goes (every op of the input once the run is
    /// over, those after a refusal too): for a screen that waits on the replays.
    pub progress: Option<Progress>,
}

/// Ops between two additions to [`RunOptions::progress`].
const PROGRESS_EVERY: usize = 1 << 16;

/// The result of one run (the `runs[]` object of `whatif --json`).
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    /// The settings as a `PYTORCH_CUDA_ALLOC_CONF` string (empty: PyTorch's defaults).
    pub alloc_conf: String,
    /// Where the settings came from ("recorded", "defaults", "--alloc-conf").
    pub settings_source: String,
    pub reserved_peak: u64,
    /// Source event (`#N`) where the reserved peak is first reached.
    pub reserved_peak_at: Option<u64>,
    /// Peak of allocated bytes (block sizes after rounding and unsplit remainders).
    pub allocated_peak: u64,
    /// Segments when the reserved peak is reached (expandable: contiguous mapped ranges).
    pub segments: u64,
    pub segments_max: u64,
    pub segments_at_end: u64,
    /// 1 − largest free block / free bytes in the reserve, at the reserved peak (null when
    /// nothing is free there).
    pub fragmentation_at_peak: Option<f64>,
    /// The first request the model could not serve (with `--capacity`); the run stops
    /// there, as the program would.
    pub oom: Option<OomExplanation>,
    /// What the refused request lacked under the capacity: the reserve at the refusal (after
    /// releasing what could be released) plus the segment or pages it needed, less the
    /// capacity. None without an OOM (or a request no size can hold).
    pub oom_shortfall: Option<u64>,
    /// The file's own OOM requests: how many the model served and refused.
    pub recorded_ooms_served: u64,
    pub recorded_ooms_refused: u64,
    /// Where the model served the first of the file's OOM requests: (source event, bytes
    /// left under the capacity once it was served). None when it served none or there is no
    /// capacity.
    #[serde(skip)]
    pub recorded_oom_spare: Option<(u64, u64)>,
    /// With a ceiling: `would_have_fit` (the whole history replayed under it) or `oom`;
    /// without one: `no_ceiling`. Set by [`super::report::whatif_under`].
    pub outcome: &'static str,
    /// The file's own settings against the file's OOM (the first run only, when the file
    /// records an OOM and there is a ceiling).
    pub model_check: Option<super::report::ModelCheck>,
    /// Ops replayed.
    pub ops: u64,
    /// True when the source records no allocator (the figures estimate what a CUDA run with
    /// these allocations would reserve).
    pub estimate: bool,
    pub simplifications: Vec<String>,
    /// Reserved bytes after each op where they changed: (source event, bytes).
    #[serde(skip)]
    pub timeline: Vec<(u64, u64)>,
    /// Segment events in order: (source event, event).
    #[serde(skip)]
    pub segment_events: Vec<(u64, SegEvent)>,
    /// How many of `segment_events` the prologue made (blocks live before the history).
    #[serde(skip)]
    pub prologue_segment_events: usize,
}

/// What every run simplifies, in words (`seeded`: the run starts from the recorded layout).
pub(crate) fn simplifications(
    input: &SimInput,
    opts: &RunOptions,
    conf: &AllocConf,
    seeded: bool,
) -> Vec<String> {
    let addresses = if seeded {
        "addresses are the recorded run's where the model does what it did (the state before the history, and each segment made where the run made one of that size), else the model's own, above them: equal-sized free blocks are chosen in address order, as PyTorch chooses them"
    } else {
        "addresses are the model's own (segments laid out in order): equal-sized free blocks are chosen in that order, which a real cudaMalloc's addresses may not follow"
    };
    let mut v = vec![
        addresses.to_string(),
        "memory outside the caching allocator (CUDA context, NCCL, other processes) is not modelled: with --capacity, leave room for it".to_string(),
        "CUDA-graph private pools keep their blocks (never freed as a whole when a graph is destroyed); freeable-pool release is not modelled".to_string(),
        "free_completed happens where the file recorded it (cross-stream event timing is not re-simulated); release_cached_blocks completes pending frees early".to_string(),
        "the recorded run's segment releases (empty_cache, retries after a failed cudaMalloc) are replayed as release_cached_blocks at the same place".to_string(),
    ];
    if !opts.no_releases && !input.from_snapshot {
        v.pop();
    }
    if opts.capacity.is_none() {
        v.push("no capacity: the device is unlimited, so no OOM, no retry and no release_cached_blocks on failure".into());
    }
    if conf.garbage_collection_threshold > 0.0 && opts.capacity.is_none() {
        v.push("garbage_collection_threshold has no effect without a capacity (PyTorch collects only under a memory fraction; the model takes --capacity as that limit)".into());
    }
    if conf.expandable_segments {
        v.push("expandable segments: address space per segment is 1⅛ of the capacity (1 TiB when unknown); pages map all-or-nothing per request".into());
    }
    if !input.from_snapshot {
        v.push(
            "sizes are the trace's allocation sizes; PyTorch's rounding is applied to them".into(),
        );
    }
    if input.prologue > 0 && seeded {
        v.push(format!(
            "{} blocks live before the history began start where the recorded run had them, in its segments",
            input.prologue
        ));
    } else if input.prologue > 0 {
        v.push(format!(
            "{} blocks live before the history began are allocated first, in address order (their real order and the segments they came from are unknown)",
            input.prologue
        ));
    }
    v.extend(
        input
            .notes
            .iter()
            .filter(|n| !n.contains("live before"))
            .cloned(),
    );
    v
}

/// Replays `input` under `conf`.
pub fn run(input: &SimInput, conf: &AllocConf, opts: &RunOptions) -> RunResult {
    let mut e = Engine::new(conf.clone(), opts.capacity);
    if opts.segment_events {
        e.events = Some(Vec::new());
    }
    let seeded = match &input.layout {
        Some(l) if opts.recorded_layout => e.seed(l),
        _ => None,
    };
    let mut handles: Vec<u32> = Vec::with_capacity(input.ops.len() / 2 + 1);
    const GONE: u32 = u32::MAX;
    let mut r = RunResult {
        alloc_conf: conf.to_conf_string(),
        settings_source: String::new(),
        reserved_peak: 0,
        reserved_peak_at: None,
        allocated_peak: 0,
        segments: 0,
        segments_max: 0,
        segments_at_end: 0,
        fragmentation_at_peak: None,
        oom: None,
        oom_shortfall: None,
        recorded_ooms_served: 0,
        recorded_ooms_refused: 0,
        recorded_oom_spare: None,
        outcome: if opts.capacity.is_some() {
            "would_have_fit"
        } else {
            "no_ceiling"
        },
        model_check: None,
        ops: 0,
        estimate: !input.from_snapshot,
        simplifications: simplifications(input, opts, conf, seeded.is_some()),
        timeline: Vec::new(),
        segment_events: Vec::new(),
        prologue_segment_events: 0,
    };
    let mut last_reserved = 0u64;
    let mut seen_events = 0usize;
    if opts.timeline {
        r.timeline.push((0, 0));
    }
    for (k, op) in input.ops.iter().enumerate() {
        if k % PROGRESS_EVERY == PROGRESS_EVERY - 1 {
            if let Some(p) = &opts.progress {
                p.done.fetch_add(PROGRESS_EVERY as u64, Ordering::Relaxed);
            }
        }
        if k == input.prologue {
            r.prologue_segment_events = r.segment_events.len();
        }
        let at = input.at.get(k).copied().unwrap_or(0);
        let mut refused: Option<(Refusal, bool)> = None;
        match *op {
            // Placed by the seed already.
            SimOp::Alloc { .. } if k < input.prologue && seeded.is_some() => {
                let h = seeded.as_ref().and_then(|s| s.get(handles.len()).copied());
                handles.push(h.unwrap_or(GONE));
            }
            SimOp::Alloc { size, stream, pool } => {
                let tag = handles.len() as u32;
                let hint = match opts.recorded_layout {
                    true => input.seg_hints.get(&k).copied(),
                    false => None,
                };
                match e.malloc_at(size, stream, pool, tag, hint) {
                    Ok(b) => handles.push(b),
                    Err(x) => {
                        handles.push(GONE);
                        refused = Some((x, false));
                    }
                }
            }
            SimOp::FreeRequested { alloc } => {
                if let Some(&b) = handles.get(alloc as usize) {
                    if b != GONE {
                        e.free_requested(b);
                    }
                }
            }
            SimOp::Free { alloc } => {
                if let Some(h) = handles.get_mut(alloc as usize) {
                    if *h != GONE {
                        e.free(*h);
                        *h = GONE;
                    }
                }
            }
            SimOp::Release => {
                if !opts.no_releases {
                    e.release_cached_blocks();
                }
            }
            SimOp::RecordedOom { .. } if opts.no_recorded_ooms => {}
            SimOp::RecordedOom { size, stream, pool } => {
                match e.malloc(size, stream, pool, u32::MAX) {
                    Ok(b) => {
                        r.recorded_ooms_served += 1;
                        note_peaks(&mut r, &e, at);
                        if r.recorded_oom_spare.is_none() {
                            r.recorded_oom_spare =
                                opts.capacity.map(|c| (at, c.saturating_sub(e.reserved())));
                        }
                        e.free(b);
                    }
                    Err(x) => {
                        r.recorded_ooms_refused += 1;
                        refused = Some((x, true));
                    }
                }
            }
        }
        for t in e.completed_early.drain(..) {
            if let Some(h) = handles.get_mut(t as usize) {
                *h = GONE;
            }
        }
        r.ops += 1;
        note_peaks(&mut r, &e, at);
        if let Some(ev) = &e.events {
            r.segment_events
                .extend(ev[seen_events..].iter().map(|x| (at, *x)));
            seen_events = ev.len();
        }
        if opts.timeline && e.reserved() != last_reserved {
            r.timeline.push((at, e.reserved()));
        }
        last_reserved = e.reserved();
        if let Some((x, _recorded)) = refused {
            r.oom = Some(explain_refusal(&e, &x, at, opts, input));
            r.outcome = "oom";
            r.oom_shortfall = match (x.rounded, x.alloc_size, opts.capacity) {
                (Some(_), Some(_), Some(c)) => {
                    Some(e.reserved().saturating_add(e.last_need).saturating_sub(c))
                }
                _ => None,
            };
            break;
        }
    }
    r.segments_at_end = e.segments();
    if let Some(p) = &opts.progress {
        let counted = (r.ops as usize / PROGRESS_EVERY) * PROGRESS_EVERY;
        p.done
            .fetch_add((input.ops.len() - counted) as u64, Ordering::Relaxed);
    }
    r
}

fn note_peaks(r: &mut RunResult, e: &Engine, at: u64) {
    let segs = e.segments();
    r.segments_max = r.segments_max.max(segs);
    r.allocated_peak = r.allocated_peak.max(e.allocated());
    if e.reserved() > r.reserved_peak {
        r.reserved_peak = e.reserved();
        r.reserved_peak_at = Some(at);
        r.segments = segs;
        let (largest, free) = e.largest_free();
        r.fragmentation_at_peak = fragmentation(largest, free);
    }
}

fn explain_refusal(
    e: &Engine,
    x: &Refusal,
    at: u64,
    opts: &RunOptions,
    input: &SimInput,
) -> OomExplanation {
    let (pool_free, largest, free) = e.pool_facts(x);
    let facts = OomFacts {
        index: at,
        time_us: None,
        device: opts.device.clone(),
        requested: Some(x.rounded.unwrap_or(x.requested)),
        device_free: opts.capacity.map(|c| c.saturating_sub(e.reserved())),
        allocated: Some(e.allocated()),
        reserved: Some(e.reserved()),
        capacity: opts.capacity,
        capacity_source: None,
        pool: Some(PoolFacts {
            key: PoolKey {
                pool_id: input
                    .pools
                    .get(x.pool as usize)
                    .copied()
                    .unwrap_or_default(),
                kind: if x.small {
                    PoolKind::Small
                } else {
                    PoolKind::Large
                },
                stream: x.stream,
            },
            pool_free,
            largest_free_block: largest,
            free_in_reserve: free,
        }),
        biggest_live: Vec::new(),
        rising_baseline: None,
    };
    let mut ex = explain(&facts);
    ex.requested_bytes = Some(x.requested);
    if x.rounded.is_none() || x.alloc_size.is_none() {
        // These settings round it beyond 64 bits: never served, whatever the device.
        ex.rounded_bytes = None;
        ex.verdict = Verdict::RequestTooLarge;
        ex.advice = unservable(x.requested);
    }
    ex
}
