//! Property tests: the snapshot reader + index + peak against a brute-force oracle written
//! from the rules (MemoryViz matching; blocks at the size `memory_allocated()` counts: every
//! request here is below 1 MiB, so rounded up to 512 B, and a block known only from the dump
//! at its final `size`; the initial state is the first peak candidate;
//! reserved = mapped pages, counted one by one on a page bitmap, with the initial pages
//! solved by undoing the trace's segment events from the final segments).
#![allow(clippy::unwrap_used)]

use memtide_core::analysis::{global_peak, Summary};
use memtide_core::formats::Progress;
use proptest::prelude::*;
use std::collections::HashMap;

const PAGE: u64 = 1 << 20;
const PAGES: usize = 48;
/// Allocations live in their own address space, away from the segment bases.
const HEAP: u64 = 1 << 40;

#[derive(Clone, Debug)]
enum Op {
    Alloc { slot: u64, size: u64 },
    Free { slot: u64, size: u64 },
    Map { page: u64, len: u64 },
    Unmap { page: u64, len: u64 },
    Other,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u64..8, 1u64..5000).prop_map(|(slot, size)| Op::Alloc { slot, size }),
        3 => (0u64..8, 1u64..5000).prop_map(|(slot, size)| Op::Free { slot, size }),
        2 => (0u64..40, 1u64..8).prop_map(|(page, len)| Op::Map { page, len }),
        2 => (0u64..40, 1u64..8).prop_map(|(page, len)| Op::Unmap { page, len }),
        1 => Just(Op::Other),
    ]
}

/// Final segments: (first page, pages, allocated block size at its base or 0).
fn segs() -> impl Strategy<Value = Vec<(u64, u64, u64)>> {
    prop::collection::vec(
        (0u64..40, 1u64..6, prop_oneof![Just(0u64), 1u64..3000]),
        0..4,
    )
}

fn addr(slot: u64) -> u64 {
    HEAP + slot * 4096
}

fn entry(o: &Op) -> serde_json::Value {
    let (action, a, size) = match *o {
        Op::Alloc { slot, size } => ("alloc", addr(slot), size),
        Op::Free { slot, size } => ("free_completed", addr(slot), size),
        Op::Map { page, len } => ("segment_map", page * PAGE, len * PAGE),
        Op::Unmap { page, len } => ("segment_unmap", page * PAGE, len * PAGE),
        Op::Other => ("snapshot", 0, 0),
    };
    serde_json::json!({"action": action, "addr": a, "size": size})
}

struct Truth {
    peak: u64,
    /// None: the initial state.
    peak_at: Option<usize>,
    reserved: u64,
    reserved_at: Option<usize>,
}

/// PyTorch's `round_size` for requests of the small pool: 512 B steps, at least 512 B.
fn round512(n: u64) -> u64 {
    n.max(1).div_ceil(512) * 512
}

fn oracle(ops: &[Op], segs: &[(u64, u64, u64)]) -> Truth {
    // Allocations: (from_start, start, end, size)
    let mut iv: Vec<(bool, usize, Option<usize>, u64)> = Vec::new();
    let mut live: HashMap<u64, usize> = HashMap::new();
    for (i, o) in ops.iter().enumerate() {
        match *o {
            Op::Alloc { slot, size } => {
                live.insert(slot, iv.len());
                iv.push((false, i, None, round512(size)));
            }
            Op::Free { slot, size } => match live.remove(&slot) {
                Some(k) => iv[k].2 = Some(i),
                None => iv.push((true, 0, Some(i), round512(size))),
            },
            _ => {}
        }
    }
    // Ghosts never collide with the heap slots; `doc` gives each a 4096 B block.
    for &(_, _, b) in segs {
        if b > 0 {
            iv.push((true, 0, None, 4096));
        }
    }
    let total = |p: Option<usize>| -> u64 {
        iv.iter()
            .filter(|&&(fs, st, en, _)| match p {
                None => fs,
                Some(p) => (fs || st <= p) && en.is_none_or(|e| p < e),
            })
            .map(|x| x.3)
            .sum()
    };
    let (mut peak, mut peak_at) = (total(None), None);
    for p in 0..ops.len() {
        let t = total(Some(p));
        if t > peak {
            (peak, peak_at) = (t, Some(p));
        }
    }
    // Pages.
    let mut pages = [false; PAGES];
    for &(p, l, _) in segs {
        for x in p..p + l {
            pages[x as usize] = true;
        }
    }
    for o in ops.iter().rev() {
        match *o {
            Op::Map { page, len } => (page..page + len).for_each(|x| pages[x as usize] = false),
            Op::Unmap { page, len } => (page..page + len).for_each(|x| pages[x as usize] = true),
            _ => {}
        }
    }
    let count = |pages: &[bool; PAGES]| pages.iter().filter(|&&b| b).count() as u64 * PAGE;
    let (mut reserved, mut reserved_at) = (count(&pages), None);
    for (i, o) in ops.iter().enumerate() {
        match *o {
            Op::Map { page, len } => (page..page + len).for_each(|x| pages[x as usize] = true),
            Op::Unmap { page, len } => (page..page + len).for_each(|x| pages[x as usize] = false),
            _ => {}
        }
        if count(&pages) > reserved {
            (reserved, reserved_at) = (count(&pages), Some(i));
        }
    }
    Truth {
        peak,
        peak_at,
        reserved,
        reserved_at,
    }
}

fn doc(ops: &[Op], segs: &[(u64, u64, u64)]) -> serde_json::Value {
    let segments: Vec<serde_json::Value> = segs
        .iter()
        .map(|&(p, l, b)| {
            let mut blocks = Vec::new();
            if b > 0 {
                blocks.push(serde_json::json!({"size": 4096, "requested_size": b,
                    "state": "active_allocated", "frames": []}));
            }
            serde_json::json!({"device": 0, "address": p * PAGE, "total_size": l * PAGE,
                "blocks": blocks})
        })
        .collect();
    serde_json::json!({"segments": segments,
        "device_traces": [ops.iter().map(entry).collect::<Vec<_>>()]})
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn snapshot_peak_and_reserved_match_brute_force(
        ops in prop::collection::vec(op(), 1..60),
        segs in segs(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x.json");
        std::fs::write(&f, doc(&ops, &segs).to_string()).unwrap();
        let opened = memtide_core::open::open(&f, &Default::default(), &Progress::new()).unwrap();
        let (t, ix) = (&opened.devices[0].trace, &opened.devices[0].index);
        let want = oracle(&ops, &segs);
        let p = global_peak(t, ix).unwrap();
        prop_assert_eq!(p.bytes.0, want.peak);
        prop_assert_eq!(p.at_start, want.peak_at.is_none());
        if let Some(at) = want.peak_at {
            prop_assert_eq!(p.at.0, at as u64);
        }
        // the live set at the peak sums to the peak
        let live: u64 = p.live(t, ix).iter().map(|&id| t.size(id).0).sum();
        prop_assert_eq!(live, want.peak);
        let s = Summary::build(t, ix);
        let has_reserved = !segs.is_empty()
            || ops.iter().any(|o| matches!(o, Op::Map { .. } | Op::Unmap { .. }));
        prop_assert_eq!(s.reserved_peak, has_reserved.then_some(want.reserved));
        if has_reserved {
            prop_assert_eq!(s.reserved_peak_index, want.reserved_at.map(|x| x as u64));
        }
    }
}
