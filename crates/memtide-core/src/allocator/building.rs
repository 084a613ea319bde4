//! Allocator models replayed on a thread of their own, joined only when the caller needs
//! them. A load holds the histories unreplayed until its first screen's work is done (the
//! timeline, inference, the index: the replay would share their second core) and then
//! starts the thread ([`Models::start`]); asking for the models first replays them then.

use super::{History, Model};
use std::thread::JoinHandle;

/// The models of a load: built, being replayed, or held to be replayed once started; with
/// the device each is for, in order (known before the replay ends).
pub struct Models {
    state: State,
    devices: Vec<String>,
}

enum State {
    Ready(Vec<Model>),
    /// Histories to replay on a thread of their own once started.
    Held(Vec<History>),
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
        let mut m = Models::held(histories, threaded);
        m.start();
        m
    }

    /// The models of `histories`, replayed on a thread of their own once [`Models::start`]
    /// is called (or here, now, when not `threaded`).
    pub fn held(histories: Vec<History>, threaded: bool) -> Models {
        if !threaded {
            return Models::ready(replay_all(histories));
        }
        Models {
            devices: histories.iter().map(|h| h.device.clone()).collect(),
            state: State::Held(histories),
        }
    }

    /// Starts replaying held histories on a thread of their own (here if one cannot be
    /// started); models built or already replaying are left as they are.
    pub fn start(&mut self) {
        self.state = match std::mem::replace(&mut self.state, State::Ready(Vec::new())) {
            State::Held(histories) => {
                match crate::worker::spawn("memtide-model", histories, replay_all) {
                    Ok(handle) => State::Building(handle),
                    Err(h) => State::Ready(replay_all(h.unwrap_or_default())),
                }
            }
            other => other,
        };
    }

    /// The models, waiting for their thread if it is still replaying, replaying them here
    /// if they were never started (a thread that panicked gives none: the load goes on
    /// without an allocator view).
    pub fn wait(self) -> Vec<Model> {
        match self.state {
            State::Ready(m) => m,
            State::Held(h) => replay_all(h),
            State::Building(h) => h.join().ok().flatten().unwrap_or_default(),
        }
    }

    /// The device each model is for (`History::device`), in the order [`Models::wait`]
    /// gives them.
    pub fn devices(&self) -> &[String] {
        &self.devices
    }

    /// Whether [`Models::wait`] would answer at once: built, or their thread done (held
    /// models, never started, are not).
    pub fn finished(&self) -> bool {
        match &self.state {
            State::Ready(_) => true,
            State::Held(_) => false,
            State::Building(h) => h.is_finished(),
        }
    }

    /// Whether the models are still to be replayed or being replayed.
    pub fn building(&self) -> bool {
        matches!(self.state, State::Building(_) | State::Held(_))
    }
}

/// Each history replayed into its model, in order.
fn replay_all(histories: Vec<History>) -> Vec<Model> {
    histories.into_iter().map(Model::build).collect()
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
            State::Held(_) => f.write_str("Models(held)"),
            State::Building(_) => f.write_str("Models(building)"),
        }
    }
}
