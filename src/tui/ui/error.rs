//! The error screen: the reader's message (line numbers / offsets included) and how to
//! leave; the process then exits non-zero.

use super::put;
use crate::tui::explorer::ExplorerState;
use crate::tui::shared::Shared;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

pub fn draw(buf: &mut Buffer, area: Rect, sh: &Shared, ex: &ExplorerState, msg: &str) {
    let th = &sh.theme;
    let x = area.x + 2;
    let w = area.width.saturating_sub(4);
    let mut y = area.y + 1;
    put(
        buf,
        x,
        y,
        &format!("memtide: cannot open {}", ex.path.display()),
        w,
        th.error,
    );
    y += 2;
    for line in wrap(msg, w as usize) {
        if y + 2 >= area.bottom() {
            break;
        }
        put(buf, x, y, &line, w, th.text);
        y += 1;
    }
    put(
        buf,
        x,
        area.bottom() - 2,
        "press q (or Esc) to quit",
        w,
        th.dim,
    );
}

fn wrap(s: &str, w: usize) -> Vec<String> {
    let mut out = Vec::new();
    for para in s.lines() {
        let mut cur = String::new();
        for word in para.split(' ') {
            if !cur.is_empty() && cur.chars().count() + 1 + word.chars().count() > w {
                out.push(std::mem::take(&mut cur));
            }
            if !cur.is_empty() {
                cur.push(' ');
            }
            cur.push_str(word);
            while cur.chars().count() > w && w > 0 {
                let head: String = cur.chars().take(w).collect();
                cur = cur.chars().skip(w).collect();
                out.push(head);
            }
        }
        out.push(cur);
    }
    out
}
