//! The allocator model against a brute-force oracle written from the spec: memory as an
//! array of 512 B units, each unmapped, free or part of an active block of a segment; random
//! valid sequences of segment allocs/frees, expandable maps/unmaps, allocs, free requests and
//! completions, the first part of which happened before the history began (known only from
//! the final segments). Properties: totals equal the oracle's at every event (allocated +
//! pending + free in reserve = reserved), blocks tile their segment without overlapping, the
//! largest free block equals a scan, and a checkpointed query equals a replay from the start.

use memtide_core::allocator::{
    BlockState, Entry, FinalBlock, FinalSegment, History, Model, Op, Place, PoolId, PoolKind,
};
use proptest::prelude::*;

const U: u64 = 512;
const N: usize = 96;
const BASE: u64 = 1 << 30;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Cell {
    Unmapped,
    /// Free, in segment `seg` (expandable: the stream's run).
    Free(Seg),
    /// Part of the block starting at unit `start`.
    Used(Seg, usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seg {
    Plain(u32, u64),
    Expandable(u64),
}

impl Seg {
    fn stream(self) -> u64 {
        match self {
            Seg::Plain(_, s) | Seg::Expandable(s) => s,
        }
    }
}

#[derive(Clone, Debug)]
struct Oracle {
    cells: Vec<Cell>,
    /// start unit → (units, requested, pending)
    blocks: std::collections::BTreeMap<usize, (usize, u64, bool)>,
    next_seg: u32,
    /// Figures after each entry but the last of a step that makes several.
    mid: Vec<Figures>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Figures {
    reserved: u64,
    allocated: u64,
    pending: u64,
    free: u64,
    largest: u64,
    largest_stream1: u64,
}

impl Oracle {
    fn new() -> Oracle {
        Oracle {
            cells: vec![Cell::Unmapped; N],
            blocks: Default::default(),
            next_seg: 0,
            mid: Vec::new(),
        }
    }

    fn seg_of(&self, u: usize) -> Option<Seg> {
        match self.cells[u] {
            Cell::Unmapped => None,
            Cell::Free(s) | Cell::Used(s, _) => Some(s),
        }
    }

    fn figures(&self) -> Figures {
        let mut f = Figures {
            reserved: 0,
            allocated: 0,
            pending: 0,
            free: 0,
            largest: 0,
            largest_stream1: 0,
        };
        let mut run = 0u64;
        let mut run_seg = None;
        for u in 0..N {
            let c = self.cells[u];
            if c != Cell::Unmapped {
                f.reserved += U;
            }
            // A free run ends at any non-free unit or at a segment boundary.
            let boundary = u > 0 && self.seg_of(u) != self.seg_of(u - 1)
                || u > 0 && matches!(self.seg_of(u), Some(Seg::Plain(..))) && {
                    // Plain segments never merge: a new segment id starts a new run.
                    self.seg_of(u) != self.seg_of(u - 1)
                };
            if boundary || !matches!(c, Cell::Free(_)) {
                if let Some(s) = run_seg {
                    f.largest = f.largest.max(run);
                    if Seg::stream(s) == 1 {
                        f.largest_stream1 = f.largest_stream1.max(run);
                    }
                }
                run = 0;
                run_seg = None;
            }
            if let Cell::Free(s) = c {
                f.free += U;
                run += U;
                run_seg = Some(s);
            }
        }
        if let Some(s) = run_seg {
            f.largest = f.largest.max(run);
            if s.stream() == 1 {
                f.largest_stream1 = f.largest_stream1.max(run);
            }
        }
        for &(units, _, pending) in self.blocks.values() {
            if pending {
                f.pending += units as u64 * U;
            } else {
                f.allocated += units as u64 * U;
            }
        }
        f
    }
}

/// A raw random choice, turned into a valid operation against the oracle's state.
#[derive(Clone, Debug)]
struct Choice {
    kind: u8,
    a: usize,
    b: usize,
    c: u64,
}

fn choice() -> impl Strategy<Value = Choice> {
    (0u8..7, 0usize..N, 1usize..12, 0u64..512).prop_map(|(kind, a, b, c)| Choice { kind, a, b, c })
}

/// The oracle's two streams, of the default pool.
const PLACES: [Place; 2] = [Place { stream: 0, pool: 0 }, Place { stream: 1, pool: 0 }];

fn addr(u: usize) -> u64 {
    BASE + u as u64 * U
}

/// Applies a valid version of `ch` (or nothing) to the oracle; returns the entries it makes.
fn step(o: &mut Oracle, ch: &Choice) -> Vec<Entry> {
    // Place `stream` is stream `stream` of the default pool (see `PLACES`).
    let e = |op, addr, size, stream: u64| Entry {
        op,
        addr,
        size,
        place: stream as u32,
    };
    let stream = ch.c % 2;
    match ch.kind {
        // segment_alloc of b units at a
        0 => {
            let (a, n) = (ch.a, ch.b);
            if a + n > N || (a..a + n).any(|u| o.cells[u] != Cell::Unmapped) {
                return vec![];
            }
            let s = Seg::Plain(o.next_seg, stream);
            o.next_seg += 1;
            for u in a..a + n {
                o.cells[u] = Cell::Free(s);
            }
            vec![e(Op::SegmentAlloc, addr(a), n as u64 * U, stream)]
        }
        // segment_map (expandable) of b units at a
        1 => {
            let (a, n) = (ch.a, ch.b.min(4));
            if a + n > N || (a..a + n).any(|u| o.cells[u] != Cell::Unmapped) {
                return vec![];
            }
            for u in a..a + n {
                o.cells[u] = Cell::Free(Seg::Expandable(stream));
            }
            vec![e(Op::SegmentMap, addr(a), n as u64 * U, stream)]
        }
        // alloc of b units at a, inside one segment's free run
        2 | 3 => {
            let (a, n) = (ch.a, ch.b);
            if a + n > N {
                return vec![];
            }
            let Cell::Free(s) = o.cells[a] else {
                return vec![];
            };
            if (a..a + n).any(|u| o.cells[u] != Cell::Free(s)) {
                return vec![];
            }
            for u in a..a + n {
                o.cells[u] = Cell::Used(s, a);
            }
            let requested = n as u64 * U - (ch.c % U);
            o.blocks.insert(a, (n, requested, false));
            vec![e(Op::Alloc, addr(a), requested, s.stream())]
        }
        // free (requested, and completed unless c is odd: pending on another stream)
        4 | 5 => {
            let keys: Vec<usize> = o.blocks.keys().copied().collect();
            if keys.is_empty() {
                return vec![];
            }
            let a = keys[ch.a % keys.len()];
            let (n, req, pending) = o.blocks[&a];
            let Some(s) = o.seg_of(a) else { return vec![] };
            let mut v = Vec::new();
            if !pending {
                if let Some(b) = o.blocks.get_mut(&a) {
                    b.2 = true;
                }
                v.push(e(Op::FreeRequested, addr(a), req, s.stream()));
                o.mid.push(o.figures());
            }
            if pending || ch.c.is_multiple_of(2) {
                o.blocks.remove(&a);
                for u in a..a + n {
                    o.cells[u] = Cell::Free(s);
                }
                v.push(e(Op::FreeCompleted, addr(a), req, s.stream()));
            }
            v
        }
        // segment_free of a fully free plain segment / unmap of free expandable units
        _ => {
            let Cell::Free(s) = o.cells[ch.a] else {
                return vec![];
            };
            match s {
                Seg::Plain(..) => {
                    let units: Vec<usize> = (0..N).filter(|&u| o.seg_of(u) == Some(s)).collect();
                    if units.iter().any(|&u| o.cells[u] != Cell::Free(s)) {
                        return vec![];
                    }
                    for &u in &units {
                        o.cells[u] = Cell::Unmapped;
                    }
                    let (lo, hi) = (units[0], units[units.len() - 1] + 1);
                    vec![e(
                        Op::SegmentFree,
                        addr(lo),
                        (hi - lo) as u64 * U,
                        s.stream(),
                    )]
                }
                Seg::Expandable(st) => {
                    let a = ch.a;
                    let n = (a..(a + ch.b.min(3)).min(N))
                        .take_while(|&u| o.cells[u] == Cell::Free(s))
                        .count();
                    for u in a..a + n {
                        o.cells[u] = Cell::Unmapped;
                    }
                    vec![e(Op::SegmentUnmap, addr(a), n as u64 * U, st)]
                }
            }
        }
    }
}

/// The oracle's state as final `segments` (blocks tiling each segment).
fn dump(o: &Oracle) -> Vec<FinalSegment> {
    let mut out: Vec<FinalSegment> = Vec::new();
    let mut u = 0;
    while u < N {
        let Some(s) = o.seg_of(u) else {
            u += 1;
            continue;
        };
        let mut end = u;
        while end < N && o.seg_of(end) == Some(s) {
            end += 1;
        }
        let mut blocks = Vec::new();
        let mut v = u;
        while v < end {
            match o.cells[v] {
                Cell::Used(_, start) if start == v => {
                    let (n, req, pending) = o.blocks[&v];
                    blocks.push(FinalBlock {
                        size: n as u64 * U,
                        requested: req,
                        state: if pending {
                            BlockState::PendingFree
                        } else {
                            BlockState::Allocated
                        },
                    });
                    v += n;
                }
                _ => {
                    let mut w = v;
                    while w < end && matches!(o.cells[w], Cell::Free(_)) {
                        w += 1;
                    }
                    let w = w.max(v + 1);
                    blocks.push(FinalBlock {
                        size: (w - v) as u64 * U,
                        requested: 0,
                        state: BlockState::Free,
                    });
                    v = w;
                }
            }
        }
        out.push(FinalSegment {
            address: addr(u),
            total_size: (end - u) as u64 * U,
            stream: s.stream(),
            pool_id: PoolId(0, 0),
            kind: Some(PoolKind::Large),
            expandable: matches!(s, Seg::Expandable(_)),
            blocks,
        });
        u = end;
    }
    out
}

fn model_figures(st: &memtide_core::allocator::State) -> Figures {
    let t = st.totals();
    let largest_stream1 = t
        .pools
        .iter()
        .filter(|p| p.key.stream == 1)
        .map(|p| p.largest_free_block)
        .max()
        .unwrap_or(0);
    Figures {
        reserved: t.reserved,
        allocated: t.allocated,
        pending: t.pending_free,
        free: t.free_in_reserve,
        largest: t.largest_free_block,
        largest_stream1,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn model_matches_the_oracle(pre in prop::collection::vec(choice(), 0..40),
                                ops in prop::collection::vec(choice(), 1..120),
                                every in 1usize..9) {
        let mut o = Oracle::new();
        // Before the history: pending frees complete at once (a cut never splits a free pair).
        for ch in &pre {
            let mut ch = ch.clone();
            if ch.kind == 4 || ch.kind == 5 { ch.c &= !1; }
            step(&mut o, &ch);
        }
        let start = o.figures();
        let mut entries = Vec::new();
        let mut after = Vec::new();
        for ch in &ops {
            o.mid.clear();
            let made = step(&mut o, ch);
            let n = made.len();
            for (k, e) in made.into_iter().enumerate() {
                entries.push(e);
                after.push(if k + 1 < n { o.mid[k].clone() } else { o.figures() });
            }
        }
        let h = History { device: "cuda:0".into(), entries: entries.into(), places: PLACES.to_vec(), pools: vec![PoolId(0, 0)], segments: dump(&o), ..History::default() };
        let m = Model::build_every(h.clone(), every);
        prop_assert!(m.report().consistent(), "{:?}", m.report());
        prop_assert_eq!(model_figures(&m.at_start()), start);
        let straight = h.states_before(&(0..=h.entries.len()).collect::<Vec<_>>());
        for (i, want) in after.iter().enumerate() {
            let st = m.after(i);
            prop_assert_eq!(&model_figures(&st), want, "after event #{}", i);
            // A checkpointed query equals a replay from the start.
            prop_assert_eq!(&st, &straight[i + 1]);
            let t = st.totals();
            prop_assert_eq!(t.allocated + t.pending_free + t.free_in_reserve, t.reserved);
            // Blocks tile each segment, never overlapping; the largest free block is a scan.
            let mut largest = 0;
            for s in st.segments() {
                let mut cur = s.address;
                for b in &s.blocks {
                    prop_assert_eq!(b.address, cur);
                    prop_assert!(b.size > 0);
                    cur += b.size;
                    if b.state == BlockState::Free { largest = largest.max(b.size); }
                }
                prop_assert_eq!(cur, s.address + s.size);
            }
            prop_assert_eq!(largest, t.largest_free_block);
        }
    }
}
