//! The OOM panel: one out-of-memory event explained (the core's `allocator::explain`, as
//! `summary` prints it) — requested, rounded, pool, driver free, allocated, reserved, free in
//! reserve, largest free block, capacity, outside the allocator ("unavailable" where the
//! source lacks the figure), then the verdict, its reasoning, the advice, the pinners and the
//! fixes checked by replay, wrapped.

use super::put;
use crate::tui::explorer::ExplorerState;
use crate::tui::fmt;
use crate::tui::layout::{
    oom_advice_lines, oom_grid_cols, OOM_CELL_W as CELL_W, OOM_LABEL_W as LABEL_W,
};
use crate::tui::shared::Shared;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

pub fn draw(buf: &mut Buffer, r: Rect, sh: &Shared, ex: &ExplorerState) {
    let th = &sh.theme;
    let (Some(dev), Some(k)) = (ex.device(), ex.panel_oom()) else {
        return;
    };
    let Some(x) = dev.ooms().get(k) else {
        return;
    };
    let at = dev.oom_at.get(k).copied().unwrap_or(ex.view.cursor);
    let tr = &dev.trace;
    let sep = sh.glyphs.sep();
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
    title.push_str("   o/O next/prev · x pin · s allocator");
    super::fill(buf, Rect::new(r.x, r.y, r.width, 1), th.live_header);
    put(buf, r.x, r.y, &title, r.width, th.live_header);
    let cols = oom_grid_cols(r.width);
    let figs = x.figures();
    let mut y = r.y + 1;
    for chunk in figs.chunks(cols) {
        if y >= r.bottom() {
            return;
        }
        let mut cx = r.x + 2;
        for (label, value) in chunk {
            let st = if value == "unavailable" {
                th.dim
            } else {
                th.text
            };
            let lx = put(
                buf,
                cx,
                y,
                &format!("{label:<LABEL_W$}"),
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
        y += 1;
    }
    if y >= r.bottom() {
        return;
    }
    let lx = put(
        buf,
        r.x + 2,
        y,
        &format!("{:<LABEL_W$}", "verdict"),
        r.width.saturating_sub(2),
        th.dim,
    );
    put(
        buf,
        lx,
        y,
        x.verdict.name(),
        r.right().saturating_sub(lx),
        th.oom,
    );
    y += 1;
    let lines = oom_advice_lines(x, r.width);
    let room = r.bottom().saturating_sub(y) as usize;
    for (i, (label, line)) in lines.iter().enumerate().take(room) {
        let lx = put(
            buf,
            r.x + 2,
            y,
            &format!("{label:<LABEL_W$}"),
            r.width.saturating_sub(2),
            th.dim,
        );
        // The last row shown ends in … when the advice goes on.
        let text = if i + 1 == room && lines.len() > room {
            format!("{line}…")
        } else {
            line.clone()
        };
        put(buf, lx, y, &text, r.right().saturating_sub(lx), th.text);
        y += 1;
    }
}
