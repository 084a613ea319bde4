//! The allocator's state at one instant: segments (mapped address ranges, with pool, stream,
//! small/large and expandable) and the active blocks inside them (allocated, or freed but
//! pending on another stream). Free blocks are the gaps between active blocks inside a
//! segment — PyTorch merges adjacent inactive blocks, so each gap is one free block — and
//! every query (segment list, free blocks, totals per pool and stream) is derived from that.

use super::block_map::{BlockMap, Loc};
use super::rounding::{block_extent, PoolKind};
use serde::Serialize;
use std::collections::BTreeMap;

/// A memory pool's id: `(0, 0)` is the default pool, others are private pools (a CUDA graph
/// capture or a `MemPool`), as the file's `segment_pool_id` / `pool_id` tuple names them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct PoolId(pub i64, pub i64);

impl PoolId {
    pub fn is_default(self) -> bool {
        self == PoolId(0, 0)
    }
}

/// Where a block can be served from: the pool, its small or large set, and the stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct PoolKey {
    pub pool_id: PoolId,
    pub kind: PoolKind,
    pub stream: u64,
}

impl PoolKey {
    /// `large`, `small`, with ` private (a, b)` and ` stream N` when not the defaults.
    pub fn label(&self) -> String {
        let mut s = self.kind.name().to_string();
        if !self.pool_id.is_default() {
            s.push_str(&format!(
                " private ({}, {})",
                self.pool_id.0, self.pool_id.1
            ));
        }
        if self.stream != 0 {
            s.push_str(&format!(" stream {}", self.stream));
        }
        s
    }
}

/// What a segment is, besides its range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegMeta {
    pub stream: u64,
    pub pool_id: PoolId,
    pub kind: PoolKind,
    /// Mapped by `segment_map` (expandable segments), else made by `cudaMalloc`.
    pub expandable: bool,
}

impl SegMeta {
    pub fn key(&self) -> PoolKey {
        PoolKey {
            pool_id: self.pool_id,
            kind: self.kind,
            stream: self.stream,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Seg {
    pub end: u64,
    pub meta: SegMeta,
}

/// An active block: allocated, or freed and waiting for another stream's work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Active {
    /// Rounded size: the block's extent.
    pub size: u64,
    /// What the caller asked for.
    pub requested: u64,
    pub pending: bool,
}

/// A block's state, as the snapshot's `segments` name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockState {
    /// `active_allocated`: a live tensor's memory.
    Allocated,
    /// `active_pending_free`: freed, waiting for work on another stream (`record_stream`).
    PendingFree,
    /// `inactive`: free, cached in the reserve.
    Free,
}

/// One block of a segment, by address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct BlockView {
    pub address: u64,
    pub size: u64,
    /// Bytes asked for (equal to `size` for free blocks).
    pub requested: u64,
    pub state: BlockState,
}

/// One segment with its blocks tiling it in address order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SegmentView {
    pub address: u64,
    pub size: u64,
    #[serde(flatten)]
    pub key: PoolKey,
    pub expandable: bool,
    pub blocks: Vec<BlockView>,
    pub allocated: u64,
    pub pending_free: u64,
    pub free: u64,
    pub largest_free_block: u64,
}

/// Totals of one pool (pool id, small/large, stream).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PoolTotals {
    #[serde(flatten)]
    pub key: PoolKey,
    pub segments: u64,
    pub reserved: u64,
    pub allocated: u64,
    pub pending_free: u64,
    pub free_in_reserve: u64,
    pub largest_free_block: u64,
    /// 1 − largest free block / free in reserve; null when nothing is free.
    pub fragmentation: Option<f64>,
}

/// Totals of the whole device at one instant.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Totals {
    pub segments: u64,
    pub reserved: u64,
    /// Bytes of allocated blocks (rounded sizes, as `memory_allocated()` counts them).
    pub allocated: u64,
    /// What the allocated blocks' callers asked for.
    pub requested: u64,
    pub pending_free: u64,
    pub free_in_reserve: u64,
    pub largest_free_block: u64,
    pub pools: Vec<PoolTotals>,
}

impl PoolTotals {
    fn new(key: PoolKey) -> PoolTotals {
        PoolTotals {
            key,
            segments: 0,
            reserved: 0,
            allocated: 0,
            pending_free: 0,
            free_in_reserve: 0,
            largest_free_block: 0,
            fragmentation: None,
        }
    }
}

/// Fragmentation of a pool: 1 − largest free block / free bytes (None when nothing is free).
pub fn fragmentation(largest: u64, free: u64) -> Option<f64> {
    (free > 0).then(|| 1.0 - largest as f64 / free as f64)
}

/// A [`State`] kept for later (a model's checkpoint): its segments and blocks in sorted
/// vectors rather than trees, whose nodes' spare room and links cost about half as much
/// again; [`State::from_flat`] makes the state again.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FlatState {
    segs: Vec<(u64, Seg)>,
    blocks: Vec<(u64, Active)>,
    mapped: crate::trace::ranges::RangeSet,
}

impl FlatState {
    /// Segments and active blocks held.
    pub(crate) fn items(&self) -> usize {
        self.segs.len() + self.blocks.len()
    }
}

/// Segments and active blocks at one instant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct State {
    pub(crate) segs: BTreeMap<u64, Seg>,
    pub(crate) blocks: BlockMap,
    /// The segments' union, merged: where a new mapping's unmapped parts are found without
    /// walking every segment inside it (a file mapping ranges again and again, each shifted
    /// by a byte, made that quadratic).
    mapped: crate::trace::ranges::RangeSet,
}

impl State {
    pub fn new() -> State {
        State::default()
    }

    /// The state kept flat, for a checkpoint.
    pub(crate) fn flat(&self) -> FlatState {
        FlatState {
            segs: self.segs.iter().map(|(&a, &s)| (a, s)).collect(),
            blocks: self.blocks.iter().collect(),
            mapped: self.mapped.clone(),
        }
    }

    /// The state a checkpoint kept, its blocks in slots where `like`'s are (a state of the
    /// same history: a replay from it then costs what the history's first replay did).
    pub(crate) fn from_flat(f: &FlatState, like: &State) -> State {
        let mut blocks = like.blocks.empty_like();
        for &(addr, b) in &f.blocks {
            blocks.insert(addr, b);
        }
        State {
            segs: f.segs.iter().copied().collect(),
            blocks,
            mapped: f.mapped.clone(),
        }
    }

    /// An empty state whose blocks are kept in slots at the addresses a replay will place
    /// blocks at — a history's address table (`numbered`, each then located by its number)
    /// and `others` — so that the queries it makes on every entry are a few word operations
    /// (any other address still works, as in a tree).
    pub(crate) fn for_addresses(numbered: &[u64], others: Vec<u64>) -> State {
        State {
            blocks: BlockMap::over(numbered, others),
            ..State::default()
        }
    }

    /// Number of segments.
    pub fn segment_count(&self) -> usize {
        self.segs.len()
    }

    /// Number of active (allocated or pending) blocks.
    pub fn active_count(&self) -> usize {
        self.blocks.len()
    }

    /// An allocation of `requested` bytes at `addr` (its extent is the rounded size). Returns
    /// how many active blocks it overlapped (they are dropped: the file reused live memory).
    pub fn alloc(&mut self, addr: u64, requested: u64) -> u64 {
        self.alloc_sized(addr, requested, block_extent(requested))
    }

    /// An allocation whose extent is known to be `size` (a block PyTorch did not split: its
    /// remainder was too small, so the block is larger than the rounded request).
    pub fn alloc_sized(&mut self, addr: u64, requested: u64, size: u64) -> u64 {
        let at = self.blocks.locate(addr);
        self.alloc_sized_at(&at, requested, size)
    }

    /// [`State::alloc_sized`] at an address located among the blocks ([`State::locate`]).
    pub(crate) fn alloc_sized_at(&mut self, at: &Loc, requested: u64, size: u64) -> u64 {
        let size = size.max(block_extent(requested));
        let end = at.addr.saturating_add(size);
        let over = self.blocks_overlapping(at, end);
        for &a in &over {
            self.blocks.remove(a);
        }
        self.blocks.insert_at(
            at,
            Active {
                size,
                requested,
                pending: false,
            },
        );
        over.len() as u64
    }

    /// Inserts a block of a known extent (from the final `segments`).
    pub(crate) fn put_block(&mut self, addr: u64, b: Active) {
        self.blocks.insert(addr, b);
    }

    /// The free run that begins at `addr`: its length (up to the next active block or the end
    /// of the segment holding `addr`) and that segment's description. None when `addr` lies
    /// outside every segment, inside an active block, or after free bytes of the same run
    /// (PyTorch merges neighbouring free blocks and an allocation takes the front of one, so
    /// such an address means the replay and the file disagree).
    pub fn free_run_at(&self, addr: u64) -> Option<(u64, SegMeta)> {
        self.free_run_from(&self.blocks.locate(addr))
    }

    /// `addr` located among the blocks, for several questions about it.
    pub(crate) fn locate(&self, addr: u64) -> Loc {
        self.blocks.locate(addr)
    }

    /// `addr`, number `n` of the address table the state was made for, located.
    pub(crate) fn locate_number(&self, addr: u64, n: u32) -> Loc {
        self.blocks.locate_number(addr, n)
    }

    /// [`State::free_run_at`] a located address.
    pub(crate) fn free_run_from(&self, at: &Loc) -> Option<(u64, SegMeta)> {
        let addr = at.addr;
        let (&start, seg) = self.segs.range(..=addr).next_back()?;
        if seg.end <= addr {
            return None;
        }
        let before = self
            .blocks
            .last_at_or_below_at(at)
            .map(|(s, b)| s.saturating_add(b.size));
        if before.is_some_and(|end| end > addr) {
            return None;
        }
        if addr != start && before != Some(addr) {
            return None;
        }
        let next = self
            .blocks
            .first_in_at(at, seg.end)
            .map_or(seg.end, |(s, _)| s);
        Some((next - addr, seg.meta))
    }

    /// `free_requested`: the block stays active, pending. False when no block is there.
    pub fn free_requested(&mut self, addr: u64) -> bool {
        let at = self.blocks.locate(addr);
        self.free_requested_at(&at)
    }

    /// [`State::free_requested`] at a located address.
    pub(crate) fn free_requested_at(&mut self, at: &Loc) -> bool {
        match self.blocks.get_mut_at(at) {
            Some(b) => {
                b.pending = true;
                true
            }
            None => false,
        }
    }

    /// `free_completed`: the block becomes free. False when no block is there.
    pub fn free_completed(&mut self, addr: u64) -> bool {
        let at = self.blocks.locate(addr);
        self.free_completed_at(&at)
    }

    /// [`State::free_completed`] at a located address.
    pub(crate) fn free_completed_at(&mut self, at: &Loc) -> bool {
        self.blocks.remove_at(at).is_some()
    }

    /// The blocks that overlap `[a, b)` as a scan down from `b` finds them: from the block
    /// starting last below `b`, while each ends past `a`.
    fn blocks_overlapping(&self, at: &Loc, b: u64) -> Vec<u64> {
        // In slots, with no block starting in `[a, b)` the scan starts below `a` (located
        // already, where `b` would need a search: the usual case); in the tree, at `b` (one
        // search either way).
        let a = at.addr;
        let from = match self.blocks.has_slots() && self.blocks.first_in_at(at, b).is_none() {
            true => *at,
            false => self.blocks.locate(b),
        };
        let mut v: Vec<u64> = self
            .blocks
            .below_rev(from)
            .take_while(|&(s, x)| s.saturating_add(x.size) > a)
            .map(|(s, _)| s)
            .collect();
        v.reverse();
        v
    }

    fn segs_overlapping(&self, a: u64, b: u64) -> Vec<(u64, Seg)> {
        let mut v: Vec<(u64, Seg)> = self
            .segs
            .range(..b)
            .rev()
            .take_while(|&(_, s)| s.end > a)
            .map(|(&s, &x)| (s, x))
            .collect();
        v.reverse();
        v
    }

    /// Removes `[a, b)` from every segment it overlaps (the parts outside stay). Returns the
    /// bytes that were not mapped.
    pub fn unmap(&mut self, a: u64, b: u64) -> u64 {
        if a >= b {
            return 0;
        }
        let mut covered = 0u64;
        for (s, seg) in self.segs_overlapping(a, b) {
            self.segs.remove(&s);
            covered += seg.end.min(b) - s.max(a);
            if s < a {
                self.segs.insert(s, Seg { end: a, ..seg });
            }
            if seg.end > b {
                self.segs.insert(b, seg);
            }
        }
        self.mapped.remove(a, b);
        (b - a) - covered
    }

    /// `segment_free`: removes the segment(s) overlapping `[a, b)`, as `unmap`.
    pub fn segment_free(&mut self, a: u64, b: u64) -> u64 {
        self.unmap(a, b)
    }

    /// `segment_alloc` / `segment_map`: maps `[a, b)`. Parts already mapped are not mapped
    /// twice (their bytes are returned). An expandable range merges with the expandable
    /// segments it touches that share its pool and stream (one segment grows).
    pub fn map(&mut self, a: u64, b: u64, meta: SegMeta) -> u64 {
        if a >= b {
            return 0;
        }
        let pieces = self.mapped.gaps(a, b);
        let fresh: u64 = pieces.iter().map(|&(s, e)| e - s).sum();
        let double = (b - a) - fresh;
        self.mapped.add(a, b);
        // Expandable segments of one pool and stream grow in place: a range touching one
        // merges with it (PyTorch reserves each one's address space apart, so small and large
        // ones never touch; a pool set inferred from a size alone yields to a known large one).
        let joins =
            |m: &SegMeta| m.expandable && m.stream == meta.stream && m.pool_id == meta.pool_id;
        for (mut s, mut e) in pieces {
            let mut meta = meta;
            if meta.expandable {
                if let Some((&ps, &p)) = self.segs.range(..s).next_back() {
                    if p.end == s && joins(&p.meta) {
                        self.segs.remove(&ps);
                        s = ps;
                        meta.kind = meta.kind.max(p.meta.kind);
                    }
                }
                if let Some(&n) = self.segs.get(&e) {
                    if joins(&n.meta) {
                        self.segs.remove(&e);
                        e = n.end;
                        meta.kind = meta.kind.max(n.meta.kind);
                    }
                }
            }
            self.segs.insert(s, Seg { end: e, meta });
        }
        double
    }

    /// The pool set of an expandable segment of `stream` and `pool_id` that ends at `a` or
    /// starts at `b`.
    pub(crate) fn touching_expandable(
        &self,
        a: u64,
        b: u64,
        stream: u64,
        pool_id: PoolId,
    ) -> Option<PoolKind> {
        let fits =
            |s: &Seg| s.meta.expandable && s.meta.stream == stream && s.meta.pool_id == pool_id;
        let before = self
            .segs
            .range(..a)
            .next_back()
            .filter(|(_, s)| s.end == a && fits(s))
            .map(|(_, s)| s.meta.kind);
        before.or_else(|| self.segs.get(&b).filter(|s| fits(s)).map(|s| s.meta.kind))
    }

    /// Walks one segment's blocks in address order, free gaps included.
    fn walk(&self, start: u64, seg: &Seg, mut f: impl FnMut(BlockView)) {
        let mut cur = start;
        // A block that began before the segment (a file that unmapped part of it) is clipped.
        let first = self
            .blocks
            .last_below(start)
            .filter(|&(s, b)| s.saturating_add(b.size) > start)
            .map(|(s, &b)| (s, b));
        let inside = self.blocks.range(start, seg.end);
        for (s, b) in first.into_iter().chain(inside) {
            let bs = s.max(cur);
            let be = s.saturating_add(b.size).min(seg.end);
            if be <= bs {
                continue;
            }
            if bs > cur {
                f(BlockView {
                    address: cur,
                    size: bs - cur,
                    requested: bs - cur,
                    state: BlockState::Free,
                });
            }
            f(BlockView {
                address: bs,
                size: be - bs,
                requested: b.requested.min(be - bs),
                state: if b.pending {
                    BlockState::PendingFree
                } else {
                    BlockState::Allocated
                },
            });
            cur = be;
        }
        if cur < seg.end {
            f(BlockView {
                address: cur,
                size: seg.end - cur,
                requested: seg.end - cur,
                state: BlockState::Free,
            });
        }
    }

    /// Every segment with its blocks, by address.
    pub fn segments(&self) -> Vec<SegmentView> {
        self.segs
            .iter()
            .map(|(&start, seg)| {
                let mut v = SegmentView {
                    address: start,
                    size: seg.end - start,
                    key: seg.meta.key(),
                    expandable: seg.meta.expandable,
                    blocks: Vec::new(),
                    allocated: 0,
                    pending_free: 0,
                    free: 0,
                    largest_free_block: 0,
                };
                self.walk(start, seg, |b| {
                    match b.state {
                        BlockState::Allocated => v.allocated += b.size,
                        BlockState::PendingFree => v.pending_free += b.size,
                        BlockState::Free => {
                            v.free += b.size;
                            v.largest_free_block = v.largest_free_block.max(b.size);
                        }
                    }
                    v.blocks.push(b);
                });
                v
            })
            .collect()
    }

    /// Every free block with the pool it belongs to.
    pub fn free_blocks(&self) -> Vec<(PoolKey, BlockView)> {
        let mut out = Vec::new();
        for (&start, seg) in &self.segs {
            self.walk(start, seg, |b| {
                if b.state == BlockState::Free {
                    out.push((seg.meta.key(), b));
                }
            });
        }
        out
    }

    /// Totals of the device and of each pool (pool id, small/large, stream).
    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        let mut pools: BTreeMap<PoolKey, PoolTotals> = BTreeMap::new();
        for (&start, seg) in &self.segs {
            let p = pools
                .entry(seg.meta.key())
                .or_insert_with(|| PoolTotals::new(seg.meta.key()));
            p.segments += 1;
            p.reserved += seg.end - start;
            t.segments += 1;
            t.reserved += seg.end - start;
            self.walk(start, seg, |b| match b.state {
                BlockState::Allocated => {
                    p.allocated += b.size;
                    t.allocated += b.size;
                    t.requested += b.requested;
                }
                BlockState::PendingFree => {
                    p.pending_free += b.size;
                    t.pending_free += b.size;
                }
                BlockState::Free => {
                    p.free_in_reserve += b.size;
                    p.largest_free_block = p.largest_free_block.max(b.size);
                    t.free_in_reserve += b.size;
                    t.largest_free_block = t.largest_free_block.max(b.size);
                }
            });
        }
        t.pools = pools
            .into_values()
            .map(|mut p| {
                p.fragmentation = fragmentation(p.largest_free_block, p.free_in_reserve);
                p
            })
            .collect();
        t
    }

    /// The largest free block a request of pool `key` could be served from (0: none).
    pub fn largest_free(&self, key: &PoolKey) -> u64 {
        self.free_blocks()
            .into_iter()
            .filter(|(k, _)| k == key)
            .map(|(_, b)| b.size)
            .max()
            .unwrap_or(0)
    }

    /// Bytes of active blocks that lie outside every segment (a file whose segment events
    /// do not cover its allocations).
    pub fn bytes_outside_segments(&self) -> u64 {
        let inside: u64 = self
            .segments()
            .iter()
            .map(|s| s.allocated + s.pending_free)
            .sum();
        let all: u64 = self.blocks.iter().map(|(_, b)| b.size).sum();
        all.saturating_sub(inside)
    }
}
