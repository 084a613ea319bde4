//! Allocator models replayed on a thread of their own while the rest of a load goes on
//! (the timeline, inference, the index), joined only when the caller needs them.

use super::{History, Model};
use std::thread::JoinHandle;

/// The models of a load: built, or still being replayed; with the device each is for, in
/// order (known before the replay ends).
pub struct Models {
    state: State,
    devices: Vec<String>,
}

enum State {
    Ready(Vec<Model>),
    Building(JoinHandle<Option<Vec<Model>>>),
}

impl Models {
    /// No models (the load did not ask for them).
    pub fn none() -> Models {
        Models::ready(Vec::new())
    }

    /// Models already built.
    pub fn ready(models: Vec<Model>) -> Models {
        Models {
            devices: models.iter().map(|m| m.history().device.clone()).collect(),
            state: State::Ready(models),
        }
    }

    /// Replays each history into its model: on a thread of its own when `threaded` (here if
    /// one cannot be started).
    pub fn build(histories: Vec<History>, threaded: bool) -> Models {
        if !threaded {
            return Models::ready(histories.into_iter().map(Model::build).collect());
        }
        let build = |h: Vec<History>| h.into_iter().map(Model::build).collect::<Vec<_>>();
        let devices = histories.iter().map(|h| h.device.clone()).collect();
        match crate::worker::spawn("memtide-model", histories, build) {
            Ok(handle) => Models {
                state: State::Building(handle),
                devices,
            },
            Err(h) => Models::ready(build(h.unwrap_or_default())),
        }
    }

    /// The models, waiting for their thread if it is still replaying (a thread that
    /// panicked gives none: the load goes on without an allocator view).
    pub fn wait(self) -> Vec<Model> {
        match self.state {
            State::Ready(m) => m,
            State::Building(h) => h.join().ok().flatten().unwrap_or_default(),
        }
    }

    /// The device each model is for (`History::device`), in the order [`Models::wait`]
    /// gives them.
    pub fn devices(&self) -> &[String] {
        &self.devices
    }

    /// Whether the models are still being replayed.
    pub fn building(&self) -> bool {
        matches!(self.state, State::Building(_))
    }
}

impl Default for Models {
    fn default() -> Models {
        Models::none()
    }
}

impl std::fmt::Debug for Models {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.state {
            State::Ready(m) => f.debug_tuple("Models").field(m).finish(),
            State::Building(_) => f.write_str("Models(building)"),
        }
    }
}
