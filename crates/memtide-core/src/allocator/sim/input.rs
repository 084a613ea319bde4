//! What a simulated run replays: the allocation and free sequence of a trace (sizes, order,
//! streams and private pools when the file has them), from a snapshot's allocator history or
//! from any [`Trace`] (JSONL, Kineto, memory timelines).

use super::layout::{layout_of, Layout};
use crate::allocator::by_address::ByAddress;
use crate::allocator::replay::{Entry, History, Op};
use crate::allocator::state::PoolId;
use crate::trace::{MarkKind, Seq, StorageKind, Trace};
use rustc_hash::FxHashMap;

/// One step of the replay. `alloc` numbers count [`SimOp::Alloc`] ops from 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimOp {
    /// A request of `size` bytes (what the caller asked for) on `stream`, from private pool
    /// `pool` (an index into [`SimInput::pools`]; 0 is the default pool).
    Alloc { size: u64, stream: u64, pool: u32 },
    /// `free_requested`: the block leaves the allocated bytes but is not reusable yet.
    FreeRequested { alloc: u32 },
    /// `free_completed` (or a plain free): the block returns to the cache.
    Free { alloc: u32 },
    /// The recorded run released cached segments here (`empty_cache`, or a retry after a
    /// failed `cudaMalloc`): the model calls `release_cached_blocks`.
    Release,
    /// The request the recorded run could not serve (a snapshot's `oom` entry: rounded
    /// size). The model tries it and frees it at once.
    RecordedOom { size: u64, stream: u64, pool: u32 },
}

/// A replayable sequence.
#[derive(Clone, Debug, Default)]
pub struct SimInput {
    pub ops: Vec<SimOp>,
    /// The source event of each op: the trace entry index for a snapshot (event `#i`), the
    /// position on the event axis otherwise. Prologue ops carry 0.
    pub at: Vec<u64>,
    /// Private pool ids (index 0: the default pool).
    pub pools: Vec<PoolId>,
    /// Leading ops that allocate the blocks live before the history began.
    pub prologue: usize,
    /// Whether the sequence comes from a snapshot's allocator history (streams, pools and
    /// the recorded settings known).
    pub from_snapshot: bool,
    /// Distinct streams seen.
    pub streams: usize,
    /// What the sequence lacks, in words.
    pub notes: Vec<String>,
    /// A snapshot's state before its history, at its recorded addresses (the prologue's
    /// blocks are `layout.blocks`, in the same order).
    pub layout: Option<Layout>,
    /// For allocations for which the recorded run made a segment: op index → the address its
    /// `cudaMalloc` returned.
    pub seg_hints: FxHashMap<usize, u64>,
}

impl SimInput {
    /// Number of allocations.
    pub fn allocs(&self) -> usize {
        self.ops
            .iter()
            .filter(|o| matches!(o, SimOp::Alloc { .. }))
            .count()
    }

    fn push(&mut self, op: SimOp, at: u64) {
        self.ops.push(op);
        self.at.push(at);
    }

    /// The sequence of a snapshot's history. Blocks live before the first entry (the ring
    /// buffer dropped their allocs, or they predate recording) are allocated first, in
    /// address order; frees whose alloc is unknown are dropped; runs of `segment_free` /
    /// `segment_unmap` become one [`SimOp::Release`]; `oom` entries become
    /// [`SimOp::RecordedOom`].
    pub fn from_history(h: &History) -> SimInput {
        let mut s = SimInput {
            pools: h.pools.clone(),
            from_snapshot: true,
            ..SimInput::default()
        };
        if s.pools.is_empty() {
            s.pools.push(PoolId::default());
        }
        let mut pool_index: FxHashMap<PoolId, u32> = s
            .pools
            .iter()
            .enumerate()
            .map(|(i, &p)| (p, i as u32))
            .collect();
        let mut streams: FxHashMap<u64, ()> = FxHashMap::default();
        // Each live allocation's number by its address, and the places allocated from.
        let mut live: ByAddress<u32> = ByAddress::new(&h.entries);
        let mut places_used = vec![false; h.places.len()];
        let mut n = 0u32;
        let (start, segment_entries) = h.initial_state_and_segment_entries();
        // (Every entry is at most one op, and the prologue at most two a block.)
        let most = h.entries.len() + 2 * start.active_count();
        s.ops.reserve(most);
        s.at.reserve(most);
        for (addr, b) in start.blocks.iter() {
            let (stream, pool_id) = start
                .segs
                .range(..=addr)
                .next_back()
                .filter(|(_, sg)| sg.end > addr)
                .map_or((0, PoolId::default()), |(_, sg)| {
                    (sg.meta.stream, sg.meta.pool_id)
                });
            let next = pool_index.len() as u32;
            let pool = *pool_index.entry(pool_id).or_insert(next);
            if pool == next {
                s.pools.push(pool_id);
            }
            streams.insert(stream, ());
            // The block's extent is known; its request is what rounds to it.
            s.push(
                SimOp::Alloc {
                    size: if b.requested > 0 { b.requested } else { b.size },
                    stream,
                    pool,
                },
                0,
            );
            live.insert(addr, None, n);
            if b.pending {
                s.push(SimOp::FreeRequested { alloc: n }, 0);
            }
            n += 1;
        }
        s.layout = Some(layout_of(
            h,
            &start,
            &segment_entries,
            &mut pool_index,
            &mut s.pools,
        ));
        s.prologue = s.ops.len();
        if s.prologue > 0 {
            s.notes.push(format!(
                "{} blocks were live before the history began: the model allocates them first, in address order",
                s.prologue
            ));
        }
        // Allocations with a free requested and not yet completed, by number.
        let mut pending: Vec<bool> = Vec::new();
        let mut in_release = false;
        let mut before: Option<Entry> = None;
        for (i, (e, number)) in h.entries.numbered(0..h.entries.len()).enumerate() {
            let i = i as u64;
            let releasing = matches!(e.op, Op::SegmentFree | Op::SegmentUnmap);
            match e.op {
                Op::Alloc => {
                    let place = h.place_of(&e);
                    match places_used.get_mut(e.place as usize) {
                        Some(u) => *u = true,
                        None => {
                            streams.insert(place.stream, ());
                        }
                    }
                    // The address the recorded run's `cudaMalloc` returned for it: the
                    // `segment_alloc` entry right before it on the same stream and pool
                    // (`alloc_block` records it just before `alloc_found_block` records the
                    // allocation).
                    if let Some(b) = before.filter(|b| {
                        b.op == Op::SegmentAlloc && b.addr == e.addr && h.place_of(b) == place
                    }) {
                        s.seg_hints.insert(s.ops.len(), b.addr);
                    }
                    s.push(
                        SimOp::Alloc {
                            size: e.size,
                            stream: place.stream,
                            pool: place.pool,
                        },
                        i,
                    );
                    live.insert(e.addr, number, n);
                    n += 1;
                }
                Op::FreeRequested => {
                    if let Some(a) = live.get(e.addr, number) {
                        if pending.len() <= a as usize {
                            pending.resize(n as usize, false);
                        }
                        if let Some(p) = pending.get_mut(a as usize).filter(|p| !**p) {
                            *p = true;
                            s.push(SimOp::FreeRequested { alloc: a }, i);
                        }
                    }
                }
                Op::FreeCompleted => {
                    if let Some(a) = live.remove(e.addr, number) {
                        if let Some(p) = pending.get_mut(a as usize) {
                            *p = false;
                        }
                        s.push(SimOp::Free { alloc: a }, i);
                    }
                }
                Op::SegmentFree | Op::SegmentUnmap if !in_release => {
                    s.push(SimOp::Release, i);
                }
                Op::Oom => s.push(
                    SimOp::RecordedOom {
                        size: e.size,
                        stream: h.stream_of(&e),
                        pool: h.place_of(&e).pool,
                    },
                    i,
                ),
                _ => {}
            }
            in_release = releasing;
            before = Some(e);
        }
        for (place, _) in h.places.iter().zip(&places_used).filter(|(_, &u)| u) {
            streams.insert(place.stream, ());
        }
        s.streams = streams.len().max(1);
        s
    }

    /// The sequence of any trace: each allocated storage's open and close, in event order,
    /// on one stream of the default pool (the source records no streams); each OOM mark with
    /// a requested size becomes a [`SimOp::RecordedOom`] at its place. A source that
    /// names no allocation (old Kineto `[memory]` events with only `Bytes`) is read from its
    /// byte changes: a rise is an allocation, a fall frees the latest live one of that size.
    pub fn from_trace(t: &Trace) -> SimInput {
        let mut ooms: Vec<(u64, u64)> = t
            .marks
            .iter()
            .filter(|m| m.kind == MarkKind::Oom)
            .filter_map(|m| Some((m.at.0, m.size?.0)))
            .collect();
        ooms.sort_unstable();
        let mut ooms = ooms.into_iter().peekable();
        // The OOM requests placed before event `before` (all of them: u64::MAX).
        let mut ooms_before = |s: &mut SimInput, before: u64| {
            while let Some(&(at, size)) = ooms.peek() {
                if at >= before {
                    break;
                }
                s.push(
                    SimOp::RecordedOom {
                        size,
                        stream: 0,
                        pool: 0,
                    },
                    at,
                );
                ooms.next();
            }
        };
        let mut s = SimInput {
            pools: vec![PoolId::default()],
            streams: 1,
            ..SimInput::default()
        };
        s.notes.push(format!(
            "the {} file records no allocator streams or pools: every allocation is on one stream of the default pool",
            t.format
        ));
        if !t.identities_known() {
            s.notes.push("this file names no allocation (only byte changes): a rise is an allocation, a fall frees the latest live allocation of that size".into());
            let mut by_size: FxHashMap<u64, Vec<u32>> = FxHashMap::default();
            let mut n = 0u32;
            for at in 0..t.len() as u64 {
                ooms_before(&mut s, at);
                let d = t.delta(Seq(at));
                if d > 0 {
                    s.push(
                        SimOp::Alloc {
                            size: d as u64,
                            stream: 0,
                            pool: 0,
                        },
                        at,
                    );
                    by_size.entry(d as u64).or_default().push(n);
                    n += 1;
                } else if d < 0 {
                    if let Some(a) = by_size.get_mut(&d.unsigned_abs()).and_then(Vec::pop) {
                        s.push(SimOp::Free { alloc: a }, at);
                    }
                }
            }
            ooms_before(&mut s, u64::MAX);
            return s;
        }
        let mut alloc_of: FxHashMap<u32, u32> = FxHashMap::default();
        let mut n = 0u32;
        for c in &t.changes {
            ooms_before(&mut s, c.at().0);
            let id = c.storage();
            if t.storage_kind(id) != StorageKind::Block {
                continue;
            }
            if c.open() {
                s.push(
                    SimOp::Alloc {
                        size: t.size(id).0,
                        stream: 0,
                        pool: 0,
                    },
                    c.at().0,
                );
                alloc_of.insert(id.0, n);
                n += 1;
            } else if let Some(a) = alloc_of.remove(&id.0) {
                s.push(SimOp::Free { alloc: a }, c.at().0);
            }
        }
        ooms_before(&mut s, u64::MAX);
        s
    }
}
