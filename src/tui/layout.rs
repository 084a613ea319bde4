//! Screen geometry, shared by `update` (column counts, mouse hit-testing, scroll limits)
//! and `draw`, so both agree without draw mutating anything.
//!
//! ```text
//! header      2 rows   title · cursor readout
//! timeline    ~45 %    y-axis labels | stacked bands plot
//! axis row    1        marks, OOM, cursor ▲, lifetime ━, matches •
//! minimap     1        the whole trace, viewport box
//! live/inspect rest    live set at the cursor (inspector splits or replaces it)
//! status      1        key hints / search prompt / messages
//! ```

use crate::tui::fmt::wrap;
use memtide_core::allocator::OomExplanation;
use ratatui::layout::Rect;

/// Smallest usable terminal; below it a "terminal too small" message is shown.
pub const MIN_W: u16 = 40;
pub const MIN_H: u16 = 10;
/// Width of the y-axis labels column.
pub const YAXIS_W: u16 = 9;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Layout {
    pub too_small: bool,
    pub header: Rect,
    pub yaxis: Rect,
    pub plot: Rect,
    pub axis: Rect,
    pub minimap: Rect,
    pub live: Rect,
    pub inspect: Rect,
    /// The explorer's panel above the live list (OOM panel, allocator view); empty unless
    /// `ExplorerState::layout` carves it.
    pub panel: Rect,
    /// The legend row above the plot (the what-if overlay); empty unless
    /// `ExplorerState::layout` carves it.
    pub legend: Rect,
    pub status: Rect,
}

impl Layout {
    pub fn new(width: u16, height: u16, inspecting: bool) -> Layout {
        let mut l = Layout::default();
        if width < MIN_W || height < MIN_H {
            l.too_small = true;
            return l;
        }
        let w = width;
        let header_h = 2;
        let rest = height - header_h - 1 - 2; // status, axis, minimap
        let plot_h = ((rest as u32 * 45 / 100) as u16).max(3);
        let below = rest - plot_h;
        let y_w = if w >= 60 { YAXIS_W } else { 7 };
        l.header = Rect::new(0, 0, w, header_h);
        l.yaxis = Rect::new(0, header_h, y_w, plot_h);
        l.plot = Rect::new(y_w, header_h, w - y_w, plot_h);
        l.axis = Rect::new(y_w, header_h + plot_h, w - y_w, 1);
        l.minimap = Rect::new(y_w, header_h + plot_h + 1, w - y_w, 1);
        let body_y = header_h + plot_h + 2;
        let body = Rect::new(0, body_y, w, below);
        if inspecting {
            if below >= 16 {
                let top = below * 35 / 100;
                l.live = Rect::new(0, body_y, w, top);
                l.inspect = Rect::new(0, body_y + top, w, below - top);
            } else {
                l.inspect = body;
            }
        } else {
            l.live = body;
        }
        l.status = Rect::new(0, height - 1, w, 1);
        l
    }

    /// Rows of live entries visible (panel minus its title row).
    pub fn live_rows(&self) -> usize {
        self.live.height.saturating_sub(1) as usize
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn regions_fit_and_do_not_overlap() {
        for (w, h) in [(40, 10), (80, 24), (200, 50), (41, 11), (300, 100)] {
            for insp in [false, true] {
                let l = Layout::new(w, h, insp);
                assert!(!l.too_small);
                let rects = [
                    l.header, l.plot, l.axis, l.minimap, l.live, l.inspect, l.status,
                ];
                for r in rects {
                    assert!(r.right() <= w && r.bottom() <= h, "{w}x{h} {r:?}");
                }
                for (i, a) in rects.iter().enumerate() {
                    for b in &rects[i + 1..] {
                        assert!(a.area() == 0 || b.area() == 0 || !a.intersects(*b));
                    }
                }
                assert!(l.plot.height >= 3);
            }
        }
        assert!(Layout::new(39, 24, false).too_small);
        assert!(Layout::new(80, 9, false).too_small);
    }
}

/// Where the `?` overlay's rows go: one column when it fits the height or when two columns
/// would not fit the width (then it scrolls), else two columns side by side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HelpGeometry {
    /// The overlay's box (borders included).
    pub area: Rect,
    pub cols: usize,
    /// Rows in each column (the last may hold fewer).
    pub per_col: usize,
    /// Width of one column's key and description.
    pub key_w: usize,
    pub desc_w: usize,
    /// How many rows each column shows; less than `per_col` when the overlay scrolls.
    pub visible: usize,
    /// The furthest the overlay scrolls (0 when everything is shown).
    pub max_scroll: usize,
}

impl HelpGeometry {
    /// The geometry of `rows` bindings whose widest keys and description take `key_w` and
    /// `desc_w` columns, over a screen `area`.
    pub fn new(area: Rect, rows: usize, key_w: usize, desc_w: usize) -> HelpGeometry {
        let inner_h = usize::from(area.height.saturating_sub(2));
        let cell_w = key_w + 1 + desc_w + 2;
        let two_fit = 2 * cell_w + 2 <= usize::from(area.width);
        let cols = if rows <= inner_h || !two_fit { 1 } else { 2 };
        let per_col = rows.div_ceil(cols).max(1);
        let visible = per_col.min(inner_h);
        let w = ((cell_w * cols + 2) as u16).min(area.width);
        let h = (visible as u16 + 2).min(area.height);
        HelpGeometry {
            area: Rect::new(
                area.x + (area.width - w) / 2,
                area.y + (area.height - h) / 2,
                w,
                h,
            ),
            cols,
            per_col,
            key_w,
            desc_w,
            visible,
            max_scroll: per_col - visible,
        }
    }
}

/// The OOM panel's figure grid: width of one figure cell (label and value).
pub const OOM_CELL_W: usize = 37;
/// The OOM panel: width of a label (figures, verdict and advice rows).
pub const OOM_LABEL_W: usize = 18;

/// Figure cells side by side in an OOM panel `width` columns wide.
pub fn oom_grid_cols(width: u16) -> usize {
    (width.saturating_sub(1) as usize / OOM_CELL_W).clamp(1, 5)
}

/// The OOM panel's reasoning, advice, pinners and checked fixes, each wrapped to the panel's
/// width, labelled on their first row.
pub fn oom_advice_lines(x: &OomExplanation, width: u16) -> Vec<(&'static str, String)> {
    let w = (width as usize).saturating_sub(OOM_LABEL_W + 3).max(10);
    let mut out = Vec::new();
    for (label, text) in x.details() {
        for (i, line) in wrap(&text, w).into_iter().enumerate() {
            out.push((if i == 0 { label } else { "" }, line));
        }
    }
    out
}

/// Rows of the OOM panel below its title at `width`: the figure rows, the verdict, the
/// wrapped reasoning, advice, pinners and fixes (what `J`/`K` scroll through).
pub fn oom_body_rows(x: &OomExplanation, width: u16) -> usize {
    let rows = x.figures().len().div_ceil(oom_grid_cols(width));
    rows + 1 + oom_advice_lines(x, width).len()
}

/// Rows the OOM panel needs at `width` to show everything.
pub fn oom_panel_height(x: &OomExplanation, width: u16) -> u16 {
    (1 + oom_body_rows(x, width)) as u16
}

/// The first body row an OOM panel `height` rows high (title included) may show so that its
/// last row is the body's last: 0 when everything fits.
pub fn oom_max_scroll(body_rows: usize, height: u16) -> usize {
    body_rows.saturating_sub((height as usize).saturating_sub(1))
}

/// Rows one `J`/`K` moves the OOM panel: its visible body less one row kept for context.
pub fn oom_page(height: u16) -> usize {
    (height as usize).saturating_sub(2).max(1)
}

/// Rows of the allocator view above its segment rows besides the pool rows: title, totals,
/// column header.
pub const ALLOC_FIXED_ROWS: u16 = 3;

/// Pool rows the allocator view shows, of `pools`, in a panel `height` rows high (at least
/// three segment rows stay).
pub fn alloc_pool_rows(pools: usize, height: u16) -> usize {
    let room = height.saturating_sub(ALLOC_FIXED_ROWS + 3) as usize;
    pools.min(room).min(4)
}

/// Segment and block rows visible in an allocator view `height` rows high, of `pools` pools.
pub fn alloc_segment_rows(pools: usize, height: u16) -> usize {
    (height.saturating_sub(ALLOC_FIXED_ROWS) as usize)
        .saturating_sub(alloc_pool_rows(pools, height))
}

#[cfg(test)]
mod panel_tests {
    use super::*;

    #[test]
    fn allocator_view_keeps_three_segment_rows() {
        // 20 rows, 2 pools: title, totals, header, 2 pool rows, 15 segment rows.
        assert_eq!(alloc_pool_rows(2, 20), 2);
        assert_eq!(alloc_segment_rows(2, 20), 15);
        // At most four pool rows, whatever the height.
        assert_eq!(alloc_pool_rows(9, 60), 4);
        // A short panel gives up pool rows before segment rows.
        for height in 6..40 {
            for pools in 0..8 {
                let segs = alloc_segment_rows(pools, height);
                assert!(segs >= 3, "{pools} pools, {height} rows: {segs}");
                assert_eq!(
                    usize::from(ALLOC_FIXED_ROWS) + alloc_pool_rows(pools, height) + segs,
                    usize::from(height)
                );
            }
        }
    }

    #[test]
    fn oom_scrolling_ends_on_the_last_row() {
        // 27 body rows in a 10-row panel (title + 9): the last first row is 18.
        assert_eq!(oom_max_scroll(27, 10), 18);
        assert_eq!(oom_max_scroll(5, 10), 0);
        assert_eq!(oom_max_scroll(5, 0), 5);
        assert_eq!(oom_page(10), 8);
        assert_eq!(oom_page(2), 1);
    }

    #[test]
    fn oom_grid_columns_fit_the_width() {
        assert_eq!(oom_grid_cols(10), 1);
        assert_eq!(oom_grid_cols(38), 1);
        assert_eq!(oom_grid_cols(75), 2);
        assert_eq!(oom_grid_cols(500), 5);
    }
}
