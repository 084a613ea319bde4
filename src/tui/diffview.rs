//! The diff screen (`memtide diff A B`, `memtide A B`): loads both files on workers, then
//! aligns the two timelines by step marks (each aligned step gets the same horizontal span in
//! both; by event index over the whole width when either run has no steps), on one y scale,
//! with one cursor column shared by both. State, geometry and reducer; drawing is in
//! `ui/diff.rs`.

use super::action::Action;
use super::app::{App, Device, LoadState, Screen};
use super::effect::Effect;
use super::keymap::{self, Mode};
use super::msg::Msg;
use super::theme::Theme;
use super::{fmt, update};
use memtide_core::analysis::columns::{event_columns, Column};
use memtide_core::analysis::diff::{diff, Diff};
use memtide_core::formats::{LoadOptions, Progress};
use memtide_core::trace::{BandTotals, Bytes, Seq};
use ratatui::layout::Rect;
use std::path::PathBuf;
use std::sync::Arc;

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
    pub opts: LoadOptions,
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
}

/// An app showing the diff of `a` and `b`; `update::start` asks for both loads.
pub fn app(a: PathBuf, b: PathBuf, opts: LoadOptions, theme: Theme, ascii: bool) -> App {
    let mut app = App::new(a.clone(), opts.clone(), theme, ascii);
    app.screen = Screen::Ready;
    app.diff = Some(Box::new(DiffState {
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
    }));
    app
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
    let first_lo = |pick: fn(&memtide_core::analysis::diff::StepPair) -> Option<Seq>| {
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
                .map_or_else(|| format!("step #{k}"), |r| r.name.clone());
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
pub fn start(app: &mut App) -> Vec<Effect> {
    let (ga, gb) = (app.gen(), app.gen());
    let Some(st) = app.diff.as_deref_mut() else {
        return Vec::new();
    };
    st.device_want = app.device_want.clone();
    let mut fx = Vec::new();
    for (side, gen) in [(&mut st.a, ga), (&mut st.b, gb)] {
        let progress = Progress::new();
        side.load = Some(LoadState {
            gen,
            progress: progress.clone(),
            done: 0,
            total: 0,
            started: None,
            elapsed: Default::default(),
        });
        fx.push(Effect::Load {
            gen,
            path: side.path.clone(),
            opts: st.opts.clone(),
            progress,
        });
    }
    fx
}

fn mode(app: &App) -> Mode {
    if app.help {
        Mode::Help
    } else {
        Mode::Diff
    }
}

/// The diff screen's reducer (called by `update::update` while the diff is shown).
pub fn update(app: &mut App, msg: Msg) -> Vec<Effect> {
    let was_dirty = app.dirty;
    app.dirty = true;
    let a = match msg {
        Msg::Key(k) => keymap::map_key(mode(app), k),
        Msg::Mouse(m) => keymap::map_mouse(m).filter(|a| matches!(a, Action::ClickAt { .. })),
        Msg::Action(a) => Some(a),
        Msg::Resize { width, height } => {
            app.width = width;
            app.height = height;
            refresh(app);
            return Vec::new();
        }
        Msg::Tick { now } => {
            let mut loading = false;
            if let Some(st) = app.diff.as_deref_mut() {
                for l in [&mut st.a.load, &mut st.b.load].into_iter().flatten() {
                    loading = true;
                    l.done = l.progress.done();
                    l.total = l.progress.total();
                    let s = *l.started.get_or_insert(now);
                    l.elapsed = now.saturating_duration_since(s);
                }
            }
            if !loading {
                app.dirty = was_dirty;
            }
            return Vec::new();
        }
        Msg::Loaded { gen, result } => {
            loaded(app, gen, result);
            return Vec::new();
        }
        _ => None,
    };
    match a {
        Some(a) => action(app, a),
        None => {
            app.dirty = was_dirty;
            Vec::new()
        }
    }
}

fn loaded(app: &mut App, gen: u64, result: Result<Vec<Arc<Device>>, String>) {
    let Some(st) = app.diff.as_deref_mut() else {
        return;
    };
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
            let i = update::pick_device(&devs, want.as_deref());
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
        for l in [&st.a.load, &st.b.load].into_iter().flatten() {
            l.progress.cancel();
        }
        app.outcome = super::app::Outcome::InputFailed;
        return;
    }
    if let (Some(a), Some(b)) = (&st.a.dev, &st.b.dev) {
        let d = diff(&a.trace, &a.index, &b.trace, &b.index);
        st.ymax = d
            .peak_a
            .map_or(0, |p| p.bytes.0)
            .max(d.peak_b.map_or(0, |p| p.bytes.0))
            .max(1);
        st.diff = Some(d);
        refresh(app);
        if let Some(st) = app.diff.as_deref_mut() {
            st.cursor = st.peak_col_a.or(st.peak_col_b).unwrap_or(0);
        }
    }
}

/// Recomputes the spans and columns for the current plot width.
fn refresh(app: &mut App) {
    let width = DiffLayout::new(app.width, app.height).plot_a.width as usize;
    let Some(st) = app.diff.as_deref_mut() else {
        return;
    };
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

fn signed(d: i128) -> String {
    let s = fmt::bytes(d.unsigned_abs() as u64);
    match d.signum() {
        -1 => format!("−{s}"),
        1 => format!("+{s}"),
        _ => "0 B".into(),
    }
}

/// B − A, signed, in binary units ("−1.000 GiB").
pub fn signed_bytes(d: i128) -> String {
    signed(d)
}

fn action(app: &mut App, a: Action) -> Vec<Effect> {
    if a == Action::Quit {
        if let Some(st) = app.diff.as_deref() {
            for l in [&st.a.load, &st.b.load].into_iter().flatten() {
                l.progress.cancel();
            }
        }
        app.quit = true;
        return vec![Effect::Quit];
    }
    if app.help {
        app.help = false;
        return Vec::new();
    }
    app.status = None;
    let l = DiffLayout::new(app.width, app.height);
    let Some(st) = app.diff.as_deref_mut() else {
        return Vec::new();
    };
    if st.error.is_some() {
        // The error screen: Esc/Enter leave like q.
        return Vec::new();
    }
    let Some(d) = &st.diff else {
        return Vec::new(); // still loading
    };
    let width = st.cols_a.len();
    if width == 0 {
        return Vec::new();
    }
    let last = width - 1;
    let seg = segment_at(&st.segments, st.cursor);
    let mut status = None;
    match a {
        Action::Help => app.help = true,
        Action::CursorLeft => st.cursor = st.cursor.saturating_sub(1),
        Action::CursorRight => st.cursor = (st.cursor + 1).min(last),
        Action::Home => st.cursor = 0,
        Action::End => st.cursor = last,
        Action::DiffPrevStep | Action::DiffNextStep => {
            let target = match (seg, a == Action::DiffNextStep) {
                (Some(i), true) => st.segments.get(i + 1),
                (Some(i), false) if st.segments[i].x0 < st.cursor => st.segments.get(i),
                (Some(i), false) => i.checked_sub(1).and_then(|j| st.segments.get(j)),
                (None, _) => st.segments.first(),
            };
            match target {
                Some(s) => st.cursor = s.x0.min(last),
                None => status = Some("no further step".to_string()),
            }
        }
        Action::DiffPeakA | Action::DiffPeakB => {
            let (col, name) = if a == Action::DiffPeakA {
                (st.peak_col_a, "A")
            } else {
                (st.peak_col_b, "B")
            };
            match col {
                Some(c) => st.cursor = c,
                None => status = Some(format!("{name} has no peak in view")),
            }
        }
        Action::DiffMostDifferent => {
            if d.most_different.is_empty() {
                status = Some("no step is in both runs".into());
            } else {
                let i = st.most.map_or(0, |i| (i + 1) % d.most_different.len());
                st.most = Some(i);
                let k = d.most_different[i];
                let pair = &d.steps[k];
                // Land on A's peak of that step (else the step's start).
                let at = pair.a.as_ref().map(|r| r.peak_at);
                let col = at
                    .and_then(|at| col_of(&st.cols_a, at))
                    .or_else(|| st.segments.iter().find(|s| s.step == Some(k)).map(|s| s.x0));
                if let Some(c) = col {
                    st.cursor = c.min(last);
                }
                let name = pair
                    .a
                    .as_ref()
                    .or(pair.b.as_ref())
                    .map_or("-", |r| r.name.as_str());
                status = Some(format!(
                    "{name}: peaks differ by {} ({} of {} by difference; m: next)",
                    pair.delta().map_or("–".into(), signed),
                    i + 1,
                    d.most_different.len()
                ));
            }
        }
        Action::ClickAt { col, row } => {
            let inside =
                |r: Rect| col >= r.x && col < r.x + r.width && row >= r.y && row < r.y + r.height;
            for r in [l.plot_a, l.axis_a, l.plot_b, l.axis_b] {
                if inside(r) {
                    st.cursor = ((col - r.x) as usize).min(last);
                }
            }
        }
        _ => {}
    }
    app.status = status;
    Vec::new()
}
