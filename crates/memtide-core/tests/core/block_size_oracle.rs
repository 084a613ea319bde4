//! Property test: block sizes of a snapshot with both pools against a brute-force oracle
//! written from PyTorch's rules (`round_size`, `should_split`; the free run of an `alloc`
//! begins at its address when that is its segment's start or the end of a live block, and
//! runs to the next live block or the segment's end). A 2 MiB small-pool segment holds
//! small requests; a 40 MiB large-pool segment holds large requests at 10 MiB slots, so a
//! request of more than 9 MiB before a live neighbour leaves 1 MiB or less and takes the
//! whole run. The oracle keeps every live block of both pools in one list; the peak
//! memtide reports (blocks as `memory_allocated()` counts them) must equal its peak at the
//! same event.
#![allow(clippy::unwrap_used)]

use memtide_core::analysis::global_peak;
use memtide_core::formats::Progress;
use proptest::prelude::*;
use std::collections::BTreeMap;

const MIB: u64 = 1 << 20;
const SMALL_BASE: u64 = 1 << 32;
const SMALL_SEG: u64 = 2 * MIB;
const SMALL_SLOT: u64 = 64 << 10;
const LARGE_BASE: u64 = 1 << 33;
const LARGE_SLOT: u64 = 10 * MIB;
const LARGE_SLOTS: u64 = 4;

#[derive(Clone, Copy, Debug)]
enum Op {
    Small { slot: u64, size: u64 },
    Large { slot: u64, size: u64 },
    Free { large: bool, slot: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u64..SMALL_SEG / SMALL_SLOT, 1u64..SMALL_SLOT)
            .prop_map(|(slot, size)| Op::Small { slot, size }),
        // Half the large requests leave at most 1 MiB of a 10 MiB slot.
        3 => (0u64..LARGE_SLOTS, prop_oneof![MIB + 1..9 * MIB, 9 * MIB..LARGE_SLOT + 1])
            .prop_map(|(slot, size)| Op::Large { slot, size }),
        4 => (any::<bool>(), 0u64..SMALL_SEG / SMALL_SLOT)
            .prop_map(|(large, slot)| Op::Free { large, slot: if large { slot % LARGE_SLOTS } else { slot } }),
    ]
}

fn round512(n: u64) -> u64 {
    n.div_ceil(512).max(1) * 512
}

/// The entries the ops make (an alloc on a taken slot or a free of an empty one is left out,
/// and every block still live is freed at the end, so the dump's segments are all free) and
/// the oracle's peak (bytes, position; None: the initial state, 0 B).
fn replay(ops: &[Op]) -> (Vec<serde_json::Value>, u64, Option<usize>) {
    // Live blocks by address: (block size, requested).
    let mut live: BTreeMap<u64, (u64, u64)> = BTreeMap::new();
    let (mut entries, mut bytes, mut peak, mut peak_at) = (Vec::new(), 0u64, 0u64, None);
    let mut step =
        |entries: &mut Vec<serde_json::Value>, action: &str, addr: u64, size: u64, delta: i64| {
            entries.push(
                serde_json::json!({"action": action, "addr": addr, "size": size, "frames": []}),
            );
            bytes = bytes.checked_add_signed(delta).unwrap();
            if bytes > peak {
                (peak, peak_at) = (bytes, Some(entries.len() - 1));
            }
        };
    let addr_of = |large: bool, slot: u64| {
        if large {
            LARGE_BASE + slot * LARGE_SLOT
        } else {
            SMALL_BASE + slot * SMALL_SLOT
        }
    };
    for &o in ops {
        match o {
            Op::Small { slot, size } | Op::Large { slot, size } => {
                let large = matches!(o, Op::Large { .. });
                let addr = addr_of(large, slot);
                if live.contains_key(&addr) {
                    continue;
                }
                let rounded = round512(size);
                let block = if large {
                    large_block(&live, addr, rounded)
                } else {
                    rounded
                };
                live.insert(addr, (block, size));
                step(&mut entries, "alloc", addr, size, block as i64);
            }
            Op::Free { large, slot } => {
                let addr = addr_of(large, slot);
                if let Some((block, size)) = live.remove(&addr) {
                    step(&mut entries, "free_completed", addr, size, -(block as i64));
                }
            }
        }
    }
    for (addr, (block, size)) in std::mem::take(&mut live) {
        step(&mut entries, "free_completed", addr, size, -(block as i64));
    }
    (entries, peak, peak_at)
}

/// A large request's block: the whole free run when what would remain is 1 MiB or less
/// (`should_split` false), else the rounded request; the rounded request when the address
/// begins no run (a live block ends elsewhere before it).
fn large_block(live: &BTreeMap<u64, (u64, u64)>, addr: u64, rounded: u64) -> u64 {
    let seg_end = LARGE_BASE + LARGE_SLOTS * LARGE_SLOT;
    let before_end = live.range(..addr).next_back().map(|(&a, &(b, _))| a + b);
    let starts_run = addr == LARGE_BASE || before_end == Some(addr);
    let run = live.range(addr..).next().map_or(seg_end, |(&a, _)| a) - addr;
    if starts_run && run >= rounded && run - rounded <= MIB {
        run
    } else {
        rounded
    }
}

fn doc(entries: Vec<serde_json::Value>) -> serde_json::Value {
    let seg = |addr: u64, size: u64| {
        serde_json::json!({"device": 0, "address": addr, "total_size": size,
            "blocks": [{"size": size, "requested_size": 0, "state": "inactive", "frames": []}]})
    };
    serde_json::json!({
        "segments": [seg(SMALL_BASE, SMALL_SEG), seg(LARGE_BASE, LARGE_SLOTS * LARGE_SLOT)],
        "device_traces": [entries],
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn block_sizes_of_both_pools_match_brute_force(ops in prop::collection::vec(op(), 1..80)) {
        let (entries, want, want_at) = replay(&ops);
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x.json");
        std::fs::write(&f, doc(entries).to_string()).unwrap();
        let opened = memtide_core::open::open(&f, &Default::default(), &Progress::new()).unwrap();
        let (t, ix) = (&opened.devices[0].trace, &opened.devices[0].index);
        let p = global_peak(t, ix).unwrap();
        prop_assert_eq!(p.bytes.0, want);
        if let Some(at) = want_at {
            prop_assert_eq!(p.at.0, at as u64);
        }
    }
}
