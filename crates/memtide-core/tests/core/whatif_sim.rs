//! Properties of the caching-allocator simulator (`allocator::sim`) on random sequences of
//! allocations (small, 1–10 MiB and large sizes, two streams), free requests, frees and
//! releases, under random settings (expandable segments, max_split_size, power-of-two
//! rounding, a capacity): after every step allocated ≤ reserved, blocks tile their segments
//! without overlapping, no two adjacent free blocks are left unmerged, the free sets hold
//! exactly the free mapped blocks, every free of a block the model handed out succeeds and a
//! second free of it fails. And a brute-force oracle for the simple case (defaults, one
//! stream, no capacity): segments as vectors of blocks, best fit by a full scan, written from
//! the rules of `CUDACachingAllocator.cpp` (`round_size`, `get_allocation_size`,
//! `get_free_block`, `should_split`, `free_block`).

#![allow(clippy::unwrap_used)]

use memtide_core::allocator::sim::{AllocConf, Engine};
use proptest::prelude::*;

const MIB: u64 = 1 << 20;

#[derive(Clone, Debug)]
enum Step {
    Alloc(u64, u64),
    FreeRequested(usize),
    Free(usize),
    Release,
}

fn size() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 1u64..(MIB + 4096),
        3 => MIB..(10 * MIB),
        2 => (10 * MIB)..(300 * MIB),
    ]
}

fn steps(streams: u64) -> impl Strategy<Value = Vec<Step>> {
    prop::collection::vec(
        prop_oneof![
            // Stream ids are pointers in real files: large values.
            6 => (size(), 0..streams).prop_map(|(s, st)| Step::Alloc(s, st * 0x7f3a_0000_1230)),
            1 => any::<prop::sample::Index>().prop_map(|i| Step::FreeRequested(i.index(1 << 16))),
            5 => any::<prop::sample::Index>().prop_map(|i| Step::Free(i.index(1 << 16))),
            1 => Just(Step::Release),
        ],
        1..120,
    )
}

fn conf() -> impl Strategy<Value = AllocConf> {
    (
        any::<bool>(),
        prop::option::of(20u64..400),
        prop::option::of(0u32..4),
    )
        .prop_map(|(x, split, div)| {
            let mut c = AllocConf {
                expandable_segments: x,
                ..AllocConf::default()
            };
            if let Some(mb) = split {
                c.max_split_size = mb * MIB;
            }
            if let Some(d) = div {
                c.roundup_power2_divisions = [1 << d; 16];
            }
            c
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn invariants_hold_at_every_step(
        conf in conf(),
        cap in prop::option::of(100u64..2000),
        seq in steps(2),
    ) {
        let mut e = Engine::new(conf, cap.map(|c| c * MIB));
        // Live handles (block, tag), in allocation order.
        let mut live: Vec<(u32, u32)> = Vec::new();
        let mut freed: Vec<u32> = Vec::new();
        let mut tag = 0u32;
        for s in &seq {
            match *s {
                Step::Alloc(size, stream) => {
                    if let Ok(b) = e.malloc(size, stream, 0, tag) {
                        let rounded = e.conf().round_size(size);
                        prop_assert!(rounded.is_some_and(|r| e.block_size(b) >= r));
                        live.push((b, tag));
                    }
                    tag += 1;
                }
                Step::FreeRequested(i) if !live.is_empty() => {
                    let (b, _) = live[i % live.len()];
                    e.free_requested(b);
                }
                Step::Free(i) if !live.is_empty() => {
                    let (b, _) = live.remove(i % live.len());
                    prop_assert!(e.free(b), "a block the model handed out frees");
                    freed.push(b);
                }
                Step::Release => e.release_cached_blocks(),
                _ => {}
            }
            for t in e.completed_early.drain(..) {
                live.retain(|&(_, x)| x != t);
            }
            prop_assert!(e.allocated() <= e.reserved());
            if let Some(c) = cap {
                prop_assert!(e.reserved() <= c * MIB, "reserved within the capacity");
            }
            if let Err(m) = e.check() {
                return Err(TestCaseError::fail(format!("{m} after {s:?}")));
            }
        }
        // A block freed and not handed out again cannot be freed twice.
        for b in freed {
            if !live.iter().any(|&(x, _)| x == b) {
                prop_assert!(!e.free(b), "a second free of block {b} is refused");
            }
        }
    }

    #[test]
    fn defaults_agree_with_a_brute_force_oracle(seq in steps(1)) {
        let mut e = Engine::new(AllocConf::default(), None);
        let mut o = Oracle::default();
        let mut live: Vec<(u32, usize)> = Vec::new();
        for s in &seq {
            match *s {
                Step::Alloc(size, _) => {
                    let b = e.malloc(size, 0, 0, 0).map_err(|_| TestCaseError::fail("no OOM without a capacity"))?;
                    let id = o.malloc(size);
                    prop_assert_eq!(e.block_addr(b), o.addr(id), "the same block is chosen");
                    prop_assert_eq!(e.block_size(b), o.size(id));
                    live.push((b, id));
                }
                Step::Free(i) | Step::FreeRequested(i) if !live.is_empty() => {
                    let (b, id) = live.remove(i % live.len());
                    prop_assert!(e.free(b));
                    o.free(id);
                }
                Step::Release => {
                    e.release_cached_blocks();
                    o.release();
                }
                _ => {}
            }
            prop_assert_eq!(e.reserved(), o.reserved(), "reserved after {:?}", s);
            prop_assert_eq!(e.allocated(), o.allocated());
            prop_assert_eq!(e.segments(), o.segs.len() as u64);
        }
    }
}

/// A segment: (base, small pool, blocks as (size, allocated id)).
type OracleSeg = (u64, bool, Vec<(u64, Option<usize>)>);

/// Segments as vectors of (size, allocated id) blocks; addresses are the model's layout
/// (segments one after another from the same base, each rounded up to 2 MiB).
#[derive(Default)]
struct Oracle {
    /// (base, small, blocks).
    segs: Vec<OracleSeg>,
    next: u64,
    started: bool,
    /// id → (segment base, size) of live allocations.
    ids: Vec<Option<u64>>,
}

impl Oracle {
    fn find(&self, id: usize) -> (usize, usize, u64) {
        for (si, (base, _, blocks)) in self.segs.iter().enumerate() {
            let mut a = *base;
            for (bi, &(s, who)) in blocks.iter().enumerate() {
                if who == Some(id) {
                    return (si, bi, a);
                }
                a += s;
            }
        }
        panic!("id {id} not live")
    }
    fn addr(&self, id: usize) -> u64 {
        self.find(id).2
    }
    fn size(&self, id: usize) -> u64 {
        let (si, bi, _) = self.find(id);
        self.segs[si].2[bi].0
    }
    fn malloc(&mut self, orig: u64) -> usize {
        if !self.started {
            self.next = 0x7f00_0000_0000;
            self.started = true;
        }
        let size = if orig < 512 {
            512
        } else {
            orig.div_ceil(512) * 512
        };
        let small = size <= MIB;
        // Best fit: smallest free block of the pool, then lowest address.
        let mut best: Option<(u64, u64, usize, usize)> = None;
        for (si, (base, sm, blocks)) in self.segs.iter().enumerate() {
            if *sm != small {
                continue;
            }
            let mut a = *base;
            for (bi, &(s, who)) in blocks.iter().enumerate() {
                if who.is_none() && s >= size && best.is_none_or(|b| (s, a) < (b.0, b.1)) {
                    best = Some((s, a, si, bi));
                }
                a += s;
            }
        }
        let (si, bi) = match best {
            Some((_, _, si, bi)) => (si, bi),
            None => {
                let alloc = if small {
                    2 * MIB
                } else if size < 10 * MIB {
                    20 * MIB
                } else {
                    size.div_ceil(2 * MIB) * 2 * MIB
                };
                self.segs.push((self.next, small, vec![(alloc, None)]));
                self.next += alloc.div_ceil(2 * MIB) * 2 * MIB;
                (self.segs.len() - 1, 0)
            }
        };
        let id = self.ids.len();
        self.ids.push(Some(0));
        let blocks = &mut self.segs[si].2;
        let rem = blocks[bi].0 - size;
        let split = if small { rem >= 512 } else { rem > MIB };
        if split {
            blocks[bi] = (size, Some(id));
            blocks.insert(bi + 1, (rem, None));
        } else {
            blocks[bi].1 = Some(id);
        }
        id
    }
    fn free(&mut self, id: usize) {
        let (si, bi, _) = self.find(id);
        let blocks = &mut self.segs[si].2;
        blocks[bi].1 = None;
        if bi + 1 < blocks.len() && blocks[bi + 1].1.is_none() {
            blocks[bi].0 += blocks[bi + 1].0;
            blocks.remove(bi + 1);
        }
        if bi > 0 && blocks[bi - 1].1.is_none() {
            blocks[bi - 1].0 += blocks[bi].0;
            blocks.remove(bi);
        }
        self.ids[id] = None;
    }
    fn release(&mut self) {
        self.segs
            .retain(|(_, _, b)| !(b.len() == 1 && b[0].1.is_none()));
    }
    fn reserved(&self) -> u64 {
        self.segs.iter().flat_map(|s| s.2.iter()).map(|b| b.0).sum()
    }
    fn allocated(&self) -> u64 {
        self.segs
            .iter()
            .flat_map(|s| s.2.iter())
            .filter(|b| b.1.is_some())
            .map(|b| b.0)
            .sum()
    }
}
