//! The block PyTorch's caching allocator hands out for one recorded allocation — the bytes
//! `torch.cuda.memory_allocated()` counts for it — placed in a replayed [`State`].
//!
//! A snapshot's `alloc` entry records the size the caller asked for (`orig_size`), while the
//! allocator's `allocated_bytes` grows by `block->size` (see [`super::rounding`]): the request
//! rounded by `round_size` (512 B steps, or the recorded `roundup_power2_divisions`), or the
//! whole free block it was cut from when `should_split` keeps it whole. A block is split off
//! the front of a free block, so the free block is the free run that begins at the
//! allocation's address in the replayed state: up to the next active block or the end of
//! the segment.
//!
//! Only a large-pool request outside expandable segments can be kept whole (a remainder of
//! 1 MiB or less, or a request of `max_split_size` or more): small-pool blocks and blocks in
//! expandable segments are split whenever 512 B or more remain, and every size is a multiple
//! of 512 B. When the replayed state has no free run at the address (the file and the replay
//! disagree, e.g. a block live before the history that the file never names), the rounded
//! size is a lower bound: [`Placed::sure`] is false.

use super::block_map::Loc;
use super::rounding::{should_split, SMALL_SIZE};
use super::sim::config::AllocConf;
use super::state::State;

/// The block of one allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Placed {
    /// Bytes of the block: what `memory_allocated()` counted for the allocation.
    pub size: u64,
    /// False when the replay could not place it (the size is then the rounded request, a
    /// lower bound: PyTorch may have handed out a larger unsplit block).
    pub sure: bool,
}

/// The block an allocation of `requested` bytes at `addr` got, given the state just before
/// it (the allocation not yet in it) and the recorded allocator settings.
pub(crate) fn block_for(state: &State, conf: &AllocConf, addr: u64, requested: u64) -> Placed {
    block_for_at(state, conf, &state.locate(addr), requested)
}

/// [`block_for`] at an address located in the state ([`State::locate`]).
pub(crate) fn block_for_at(state: &State, conf: &AllocConf, at: &Loc, requested: u64) -> Placed {
    let Some(rounded) = conf.round_size(requested) else {
        // No allocator rounds this within 64 bits: what the file says is all there is.
        return Placed {
            size: requested,
            sure: false,
        };
    };
    if rounded <= SMALL_SIZE || conf.expandable_segments {
        return Placed {
            size: rounded,
            sure: true,
        };
    }
    match state.free_run_from(at) {
        // `get_free_block` skips expandable blocks while the setting is off, so an allocation
        // in an expandable segment was made with it on: split as the small pool is.
        Some((_, meta)) if meta.expandable => Placed {
            size: rounded,
            sure: true,
        },
        Some((run, _)) if run >= rounded => {
            let whole = !should_split(false, false, conf.max_split_size, rounded, run - rounded);
            Placed {
                size: if whole { run } else { rounded },
                sure: true,
            }
        }
        _ => Placed {
            size: rounded,
            sure: false,
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::allocator::rounding::PoolKind;
    use crate::allocator::state::{PoolId, SegMeta};

    const MIB: u64 = 1 << 20;

    fn large(expandable: bool) -> SegMeta {
        SegMeta {
            stream: 0,
            pool_id: PoolId(0, 0),
            kind: PoolKind::Large,
            expandable,
        }
    }

    /// One 12 MiB cudaMalloc segment at 0x1000_0000 (what a request of 10–12 MiB makes).
    fn segment(size: u64, expandable: bool) -> State {
        let mut st = State::new();
        st.map(0x1000_0000, 0x1000_0000 + size, large(expandable));
        st
    }

    #[test]
    fn a_remainder_of_one_mib_or_less_stays_with_the_block() {
        let st = segment(12 * MIB, false);
        let d = AllocConf::default();
        // 11.5 MiB from a 12 MiB segment: 0.5 MiB remain, not split: the block is 12 MiB.
        let p = block_for(&st, &d, 0x1000_0000, 11 * MIB + MIB / 2);
        assert_eq!(
            p,
            Placed {
                size: 12 * MIB,
                sure: true
            }
        );
        // 10.5 MiB: 1.5 MiB remain, split: the block is the rounded request.
        let p = block_for(&st, &d, 0x1000_0000, 10 * MIB + MIB / 2 - 100);
        assert_eq!(p.size, 10 * MIB + MIB / 2);
        // Exactly 1 MiB remaining is not "more than kSmallSize": kept.
        assert_eq!(block_for(&st, &d, 0x1000_0000, 11 * MIB).size, 12 * MIB);
    }

    #[test]
    fn the_run_ends_at_the_next_active_block() {
        let mut st = segment(20 * MIB, false);
        st.alloc_sized(0x1000_0000 + 8 * MIB, 4 * MIB, 4 * MIB);
        let d = AllocConf::default();
        // The run at the segment's start is 8 MiB: 7.5 MiB leaves 0.5 MiB, kept whole.
        assert_eq!(
            block_for(&st, &d, 0x1000_0000, 7 * MIB + MIB / 2).size,
            8 * MIB
        );
        // After the active block: 8 MiB to the segment's end, 4 MiB asked: split.
        assert_eq!(
            block_for(&st, &d, 0x1000_0000 + 12 * MIB, 4 * MIB).size,
            4 * MIB
        );
        // Inside the active block, or after free bytes of a run: not placed.
        let p = block_for(&st, &d, 0x1000_0000 + 9 * MIB, 2 * MIB);
        assert_eq!(
            p,
            Placed {
                size: 2 * MIB,
                sure: false
            }
        );
        let p = block_for(&st, &d, 0x1000_0000 + MIB, 2 * MIB);
        assert_eq!(
            p,
            Placed {
                size: 2 * MIB,
                sure: false
            }
        );
        // Outside every segment.
        assert!(!block_for(&st, &d, 0x9000_0000, 2 * MIB).sure);
    }

    #[test]
    fn oversize_requests_take_the_whole_block_and_settings_change_the_rule() {
        let st = segment(84 * MIB, false);
        let split64 = AllocConf::parse("max_split_size_mb:64").unwrap();
        // A 64 MiB request under max_split_size_mb:64 is never split: all 84 MiB.
        assert_eq!(
            block_for(&st, &split64, 0x1000_0000, 64 * MIB).size,
            84 * MIB
        );
        // Without the setting the 20 MiB remainder is split off.
        let d = AllocConf::default();
        assert_eq!(block_for(&st, &d, 0x1000_0000, 64 * MIB).size, 64 * MIB);
        // Expandable segments (the setting, or a segment_map'ed segment): rounded only.
        let x = AllocConf::parse("expandable_segments:True").unwrap();
        let st12 = segment(12 * MIB, false);
        assert_eq!(
            block_for(&st12, &x, 0x1000_0000, 11 * MIB + 1).size,
            11 * MIB + 512
        );
        let sx = segment(12 * MIB, true);
        assert_eq!(
            block_for(&sx, &d, 0x1000_0000, 11 * MIB + 1).size,
            11 * MIB + 512
        );
        // Small-pool requests are rounded to 512 B and never kept whole.
        assert_eq!(block_for(&st12, &d, 0x1000_0000, 1000).size, 1024);
        // roundup_power2_divisions rounds further (3 MiB + 1 B, 4 divisions → 3.5 MiB).
        let p2 = AllocConf::parse("roundup_power2_divisions:4").unwrap();
        assert_eq!(
            block_for(&st12, &p2, 0x1000_0000, 3 * MIB + 1).size,
            3 * MIB + MIB / 2
        );
    }
}
