//! The diff screen (`memtide diff A B`, `memtide A B`): loads both files on workers, then
//! aligns the two timelines by step marks (each aligned step gets the same horizontal span in
//! both; by event index over the whole width when either run has no steps), on one y scale,
//! with one cursor column shared by both. State, geometry and reducer; drawing is in
//! `ui/diff.rs`.

use super::action::DiffAction as A;
use super::device::{pick_device, Device, LoadState};
use super::effect::Effect;
use super::fmt;
use super::msg::Msg;
use super::shared::{Outcome, Shared};
use memtide_core::analysis::{event_columns, Column, Diff};
use memtide_core::formats::Progress;
use memtide_core::open::OpenOptions;
use memtide_core::trace::{BandTotals, Bytes, Seq};
use ratatui::layout::Rect;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

/// One of the two runs.
#[derive(Debug)]
pub struct Side {
    pub path: PathBuf,
    /// Set while the file loads.
    pub load: Option<LoadState>,
    pub dev: Option<Arc<Device>>,
}

impl Side {
    fn new(path: PathBuf) -> Side {
        Side {
            path,
            load: None,
            dev: None,
        }
    }

    /// The file name shown in headers.
    pub fn name(&self) -> String {
        self.path.file_name().map_or_else(
            || self.path.display().to_string(),
            |f| f.to_string_lossy().into(),
        )
    }
}

/// One aligned span of the plot: the same step of both runs (or what precedes the first
/// step, or the whole run when there are no steps).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub name: String,
    /// Plot columns `[x0, x1)`.
    pub x0: usize,
    pub x1: usize,
    /// Each run's event range drawn in the span (None: the run lacks this step).
    pub a: Option<(Seq, Seq)>,
    pub b: Option<(Seq, Seq)>,
    /// Row of the per-step table (None for the part before the first step).
    pub step: Option<usize>,
}

/// The whole diff screen state.
#[derive(Debug)]
pub struct DiffState {
    pub a: Side,
    pub b: Side,
    pub opts: OpenOptions,
    pub device_want: Option<String>,
    pub error: Option<String>,
    pub diff: Option<Diff>,
    pub segments: Vec<Segment>,
    /// Columns of each run over the plot width (empty columns where a run has no data).
    pub cols_a: Vec<Column>,
    pub cols_b: Vec<Column>,
    /// Plot columns holding each run's global peak.
    pub peak_col_a: Option<usize>,
    pub peak_col_b: Option<usize>,
    /// The shared y scale: the higher of the two peaks.
    pub ymax: u64,
    /// The cursor column (both plots).
    pub cursor: usize,
    /// Position in `diff.most_different` of the last `m` jump.
    pub most: Option<usize>,
    /// Parity, boundaries, what the change bought and cost (set with `diff`).
    pub fair: Option<memtide_core::analysis::Fair>,
    /// Whether the fair-comparison panel (`f`) covers the plots.
    pub fair_open: bool,
    /// The panel's first row shown.
    pub fair_scroll: usize,
}

impl DiffState {
    /// The diff of `a` and `b`, before loading (`start` asks for both loads).
    pub fn new(a: PathBuf, b: PathBuf, opts: OpenOptions) -> DiffState {
        DiffState {
            a: Side::new(a),
            b: Side::new(b),
            opts,
            device_want: None,
            error: None,
            diff: None,
            segments: Vec::new(),
            cols_a: Vec::new(),
            cols_b: Vec::new(),
            peak_col_a: None,
            peak_col_b: None,
            ymax: 1,
            cursor: 0,
            most: None,
            fair: None,
            fair_open: false,
            fair_scroll: 0,
        }
    }

    /// Stops the loads still in progress (quitting, or the other file failed).
    pub fn cancel_loads(&self) {
        for l in [&self.a.load, &self.b.load].into_iter().flatten() {
            l.progress.cancel();
        }
    }
}

/// Screen geometry shared by the reducer (clicks, widths) and the drawing.
///
/// ```text
/// header   3 rows  files · peaks · cursor readout
/// A        ~30 %   y labels | plot
/// axis A   1       steps ┴, cursor ▲
/// B        ~30 %   y labels | plot (same scale)
/// axis B   1       step names
/// panel    rest    bands at each one's peak | per-step table
/// status   1
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiffLayout {
    pub header: Rect,
    pub yaxis_a: Rect,
    pub plot_a: Rect,
    pub axis_a: Rect,
    pub yaxis_b: Rect,
    pub plot_b: Rect,
    pub axis_b: Rect,
    pub bands: Rect,
    pub steps: Rect,
    pub status: Rect,
}

impl DiffLayout {
    /// For a terminal of at least `layout::MIN_W` × `layout::MIN_H`.
    pub fn new(width: u16, height: u16) -> DiffLayout {
        let w = width;
        let header_h = 3u16.min(height);
        let rest = height.saturating_sub(header_h + 1);
        // The panel wants its header, five bands and the total (7 rows); plots get the rest.
        let panel_want = (rest * 30 / 100).clamp(7, 12);
        let mut ph = (rest.saturating_sub(2 + panel_want) / 2).max(1);
        if 2 * ph + 2 > rest {
            ph = rest.saturating_sub(2) / 2;
        }
        let panel_h = rest.saturating_sub(2 * ph + 2);
        let y_w = if w >= 60 { super::layout::YAXIS_W } else { 7 };
        let pw = w.saturating_sub(y_w);
        let ya = header_h;
        let yb = ya + ph + 1;
        let py = yb + ph + 1;
        let bands_w = if w >= 100 { 50 } else { w / 2 };
        DiffLayout {
            header: Rect::new(0, 0, w, header_h),
            yaxis_a: Rect::new(0, ya, y_w, ph),
            plot_a: Rect::new(y_w, ya, pw, ph),
            axis_a: Rect::new(y_w, ya + ph, pw, 1),
            yaxis_b: Rect::new(0, yb, y_w, ph),
            plot_b: Rect::new(y_w, yb, pw, ph),
            axis_b: Rect::new(y_w, yb + ph, pw, 1),
            bands: Rect::new(0, py, bands_w, panel_h),
            steps: Rect::new(bands_w, py, w - bands_w, panel_h),
            status: Rect::new(0, height.saturating_sub(1), w, 1),
        }
    }
}

/// Splits `width` plot columns into aligned spans for the two runs.
pub fn segments(a: &Device, b: &Device, d: &Diff, width: usize) -> Vec<Segment> {
    let by_steps = d.steps.iter().any(|s| s.a.is_some()) && d.steps.iter().any(|s| s.b.is_some());
    if !by_steps {
        let whole = |dev: &Device| (!dev.is_empty()).then(|| (Seq(0), dev.last()));
        return vec![Segment {
            name: "whole run".into(),
            x0: 0,
            x1: width,
            a: whole(a),
            b: whole(b),
            step: (d.steps.len() == 1 && d.aligned_by != "step marks").then_some(0),
        }];
    }
    // What precedes each run's first step (setup) gets a narrow span of its own, sized by its
    // share of the events, so that step starts line up.
    let first_lo = |pick: fn(&memtide_core::analysis::StepPair) -> Option<Seq>| {
        d.steps.iter().find_map(pick).map_or(0, |s| s.0)
    };
    let pre_a = first_lo(|s| s.a.as_ref().map(|r| r.lo));
    let pre_b = first_lo(|s| s.b.as_ref().map(|r| r.lo));
    let n = d.steps.len();
    let mut out = Vec::with_capacity(n + 1);
    let mut x = 0;
    if pre_a > 0 || pre_b > 0 {
        let frac = (pre_a as f64 / a.len().max(1) as f64).max(pre_b as f64 / b.len().max(1) as f64);
        let w = ((frac * width as f64).round() as usize)
            .max(1)
            .min(width / (n + 1));
        let range = |pre: u64| (pre > 0).then(|| (Seq(0), Seq(pre - 1)));
        out.push(Segment {
            name: "before steps".into(),
            x0: 0,
            x1: w,
            a: range(pre_a),
            b: range(pre_b),
            step: None,
        });
        x = w;
    }
    let rest = width - x;
    for (k, s) in d.steps.iter().enumerate() {
        let name =
            s.a.as_ref()
                .or(s.b.as_ref())
                .map_or_else(|| format!("step #{k}"), |r| r.name.to_string());
        out.push(Segment {
            name,
            x0: x + rest * k / n,
            x1: x + rest * (k + 1) / n,
            a: s.a.as_ref().map(|r| (r.lo, r.hi)),
            b: s.b.as_ref().map(|r| (r.lo, r.hi)),
            step: Some(k),
        });
    }
    out
}

const EMPTY: Column = Column {
    lo: Seq(1),
    hi: Seq(0),
    at: Seq(0),
    bands: BandTotals([0; memtide_core::trace::Band::COUNT]),
    reserved: Bytes(0),
    empty: true,
};

/// Each run's columns over the segments.
pub fn columns(dev: &Device, segs: &[Segment], a_side: bool) -> Vec<Column> {
    let mut out = Vec::new();
    for s in segs {
        let w = s.x1 - s.x0;
        let range = if a_side { s.a } else { s.b };
        match range {
            Some((lo, hi)) if w > 0 => {
                out.extend(event_columns(&dev.trace, &dev.index, lo, hi, w));
            }
            _ => out.extend(std::iter::repeat_n(EMPTY, w)),
        }
    }
    out
}

/// The column showing position `at`.
pub fn col_of(cols: &[Column], at: Seq) -> Option<usize> {
    cols.iter()
        .position(|c| !c.empty && c.lo <= at && at <= c.hi)
}

/// The first event ever drawn for the segment a column is in.
pub fn segment_at(segs: &[Segment], col: usize) -> Option<usize> {
    segs.iter().position(|s| s.x0 <= col && col < s.x1)
}

/// The first effects: load both files.
pub fn start(sh: &mut Shared, st: &mut DiffState) -> Vec<Effect> {
    let mut fx = Vec::new();
    for side in [&mut st.a, &mut st.b] {
        let gen = sh.gen();
        let progress = Progress::new();
        side.load = Some(LoadState::new(gen, progress.clone()));
        fx.push(Effect::Load {
            gen,
            path: side.path.clone(),
            opts: st.opts.clone(),
            progress,
        });
    }
    fx
}

/// The diff screen's reducer for messages that are not input; `None`: nothing changed (no
/// redraw).
pub fn update(sh: &mut Shared, st: &mut DiffState, msg: Msg) -> Option<Vec<Effect>> {
    match msg {
        Msg::Resize { .. } => refresh(sh, st),
        Msg::Tick { now } => return tick(st, now).then(Vec::new),
        Msg::Loaded { gen, result } => loaded(sh, st, gen, result),
        _ => return None,
    }
    Some(Vec::new())
}

/// Samples the loads' progress; whether one is still loading.
fn tick(st: &mut DiffState, now: Instant) -> bool {
    let mut loading = false;
    for l in [&mut st.a.load, &mut st.b.load].into_iter().flatten() {
        loading = true;
        l.sample(now);
    }
    loading
}

fn loaded(sh: &mut Shared, st: &mut DiffState, gen: u64, result: Result<Vec<Arc<Device>>, String>) {
    if st.error.is_some() {
        return; // the first error is the one to show (the other load was cancelled)
    }
    let want = st.device_want.clone();
    let is = |s: &Side| s.load.as_ref().is_some_and(|l| l.gen == gen);
    let side = if is(&st.a) {
        &mut st.a
    } else if is(&st.b) {
        &mut st.b
    } else {
        return; // stale
    };
    side.load = None;
    match result {
        Ok(devs) if !devs.is_empty() => {
            let i = pick_device(&devs, want.as_deref());
            side.dev = devs.get(i).cloned();
        }
        Ok(_) => {
            st.error = Some(format!(
                "{}: the file holds no device traces",
                side.path.display()
            ));
        }
        Err(e) => st.error = Some(format!("cannot open {}: {e}", side.path.display())),
    }
    if st.error.is_some() {
        // Nothing to compare: stop the other load too.
        st.cancel_loads();
        sh.outcome = Outcome::InputFailed;
        return;
    }
    if let (Some(a), Some(b)) = (&st.a.dev, &st.b.dev) {
        let (d, fair) = memtide_report::compare::diff_and_fair(a, b);
        st.ymax = d
            .peak_a
            .map_or(0, |p| p.bytes.0)
            .max(d.peak_b.map_or(0, |p| p.bytes.0))
            .max(1);
        st.fair = Some(fair);
        st.diff = Some(d);
        refresh(sh, st);
        st.cursor = st.peak_col_a.or(st.peak_col_b).unwrap_or(0);
    }
}

/// Recomputes the spans and columns for the current plot width.
fn refresh(sh: &Shared, st: &mut DiffState) {
    let width = DiffLayout::new(sh.width, sh.height).plot_a.width as usize;
    let (Some(a), Some(b), Some(d)) = (&st.a.dev, &st.b.dev, &st.diff) else {
        return;
    };
    st.segments = segments(a, b, d, width);
    st.cols_a = columns(a, &st.segments, true);
    st.cols_b = columns(b, &st.segments, false);
    st.peak_col_a = d.peak_a.and_then(|p| col_of(&st.cols_a, p.at));
    st.peak_col_b = d.peak_b.and_then(|p| col_of(&st.cols_b, p.at));
    st.cursor = st.cursor.min(width.saturating_sub(1));
}

/// B − A, signed, in binary units ("−1.000 GiB").
pub fn signed_bytes(d: i128) -> String {
    let s = fmt::bytes(d.unsigned_abs() as u64);
    match d.signum() {
        -1 => format!("−{s}"),
        1 => format!("+{s}"),
        _ => "0 B".into(),
    }
}

/// Applies one of the diff screen's actions (`Quit` and the help overlay are
/// `tui::update`'s); nothing until both runs are loaded and compared.
pub fn action(sh: &mut Shared, st: &mut DiffState, a: A) -> Vec<Effect> {
    sh.status = None;
    let width = st.cols_a.len();
    if st.error.is_some() || st.diff.is_none() || width == 0 {
        return Vec::new();
    }
    let last = width - 1;
    sh.status = match a {
        A::Help => {
            sh.help = true;
            None
        }
        A::CursorLeft => set_cursor(st, st.cursor.saturating_sub(1)),
        A::CursorRight => set_cursor(st, (st.cursor + 1).min(last)),
        A::Home => set_cursor(st, 0),
        A::End => set_cursor(st, last),
        A::PrevStep | A::NextStep => step(st, a == A::NextStep, last),
        A::PeakA => peak(st, st.peak_col_a, "A"),
        A::PeakB => peak(st, st.peak_col_b, "B"),
        A::MostDifferent => most_different(st, last),
        A::Fair => {
            st.fair_open = !st.fair_open && st.fair.is_some();
            st.fair_scroll = 0;
            None
        }
        A::CloseFair => {
            st.fair_open = false;
            None
        }
        A::FairScroll(by) => scroll_fair(sh, st, by),
        A::ClickAt { col, row } => {
            let l = DiffLayout::new(sh.width, sh.height);
            let inside =
                |r: Rect| col >= r.x && col < r.x + r.width && row >= r.y && row < r.y + r.height;
            for r in [l.plot_a, l.axis_a, l.plot_b, l.axis_b] {
                if inside(r) {
                    st.cursor = ((col - r.x) as usize).min(last);
                }
            }
            None
        }
    };
    Vec::new()
}

/// `j` / `k` with the fair-comparison panel open: scrolls it within its lines.
fn scroll_fair(sh: &Shared, st: &mut DiffState, by: i32) -> Option<String> {
    let f = st.fair.as_ref().filter(|_| st.fair_open)?;
    let inner = super::fairpanel::rect(sh.width, sh.height)
        .width
        .saturating_sub(2);
    let total = super::fairpanel::lines(f, inner as usize).len();
    let max = total.saturating_sub(super::fairpanel::visible_rows(sh.width, sh.height));
    st.fair_scroll = (st.fair_scroll as i64 + i64::from(by)).clamp(0, max as i64) as usize;
    None
}

/// Moves the cursor; no status.
fn set_cursor(st: &mut DiffState, col: usize) -> Option<String> {
    st.cursor = col;
    None
}

/// `[` / `]`: the cursor to the previous/next aligned step's start; the status if none.
fn step(st: &mut DiffState, next: bool, last: usize) -> Option<String> {
    let seg = segment_at(&st.segments, st.cursor);
    let target = match (seg, next) {
        (Some(i), true) => st.segments.get(i + 1),
        (Some(i), false) if st.segments[i].x0 < st.cursor => st.segments.get(i),
        (Some(i), false) => i.checked_sub(1).and_then(|j| st.segments.get(j)),
        (None, _) => st.segments.first(),
    };
    match target {
        Some(s) => set_cursor(st, s.x0.min(last)),
        None => Some("no further step".to_string()),
    }
}

/// `p` / `P`: the cursor to one run's peak column.
fn peak(st: &mut DiffState, col: Option<usize>, name: &str) -> Option<String> {
    match col {
        Some(c) => set_cursor(st, c),
        None => Some(format!("{name} has no peak in view")),
    }
}

/// `m`: the next of the steps that differ most (on A's peak of it, else its start).
fn most_different(st: &mut DiffState, last: usize) -> Option<String> {
    let d = st.diff.as_ref()?;
    if d.most_different.is_empty() {
        return Some("no step is in both runs".into());
    }
    let i = st.most.map_or(0, |i| (i + 1) % d.most_different.len());
    let k = d.most_different[i];
    let pair = &d.steps[k];
    let at = pair.a.as_ref().map(|r| r.peak_at);
    let col = at
        .and_then(|at| col_of(&st.cols_a, at))
        .or_else(|| st.segments.iter().find(|s| s.step == Some(k)).map(|s| s.x0));
    let name = pair
        .a
        .as_ref()
        .or(pair.b.as_ref())
        .map_or("-", |r| &*r.name);
    let status = format!(
        "{name}: peaks differ by {} ({} of {} by difference; m: next)",
        pair.delta().map_or("–".into(), signed_bytes),
        i + 1,
        d.most_different.len()
    );
    st.most = Some(i);
    if let Some(c) = col {
        st.cursor = c.min(last);
    }
    Some(status)
}
