//! The search prompt in the status row: the query, a cursor, and the match count.

use super::put;
use crate::tui::explorer::ExplorerState;
use crate::tui::fmt;
use crate::tui::shared::Shared;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

pub fn draw(buf: &mut Buffer, r: Rect, sh: &Shared, ex: &ExplorerState) {
    let th = &sh.theme;
    let s = &ex.search;
    let x = put(
        buf,
        r.x,
        r.y,
        &format!("/{}▏", s.query),
        r.width,
        th.search_input,
    );
    let info = if s.query.is_empty() {
        "  type to search names and frames · Enter: best match · Esc: cancel".to_string()
    } else if s.pending {
        "  searching…".to_string()
    } else {
        format!(
            "  {} storages match ({} strings) · Enter: the best",
            fmt::thousands(s.matches.len() as u64),
            fmt::thousands(s.strings as u64)
        )
    };
    put(buf, x, r.y, &info, r.right().saturating_sub(x), th.dim);
}
