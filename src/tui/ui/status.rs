//! The status row: key hints, the last message, or the search prompt.

use super::fit::{self, Part};
use super::put;
use crate::tui::explorer::ExplorerState;
use crate::tui::shared::Shared;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// The usual hints, each with how long it stays on a narrow terminal (higher stays longer).
const HINTS: [(&str, &str, u8); 7] = [
    ("?", "help", 9),
    ("p", "peak", 6),
    ("/", "search", 4),
    ("Enter", "inspect", 5),
    ("t", "axis", 2),
    ("g", "group", 2),
    ("q", "quit", 9),
];

pub fn draw(buf: &mut Buffer, r: Rect, sh: &Shared, ex: &ExplorerState) {
    let th = &sh.theme;
    if ex.searching {
        super::search::draw(buf, r, sh, ex);
        return;
    }
    // Follow mode keeps its state at the right end; the rest of the row as usual.
    let mut r = r;
    if let Some(f) = &ex.follow {
        let text = f.status_text();
        let w = (text.chars().count() as u16).min(r.width / 2);
        let x = r.right().saturating_sub(w);
        let style = if f.flashing_at_last_tick() {
            th.matched
        } else {
            th.status_key
        };
        put(buf, x, r.y, &text, w, style);
        r.width = r.width.saturating_sub(w);
    }
    let mut x = r.x;
    if let Some(msg) = &sh.status {
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
    // What this file offers besides the usual: its other devices, its OOMs, its allocator
    // segments.
    let mut hints: Vec<(&str, &str, u8)> = HINTS[..HINTS.len() - 1].to_vec();
    if ex.devices.len() > 1 {
        hints.push(("d", "device", 4));
    }
    if let Some(dev) = ex.device() {
        if !dev.oom_at.is_empty() {
            hints.push(("o", "OOM", 5));
        }
        if dev.has_allocator() {
            hints.push(("s", "segments", 3));
        }
    }
    hints.extend_from_slice(&HINTS[HINTS.len() - 1..]);
    let parts: Vec<Part> = hints
        .into_iter()
        .map(|(k, what, keep)| Part {
            spans: vec![
                (format!(" {k}"), th.status_key),
                (format!(" {what} "), th.status_bar),
            ],
            keep,
            least: 0,
        })
        .collect();
    x = fit::draw(buf, x, r.y, r.right(), &parts);
    let s = &ex.search;
    if !s.query.is_empty() && x < r.right() {
        let cur = s.current.map_or(String::new(), |c| format!("{}/", c + 1));
        let info = format!(" /{} {}{} (n/N)", s.query, cur, s.matches.len());
        put(buf, x, r.y, &info, r.right() - x, th.matched);
    }
}
