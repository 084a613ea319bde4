//! Every OOM of a trace explained ([`crate::allocator::explain()`]): the figures at the event
//! from the timeline (allocated, reserved, the driver's free bytes, capacity) and, for
//! snapshots, from the allocator state replayed to that event (the free blocks of the pool
//! the request needed, and for fragmentation the live blocks that pin it); and the fix list,
//! each setting checked by replay under the ceiling the run had.

use super::frames::{parse_frame, FrameView};
use super::live::entry_in;
use super::summary::external_by_source;
use super::trend::Trend;
use crate::allocator::fixes::Saving;
use crate::allocator::pinners::{pinners, Pinner};
use crate::allocator::rounding::block_extent;
use crate::allocator::{explain, fixes, History, OomExplanation, OomFacts, Op, PoolFacts, Verdict};
use crate::index::Index;
use crate::trace::{human_bytes, AllocId, Band, MarkKind, Seq, Trace, FLAG_FROM_START};

/// How many live allocations the advice names.
const ADVICE_LIVE: usize = 3;

/// The explanation of each OOM of `trace`, in event order. `history` is the device's
/// allocator history (snapshots), None for sources without segments and blocks.
pub(crate) fn explain_ooms(
    trace: &Trace,
    index: &Index,
    history: Option<&History>,
    trend: &Trend,
    view: &FrameView,
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
    let (fixes, ceiling) = fixes::checked(trace, index, history);
    marks
        .iter()
        .enumerate()
        .map(|(k, m)| {
            let at = m.at;
            let requested = m.size.map(|b| b.0);
            let state = states.as_ref().and_then(|st| st.get(k));
            let pool = match (history, state) {
                (Some(h), Some(s)) => {
                    let e = h.entries.get(at.idx()).filter(|e| e.op == Op::Oom);
                    match (e, requested) {
                        (Some(e), Some(r)) => Some(PoolFacts::from_state(
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
                capacity_source: trace.capacity_source.clone(),
                pool,
                biggest_live: biggest_live(trace, index, at, view),
                rising_baseline: rising.clone(),
            };
            let mut x = explain(&facts);
            x.outside_by_source = external_by_source(trace, &index.live_at_unsorted(trace, at));
            if let (Verdict::Fragmentation, Some(s), Some(p)) = (x.verdict, state, &facts.pool) {
                x.pinners = named(trace, index, at, pinners(s, &p.key), view);
            }
            if x.verdict == Verdict::LiveTensors {
                x.savings = savings(trace, index, at, &x, view);
            }
            x.fixes = fixes.clone();
            x.fixes_ceiling = ceiling.clone();
            x
        })
        .collect()
}

/// How many owners the savings name.
const SAVINGS_OWNERS: usize = 3;

/// For live tensors: activation checkpointing of each of the largest activation owners at
/// the OOM (grouped by what they are, those allocated in a `forward`), and a microbatch halved (half the activations), each
/// against what the request lacked (request − free reserve − driver free). Estimates: the
/// program would change, so nothing is replayed.
fn savings(
    trace: &Trace,
    index: &Index,
    at: Seq,
    x: &OomExplanation,
    view: &FrameView,
) -> Vec<Saving> {
    if !trace.identities_known() {
        return Vec::new();
    }
    let lacked = match (x.rounded_bytes, x.free_in_reserve, x.device_free) {
        (Some(r), Some(f), Some(d)) => Some(r.saturating_sub(f.saturating_add(d))),
        _ => None,
    };
    let mut owners: Vec<(String, u64)> = Vec::new();
    let mut activations = 0u64;
    for id in index.live_at(trace, at) {
        if trace.band(id) != Band::Activation {
            continue;
        }
        let b = trace.size(id).0;
        activations = activations.saturating_add(b);
        let what = describe(trace, id, at, view);
        match owners.iter_mut().find(|(w, _)| *w == what) {
            Some((_, sum)) => *sum = sum.saturating_add(b),
            None => owners.push((what, b)),
        }
    }
    // A module's saved tensors: allocated in a forward; at least 1 MiB to be worth naming.
    owners.retain(|(what, b)| what.ends_with(" forward") && *b >= 1 << 20);
    owners.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let covers = |s: u64| lacked.map(|l| s >= l);
    let mut out: Vec<Saving> = owners
        .into_iter()
        .take(SAVINGS_OWNERS)
        .map(|(what, b)| Saving {
            change: format!("activation checkpointing of the tensors saved at {what}"),
            live_bytes: b,
            saving: b,
            shortfall: lacked,
            covers_shortfall: covers(b),
        })
        .collect();
    if activations > 0 {
        out.push(Saving {
            change: "a microbatch halved (activations scale with it)".into(),
            live_bytes: activations,
            saving: activations / 2,
            shortfall: lacked,
            covers_shortfall: covers(activations / 2),
        });
    }
    out
}

/// The pinners with what they are and when they were allocated: the live storage at the
/// block's address.
fn named(
    trace: &Trace,
    index: &Index,
    at: Seq,
    mut ps: Vec<Pinner>,
    view: &FrameView,
) -> Vec<Pinner> {
    let live = index.live_at(trace, at);
    for p in &mut ps {
        let src = |id: &AllocId| trace.storages.src_id.get(id.idx()).copied();
        let Some(&id) = live.iter().find(|id| src(id) == Some(p.address)) else {
            continue;
        };
        p.what = describe(trace, id, at, view);
        if trace.flags(id) & FLAG_FROM_START == 0 {
            let start = trace.start(id);
            p.allocated_at = Some(trace.event_number(start));
            p.allocated_time_us = trace.time_us(start);
        }
    }
    ps
}

fn biggest_live(trace: &Trace, index: &Index, at: Seq, view: &FrameView) -> Vec<String> {
    if !trace.identities_known() {
        return Vec::new();
    }
    index
        .live_at(trace, at)
        .into_iter()
        .take(ADVICE_LIVE)
        .map(|id| {
            format!(
                "{} {}",
                human_bytes(trace.size(id).0),
                describe(trace, id, at, view)
            )
        })
        .collect()
}

/// A live storage in words: its name at the user's frame (else the innermost frame).
fn describe(trace: &Trace, id: AllocId, at: Seq, view: &FrameView) -> String {
    let e = entry_in(trace, id, at, view);
    // The user's frame, else the innermost frame printed short.
    let frame = if e.user_frame.is_empty() && !e.frame.is_empty() {
        view.show(&parse_frame(&e.frame))
    } else {
        e.user_frame.clone()
    };
    match (e.name.is_empty(), frame.is_empty()) {
        (false, false) => format!("{} at {frame}", e.name),
        (false, true) => e.name.clone(),
        (true, false) => frame,
        (true, true) => "unnamed".to_string(),
    }
}
