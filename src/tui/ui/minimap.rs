//! The minimap: the whole trace in one row (peak-preserving columns) with the viewport's
//! stretch highlighted.

use crate::tui::explorer::ExplorerState;
use crate::tui::layout::Layout;
use crate::tui::shared::Shared;
use crate::tui::theme::Theme;
use ratatui::buffer::Buffer;

pub fn draw(buf: &mut Buffer, l: &Layout, sh: &Shared, ex: &ExplorerState) {
    let v = &ex.view;
    let th = &sh.theme;
    let r = l.minimap;
    let ymax = v.ymax.max(1);
    let device = ex.device();
    let whole = device.is_none_or(|d| v.is_whole(d));
    let vp = Theme::as_bg(th.cursor_bg).patch(th.minimap_viewport);
    for (i, c) in v.minimap.iter().enumerate().take(r.width as usize) {
        let e = if c.empty {
            0
        } else {
            (c.bands.total() as u128 * 8).div_ceil(ymax as u128).min(8) as u8
        };
        let ch = sh.glyphs.eighth(e);
        let in_view = !whole && i >= v.mini_lo && i <= v.mini_hi;
        let st = if in_view { vp } else { th.minimap_fill };
        buf[(r.x + i as u16, r.y)].set_char(ch).set_style(st);
    }
}
