//! The timeline viewport: axis, visible range, cursor, and the cached peak-preserving columns
//! (recomputed by `update` when the range, size or data change; `draw` only paints them).

use super::device::Device;
use memtide_core::analysis::{event_columns, time_columns, Axis, Column};
use memtide_core::trace::{AllocId, Seq, Ts};

/// Per-column flags painted on the axis row.
pub const F_MARK: u8 = 1;
pub const F_OOM: u8 = 2;
pub const F_PEAK: u8 = 4;
pub const F_MATCH: u8 = 8;
pub const F_LIFETIME: u8 = 16;

/// Smallest zoom span on the event axis (events) and the time axis (ns).
const MIN_EVENTS: u64 = 8;
const MIN_NS: i64 = 1_000;

#[derive(Clone, Debug)]
pub struct Viewport {
    pub axis: Axis,
    /// Visible event range `[lo, hi]` (event axis).
    pub lo: u64,
    pub hi: u64,
    /// Visible time range `[t0, t1]` in ns (time axis).
    pub t0: i64,
    pub t1: i64,
    pub cursor: Seq,
    pub columns: Vec<Column>,
    pub flags: Vec<u8>,
    pub cursor_col: Option<usize>,
    /// Whole-trace columns for the minimap and the viewport's span on it.
    pub minimap: Vec<Column>,
    pub mini_lo: usize,
    pub mini_hi: usize,
    /// Top of the y scale (bytes).
    pub ymax: u64,
    /// Capacity drawn as a ceiling when it fits the scale.
    pub ceiling: Option<u64>,
    /// Nothing in the trace rises above 0 B (no peak, no reserve, no capacity): the plot is
    /// drawn empty, with no scale to label.
    pub flat: bool,
    /// The what-if overlay per column: the highest simulated reserve over the column's
    /// events (None: no overlay, an empty column, or past the simulated run's OOM).
    pub whatif: Vec<Option<u64>>,
    /// The column where the simulated run ran out of memory.
    pub whatif_oom_col: Option<usize>,
}

impl Default for Viewport {
    fn default() -> Self {
        Viewport {
            axis: Axis::Event,
            lo: 0,
            hi: 0,
            t0: 0,
            t1: 0,
            cursor: Seq(0),
            columns: Vec::new(),
            flags: Vec::new(),
            cursor_col: None,
            minimap: Vec::new(),
            mini_lo: 0,
            mini_hi: 0,
            ymax: 1,
            ceiling: None,
            flat: false,
            whatif: Vec::new(),
            whatif_oom_col: None,
        }
    }
}

/// Highlights to paint on the axis row besides marks.
pub struct Highlights<'a> {
    pub match_list: &'a [AllocId],
    pub lifetime: Option<AllocId>,
    /// The what-if overlay: simulated reserved bytes after each event, and where the
    /// simulated run ran out of memory.
    pub whatif: Option<(&'a [u64], Option<Seq>)>,
}

impl Viewport {
    /// A viewport over the whole trace with the cursor at `cursor`.
    pub fn whole(dev: &Device, cursor: Seq) -> Viewport {
        let mut v = Viewport {
            cursor,
            ..Viewport::default()
        };
        v.reset_range(dev);
        let top = dev.peak.map_or(0, |p| p.bytes.0);
        let top = top.max(dev.reserved_peak.map_or(0, |b| b.0));
        v.flat = top == 0 && dev.trace.capacity.is_none_or(|c| c.0 == 0);
        let top = top.max(1);
        // The capacity is drawn only when it does not squash the data into a sliver.
        v.ceiling = dev
            .trace
            .capacity
            .map(|c| c.0)
            .filter(|&c| c <= top / 4 * 5);
        v.ymax = top.max(v.ceiling.unwrap_or(0));
        v
    }

    fn reset_range(&mut self, dev: &Device) {
        self.lo = 0;
        self.hi = dev.last().0;
        (self.t0, self.t1) = time_bounds(dev);
    }

    /// Event span shown (events) or time span (ns), as f64 for zoom arithmetic.
    fn span(&self) -> f64 {
        match self.axis {
            Axis::Event => (self.hi - self.lo + 1) as f64,
            Axis::Time => (self.t1 - self.t0).max(1) as f64,
        }
    }

    /// Recomputes the columns, cursor column, flags and minimap for a plot `width` wide.
    pub fn recompute(&mut self, dev: &Device, width: usize, hl: &Highlights) {
        let (tr, ix) = (&dev.trace, &dev.index);
        if dev.is_empty() || width == 0 {
            self.columns.clear();
            self.flags.clear();
            self.minimap.clear();
            self.cursor_col = None;
            self.whatif.clear();
            self.whatif_oom_col = None;
            return;
        }
        self.columns = match self.axis {
            Axis::Event => event_columns(tr, ix, Seq(self.lo), Seq(self.hi), width),
            Axis::Time => time_columns(tr, ix, Ts(self.t0), Ts(self.t1), width),
        };
        if self.minimap.len() != width {
            self.minimap = event_columns(tr, ix, Seq(0), dev.last(), width);
        }
        self.cursor_col = self.col_of(self.cursor);
        let (a, b) = (self.first_seq(), self.last_seq());
        self.mini_lo = self.minimap.partition_point(|c| c.hi.0 < a.0);
        self.mini_hi = self
            .minimap
            .partition_point(|c| c.hi.0 < b.0)
            .min(width - 1);
        // Flags.
        self.flags = vec![0; width];
        for &m in &dev.mark_at {
            self.flag_range(m, m, F_MARK);
        }
        for &m in &dev.oom_at {
            self.flag_range(m, m, F_OOM);
        }
        // A peak of 0 B marks nothing (every column would show the same empty instant).
        if let Some(p) = dev.peak.filter(|p| p.bytes.0 > 0) {
            self.flag_range(p.at, p.at, F_PEAK);
        }
        for &id in hl.match_list.iter().take(100_000) {
            let end = tr
                .end(id)
                .map_or(dev.last(), |e| Seq(e.0.saturating_sub(1)));
            self.flag_range(tr.start(id), end, F_MATCH);
        }
        if let Some(id) = hl.lifetime {
            let end = tr
                .end(id)
                .map_or(dev.last(), |e| Seq(e.0.saturating_sub(1)));
            self.flag_range(tr.start(id), end, F_LIFETIME);
        }
        self.whatif_columns(hl.whatif);
    }

    /// The overlay's value per column: the highest simulated reserve over the column's
    /// events (peak-preserving, as the columns are); the column of the simulated OOM.
    fn whatif_columns(&mut self, w: Option<(&[u64], Option<Seq>)>) {
        self.whatif.clear();
        self.whatif_oom_col = None;
        let Some((series, oom)) = w else {
            return;
        };
        self.whatif = self
            .columns
            .iter()
            .map(|c| {
                if c.empty || c.lo > c.hi {
                    return None;
                }
                let hi = (c.hi.0 as usize).min(series.len().checked_sub(1)?);
                series.get(c.lo.idx()..=hi)?.iter().copied().max()
            })
            .collect();
        self.whatif_oom_col = oom.and_then(|at| self.col_of(at));
    }

    /// Sets `flag` on every column whose range overlaps `[a, b]`.
    fn flag_range(&mut self, a: Seq, b: Seq, flag: u8) {
        if b < a {
            return;
        }
        let first = self.columns.partition_point(|c| c.hi < a);
        for (i, c) in self.columns.iter().enumerate().skip(first) {
            if c.lo > b && c.lo <= c.hi {
                break;
            }
            if c.lo <= c.hi && c.lo <= b && c.hi >= a {
                self.flags[i] |= flag;
            }
        }
    }

    /// First and last positions covered by the view.
    pub fn first_seq(&self) -> Seq {
        self.columns
            .iter()
            .find(|c| c.lo <= c.hi)
            .map_or(Seq(self.lo), |c| c.lo)
    }
    pub fn last_seq(&self) -> Seq {
        self.columns.last().map_or(Seq(self.hi), |c| c.hi)
    }

    /// The column showing position `at`, if it is in view.
    pub fn col_of(&self, at: Seq) -> Option<usize> {
        let c = self.columns.partition_point(|c| c.hi < at);
        let col = self.columns.get(c)?;
        (col.lo <= at || col.lo > col.hi).then_some(c)
    }

    /// Scrolls (keeping the zoom) so that `at` is in view; centres it when it was outside.
    pub fn ensure_visible(&mut self, dev: &Device, at: Seq) {
        let last = dev.last().0;
        match self.axis {
            Axis::Event => {
                if at.0 < self.lo || at.0 > self.hi {
                    let span = self.hi - self.lo;
                    let lo = at.0.saturating_sub(span / 2).min(last.saturating_sub(span));
                    self.lo = lo;
                    self.hi = (lo + span).min(last);
                }
            }
            Axis::Time => {
                let t = dev.trace.ts(at).0;
                if t < self.t0 || t > self.t1 {
                    let span = self.t1 - self.t0;
                    let (first, lastt) = time_bounds(dev);
                    let t0 = (t - span / 2).min(lastt - span).max(first);
                    self.t0 = t0;
                    self.t1 = (t0 + span).min(lastt);
                }
            }
        }
    }

    /// Pans by `cols` columns (negative: left), clamped to the trace.
    pub fn pan(&mut self, dev: &Device, cols: i64, width: usize) {
        let step = self.span() / width.max(1) as f64 * cols as f64;
        match self.axis {
            Axis::Event => {
                let last = dev.last().0 as i64;
                let span = (self.hi - self.lo) as i64;
                let step = if step.abs() < 1.0 {
                    cols.signum()
                } else {
                    step as i64
                };
                let lo = (self.lo as i64 + step).clamp(0, (last - span).max(0));
                self.lo = lo as u64;
                self.hi = (lo + span).min(last) as u64;
            }
            Axis::Time => {
                let (first, lastt) = time_bounds(dev);
                let span = self.t1 - self.t0;
                let step = if step.abs() < 1.0 {
                    cols.signum()
                } else {
                    step as i64
                };
                let t0 = (self.t0 + step).clamp(first, (lastt - span).max(first));
                self.t0 = t0;
                self.t1 = (t0 + span).min(lastt);
            }
        }
    }

    /// Zooms by `factor` (< 1: in) around the cursor.
    pub fn zoom(&mut self, dev: &Device, factor: f64) {
        match self.axis {
            Axis::Event => {
                let n = dev.len() as f64;
                let span = (self.span() * factor).clamp(MIN_EVENTS.min(dev.len() as u64) as f64, n);
                let span = span.round() as u64;
                let c = self.cursor.0;
                let lo = c.saturating_sub(span / 2);
                let lo = lo.min((dev.len() as u64).saturating_sub(span));
                self.lo = lo;
                self.hi = (lo + span.max(1) - 1).min(dev.last().0);
            }
            Axis::Time => {
                let (first, lastt) = time_bounds(dev);
                let full = (lastt - first).max(1) as f64;
                let span = (self.span() * factor).clamp((MIN_NS as f64).min(full), full) as i64;
                let c = dev.trace.ts(self.cursor).0;
                let t0 = (c - span / 2).min(lastt - span).max(first);
                self.t0 = t0;
                self.t1 = (t0 + span).min(lastt);
            }
        }
    }

    /// Switches between the event and the time axis, keeping the visible stretch.
    pub fn toggle_axis(&mut self, dev: &Device) {
        let tr = &dev.trace;
        match self.axis {
            Axis::Event => {
                self.t0 = tr.ts(Seq(self.lo)).0;
                self.t1 = tr.ts(Seq(self.hi)).0.max(self.t0 + 1);
                self.axis = Axis::Time;
            }
            Axis::Time => {
                self.lo = tr.seq_at_time(Ts(self.t0)).map_or(0, |s| s.0);
                self.hi = tr
                    .seq_at_time(Ts(self.t1))
                    .map_or(dev.last().0, |s| s.0)
                    .max(self.lo);
                self.axis = Axis::Event;
            }
        }
    }

    /// Whether the whole trace is in view.
    pub fn is_whole(&self, dev: &Device) -> bool {
        match self.axis {
            Axis::Event => self.lo == 0 && self.hi >= dev.last().0,
            Axis::Time => {
                let (a, b) = time_bounds(dev);
                self.t0 <= a && self.t1 >= b
            }
        }
    }
}

fn time_bounds(dev: &Device) -> (i64, i64) {
    (
        dev.trace.timestamps().next().unwrap_or(0),
        dev.trace.timestamps().next_back().unwrap_or(0),
    )
}
