//! Starting the model from the recorded run's state before its history ([`Layout`]): its
//! segments and blocks at their real addresses, expandable segments with their mapped ranges
//! where the recorded run had them, so that ties between equal-sized free blocks and the
//! choice of the lowest unmapped range go as they went in the run.

use super::super::layout::{Layout, SeedBlock, SeedSegment};
use super::{Block, Engine, ExpSeg, DEFAULT_VA, NIL};
use crate::allocator::rounding::{LARGE_BUFFER, SMALL_BUFFER};

impl Engine {
    /// Places `layout` in an empty model. Returns the handle of each of `layout.blocks` (in
    /// order; block `k` gets tag `k`), or None — the model left as it was — when the layout
    /// is not one it can hold: segments or blocks that overlap, a block outside every
    /// segment, an expandable range off its pages, more streams than the model tracks.
    pub fn seed(&mut self, layout: &Layout) -> Option<Vec<u32>> {
        if !self.blocks.is_empty() || !fits(layout) {
            return None;
        }
        let mut streams = Vec::new();
        for s in &layout.segments {
            if !streams.contains(&s.stream) {
                streams.push(s.stream);
            }
        }
        if self.streams.len() + streams.len() >= (1 << 16) - 1 {
            return None;
        }
        let mut handles = vec![NIL; layout.blocks.len()];
        let mut plain: Vec<&SeedSegment> = Vec::new();
        let mut groups: Vec<(u64, u32, bool, u64, Vec<&SeedSegment>)> = Vec::new();
        for s in &layout.segments {
            match s.expandable_base {
                None => plain.push(s),
                Some(base) => {
                    let key = (s.stream, s.pool, s.small, base);
                    match groups.iter_mut().find(|g| (g.0, g.1, g.2, g.3) == key) {
                        Some(g) => g.4.push(s),
                        None => groups.push((s.stream, s.pool, s.small, base, vec![s])),
                    }
                }
            }
        }
        for s in plain {
            let (stream, pool) = self.place_of(s);
            self.tile(
                s.addr,
                s.addr + s.size,
                layout,
                stream,
                pool,
                NIL,
                NIL,
                &mut handles,
            );
            self.reserved += s.size;
            self.plain_segments += 1;
            self.spans.insert(s.addr, s.addr + s.size);
        }
        for (_, _, small, base, pieces) in groups {
            self.seed_expandable(base, small, &pieces, layout, &mut handles);
        }
        let above = layout
            .above
            .max(self.spans.values().copied().max().unwrap_or(0));
        self.next_addr = self
            .next_addr
            .max(above.div_ceil(SMALL_BUFFER).saturating_add(1) * SMALL_BUFFER);
        Some(handles)
    }

    /// The dense stream index and the pool set of a seed segment.
    fn place_of(&mut self, s: &SeedSegment) -> (u64, u32) {
        let stream = self.stream_index(s.stream).unwrap_or(0);
        (stream, self.get_pool(s.pool, s.small))
    }

    /// One expandable segment: unmapped address space from `base` with the mapped `pieces`
    /// in it (each a run of free and allocated blocks).
    fn seed_expandable(
        &mut self,
        base: u64,
        small: bool,
        pieces: &[&SeedSegment],
        layout: &Layout,
        handles: &mut [u32],
    ) {
        let page = if small { SMALL_BUFFER } else { LARGE_BUFFER };
        let mut pieces = pieces.to_vec();
        pieces.sort_by_key(|s| s.addr);
        let (stream, pool) = self.place_of(pieces[0]);
        let span = pieces
            .last()
            .map_or(0, |s| s.addr + s.size - base)
            .div_ceil(page)
            * page;
        let va = self
            .capacity
            .map_or(DEFAULT_VA, |c| c.saturating_add(c / 8))
            .min(1 << 47)
            .div_ceil(page)
            .max(1)
            * page;
        let va = va.max(span);
        let es = self.expandable.len() as u32;
        self.expandable.push(ExpSeg {
            base,
            page,
            live: true,
        });
        let mut prev = NIL;
        let mut cur = base;
        for s in pieces {
            if s.addr > cur {
                prev = self.unmapped(cur, s.addr - cur, stream, pool, es, prev);
            }
            prev = self.tile(
                s.addr,
                s.addr + s.size,
                layout,
                stream,
                pool,
                es,
                prev,
                handles,
            );
            self.reserved += s.size;
            self.mapped_runs += 1;
            cur = s.addr + s.size;
        }
        if cur < base + va {
            self.unmapped(cur, base + va - cur, stream, pool, es, prev);
        }
        self.spans.insert(base, base + va);
    }

    /// An unmapped block of an expandable segment after `prev`.
    #[allow(clippy::too_many_arguments)]
    fn unmapped(
        &mut self,
        addr: u64,
        size: u64,
        stream: u64,
        pool: u32,
        es: u32,
        prev: u32,
    ) -> u32 {
        let i = self.link(
            Block {
                addr,
                size,
                prev,
                next: NIL,
                pool,
                stream,
                es,
                allocated: false,
                pending: false,
                mapped: false,
                gc_base: 0,
                tag: 0,
                requested: 0,
            },
            prev,
        );
        self.insert_unmapped(i);
        i
    }

    /// Blocks tiling `[start, end)` after `prev`: the layout's blocks there, allocated, and
    /// free blocks between them. Returns the last block.
    #[allow(clippy::too_many_arguments)]
    fn tile(
        &mut self,
        start: u64,
        end: u64,
        layout: &Layout,
        stream: u64,
        pool: u32,
        es: u32,
        mut prev: u32,
        handles: &mut [u32],
    ) -> u32 {
        let first = layout.blocks.partition_point(|b| b.addr < start);
        let mut cur = start;
        let free = |addr, size| Block {
            addr,
            size,
            prev: NIL,
            next: NIL,
            pool,
            stream,
            es,
            allocated: false,
            pending: false,
            mapped: true,
            gc_base: 0,
            tag: 0,
            requested: 0,
        };
        for (k, b) in layout.blocks.iter().enumerate().skip(first) {
            if b.addr >= end {
                break;
            }
            if b.addr > cur {
                prev = self.link(free(cur, b.addr - cur), prev);
                self.insert_free(prev);
            }
            prev = self.link(
                Block {
                    allocated: true,
                    tag: k as u32,
                    requested: b.requested,
                    ..free(b.addr, b.size)
                },
                prev,
            );
            self.allocated += b.size;
            if let Some(h) = handles.get_mut(k) {
                *h = prev;
            }
            cur = b.addr + b.size;
        }
        if cur < end {
            prev = self.link(free(cur, end - cur), prev);
            self.insert_free(prev);
        }
        prev
    }

    /// Adds block `b` after `prev` in its segment's chain.
    fn link(&mut self, b: Block, prev: u32) -> u32 {
        let i = self.new_block(Block { prev, ..b });
        if prev != NIL {
            self.bm(prev).next = i;
        }
        i
    }
}

/// Whether the layout is one the model can hold: segments that do not overlap, blocks in
/// address order inside one segment each without overlapping, expandable ranges on whole
/// pages from their base.
fn fits(layout: &Layout) -> bool {
    let mut segs: Vec<&SeedSegment> = layout.segments.iter().collect();
    segs.sort_by_key(|s| s.addr);
    let ends_ok = segs
        .iter()
        .all(|s| s.size > 0 && s.addr.checked_add(s.size).is_some());
    let apart = segs.windows(2).all(|w| w[0].addr + w[0].size <= w[1].addr);
    let pages = segs.iter().all(|s| match s.expandable_base {
        None => true,
        Some(base) => {
            let page = if s.small { SMALL_BUFFER } else { LARGE_BUFFER };
            s.addr >= base && (s.addr - base) % page == 0 && s.size % page == 0
        }
    });
    if !(ends_ok && apart && pages) {
        return false;
    }
    let inside = |b: &SeedBlock| {
        let k = segs.partition_point(|s| s.addr <= b.addr);
        k > 0 && {
            let s = segs[k - 1];
            b.size > 0
                && b.addr
                    .checked_add(b.size)
                    .is_some_and(|e| e <= s.addr + s.size)
        }
    };
    layout.blocks.iter().all(inside)
        && layout
            .blocks
            .windows(2)
            .all(|w| w[0].addr + w[0].size <= w[1].addr)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::super::layout::{Layout, SeedBlock, SeedSegment};
    use super::*;
    use crate::allocator::sim::AllocConf;

    const MIB: u64 = 1 << 20;

    fn segment(addr: u64, size: u64) -> SeedSegment {
        SeedSegment {
            addr,
            size,
            stream: 0,
            pool: 0,
            small: false,
            expandable_base: None,
        }
    }

    #[test]
    fn seeded_segments_keep_their_addresses_and_ties_go_to_the_lower_one() {
        // Two 20 MiB segments, the later-listed one at the lower address, each with a 10 MiB
        // block at its start: two free 10 MiB blocks of equal size.
        let (high, low) = (0x7f00_0000_0000u64, 0x7e00_0000_0000u64);
        let layout = Layout {
            segments: vec![segment(high, 20 * MIB), segment(low, 20 * MIB)],
            blocks: vec![
                SeedBlock {
                    addr: low,
                    size: 10 * MIB,
                    requested: 10 * MIB - 100,
                },
                SeedBlock {
                    addr: high,
                    size: 10 * MIB,
                    requested: 10 * MIB,
                },
            ],
            above: high + 20 * MIB,
        };
        let mut e = Engine::new(AllocConf::default(), None);
        let handles = e.seed(&layout).unwrap();
        assert_eq!(e.reserved(), 40 * MIB);
        assert_eq!(e.allocated(), 20 * MIB);
        assert_eq!(e.block_addr(handles[0]), low);
        assert_eq!(e.block_addr(handles[1]), high);
        // BlockComparatorSize: (stream, size, address): the lower free block is taken.
        let b = e.malloc(10 * MIB, 0, 0, 2).unwrap();
        assert_eq!(e.block_addr(b), low + 10 * MIB);
        assert_eq!(e.reserved(), 40 * MIB, "no new segment");
        // A seeded block frees like any other.
        assert!(e.free(handles[1]));
        assert_eq!(e.allocated(), 20 * MIB);
        e.check().unwrap();
    }

    #[test]
    fn a_new_segment_goes_where_the_recorded_cudamalloc_put_it_when_free() {
        let mut e = Engine::new(AllocConf::default(), None);
        let hint = 0x7a00_0000_0000u64;
        let a = e.malloc_at(30 * MIB, 0, 0, 0, Some(hint)).unwrap();
        assert_eq!(e.block_addr(a), hint);
        // The same range again is taken: the model's own address, apart from it.
        let b = e.malloc_at(30 * MIB, 0, 0, 1, Some(hint)).unwrap();
        let at = e.block_addr(b);
        assert!(at >= hint + 30 * MIB || at + 30 * MIB <= hint, "{at:#x}");
        e.check().unwrap();
    }

    #[test]
    fn overlapping_or_stray_layouts_are_refused_and_leave_the_model_empty() {
        let mut e = Engine::new(AllocConf::default(), None);
        let overlapping = Layout {
            segments: vec![
                segment(0x1000_0000, 20 * MIB),
                segment(0x1000_0000 + MIB, 20 * MIB),
            ],
            blocks: vec![],
            above: 0,
        };
        assert!(e.seed(&overlapping).is_none());
        let stray = Layout {
            segments: vec![segment(0x1000_0000, 20 * MIB)],
            blocks: vec![SeedBlock {
                addr: 0x2000_0000,
                size: MIB,
                requested: MIB,
            }],
            above: 0,
        };
        assert!(e.seed(&stray).is_none());
        assert_eq!(e.reserved(), 0);
    }
}
