//! Drawing: `draw(frame, &App)` is pure and cheap — it paints state that `update` already
//! computed (cached columns, live rows, inspector lines); O(width × height).

pub mod allocator;
pub mod budget;
pub mod diff;
pub mod error;
pub mod fair;
pub mod fit;
pub mod header;
pub mod help;
pub mod inspect;
pub mod lab;
pub mod live;
pub mod loading;
pub mod minimap;
pub mod oom;
pub mod ranks;
pub mod search;
pub mod status;
pub mod timeline;

use super::app::{App, Page};
use super::explorer::{ExplorerState, Screen};
use super::layout::{Layout, MIN_H, MIN_W};
use super::shared::Shared;
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
    let sh = &app.shared;
    let l = match app.explorer() {
        Some(ex) => ex.layout(area.width, area.height),
        None => Layout::new(area.width, area.height, false),
    };
    if l.too_small {
        too_small(buf, area, sh);
        return;
    }
    match &app.page {
        Page::Explorer(ex) => {
            explorer(buf, area, &l, sh, ex);
            if !matches!(ex.screen, Screen::Ready) {
                return; // no overlay over the loading and error screens
            }
        }
        Page::Diff(st) => diff::draw(buf, area, sh, st),
        Page::Lab(st) => lab::draw(buf, area, sh, st),
        Page::Ranks(st) => ranks::draw(buf, area, sh, st),
    }
    if sh.help {
        help::draw(buf, area, sh, app.page_mode());
    }
}

/// The terminal is smaller than any screen needs: say so, wrapped.
fn too_small(buf: &mut Buffer, area: Rect, sh: &Shared) {
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
            sh.theme.error,
        );
    }
}

/// The explorer page: loading, error, or the timeline with its panels.
fn explorer(buf: &mut Buffer, area: Rect, l: &Layout, sh: &Shared, ex: &ExplorerState) {
    match &ex.screen {
        Screen::Loading(ls) => loading::draw(buf, area, sh, ex, ls),
        Screen::Error(e) => error::draw(buf, area, sh, ex, e),
        Screen::Ready => {
            let Some(dev) = ex.device() else {
                return;
            };
            header::draw(buf, l, sh, ex, dev);
            timeline::draw(buf, l, sh, ex);
            minimap::draw(buf, l, sh, ex);
            if l.panel.height > 0 {
                if ex.alloc.is_some() {
                    allocator::draw(buf, l.panel, sh, ex);
                } else if ex.budget.is_some() {
                    budget::draw(buf, l.panel, sh, ex);
                } else {
                    oom::draw(buf, l.panel, sh, ex);
                }
            }
            if l.live.height > 0 {
                live::draw(buf, l.live, sh, ex);
            }
            if l.inspect.height > 0 {
                inspect::draw(buf, l.inspect, sh, ex);
            }
            status::draw(buf, l.status, sh, ex);
        }
    }
}

/// Writes `s` at (x, y), at most `w` columns. Every piece of text on screen passes here, so
/// this is where text from the file is made one-line and terminal-safe (control, format and
/// separator characters shown escaped: see `safe_text`).
pub fn put(buf: &mut Buffer, x: u16, y: u16, s: &str, w: u16, style: Style) -> u16 {
    if w == 0 {
        return x;
    }
    let s = crate::safe_text::one_line(s);
    buf.set_stringn(x, y, s.as_ref(), w as usize, style).0
}

/// A panel still waiting for what it shows (computed behind the first screen): `title` on
/// its header row, then `what` wrapped and dimmed below it.
pub fn waiting_panel(buf: &mut Buffer, r: Rect, sh: &Shared, title: &str, what: &str) {
    let th = &sh.theme;
    fill(buf, Rect::new(r.x, r.y, r.width, 1), th.live_header);
    put(buf, r.x, r.y, title, r.width, th.live_header);
    let width = (r.width as usize).saturating_sub(4).max(10);
    for (i, l) in super::fmt::wrap(what, width).iter().enumerate() {
        let y = r.y + 1 + i as u16;
        if y >= r.bottom() {
            break;
        }
        put(buf, r.x + 2, y, l, r.width.saturating_sub(2), th.dim);
    }
}

/// Fills a row with spaces in `style`.
pub fn fill(buf: &mut Buffer, r: Rect, style: Style) {
    buf.set_style(r, style);
}
