//! A model of one device's `DeviceCachingAllocator` (pytorch/pytorch
//! `c10/cuda/CUDACachingAllocator.cpp`, read at commit 001074d2): blocks linked within their
//! segment, free blocks kept per pool in a set ordered by (stream, size, address) as
//! `BlockComparatorSize` orders them, unmapped ranges of expandable segments by (stream,
//! address) as `BlockComparatorAddress` does. Each method names the function it follows.
//!
//! Addresses are the model's own (segments are laid out one after another from a fixed
//! base): they order equal-sized free blocks as real addresses would only when `cudaMalloc`
//! hands out rising addresses.

use super::config::AllocConf;
use crate::allocator::rounding::{
    allocation_size, should_split, LARGE_BUFFER, SMALL_BUFFER, SMALL_SIZE,
};
use rustc_hash::FxHashMap;
use std::collections::{BTreeMap, BTreeSet};

mod seed;

/// No block.
pub(crate) const NIL: u32 = u32::MAX;
/// Where the model's address space starts (a typical CUDA device pointer).
const BASE: u64 = 0x7f00_0000_0000;
/// Address space of an expandable segment when the device's size is unknown (1 TiB).
const DEFAULT_VA: u64 = 1 << 40;

#[derive(Clone, Copy, Debug)]
struct Block {
    addr: u64,
    size: u64,
    prev: u32,
    next: u32,
    pool: u32,
    stream: u64,
    /// Index into `Engine::expandable` (NIL: a `cudaMalloc` segment).
    es: u32,
    allocated: bool,
    /// `free_requested` seen, `free_completed` not yet (the block stays allocated).
    pending: bool,
    mapped: bool,
    /// `gc_count_base`.
    gc_base: u64,
    /// The caller's tag of the allocation the block holds.
    tag: u32,
    requested: u64,
}

impl Block {
    fn is_split(&self) -> bool {
        self.prev != NIL || self.next != NIL
    }
}

/// Free mapped blocks ordered by (stream, size, address), as `BlockComparatorSize` orders
/// them: each key packs the stream's dense index (16 bits), the size (48 bits) and the
/// address (64 bits) into one `u128`, so a lookup compares one integer. The keys lie in
/// sorted runs of at most `2 * RUN` (a tree of two levels): a lookup is a binary search over
/// the runs' last keys, then one in the run; an insert or a remove moves at most a run.
#[derive(Debug, Default)]
struct FreeSet {
    runs: Vec<Vec<(u128, u32)>>,
    /// The last key of each run.
    lasts: Vec<u128>,
    len: usize,
}

const RUN: usize = 32;

/// Where `k` goes in a sorted run: the count of keys below it, by a scan (a run is short:
/// a scan that stops at the place beat a binary search of its mispredicted branches).
fn place_in(run: &[(u128, u32)], k: u128) -> usize {
    run.iter().take_while(|e| e.0 < k).count()
}

fn pack(stream: u64, size: u64, addr: u64) -> u128 {
    ((stream as u128) << 112) | ((size as u128) << 64) | addr as u128
}

fn unpack(k: u128, i: u32) -> (u64, u64, u64, u32) {
    (
        (k >> 112) as u64,
        ((k >> 64) as u64) & SIZE_MASK,
        k as u64,
        i,
    )
}

/// Sizes the packed key can hold (256 TiB); larger requests are refused outright.
const SIZE_MASK: u64 = (1 << 48) - 1;

impl FreeSet {
    /// The run that holds (or would hold) `k`, and `k`'s place in it: the first key at or
    /// above it. None past the last key.
    fn seek(&self, k: u128) -> Option<(usize, usize)> {
        let r = self.lasts.partition_point(|&l| l < k);
        let run = self.runs.get(r)?;
        Some((r, place_in(run, k)))
    }

    fn insert(&mut self, k: (u64, u64, u64, u32)) {
        let key = pack(k.0, k.1, k.2);
        if self.runs.is_empty() {
            self.runs.push(vec![(key, k.3)]);
            self.lasts.push(key);
            self.len = 1;
            return;
        }
        let r = self
            .lasts
            .partition_point(|&l| l < key)
            .min(self.runs.len() - 1);
        let run = &mut self.runs[r];
        let at = place_in(run, key);
        if run.get(at).is_some_and(|e| e.0 == key) {
            run[at].1 = k.3;
            return;
        }
        run.insert(at, (key, k.3));
        self.len += 1;
        if at + 1 == run.len() {
            self.lasts[r] = key;
        }
        if run.len() > 2 * RUN {
            let tail = run.split_off(RUN);
            self.lasts[r] = run[RUN - 1].0;
            let last = tail[tail.len() - 1].0;
            self.runs.insert(r + 1, tail);
            self.lasts.insert(r + 1, last);
        }
    }

    fn remove(&mut self, k: &(u64, u64, u64, u32)) -> bool {
        let key = pack(k.0, k.1, k.2);
        let Some((r, at)) = self.seek(key) else {
            return false;
        };
        let run = &mut self.runs[r];
        if run.get(at).is_none_or(|e| e.0 != key) {
            return false;
        }
        run.remove(at);
        self.len -= 1;
        match run.last() {
            None => {
                self.runs.remove(r);
                self.lasts.remove(r);
            }
            Some(&(l, _)) => self.lasts[r] = l,
        }
        true
    }

    /// Keys from `k` on, in order.
    fn at_or_above(&self, k: u128) -> impl Iterator<Item = (u128, u32)> + '_ {
        let (r, at) = self.seek(k).unwrap_or((self.runs.len(), 0));
        self.runs
            .get(r..)
            .unwrap_or_default()
            .iter()
            .enumerate()
            .flat_map(move |(j, run)| run.get(if j == 0 { at } else { 0 }..).unwrap_or_default())
            .copied()
    }

    /// Blocks at or above (stream, size), in order.
    fn from(&self, stream: u64, size: u64) -> impl Iterator<Item = (u64, u64, u64, u32)> + '_ {
        self.at_or_above(pack(stream, size, 0))
            .map(|(k, i)| unpack(k, i))
    }

    /// Blocks of `stream` with sizes in `[lo, hi)`, largest first.
    fn between_rev(
        &self,
        stream: u64,
        lo: u64,
        hi: u64,
    ) -> impl Iterator<Item = (u64, u64, u64, u32)> + '_ {
        let (lo, hi) = (pack(stream, lo, 0), pack(stream, hi, 0));
        let mut v: Vec<(u128, u32)> = self.at_or_above(lo).take_while(|e| e.0 < hi).collect();
        v.reverse();
        v.into_iter().map(|(k, i)| unpack(k, i))
    }

    /// The largest block of each stream.
    fn largest_per_stream(&self) -> Vec<u64> {
        let mut out: Vec<u64> = Vec::new();
        let mut last: Option<u128> = None;
        for (k, _) in self.runs.iter().flatten() {
            if let Some(l) = last.filter(|l| l >> 112 != k >> 112) {
                out.push(((l >> 64) as u64) & SIZE_MASK);
            }
            last = Some(*k);
        }
        if let Some(l) = last {
            out.push(((l >> 64) as u64) & SIZE_MASK);
        }
        out
    }

    fn iter(&self) -> impl Iterator<Item = (u64, u64, u64, u32)> + '_ {
        self.runs.iter().flatten().map(|&(k, i)| unpack(k, i))
    }

    fn len(&self) -> usize {
        self.len
    }
}

/// One `BlockPool`: the small or large set of the default pool or of a private pool.
#[derive(Debug, Default)]
struct Pool {
    small: bool,
    /// Free mapped blocks: (stream, size, addr, block).
    blocks: FreeSet,
    /// Unmapped ranges of expandable segments: (stream, addr, block).
    unmapped: BTreeSet<(u64, u64, u32)>,
    /// `get_free_blocks_call_count`.
    calls: u64,
}

#[derive(Clone, Copy, Debug)]
struct ExpSeg {
    base: u64,
    page: u64,
    live: bool,
}

/// A segment event the model made (as a snapshot's trace would record it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegEvent {
    pub kind: SegKind,
    pub addr: u64,
    pub size: u64,
    pub stream: u64,
}

/// What a [`SegEvent`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegKind {
    Alloc,
    Free,
    Map,
    Unmap,
}

impl SegKind {
    /// Whether the event adds reserved bytes.
    pub fn grows(self) -> bool {
        matches!(self, SegKind::Alloc | SegKind::Map)
    }
}

/// A request the model could not serve (`malloc`'s OOM path).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub requested: u64,
    /// The block size (None: the request cannot be rounded within 64 bits; it can never be
    /// served).
    pub rounded: Option<u64>,
    /// The segment (or mapping) it needed (None: beyond 64 bits).
    pub alloc_size: Option<u64>,
    pub small: bool,
    pub stream: u64,
    pub pool: u32,
}

/// The allocator model.
#[derive(Debug)]
pub struct Engine {
    conf: AllocConf,
    /// Bytes the device can hold (None: unlimited).
    capacity: Option<u64>,
    /// `set_fraction`: true when a capacity is given and garbage collection is configured
    /// (PyTorch collects only under `set_per_process_memory_fraction`; the model takes the
    /// capacity as the allowed maximum).
    set_fraction: bool,
    blocks: Vec<Block>,
    spare: Vec<u32>,
    pools: Vec<Pool>,
    pool_of: FxHashMap<(u32, bool), u32>,
    expandable: Vec<ExpSeg>,
    next_addr: u64,
    /// Address ranges the model holds (`cudaMalloc` segments, expandable address space):
    /// start → end. A recorded address is used only where it is free.
    spans: BTreeMap<u64, u64>,
    /// `total_allocated_memory` / reserved bytes.
    reserved: u64,
    /// `allocated_bytes` (block sizes of allocated, not free-requested blocks).
    allocated: u64,
    /// Live `cudaMalloc` segments.
    plain_segments: u64,
    /// Contiguous mapped ranges of expandable segments (a snapshot lists each as a segment).
    mapped_runs: u64,
    /// Segment events, when asked for.
    pub events: Option<Vec<SegEvent>>,
    /// Tags of allocations whose pending free `release_cached_blocks` completed early.
    pub completed_early: Vec<u32>,
    pending: Vec<u32>,
    /// Streams seen; blocks and keys carry the index (at most 65,535).
    streams: Vec<u64>,
    /// Bytes the last attempt to grow the reserve needed (a `cudaMalloc` segment, or the
    /// pages an expandable segment had to map): with the reserve at a refusal, what the
    /// request lacked under the capacity.
    pub last_need: u64,
}

/// `AllocParams`.
#[derive(Clone, Copy, Debug)]
struct Params {
    size: u64,
    stream: u64,
    pool: u32,
    alloc_size: u64,
    /// Where the recorded run's `cudaMalloc` put the segment this request made, if it made
    /// one (used when that range is free in the model).
    hint: Option<u64>,
}

impl Engine {
    pub fn new(conf: AllocConf, capacity: Option<u64>) -> Engine {
        let set_fraction = capacity.is_some() && conf.garbage_collection_threshold > 0.0;
        Engine {
            conf,
            capacity,
            set_fraction,
            blocks: Vec::new(),
            spare: Vec::new(),
            pools: Vec::new(),
            pool_of: FxHashMap::default(),
            expandable: Vec::new(),
            next_addr: BASE,
            spans: BTreeMap::new(),
            reserved: 0,
            allocated: 0,
            plain_segments: 0,
            mapped_runs: 0,
            events: None,
            completed_early: Vec::new(),
            pending: Vec::new(),
            streams: Vec::new(),
            last_need: 0,
        }
    }

    /// The dense index of `stream` (None when 65,535 streams are already known).
    fn stream_index(&mut self, stream: u64) -> Option<u64> {
        if let Some(i) = self.streams.iter().position(|&s| s == stream) {
            return Some(i as u64);
        }
        if self.streams.len() >= (1 << 16) - 1 {
            return None;
        }
        self.streams.push(stream);
        Some(self.streams.len() as u64 - 1)
    }

    pub fn conf(&self) -> &AllocConf {
        &self.conf
    }
    pub fn reserved(&self) -> u64 {
        self.reserved
    }
    pub fn allocated(&self) -> u64 {
        self.allocated
    }
    /// Segments as a snapshot would list them: `cudaMalloc` segments plus each contiguous
    /// mapped range of an expandable segment.
    pub fn segments(&self) -> u64 {
        self.plain_segments + self.mapped_runs
    }

    fn record(&mut self, kind: SegKind, addr: u64, size: u64, stream: u64) {
        let stream = self.streams.get(stream as usize).copied().unwrap_or(stream);
        if let Some(ev) = &mut self.events {
            ev.push(SegEvent {
                kind,
                addr,
                size,
                stream,
            });
        }
    }

    fn new_block(&mut self, b: Block) -> u32 {
        match self.spare.pop() {
            Some(i) => {
                self.blocks[i as usize] = b;
                i
            }
            None => {
                self.blocks.push(b);
                (self.blocks.len() - 1) as u32
            }
        }
    }

    fn drop_block(&mut self, i: u32) {
        self.blocks[i as usize].size = 0;
        self.spare.push(i);
    }

    fn b(&self, i: u32) -> &Block {
        &self.blocks[i as usize]
    }
    fn bm(&mut self, i: u32) -> &mut Block {
        &mut self.blocks[i as usize]
    }

    /// `get_pool`: the pool set of private pool `pool` (0: the default pool) for a rounded
    /// request (small ≤ 1 MiB).
    fn get_pool(&mut self, pool: u32, small: bool) -> u32 {
        let n = self.pools.len() as u32;
        let p = *self.pool_of.entry((pool, small)).or_insert(n);
        if p == n {
            self.pools.push(Pool {
                small,
                ..Pool::default()
            });
        }
        p
    }

    /// `BlockPool::insert_into_blocks`.
    fn insert_free(&mut self, i: u32) {
        let calls = self.pools[self.b(i).pool as usize].calls;
        let b = self.bm(i);
        b.gc_base = calls;
        let (pool, key) = (b.pool, (b.stream, b.size, b.addr, i));
        self.pools[pool as usize].blocks.insert(key);
    }

    fn remove_free(&mut self, i: u32) -> bool {
        let b = *self.b(i);
        self.pools[b.pool as usize]
            .blocks
            .remove(&(b.stream, b.size, b.addr, i))
    }

    fn insert_unmapped(&mut self, i: u32) {
        let b = *self.b(i);
        self.pools[b.pool as usize]
            .unmapped
            .insert((b.stream, b.addr, i));
    }

    fn remove_unmapped(&mut self, i: u32) -> bool {
        let b = *self.b(i);
        self.pools[b.pool as usize]
            .unmapped
            .remove(&(b.stream, b.addr, i))
    }

    /// `DeviceCachingAllocator::malloc`: round, pick the pool, reuse a cached block
    /// (`get_free_block`), else garbage-collect (`garbage_collect_cached_blocks`), ask the
    /// device (`alloc_block`), release oversize cached blocks and retry
    /// (`release_available_cached_blocks`), release every unsplit cached block and retry
    /// (`release_cached_blocks`); then split (`should_split`, `alloc_found_block`).
    /// Returns the block, or what was refused.
    pub fn malloc(
        &mut self,
        orig_size: u64,
        stream: u64,
        pool: u32,
        tag: u32,
    ) -> Result<u32, Refusal> {
        self.malloc_at(orig_size, stream, pool, tag, None)
    }

    /// [`Engine::malloc`] of a request for which the recorded run's `cudaMalloc` returned
    /// `hint` (a new segment there, when the model needs one of that size and the range is
    /// free in it).
    pub fn malloc_at(
        &mut self,
        orig_size: u64,
        stream: u64,
        pool: u32,
        tag: u32,
        hint: Option<u64>,
    ) -> Result<u32, Refusal> {
        let rounded = self.conf.round_size(orig_size);
        let small = rounded.is_some_and(|s| s <= SMALL_SIZE);
        let refusal = Refusal {
            requested: orig_size,
            rounded,
            alloc_size: rounded.and_then(allocation_size),
            small,
            stream,
            pool,
        };
        self.last_need = refusal.alloc_size.unwrap_or(u64::MAX);
        // No device holds 256 TiB (the packed keys' limit); a size beyond 64 bits fits none.
        let (Some(size), Some(alloc_size), Some(sidx)) = (
            rounded,
            refusal.alloc_size.filter(|&a| a <= SIZE_MASK),
            self.stream_index(stream),
        ) else {
            return Err(refusal);
        };
        let p = Params {
            size,
            stream: sidx,
            pool: self.get_pool(pool, small),
            alloc_size,
            hint,
        };
        let mut found = self.get_free_block(&p);
        if found.is_none() {
            if self.set_fraction {
                self.garbage_collect_cached_blocks();
            }
            found = self.alloc_block(&p);
            if found.is_none() && self.release_available_cached_blocks(&p) {
                found = self.alloc_block(&p);
            }
            if found.is_none() {
                self.release_cached_blocks();
                found = self.alloc_block(&p);
            }
        }
        let Some(block) = found else {
            return Err(refusal);
        };
        let split = self.should_split(block, size);
        Ok(self.alloc_found_block(block, &p, orig_size, split, tag))
    }

    /// `get_free_block`: the first free block of the pool at or above (stream, size), with
    /// the expandable-segment best-fit adjustment and the oversize rules (`max_split_size`,
    /// `max_non_split_rounding`).
    fn get_free_block(&mut self, p: &Params) -> Option<u32> {
        let gc = self.set_fraction;
        let pool = &mut self.pools[p.pool as usize];
        if gc {
            pool.calls += 1;
        }
        let cur = {
            let mut it = pool.blocks.from(p.stream, p.size);
            let mut cur = it.next()?;
            if cur.0 != p.stream {
                return None;
            }
            let blocks = &self.blocks;
            if blocks[cur.3 as usize].es != NIL {
                if self.conf.expandable_segments {
                    // "for the purposes of "best fit" we consider its size to be the size it can
                    // expand to".
                    let expandable_size = |i: u32| {
                        let b = &blocks[i as usize];
                        b.size
                            + if b.next != NIL && !blocks[b.next as usize].mapped {
                                blocks[b.next as usize].size
                            } else {
                                0
                            }
                    };
                    for n in it {
                        if blocks[cur.3 as usize].es == NIL
                            || n.0 != p.stream
                            || expandable_size(n.3) >= expandable_size(cur.3)
                        {
                            break;
                        }
                        cur = n;
                    }
                } else {
                    // Expandable segments turned off: only non-expandable blocks.
                    let mut next = None;
                    for n in it {
                        if n.0 != p.stream {
                            return None;
                        }
                        if blocks[n.3 as usize].es == NIL {
                            next = Some(n);
                            break;
                        }
                    }
                    cur = next?;
                }
            }
            cur
        };
        let (bsize, max_split) = (cur.1, self.conf.max_split_size);
        // "Do not return an oversized block for a large request".
        if p.size < max_split && bsize >= max_split {
            return None;
        }
        // "Allow oversized block size to be rounded up but within a limit".
        if p.size >= max_split && bsize >= p.size.saturating_add(self.conf.max_non_split_rounding) {
            return None;
        }
        pool.blocks.remove(&cur);
        Some(cur.3)
    }

    /// `should_split`: small pool or expandable segments → a remainder of at least 512 B;
    /// large pool → the request is below `max_split_size` and the remainder above 1 MiB.
    fn should_split(&self, i: u32, size: u64) -> bool {
        let b = self.b(i);
        should_split(
            self.pools[b.pool as usize].small,
            self.conf.expandable_segments,
            self.conf.max_split_size,
            size,
            b.size - size,
        )
    }

    /// `alloc_found_block`: splits the front `size` bytes off the found block when asked (the
    /// remainder goes back to the pool) and marks the block allocated.
    fn alloc_found_block(&mut self, i: u32, p: &Params, orig: u64, split: bool, tag: u32) -> u32 {
        let mut block = i;
        if split {
            let rem = *self.b(i);
            block = self.new_block(Block {
                addr: rem.addr,
                size: p.size,
                prev: rem.prev,
                next: i,
                pool: rem.pool,
                stream: rem.stream,
                es: rem.es,
                allocated: false,
                pending: false,
                mapped: true,
                gc_base: 0,
                tag,
                requested: orig,
            });
            if rem.prev != NIL {
                self.bm(rem.prev).next = block;
            }
            let r = self.bm(i);
            r.prev = block;
            r.addr += p.size;
            r.size -= p.size;
            self.insert_free(i);
        }
        let b = self.bm(block);
        b.allocated = true;
        b.pending = false;
        b.tag = tag;
        b.requested = orig;
        let size = b.size;
        self.allocated += size;
        block
    }

    /// `free` (`free_requested`): the block leaves the allocated bytes but stays unavailable
    /// until `free_completed` (another stream may still use it).
    pub fn free_requested(&mut self, i: u32) -> bool {
        let b = self.bm(i);
        if !b.allocated || b.pending {
            return false;
        }
        b.pending = true;
        let size = b.size;
        self.allocated -= size;
        self.pending.push(i);
        true
    }

    /// `free_completed`: the block returns to its pool (`free_block`). False when `i` is not
    /// an allocated block the model handed out.
    pub fn free(&mut self, i: u32) -> bool {
        if (i as usize) >= self.blocks.len() || !self.b(i).allocated || self.b(i).size == 0 {
            return false;
        }
        if self.b(i).pending {
            if let Some(k) = self.pending.iter().rposition(|&x| x == i) {
                self.pending.swap_remove(k);
            }
        } else {
            let size = self.b(i).size;
            self.allocated -= size;
        }
        self.free_block(i);
        true
    }

    /// `free_block`: merges with free neighbours (`try_merge_blocks`) and goes back into the
    /// pool's set.
    fn free_block(&mut self, i: u32) {
        let b = self.bm(i);
        b.allocated = false;
        b.pending = false;
        let (prev, next) = (b.prev, b.next);
        self.try_merge_blocks(i, prev);
        self.try_merge_blocks(i, next);
        self.insert_free(i);
    }

    /// `try_merge_blocks`: `dst` absorbs its neighbour `src` when `src` is free and mapped
    /// alike. `dst` is out of the sets. Returns the bytes absorbed.
    fn try_merge_blocks(&mut self, dst: u32, src: u32) -> u64 {
        if src == NIL {
            return 0;
        }
        let s = *self.b(src);
        if s.allocated || s.mapped != self.b(dst).mapped {
            return 0;
        }
        if s.mapped {
            self.remove_free(src);
        } else {
            self.remove_unmapped(src);
        }
        if self.b(dst).prev == src {
            let d = self.bm(dst);
            d.addr = s.addr;
            d.prev = s.prev;
            if s.prev != NIL {
                self.bm(s.prev).next = dst;
            }
        } else {
            self.bm(dst).next = s.next;
            if s.next != NIL {
                self.bm(s.next).prev = dst;
            }
        }
        self.bm(dst).size += s.size;
        self.drop_block(src);
        s.size
    }

    /// `alloc_block`: a new `cudaMalloc` segment of `alloc_size` bytes, or with expandable
    /// segments `try_allocate_expandable_block`. Fails when it would exceed the capacity
    /// (or, with `set_fraction`, the allowed maximum), and, without a capacity, when the
    /// reserved bytes or the model's addresses would pass 2^64 (no device holds that).
    fn alloc_block(&mut self, p: &Params) -> Option<u32> {
        let fits = |extra: u64, s: &Engine| {
            s.reserved
                .checked_add(extra)
                .is_some_and(|r| s.capacity.is_none_or(|c| r <= c))
        };
        self.last_need = p.alloc_size;
        if self.set_fraction && !fits(p.alloc_size, self) {
            return None;
        }
        if self.conf.expandable_segments {
            return self.try_allocate_expandable_block(p);
        }
        if !fits(p.alloc_size, self) {
            return None;
        }
        let addr = match p.hint.filter(|&a| self.span_free(a, p.alloc_size)) {
            Some(a) => a,
            None => {
                let addr = self.next_addr;
                self.next_addr = p
                    .alloc_size
                    .div_ceil(SMALL_BUFFER)
                    .checked_mul(SMALL_BUFFER)
                    .and_then(|span| addr.checked_add(span))?;
                addr
            }
        };
        self.spans.insert(addr, addr.saturating_add(p.alloc_size));
        let i = self.new_block(Block {
            addr,
            size: p.alloc_size,
            prev: NIL,
            next: NIL,
            pool: p.pool,
            stream: p.stream,
            es: NIL,
            allocated: false,
            pending: false,
            mapped: true,
            gc_base: 0,
            tag: 0,
            requested: 0,
        });
        self.reserved += p.alloc_size;
        self.plain_segments += 1;
        self.record(SegKind::Alloc, addr, p.alloc_size, p.stream);
        Some(i)
    }

    /// `find_expandable_block`: the lowest-addressed unmapped range of this stream (with the
    /// free block just before it) that has room for `size`, else a new expandable segment
    /// (pages of 2 MiB for the small pool, 20 MiB for the large; address space for 1⅛ of the
    /// device).
    fn find_expandable_block(&mut self, p: &Params) -> u32 {
        let blocks = &self.blocks;
        let allocatable = |i: u32| i != NIL && !blocks[i as usize].allocated;
        let has_room = |mut i: u32| {
            let mut bytes = 0u64;
            while bytes < p.size && allocatable(i) {
                bytes += blocks[i as usize].size;
                i = blocks[i as usize].next;
            }
            bytes >= p.size
        };
        let pool = &self.pools[p.pool as usize];
        for &(stream, _, i) in pool.unmapped.range((p.stream, 0, 0)..) {
            if stream != p.stream {
                break;
            }
            let mut c = i;
            let prev = blocks[i as usize].prev;
            if allocatable(prev) {
                c = prev;
            }
            if has_room(c) {
                return c;
            }
        }
        let page = if pool.small {
            SMALL_BUFFER
        } else {
            LARGE_BUFFER
        };
        let va = self
            .capacity
            .map_or(DEFAULT_VA, |c| c.saturating_add(c / 8))
            .min(1 << 47)
            .div_ceil(page)
            .max(1)
            * page;
        // Aligned to the page, apart from everything else.
        let base = self.next_addr.div_ceil(page) * page;
        self.next_addr = base + va;
        self.spans.insert(base, base + va);
        self.expandable.push(ExpSeg {
            base,
            page,
            live: true,
        });
        let es = (self.expandable.len() - 1) as u32;
        let i = self.new_block(Block {
            addr: base,
            size: va,
            prev: NIL,
            next: NIL,
            pool: p.pool,
            stream: p.stream,
            es,
            allocated: false,
            pending: false,
            mapped: false,
            gc_base: 0,
            tag: 0,
            requested: 0,
        });
        self.insert_unmapped(i);
        i
    }

    /// `map_block`: maps whole pages from the start of the unmapped block `i` to cover
    /// `size`; the rest stays unmapped; the mapped part merges with free neighbours.
    fn map_block(&mut self, i: u32, size: u64) -> bool {
        let b = *self.b(i);
        let es = self.expandable[b.es as usize];
        let begin = (b.addr - es.base) / es.page;
        let end = (b.addr + size - es.base).div_ceil(es.page);
        let mapped = ((end - begin) * es.page).min(b.size);
        if mapped == 0 {
            return false;
        }
        let Some(after) = self.reserved.checked_add(mapped) else {
            return false;
        };
        if self.capacity.is_some_and(|c| after > c) {
            return false;
        }
        self.remove_unmapped(i);
        let left = b.prev != NIL && self.b(b.prev).mapped;
        let mut right_block = b.next;
        if mapped < b.size {
            let r = self.new_block(Block {
                addr: b.addr + mapped,
                size: b.size - mapped,
                prev: i,
                next: b.next,
                mapped: false,
                allocated: false,
                pending: false,
                ..b
            });
            if b.next != NIL {
                self.bm(b.next).prev = r;
            }
            self.bm(i).next = r;
            self.insert_unmapped(r);
            right_block = r;
        }
        let right = right_block != NIL && self.b(right_block).mapped;
        self.mapped_runs = (self.mapped_runs + 1).saturating_sub(left as u64 + right as u64);
        let blk = self.bm(i);
        blk.mapped = true;
        blk.size = mapped;
        let (prev, next) = (blk.prev, blk.next);
        self.try_merge_blocks(i, prev);
        self.try_merge_blocks(i, next);
        self.insert_free(i);
        self.reserved += mapped;
        self.record(SegKind::Map, b.addr, mapped, b.stream);
        true
    }

    /// `try_allocate_expandable_block`: maps what the found range lacks, page by page range.
    fn try_allocate_expandable_block(&mut self, p: &Params) -> Option<u32> {
        let mut c = self.find_expandable_block(p);
        self.last_need = self.pages_to_map(c, p.size);
        if !self.b(c).mapped {
            let s = self.b(c).size.min(p.size);
            if !self.map_block(c, s) {
                return None;
            }
        }
        while self.b(c).size < p.size {
            let remaining = p.size - self.b(c).size;
            let n = self.b(c).next;
            if n == NIL || self.b(n).mapped {
                return None;
            }
            let s = remaining.min(self.b(n).size);
            if !self.map_block(n, s) {
                return None;
            }
            c = n;
        }
        self.remove_free(c);
        Some(c)
    }

    /// The bytes of whole pages `try_allocate_expandable_block` maps to cover `size` from block
    /// `c` (unmapped ranges start on a page boundary: mapping covers whole pages from there).
    fn pages_to_map(&self, c: u32, size: u64) -> u64 {
        let (mut covered, mut need, mut i) = (0u64, 0u64, c);
        while covered < size && i != NIL {
            let b = self.b(i);
            if b.mapped {
                covered += b.size;
            } else {
                let page = self.expandable.get(b.es as usize).map_or(1, |e| e.page);
                let m = (size - covered)
                    .div_ceil(page)
                    .saturating_mul(page)
                    .min(b.size);
                need += m;
                covered += m;
            }
            i = b.next;
        }
        // What the segment's address space cannot hold would have to be mapped too.
        need.saturating_add(size.saturating_sub(covered))
    }

    /// `release_available_cached_blocks` (only with `max_split_size` set): frees the smallest
    /// unsplit oversize cached block that covers the request, else the largest ones until
    /// enough is freed.
    fn release_available_cached_blocks(&mut self, p: &Params) -> bool {
        let max_split = self.conf.max_split_size;
        if max_split == u64::MAX {
            return false;
        }
        let want = p.size.max(max_split);
        let pool = &self.pools[p.pool as usize];
        let releasable = |k: &(u64, u64, u64, u32), s: &Engine| {
            let b = s.b(k.3);
            !b.is_split() && b.es == NIL
        };
        let first = pool
            .blocks
            .from(p.stream, want)
            .next()
            .filter(|k| k.0 == p.stream);
        if let Some(k) = first {
            if releasable(&k, self) {
                self.release_block(k.3);
                return true;
            }
            return false;
        }
        // "No single block is large enough; free multiple oversize blocks, starting with the
        // largest".
        let cands: Vec<(u64, u64, u64, u32)> = pool
            .blocks
            .between_rev(p.stream, 0, want.min(SIZE_MASK))
            .take_while(|k| k.1 >= max_split)
            .collect();
        let mut released = 0u64;
        for k in cands {
            if released >= want {
                break;
            }
            if releasable(&k, self) {
                released += k.1;
                self.release_block(k.3);
            }
        }
        released >= want
    }

    /// `release_cached_blocks` (also `emptyCache`): completes pending frees
    /// (`synchronize_and_free_events`), then `release_blocks` on every pool: unsplit
    /// `cudaMalloc` segments are freed, free pages of expandable segments unmapped
    /// (`unmap_block`), and an expandable segment left with nothing mapped is released.
    pub fn release_cached_blocks(&mut self) {
        for i in std::mem::take(&mut self.pending) {
            let tag = self.b(i).tag;
            self.completed_early.push(tag);
            self.free_block(i);
        }
        for p in 0..self.pools.len() {
            self.release_blocks(p);
        }
    }

    fn release_blocks(&mut self, p: usize) {
        let keys: Vec<(u64, u64, u64, u32)> = self.pools[p].blocks.iter().collect();
        let mut to_unmap = Vec::new();
        for k in keys {
            let b = *self.b(k.3);
            if b.es != NIL {
                to_unmap.push(k.3);
            } else if !b.is_split() {
                self.release_block(k.3);
            }
        }
        for i in to_unmap {
            self.unmap_block(i);
            let b = *self.b(i);
            if !b.mapped && !b.is_split() {
                // release_expandable_segment
                self.remove_unmapped(i);
                let es = &mut self.expandable[b.es as usize];
                es.live = false;
                let base = es.base;
                self.spans.remove(&base);
                self.drop_block(i);
            }
        }
    }

    /// Whether `[addr, addr + size)` overlaps nothing the model holds.
    fn span_free(&self, addr: u64, size: u64) -> bool {
        let Some(end) = addr.checked_add(size) else {
            return false;
        };
        self.spans
            .range(..end)
            .next_back()
            .is_none_or(|(_, &e)| e <= addr)
    }

    /// `release_block`: `cudaFree` of an unsplit cached segment.
    fn release_block(&mut self, i: u32) {
        let b = *self.b(i);
        self.spans.remove(&b.addr);
        self.remove_free(i);
        self.reserved -= b.size;
        self.plain_segments -= 1;
        self.record(SegKind::Free, b.addr, b.size, b.stream);
        self.drop_block(i);
    }

    /// `unmap_block`: unmaps the whole pages inside the free block `i`; the partial pages at
    /// either end stay as free blocks.
    fn unmap_block(&mut self, i: u32) {
        let b = *self.b(i);
        let es = self.expandable[b.es as usize];
        let begin = (b.addr - es.base).div_ceil(es.page);
        let end = (b.addr + b.size - es.base) / es.page;
        if begin >= end {
            return;
        }
        let (ua, us) = (es.base + begin * es.page, (end - begin) * es.page);
        self.remove_free(i);
        let before = ua - b.addr;
        let after = b.size - before - us;
        let left = before > 0 || (b.prev != NIL && self.b(b.prev).mapped);
        let right = after > 0 || (b.next != NIL && self.b(b.next).mapped);
        if before > 0 {
            let f = self.new_block(Block {
                size: before,
                next: i,
                ..b
            });
            if b.prev != NIL {
                self.bm(b.prev).next = f;
            }
            self.bm(i).prev = f;
            self.insert_free(f);
        }
        if after > 0 {
            let nx = self.b(i).next;
            let f = self.new_block(Block {
                addr: ua + us,
                size: after,
                prev: i,
                next: nx,
                ..b
            });
            if nx != NIL {
                self.bm(nx).prev = f;
            }
            self.bm(i).next = f;
            self.insert_free(f);
        }
        let blk = self.bm(i);
        blk.addr = ua;
        blk.size = us;
        blk.mapped = false;
        let (prev, next) = (blk.prev, blk.next);
        self.try_merge_blocks(i, prev);
        self.try_merge_blocks(i, next);
        self.insert_unmapped(i);
        self.reserved -= us;
        self.mapped_runs = (self.mapped_runs + left as u64 + right as u64).saturating_sub(1);
        self.record(SegKind::Unmap, ua, us, b.stream);
    }

    /// `garbage_collect_cached_blocks`: above `threshold × allowed`, frees unsplit cached
    /// blocks of the default large pool whose age (`gc_count`) is at least the average, until
    /// the excess is reclaimed.
    fn garbage_collect_cached_blocks(&mut self) {
        let Some(cap) = self.capacity else { return };
        let threshold = (self.conf.garbage_collection_threshold * cap as f64) as u64;
        if self.reserved <= threshold {
            return;
        }
        let target = self.reserved - threshold;
        let Some(&p) = self.pool_of.get(&(0, false)) else {
            return;
        };
        let calls = self.pools[p as usize].calls;
        let freeable = |s: &Engine| -> Vec<(u64, u64, u64, u32)> {
            s.pools[p as usize]
                .blocks
                .iter()
                .filter(|k| {
                    let b = s.b(k.3);
                    !b.is_split() && b.es == NIL
                })
                .collect()
        };
        let mut cands = freeable(self);
        let mut total_age: u64 = cands.iter().map(|k| calls - self.b(k.3).gc_base).sum();
        let mut count = cands.len() as u64;
        let mut reclaimed = 0u64;
        let mut freed = true;
        while reclaimed < target && freed && count > 0 {
            let threshold_age = total_age as f64 / count as f64;
            freed = false;
            for k in std::mem::take(&mut cands) {
                let age = calls - self.b(k.3).gc_base;
                if age as f64 >= threshold_age {
                    freed = true;
                    reclaimed += k.1;
                    total_age -= age;
                    count -= 1;
                    self.release_block(k.3);
                } else {
                    cands.push(k);
                }
            }
        }
    }

    /// The request's pool facts at a refusal: free bytes in the pool set (of its stream),
    /// its largest free block, and free bytes in the whole reserve.
    pub fn pool_facts(&self, r: &Refusal) -> (u64, u64, u64) {
        let (mut pool_free, mut largest, mut free) = (0u64, 0u64, 0u64);
        let want = self
            .streams
            .iter()
            .position(|&s| s == r.stream)
            .map(|i| i as u64);
        for (&(pool, small), &pi) in &self.pool_of {
            for (stream, size, _, _) in self.pools[pi as usize].blocks.iter() {
                free += size;
                if pool == r.pool && small == r.small && Some(stream) == want {
                    pool_free += size;
                    largest = largest.max(size);
                }
            }
        }
        (pool_free, largest, free)
    }

    /// The largest free block anywhere and the free bytes in the reserve.
    pub fn largest_free(&self) -> (u64, u64) {
        let mut largest = 0u64;
        for p in &self.pools {
            // Per stream, the set's last element of that stream is its largest block.
            for size in p.blocks.largest_per_stream() {
                largest = largest.max(size);
            }
        }
        let free = self.reserved - self.allocated - self.pending_bytes();
        (largest, free)
    }

    fn pending_bytes(&self) -> u64 {
        self.pending.iter().map(|&i| self.b(i).size).sum()
    }

    /// Every segment's blocks in address order, as (address, size, allocated, mapped): for
    /// checks and tests.
    pub fn layout(&self) -> Vec<Vec<(u64, u64, bool, bool)>> {
        let mut heads: Vec<u32> = (0..self.blocks.len() as u32)
            .filter(|&i| {
                let b = self.b(i);
                b.size > 0 && b.prev == NIL
            })
            .collect();
        heads.sort_by_key(|&i| self.b(i).addr);
        heads
            .into_iter()
            .map(|h| {
                let mut v = Vec::new();
                let mut i = h;
                while i != NIL {
                    let b = self.b(i);
                    v.push((b.addr, b.size, b.allocated, b.mapped));
                    i = b.next;
                }
                v
            })
            .collect()
    }

    /// Checks the model's invariants; the first broken one, if any. For tests (walks
    /// everything).
    pub fn check(&self) -> Result<(), String> {
        let mut reserved = 0u64;
        let mut allocated = 0u64;
        let mut free_in_sets = 0usize;
        let mut spans: Vec<(u64, u64)> = Vec::new();
        for seg in self.layout() {
            for w in seg.windows(2) {
                if w[0].0 + w[0].1 != w[1].0 {
                    return Err(format!(
                        "blocks at {:#x} and {:#x} do not tile",
                        w[0].0, w[1].0
                    ));
                }
                if !w[0].2 && !w[1].2 && w[0].3 == w[1].3 {
                    return Err(format!(
                        "adjacent free blocks at {:#x} and {:#x} were not merged",
                        w[0].0, w[1].0
                    ));
                }
            }
            for &(a, s, alloc, mapped) in &seg {
                spans.push((a, s));
                if mapped {
                    reserved += s;
                    if !alloc {
                        free_in_sets += 1;
                    }
                }
                if alloc {
                    allocated += s;
                }
            }
        }
        spans.sort_unstable();
        for w in spans.windows(2) {
            if w[0].0 + w[0].1 > w[1].0 {
                return Err(format!("blocks at {:#x} and {:#x} overlap", w[0].0, w[1].0));
            }
        }
        if reserved != self.reserved {
            return Err(format!(
                "reserved {} but segments hold {reserved}",
                self.reserved
            ));
        }
        let pending = self.pending_bytes();
        if allocated != self.allocated + pending {
            return Err(format!(
                "allocated {} (+{pending} pending) but blocks hold {allocated}",
                self.allocated
            ));
        }
        let in_sets: usize = self.pools.iter().map(|p| p.blocks.len()).sum();
        if in_sets != free_in_sets {
            return Err(format!(
                "{in_sets} blocks in the free sets, {free_in_sets} free mapped blocks"
            ));
        }
        if self.allocated > self.reserved {
            return Err("allocated exceeds reserved".into());
        }
        Ok(())
    }

    /// The address of block `i` (for tests).
    pub fn block_addr(&self, i: u32) -> u64 {
        self.b(i).addr
    }

    /// The size of block `i` (for tests).
    pub fn block_size(&self, i: u32) -> u64 {
        self.b(i).size
    }

    /// Whether any expandable segment is live.
    pub fn has_expandable(&self) -> bool {
        self.expandable.iter().any(|e| e.live)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// The free set answers as an ordered map of its packed keys: inserts (of keys new
        /// and present), removes (of keys present and absent), lookups from any (stream,
        /// size), ranges taken backwards, the largest block of each stream, everything in
        /// order. Enough keys for its runs to split and empty again.
        #[test]
        fn the_free_set_answers_as_an_ordered_map(
            steps in proptest::collection::vec(
                (any::<bool>(), 0u64..3, 0u64..40, 0u64..300, any::<u32>()),
                0..1500,
            ),
        ) {
            let mut f = FreeSet::default();
            let mut t: BTreeMap<u128, u32> = BTreeMap::new();
            for (k, &(add, stream, size, addr, v)) in steps.iter().enumerate() {
                let key = (stream, size << 9, addr << 9, v);
                if add {
                    f.insert(key);
                    t.insert(pack(key.0, key.1, key.2), v);
                } else {
                    prop_assert_eq!(f.remove(&key), t.remove(&pack(key.0, key.1, key.2)).is_some());
                }
                prop_assert_eq!(f.len(), t.len());
                if k % 50 == 0 {
                    let (s, lo) = (k as u64 % 3, (k as u64 % 37) << 9);
                    let want: Vec<_> = t.range(pack(s, lo, 0)..).take(5).map(|(&k, &i)| unpack(k, i)).collect();
                    prop_assert_eq!(f.from(s, lo).take(5).collect::<Vec<_>>(), want);
                    let hi = lo + (9 << 9);
                    let want: Vec<_> = t.range(pack(s, lo, 0)..pack(s, hi, 0)).rev().map(|(&k, &i)| unpack(k, i)).collect();
                    prop_assert_eq!(f.between_rev(s, lo, hi).collect::<Vec<_>>(), want);
                }
            }
            let all: Vec<_> = t.iter().map(|(&k, &i)| unpack(k, i)).collect();
            prop_assert_eq!(f.iter().collect::<Vec<_>>(), all.clone());
            let mut largest: Vec<u64> = Vec::new();
            for s in 0..3u128 {
                if let Some((&k, _)) = t.range(s << 112..(s + 1) << 112).next_back() {
                    largest.push(((k >> 64) as u64) & SIZE_MASK);
                }
            }
            prop_assert_eq!(f.largest_per_stream(), largest);
            // Emptied again, every run goes.
            for k in all.iter().skip(1).step_by(2).chain(all.iter().step_by(2)).rev() {
                f.remove(k);
            }
            prop_assert_eq!((f.len(), f.runs.len(), f.iter().count()), (0, 0, 0));
        }
    }
}
