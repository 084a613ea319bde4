//! Analyses over an indexed trace: peaks, windows, live sets, timeline columns, the summary.
//! No terminal code.

pub(crate) mod boundary;
pub(crate) mod bounds;
pub(crate) mod columns;
pub(crate) mod cost;
pub(crate) mod diff;
pub(crate) mod external_split;
pub(crate) mod fair;
pub(crate) mod frames;
pub(crate) mod grown;
pub(crate) mod infer;
pub(crate) mod lineage;
pub(crate) mod live;
pub(crate) mod methods;
pub(crate) mod oom;
pub(crate) mod parity;
pub(crate) mod peak;
pub(crate) mod persistent;
pub(crate) mod retained;
pub(crate) mod serving;
pub(crate) mod summary;
pub(crate) mod summary_json;
pub(crate) mod tree;
pub(crate) mod trend;
pub(crate) mod window_spec;
pub(crate) mod windows;
pub(crate) mod work;

pub use boundary::Boundary;
pub use columns::{event_columns, time_columns, Axis, Column};
pub use cost::{Side, StepTime};
pub use diff::{align, diff, Diff, Span, StepPair};
pub use external_split::ExternalSplit;
pub use fair::{fair, Fair};
pub use frames::{FrameRules, FrameView, StackFrames};
pub use grown::{owner_changes, Grown, OwnerChanges};
pub use infer::Rules;
pub use live::{entry_in, entry_with, group_by_band, live_entries, Group, LiveEntry};
pub use parity::Verdict;
pub use peak::{final_bytes, global_peak, window_peak, Peak};
pub use persistent::{persistent, Persistent};
pub use retained::{retained, Retained};
pub use serving::{serving_budget, Capture, Reconciled, ServingBudget, Stage, StageSource};
pub use summary::{
    document_json, external_by_source, names_text, table_ends, FixReplay, FoldedWindows,
    PeakReport, Summary, SummaryOptions, WindowReport, FIX_REPLAY_ENTRIES, WINDOW_ENDS,
};
pub use summary_json::{write_document, DocumentJson, Micros, PersistentJson};
pub use tree::{stack_tree, TreeFrames, TreeNode};
pub use trend::{trend, StepRow};
pub use window_spec::{WindowError, WindowSpec};
pub use windows::{all_windows, windows_of, Window, WindowKind};
