//! The help overlay, generated from the page's key table (one source of truth).

use super::put;
use crate::tui::fmt;
use crate::tui::keymap::{self, Mode};
use crate::tui::shared::Shared;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::{Block, Borders, Clear, Widget};

/// Draws the `?` overlay for the page's key `mode`: its tables in one column, or two when
/// one does not fit the height and two fit the width; scrolled by `sh.help_scroll` when it is
/// still taller than the screen.
pub fn draw(buf: &mut Buffer, area: Rect, sh: &Shared, mode: Mode) {
    let th = &sh.theme;
    let rows = keymap::help_rows(&keymap::help_tables(mode));
    let g = keymap::help_geometry(mode, area.width, area.height);
    let r = Rect::new(
        area.x + g.area.x,
        area.y + g.area.y,
        g.area.width,
        g.area.height,
    );
    let scroll = sh.help_scroll.min(g.max_scroll);
    let title = if g.max_scroll > 0 {
        format!(
            " keys {}–{} of {} (↑↓ PgUp PgDn scroll) ",
            scroll + 1,
            scroll + g.visible,
            rows.len()
        )
    } else {
        " keys (any key closes) ".to_string()
    };
    Clear.render(r, buf);
    Block::default()
        .borders(Borders::ALL)
        .border_style(th.help_border)
        .render(r, buf);
    put(
        buf,
        r.x + 1,
        r.y,
        &title,
        r.width.saturating_sub(2),
        th.help_border,
    );
    if g.max_scroll > 0 {
        let close = " any other key closes ";
        put(
            buf,
            r.x + 1,
            r.bottom().saturating_sub(1),
            close,
            r.width.saturating_sub(2),
            th.help_border,
        );
    }
    let cell_w = g.key_w + 1 + g.desc_w + 2;
    let kw = g.key_w;
    for (i, (k, d)) in rows.iter().enumerate() {
        let (c, row) = (i / g.per_col, i % g.per_col);
        if row < scroll || row >= scroll + g.visible {
            continue;
        }
        let y = r.y + 1 + (row - scroll) as u16;
        let x0 = r.x + 1 + (c * cell_w) as u16;
        if y >= r.bottom().saturating_sub(1) || x0 >= r.right().saturating_sub(1) {
            continue;
        }
        let right = r.right() - 1;
        let x = put(buf, x0, y, &format!("{k:<kw$} "), right - x0, th.status_key);
        let room = usize::from(right.saturating_sub(x));
        put(
            buf,
            x,
            y,
            &fmt::trunc_words(d, room),
            right.saturating_sub(x),
            th.text,
        );
    }
}
