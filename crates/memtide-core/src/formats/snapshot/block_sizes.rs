//! Each block's size as PyTorch's caching allocator counted it, set on a replayed CUDA
//! device trace: a snapshot's `alloc` entry records the bytes asked for (`orig_size`), but
//! `memory_allocated()` / `max_memory_allocated()` count the block the allocator holds — the
//! request rounded, or a whole free block `should_split` kept whole (see
//! [`crate::allocator::extent`] and [`crate::allocator::rounding`] for the PyTorch source).
//!
//! After the timeline is built (so that blocks live before the history — ghosts and frees
//! whose alloc the ring buffer dropped — are known), the device's segments and blocks are
//! replayed once more in an allocator [`State`]: the final segments with the trace's segment
//! events undone, the blocks live from the start, then each block change in order (of the
//! blocks, only the large pool's: only they can bound a large request's free run). A block
//! still allocated at the dump takes the size the final `segments` give it; any other takes
//! [`block_for`]'s. The caller's request stays in [`Trace::requested`] where it differs.

use super::raw::{Action, BlockState as RawState, Raw, Segment};
use super::to_allocator::{final_segment, settings};
use crate::allocator::extent::block_for;
use crate::allocator::rounding::{segment_kind, SMALL_SIZE};
use crate::allocator::sim::AllocConf;
use crate::allocator::state::{PoolId, SegMeta, State};
use crate::trace::{AllocId, Seq, StorageKind, Trace};
use rustc_hash::FxHashMap;

/// A segment entry of the trace, at its position on the event axis.
#[derive(Clone, Copy, Debug)]
pub struct SegEvent {
    pub at: Seq,
    pub action: Action,
    pub addr: u64,
    pub size: u64,
}

/// What the pass could not be sure of, for the trace's warnings.
#[derive(Debug, Default)]
struct Unsure {
    /// Large-pool allocations the replay could not place (rounded: a lower bound).
    unplaced: u64,
    /// Large-pool blocks live from the start with only their request known.
    from_start: u64,
}

/// Sets the size of every block storage of `t` (CUDA device `segs`, segment entries
/// `events` in order) to the block the allocator held for it.
pub(crate) fn apply(t: &mut Trace, raw: &Raw, segs: &[&Segment], events: &[SegEvent]) {
    let conf = settings(raw);
    let mut st = initial_segments(raw, segs, events);
    let finals = final_blocks(segs);
    let mut unsure = Unsure::default();
    seed_from_start(t, &conf, &mut st, &mut unsure);
    let mut next_event = 0usize;
    for k in 0..t.changes.len() {
        let c = t.changes[k];
        while let Some(e) = events.get(next_event).filter(|e| e.at <= c.at()) {
            segment_event(&mut st, e);
            next_event += 1;
        }
        if t.storage_kind(c.storage()) != StorageKind::Block {
            continue;
        }
        let addr = src_addr(t, c.storage());
        if !c.open() {
            if t.size(c.storage()).0 > SMALL_SIZE {
                st.free_completed(addr);
            }
            continue;
        }
        let requested = t.size(c.storage()).0;
        let at_dump = t.end(c.storage()).is_none();
        let size = match finals.get(&addr) {
            Some(&(req, size)) if at_dump && req == requested => size,
            _ => {
                let p = block_for(&st, &conf, addr, requested);
                if !p.sure && p.size > SMALL_SIZE {
                    unsure.unplaced += 1;
                }
                p.size
            }
        };
        set_size(t, c.storage(), requested, size);
        place(&mut st, addr, requested, size);
    }
    warn(t, &unsure);
}

/// Puts a block into the replayed state when it can bound a large-pool block's free run:
/// only large-pool blocks can. A small-pool block (1 MiB or less) lies in a small-pool
/// segment, which no large-pool allocation is cut from, and its own size needs no free run
/// ([`block_for`] rounds it), so the state leaves small blocks out (most of a training run's
/// allocations: the pass's time was their ordered-map inserts and removes).
fn place(st: &mut State, addr: u64, requested: u64, size: u64) {
    if size > SMALL_SIZE {
        st.alloc_sized(addr, requested, size);
    }
}

fn src_addr(t: &Trace, id: AllocId) -> u64 {
    t.src_id(id).unwrap_or(0)
}

fn set_size(t: &mut Trace, id: AllocId, requested: u64, size: u64) {
    t.storages.size.set(id.idx(), size);
    t.requested.set(id, requested, size);
}

/// The segments before the first entry: the final ones (boundaries kept: neighbouring
/// `cudaMalloc` segments are separate blocks' homes) with the trace's segment entries undone
/// newest first.
fn initial_segments(raw: &Raw, segs: &[&Segment], events: &[SegEvent]) -> State {
    let mut st = State::new();
    for s in segs {
        let f = final_segment(raw, s);
        st.map(f.address, f.address.saturating_add(f.total_size), f.meta());
    }
    for e in events.iter().rev() {
        let (a, b) = (e.addr, e.addr.saturating_add(e.size));
        match e.action {
            Action::SegmentAlloc | Action::SegmentMap => {
                st.unmap(a, b);
            }
            Action::SegmentFree | Action::SegmentUnmap => {
                st.map(a, b, meta_of(e));
            }
            _ => {}
        }
    }
    st
}

/// A segment the trace maps: `segment_map` / `segment_unmap` are expandable segments'.
fn meta_of(e: &SegEvent) -> SegMeta {
    SegMeta {
        stream: 0,
        pool_id: PoolId(0, 0),
        kind: segment_kind(e.size),
        expandable: matches!(e.action, Action::SegmentMap | Action::SegmentUnmap),
    }
}

fn segment_event(st: &mut State, e: &SegEvent) {
    let (a, b) = (e.addr, e.addr.saturating_add(e.size));
    match e.action {
        Action::SegmentAlloc | Action::SegmentMap => {
            st.map(a, b, meta_of(e));
        }
        Action::SegmentFree | Action::SegmentUnmap => {
            st.unmap(a, b);
        }
        _ => {}
    }
}

/// Active blocks of the final segments by address (running sums, as MemoryViz walks them):
/// (requested, size).
fn final_blocks(segs: &[&Segment]) -> FxHashMap<u64, (u64, u64)> {
    let mut out = FxHashMap::default();
    for s in segs {
        let mut addr = s.address;
        for b in &s.blocks {
            if matches!(b.state, RawState::Allocated | RawState::PendingFree) {
                out.insert(addr, (b.requested, b.size));
            }
            addr = addr.wrapping_add(b.size);
        }
    }
    out
}

/// Blocks live before the first entry. Ghosts (allocated at the dump, never allocated in the
/// trace) already carry the final segments' block size; a free whose alloc was dropped knows
/// only its request: rounded (its free run is unknown).
fn seed_from_start(t: &mut Trace, conf: &AllocConf, st: &mut State, unsure: &mut Unsure) {
    for i in 0..t.storages.len() {
        let id = AllocId(i as u32);
        if !t.is_from_start(id) || t.storage_kind(id) != StorageKind::Block {
            continue;
        }
        let addr = src_addr(t, id);
        let size = t.size(id).0;
        if t.end(id).is_none() {
            // A ghost: its size is the final block's already.
            place(st, addr, t.tensor_size(id).0, size);
            continue;
        }
        let rounded = conf.round_size(size).unwrap_or(size);
        if rounded > SMALL_SIZE && !conf.expandable_segments {
            unsure.from_start += 1;
        }
        set_size(t, id, size, rounded);
        place(st, addr, size, rounded);
    }
}

fn warn(t: &mut Trace, u: &Unsure) {
    if u.unplaced > 0 {
        t.warn(format!(
            "{} large-pool allocations do not start a free block of the replayed segments: counted at their rounded size, a lower bound (PyTorch hands out a whole block when 1 MiB or less would remain)",
            u.unplaced
        ));
    }
    if u.from_start > 0 {
        t.warn(format!(
            "{} large-pool blocks freed in the trace were allocated before it (the ring buffer dropped their alloc): counted at their rounded request, a lower bound on the block PyTorch held",
            u.from_start
        ));
    }
}
