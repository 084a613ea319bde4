//! Drawing: `draw(frame, &App)` is pure and cheap — it paints state that `update` already
//! computed (cached columns, live rows, inspector lines); O(width × height).

pub mod diff;
pub mod error;
pub mod header;
pub mod help;
pub mod inspect;
pub mod lab;
pub mod live;
pub mod loading;
pub mod minimap;
pub mod search;
pub mod status;
pub mod timeline;

use super::app::{App, Screen};
use super::layout::{Layout, MIN_H, MIN_W};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::Frame;

/// Draws the whole screen.
pub fn draw(frame: &mut Frame, app: &App) {
    let area = frame.area();
    render(frame.buffer_mut(), area, app);
}

/// Draws into a buffer (benches and tests can call this directly).
pub fn render(buf: &mut Buffer, area: Rect, app: &App) {
    let l = Layout::new(area.width, area.height, app.inspect.is_some());
    if l.too_small {
        let msg = format!(
            "terminal too small: {}x{} (need {MIN_W}x{MIN_H})",
            area.width, area.height
        );
        for (i, chunk) in msg
            .as_bytes()
            .chunks(area.width.max(1) as usize)
            .enumerate()
        {
            if i as u16 >= area.height {
                break;
            }
            put(
                buf,
                area.x,
                area.y + i as u16,
                &String::from_utf8_lossy(chunk),
                area.width,
                app.theme.error,
            );
        }
        return;
    }
    if let Some(st) = &app.lab {
        lab::draw(buf, area, app, st);
        if app.help {
            help::draw(buf, area, app);
        }
        return;
    }
    if let Some(st) = &app.diff {
        diff::draw(buf, area, app, st);
        if app.help {
            help::draw(buf, area, app);
        }
        return;
    }
    match &app.screen {
        Screen::Loading(ls) => loading::draw(buf, area, app, ls),
        Screen::Error(e) => error::draw(buf, area, app, e),
        Screen::Ready => {
            let Some(dev) = app.device() else {
                return;
            };
            header::draw(buf, &l, app, dev);
            timeline::draw(buf, &l, app);
            minimap::draw(buf, &l, app);
            if l.live.height > 0 {
                live::draw(buf, l.live, app);
            }
            if l.inspect.height > 0 {
                inspect::draw(buf, l.inspect, app);
            }
            status::draw(buf, l.status, app);
            if app.help {
                help::draw(buf, area, app);
            }
        }
    }
}

/// Writes `s` at (x, y), at most `w` columns.
pub fn put(buf: &mut Buffer, x: u16, y: u16, s: &str, w: u16, style: Style) -> u16 {
    if w == 0 {
        return x;
    }
    buf.set_stringn(x, y, s, w as usize, style).0
}

/// Fills a row with spaces in `style`.
pub fn fill(buf: &mut Buffer, r: Rect, style: Style) {
    buf.set_style(r, style);
}
