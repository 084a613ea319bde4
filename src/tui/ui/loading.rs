//! The loading screen: file, progress bar, bytes, MB/s and ETA (sampled on ticks by
//! `update`), and how to cancel; under `-f`, that the file is not there yet.

use super::put;
use crate::tui::device::LoadState;
use crate::tui::explorer::ExplorerState;
use crate::tui::fmt;
use crate::tui::shared::Shared;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

pub fn draw(buf: &mut Buffer, area: Rect, sh: &Shared, ex: &ExplorerState, ls: &LoadState) {
    let th = &sh.theme;
    let y = area.y + area.height / 2 - 2;
    let x = area.x + 2;
    let w = area.width.saturating_sub(4);
    if ls.waiting_now {
        put(
            buf,
            x,
            y,
            &format!("waiting for {} to appear", ex.path.display()),
            w,
            th.header_title,
        );
        let secs = ls.elapsed.as_secs_f64();
        put(
            buf,
            x,
            y + 1,
            &format!("following (-f): it opens as soon as the run writes it · waited {secs:.0} s"),
            w,
            th.dim,
        );
        put(buf, x, y + 3, "q: quit", w, th.dim);
        return;
    }
    put(
        buf,
        x,
        y,
        &format!("loading {}", ex.path.display()),
        w,
        th.header_title,
    );
    let frac = if ls.total > 0 {
        (ls.done as f64 / ls.total as f64).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let bar_w = w.saturating_sub(8) as usize;
    let filled = (frac * bar_w as f64).round() as usize;
    let (full, empty) = if sh.glyphs == crate::tui::theme::Glyphs::Ascii {
        ('#', '.')
    } else {
        ('█', '░')
    };
    let bar: String = std::iter::repeat_n(full, filled)
        .chain(std::iter::repeat_n(empty, bar_w - filled))
        .collect();
    let x2 = put(buf, x, y + 1, &bar, w, th.minimap_fill);
    put(
        buf,
        x2,
        y + 1,
        &format!(" {:>3.0}%", frac * 100.0),
        w,
        th.text,
    );
    let secs = ls.elapsed.as_secs_f64();
    let rate = if secs > 0.0 {
        ls.done as f64 / secs
    } else {
        0.0
    };
    let eta = if rate > 0.0 && ls.total > ls.done {
        format!("ETA {:.1} s", (ls.total - ls.done) as f64 / rate)
    } else {
        "ETA –".to_string()
    };
    let line = format!(
        "{} / {}  {:.1} MB/s  {eta}",
        fmt::bytes(ls.done),
        fmt::bytes(ls.total),
        rate / 1e6
    );
    put(buf, x, y + 2, &line, w, th.dim);
    put(buf, x, y + 3, "q: cancel and quit", w, th.dim);
}
