//! The inspector panel: paints the lines `update` built for the selected storage.

use super::put;
use crate::tui::details::Tone;
use crate::tui::explorer::ExplorerState;
use crate::tui::shared::Shared;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

pub fn draw(buf: &mut Buffer, r: Rect, sh: &Shared, ex: &ExplorerState) {
    let th = &sh.theme;
    let Some(ins) = &ex.inspect else { return };
    super::fill(buf, Rect::new(r.x, r.y, r.width, 1), th.live_header);
    put(
        buf,
        r.x,
        r.y,
        " inspect  (Esc close · a alloc · f free · j/k scroll · y copy)",
        r.width,
        th.live_header,
    );
    for (i, line) in ins.lines.iter().skip(ins.scroll).enumerate() {
        let y = r.y + 1 + i as u16;
        if y >= r.bottom() {
            break;
        }
        let mut x = r.x + 1;
        for (text, tone) in line {
            let st = match tone {
                Tone::Text => th.text,
                Tone::Dim => th.dim,
                Tone::Title => th.header_title,
                Tone::Warn => th.live_retained,
                Tone::Band(b) => th.band(*b),
            };
            if x >= r.right() {
                break;
            }
            x = put(buf, x, y, text, r.right() - x, st);
        }
    }
}
