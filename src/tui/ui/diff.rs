//! The diff screen: both files' loading progress, then two stacked timelines on one y
//! scale with aligned step spans, a shared cursor, each peak marked ▼, the bands at each
//! one's peak with B − A, and the per-step table with the most different steps flagged.

use super::fit::{self, Part};
use super::put;
use super::timeline::{eighths, paint_stack};
use crate::tui::diffview::{segment_at, signed_bytes, DiffLayout, DiffState, Side};
use crate::tui::fmt;
use crate::tui::shared::Shared;
use crate::tui::theme::Fill;
use crate::tui::theme::{Glyphs, Theme};
use memtide_core::analysis::Column;
use memtide_core::trace::Band;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;

pub fn draw(buf: &mut Buffer, area: Rect, sh: &Shared, st: &DiffState) {
    if let Some(e) = &st.error {
        let th = &sh.theme;
        put(
            buf,
            2,
            1,
            "memtide diff: cannot compare",
            area.width - 4,
            th.error,
        );
        for (i, chunk) in e
            .chars()
            .collect::<Vec<_>>()
            .chunks((area.width - 4).max(1) as usize)
            .enumerate()
        {
            let y = 3 + i as u16;
            if y + 2 >= area.height {
                break;
            }
            let line: String = chunk.iter().collect();
            put(buf, 2, y, &line, area.width - 4, th.text);
        }
        put(
            buf,
            2,
            area.height - 2,
            "press q to quit",
            area.width - 4,
            th.dim,
        );
        return;
    }
    if st.diff.is_none() {
        draw_loading(buf, area, sh, st);
        return;
    }
    let l = DiffLayout::new(area.width, area.height);
    draw_header(buf, &l, sh, st);
    let g = sh.glyphs;
    let th = &sh.theme;
    for (name, yaxis, plot, axis, cols, peak) in [
        (
            "A",
            l.yaxis_a,
            l.plot_a,
            l.axis_a,
            &st.cols_a,
            st.peak_col_a,
        ),
        (
            "B",
            l.yaxis_b,
            l.plot_b,
            l.axis_b,
            &st.cols_b,
            st.peak_col_b,
        ),
    ] {
        draw_yaxis(buf, yaxis, name, st.ymax, sh);
        draw_plot(buf, plot, cols, peak, st, sh);
        // Axis row: step starts, the cursor.
        for x in 0..axis.width {
            let i = x as usize;
            let starts = st.segments.iter().any(|s| s.x0 == i && i > 0);
            let (ch, style) = if i == st.cursor {
                (g.cursor_up(), th.cursor)
            } else if starts {
                (g.mark(), th.mark)
            } else {
                (g.hline(), th.axis)
            };
            buf[(axis.x + x, axis.y)].set_char(ch).set_style(style);
        }
    }
    // Step names on the lower axis row, where they fit.
    for s in &st.segments {
        let w = (s.x1 - s.x0).saturating_sub(1) as u16;
        if w >= 3 {
            let x = l.axis_b.x + s.x0 as u16 + 1;
            put(buf, x, l.axis_b.y, &format!(" {} ", s.name), w, th.dim);
        }
    }
    put(buf, 0, l.axis_b.y, "steps", l.yaxis_b.width, th.dim);
    draw_bands(buf, l.bands, sh, st);
    draw_steps(buf, l.steps, sh, st);
    draw_status(buf, l.status, sh);
    super::fair::draw(buf, area, sh, st);
}

fn draw_loading(buf: &mut Buffer, area: Rect, sh: &Shared, st: &DiffState) {
    let th = &sh.theme;
    let w = area.width.saturating_sub(4);
    let y = (area.height / 2).saturating_sub(3);
    put(
        buf,
        2,
        y,
        "memtide diff: loading both runs",
        w,
        th.header_title,
    );
    for (i, (tag, side)) in [("A", &st.a), ("B", &st.b)].into_iter().enumerate() {
        let y = y + 2 + 2 * i as u16;
        put(buf, 2, y, &format!("{tag}  {}", side.name()), w, th.text);
        put(buf, 2, y + 1, &progress_line(side, w, sh), w, th.dim);
    }
    put(buf, 2, y + 6, "q: cancel and quit", w, th.dim);
}

fn progress_line(side: &Side, w: u16, sh: &Shared) -> String {
    let Some(l) = &side.load else {
        return "   done".into();
    };
    let frac = if l.total > 0 {
        (l.done as f64 / l.total as f64).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let bar_w = (w as usize).saturating_sub(34).min(40);
    let filled = (frac * bar_w as f64).round() as usize;
    let (full, empty) = if sh.glyphs == Glyphs::Ascii {
        ('#', '.')
    } else {
        ('█', '░')
    };
    let bar: String = std::iter::repeat_n(full, filled)
        .chain(std::iter::repeat_n(empty, bar_w - filled))
        .collect();
    format!(
        "   {bar} {:>3.0}%  {} / {}",
        frac * 100.0,
        fmt::bytes(l.done),
        fmt::bytes(l.total)
    )
}

fn draw_header(buf: &mut Buffer, l: &DiffLayout, sh: &Shared, st: &DiffState) {
    let th = &sh.theme;
    let r = l.header;
    let sep = format!(" {} ", sh.glyphs.sep());
    let Some(d) = &st.diff else { return };
    // The parity verdict and what the change bought and cost outlast the file names.
    let mut top = vec![Part::text(" memtide diff", th.header_title, 10)];
    if let Some(f) = &st.fair {
        use memtide_core::analysis::Verdict;
        let style = match f.parity.verdict {
            Verdict::SameWork => th.header_title,
            Verdict::DifferentWork => th.error,
            Verdict::CannotTell => th.header_dim,
        };
        let warn = if f.boundary_warning.is_some() {
            " (windows differ)"
        } else {
            ""
        };
        top.push(Part::text(
            format!("{sep}{}{warn}", f.parity.verdict.words()),
            style,
            9,
        ));
    }
    // The runs' names, or where they differ when both whole do not fit beside the verdict.
    let (a, b) = (st.a.name(), st.b.name());
    let names = format!("{sep}A {a}{sep}B {b}");
    let taken: usize = top.iter().map(Part::width).sum();
    let names = if taken + names.chars().count() <= usize::from(r.width) {
        names
    } else {
        let (a, b) = fmt::differing(&a, &b);
        format!("{sep}A {a}{sep}B {b}")
    };
    top.push(Part::text(names, th.header_text, 6));
    top.push(Part::text(
        format!("{sep}aligned by {}{sep}same y scale", d.aligned_by),
        th.header_text,
        1,
    ));
    fit::draw(buf, 0, r.y, r.right(), &top);
    // Peaks: each run's bytes and event, and their difference, stay longest; the marks go
    // first on a narrow terminal.
    let peak = |side: &Side, p: Option<memtide_core::analysis::Peak>| -> (String, String) {
        match (p, &side.dev) {
            (Some(p), Some(dev)) => {
                let tr = &dev.trace;
                let m = tr
                    .enclosing_mark(p.at)
                    .map(|m| format!(" ({})", tr.mark_label(m)))
                    .unwrap_or_default();
                (
                    format!("{} @ #{}", fmt::bytes(p.bytes.0), tr.event_number(p.at)),
                    m,
                )
            }
            _ => ("none".into(), String::new()),
        }
    };
    let (pa, ma) = peak(&st.a, d.peak_a);
    let (pb, mb) = peak(&st.b, d.peak_b);
    let mut parts = vec![
        Part {
            spans: vec![(" peak A ".into(), th.header_dim), (pa, th.header_title)],
            keep: 9,
            least: 0,
        },
        Part::text(ma, th.header_title, 2),
        Part {
            spans: vec![
                (format!("{sep}peak B "), th.header_dim),
                (pb, th.header_title),
            ],
            keep: 9,
            least: 0,
        },
        Part::text(mb, th.header_title, 2),
    ];
    if let (Some(p), Some(q)) = (d.peak_a, d.peak_b) {
        parts.push(Part::text(
            format!(
                "{sep}B − A {}",
                signed_bytes(q.bytes.0 as i128 - p.bytes.0 as i128)
            ),
            th.header_text,
            8,
        ));
    }
    if let Some(f) = &st.fair {
        parts.push(Part::text(short_cost(f, &sep), th.header_text, 3));
    }
    fit::draw(buf, 0, r.y + 1, r.right(), &parts);
    // Cursor readout: each run's state at the cursor column.
    let at = |side: &Side, cols: &[Column]| -> (String, Option<u64>) {
        match (cols.get(st.cursor), &side.dev) {
            (Some(c), Some(dev)) if !c.empty => {
                let t = c.bands.total();
                (
                    format!("#{} {}", dev.trace.event_number(c.at), fmt::bytes(t)),
                    Some(t),
                )
            }
            _ => ("–".into(), None),
        }
    };
    let (sa, ta) = at(&st.a, &st.cols_a);
    let (sb, tb) = at(&st.b, &st.cols_b);
    let seg = segment_at(&st.segments, st.cursor)
        .and_then(|i| st.segments.get(i))
        .map_or(String::new(), |s| format!(" {}", s.name));
    let mut s = format!(" cursor{seg}{sep}A {sa}{sep}B {sb}");
    if let (Some(x), Some(y)) = (ta, tb) {
        s.push_str(&format!(
            "{sep}B − A {}",
            signed_bytes(y as i128 - x as i128)
        ));
    }
    put(buf, 0, r.y + 2, &s, r.width, th.header_dim);
}

/// ` · reserved −256.0 MiB · step time +25.0 %` (B − A; empty when unknowable).
fn short_cost(f: &memtide_core::analysis::Fair, sep: &str) -> String {
    let c = &f.cost;
    let mut s = String::new();
    if let Some(d) = c.reserved_delta {
        s.push_str(&format!("{sep}reserved {}", signed_bytes(d as i128)));
    }
    if let Some(t) = c.step_time_change {
        s.push_str(&format!("{sep}step time {:+.1} %", t * 100.0).replacen('-', "−", 1));
    }
    s
}

fn draw_yaxis(buf: &mut Buffer, r: Rect, name: &str, ymax: u64, sh: &Shared) {
    let th = &sh.theme;
    let (tick, line) = if sh.glyphs == Glyphs::Ascii {
        ('+', '|')
    } else {
        ('┤', '│')
    };
    for i in 0..r.height {
        let y = r.y + i;
        let w = r.width.saturating_sub(1) as usize;
        let s = if r.height < 3 {
            // Too short for labels: just the run's name (the header gives the peaks).
            format!("{name:<w$}{tick}")
        } else if i == 0 {
            format!("{:>w$}{tick}", fmt::bytes_short(ymax))
        } else if i + 1 == r.height {
            format!("{:>w$}{tick}", "0")
        } else {
            format!("{:>w$}{line}", "")
        };
        put(buf, r.x, y, &s, r.width, th.axis);
    }
    // The run's name in the label column (middle row, or the bottom one when short).
    let y = r.y + r.height / 2;
    if r.height >= 3 {
        put(buf, r.x, y, name, 1, th.header_title);
    }
}

fn draw_plot(
    buf: &mut Buffer,
    plot: Rect,
    cols: &[Column],
    peak: Option<usize>,
    st: &DiffState,
    sh: &Shared,
) {
    let th = &sh.theme;
    let g = sh.glyphs;
    let rows = plot.height;
    if rows == 0 {
        return;
    }
    for (i, col) in cols.iter().enumerate().take(plot.width as usize) {
        let x = plot.x + i as u16;
        let mut bounds: [(Fill, u32, u32); Band::COUNT] =
            [(Fill::Band(Band::Unknown), 0, 0); Band::COUNT];
        let mut nb = 0;
        let (mut cum, mut prev) = (0u64, 0u32);
        if !col.empty {
            for b in Band::ALL {
                let val = col.bands.get(b);
                if val == 0 {
                    continue;
                }
                cum = cum.saturating_add(val);
                let e = eighths(cum, st.ymax, rows);
                if e > prev {
                    bounds[nb] = (Fill::Band(b), prev, e);
                    nb += 1;
                    prev = e;
                }
            }
        }
        let top = prev;
        let starts = st.segments.iter().any(|s| s.x0 == i && i > 0);
        for r in 0..rows {
            let y = plot.bottom() - 1 - r;
            let lo = r as u32 * 8;
            let cell = &mut buf[(x, y)];
            if top > lo {
                paint_stack(cell, &bounds[..nb], lo, lo + 8, g, th);
                continue;
            }
            let (ch, style) = if i == st.cursor {
                (g.cursor_line(), th.cursor)
            } else if starts {
                (g.mark_line(), th.mark)
            } else {
                (' ', th.text)
            };
            cell.set_char(ch).set_style(style);
        }
        if peak == Some(i) {
            let r = (top.div_ceil(8) as u16).min(rows - 1);
            buf[(x, plot.bottom() - 1 - r)]
                .set_char(g.peak())
                .set_style(th.peak_marker);
        }
    }
}

/// Size text for the panel: full precision when there is room, short otherwise.
fn size(n: u64, wide: bool) -> String {
    if wide {
        fmt::bytes(n)
    } else {
        fmt::bytes_short(n)
    }
}

fn delta(d: i128, wide: bool) -> String {
    if wide {
        signed_bytes(d)
    } else {
        let s = fmt::bytes_short(d.unsigned_abs() as u64);
        match d.signum() {
            -1 => format!("−{s}"),
            1 => format!("+{s}"),
            _ => "0".into(),
        }
    }
}

fn draw_bands(buf: &mut Buffer, r: Rect, sh: &Shared, st: &DiffState) {
    let th = &sh.theme;
    let Some(d) = &st.diff else { return };
    if r.height == 0 {
        return;
    }
    let wide = r.width >= 48;
    let vw = if wide { 11 } else { 7 };
    let head = format!(
        " {:<11}{:>vw$}{:>vw$}{:>vw$}",
        "bands@peak", "A", "B", "B − A"
    );
    super::fill(buf, Rect::new(r.x, r.y, r.width, 1), th.live_header);
    put(buf, r.x, r.y, &head, r.width, th.live_header);
    let (Some(pa), Some(pb)) = (d.peak_a, d.peak_b) else {
        put(buf, r.x + 1, r.y + 1, "a run has no peak", r.width, th.dim);
        return;
    };
    let mut lines: Vec<(String, u64, u64, i128, ratatui::style::Style)> = Band::ALL
        .iter()
        .map(|&b| {
            (
                b.name().to_string(),
                pa.bands.get(b),
                pb.bands.get(b),
                d.band_delta[b.idx()],
                th.band(b),
            )
        })
        .collect();
    lines.push((
        "total".into(),
        pa.bytes.0,
        pb.bytes.0,
        pb.bytes.0 as i128 - pa.bytes.0 as i128,
        th.header_title,
    ));
    for (i, (name, a, b, dd, style)) in lines.into_iter().enumerate() {
        let y = r.y + 1 + i as u16;
        if y >= r.bottom() {
            break;
        }
        let x = put(buf, r.x, y, &format!(" {name:<11}"), r.width, style);
        let [ka, kb] = Band::parse(&name).map_or([true; 2], |band| d.band_known(band));
        let shown = |known: bool, v: u64| if known { size(v, wide) } else { "n/a".into() };
        let rest = format!(
            "{:>vw$}{:>vw$}{:>vw$}",
            shown(ka, a),
            shown(kb, b),
            if ka && kb {
                delta(dd, wide)
            } else {
                "n/a".into()
            }
        );
        let st = if dd != 0 {
            th.text.add_modifier(Modifier::BOLD)
        } else {
            th.text
        };
        put(buf, x, y, &rest, r.right().saturating_sub(x), st);
    }
}

fn draw_steps(buf: &mut Buffer, r: Rect, sh: &Shared, st: &DiffState) {
    let th = &sh.theme;
    let Some(d) = &st.diff else { return };
    if r.height == 0 {
        return;
    }
    let wide = r.width >= 50;
    let vw = if wide { 11 } else { 7 };
    let nw = (r.width as usize).saturating_sub(3 + 3 * vw).clamp(4, 16);
    let head = format!(
        " {:<nw$} {:>vw$}{:>vw$}{:>vw$}",
        format!("peak per step ({} steps)", d.steps.len()),
        "A",
        "B",
        "B − A"
    );
    let head = if head.chars().count() > r.width as usize {
        format!(" {:<nw$} {:>vw$}{:>vw$}{:>vw$}", "step", "A", "B", "B − A")
    } else {
        head
    };
    super::fill(buf, Rect::new(r.x, r.y, r.width, 1), th.live_header);
    put(buf, r.x, r.y, &head, r.width, th.live_header);
    // The steps that differ most: every step whose |B − A| equals the largest non-zero one.
    let top = d
        .most_different
        .first()
        .and_then(|&k| d.steps[k].delta())
        .map_or(0, |v| v.unsigned_abs());
    let selected = segment_at(&st.segments, st.cursor)
        .and_then(|i| st.segments.get(i))
        .and_then(|s| s.step);
    let rows = r.height.saturating_sub(1) as usize;
    let offset = selected.map_or(0, |s| (s + 1).saturating_sub(rows));
    let sel_style = Theme::as_bg(th.live_selected);
    for (i, s) in d.steps.iter().enumerate().skip(offset).take(rows) {
        let y = r.y + 1 + (i - offset) as u16;
        if Some(i) == selected {
            super::fill(buf, Rect::new(r.x, y, r.width, 1), sel_style);
        }
        let most = top > 0 && s.delta().is_some_and(|v| v.unsigned_abs() == top);
        let name = s.a.as_ref().or(s.b.as_ref()).map_or("-", |r| &*r.name);
        let mark = if most {
            if sh.glyphs == Glyphs::Ascii {
                "*"
            } else {
                "◆"
            }
        } else {
            " "
        };
        let pa = s.a.as_ref().map_or("–".into(), |r| size(r.peak.0, wide));
        let pb = s.b.as_ref().map_or("–".into(), |r| size(r.peak.0, wide));
        let dd = s.delta().map_or("–".into(), |v| delta(v, wide));
        let line = format!(
            "{mark}{:<nw$} {pa:>vw$}{pb:>vw$}{dd:>vw$}",
            fmt::trunc(name, nw)
        );
        let style = if most {
            th.matched.add_modifier(Modifier::BOLD)
        } else {
            th.text
        };
        put(buf, r.x, y, &line, r.width, style);
    }
    if d.steps.len() > rows && rows > 0 {
        let more = format!(" {}/{} ", offset + rows.min(d.steps.len()), d.steps.len());
        let w = more.chars().count() as u16;
        if w < r.width {
            put(buf, r.right() - w, r.y, &more, w, th.live_header);
        }
    }
}

fn draw_status(buf: &mut Buffer, r: Rect, sh: &Shared) {
    let th = &sh.theme;
    if let Some(msg) = &sh.status {
        put(
            buf,
            r.x + 1,
            r.y,
            msg,
            r.width.saturating_sub(1),
            th.status_bar,
        );
        return;
    }
    let mut x = r.x;
    for (k, what) in [
        ("h/l", "cursor"),
        ("[ ]", "steps"),
        ("p/P", "peak A/B"),
        ("m", "most different"),
        ("f", "fair"),
        ("?", "help"),
        ("q", "quit"),
    ] {
        if x >= r.right() {
            break;
        }
        x = put(buf, x, r.y, &format!(" {k}"), r.right() - x, th.status_key);
        x = put(
            buf,
            x,
            r.y,
            &format!(" {what} "),
            r.right().saturating_sub(x),
            th.status_bar,
        );
    }
}
