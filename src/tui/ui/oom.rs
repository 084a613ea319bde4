//! The OOM panel: one out-of-memory event explained (the core's `allocator::explain`, as
//! `summary` prints it) — requested, rounded, pool, driver free, allocated, reserved, free in
//! reserve, largest free block, capacity, outside the allocator ("unavailable" where the
//! source lacks the figure), then the verdict, its reasoning, the advice, the pinners and the
//! fixes checked by replay, wrapped; scrolled by `J`/`K` when it does not fit (the title says
//! which rows are shown).

use super::put;
use crate::tui::device::Device;
use crate::tui::explorer::ExplorerState;
use crate::tui::fmt;
use crate::tui::layout::{
    oom_advice_lines, oom_grid_cols, oom_max_scroll, OOM_CELL_W as CELL_W, OOM_LABEL_W as LABEL_W,
};
use crate::tui::shared::Shared;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// One row of the panel's body.
enum Row<'a> {
    /// Figure cells side by side: (label, value).
    Figures(&'a [(&'static str, String)]),
    Verdict,
    /// A labelled (or continued) line of the reasoning, advice, pinners or fixes.
    Detail(&'static str, String),
}

pub fn draw(buf: &mut Buffer, r: Rect, sh: &Shared, ex: &ExplorerState) {
    let th = &sh.theme;
    let (Some(dev), Some(k)) = (ex.device(), ex.panel_oom()) else {
        return;
    };
    let Some(ooms) = ex.ooms(dev) else {
        waiting(buf, r, sh, ex, dev, k);
        return;
    };
    let Some(x) = ooms.get(k) else {
        return;
    };
    let at = dev.oom_at.get(k).copied().unwrap_or(ex.view.cursor);
    let tr = &dev.trace;
    let sep = sh.glyphs.sep();
    let figs = x.figures();
    let mut rows: Vec<Row> = figs
        .chunks(oom_grid_cols(r.width))
        .map(Row::Figures)
        .collect();
    rows.push(Row::Verdict);
    rows.extend(
        oom_advice_lines(x, r.width)
            .into_iter()
            .map(|(label, line)| Row::Detail(label, line)),
    );
    let room = (r.height as usize).saturating_sub(1);
    let first = ex
        .oom_first_row(k)
        .min(oom_max_scroll(rows.len(), r.height));
    let mut title = format!(
        " out of memory at {} {sep} {} {sep} OOM {}/{}",
        fmt::at_mode(tr, at, ex.absolute_time),
        x.device,
        k + 1,
        dev.oom_at.len()
    );
    if at != ex.view.cursor {
        title.push_str(" (pinned; the cursor is elsewhere)");
    }
    if rows.len() > room {
        let last = (first + room).min(rows.len());
        title.push_str(&format!(
            "   J/K scroll {}–{last}/{}",
            first + 1,
            rows.len()
        ));
    }
    title.push_str("   o/O next/prev · x pin · s allocator");
    super::fill(buf, Rect::new(r.x, r.y, r.width, 1), th.live_header);
    put(buf, r.x, r.y, &title, r.width, th.live_header);
    let shown = rows.iter().enumerate().skip(first).take(room);
    for (y, (i, row)) in (r.y + 1..).zip(shown) {
        // The last row shown ends in … when more follows below.
        let more = i + 1 == first + room && i + 1 < rows.len();
        match row {
            Row::Figures(chunk) => figures(buf, r, y, sh, chunk),
            Row::Verdict => {
                let lx = label(buf, r, y, sh, "verdict");
                put(
                    buf,
                    lx,
                    y,
                    x.verdict.name(),
                    r.right().saturating_sub(lx),
                    th.oom,
                );
            }
            Row::Detail(name, line) => {
                let lx = label(buf, r, y, sh, name);
                let text = if more {
                    format!("{line}…")
                } else {
                    line.clone()
                };
                put(buf, lx, y, &text, r.right().saturating_sub(lx), th.text);
            }
        }
    }
}

/// The panel while the OOM is still being explained (its fix list replayed behind): its
/// title and what is on the way; every key works meanwhile.
fn waiting(buf: &mut Buffer, r: Rect, sh: &Shared, ex: &ExplorerState, dev: &Device, k: usize) {
    let at = dev.oom_at.get(k).copied().unwrap_or(ex.view.cursor);
    let title = format!(
        " out of memory at {} {} OOM {}/{}   o/O next/prev · x pin · s allocator",
        fmt::at_mode(&dev.trace, at, ex.absolute_time),
        sh.glyphs.sep(),
        k + 1,
        dev.oom_at.len()
    );
    let how_far = match ex.oom_replayed {
        Some((done, total)) if total > 0 => {
            format!(" ({} % so far)", done.min(total) * 100 / total)
        }
        _ => String::new(),
    };
    let what = format!("explaining this OOM: the allocator's settings are replayed from the start of the history to check each fix{how_far}; the panel fills in when they are done (every key works meanwhile)");
    super::waiting_panel(buf, r, sh, &title, &what);
}

/// A row's label, padded; returns where its value starts.
fn label(buf: &mut Buffer, r: Rect, y: u16, sh: &Shared, name: &str) -> u16 {
    put(
        buf,
        r.x + 2,
        y,
        &format!("{name:<LABEL_W$}"),
        r.width.saturating_sub(2),
        sh.theme.dim,
    )
}

/// A row of figure cells.
fn figures(buf: &mut Buffer, r: Rect, y: u16, sh: &Shared, chunk: &[(&'static str, String)]) {
    let th = &sh.theme;
    let mut cx = r.x + 2;
    for (name, value) in chunk {
        let st = if value == "unavailable" {
            th.dim
        } else {
            th.text
        };
        let lx = put(
            buf,
            cx,
            y,
            &format!("{name:<LABEL_W$}"),
            r.right().saturating_sub(cx),
            th.dim,
        );
        put(
            buf,
            lx,
            y,
            &fmt::trunc(value, CELL_W - LABEL_W - 1),
            r.right().saturating_sub(lx),
            st,
        );
        cx += CELL_W as u16;
        if cx >= r.right() {
            break;
        }
    }
}
