//! The budget view (`B`): one row per stage of the serving budget — its swatch (the band's
//! colour and glyph), name, bytes, a bar of its share of the capacity, the share, where the
//! figure comes from and a legend — then the capture ladder and what the sources mean. Paints
//! the rows `update` made (`explorer::budget`); text, glyphs and brackets carry everything,
//! so it reads the same without colour (`NO_COLOR`) and in ASCII.

use super::put;
use crate::tui::explorer::ExplorerState;
use crate::tui::fmt;
use crate::tui::shared::Shared;
use crate::tui::theme::Glyphs;
use memtide_core::trace::human_bytes;
use memtide_report::serving::Figure;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// Columns before the bar: swatch (3), name (16), bytes (12).
const LEFT_W: u16 = 31;
/// Columns after the bar: share (5), source (11).
const RIGHT_W: u16 = 16;
/// The legend's columns at most (the bar takes what is left, within its bounds).
const LEGEND_W: u16 = 20;

pub fn draw(buf: &mut Buffer, r: Rect, sh: &Shared, ex: &ExplorerState) {
    let th = &sh.theme;
    let Some(v) = &ex.budget else {
        return;
    };
    let sep = sh.glyphs.sep();
    let capacity = v
        .capacity
        .map_or_else(|| "unknown".to_string(), human_bytes);
    let title =
        format!(" serving budget {sep} capacity {capacity}   B/Esc close {sep} docs/serving.md");
    super::fill(buf, Rect::new(r.x, r.y, r.width, 1), th.live_header);
    put(buf, r.x, r.y, &title, r.width, th.live_header);
    let bar_w = r
        .width
        .saturating_sub(LEFT_W + RIGHT_W + LEGEND_W + 1)
        .clamp(6, 40);
    let mut y = r.y + 1;
    for f in &v.figures {
        if y >= r.bottom() {
            return;
        }
        row(buf, r, y, sh, f, v.capacity, bar_w);
        y += 1;
    }
    let mut notes: Vec<String> = Vec::new();
    if let Some(l) = &v.ladder {
        notes.push(format!("ladder: {l}"));
    }
    notes.push(v.headroom.to_string());
    notes.push(sources(&v.figures, sep));
    for n in notes {
        if y >= r.bottom() {
            return;
        }
        let w = r.width.saturating_sub(1);
        put(buf, r.x + 1, y, &fmt::trunc(&n, usize::from(w)), w, th.dim);
        y += 1;
    }
}

/// One stage: swatch, name, bytes, bar, share, source, legend.
fn row(
    buf: &mut Buffer,
    r: Rect,
    y: u16,
    sh: &Shared,
    f: &Figure,
    capacity: Option<u64>,
    bar_w: u16,
) {
    let th = &sh.theme;
    let (glyph, style) = match f.band {
        Some(b) => (sh.glyphs.band_fill(b), th.band(b)),
        None => (headroom_glyph(sh.glyphs), th.capacity),
    };
    let end = r.right();
    let known = f.bytes.is_some();
    let text = if known { th.text } else { th.dim };
    let mut x = put(buf, r.x + 1, y, &glyph.to_string(), 1, style);
    x = put(
        buf,
        x + 1,
        y,
        &format!("{:<15} ", f.name),
        end.saturating_sub(x + 1),
        text,
    );
    let bytes = f.bytes.map_or_else(|| "unknown".to_string(), human_bytes);
    x = put(
        buf,
        x,
        y,
        &format!("{bytes:>11} "),
        end.saturating_sub(x),
        text,
    );
    // The bar: the figure's share of the capacity, in brackets (no capacity: no bar).
    let share = f.bytes.zip(capacity).filter(|&(_, c)| c > 0).map(|(b, c)| {
        let inner = u64::from(bar_w.saturating_sub(2));
        let cells = (b.saturating_mul(inner) + c / 2) / c;
        (cells.min(inner) as u16, b.saturating_mul(100) / c)
    });
    let inner = bar_w.saturating_sub(2);
    x = put(buf, x, y, "[", end.saturating_sub(x), th.dim);
    if let Some((cells, _)) = share {
        let filled: String = std::iter::repeat_n(glyph, usize::from(cells)).collect();
        put(buf, x, y, &filled, end.saturating_sub(x), style);
    }
    x = put(
        buf,
        x + inner,
        y,
        "] ",
        end.saturating_sub(x + inner),
        th.dim,
    );
    let pct = share.map_or_else(String::new, |(_, p)| format!("{p}%"));
    x = put(
        buf,
        x,
        y,
        &format!("{pct:>4} "),
        end.saturating_sub(x),
        text,
    );
    x = put(
        buf,
        x,
        y,
        &format!("{:<10} ", f.source.unwrap_or("-")),
        end.saturating_sub(x),
        th.dim,
    );
    put(buf, x, y, f.what, end.saturating_sub(x), th.dim);
}

/// What each source the rows name means, in the order they first appear.
fn sources(figures: &[Figure], sep: &str) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for s in figures.iter().filter_map(|f| f.source) {
        if !seen.contains(&s) {
            seen.push(s);
        }
    }
    let words: Vec<String> = seen
        .iter()
        .map(|&s| {
            let what = match s {
                "trace" => "measured",
                "inferred" => "attributed by frames",
                "computed" => "derived",
                "server_log" => "the server's log",
                _ => "",
            };
            if what.is_empty() {
                s.to_string()
            } else {
                format!("{s} = {what}")
            }
        })
        .collect();
    words.join(&format!(" {sep} "))
}

/// The headroom's glyph: free memory, apart from every band's.
fn headroom_glyph(g: Glyphs) -> char {
    match g {
        Glyphs::Blocks => '█',
        Glyphs::Shades | Glyphs::Ascii => '~',
    }
}
