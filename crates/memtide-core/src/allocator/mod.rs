//! The caching-allocator model: segments and blocks by address over time, replayed from a
//! snapshot's trace entries and anchored to its final `segments`, with checkpoints so the
//! state at any event is a copy plus a short replay; PyTorch's rounding and splitting rules
//! (the block each allocation holds, `extent`); the totals of
//! the final segments (`allocator_at_end`); and the OOM explanation.
//!
//! This module depends on no reader: `formats::snapshot` turns a decoded file into a
//! [`History`] per device (`Loaded::allocators`).
//!
//! ```
//! use memtide_core::allocator::{History, Entry, Op, Model};
//! let h = History {
//!     device: "cuda:0".into(),
//!     entries: vec![
//!         Entry { op: Op::SegmentAlloc, addr: 0x1000_0000, size: 2 << 20, place: 0 },
//!         Entry { op: Op::Alloc, addr: 0x1000_0000, size: 1000, place: 0 },
//!     ]
//!     .into(),
//!     ..History::default()
//! };
//! let m = Model::build(h);
//! let t = m.after(1).totals();
//! assert_eq!((t.reserved, t.allocated, t.free_in_reserve), (2 << 20, 1024, (2 << 20) - 1024));
//! ```

pub(crate) mod at_end;
pub(crate) mod block_map;
pub(crate) mod building;
pub(crate) mod by_address;
pub(crate) mod entries;
pub(crate) mod explain;
pub(crate) mod extent;
pub(crate) mod fixes;
pub(crate) mod pinners;
pub(crate) mod replay;
pub(crate) mod rounding;
pub mod sim;
pub(crate) mod state;

pub use at_end::{allocator_at_end, AllocatorAtEnd};
pub use building::Models;
pub use entries::Entries;
pub use explain::{explain, shown, OomExplanation, OomFacts, PoolFacts, Verdict};
pub use fixes::{Fix, FixCeiling, FixResult};
pub use pinners::Pinner;
pub use replay::{
    Entry, FinalBlock, FinalSegment, History, Model, Op, Place, ReplayReport, StatesAtOoms,
};
pub use rounding::PoolKind;
pub use state::{
    fragmentation, BlockState, BlockView, PoolId, PoolKey, PoolTotals, SegmentView, State, Totals,
};
