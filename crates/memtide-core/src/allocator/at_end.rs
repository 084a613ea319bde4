//! `allocator_at_end`: the totals of a snapshot's final `segments`, computed from the file's
//! blocks directly (not from the replay): reserved is the segments' `total_size`, allocated
//! the `active_allocated` blocks (as `torch.cuda.memory_allocated()` counts them), requested
//! what those blocks' tensors asked for, free the `inactive` blocks.

use super::replay::FinalSegment;
use super::state::{fragmentation, BlockState, PoolKey, PoolTotals};
use serde::Serialize;
use std::collections::BTreeMap;

/// The `allocator_at_end` object of `summary --json`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct AllocatorAtEnd {
    pub segments: u64,
    pub reserved: u64,
    pub allocated: u64,
    pub requested: u64,
    pub free_in_reserve: u64,
    pub largest_free_block: u64,
    /// Bytes of `active_pending_free` blocks (freed, waiting for another stream): neither
    /// allocated nor free, so allocated + pending_free + free_in_reserve = reserved.
    pub pending_free: u64,
    pub pools: Vec<PoolTotals>,
}

/// Totals of one device's final segments.
pub fn allocator_at_end(segments: &[FinalSegment]) -> AllocatorAtEnd {
    let mut t = AllocatorAtEnd::default();
    let mut pools: BTreeMap<PoolKey, PoolTotals> = BTreeMap::new();
    for s in segments {
        let key = PoolKey {
            pool_id: s.pool_id,
            kind: s.pool_kind(),
            stream: s.stream,
        };
        let p = pools.entry(key).or_insert_with(|| PoolTotals {
            key,
            segments: 0,
            reserved: 0,
            allocated: 0,
            pending_free: 0,
            free_in_reserve: 0,
            largest_free_block: 0,
            fragmentation: None,
        });
        t.segments += 1;
        p.segments += 1;
        t.reserved = t.reserved.saturating_add(s.total_size);
        p.reserved = p.reserved.saturating_add(s.total_size);
        for b in &s.blocks {
            match b.state {
                BlockState::Allocated => {
                    t.allocated = t.allocated.saturating_add(b.size);
                    t.requested = t.requested.saturating_add(b.requested);
                    p.allocated = p.allocated.saturating_add(b.size);
                }
                BlockState::PendingFree => {
                    t.pending_free = t.pending_free.saturating_add(b.size);
                    p.pending_free = p.pending_free.saturating_add(b.size);
                }
                BlockState::Free => {
                    t.free_in_reserve = t.free_in_reserve.saturating_add(b.size);
                    t.largest_free_block = t.largest_free_block.max(b.size);
                    p.free_in_reserve = p.free_in_reserve.saturating_add(b.size);
                    p.largest_free_block = p.largest_free_block.max(b.size);
                }
            }
        }
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
