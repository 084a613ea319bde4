//! The app: the state every page shares ([`Shared`]) and the page on screen ([`Page`], each
//! with its own state and reducer). Mutated only by `update`; nothing here does I/O.

use super::diffview::DiffState;
use super::explorer::ExplorerState;
use super::keymap::Mode;
use super::lab::LabState;
use super::ranks::RanksState;
use super::theme::Theme;
use memtide_core::open::OpenOptions;
use std::path::PathBuf;

pub use super::device::{Device, LoadState};
pub use super::explorer::{InspectState, LiveState, Screen, SearchState};
pub use super::liveset::{GroupMode, LIVE_ROWS};
pub use super::shared::{Outcome, Shared};

/// The page on screen; each has its own state, reducer (`update` dispatches on this) and
/// drawing. The allocator view and the ranks overview are the next pages to come here.
#[derive(Debug)]
pub enum Page {
    /// `memtide FILE`: one trace's timeline, live set, inspector and search.
    Explorer(Box<ExplorerState>),
    /// `memtide diff A B`, `memtide A B`: two runs aligned by steps.
    Diff(Box<DiffState>),
    /// `memtide lab`: the cache lab.
    Lab(Box<LabState>),
    /// `memtide DIR`, `memtide r0 r1 r2 …`: one row per rank of a distributed job.
    Ranks(Box<RanksState>),
}

/// The whole app state.
#[derive(Debug)]
pub struct App {
    pub shared: Shared,
    pub page: Page,
    /// Pages to return to with Esc (the ranks overview under a rank's explorer or diff).
    pub back: Vec<Page>,
}

impl App {
    /// An app showing the explorer on `path` (`update::start` asks for the load).
    pub fn new(path: PathBuf, opts: OpenOptions, theme: Theme, ascii: bool) -> App {
        App {
            back: Vec::new(),
            shared: Shared::new(theme, ascii),
            page: Page::Explorer(Box::new(ExplorerState::new(path, opts))),
        }
    }

    /// An app showing the diff of `a` and `b` (`update::start` asks for both loads).
    pub fn new_diff(a: PathBuf, b: PathBuf, opts: OpenOptions, theme: Theme, ascii: bool) -> App {
        App {
            back: Vec::new(),
            shared: Shared::new(theme, ascii),
            page: Page::Diff(Box::new(DiffState::new(a, b, opts))),
        }
    }

    /// An app showing the cache lab (no file, no load).
    pub fn new_lab(capacity: usize, stride: u64, theme: Theme, ascii: bool) -> App {
        App {
            back: Vec::new(),
            shared: Shared::new(theme, ascii),
            page: Page::Lab(Box::new(LabState::new(capacity, stride))),
        }
    }

    /// An app showing the ranks overview (`update::start` asks for the loads).
    pub fn new_ranks(st: RanksState, theme: Theme, ascii: bool) -> App {
        App {
            back: Vec::new(),
            shared: Shared::new(theme, ascii),
            page: Page::Ranks(Box::new(st)),
        }
    }

    /// The ranks overview's state, when it is the page shown.
    pub fn ranks(&self) -> Option<&RanksState> {
        match &self.page {
            Page::Ranks(r) => Some(r),
            _ => None,
        }
    }

    /// The explorer's state, when it is the page shown.
    pub fn explorer(&self) -> Option<&ExplorerState> {
        match &self.page {
            Page::Explorer(e) => Some(e),
            _ => None,
        }
    }

    pub fn explorer_mut(&mut self) -> Option<&mut ExplorerState> {
        match &mut self.page {
            Page::Explorer(e) => Some(e),
            _ => None,
        }
    }

    /// The diff screen's state, when it is the page shown.
    pub fn diff(&self) -> Option<&DiffState> {
        match &self.page {
            Page::Diff(d) => Some(d),
            _ => None,
        }
    }

    pub fn diff_mut(&mut self) -> Option<&mut DiffState> {
        match &mut self.page {
            Page::Diff(d) => Some(d),
            _ => None,
        }
    }

    /// The lab's state, when it is the page shown.
    pub fn lab(&self) -> Option<&LabState> {
        match &self.page {
            Page::Lab(l) => Some(l),
            _ => None,
        }
    }

    /// The page's own key mode, ignoring the help overlay (mouse bindings come from it).
    pub fn page_mode(&self) -> Mode {
        match &self.page {
            Page::Explorer(e) => e.mode(),
            Page::Diff(_) => Mode::Diff,
            Page::Lab(_) => Mode::Lab,
            Page::Ranks(r) => r.mode(),
        }
    }

    /// Which keys are live: the help overlay's, else the page's.
    pub fn mode(&self) -> Mode {
        if self.shared.help {
            Mode::Help
        } else {
            self.page_mode()
        }
    }

    /// Whether the app wants a redraw; clears the flag.
    pub fn take_dirty(&mut self) -> bool {
        std::mem::replace(&mut self.shared.dirty, false)
    }
}
