//! Bounds on a history that does not reach back to the start (the ring buffer of
//! `_record_memory_history` filled, or recording began late): the peak the recording shows
//! is a floor, the reserve at its start a ceiling (PyTorch's reserve only shrinks on
//! `empty_cache()` or a failed `cudaMalloc`), never one figure presented as exact; and the
//! `max_entries` that would have kept a whole step.

use crate::allocator::History;
use crate::index::Index;
use crate::trace::{human_bytes, AllocId, MarkKind, Seq, StorageKind, Trace, FLAG_FROM_START};
use serde::Serialize;

/// What a truncated history bounds (`history_bounds` in `summary --json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HistoryBounds {
    /// Blocks live before the first recorded event (their allocs were not recorded).
    pub predating_blocks: u64,
    pub predating_bytes: u64,
    /// The recorded peak: the whole run's peak was at least this.
    pub peak_at_least: u64,
    /// The most the run can have had live at any instant, if no segment was released before
    /// the recording began: the larger of the recorded peak and the reserve at its start.
    pub peak_at_most: u64,
    pub reserved_at_start: u64,
    /// Events in the largest recorded step (null without step marks).
    pub events_per_step: Option<u64>,
    /// `max_entries` that keeps at least one whole step wherever the dump falls (twice the
    /// largest step: a partial step plus a whole one).
    pub max_entries_for_a_step: Option<u64>,
    /// One line in words.
    pub text: String,
}

/// The bounds of `trace` when its allocator history starts after blocks were already live;
/// None for a history that reaches back to the start, or a source without one.
pub(crate) fn bounds(
    trace: &Trace,
    index: &Index,
    history: Option<&History>,
) -> Option<HistoryBounds> {
    history?;
    let predating: Vec<AllocId> = (0..trace.storage_count() as u32)
        .map(AllocId)
        .filter(|&id| {
            trace.flags(id) & FLAG_FROM_START != 0 && trace.storage_kind(id) == StorageKind::Block
        })
        .collect();
    if predating.is_empty() || trace.is_empty() {
        return None;
    }
    let predating_bytes = predating
        .iter()
        .fold(0u64, |s, &id| s.saturating_add(trace.size(id).0));
    let recorded = index.totals().max().unwrap_or(0);
    let reserved_at_start = if trace.has_reserved {
        index.reserved_at(trace, Seq(0)).0
    } else {
        0
    };
    let at_most = recorded.max(reserved_at_start);
    let step = largest_step(trace);
    let mut text = format!(
        "the history starts after {} block{} ({}) {} allocated: the run's peak was at least {} (recorded) and at most {} (the reserve at the first recorded event {}, if no segment was released before it)",
        predating.len(),
        if predating.len() == 1 { "" } else { "s" },
        human_bytes(predating_bytes),
        if predating.len() == 1 { "was" } else { "were" },
        human_bytes(recorded),
        human_bytes(at_most),
        human_bytes(reserved_at_start)
    );
    match step {
        Some(n) => text.push_str(&format!(
            "; the largest recorded step has {n} events: max_entries={} keeps a whole step wherever the snapshot is taken",
            n.saturating_mul(2)
        )),
        None => text.push_str("; no step marks: events per step unknown"),
    }
    Some(HistoryBounds {
        predating_blocks: predating.len() as u64,
        predating_bytes,
        peak_at_least: recorded,
        peak_at_most: at_most,
        reserved_at_start,
        events_per_step: step,
        max_entries_for_a_step: step.map(|n| n.saturating_mul(2)),
        text,
    })
}

/// Events in the largest recorded step: a step span's events (its first to its last), else
/// the distance between consecutive step marks.
fn largest_step(trace: &Trace) -> Option<u64> {
    let steps: Vec<_> = trace
        .marks
        .iter()
        .filter(|m| m.kind == MarkKind::Step)
        .collect();
    let spans = steps
        .iter()
        .filter_map(|m| m.end.map(|e| e.0.saturating_sub(m.at.0).saturating_add(1)))
        .filter(|&n| n > 0)
        .max();
    spans.or_else(|| {
        steps
            .windows(2)
            .map(|w| w[1].at.0.saturating_sub(w[0].at.0))
            .filter(|&n| n > 0)
            .max()
    })
}
