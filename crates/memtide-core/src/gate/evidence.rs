//! The evidence a gate's verdict carries, read off the trace: the peak (bytes, event, mark,
//! window), the biggest allocations live there, the first OOM with its verdict, and the
//! allocations that survive every step.

use crate::allocator::FixResult;
use crate::analysis::frames::FrameView;
use crate::analysis::trend::Trend;
use crate::analysis::Peak;
use crate::index::Index;
use crate::open::Device;
use crate::trace::Trace;
use serde::Serialize;

/// One owner of memory live at the peak: the storages of one band, category, label, user
/// frame and innermost op, together.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LiveItem {
    /// All of its storages' bytes.
    pub bytes: u64,
    /// How many storages it holds.
    pub count: u64,
    /// The band's name (`activation`, `external`, …).
    pub band: &'static str,
    pub category: &'static str,
    /// Its name, module path or op; empty when the file says nothing.
    pub label: String,
    /// The top frame as the file gives it (of its biggest storage), or empty.
    pub frame: String,
    /// The user frame (`model.py:71 attention`), or empty.
    pub user_frame: String,
    /// The innermost function or op, or empty.
    pub innermost: String,
}

/// The `n` biggest owners of the memory live at `peak` ([`LiveItem`]), biggest first (ties
/// by label and frame); None when the file records no addresses (the live set is then
/// unknown). Listing storages one by one named one line three times where it held them all.
pub fn biggest_live(
    trace: &Trace,
    index: &Index,
    peak: &Peak,
    n: usize,
    view: &FrameView,
) -> Option<Vec<LiveItem>> {
    if !trace.identities_known() {
        return None;
    }
    let owners = crate::analysis::live::owners(trace, peak.live(trace, index), peak.at, view);
    Some(
        owners
            .into_iter()
            .take(n)
            .map(|o| LiveItem {
                bytes: o.bytes,
                count: o.count,
                band: o.entry.band.name(),
                category: o.entry.category,
                label: o.entry.label,
                frame: o.entry.frame,
                user_frame: o.entry.user_frame,
                innermost: o.entry.innermost,
            })
            .collect(),
    )
}

/// A window the peak was measured in.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WindowEvidence {
    /// As asked (`steady`, `step:1`).
    pub spec: String,
    /// What it resolved to (`step 2`).
    pub label: String,
}

/// Where a peak holds.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PeakEvidence {
    pub bytes: u64,
    /// The peak is the initial state, before the first event.
    pub at_start: bool,
    /// The event after which it holds (as memtide numbers events); None at start.
    pub event: Option<u64>,
    /// The same event's number in the file, when the two numberings differ.
    pub file_event: Option<u64>,
    /// The mark (step, phase) around it, or None.
    pub mark: Option<String>,
}

/// The evidence of `peak`.
pub fn peak_evidence(trace: &Trace, peak: &Peak) -> PeakEvidence {
    let event = (!peak.at_start).then(|| trace.event_number(peak.at));
    PeakEvidence {
        bytes: peak.bytes.0,
        at_start: peak.at_start,
        event,
        file_event: event
            .filter(|_| trace.numbers_differ_from_source())
            .map(|_| trace.src_index(peak.at)),
        mark: trace
            .enclosing_mark(peak.at)
            .filter(|_| !peak.at_start)
            .map(|m| trace.mark_label(m).into_owned()),
    }
}

/// The first OOM of a trace, as the gate reports it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OomEvidence {
    /// Its event number.
    pub event: u64,
    pub device: String,
    /// The verdict's name (`live_tensors`, `fragmentation`, …).
    pub verdict: &'static str,
    pub reasoning: String,
    /// The request as the allocator rounded it; None when unknown.
    pub requested: Option<u64>,
    pub allocated: Option<u64>,
    pub reserved: Option<u64>,
    pub device_free: Option<u64>,
    pub advice: String,
    /// OOMs after this one.
    pub more: usize,
    /// Allocator settings the replay proves would have served it (`fits`).
    pub fixes_that_fit: Vec<String>,
    /// Allocator settings that fit only if memory outside the allocator stayed under a bound
    /// the file does not record (`depends`).
    pub fixes_that_depend: Vec<String>,
    /// The replay judged settings and each runs out even under the most the run could have
    /// had (`does not fit`).
    pub no_setting_fits: bool,
    /// Where the failed request was made: its user frame (empty: unknown).
    pub user_frame: String,
    /// Its stack, innermost first (empty: the source records none).
    pub stack: Vec<String>,
    /// The bytes the request lacked under the file's own settings (null: unknowable).
    pub shortfall: Option<u64>,
}

/// The device's first OOM explained (the device's own explanations, under its frame rules),
/// with how many follow; None without an OOM.
pub fn oom_evidence(device: &Device) -> Option<OomEvidence> {
    let ooms = device.ooms();
    let x = ooms.first()?;
    let judged_as = |r: FixResult| -> Vec<String> {
        x.fixes
            .iter()
            .filter(|f| f.result == Some(r))
            .map(|f| f.setting.clone())
            .collect()
    };
    let judged: Vec<_> = x.fixes.iter().filter_map(|f| f.result).collect();
    Some(OomEvidence {
        event: x.index,
        device: x.device.clone(),
        verdict: x.verdict.name(),
        reasoning: x.reasoning.clone(),
        requested: x.rounded_bytes,
        allocated: x.allocated,
        reserved: x.reserved,
        device_free: x.device_free,
        advice: x.advice.clone(),
        more: ooms.len() - 1,
        no_setting_fits: !judged.is_empty() && judged.iter().all(|&r| r == FixResult::DoesNotFit),
        fixes_that_fit: judged_as(FixResult::Fits),
        fixes_that_depend: judged_as(FixResult::Depends),
        user_frame: x.user_frame.clone(),
        stack: x.stack.clone(),
        shortfall: x.shortfall,
    })
}

/// A group of allocations that survive every step.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SurvivorItem {
    pub count: usize,
    pub name: String,
    pub bytes: u64,
    /// The user frame of its first allocation, or empty.
    pub user_frame: String,
}

/// The `n` biggest survivor groups of `trend`.
pub(crate) fn survivors(
    trace: &Trace,
    trend: &Trend,
    n: usize,
    view: &FrameView,
) -> Vec<SurvivorItem> {
    trend
        .survivors
        .iter()
        .take(n)
        .map(|s| SurvivorItem {
            count: s.count,
            name: s.name.clone(),
            bytes: s.bytes.0,
            user_frame: s
                .ids
                .first()
                .map(|&id| view.of_stack(trace, trace.stack_id(id)).user)
                .unwrap_or_default(),
        })
        .collect()
}
