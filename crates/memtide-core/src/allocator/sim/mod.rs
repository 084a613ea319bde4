//! What if: a model of PyTorch's `CUDACachingAllocator` (written from
//! `c10/cuda/CUDACachingAllocator.cpp`; each function cites the one it follows) that replays
//! a trace's allocations and frees under other settings (`expandable_segments`,
//! `max_split_size_mb`, `roundup_power2_divisions`, `garbage_collection_threshold`) and on a
//! device of a given capacity, and reports the reserved peak, segments, fragmentation and
//! where it would run out of memory. No terminal code.
//!
//! ```
//! use memtide_core::allocator::sim::{run, AllocConf, RunOptions, SimInput, SimOp};
//! // A 100 MiB tensor, freed, then a 102 MiB one (the batch grew by one).
//! let input = SimInput {
//!     ops: vec![
//!         SimOp::Alloc { size: 100 << 20, stream: 0, pool: 0 },
//!         SimOp::Free { alloc: 0 },
//!         SimOp::Alloc { size: 102 << 20, stream: 0, pool: 0 },
//!     ],
//!     at: vec![0, 1, 2],
//!     pools: vec![Default::default()],
//!     from_snapshot: true,
//!     ..SimInput::default()
//! };
//! // Defaults: the cached 100 MiB segment is too small; a second segment is made.
//! let d = run(&input, &AllocConf::default(), &RunOptions::default());
//! assert_eq!((d.reserved_peak, d.segments), (202 << 20, 2));
//! // Expandable segments: the one segment grows by a 20 MiB page.
//! let x = AllocConf::parse("expandable_segments:True").unwrap();
//! let e = run(&input, &x, &RunOptions::default());
//! assert_eq!((e.reserved_peak, e.segments), (120 << 20, 1));
//! ```

pub(crate) mod ceiling;
pub(crate) mod config;
pub(crate) mod engine;
pub(crate) mod input;
pub(crate) mod layout;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod series;
pub(crate) mod validate;

pub use ceiling::{derive as derive_ceiling, Ceiling, NO_CEILING};
pub use config::{AllocConf, ConfError};
pub use engine::{Engine, SegEvent, SegKind};
pub use input::{SimInput, SimOp};
pub use layout::{Layout, SeedBlock, SeedSegment};
pub use report::{input_for, recorded_conf, whatif, whatif_under, ModelCheck, Recorded, WhatIf};
pub use run::{run, RunOptions, RunResult};
pub use series::{reserved_series, stepped, ReservedSeries};
pub use validate::{recorded_peak, recorded_reserved, validate, Validation};
