//! The recorded run's allocator state before its history, at its real addresses, and the
//! addresses its `cudaMalloc` calls returned: what lets a replay under the recorded settings
//! make the choices the real allocator made. Free blocks of equal size are ordered by address
//! (`BlockComparatorSize` compares `(stream, size, ptr)`), `get_free_block` takes the first,
//! and `find_expandable_block` maps the lowest unmapped address of an expandable segment
//! (pytorch/pytorch `c10/cuda/CUDACachingAllocator.cpp`, commit 001074d2): with addresses of
//! its own the model breaks those ties differently from the run it replays.

use crate::allocator::replay::{Entry, History, Op};
use crate::allocator::rounding::{PoolKind, LARGE_BUFFER};
use crate::allocator::state::{PoolId, State};
use rustc_hash::FxHashMap;

/// A segment (a `cudaMalloc` segment, or one mapped range of an expandable segment) live
/// before the history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeedSegment {
    pub addr: u64,
    pub size: u64,
    pub stream: u64,
    /// Index into [`super::SimInput::pools`].
    pub pool: u32,
    pub small: bool,
    /// For a mapped range of an expandable segment: the lowest address the recorded run
    /// mapped in that segment (before or during the history), taken as its base.
    pub expandable_base: Option<u64>,
}

/// A block live before the history (allocated, or freed and pending), inside a seed segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeedBlock {
    pub addr: u64,
    pub size: u64,
    pub requested: u64,
}

/// The recorded run's state before its history.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    pub segments: Vec<SeedSegment>,
    /// In address order: the order of the prologue's allocations.
    pub blocks: Vec<SeedBlock>,
    /// Above every address the recorded run held: where the model's own segments go.
    pub above: u64,
}

/// The layout of `start` (the history's state before its first entry); `pool_of` gives the
/// index of each pool id, extended with any new one (`pools` in the same order).
pub(crate) fn layout_of(
    h: &History,
    start: &State,
    segment_entries: &[Entry],
    pool_of: &mut FxHashMap<PoolId, u32>,
    pools: &mut Vec<PoolId>,
) -> Layout {
    let bases = expandable_bases(h, start, segment_entries);
    let mut segments = Vec::with_capacity(start.segs.len());
    for (&addr, seg) in &start.segs {
        let m = seg.meta;
        let next = pool_of.len() as u32;
        let pool = *pool_of.entry(m.pool_id).or_insert(next);
        if pool == next {
            pools.push(m.pool_id);
        }
        segments.push(SeedSegment {
            addr,
            size: seg.end - addr,
            stream: m.stream,
            pool,
            small: m.kind == PoolKind::Small,
            expandable_base: m
                .expandable
                .then(|| bases.get(&(m.stream, m.pool_id, m.kind)).copied())
                .flatten()
                .map(|b| b.min(addr)),
        });
    }
    let blocks = start
        .blocks
        .iter()
        .map(|(addr, b)| SeedBlock {
            addr,
            size: b.size,
            requested: b.requested,
        })
        .collect();
    Layout {
        segments,
        blocks,
        above: highest_address(h, segment_entries),
    }
}

/// The lowest address each expandable segment (by stream, pool and pool set) had mapped,
/// before or during the history.
fn expandable_bases(
    h: &History,
    start: &State,
    segment_entries: &[Entry],
) -> FxHashMap<(u64, PoolId, PoolKind), u64> {
    let mut out: FxHashMap<(u64, PoolId, PoolKind), u64> = FxHashMap::default();
    let mut note = |key, addr: u64| {
        let b = out.entry(key).or_insert(addr);
        *b = (*b).min(addr);
    };
    for (&addr, seg) in &start.segs {
        if seg.meta.expandable {
            note((seg.meta.stream, seg.meta.pool_id, seg.meta.kind), addr);
        }
    }
    for e in segment_entries.iter().filter(|e| e.op == Op::SegmentMap) {
        let known = h
            .segments
            .iter()
            .find(|s| {
                s.address < e.addr.saturating_add(e.size) && e.addr < s.address + s.total_size
            })
            .map(|s| s.pool_kind());
        // Large-pool segments grow by 20 MiB pages, small ones by 2 MiB.
        let kind = known.unwrap_or(if e.size.is_multiple_of(LARGE_BUFFER) {
            PoolKind::Large
        } else {
            PoolKind::Small
        });
        note((h.stream_of(e), h.pool_of(e), kind), e.addr);
    }
    out
}

/// The end of the highest range the recorded run held (its final segments and every segment
/// entry of the history, `segment_entries`).
fn highest_address(h: &History, segment_entries: &[Entry]) -> u64 {
    let finals = h
        .segments
        .iter()
        .map(|s| s.address.saturating_add(s.total_size));
    let events = segment_entries
        .iter()
        .map(|e| e.addr.saturating_add(e.size));
    finals.chain(events).max().unwrap_or(0)
}
