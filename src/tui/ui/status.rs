//! The status row: key hints, the last message, or the search prompt.

use super::put;
use crate::tui::app::App;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

const HINTS: [(&str, &str); 7] = [
    ("?", "help"),
    ("p", "peak"),
    ("/", "search"),
    ("Enter", "inspect"),
    ("t", "axis"),
    ("g", "group"),
    ("q", "quit"),
];

pub fn draw(buf: &mut Buffer, r: Rect, app: &App) {
    let th = &app.theme;
    if app.searching {
        super::search::draw(buf, r, app);
        return;
    }
    let mut x = r.x;
    if let Some(msg) = &app.status {
        put(
            buf,
            x + 1,
            r.y,
            msg,
            r.width.saturating_sub(1),
            th.status_bar,
        );
        return;
    }
    for (k, what) in HINTS {
        if x >= r.right() {
            break;
        }
        x = put(buf, x, r.y, &format!(" {k}"), r.right() - x, th.status_key);
        x = put(
            buf,
            x,
            r.y,
            &format!(" {what} "),
            r.right().saturating_sub(x),
            th.status_bar,
        );
    }
    let s = &app.search;
    if !s.query.is_empty() && x < r.right() {
        let cur = s.current.map_or(String::new(), |c| format!("{}/", c + 1));
        let info = format!(" /{} {}{} (n/N)", s.query, cur, s.matches.len());
        put(buf, x, r.y, &info, r.right() - x, th.matched);
    }
}
