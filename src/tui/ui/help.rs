//! The help overlay, generated from the keymap's table (one source of truth).

use super::put;
use crate::tui::app::App;
use crate::tui::keymap::bindings;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::{Block, Borders, Clear, Widget};

pub fn draw(buf: &mut Buffer, area: Rect, app: &App) {
    let th = &app.theme;
    let rows: Vec<(String, &str)> = bindings()
        .iter()
        .map(|b| (b.keys.join(" "), b.action.describe()))
        .collect();
    let kw = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(4);
    let dw = rows.iter().map(|r| r.1.chars().count()).max().unwrap_or(10);
    let w = ((kw + dw + 5) as u16).min(area.width);
    let h = (rows.len() as u16 + 2).min(area.height);
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
        let y = r.y + 1 + i as u16;
        if y >= r.bottom() - 1 {
            break;
        }
        let x = put(
            buf,
            r.x + 2,
            y,
            &format!("{k:<kw$} "),
            r.width.saturating_sub(3),
            th.status_key,
        );
        put(buf, x, y, d, (r.right() - 1).saturating_sub(x), th.text);
    }
}
