//! The OOM panel: one out-of-memory event explained (the core's `allocator::explain`, as
//! `summary` prints it) — requested, rounded, pool, driver free, allocated, reserved, free in
//! reserve, largest free block, capacity, outside the allocator ("unavailable" where the
//! source lacks the figure), then the verdict, its reasoning, the advice, the pinners and the
//! fixes checked by replay, wrapped.

use super::put;
use crate::tui::explorer::ExplorerState;
use crate::tui::fmt;
use crate::tui::shared::Shared;
use memtide_core::allocator::OomExplanation;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// Width of one figure cell (label and value).
const CELL_W: usize = 37;
const LABEL_W: usize = 18;

fn grid_cols(width: u16) -> usize {
    (width.saturating_sub(1) as usize / CELL_W).clamp(1, 5)
}

/// The reasoning, the advice, the pinners and the checked fixes, each wrapped to the panel's
/// width, labelled on their first row.
fn advice_lines(x: &OomExplanation, width: u16) -> Vec<(&'static str, String)> {
    let w = (width as usize).saturating_sub(LABEL_W + 3).max(10);
    let mut out = Vec::new();
    for (label, text) in x.details() {
        for (i, line) in wrap(&text, w).into_iter().enumerate() {
            out.push((if i == 0 { label } else { "" }, line));
        }
    }
    out
}

/// Rows the panel needs at `width` to show everything.
pub fn height(x: &OomExplanation, width: u16) -> u16 {
    let rows = x.figures().len().div_ceil(grid_cols(width));
    (2 + rows + advice_lines(x, width).len()) as u16
}

/// Greedy word wrap to `w` columns (a word longer than `w` is cut).
pub fn wrap(text: &str, w: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let n = line.chars().count();
        let wn = word.chars().count();
        if n > 0 && n + 1 + wn > w {
            out.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
        while line.chars().count() > w {
            let head: String = line.chars().take(w).collect();
            let tail: String = line.chars().skip(w).collect();
            out.push(head);
            line = tail;
        }
    }
    if !line.is_empty() {
        out.push(line);
    }
    out
}

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
    let cols = grid_cols(r.width);
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
    let lines = advice_lines(x, r.width);
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

#[cfg(test)]
mod tests {
    use super::wrap;

    #[test]
    fn wrap_keeps_words_and_width() {
        let w = wrap("the device is full of live tensors", 12);
        assert_eq!(w, ["the device", "is full of", "live tensors"]);
        assert!(wrap("abcdefghijklmnop", 5)
            .iter()
            .all(|l| l.chars().count() <= 5));
    }
}
