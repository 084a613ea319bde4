//! The ranks overview (`memtide DIR`, `memtide r0 r1 r2 …`): one row per rank of a
//! distributed job, filled in as each file finishes loading on a worker pool (keys work
//! meanwhile), sorted by rank or by peak, the spread in the header and the worst rank
//! highlighted. Enter opens a rank in the explorer and two marked ranks open in the diff
//! screen; Esc there comes back here (the page waits on the app's back stack, still taking
//! its rows). State, reducer and the moves between pages; drawing is `ui/ranks.rs`.
//!
//! The overview holds each rank's [`RankRow`] (figures and a short sparkline), never its
//! trace; an opened rank's explorer is kept after Esc while the kept ones fit
//! [`RanksState::cache_budget`], so going back to it is instant.

use super::action::RanksAction as A;
use super::app::{App, Page};
use super::device::LoadState;
use super::diffview::DiffState;
use super::effect::Effect;
use super::explorer::{self, ExplorerState, Screen};
use super::keymap::Mode;
use super::msg::Msg;
use super::shared::{Outcome, Shared};
use memtide_core::formats::Progress;
use memtide_core::ranks::{
    Discovered, FileOutcome, RankFile, RankOptions, RankRow, Skipped, Spread,
};
use std::time::Instant;

/// Rows of the header above the table (title, spread, column names).
pub const HEADER_ROWS: u16 = 3;
/// Rows below the table (the selected rank's line, skipped files, status).
pub const FOOTER_ROWS: u16 = 3;

/// What became of one file so far.
#[derive(Debug)]
pub enum Slot {
    /// Not started (the pool is busy with others).
    Waiting,
    Loading(LoadState),
    Row(Box<RankRow>),
    /// Not a trace: listed below the table.
    Skipped(String),
    /// Unreadable: its row shows the error.
    Failed(String),
}

/// How the rows are ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortBy {
    Rank,
    /// Highest peak first.
    Peak,
}

/// An explorer kept after Esc, and what it holds.
#[derive(Debug)]
pub struct Cached {
    pub slot: usize,
    pub bytes: u64,
    pub state: Box<ExplorerState>,
}

/// The whole overview.
#[derive(Debug)]
pub struct RanksState {
    /// The directory, or `N files`.
    pub title: String,
    pub files: Vec<RankFile>,
    pub slots: Vec<Slot>,
    pub progress: Vec<Progress>,
    /// Files discovery left out (subdirectories, names `--exclude` matched).
    pub skipped: Vec<Skipped>,
    pub opts: RankOptions,
    /// Threads reading files (0: every core).
    pub jobs: usize,
    pub gen: u64,
    pub sort: SortBy,
    /// Slot indices in display order (skipped files are not rows).
    pub order: Vec<usize>,
    /// The selected row's slot.
    pub cursor: usize,
    /// First row shown.
    pub offset: usize,
    /// Slots marked for the diff (at most two, in marking order).
    pub marked: Vec<usize>,
    pub spread: Option<Spread>,
    /// Files finished (row, skipped or failed).
    pub done: usize,
    pub cache: Vec<Cached>,
    /// Bytes of traces and indexes the kept explorers may hold.
    pub cache_budget: u64,
    /// When the reading started and ended (ticks), for the status line.
    pub started: Option<Instant>,
    pub finished: Option<std::time::Duration>,
}

impl RanksState {
    /// The overview of `d`'s files (`update::start` asks for the loads).
    pub fn new(title: String, d: Discovered, opts: RankOptions) -> RanksState {
        let n = d.files.len();
        let mut st = RanksState {
            title,
            slots: (0..n).map(|_| Slot::Waiting).collect(),
            progress: (0..n).map(|_| Progress::new()).collect(),
            files: d.files,
            skipped: d.skipped,
            opts,
            jobs: 0,
            gen: 0,
            sort: SortBy::Rank,
            order: Vec::new(),
            cursor: 0,
            offset: 0,
            marked: Vec::new(),
            spread: None,
            done: 0,
            cache: Vec::new(),
            cache_budget: default_cache_budget(),
            started: None,
            finished: None,
        };
        st.reorder();
        st.cursor = st.order.first().copied().unwrap_or(0);
        st
    }

    /// The row of slot `i`, once loaded.
    pub fn row(&self, i: usize) -> Option<&RankRow> {
        match self.slots.get(i) {
            Some(Slot::Row(r)) => Some(r),
            _ => None,
        }
    }

    /// The rows loaded so far.
    pub fn rows(&self) -> impl Iterator<Item = &RankRow> {
        self.slots.iter().filter_map(|s| match s {
            Slot::Row(r) => Some(&**r),
            _ => None,
        })
    }

    /// The slot of the worst rank (highest peak), once any has a peak.
    pub fn worst_slot(&self) -> Option<usize> {
        let s = self.spread?;
        Some(s.worst_order).filter(|&i| i < self.slots.len())
    }

    /// Files read so far and in all (skipped ones excluded from both).
    pub fn counts(&self) -> (usize, usize, usize) {
        let rows = self.rows().count();
        let failed = self
            .slots
            .iter()
            .filter(|s| matches!(s, Slot::Failed(_)))
            .count();
        let loading = self
            .slots
            .iter()
            .filter(|s| matches!(s, Slot::Waiting | Slot::Loading(_)))
            .count();
        (rows, failed, loading)
    }

    /// The rank a slot shows: its row's, else what its name says, else its position.
    pub fn rank_of(&self, i: usize) -> Option<u64> {
        match self.slots.get(i) {
            Some(Slot::Row(r)) => Some(r.rank),
            _ => self.files.get(i).and_then(|f| f.name_rank),
        }
    }

    /// Recomputes the display order (keeping the selected slot).
    pub fn reorder(&mut self) {
        let shown: Vec<usize> = (0..self.slots.len())
            .filter(|&i| !matches!(self.slots[i], Slot::Skipped(_)))
            .collect();
        let mut order = shown;
        let failed = |s: &Slot| matches!(s, Slot::Failed(_));
        let guess = |i: usize| self.rank_of(i).unwrap_or(self.files[i].order as u64);
        match self.sort {
            SortBy::Rank => order.sort_by_key(|&i| (failed(&self.slots[i]), guess(i), i)),
            SortBy::Peak => order.sort_by_key(|&i| {
                let peak = self.row(i).and_then(|r| r.peak);
                (
                    failed(&self.slots[i]),
                    peak.is_none(),
                    std::cmp::Reverse(peak.unwrap_or(0)),
                    guess(i),
                    i,
                )
            }),
        }
        self.order = order;
        if !self.order.contains(&self.cursor) {
            self.cursor = self.order.first().copied().unwrap_or(0);
        }
    }

    /// Position of the selected row in the display order.
    pub fn selected_pos(&self) -> usize {
        self.order
            .iter()
            .position(|&i| i == self.cursor)
            .unwrap_or(0)
    }

    /// Stops the loads in progress (quitting).
    pub fn cancel_loads(&self) {
        for (s, p) in self.slots.iter().zip(&self.progress) {
            if matches!(s, Slot::Waiting | Slot::Loading(_)) {
                p.cancel();
            }
        }
    }

    /// The page's keys.
    pub fn mode(&self) -> Mode {
        Mode::Ranks
    }

    /// Whether the session failed: every file was read and none is a rank.
    pub fn outcome(&self) -> Outcome {
        let (rows, _, loading) = self.counts();
        if loading == 0 && rows == 0 {
            Outcome::InputFailed
        } else {
            Outcome::Done
        }
    }

    /// Table rows that fit at terminal height `h`.
    pub fn body_rows(h: u16) -> usize {
        h.saturating_sub(HEADER_ROWS + FOOTER_ROWS).max(1) as usize
    }

    /// Keeps the selected row on screen.
    fn fix_scroll(&mut self, height: u16) {
        let rows = RanksState::body_rows(height);
        let pos = self.selected_pos();
        if pos < self.offset {
            self.offset = pos;
        } else if pos >= self.offset + rows {
            self.offset = pos + 1 - rows;
        }
        self.offset = self.offset.min(self.order.len().saturating_sub(rows));
    }
}

/// Kept explorers may hold a quarter of `MEMTIDE_MAX_MEMORY`, else 2 GiB.
fn default_cache_budget() -> u64 {
    memtide_core::budget::limit().map_or(2 << 30, |l| l / 4)
}

/// The first effects: read every file on the pool.
pub fn start(sh: &mut Shared, st: &mut RanksState) -> Vec<Effect> {
    st.gen = sh.gen();
    if st.files.is_empty() {
        sh.outcome = Outcome::InputFailed;
        return Vec::new();
    }
    vec![Effect::LoadRanks {
        gen: st.gen,
        files: st.files.clone(),
        opts: st.opts.clone(),
        jobs: st.jobs,
        progress: st.progress.clone(),
    }]
}

/// The overview's reducer for messages that are not input; `None`: nothing changed.
pub fn update(sh: &mut Shared, st: &mut RanksState, msg: Msg) -> Option<Vec<Effect>> {
    match msg {
        Msg::Resize { height, .. } => st.fix_scroll(height),
        Msg::Tick { now } => {
            let started = *st.started.get_or_insert(now);
            let mut busy = false;
            for s in &mut st.slots {
                if let Slot::Loading(l) = s {
                    l.sample(now);
                    busy = true;
                }
            }
            if st.done == st.slots.len() && st.finished.is_none() {
                st.finished = Some(now.saturating_duration_since(started));
                return Some(Vec::new());
            }
            if !busy {
                return None;
            }
        }
        Msg::RankStarted { gen, file } if gen == st.gen => {
            if let (Some(s), Some(p)) = (st.slots.get_mut(file), st.progress.get(file)) {
                *s = Slot::Loading(LoadState::new(gen, p.clone()));
            }
        }
        Msg::RankLoaded { gen, file, outcome } if gen == st.gen => {
            let s = st.slots.get_mut(file)?;
            *s = match outcome {
                FileOutcome::Row(r) => Slot::Row(r),
                FileOutcome::Skipped(why) => Slot::Skipped(why),
                FileOutcome::Failed(e) => Slot::Failed(e),
            };
            st.done += 1;
            st.spread = Spread::of(st.rows());
            st.reorder();
            st.fix_scroll(sh.height);
            if st.done == st.slots.len() {
                sh.outcome = st.outcome();
            }
        }
        _ => return None,
    }
    Some(Vec::new())
}

/// One of the overview's actions. Takes the app: opening a rank or a diff swaps the page.
pub fn action(app: &mut App, a: A) -> Vec<Effect> {
    let Page::Ranks(st) = &mut app.page else {
        return Vec::new();
    };
    let sh = &mut app.shared;
    sh.status = None;
    let n = st.order.len();
    let pos = st.selected_pos();
    let page = RanksState::body_rows(sh.height);
    let goto = |st: &mut RanksState, p: usize| {
        if let Some(&i) = st.order.get(p.min(n.saturating_sub(1))) {
            st.cursor = i;
        }
    };
    match a {
        A::Up => goto(st, pos.saturating_sub(1)),
        A::Down => goto(st, pos + 1),
        A::PageUp => goto(st, pos.saturating_sub(page)),
        A::PageDown => goto(st, pos + page),
        A::Home => goto(st, 0),
        A::End => goto(st, n.saturating_sub(1)),
        A::Worst => match st.worst_slot() {
            Some(i) => st.cursor = i,
            None => sh.status = Some("no rank has a peak yet".into()),
        },
        A::Sort => {
            st.sort = match st.sort {
                SortBy::Rank => SortBy::Peak,
                SortBy::Peak => SortBy::Rank,
            };
            st.reorder();
            sh.status = Some(match st.sort {
                SortBy::Rank => "sorted by rank".into(),
                SortBy::Peak => "sorted by peak, highest first".into(),
            });
        }
        A::Mark => {
            let i = st.cursor;
            if let Some(k) = st.marked.iter().position(|&m| m == i) {
                st.marked.remove(k);
            } else if st.row(i).is_some_and(|r| !r.from_summary) {
                st.marked.push(i);
                if st.marked.len() > 2 {
                    st.marked.remove(0);
                }
                if st.marked.len() == 2 {
                    sh.status = Some("two ranks marked: Enter or d opens their diff".into());
                }
            } else {
                sh.status = Some(cannot_open(st, i));
            }
        }
        A::Unmark => st.marked.clear(),
        A::Open => {
            if st.marked.len() == 2 {
                return open_diff(app);
            }
            return open_rank(app);
        }
        A::Diff => return open_diff(app),
        A::Help => sh.help = true,
        A::ClickAt { row, .. } => {
            let y = row.saturating_sub(HEADER_ROWS) as usize;
            if row >= HEADER_ROWS && y < page {
                if let Some(&i) = st.order.get(st.offset + y) {
                    st.cursor = i;
                }
            }
        }
    }
    st.fix_scroll(sh.height);
    Vec::new()
}

/// Why slot `i` cannot be opened.
fn cannot_open(st: &RanksState, i: usize) -> String {
    match st.slots.get(i) {
        Some(Slot::Row(r)) if r.from_summary => format!(
            "{} is a summary file: no trace to open here (open the rank's trace where it is)",
            r.file_name()
        ),
        Some(Slot::Failed(e)) => format!("unreadable: {e}"),
        Some(Slot::Waiting | Slot::Loading(_)) => "still loading".into(),
        _ => "nothing to open".into(),
    }
}

/// Enter: the selected rank in the explorer (the kept one when there is one).
fn open_rank(app: &mut App) -> Vec<Effect> {
    let Page::Ranks(st) = &mut app.page else {
        return Vec::new();
    };
    let sh = &mut app.shared;
    let i = st.cursor;
    let Some(row) = st.row(i).filter(|r| !r.from_summary) else {
        sh.status = Some(cannot_open(st, i));
        return Vec::new();
    };
    let label = format!("rank {} · {}", row.rank, row.file_name());
    let path = row.file.clone();
    let (mut ex, fresh) = match st.cache.iter().position(|c| c.slot == i) {
        Some(k) => (st.cache.remove(k).state, false),
        None => {
            let mut ex = Box::new(ExplorerState::new(path, st.opts.open_options()));
            ex.device_want = st.opts.device.clone();
            (ex, true)
        }
    };
    let fx = if fresh {
        explorer::update::start(sh, &mut ex)
    } else {
        let (width, height) = (sh.width, sh.height);
        explorer::update::update(sh, &mut ex, Msg::Resize { width, height }).unwrap_or_default()
    };
    sh.status = Some(format!("{label} · Esc: back to the ranks overview"));
    push(app, Page::Explorer(ex));
    fx
}

/// `d` (or Enter with two marked): the two marked ranks in the diff screen.
fn open_diff(app: &mut App) -> Vec<Effect> {
    let Page::Ranks(st) = &mut app.page else {
        return Vec::new();
    };
    let sh = &mut app.shared;
    let pair: Vec<&RankRow> = st.marked.iter().filter_map(|&i| st.row(i)).collect();
    let [a, b] = pair.as_slice() else {
        sh.status = Some("mark two ranks with Space, then d (or Enter) opens their diff".into());
        return Vec::new();
    };
    let label = format!("A = rank {}, B = rank {}", a.rank, b.rank);
    let mut d = Box::new(DiffState::new(
        a.file.clone(),
        b.file.clone(),
        st.opts.open_options(),
    ));
    d.device_want = st.opts.device.clone();
    st.marked.clear();
    let fx = super::diffview::start(sh, &mut d);
    sh.status = Some(format!("{label} · Esc: back to the ranks overview"));
    push(app, Page::Diff(d));
    fx
}

/// Shows `page`, keeping the overview on the back stack.
fn push(app: &mut App, page: Page) {
    let overview = std::mem::replace(&mut app.page, page);
    app.back.push(overview);
}

/// Whether Esc on the page shown means "back to the overview": the page was opened from it
/// and has nothing of its own to close (an inspector, a search, the help overlay).
pub fn esc_goes_back(app: &App) -> bool {
    if app.shared.help || !matches!(app.back.last(), Some(Page::Ranks(_))) {
        return false;
    }
    match &app.page {
        Page::Explorer(ex) => match ex.screen {
            Screen::Loading(_) | Screen::Error(_) => true,
            Screen::Ready => {
                ex.mode() == Mode::Normal && ex.inspect.is_none() && ex.search.query.is_empty()
            }
        },
        // Esc closes the diff's fair-comparison panel first.
        Page::Diff(st) => !st.fair_open,
        _ => false,
    }
}

/// Back to the overview: the explorer is kept (within the budget), loads in flight are
/// cancelled.
pub fn back(app: &mut App) -> Vec<Effect> {
    if !matches!(app.back.last(), Some(Page::Ranks(_))) {
        return Vec::new();
    }
    let Some(overview) = app.back.pop() else {
        return Vec::new();
    };
    let left = std::mem::replace(&mut app.page, overview);
    let Page::Ranks(st) = &mut app.page else {
        return Vec::new();
    };
    match left {
        Page::Explorer(ex) => match &ex.screen {
            Screen::Ready => keep(st, ex),
            Screen::Loading(l) => l.progress.cancel(),
            Screen::Error(_) => {}
        },
        Page::Diff(d) => d.cancel_loads(),
        _ => {}
    }
    let sh = &mut app.shared;
    sh.status = None;
    sh.outcome = if st.done == st.slots.len() {
        st.outcome()
    } else {
        Outcome::Done
    };
    st.fix_scroll(sh.height);
    Vec::new()
}

/// Keeps an explorer that was opened from slot `i` for a quick return, evicting the oldest
/// kept ones beyond the budget (one that alone exceeds it is not kept).
fn keep(st: &mut RanksState, ex: Box<ExplorerState>) {
    let Some(slot) = st
        .files
        .iter()
        .position(|f| f.path == ex.path)
        .filter(|&i| st.row(i).is_some())
    else {
        return;
    };
    let bytes: u64 = ex
        .devices
        .iter()
        .map(|d| (d.trace.heap_bytes() + d.index.heap_bytes()) as u64)
        .sum();
    if bytes > st.cache_budget {
        return;
    }
    st.cache.retain(|c| c.slot != slot);
    st.cache.push(Cached {
        slot,
        bytes,
        state: ex,
    });
    while st.cache.iter().map(|c| c.bytes).sum::<u64>() > st.cache_budget {
        st.cache.remove(0);
    }
}

/// A rank message for the overview wherever it is: shown, or waiting under a rank's
/// explorer or diff.
pub fn deliver(app: &mut App, msg: Msg) -> Option<Vec<Effect>> {
    let sh = &mut app.shared;
    if let Page::Ranks(st) = &mut app.page {
        return update(sh, st, msg);
    }
    for p in app.back.iter_mut().rev() {
        if let Page::Ranks(st) = p {
            // Behind another page: the outcome is the shown page's until Esc.
            let outcome = sh.outcome;
            let r = update(sh, st, msg);
            sh.outcome = outcome;
            return r;
        }
    }
    None
}
