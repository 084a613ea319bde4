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
    /// A fact computed behind the first screen is there ([`super::effect::Effect::Wait`]):
    /// the allocator view or the OOM panel that waited for it fills in. Harmless when
    /// repeated, so it carries no generation.
    Ready(super::effect::Behind),
    SearchDone {
        gen: u64,
        /// Matching storages, biggest first.
        matches: Vec<AllocId>,
        /// How many unique strings matched.
        strings: usize,
    },
}
