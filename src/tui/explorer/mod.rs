//! The explorer page (`memtide FILE`): its state, its reducer, the reducer steps it shares
//! with follow mode, follow mode's side of the live tail, the OOM panel's scroll and the budget view. Drawing is in `tui::ui`.

pub mod alloc;
pub mod budget;
pub mod follow;
pub mod nav;
pub mod oom;
pub mod state;
pub mod update;
pub mod whatif;

pub use state::{ExplorerState, FollowState, InspectState, LiveState, Screen, SearchState};
