//! The allocator view's state and reducer steps (`s` in the explorer): the segments and
//! blocks of the caching allocator at the cursor's instant, replayed by the core's model
//! (`memtide_core::allocator::Model`, a checkpoint copy plus a short replay: ~1 ms, so it
//! runs inline), sorted, with one segment expanded into its blocks. Sources without a block
//! model keep `model: false` and the view says what is known.

use crate::tui::device::Device;
use memtide_core::allocator::{BlockState, SegmentView, Totals};
use memtide_core::trace::{AllocId, Seq};
use rustc_hash::FxHashMap;
use std::sync::Arc;

/// How the segment rows are ordered (`S` cycles).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocSort {
    /// Biggest segment first.
    Size,
    /// Most free bytes first.
    Free,
    /// Lowest address first.
    Address,
}

impl AllocSort {
    pub fn name(self) -> &'static str {
        match self {
            AllocSort::Size => "size",
            AllocSort::Free => "free bytes",
            AllocSort::Address => "address",
        }
    }

    fn next(self) -> AllocSort {
        match self {
            AllocSort::Size => AllocSort::Free,
            AllocSort::Free => AllocSort::Address,
            AllocSort::Address => AllocSort::Size,
        }
    }
}

/// One row of the view: a segment, or a block of the expanded segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocRow {
    Segment(usize),
    /// Segment index, block index.
    Block(usize, usize),
}

/// The allocator view at one instant.
#[derive(Clone, Debug)]
pub struct AllocView {
    /// The instant shown (the cursor when it was computed).
    pub at: Seq,
    /// Which loaded device it was computed from (a reload or `d` brings a new one).
    device: usize,
    /// Whether the source has a block model (snapshots); false: segments are unknown.
    pub model: bool,
    pub sort: AllocSort,
    /// Segments in `sort` order.
    pub segments: Vec<SegmentView>,
    pub totals: Option<Totals>,
    /// Address of the device's largest free block, if any block is free.
    pub largest_free: Option<u64>,
    /// The expanded segment (its address).
    pub expanded: Option<u64>,
    /// The storage of each allocated block of the expanded segment, by block address.
    pub owners: FxHashMap<u64, AllocId>,
    pub rows: Vec<AllocRow>,
    pub selected: usize,
    pub offset: usize,
    /// The device (as `device` names it) whose allocator model is still replaying: the view
    /// waits for it on a worker instead of blocking a key, and shows so.
    pub waiting: Option<usize>,
}

impl AllocView {
    /// An empty view (filled by [`refresh`]).
    pub fn new(model: bool) -> AllocView {
        AllocView {
            at: Seq(u64::MAX),
            device: 0,
            model,
            sort: AllocSort::Size,
            segments: Vec::new(),
            totals: None,
            largest_free: None,
            expanded: None,
            owners: FxHashMap::default(),
            rows: Vec::new(),
            selected: 0,
            offset: 0,
            waiting: None,
        }
    }

    /// The segment the selected row belongs to.
    pub fn selected_segment(&self) -> Option<&SegmentView> {
        match self.rows.get(self.selected)? {
            AllocRow::Segment(i) | AllocRow::Block(i, _) => self.segments.get(*i),
        }
    }

    /// Next sort order; keeps the selected segment selected.
    pub fn cycle_sort(&mut self) {
        let keep = self.selected_segment().map(|s| s.address);
        self.sort = self.sort.next();
        self.sort_segments();
        self.rebuild_rows(keep);
    }

    fn sort_segments(&mut self) {
        match self.sort {
            AllocSort::Size => self
                .segments
                .sort_by(|a, b| b.size.cmp(&a.size).then(a.address.cmp(&b.address))),
            AllocSort::Free => self
                .segments
                .sort_by(|a, b| b.free.cmp(&a.free).then(a.address.cmp(&b.address))),
            AllocSort::Address => self.segments.sort_by_key(|s| s.address),
        }
    }

    /// Rebuilds the rows (the expanded segment followed by its blocks) and selects the row
    /// of segment `keep` when given.
    fn rebuild_rows(&mut self, keep: Option<u64>) {
        self.rows.clear();
        for (i, s) in self.segments.iter().enumerate() {
            if keep == Some(s.address) {
                self.selected = self.rows.len();
            }
            self.rows.push(AllocRow::Segment(i));
            if self.expanded == Some(s.address) {
                for j in 0..s.blocks.len() {
                    self.rows.push(AllocRow::Block(i, j));
                }
            }
        }
        self.selected = self.selected.min(self.rows.len().saturating_sub(1));
    }

    /// Moves the selection by `d` rows.
    pub fn select(&mut self, d: i64) {
        let n = self.rows.len();
        if n == 0 {
            return;
        }
        let s = self.selected as i64 + d;
        self.selected = s.clamp(0, n as i64 - 1) as usize;
    }

    /// Keeps the selection inside `rows` visible rows.
    pub fn fix_scroll(&mut self, rows: usize) {
        let rows = rows.max(1);
        if self.selected < self.offset {
            self.offset = self.selected;
        } else if self.selected >= self.offset + rows {
            self.offset = self.selected + 1 - rows;
        }
        self.offset = self.offset.min(self.rows.len().saturating_sub(1));
    }

    /// Expands the selected segment (collapsing any other), or collapses it when it is the
    /// expanded one; the selection stays on the segment.
    pub fn toggle_expand(&mut self, dev: &Device) {
        let Some(addr) = self.selected_segment().map(|s| s.address) else {
            return;
        };
        self.expanded = if self.expanded == Some(addr) {
            None
        } else {
            Some(addr)
        };
        self.find_owners(dev);
        self.rebuild_rows(Some(addr));
    }

    /// The block of the selected row, if it is a block row.
    pub fn selected_block(&self) -> Option<(u64, BlockState)> {
        match self.rows.get(self.selected)? {
            AllocRow::Block(i, j) => {
                let b = self.segments.get(*i)?.blocks.get(*j)?;
                Some((b.address, b.state))
            }
            AllocRow::Segment(_) => None,
        }
    }

    /// Maps the expanded segment's active blocks to the storages live at the instant
    /// (a snapshot storage's source id is its block's address).
    fn find_owners(&mut self, dev: &Device) {
        self.owners.clear();
        let Some(seg) = self
            .expanded
            .and_then(|a| self.segments.iter().find(|s| s.address == a))
        else {
            return;
        };
        let (lo, hi) = (seg.address, seg.address.saturating_add(seg.size));
        let tr = &dev.trace;
        let at = Seq(self.at.0.min(dev.last().0));
        for id in dev.index.live_at_unsorted(tr, at) {
            let addr = tr.src_id(id).unwrap_or(0);
            if addr >= lo && addr < hi {
                self.owners.insert(addr, id);
            }
        }
    }
}

/// Recomputes the view at the cursor when it moved or the device changed (the selected
/// segment stays selected while it exists). A model still replaying is not waited for: the
/// view says so, and this returns true when the caller must now wait for it on a worker
/// ([`Effect::Wait`](crate::tui::effect::Effect::Wait)), which it did not already.
#[must_use]
pub fn refresh(view: &mut AllocView, dev: &Arc<Device>, at: Seq) -> bool {
    let id = Arc::as_ptr(dev) as usize;
    if !dev.allocator_settled() {
        let start = view.waiting != Some(id);
        view.waiting = Some(id);
        view.rows.clear();
        view.segments.clear();
        view.totals = None;
        view.largest_free = None;
        view.at = Seq(u64::MAX);
        return start;
    }
    view.waiting = None;
    if view.at == at && view.device == id {
        return false;
    }
    let keep = view.selected_segment().map(|s| s.address);
    view.at = at;
    view.device = id;
    let Some(model) = dev.allocator() else {
        view.model = false;
        view.segments.clear();
        view.totals = None;
        view.rows.clear();
        return false;
    };
    view.model = true;
    let st = if dev.is_empty() {
        model.at_start()
    } else {
        model.after(at.idx())
    };
    view.segments = st.segments();
    view.totals = Some(st.totals());
    view.largest_free = view
        .segments
        .iter()
        .flat_map(|s| s.blocks.iter())
        .filter(|b| b.state == BlockState::Free)
        .max_by(|a, b| a.size.cmp(&b.size).then(b.address.cmp(&a.address)))
        .map(|b| b.address);
    if let Some(e) = view.expanded {
        if !view.segments.iter().any(|s| s.address == e) {
            view.expanded = None;
        }
    }
    view.sort_segments();
    view.find_owners(dev);
    view.rebuild_rows(keep);
    false
}
