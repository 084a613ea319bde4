//! The explorer page's state (`memtide FILE`): the loaded devices and the parts of the
//! screen (viewport, live set, inspector, search, follow). Mutated only by its reducer.

use super::alloc::AllocView;
use crate::follow::WatchMode;
use crate::tui::details::Line;
use crate::tui::device::{Device, LoadState};
use crate::tui::keymap::Mode;
use crate::tui::layout::Layout;
use crate::tui::liveset::GroupMode;
use crate::tui::tree::TreeRow;
use crate::tui::view::Viewport;
use memtide_core::allocator::OomExplanation;
use memtide_core::analysis::{Group, LiveEntry, Persistent, TreeNode};
use memtide_core::formats::JsonlDecoder;
use memtide_core::open::OpenOptions;
use memtide_core::trace::{AllocId, Band, BandTotals, Bytes, Seq};
use rustc_hash::FxHashSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// What fills the screen.
#[derive(Debug)]
pub enum Screen {
    Loading(LoadState),
    Error(String),
    Ready,
}

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
    /// The persistent band split into params / grads / optimizer / buffers (header).
    pub persistent: Option<Persistent>,
    /// The stack tree of the live set (tree grouping).
    pub tree: Option<TreeNode>,
    /// The tree's visible rows (expanded nodes, filtered by the search query).
    pub tree_rows: Vec<TreeRow>,
    /// Paths of the expanded tree nodes (see `tui::tree`).
    pub expanded: FxHashSet<crate::tui::tree::TreePath>,
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
            persistent: None,
            tree: None,
            tree_rows: Vec::new(),
            expanded: FxHashSet::default(),
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
            GroupMode::Tree => self.tree_rows.len(),
            _ => self.groups.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

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

/// Follow-mode state (`memtide -f FILE`; the reducer side is `explorer::follow`).
#[derive(Debug)]
pub struct FollowState {
    pub mode: WatchMode,
    /// Keeping the newest events in sight (moving the cursor pauses; `F` resumes).
    pub on: bool,
    pub decoder: Option<Box<JsonlDecoder>>,
    pub appendable: bool,
    pub tail_gen: u64,
    /// A background reload in flight (its load generation).
    pub reload_gen: Option<u64>,
    /// Source index the cursor had before a reload.
    pub restore: Option<u64>,
    pub last_write: Option<Instant>,
    /// Events per second over the recent appends.
    pub rate: f64,
    pub(super) rate_since: Option<Instant>,
    pub(super) rate_events: u64,
    pub appended: u64,
    pub new_peak_until: Option<Instant>,
    pub(super) pending_flush: bool,
    /// Why following stopped (a bad appended line), if it did.
    pub error: Option<String>,
    pub missing: bool,
    /// Clock reading of the last tick (draw is pure: it reads time from here).
    pub now: Option<Instant>,
}

impl FollowState {
    pub fn new(mode: WatchMode) -> FollowState {
        FollowState {
            mode,
            on: true,
            decoder: None,
            appendable: false,
            tail_gen: 0,
            reload_gen: None,
            restore: None,
            last_write: None,
            rate: 0.0,
            rate_since: None,
            rate_events: 0,
            appended: 0,
            new_peak_until: None,
            pending_flush: false,
            error: None,
            missing: false,
            now: None,
        }
    }

    /// Whether the new-peak notice was lit at the last tick (for drawing).
    pub fn flashing_at_last_tick(&self) -> bool {
        match self.now {
            Some(now) => self.flashing(now),
            None => self.new_peak_until.is_some(),
        }
    }

    /// Whether the new-peak notice is lit at `now`.
    pub fn flashing(&self, now: Instant) -> bool {
        self.new_peak_until.is_some_and(|t| now < t)
    }

    /// The status-row text of follow mode (right-aligned by the caller).
    pub fn status_text(&self) -> String {
        let state = if self.error.is_some() {
            "✖ follow stopped".to_string()
        } else if self.reload_gen.is_some() {
            "↻ reloading".to_string()
        } else if self.on {
            "● FOLLOW".to_string()
        } else {
            "‖ paused (F)".to_string()
        };
        let rate = if self.rate > 0.0 {
            format!(" · {:.0} ev/s", self.rate)
        } else {
            String::new()
        };
        let ago = match (self.last_write, self.now) {
            (Some(w), Some(n)) => {
                format!(" · write {}s ago", n.saturating_duration_since(w).as_secs())
            }
            _ => " · no writes yet".to_string(),
        };
        format!("{state}{rate}{ago} ")
    }
}

/// The whole explorer page.
#[derive(Debug)]
pub struct ExplorerState {
    pub path: PathBuf,
    /// How the file is opened (reader options, `--capacity`, `--oom-message`).
    pub opts: OpenOptions,
    pub device_want: Option<String>,
    pub screen: Screen,
    pub devices: Vec<Arc<Device>>,
    pub current: usize,
    pub view: Viewport,
    pub live: LiveState,
    pub inspect: Option<InspectState>,
    pub search: SearchState,
    pub searching: bool,
    /// Which bands the timeline draws.
    pub bands_shown: [bool; Band::COUNT],
    pub bands_cycle: usize,
    /// Live tail (`-f`): None when not following a file.
    pub follow: Option<FollowState>,
    /// Times as the file's values (`T`) instead of relative to the trace's first event.
    pub absolute_time: bool,
    /// The OOM panel is pinned open (`x`): it shows the last OOM at or before the cursor;
    /// unpinned, it opens when the cursor is on an OOM.
    pub oom_pinned: bool,
    /// The OOM panel's scroll (`J`/`K`): which OOM (its index in `oom_at`) and the first
    /// body row shown; another OOM in the panel starts at its top.
    pub oom_scroll: (usize, usize),
    /// The allocator view (`s`), when open.
    pub alloc: Option<AllocView>,
    /// `--alloc-conf CONF`: the settings `w` simulates (None: the file's own, else
    /// PyTorch's defaults).
    pub whatif_conf: Option<memtide_core::allocator::sim::AllocConf>,
    /// The what-if overlay (`w`): simulating, or ready.
    pub whatif: Option<super::whatif::Whatif>,
    /// The budget view (`B`), when open.
    pub budget: Option<super::budget::BudgetView>,
    /// While the OOM panel waits for its explanations: the fix lists' replays as last
    /// sampled (ops replayed, ops in every replay started), shown in the panel.
    pub oom_replayed: Option<(u64, u64)>,
}

impl ExplorerState {
    pub fn new(path: PathBuf, opts: OpenOptions) -> ExplorerState {
        ExplorerState {
            path,
            opts,
            device_want: None,
            screen: Screen::Error("nothing loaded yet".into()),
            devices: Vec::new(),
            current: 0,
            view: Viewport::default(),
            live: LiveState::default(),
            inspect: None,
            search: SearchState::default(),
            searching: false,
            bands_shown: [true; Band::COUNT],
            bands_cycle: 0,
            follow: None,
            absolute_time: false,
            oom_pinned: false,
            oom_scroll: (0, 0),
            alloc: None,
            whatif_conf: None,
            whatif: None,
            budget: None,
            oom_replayed: None,
        }
    }

    /// The device shown, once loaded.
    pub fn device(&self) -> Option<&Arc<Device>> {
        match self.screen {
            Screen::Ready => self.devices.get(self.current),
            _ => None,
        }
    }

    /// Which keys are live (the help overlay is the app's, above this).
    pub fn mode(&self) -> Mode {
        if self.searching {
            Mode::Search
        } else if self.inspect.is_some() {
            Mode::Inspect
        } else if self.alloc.is_some() {
            Mode::Allocator
        } else {
            Mode::Normal
        }
    }

    /// The OOM explanations of `dev` as the screen may show them now. A loaded file's are
    /// computed behind the first screen (with their fix lists' replays): None until they are
    /// there, and the panel draws a placeholder meanwhile (`Effect::Wait` brings the
    /// redraw). A followed file's device changes in place on each append, so its
    /// explanations are computed here, when asked.
    pub fn ooms<'d>(&self, dev: &'d Device) -> Option<&'d [OomExplanation]> {
        match self.follow {
            Some(_) => Some(dev.ooms()),
            None => dev.ooms_if_ready(),
        }
    }

    /// Which OOM the panel shows (its index in the device's `oom_at`): the one at the
    /// cursor, else when pinned the last one at or before the cursor (the first when none).
    pub fn panel_oom(&self) -> Option<usize> {
        let dev = self.device()?;
        let at = self.view.cursor;
        if let Some(k) = dev.oom_at.iter().position(|&m| m == at) {
            return Some(k);
        }
        if !self.oom_pinned || dev.oom_at.is_empty() {
            return None;
        }
        Some(dev.oom_at.iter().rposition(|&m| m <= at).unwrap_or(0))
    }

    /// The first body row the OOM panel shows for OOM `k` (0 unless scrolled on it).
    pub fn oom_first_row(&self, k: usize) -> usize {
        match self.oom_scroll {
            (of, row) if of == k => row,
            _ => 0,
        }
    }

    /// The screen geometry at `width` × `height`: the allocator view and the budget view take
    /// the panel below the timeline; the OOM panel takes its top rows above the live list.
    pub fn layout(&self, width: u16, height: u16) -> Layout {
        let inspecting = self.inspect.is_some();
        let mut l = Layout::new(width, height, inspecting);
        if l.too_small {
            return l;
        }
        // The what-if overlay's legend takes the plot's top row (when the plot has rows).
        let legend = self.device().is_some_and(|d| {
            super::whatif::shown(self, d).is_some() || super::whatif::pending(self, d)
        });
        if legend && l.plot.height >= 6 {
            l.legend = ratatui::layout::Rect::new(0, l.plot.y, width, 1);
            for r in [&mut l.plot, &mut l.yaxis] {
                r.y += 1;
                r.height -= 1;
            }
        }
        if inspecting {
            return l;
        }
        if self.alloc.is_some() || self.budget.is_some() {
            l.panel = l.live;
            l.live.height = 0;
        } else if let Some(k) = self.panel_oom() {
            let need = self
                .device()
                .and_then(|d| self.ooms(d)?.get(k))
                .map_or(3, |x| crate::tui::layout::oom_panel_height(x, width));
            let body = l.live.height;
            // Keep a few live rows below when the body has room for them.
            let h = if body >= 12 { need.min(body - 4) } else { body };
            l.panel = ratatui::layout::Rect::new(l.live.x, l.live.y, l.live.width, h);
            l.live.y += h;
            l.live.height -= h;
        }
        l
    }
}
