//! The diff screen's fair-comparison panel (`f`): the parity lines, each run's boundary and
//! what the change bought and cost, as `memtide diff` prints them, over the plots; scrolled
//! with `j`/`k` when taller than the screen.

use super::put;
use crate::tui::diffview::DiffState;
use crate::tui::fairpanel;
use crate::tui::shared::Shared;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::{Block, Borders, Clear, Widget};

pub fn draw(buf: &mut Buffer, area: Rect, sh: &Shared, st: &DiffState) {
    let Some(f) = st.fair.as_ref().filter(|_| st.fair_open) else {
        return;
    };
    let th = &sh.theme;
    let r = fairpanel::rect(area.width, area.height);
    if r.height < 3 || r.width < 12 {
        return;
    }
    let inner = r.width - 2;
    let lines = fairpanel::lines(f, inner as usize);
    let rows = fairpanel::visible_rows(area.width, area.height);
    let scroll = st.fair_scroll.min(lines.len().saturating_sub(rows));
    Clear.render(r, buf);
    Block::default()
        .borders(Borders::ALL)
        .border_style(th.help_border)
        .render(r, buf);
    let title = if lines.len() > rows {
        format!(
            " fair comparison · lines {}–{} of {} (j/k scroll) · f or Esc closes ",
            scroll + 1,
            (scroll + rows).min(lines.len()),
            lines.len()
        )
    } else {
        " fair comparison · f or Esc closes ".to_string()
    };
    put(buf, r.x + 1, r.y, &title, inner, th.help_border);
    for (i, l) in lines.iter().skip(scroll).take(rows).enumerate() {
        let style = if l.starts_with("warning") {
            th.error
        } else if l.starts_with(' ') {
            th.text
        } else {
            th.header_title
        };
        put(buf, r.x + 1, r.y + 1 + i as u16, l, inner, style);
    }
}
