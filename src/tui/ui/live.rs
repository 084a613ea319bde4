//! The live-set panel: storages live at the cursor, biggest first (size, band, name, top
//! frame, views, "retained by view"), or grouped by band / by top frame with totals.

use super::put;
use crate::tui::explorer::ExplorerState;
use crate::tui::fmt;
use crate::tui::liveset::GroupMode;
use crate::tui::shared::Shared;
use crate::tui::theme::Theme;
use memtide_core::analysis::Retained;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

pub fn draw(buf: &mut Buffer, r: Rect, sh: &Shared, ex: &ExplorerState) {
    let th = &sh.theme;
    let lv = &ex.live;
    let Some(dev) = ex.device() else {
        return;
    };
    let mode = match lv.group {
        GroupMode::List => "biggest first",
        GroupMode::ByBand => "by band",
        GroupMode::ByFrame => "by user frame",
        GroupMode::Tree => "stack tree, user frames; Enter: open/close, /: filter",
    };
    let busy = if lv.pending { " (updating…)" } else { "" };
    let title = if dev.trace.identities_known() {
        format!(
            " live at {}{busy}: {} storages {} {}   [{mode}; g: group]",
            fmt::at_mode(&dev.trace, lv.at, ex.absolute_time),
            fmt::thousands(lv.count as u64),
            sh.glyphs.sep(),
            fmt::bytes(lv.total.0),
        )
    } else {
        format!(
            " live at {}{busy}: storages unavailable {} {}",
            fmt::at_mode(&dev.trace, lv.at, ex.absolute_time),
            sh.glyphs.sep(),
            fmt::bytes(lv.total.0),
        )
    };
    super::fill(buf, Rect::new(r.x, r.y, r.width, 1), th.live_header);
    put(buf, r.x, r.y, &title, r.width, th.live_header);
    if !dev.trace.identities_known() {
        // Totals are known, allocations are not: say so instead of an empty list.
        if r.height > 1 {
            put(
                buf,
                r.x,
                r.y + 1,
                &format!("  {}", memtide_core::trace::NO_IDENTITIES),
                r.width,
                th.text,
            );
        }
        return;
    }
    let rows = r.height.saturating_sub(1) as usize;
    let sel_style = Theme::as_bg(th.live_selected);
    let w = r.width as usize;
    for i in 0..rows {
        let idx = lv.offset + i;
        let y = r.y + 1 + i as u16;
        let selected = idx == lv.selected;
        let marker = if selected { sh.glyphs.selected() } else { " " };
        if selected && idx < lv.len() {
            super::fill(buf, Rect::new(r.x, y, r.width, 1), sel_style);
        }
        match lv.group {
            GroupMode::List => {
                let Some(e) = lv.rows.get(idx) else { break };
                let matched = ex.search.set.contains(&e.id);
                let mut x = put(
                    buf,
                    r.x,
                    y,
                    &format!("{marker} {:>10} ", fmt::bytes(e.bytes.0)),
                    r.width,
                    th.text,
                );
                x = put(
                    buf,
                    x,
                    y,
                    &format!("{:<11}", e.band.name()),
                    r.right() - x,
                    th.band(e.band),
                );
                // Tail: views and the retained flag; fixed width at the right.
                let narrow = w < 70;
                let (flag, alarm) = retained_flag(e.retained, w);
                // A wide flag names the view itself: no count beside it.
                let views = match (e.views, narrow) {
                    (0, _) => String::new(),
                    (_, false) if !flag.is_empty() => String::new(),
                    (n, true) => format!("{n}v"),
                    (1, false) => "1 view".to_string(),
                    (n, false) => format!("{n} views"),
                };
                let tail = format!("{views}{flag}");
                let tail_w = tail.chars().count();
                let rest = w.saturating_sub((x - r.x) as usize + tail_w + 1);
                let name_w = (rest * 2 / 5).max(8).min(rest);
                let frame_w = rest.saturating_sub(name_w + 2);
                let name = if e.label.is_empty() {
                    "(unnamed)"
                } else {
                    e.label.as_str()
                };
                let name_st = if matched { th.live_match } else { th.text };
                x = put(
                    buf,
                    x,
                    y,
                    &format!("{:<name_w$}", fmt::trunc(name, name_w)),
                    r.right() - x,
                    name_st,
                );
                x = put(buf, x, y, "  ", r.right() - x, th.text);
                put(
                    buf,
                    x,
                    y,
                    &fmt::trunc(&row_frame(e), frame_w),
                    r.right() - x,
                    th.dim,
                );
                if tail_w > 0 && w > tail_w {
                    let tx = r.right() - tail_w as u16;
                    let vx = put(buf, tx, y, &views, tail_w as u16, th.dim);
                    if !flag.is_empty() {
                        let st = if alarm { th.live_retained } else { th.dim };
                        put(buf, vx, y, &flag, r.right() - vx, st);
                    }
                }
            }
            GroupMode::Tree => {
                let Some(t) = lv.tree_rows.get(idx) else {
                    break;
                };
                let x = put(
                    buf,
                    r.x,
                    y,
                    &format!("{marker} {:>10} ", fmt::bytes(t.bytes)),
                    r.width,
                    th.text,
                );
                let x = put(
                    buf,
                    x,
                    y,
                    &format!("{:>7} ", format!("×{}", t.count)),
                    r.right() - x,
                    th.dim,
                );
                let sign = match (t.children, t.expanded) {
                    (0, _) => "  ",
                    (_, true) => "▾ ",
                    (_, false) => "▸ ",
                };
                let indent = "  ".repeat(t.depth.min(20));
                let x = put(buf, x, y, &format!("{indent}{sign}"), r.right() - x, th.dim);
                let st = if t.matched { th.live_match } else { th.text };
                let x = put(buf, x, y, &t.frame, r.right() - x, st);
                if t.self_bytes > 0 && t.children > 0 && x < r.right() {
                    put(
                        buf,
                        x,
                        y,
                        &format!("  (own {})", fmt::bytes(t.self_bytes)),
                        r.right() - x,
                        th.dim,
                    );
                }
            }
            GroupMode::ByBand | GroupMode::ByFrame => {
                let Some(gr) = lv.groups.get(idx) else {
                    // By band, after the bands: the external one when nothing measures it.
                    if lv.group == GroupMode::ByBand
                        && idx == lv.groups.len()
                        && !dev.trace.external_known
                    {
                        let text = format!(
                            "  {:>10} {:>7} external (no source: --nsys, --device-log, the recorder's samples)",
                            "unavailable", ""
                        );
                        put(buf, r.x, y, &text, r.width, th.dim);
                    }
                    break;
                };
                let st = match memtide_core::trace::Band::parse(&gr.key) {
                    Some(b) if lv.group == GroupMode::ByBand => th.band(b),
                    _ => th.text,
                };
                let x = put(
                    buf,
                    r.x,
                    y,
                    &format!("{marker} {:>10} ", fmt::bytes(gr.bytes.0)),
                    r.width,
                    th.text,
                );
                let x = put(
                    buf,
                    x,
                    y,
                    &format!("{:>7} ", format!("×{}", gr.count)),
                    r.right() - x,
                    th.dim,
                );
                put(buf, x, y, &gr.key, r.right() - x, st);
            }
        }
    }
    if lv.group == GroupMode::Tree && lv.tree_rows.is_empty() && lv.count > 0 && rows > 0 {
        let why = if ex.search.query.is_empty() {
            "no stack tree: the storages record no frames".to_string()
        } else {
            format!(
                "no frame matches {:?} (Esc clears the filter)",
                ex.search.query
            )
        };
        put(
            buf,
            r.x + 2,
            r.y + 1,
            &why,
            r.width.saturating_sub(2),
            th.dim,
        );
    }
    if lv.count == 0 && rows > 0 {
        put(
            buf,
            r.x + 2,
            r.y + 1,
            "nothing live at the cursor",
            r.width.saturating_sub(2),
            th.dim,
        );
    }
}

/// A live row's frame column: the user frame (`file.py:123 function`) with the innermost op
/// beside it, else the top frame as the source gave it.
fn row_frame(e: &memtide_core::analysis::LiveEntry) -> String {
    if e.user_frame.is_empty() {
        return e.frame.clone();
    }
    let same = e.innermost.is_empty()
        || e.user_frame.ends_with(&format!(" {}", e.innermost))
        || e.label == e.innermost;
    if same {
        e.user_frame.clone()
    } else {
        format!("{}  ← {}", e.user_frame, e.innermost)
    }
}

/// A live row's retained-by-view flag and whether it is the alarm: "⚑ 4.000 KiB view keeps
/// 1.000 GiB" for views much smaller than their storage ("⚑ 4.000 KiB view" on a pane under
/// 100 columns, "⚑" under 70), a plain "retained by a view (size unknown)" where the file
/// records no view sizes.
fn retained_flag(r: Option<Retained>, width: usize) -> (String, bool) {
    let Some(r) = r else {
        return (String::new(), false);
    };
    let Retained::SmallView {
        views,
        view_bytes,
        storage,
    } = r
    else {
        let text = match width {
            0..70 => "",
            70..100 => "view (size unknown)",
            _ => "retained by a view (size unknown)",
        };
        return (text.to_string(), false);
    };
    let what = if views == 1 { "view" } else { "views" };
    let text = match width {
        0..70 => " ⚑".to_string(),
        70..100 => format!("⚑ {} {what}", fmt::bytes(view_bytes.0)),
        _ => format!(
            "⚑ {} {what} {} {}",
            fmt::bytes(view_bytes.0),
            if views == 1 { "keeps" } else { "keep" },
            fmt::bytes(storage.0)
        ),
    };
    (text, true)
}
