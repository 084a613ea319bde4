//! The timeline plot: stacked bands per cached column with eighth-block sub-cell
//! resolution, reserved outline, the what-if overlay's simulated reserved line (with its
//! legend row), capacity ceiling, step marks, peak marker ▼, cursor, the y-axis in binary
//! units, and the axis row (marks, OOM, cursor, lifetime, matches).

use super::put;
use crate::tui::explorer::{whatif, ExplorerState};
use crate::tui::fmt;
use crate::tui::layout::Layout;
use crate::tui::shared::Shared;
use crate::tui::theme::{Fill, Glyphs, Theme};
use crate::tui::view::{F_LIFETIME, F_MARK, F_MATCH, F_OOM, F_PEAK};
use memtide_core::analysis::Axis;
use memtide_core::trace::Band;
use ratatui::buffer::Buffer;
use ratatui::style::Style;

/// Eighths of a cell (from the plot bottom) reached by `bytes` on a `rows`-high scale.
pub(crate) fn eighths(bytes: u64, ymax: u64, rows: u16) -> u32 {
    let full = rows as u128 * 8;
    ((bytes as u128 * full + ymax as u128 / 2) / ymax.max(1) as u128).min(full) as u32
}

/// The plot's vertical scale.
pub(crate) struct Scale {
    /// Bytes at the top of the plot.
    pub ymax: u64,
    /// The one band shown (`b`), whose own highest value in the view sets `ymax`; the
    /// reserved, capacity and what-if lines (totals, on another scale) are left out then.
    pub solo: Option<Band>,
    /// Nothing above 0 B: only the bottom is labelled.
    pub flat: bool,
}

/// The scale of the plot: the view's (the run's peak, reserved peak or capacity), or, with a
/// single band shown, that band's highest value over the visible columns, so a small band
/// fills the plot instead of a sliver at the bottom of the whole run's scale.
pub(crate) fn scale(ex: &ExplorerState) -> Scale {
    let v = &ex.view;
    let solo = (ex.bands_cycle > 0).then(|| Band::from_idx(ex.bands_cycle - 1));
    match solo {
        None => Scale {
            ymax: v.ymax.max(1),
            solo,
            flat: v.flat,
        },
        Some(b) => {
            let top = v
                .columns
                .iter()
                .filter(|c| !c.empty)
                .map(|c| c.bands.get(b))
                .max()
                .unwrap_or(0);
            Scale {
                ymax: top.max(1),
                solo,
                flat: top == 0,
            }
        }
    }
}

pub fn draw(buf: &mut Buffer, l: &Layout, sh: &Shared, ex: &ExplorerState) {
    let th = &sh.theme;
    let g = sh.glyphs;
    let v = &ex.view;
    let plot = l.plot;
    let rows = plot.height;
    let sc = scale(ex);
    let ymax = sc.ymax;
    let solo = sc.solo.is_some();
    draw_yaxis(buf, l, sh, ex);
    let ceiling_row = v.ceiling.filter(|_| !solo).map(|c| {
        let e = eighths(c, ymax, rows);
        (e.saturating_sub(1) / 8) as u16
    });
    for (i, col) in v.columns.iter().enumerate().take(plot.width as usize) {
        let x = plot.x + i as u16;
        // Band boundaries in eighths, bottom up, shown bands only.
        let bounds = if col.empty {
            Vec::new()
        } else {
            column_fills(col, ex, ymax, rows)
        };
        let top = bounds.last().map_or(0, |s| s.2);
        let segs = &bounds[..];
        let reserved_e = if col.empty || solo {
            0
        } else {
            eighths(col.reserved.0, ymax, rows)
        };
        // The what-if overlay's line (0: none in this column).
        let whatif_e = v
            .whatif
            .get(i)
            .copied()
            .flatten()
            .filter(|_| !solo)
            .map_or(0, |b| eighths(b, ymax, rows).max(1));
        for r in 0..rows {
            let y = plot.bottom() - 1 - r;
            let lo = r as u32 * 8;
            let hi = lo + 8;
            let cell = &mut buf[(x, y)];
            if top > lo {
                paint_stack(cell, segs, lo, hi, g, th);
                // The what-if line above the stack's top inside this partly filled cell:
                // the line wins (on the band's colour), so it stays continuous.
                if whatif_e > top && whatif_e <= hi {
                    let bg = cell.style().fg.unwrap_or_default();
                    cell.set_char(g.whatif_line()).set_style(th.whatif.bg(bg));
                }
                continue;
            }
            // Empty cell: overlays, most important last.
            let mut ch = ' ';
            let mut st = th.text;
            if Some(r) == ceiling_row {
                ch = g.ceiling();
                st = th.capacity;
            }
            if reserved_e > lo && reserved_e <= hi && reserved_e > top {
                ch = g.hline();
                st = th.reserved;
            }
            if whatif_e > lo && whatif_e <= hi && whatif_e > top {
                ch = g.whatif_line();
                st = th.whatif;
            }
            let f = v.flags.get(i).copied().unwrap_or(0);
            if f & F_MARK != 0 && ch == ' ' {
                ch = g.mark_line();
                st = th.mark;
            }
            if v.cursor_col == Some(i) {
                ch = g.cursor_line();
                st = th.cursor;
            }
            cell.set_char(ch).set_style(st);
        }
        // The peak marker sits just above the stack (in the top row when the stack fills it).
        let f = v.flags.get(i).copied().unwrap_or(0);
        if f & F_PEAK != 0 {
            let r = (top.div_ceil(8) as u16).min(rows - 1);
            buf[(x, plot.bottom() - 1 - r)]
                .set_char(g.peak())
                .set_style(th.peak_marker);
        }
        // Where the simulated run ran out of memory: on its line (above the stack).
        if v.whatif_oom_col == Some(i) {
            let r = ((whatif_e.max(top + 1).saturating_sub(1) / 8) as u16).min(rows - 1);
            buf[(x, plot.bottom() - 1 - r)]
                .set_char(g.oom())
                .set_style(th.oom);
        }
        // Axis row.
        let (ch, st) = axis_glyph(f, v.cursor_col == Some(i), g, th);
        buf[(x, l.axis.y)].set_char(ch).set_style(st);
    }
    draw_ticks(buf, l, sh, ex);
    draw_legend(buf, l, sh, ex);
}

/// A column's fills in eighths, bottom up, shown bands only; the external band split into
/// one sub-band per source (in the split's stacking order) where the device has a split.
fn column_fills(
    col: &memtide_core::analysis::Column,
    ex: &ExplorerState,
    ymax: u64,
    rows: u16,
) -> Vec<(Fill, u32, u32)> {
    let split = ex.device().and_then(|d| d.ext_split());
    let mut out: Vec<(Fill, u32, u32)> = Vec::with_capacity(Band::COUNT + 4);
    let mut cum = 0u64;
    let mut prev = 0u32;
    let mut push = |f: Fill, val: u64, out: &mut Vec<(Fill, u32, u32)>| {
        if val == 0 {
            return;
        }
        cum = cum.saturating_add(val);
        let e = eighths(cum, ymax, rows);
        if e > prev {
            out.push((f, prev, e));
            prev = e;
        }
    };
    for b in Band::ALL {
        if !ex.bands_shown[b.idx()] {
            continue;
        }
        let val = col.bands.get(b);
        match split {
            Some(s) if b == Band::External => {
                let parts = s.at(col.at);
                // What the split does not name (none, unless the two disagree) stays the band's.
                let named: u64 = parts.iter().sum();
                for (k, v) in parts.iter().enumerate() {
                    push(Fill::Source(k.min(255) as u8), (*v).min(val), &mut out);
                }
                push(Fill::Band(b), val.saturating_sub(named), &mut out);
            }
            _ => push(Fill::Band(b), val, &mut out),
        }
    }
    out
}

/// The legend row of the what-if overlay: the recorded outline, the simulated line named
/// by its settings with its peak (and value at the cursor), its OOM; or "simulating…".
fn draw_legend(buf: &mut Buffer, l: &Layout, sh: &Shared, ex: &ExplorerState) {
    let r = l.legend;
    let Some(dev) = ex.device() else {
        return;
    };
    if r.height == 0 {
        return;
    }
    let (th, g) = (&sh.theme, sh.glyphs);
    let mut x = r.x + 1;
    let room = |x: u16| r.right().saturating_sub(x);
    let recorded = match dev.reserved_peak {
        Some(p) => format!("{} reserved {}  ", g.hline(), fmt::bytes_short(p.0)),
        None => String::new(),
    };
    if !recorded.is_empty() {
        x = put(buf, x, r.y, &recorded, room(x), th.reserved);
    }
    let Some(o) = whatif::shown(ex, dev) else {
        let text = format!("{} {}", g.whatif_line(), whatif::SIMULATING);
        put(buf, x, r.y, &text, room(x), th.whatif);
        return;
    };
    let oom = o.oom.as_ref().map(|x| {
        let n = dev.trace.event_number(x.at);
        format!("{} OOM at #{n}", g.oom())
    });
    let at = match o.series.get(ex.view.cursor.idx()) {
        Some(b) => fmt::bytes_short(*b),
        None => "unknown (after the OOM)".into(),
    };
    let cursor = format!(" · cursor {at}");
    // The label shortens ("whatif (…)") when the row is too narrow for all of it.
    let peak = format!(" · peak {}", fmt::bytes_short(o.peak));
    let tail = peak.chars().count()
        + oom.as_ref().map_or(0, |s| s.chars().count() + 3)
        + cursor.chars().count();
    let mut label = format!("{} {}", g.whatif_line(), o.label);
    if (label.chars().count() + tail) as u16 > room(x) {
        label = label.replacen("whatif reserved", "whatif", 1);
    }
    x = put(buf, x, r.y, &label, room(x), th.whatif);
    x = put(buf, x, r.y, &peak, room(x), th.whatif);
    if let Some(oom) = &oom {
        x = put(buf, x, r.y, " · ", room(x), th.whatif);
        x = put(buf, x, r.y, oom, room(x), th.oom);
    }
    put(buf, x, r.y, &cursor, room(x), th.whatif);
}

/// Columns between tick labels on the axis row.
const TICK_EVERY: usize = 16;

/// Tick labels on the axis row: the event number (event axis) or the time (time axis,
/// relative to the first event unless absolute) where the column starts, every
/// `TICK_EVERY` columns, written only over plain axis cells (marks, OOMs, the cursor,
/// lifetimes and matches stay visible).
fn draw_ticks(buf: &mut Buffer, l: &Layout, sh: &Shared, ex: &ExplorerState) {
    let Some(dev) = ex.device() else {
        return;
    };
    let v = &ex.view;
    let tr = &dev.trace;
    let width = v.columns.len().min(l.plot.width as usize);
    if width < TICK_EVERY * 2 {
        return;
    }
    let label_at = |i: usize| match v.axis {
        Axis::Event => v
            .columns
            .get(i)
            .filter(|c| !c.empty && c.lo <= c.hi)
            .map(|c| format!("#{}", tr.event_number(c.lo))),
        Axis::Time => {
            let span = (v.t1 - v.t0) as i128;
            let t = v.t0 + (span * i as i128 / width as i128) as i64;
            Some(fmt::time_at_ns(tr, t, ex.absolute_time).replace(' ', ""))
        }
    };
    let free = |c: usize| {
        c < width && v.flags.get(c).copied().unwrap_or(0) == 0 && v.cursor_col != Some(c)
    };
    // Each tick goes at the first place near its slot where it hides nothing.
    let mut i = TICK_EVERY;
    while i + 4 < width {
        let mut next = i + TICK_EVERY;
        for j in i..(i + TICK_EVERY / 2).min(width) {
            let Some(text) = label_at(j) else {
                continue;
            };
            let n = text.chars().count();
            if (j.saturating_sub(1)..j + n + 1).all(free) {
                put(
                    buf,
                    l.axis.x + j as u16,
                    l.axis.y,
                    &text,
                    n as u16,
                    th_axis(sh),
                );
                next = next.max(j + n + 2);
                break;
            }
        }
        i = next;
    }
}

fn th_axis(sh: &Shared) -> Style {
    sh.theme.axis
}

fn axis_glyph(f: u8, cursor: bool, g: Glyphs, th: &Theme) -> (char, Style) {
    if cursor {
        (g.cursor_up(), th.cursor)
    } else if f & F_OOM != 0 {
        (g.oom(), th.oom)
    } else if f & F_LIFETIME != 0 {
        (g.lifetime(), th.lifetime)
    } else if f & F_MATCH != 0 {
        (g.matched(), th.matched)
    } else if f & F_MARK != 0 {
        (g.mark(), th.mark)
    } else {
        (g.hline(), th.axis)
    }
}

/// Paints one filled cell covering eighths `[lo, hi)` of a column with band segments `segs`.
pub(crate) fn paint_stack(
    cell: &mut ratatui::buffer::Cell,
    segs: &[(Fill, u32, u32)],
    lo: u32,
    hi: u32,
    g: Glyphs,
    th: &Theme,
) {
    let top = segs.last().map_or(0, |s| s.2);
    let cover = top.min(hi) - lo;
    let overlap = |s: &(Fill, u32, u32)| s.2.min(hi).saturating_sub(s.1.max(lo));
    let dominant = segs
        .iter()
        .filter(|s| overlap(s) > 0)
        .max_by_key(|s| overlap(s))
        .map_or(Fill::Band(Band::Unknown), |s| s.0);
    let bottom = segs
        .iter()
        .find(|s| s.1 <= lo && s.2 > lo)
        .copied()
        .unwrap_or((dominant, lo, hi));
    match g {
        Glyphs::Blocks => {
            if cover < 8 {
                cell.set_char(g.eighth(cover as u8))
                    .set_style(th.fill(dominant));
            } else if bottom.2 >= hi {
                cell.set_char('█').set_style(th.fill(bottom.0));
            } else {
                let e = bottom.2 - lo;
                let upper = segs
                    .iter()
                    .find(|s| s.1 < hi && s.2 >= hi)
                    .map_or(dominant, |s| s.0);
                let bg = th.fill(upper).fg.unwrap_or_default();
                cell.set_char(g.eighth(e as u8))
                    .set_style(th.fill(bottom.0).bg(bg));
            }
        }
        Glyphs::Shades | Glyphs::Ascii => {
            let ch = if cover >= 4 || lo == 0 {
                if cover >= 4 {
                    g.fill_char(dominant)
                } else {
                    g.eighth(cover as u8)
                }
            } else {
                ' '
            };
            cell.set_char(ch).set_style(th.fill(dominant));
        }
    }
}

fn draw_yaxis(buf: &mut Buffer, l: &Layout, sh: &Shared, ex: &ExplorerState) {
    let th = &sh.theme;
    let r = l.yaxis;
    let w = r.width;
    let rows = r.height;
    let sc = scale(ex);
    let ymax = sc.ymax;
    let tick = if sh.glyphs == Glyphs::Ascii {
        '+'
    } else {
        '┤'
    };
    let line = if sh.glyphs == Glyphs::Ascii {
        '|'
    } else {
        '│'
    };
    for i in 0..rows {
        let y = r.y + i;
        let from_bottom = rows - 1 - i;
        // Labels at the top, the middle and the bottom; each names the value at its row top.
        // A flat trace (nothing above 0 B) has no scale: only its bottom is labelled.
        let label = if sc.flat && from_bottom != 0 {
            None
        } else if i == 0 || from_bottom == 0 || (rows >= 6 && i == rows / 2) {
            let val = (ymax as u128 * (from_bottom as u128 + 1) / rows as u128) as u64;
            let val = if from_bottom == 0 { 0 } else { val };
            Some(fmt::bytes_short(val))
        } else {
            None
        };
        match label {
            Some(s) => {
                let s = format!("{s:>width$}{tick}", width = (w - 1) as usize);
                put(buf, r.x, y, &s, w, th.axis);
            }
            None => {
                let s = format!("{:>width$}{line}", "", width = (w - 1) as usize);
                put(buf, r.x, y, &s, w, th.axis);
            }
        }
    }
    let axis_name = match ex.view.axis {
        Axis::Event => "events",
        Axis::Time => "time",
    };
    put(buf, 0, l.axis.y, axis_name, w, th.dim);
    put(buf, 0, l.minimap.y, "all", w, th.dim);
}
