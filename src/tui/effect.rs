//! Side effects `update` asks for, as plain data; the runtime runs them (workers, terminal
//! writes) and feeds results back as `Msg`s.

use super::device::Device;
use memtide_core::formats::Progress;
use memtide_core::open::OpenOptions;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

#[derive(Debug)]
pub enum Effect {
    /// Read and index a file on a worker; reply `Msg::Loaded`.
    Load {
        gen: u64,
        path: PathBuf,
        opts: OpenOptions,
        progress: Progress,
    },
    /// Search names, categories and frames on a worker (matches live at `at`, the cursor,
    /// ranked first); reply `Msg::SearchDone`.
    Search {
        gen: u64,
        query: String,
        device: Arc<Device>,
        at: memtide_core::trace::Seq,
    },
    /// Compute a huge live set on a worker; reply `Msg::LiveDone`.
    Live {
        gen: u64,
        at: memtide_core::trace::Seq,
        group: super::liveset::GroupMode,
        device: Arc<Device>,
    },
    /// Read a file that will be followed: like `Load`, but JSONL keeps its decoder and byte
    /// offset so appends continue it; reply `Msg::FollowLoaded`. A file not there yet is
    /// waited for (`waiting` is set meanwhile, for the loading screen to say so).
    LoadFollow {
        gen: u64,
        path: PathBuf,
        opts: OpenOptions,
        progress: Progress,
        waiting: Arc<AtomicBool>,
    },
    /// Watch the file from `offset` (None: its current end) on a worker; replies `Msg::Tail`
    /// (stale generations are dropped, and their threads stop).
    Tail {
        gen: u64,
        path: PathBuf,
        offset: Option<u64>,
        appendable: bool,
        mode: crate::follow::WatchMode,
    },
    /// Read a job's rank files on a pool of `jobs` threads (0: every core), each into its
    /// compact row; reply `Msg::RankStarted` / `Msg::RankLoaded` per file as it goes.
    LoadRanks {
        gen: u64,
        files: Vec<memtide_core::ranks::RankFile>,
        opts: memtide_core::ranks::RankOptions,
        jobs: usize,
        progress: Vec<Progress>,
    },
    /// Replay the device through the caching-allocator model under `conf` (None: the
    /// file's own settings) on a worker; reply `Msg::WhatifDone`.
    Whatif {
        gen: u64,
        device: Arc<Device>,
        conf: Option<memtide_core::allocator::sim::AllocConf>,
    },
    /// Wait on a worker for a fact of `device` computed behind the first screen, so that no
    /// key or frame waits for it; reply `Msg::Ready(fact)`.
    Wait { device: Arc<Device>, fact: Behind },
    /// Put text on the clipboard via OSC 52.
    Copy(String),
    /// Write a file the user asked for (an exported picture) atomically, never over one of
    /// `inputs` (the trace, its side files, the theme file); reply `Msg::Wrote`.
    WriteFile {
        path: PathBuf,
        bytes: Vec<u8>,
        inputs: Vec<PathBuf>,
    },
    /// Leave the event loop.
    Quit,
}

/// A device's fact computed behind the first screen, which a page shows once it is there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Behind {
    /// The allocator model (replayed on the load's model thread): the allocator view.
    Model,
    /// The OOM explanations (their fix lists replayed on the load's warm thread): the OOM
    /// panel.
    Ooms,
}

impl Behind {
    /// Waits for it (computes it when nothing else is).
    pub fn wait(self, device: &Device) {
        match self {
            Behind::Model => {
                let _ = device.allocator();
            }
            Behind::Ooms => {
                let _ = device.ooms();
            }
        }
    }
}
