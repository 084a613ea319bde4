//! Messages into `update`: input, resize, timer ticks and worker results (each worker reply
//! carries the generation id of its request, so stale replies are dropped).

use super::action::Action;
use super::device::{Device, FollowLoad};
use memtide_core::trace::AllocId;
use ratatui::crossterm::event::{KeyEvent, MouseEvent};
use std::sync::Arc;
use std::time::Instant;

/// Everything that can happen to the app.
#[derive(Debug)]
pub enum Msg {
    Key(KeyEvent),
    Mouse(MouseEvent),
    /// An action injected directly (tests, scripts).
    Action(Action),
    Resize {
        width: u16,
        height: u16,
    },
    /// Timer: samples load progress and expires status messages.
    Tick {
        now: Instant,
    },
    Loaded {
        gen: u64,
        result: Result<Vec<Arc<Device>>, String>,
    },
    /// A followed file was (re)loaded.
    FollowLoaded {
        gen: u64,
        result: Result<FollowLoad, String>,
    },
    /// The followed file changed.
    Tail {
        gen: u64,
        event: crate::follow::TailEvent,
        now: Instant,
    },
    LiveDone {
        gen: u64,
        result: Box<super::liveset::LiveResult>,
    },
    /// A `WriteFile` effect finished: the path written, or why not.
    Wrote {
        path: std::path::PathBuf,
        result: Result<(), String>,
    },
    /// The ranks overview's pool began reading file `file`.
    RankStarted {
        gen: u64,
        file: usize,
    },
    /// The ranks overview's pool finished file `file`.
    RankLoaded {
        gen: u64,
        file: usize,
        outcome: memtide_core::ranks::FileOutcome,
    },
    /// The what-if simulation finished: the overlay, or why not.
    WhatifDone {
        gen: u64,
        result: Result<Box<crate::tui::explorer::whatif::Overlay>, String>,
    },
    /// A device's allocator model finished replaying ([`super::effect::Effect::WaitModel`]):
    /// the allocator view waiting for it fills in. Asking again is harmless, so it carries no
    /// generation.
    ModelReady,
    /// A device's OOM explanations are there ([`super::effect::Effect::WaitOoms`]): the OOM
    /// panel drawn as a placeholder fills in. Harmless when repeated: no generation.
    OomsReady,
    SearchDone {
        gen: u64,
        /// Matching storages, biggest first.
        matches: Vec<AllocId>,
        /// How many unique strings matched.
        strings: usize,
    },
}
