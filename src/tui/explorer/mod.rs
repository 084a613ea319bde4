//! The explorer page (`memtide FILE`): its state, its reducer, the reducer steps it shares
//! with follow mode, follow mode's side of the live tail, and the OOM panel's scroll. Drawing is in `tui::ui`.

pub mod alloc;
pub mod follow;
pub mod nav;
pub mod oom;
pub mod state;
pub mod update;
pub mod whatif;

pub use state::{ExplorerState, FollowState, InspectState, LiveState, Screen, SearchState};
