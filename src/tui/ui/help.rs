//! The help overlay, generated from the page's key table (one source of truth).

use super::put;
use crate::tui::keymap::Binding;
use crate::tui::shared::Shared;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::{Block, Borders, Clear, Widget};

/// Draws the overlay listing `table` (the page's key table).
pub fn draw(buf: &mut Buffer, area: Rect, sh: &Shared, table: &[Binding]) {
    draw_tables(buf, area, sh, &[table]);
}

/// Draws the overlay listing several tables one after the other (the allocator view's keys,
/// then the explorer's that still work under it).
pub fn draw_tables(buf: &mut Buffer, area: Rect, sh: &Shared, tables: &[&[Binding]]) {
    let th = &sh.theme;
    let rows: Vec<(String, &str)> = tables
        .iter()
        .flat_map(|t| t.iter())
        .map(|b| {
            let keys: Vec<&str> = b.keys.iter().map(|k| k.label).collect();
            (keys.join(" "), b.help)
        })
        .collect();
    let kw = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(4);
    let dw = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(10);
    // One column when it fits the height, else two side by side.
    let cols: usize = if rows.len() + 2 <= area.height as usize {
        1
    } else {
        2
    };
    let per_col = rows.len().div_ceil(cols);
    let cell_w = kw + 1 + dw + 2;
    let w = ((cell_w * cols + 2) as u16).min(area.width);
    let h = (per_col as u16 + 2).min(area.height);
    let r = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + (area.height - h) / 2,
        w,
        h,
    );
    Clear.render(r, buf);
    Block::default()
        .borders(Borders::ALL)
        .border_style(th.help_border)
        .title(" keys (any key closes) ")
        .render(r, buf);
    for (i, (k, d)) in rows.iter().enumerate() {
        let (c, row) = (i / per_col, i % per_col);
        let y = r.y + 1 + row as u16;
        let x0 = r.x + 1 + (c * cell_w) as u16;
        if y >= r.bottom().saturating_sub(1) || x0 >= r.right().saturating_sub(1) {
            continue;
        }
        let right = r.right() - 1;
        let x = put(buf, x0, y, &format!("{k:<kw$} "), right - x0, th.status_key);
        put(buf, x, y, d, right.saturating_sub(x), th.text);
    }
}
