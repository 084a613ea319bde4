//! The app state: composed of per-feature parts (viewport, live set, inspector, search),
//! mutated only by `update`. Nothing here does I/O.

use super::keymap::Mode;
use super::theme::{Glyphs, Theme};
use super::view::Viewport;
use memtide_core::analysis::live::{Group, LiveEntry};
use memtide_core::analysis::{global_peak, windows_of, Peak, Window};
use memtide_core::formats::{LoadOptions, Progress};
use memtide_core::index::Index;
use memtide_core::trace::{AllocId, Band, BandTotals, Bytes, MarkKind, Seq, Trace};
use rustc_hash::FxHashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How an explorer session ended (the command line maps it to an exit status).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Outcome {
    /// The user quit.
    #[default]
    Done,
    /// An input could not be read or compared (the error screen was shown).
    InputFailed,
}

/// One device's trace, indexed, with the facts every screen needs (computed once, off the
/// UI thread). Clone only happens when a followed file grows while a worker holds it.
#[derive(Debug, Clone)]
pub struct Device {
    pub trace: Trace,
    pub index: Index,
    pub peak: Option<Peak>,
    /// Step windows with their own peaks (for `{`/`}`).
    pub steps: Vec<Window>,
    /// Positions of step/phase marks (for `[`/`]`), sorted.
    pub mark_at: Vec<Seq>,
    /// Positions of OOM marks.
    pub oom_at: Vec<Seq>,
    /// Highest reserved bytes, if the source records reserved memory.
    pub reserved_peak: Option<Bytes>,
}

impl Device {
    pub fn new(trace: Trace, index: Index) -> Device {
        let peak = global_peak(&trace, &index);
        let mut d = Device {
            trace,
            index,
            peak,
            steps: Vec::new(),
            mark_at: Vec::new(),
            oom_at: Vec::new(),
            reserved_peak: None,
        };
        d.refresh_marks();
        d
    }

    /// Recomputes step windows, mark and OOM positions and the reserved peak (after appends).
    pub fn refresh_marks(&mut self) {
        let (trace, index) = (&self.trace, &self.index);
        self.steps = windows_of(trace, index, MarkKind::Step);
        let mut mark_at: Vec<Seq> = trace
            .marks
            .iter()
            .filter(|m| matches!(m.kind, MarkKind::Step | MarkKind::Phase))
            .map(|m| m.at)
            .collect();
        mark_at.dedup();
        self.mark_at = mark_at;
        self.oom_at = trace
            .marks
            .iter()
            .filter(|m| m.kind == MarkKind::Oom)
            .map(|m| m.at)
            .collect();
        self.reserved_peak = index.reserved_peak().map(|(b, _)| b);
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    pub fn last(&self) -> Seq {
        Seq(self.len().saturating_sub(1) as u64)
    }
}

/// What fills the screen.
#[derive(Debug)]
pub enum Screen {
    Loading(LoadState),
    Error(String),
    Ready,
}

/// A load in progress, sampled on ticks.
#[derive(Debug, Clone)]
pub struct LoadState {
    pub gen: u64,
    pub progress: Progress,
    pub done: u64,
    pub total: u64,
    pub started: Option<Instant>,
    pub elapsed: Duration,
}

/// How the live panel lists storages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupMode {
    List,
    ByBand,
    ByFrame,
}

/// Rows kept for the live list (the panel scrolls within them); totals cover all.
pub const LIVE_ROWS: usize = 1000;

/// The live set at the cursor, computed in `update`.
#[derive(Debug, Clone)]
pub struct LiveState {
    pub at: Seq,
    /// Number of live storages and their total.
    pub count: usize,
    pub total: Bytes,
    /// Bytes per band at the cursor (the header's breakdown).
    pub bands: BandTotals,
    pub rows: Vec<LiveEntry>,
    pub groups: Vec<Group>,
    pub group: GroupMode,
    pub selected: usize,
    pub offset: usize,
    /// A worker is computing the live set at `at` (huge sets); rows are from before.
    pub pending: bool,
    pub gen: u64,
}

impl Default for LiveState {
    fn default() -> Self {
        LiveState {
            at: Seq(0),
            count: 0,
            total: Bytes(0),
            bands: BandTotals::default(),
            rows: Vec::new(),
            groups: Vec::new(),
            group: GroupMode::List,
            selected: 0,
            offset: 0,
            pending: false,
            gen: 0,
        }
    }
}

impl LiveState {
    pub fn selected_entry(&self) -> Option<&LiveEntry> {
        if self.group == GroupMode::List {
            self.rows.get(self.selected)
        } else {
            None
        }
    }
    pub fn len(&self) -> usize {
        match self.group {
            GroupMode::List => self.rows.len(),
            _ => self.groups.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Tone of a piece of inspector text; the theme picks the style at draw time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    Text,
    Dim,
    Title,
    Warn,
    Band(Band),
}

/// One inspector line: spans of (text, tone).
pub type Line = Vec<(String, Tone)>;

/// The inspector of one storage.
#[derive(Debug, Clone)]
pub struct InspectState {
    pub id: AllocId,
    pub lines: Vec<Line>,
    pub scroll: usize,
}

/// Search prompt and results.
#[derive(Debug, Clone, Default)]
pub struct SearchState {
    pub query: String,
    pub gen: u64,
    pub pending: bool,
    /// Matching storages, biggest first.
    pub matches: Vec<AllocId>,
    pub set: FxHashSet<AllocId>,
    pub strings: usize,
    /// Index into `matches` of the one last jumped to.
    pub current: Option<usize>,
}

/// The whole explorer state.
#[derive(Debug)]
pub struct App {
    pub path: PathBuf,
    pub opts: LoadOptions,
    pub device_want: Option<String>,
    pub theme: Theme,
    pub glyphs: Glyphs,
    pub width: u16,
    pub height: u16,
    pub screen: Screen,
    pub devices: Vec<Arc<Device>>,
    pub current: usize,
    pub view: Viewport,
    pub live: LiveState,
    pub inspect: Option<InspectState>,
    pub search: SearchState,
    pub searching: bool,
    pub help: bool,
    /// Which bands the timeline draws.
    pub bands_shown: [bool; Band::COUNT],
    pub bands_cycle: usize,
    pub status: Option<String>,
    pub next_gen: u64,
    pub quit: bool,
    /// How the session ended: an input that could not be read is a failure.
    pub outcome: Outcome,
    pub dirty: bool,
    /// Effects asked for by helpers deep inside `update`; returned with its result.
    pub outbox: Vec<super::effect::Effect>,
    /// Live tail (`-f`): None when not following a file.
    pub follow: Option<super::follow::FollowState>,
    /// The cache lab screen, when shown instead of the explorer.
    pub lab: Option<Box<super::lab::LabState>>,
    /// The diff screen, when shown instead of the explorer.
    pub diff: Option<Box<super::diffview::DiffState>>,
}

impl App {
    pub fn new(path: PathBuf, opts: LoadOptions, theme: Theme, ascii: bool) -> App {
        let glyphs = Glyphs::pick(&theme, ascii);
        App {
            path,
            opts,
            device_want: None,
            theme,
            glyphs,
            width: 80,
            height: 24,
            screen: Screen::Error("nothing loaded yet".into()),
            follow: None,
            devices: Vec::new(),
            current: 0,
            view: Viewport::default(),
            live: LiveState::default(),
            inspect: None,
            search: SearchState::default(),
            searching: false,
            help: false,
            bands_shown: [true; Band::COUNT],
            bands_cycle: 0,
            status: None,
            next_gen: 1,
            quit: false,
            outcome: Outcome::Done,
            dirty: true,
            outbox: Vec::new(),
            lab: None,
            diff: None,
        }
    }

    pub fn device(&self) -> Option<&Arc<Device>> {
        match self.screen {
            Screen::Ready => self.devices.get(self.current),
            _ => None,
        }
    }

    pub fn mode(&self) -> Mode {
        if self.help {
            Mode::Help
        } else if self.searching {
            Mode::Search
        } else if self.inspect.is_some() {
            Mode::Inspect
        } else {
            Mode::Normal
        }
    }

    pub fn gen(&mut self) -> u64 {
        let g = self.next_gen;
        self.next_gen += 1;
        g
    }

    pub fn layout(&self) -> super::layout::Layout {
        super::layout::Layout::new(self.width, self.height, self.inspect.is_some())
    }

    /// Whether the app wants a redraw; clears the flag.
    pub fn take_dirty(&mut self) -> bool {
        std::mem::replace(&mut self.dirty, false)
    }
}
