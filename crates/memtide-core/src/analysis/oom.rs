//! Every OOM of a trace explained ([`crate::allocator::explain`]): the figures at the event
//! from the timeline (allocated, reserved, the driver's free bytes, capacity) and, for
//! snapshots, from the allocator state replayed to that event (the free blocks of the pool
//! the request needed).

use super::frames::{parse_frame, FrameView};
use super::live::entry_in;
use super::summary::external_by_source;
use super::trend::Trend;
use crate::allocator::rounding::block_extent;
use crate::allocator::{explain, History, OomExplanation, OomFacts, Op, PoolFacts};
use crate::index::Index;
use crate::trace::{human_bytes, Band, MarkKind, Seq, Trace};

/// How many live allocations the advice names.
const ADVICE_LIVE: usize = 3;

/// The explanation of each OOM of `trace`, in event order. `history` is the device's
/// allocator history (snapshots), None for sources without segments and blocks.
pub fn explain_ooms(
    trace: &Trace,
    index: &Index,
    history: Option<&History>,
    trend: &Trend,
) -> Vec<OomExplanation> {
    let marks: Vec<_> = trace
        .marks
        .iter()
        .filter(|m| m.kind == MarkKind::Oom)
        .collect();
    if marks.is_empty() {
        return Vec::new();
    }
    // One replay for all OOMs: the state before each OOM entry.
    let states = history.map(|h| {
        let at: Vec<usize> = marks.iter().map(|m| m.at.idx()).collect();
        h.states_before(&at)
    });
    let rising = trend.rising.then(|| match trend.growth_bytes {
        Some(g) => format!(
            "{}{} after warm-up",
            if g >= 0 { "+" } else { "-" },
            human_bytes(g.unsigned_abs().min(u64::MAX as u128) as u64)
        ),
        None => "at every step".to_string(),
    });
    marks
        .iter()
        .enumerate()
        .map(|(k, m)| {
            let at = m.at;
            let requested = m.size.map(|b| b.0);
            let pool = match (history, &states) {
                (Some(h), Some(st)) => {
                    let e = h.entries.get(at.idx()).filter(|e| e.op == Op::Oom);
                    match (e, st.get(k), requested) {
                        (Some(e), Some(s), Some(r)) => Some(PoolFacts::from_state(
                            s,
                            block_extent(r),
                            h.stream_of(&e),
                            h.pool_of(&e),
                        )),
                        _ => None,
                    }
                }
                _ => None,
            };
            let facts = OomFacts {
                index: trace.event_number(at),
                time_us: trace.time_us(at),
                device: trace.device.clone(),
                requested,
                device_free: m.free.map(|b| b.0),
                // The allocator's bytes: the total less memory outside it (external).
                allocated: (!index.is_empty()).then(|| {
                    let external = index.bands_at(trace, at).get(Band::External);
                    index.total(at).0.saturating_sub(external)
                }),
                reserved: trace.has_reserved.then(|| index.reserved_at(trace, at).0),
                capacity: trace.capacity.map(|c| c.0),
                pool,
                biggest_live: biggest_live(trace, index, at),
                rising_baseline: rising.clone(),
            };
            let mut x = explain(&facts);
            x.outside_by_source = external_by_source(trace, &index.live_at_unsorted(trace, at));
            x
        })
        .collect()
}

fn biggest_live(trace: &Trace, index: &Index, at: Seq) -> Vec<String> {
    if !trace.identities_known() {
        return Vec::new();
    }
    let view = FrameView::new(trace, &Default::default());
    index
        .live_at(trace, at)
        .into_iter()
        .take(ADVICE_LIVE)
        .map(|id| {
            let e = entry_in(trace, id, at, &view);
            // The user's frame, else the innermost frame printed short.
            let frame = if e.user_frame.is_empty() && !e.frame.is_empty() {
                view.show(&parse_frame(&e.frame))
            } else {
                e.user_frame.clone()
            };
            let what = match (e.name.is_empty(), frame.is_empty()) {
                (false, false) => format!("{} at {frame}", e.name),
                (false, true) => e.name.clone(),
                (true, false) => frame,
                (true, true) => "unnamed".to_string(),
            };
            format!("{} {what}", human_bytes(e.bytes.0))
        })
        .collect()
}
