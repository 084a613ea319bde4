//! Analyses over an indexed trace: peaks, windows, live sets, timeline columns, the summary.
//! No terminal code.

pub mod boundary;
pub(crate) mod bounds;
pub mod columns;
pub mod cost;
pub mod diff;
pub mod external_split;
pub mod fair;
pub mod frames;
pub mod grown;
pub mod infer;
pub mod live;
pub(crate) mod methods;
pub(crate) mod oom;
pub mod parity;
pub(crate) mod peak;
pub mod persistent;
pub mod retained;
pub mod summary;
pub mod summary_json;
pub mod tree;
pub mod trend;
pub mod window_spec;
pub(crate) mod windows;
pub(crate) mod work;

pub use columns::{event_columns, time_columns, Axis, Column};
pub use live::{live_entries, LiveEntry};
pub use peak::{final_bytes, global_peak, window_peak, Peak};
pub use summary::Summary;
pub use windows::{all_windows, windows_of, Window, WindowKind};
