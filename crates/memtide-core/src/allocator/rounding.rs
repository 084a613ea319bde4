//! PyTorch's caching-allocator size rules: the 512 B rounding of a request, the pool it is
//! served from (small ≤ 1 MiB, large above) and the size of the segment `cudaMalloc` would be
//! asked for when no cached block fits.
//!
//! Source: `c10/cuda/CUDACachingAllocator.cpp` (pytorch/pytorch, read at commit
//! 001074d25084fdb87a799823e395a50f5ec044d3):
//! - the constants `kMinBlockSize = 512` ("all sizes are rounded to at least 512 bytes"),
//!   `kSmallSize = 1048576` ("largest "small" allocation is 1 MiB"), `kSmallBuffer = 2097152`
//!   ("small" allocations are packed in 2 MiB blocks), `kMinLargeAlloc = 10485760`
//!   ("allocations between 1 and 10 MiB may use kLargeBuffer"), `kRoundLarge = 2097152`
//!   ("round up large allocations to 2 MiB") and `kLargeBuffer = 20971520`, all defined at
//!   the top of the file, just after `Note [Interaction with CUDA graph capture]`;
//! - `DeviceCachingAllocator::round_size(size)`: below `kMinBlockSize` → `kMinBlockSize`,
//!   else `kMinBlockSize * ceil(size / kMinBlockSize)` (unless `roundup_power2_divisions` is
//!   configured: not modelled, see [`round_size`]);
//! - `DeviceCachingAllocator::get_pool(size, stream)`: `size <= kSmallSize` → the small pool,
//!   else the large one (of the private pool when a CUDA-graph capture / MemPool is active);
//! - `DeviceCachingAllocator::get_allocation_size(size)`: `size <= kSmallSize` →
//!   `kSmallBuffer`; `size < kMinLargeAlloc` → `kLargeBuffer`; else `kRoundLarge *
//!   ceil(size / kRoundLarge)`;
//! - `DeviceCachingAllocator::malloc`: `size = round_size(orig_size)`, then
//!   `AllocParams params(device, size, stream, &pool, alloc_size)` — and on failure
//!   `record_trace(TraceEntry::OOM, device_free, params.size(), params.stream(), …)`, so a
//!   snapshot's `oom` entry already carries the *rounded* size and the driver's free bytes
//!   (in `addr`, written out as `device_free`); `alloc` entries carry `orig_size` (what the
//!   caller asked for), which is why a block's extent is its rounded size;
//! - `DeviceCachingAllocator::should_split(block, size)`: `remaining = block->size - size`;
//!   a small-pool block, or any block while `expandable_segments` is on, is split when
//!   `remaining >= kMinBlockSize`; a large-pool block only when `size <
//!   max_split_size()` and `remaining > kSmallSize`. An unsplit block is handed out whole
//!   (`alloc_found_block(…, split_remainder = false)`), and `allocated_bytes` — what
//!   `memory_allocated()` reports — grows by `block->size`, the whole block
//!   (`stats.allocated_bytes[stat_type].increase(block->size)` in `alloc_found_block`).
//!   PyTorch 1.x had no `expandable_segments` branch and no `max_split_size` condition
//!   (`remaining > kSmallSize` alone): the same rule with both settings at their defaults.

/// All sizes are rounded to at least this (`kMinBlockSize`).
pub(crate) const MIN_BLOCK_SIZE: u64 = 512;
/// The largest request served from the small pool (`kSmallSize`, 1 MiB).
pub(crate) const SMALL_SIZE: u64 = 1 << 20;
/// Small-pool segments (`kSmallBuffer`, 2 MiB).
pub(crate) const SMALL_BUFFER: u64 = 2 << 20;
/// Requests below this use a [`LARGE_BUFFER`] segment (`kMinLargeAlloc`, 10 MiB).
pub(crate) const MIN_LARGE_ALLOC: u64 = 10 << 20;
/// Large-pool segments for requests between 1 and 10 MiB (`kLargeBuffer`, 20 MiB).
pub(crate) const LARGE_BUFFER: u64 = 20 << 20;
/// Larger requests get segments rounded up to this (`kRoundLarge`, 2 MiB).
pub(crate) const ROUND_LARGE: u64 = 2 << 20;

/// Which of a pool's two block sets a request is served from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PoolKind {
    Small,
    Large,
}

impl PoolKind {
    pub fn name(self) -> &'static str {
        match self {
            PoolKind::Small => "small",
            PoolKind::Large => "large",
        }
    }
}

/// `round_size`: the block size a request of `size` bytes occupies (512 B steps; the
/// optional `roundup_power2_divisions` setting is not modelled: with it, PyTorch rounds
/// some sizes further up). None when the rounded size does not fit 64 bits: no allocator
/// can serve such a request (PyTorch's own `size_t` arithmetic would wrap).
pub(crate) fn round_size(size: u64) -> Option<u64> {
    if size < MIN_BLOCK_SIZE {
        Some(MIN_BLOCK_SIZE)
    } else {
        size.div_ceil(MIN_BLOCK_SIZE).checked_mul(MIN_BLOCK_SIZE)
    }
}

/// The extent of a block the file recorded with `size` bytes requested: the rounded size, or
/// the size as recorded when it cannot be rounded within 64 bits (no allocator made such a
/// block; what the file says is all there is).
pub(crate) fn block_extent(size: u64) -> u64 {
    round_size(size).unwrap_or(size)
}

/// `should_split`: whether a free block of `size + remaining` bytes is split when a rounded
/// request of `size` bytes takes its front (`small`: the small pool; `expandable`: the
/// `expandable_segments` setting; `max_split_size`: `u64::MAX` when unset). When it is not,
/// the request gets the whole block.
pub(crate) fn should_split(
    small: bool,
    expandable: bool,
    max_split_size: u64,
    size: u64,
    remaining: u64,
) -> bool {
    if small || expandable {
        remaining >= MIN_BLOCK_SIZE
    } else {
        size < max_split_size && remaining > SMALL_SIZE
    }
}

/// `get_pool`: the pool a rounded request is served from.
pub(crate) fn pool_for(rounded: u64) -> PoolKind {
    if rounded <= SMALL_SIZE {
        PoolKind::Small
    } else {
        PoolKind::Large
    }
}

/// `get_allocation_size`: the segment a rounded request needs when no cached block fits;
/// None when that segment's size does not fit 64 bits (it can never be allocated).
pub(crate) fn allocation_size(rounded: u64) -> Option<u64> {
    if rounded <= SMALL_SIZE {
        Some(SMALL_BUFFER)
    } else if rounded < MIN_LARGE_ALLOC {
        Some(LARGE_BUFFER)
    } else {
        rounded.div_ceil(ROUND_LARGE).checked_mul(ROUND_LARGE)
    }
}

/// The pool a segment of `size` bytes made by `cudaMalloc` belongs to when the file does not
/// say (`segment_type`): only small-pool segments are exactly [`SMALL_BUFFER`] (large ones are
/// [`LARGE_BUFFER`] or at least [`MIN_LARGE_ALLOC`]).
pub(crate) fn segment_kind(size: u64) -> PoolKind {
    if size == SMALL_BUFFER {
        PoolKind::Small
    } else {
        PoolKind::Large
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_rules_match_the_allocator() {
        assert_eq!(round_size(0), Some(512));
        assert_eq!(round_size(1), Some(512));
        assert_eq!(round_size(512), Some(512));
        assert_eq!(round_size(513), Some(1024));
        assert_eq!(pool_for(1 << 20), PoolKind::Small);
        assert_eq!(pool_for((1 << 20) + 512), PoolKind::Large);
        assert_eq!(allocation_size(512), Some(2 << 20));
        assert_eq!(allocation_size((1 << 20) + 512), Some(20 << 20));
        assert_eq!(allocation_size((10 << 20) - 512), Some(20 << 20));
        assert_eq!(allocation_size(10 << 20), Some(10 << 20));
        assert_eq!(allocation_size((10 << 20) + 512), Some(12 << 20));
    }

    #[test]
    fn split_rules_match_should_split() {
        const MIB: u64 = 1 << 20;
        // Small pool: any remainder of 512 B or more is split off.
        assert!(should_split(true, false, u64::MAX, 512, 512));
        assert!(!should_split(true, false, u64::MAX, 512, 0));
        // Large pool: only a remainder above 1 MiB.
        assert!(!should_split(false, false, u64::MAX, 11 * MIB, MIB));
        assert!(should_split(false, false, u64::MAX, 11 * MIB, MIB + 512));
        // A request of max_split_size or more is never split.
        assert!(!should_split(false, false, 64 * MIB, 64 * MIB, 20 * MIB));
        assert!(should_split(false, false, 64 * MIB, 63 * MIB, 20 * MIB));
        // Expandable segments: the small-pool rule for every block.
        assert!(should_split(false, true, u64::MAX, 11 * MIB, 512));
    }

    #[test]
    fn sizes_beyond_64_bits_cannot_be_rounded() {
        // The largest multiple of 512 is 2^64 − 512; anything above cannot be rounded.
        assert_eq!(round_size(u64::MAX - 511), Some(u64::MAX - 511));
        assert_eq!(round_size(u64::MAX - 510), None);
        assert_eq!(round_size(u64::MAX), None);
        assert_eq!(block_extent(u64::MAX), u64::MAX);
        // Segments go in 2 MiB steps: 2^64 − 2 MiB is the last.
        assert_eq!(
            allocation_size(u64::MAX - (2 << 20) + 1),
            Some(u64::MAX - (2 << 20) + 1)
        );
        assert_eq!(allocation_size(u64::MAX - 511), None);
    }
}
