//! The ranks overview: a header with the spread, one row per rank (A/B marks, the worst
//! rank starred and highlighted, peak, a sparkline of its timeline on the shared scale,
//! reserved peak, OOMs, the persistent / activation split at the peak, the file), rows
//! still loading with their progress, unreadable ones with their error; the selected
//! rank's line, the skipped files and the status row below.

use super::put;
use crate::tui::fmt;
use crate::tui::ranks::{RanksState, Slot, SortBy, HEADER_ROWS};
use crate::tui::shared::Shared;
use crate::tui::theme::Glyphs;
use memtide_core::ranks::RankRow;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};

/// What a column shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Mark,
    Rank,
    Device,
    Peak,
    Timeline,
    StepPhase,
    Reserved,
    Ooms,
    Split,
    Persistent,
    Activation,
    File,
}

#[derive(Clone, Copy, Debug)]
struct Col {
    kind: Kind,
    title: &'static str,
    w: u16,
    right: bool,
}

const fn col(kind: Kind, title: &'static str, w: u16, right: bool) -> Col {
    Col {
        kind,
        title,
        w,
        right,
    }
}

/// The columns that fit `width`, with the flexible ones (timeline, file) sized.
fn columns(width: u16) -> Vec<Col> {
    use Kind::*;
    let mut cols = if width >= 120 {
        let mut v = vec![col(Mark, "", 2, false), col(Rank, "rank", 5, true)];
        if width >= 150 {
            v.push(col(Device, "device", 7, false));
        }
        v.extend([
            col(Peak, "peak", 10, true),
            col(Timeline, "timeline", 0, false),
            col(StepPhase, "peak at · step · phase", 24, false),
            col(Reserved, "reserved", 10, true),
            col(Ooms, "OOM", 4, true),
            col(Persistent, "persistent", 10, true),
            col(Activation, "activation", 10, true),
            col(File, "file", 0, false),
        ]);
        v
    } else if width >= 80 {
        vec![
            col(Mark, "", 2, false),
            col(Rank, "rank", 5, true),
            col(Peak, "peak", 10, true),
            col(Timeline, "timeline", 0, false),
            col(Reserved, "reserved", 10, true),
            col(Ooms, "OOM", 4, true),
            col(Split, "pers/act", 9, true),
            col(File, "file", 0, false),
        ]
    } else {
        vec![
            col(Mark, "", 2, false),
            col(Rank, "rank", 5, true),
            col(Peak, "peak", 10, true),
            col(Ooms, "OOM", 4, true),
            col(Timeline, "timeline", 0, false),
            col(File, "file", 0, false),
        ]
    };
    // One space after each column; the flexible ones share the rest.
    let fixed: u16 = cols.iter().map(|c| c.w + 1).sum();
    let rest = width.saturating_sub(fixed);
    let file_w = (rest / 2).clamp(8.min(rest), 32);
    let timeline_w = rest.saturating_sub(file_w + 1);
    for c in &mut cols {
        match c.kind {
            File => c.w = file_w,
            Timeline => c.w = timeline_w,
            _ => {}
        }
    }
    cols
}

pub fn draw(buf: &mut Buffer, area: Rect, sh: &Shared, st: &RanksState) {
    let th = &sh.theme;
    let w = area.width;
    draw_header(buf, area, sh, st);
    let cols = columns(w);
    // Column titles.
    let y = area.y + 2;
    super::fill(buf, Rect::new(area.x, y, w, 1), th.live_header);
    let mut x = area.x;
    for c in &cols {
        cell(buf, x, y, c, c.title, th.live_header);
        x += c.w + 1;
    }
    let body = RanksState::body_rows(area.height);
    let worst = st.worst_slot();
    let ymax = st.spread.map_or(1, |s| s.max.max(1));
    for (k, &i) in st.order.iter().skip(st.offset).take(body).enumerate() {
        let y = area.y + HEADER_ROWS + k as u16;
        let selected = i == st.cursor;
        let mut base = if Some(i) == worst {
            th.peak_marker.add_modifier(Modifier::BOLD)
        } else {
            th.text
        };
        if selected {
            super::fill(buf, Rect::new(area.x, y, w, 1), th.live_selected);
            base = base.patch(th.live_selected);
        }
        draw_row(buf, area.x, y, &cols, sh, st, i, base, ymax);
    }
    draw_footer(buf, area, sh, st);
}

/// Title, counts and sort order; the spread and the worst rank.
fn draw_header(buf: &mut Buffer, area: Rect, sh: &Shared, st: &RanksState) {
    let th = &sh.theme;
    let w = area.width;
    let sep = sh.glyphs.sep();
    let (rows, failed, loading) = st.counts();
    let mut counts = format!(" {sep} {rows}/{} read", rows + failed + loading);
    if loading > 0 {
        counts.push_str(&format!(" {sep} {loading} loading"));
    }
    if failed > 0 {
        counts.push_str(&format!(" {sep} {failed} unreadable"));
    }
    super::fill(buf, Rect::new(area.x, area.y, w, 1), th.header_title);
    let sort = match st.sort {
        SortBy::Rank => "sort: rank (s) ",
        SortBy::Peak => "sort: peak (s) ",
    };
    let sw = sort.chars().count() as u16;
    let tw = w.saturating_sub(sw + 1);
    // The directory gives way first: the counts say how far the reading is.
    let lead = format!(" memtide ranks {sep} ");
    let room = (tw as usize).saturating_sub(lead.chars().count() + counts.chars().count());
    let title = format!("{lead}{}{counts}", fmt::trunc_left(&st.title, room.max(8)));
    put(
        buf,
        area.x,
        area.y,
        &fmt::trunc(&title, tw as usize),
        tw,
        th.header_title,
    );
    if w > sw + 20 {
        put(buf, area.x + w - sw, area.y, sort, sw, th.header_title);
    }
    let line = match st.spread {
        None if loading > 0 => " spread: waiting for the first rank".to_string(),
        None => " spread: no rank has a peak".to_string(),
        Some(s) => {
            let ratio = s.ratio.map_or("∞".to_string(), |r| format!("{r:.2}×"));
            let mut l = if s.max == s.min {
                format!(
                    " spread {ratio} max/min {sep} every rank {}",
                    fmt::bytes(s.max)
                )
            } else {
                format!(
                    " spread {ratio} max/min {sep} max − median {} {sep} worst rank {}",
                    fmt::bytes(s.max_minus_median),
                    s.worst_rank,
                )
            };
            let oom: Vec<String> = st
                .rows()
                .filter(|r| r.ooms > 0)
                .map(|r| r.rank.to_string())
                .collect();
            if !oom.is_empty() {
                l.push_str(&format!(" {sep} OOM on rank {}", oom.join(", ")));
            }
            l
        }
    };
    put(buf, area.x, area.y + 1, &line, w, th.header_text);
}

/// Writes `s` in column `c` (truncated, aligned).
fn cell(buf: &mut Buffer, x: u16, y: u16, c: &Col, s: &str, style: Style) {
    if c.w == 0 {
        return;
    }
    let s = fmt::trunc(s, c.w as usize);
    let n = s.chars().count() as u16;
    let x = if c.right {
        x + c.w.saturating_sub(n)
    } else {
        x
    };
    put(buf, x, y, &s, c.w, style);
}

#[allow(clippy::too_many_arguments)]
fn draw_row(
    buf: &mut Buffer,
    x0: u16,
    y: u16,
    cols: &[Col],
    sh: &Shared,
    st: &RanksState,
    i: usize,
    base: Style,
    ymax: u64,
) {
    let th = &sh.theme;
    let g = sh.glyphs;
    let name = st
        .files
        .get(i)
        .and_then(|f| f.path.file_name())
        .map_or_else(String::new, |f| f.to_string_lossy().into_owned());
    let mark = match st.marked.iter().position(|&m| m == i) {
        Some(0) => "A",
        Some(_) => "B",
        None => " ",
    };
    let worst = Some(i) == st.worst_slot();
    let star = if worst { "*" } else { " " };
    let guess = st
        .rank_of(i)
        .map_or_else(|| "?".to_string(), |r| format!("{r}?"));
    let dim = base.patch(th.dim);
    let mut x = x0;
    for c in cols {
        let (text, style): (String, Style) = match (&st.slots[i], c.kind) {
            (_, Kind::Mark) => (format!("{mark}{star}"), base),
            (_, Kind::File) => (name.clone(), base),
            (Slot::Row(r), k) => row_cell(r, k, base),
            (Slot::Loading(_) | Slot::Failed(_) | Slot::Waiting, Kind::Rank) => {
                (guess.clone(), dim)
            }
            (Slot::Waiting, Kind::Peak) => ("waiting".into(), dim),
            (Slot::Loading(_), Kind::Peak) => ("loading".into(), dim),
            (Slot::Loading(l), Kind::Timeline) => (progress(l.done, l.total, c.w, g), dim),
            (Slot::Failed(_), Kind::Peak) => ("unreadable".into(), base.patch(th.error)),
            (Slot::Failed(e), Kind::Timeline) => (e.clone(), base.patch(th.error)),
            _ => (String::new(), base),
        };
        if c.kind == Kind::Timeline {
            if let Slot::Row(r) = &st.slots[i] {
                if r.sparkline.is_empty() {
                    cell(buf, x, y, c, "(summary file: no timeline)", dim);
                } else {
                    // The worst rank's sparkline in its highlight; the others in a band colour.
                    let style = if worst {
                        base
                    } else {
                        base.patch(th.band(memtide_core::trace::Band::Activation))
                    };
                    spark(buf, x, y, c.w, &r.sparkline, ymax, g, style);
                }
                x += c.w + 1;
                continue;
            }
        }
        cell(buf, x, y, c, &text, style);
        x += c.w + 1;
    }
    // An unreadable file's error runs from after the peak column to the file column.
    if let Slot::Failed(e) = &st.slots[i] {
        let start = cols
            .iter()
            .position(|c| c.kind == Kind::Peak)
            .map(|k| k + 1);
        let end = cols.iter().position(|c| c.kind == Kind::File);
        if let (Some(a), Some(b)) = (start, end) {
            let xa = x0 + cols[..a].iter().map(|c| c.w + 1).sum::<u16>();
            let xb = x0 + cols[..b].iter().map(|c| c.w + 1).sum::<u16>();
            let w = xb.saturating_sub(xa + 1);
            put(
                buf,
                xa,
                y,
                &fmt::trunc(e, w as usize),
                w,
                base.patch(th.error),
            );
        }
    }
}

/// A loaded rank's cell.
fn row_cell(r: &RankRow, k: Kind, base: Style) -> (String, Style) {
    let b = |v: Option<u64>| v.map_or_else(|| "–".to_string(), fmt::bytes);
    let text = match k {
        Kind::Rank => r.rank.to_string(),
        Kind::Device => r.device.clone(),
        Kind::Peak => b(r.peak),
        Kind::StepPhase => {
            let sp = r.step_phase();
            match (r.peak_index, sp.is_empty()) {
                (Some(i), false) => format!("#{i} {sp}"),
                (Some(i), true) => format!("#{i}"),
                (None, _) if r.peak.is_some() => "start".into(),
                _ => "–".into(),
            }
        }
        Kind::Reserved => b(r.reserved_peak),
        Kind::Ooms => r.ooms.to_string(),
        Kind::Persistent => b(r.persistent),
        Kind::Activation => b(r.activation),
        Kind::Split => match (r.peak, r.persistent, r.activation) {
            (Some(p), Some(pe), Some(a)) if p > 0 => format!(
                "{:.0}%/{:.0}%",
                pe as f64 * 100.0 / p as f64,
                a as f64 * 100.0 / p as f64
            ),
            _ => "–".into(),
        },
        _ => String::new(),
    };
    (text, base)
}

/// `━━━━━──── 45%`
fn progress(done: u64, total: u64, w: u16, g: Glyphs) -> String {
    let frac = if total > 0 {
        (done as f64 / total as f64).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let pct = format!(" {:>3.0}%", frac * 100.0);
    let bar = (w as usize).saturating_sub(pct.len()).min(30);
    let filled = (frac * bar as f64).round() as usize;
    let (full, empty) = if g == Glyphs::Ascii {
        ('#', '.')
    } else {
        ('━', '─')
    };
    let mut s: String = std::iter::repeat_n(full, filled).collect();
    s.extend(std::iter::repeat_n(empty, bar - filled));
    s + &pct
}

/// The timeline as one row of eighth blocks, each the maximum of its part, on the job's
/// scale (`ymax`: the highest peak of all ranks), so ranks compare by height.
#[allow(clippy::too_many_arguments)]
fn spark(
    buf: &mut Buffer,
    x: u16,
    y: u16,
    w: u16,
    points: &[u64],
    ymax: u64,
    g: Glyphs,
    style: Style,
) {
    let cells = memtide_core::ranks::sparkline(points.iter().copied(), w as usize);
    let n = cells.len();
    if n == 0 {
        return;
    }
    for k in 0..w as usize {
        // Stretch a short series over the width.
        let v = cells[(k * n / w as usize).min(n - 1)];
        let e = if v == 0 {
            0
        } else {
            ((v as f64 * 8.0 / ymax as f64).ceil() as u8).clamp(1, 8)
        };
        buf[(x + k as u16, y)]
            .set_char(g.eighth(e))
            .set_style(style);
    }
}

/// The selected rank's line, what was skipped, and the status row.
fn draw_footer(buf: &mut Buffer, area: Rect, sh: &Shared, st: &RanksState) {
    let th = &sh.theme;
    let w = area.width;
    let sep = sh.glyphs.sep();
    let y = area.bottom().saturating_sub(3);
    let name = |i: usize| {
        st.files
            .get(i)
            .and_then(|f| f.path.file_name())
            .map_or_else(String::new, |f| f.to_string_lossy().into_owned())
    };
    let i = st.cursor;
    let (line, style) = match st.slots.get(i) {
        Some(Slot::Row(r)) => {
            let mut l = format!(
                " rank {} {sep} {} {sep} {} {sep} {}",
                r.rank,
                r.file_name(),
                r.device,
                r.format
            );
            if let Some(p) = r.peak {
                l.push_str(&format!(" {sep} peak {}", fmt::bytes(p)));
                if let Some(ix) = r.peak_index {
                    l.push_str(&format!(" at #{ix}"));
                }
                let sp = r.step_phase();
                if !sp.is_empty() {
                    l.push_str(&format!(" in {sp}"));
                }
            }
            if r.ooms > 0 {
                l.push_str(&format!(
                    " {sep} {} OOM{}",
                    r.ooms,
                    if r.ooms == 1 { "" } else { "s" }
                ));
            }
            l.push_str(&format!(" {sep} rank from {}", r.rank_from.name()));
            (l, th.text)
        }
        Some(Slot::Failed(e)) => (format!(" {}: unreadable: {e}", name(i)), th.error),
        Some(Slot::Loading(l)) => (
            format!(
                " {}: loading {} of {}",
                name(i),
                fmt::bytes(l.done),
                fmt::bytes(l.total)
            ),
            th.dim,
        ),
        Some(Slot::Waiting) => (format!(" {}: waiting for a reader", name(i)), th.dim),
        _ => (String::new(), th.text),
    };
    put(buf, area.x, y, &line, w, style);
    let mut skipped: Vec<String> = st
        .slots
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s, Slot::Skipped(_)))
        .map(|(i, _)| name(i))
        .collect();
    skipped.extend(st.skipped.iter().map(|s| {
        let name = s
            .path
            .file_name()
            .map_or_else(String::new, |f| f.to_string_lossy().into_owned());
        if s.is_directory() {
            name + "/"
        } else {
            name
        }
    }));
    let extra = if skipped.is_empty() {
        match st.finished {
            Some(d) if st.done == st.slots.len() => format!(" read in {:.1} s", d.as_secs_f64()),
            _ => String::new(),
        }
    } else {
        let count = match skipped.len() {
            n if n > memtide_core::ranks::NAMES_SHOWN => format!(" {n}"),
            _ => String::new(),
        };
        format!(
            " skipped{count} (not traces): {}",
            memtide_core::ranks::names_with_more(&skipped, memtide_core::ranks::NAMES_SHOWN)
        )
    };
    put(buf, area.x, y + 1, &extra, w, th.dim);
    let sy = y + 2;
    super::fill(buf, Rect::new(area.x, sy, w, 1), th.status_bar);
    if let Some(msg) = &sh.status {
        put(buf, area.x + 1, sy, msg, w.saturating_sub(1), th.status_bar);
        return;
    }
    let mut x = area.x;
    for (k, what) in [
        ("Enter", "open"),
        ("Space", "mark"),
        ("d", "diff"),
        ("s", "sort"),
        ("w", "worst"),
        ("?", "help"),
        ("q", "quit"),
    ] {
        if x >= area.right() {
            break;
        }
        x = put(
            buf,
            x,
            sy,
            &format!(" {k}"),
            area.right() - x,
            th.status_key,
        );
        x = put(
            buf,
            x,
            sy,
            &format!(" {what} "),
            area.right().saturating_sub(x),
            th.status_bar,
        );
    }
}
