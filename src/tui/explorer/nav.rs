//! The explorer's shared reducer steps: recompute the cached columns and the live set, move
//! the cursor, keep the live list scrolled. Used by its reducer and by follow mode; each
//! returns the effects it needs (a huge live set is computed on a worker).

use super::state::{ExplorerState, InspectState, Screen};
use crate::tui::details;
use crate::tui::device::Device;
use crate::tui::effect::Effect;
use crate::tui::liveset::{self, LiveResult, HUGE_LIVE};
use crate::tui::shared::{Outcome, Shared};
use crate::tui::view::{Highlights, Viewport};
use memtide_core::trace::Seq;

/// Shows the error screen: the input could not be read (no effects).
pub fn fail(sh: &mut Shared, ex: &mut ExplorerState, e: String) -> Vec<Effect> {
    ex.screen = Screen::Error(e);
    sh.outcome = Outcome::InputFailed;
    Vec::new()
}

/// Resets the view for the current device: whole trace, cursor at the global peak.
pub fn init_device(sh: &mut Shared, ex: &mut ExplorerState) -> Vec<Effect> {
    let Some(dev) = ex.devices.get(ex.current).cloned() else {
        return Vec::new();
    };
    let cursor = dev.peak.map_or(Seq(0), |p| p.at);
    ex.view = Viewport::whole(&dev, cursor);
    ex.inspect = None;
    ex.search = Default::default();
    ex.live = Default::default();
    ex.live.at = Seq(u64::MAX);
    refresh_view(sh, ex);
    super::budget::refresh(sh, ex);
    refresh_live(sh, ex)
}

/// Recomputes the cached columns for the current range and size.
pub fn refresh_view(sh: &Shared, ex: &mut ExplorerState) {
    let Some(dev) = ex.device().cloned() else {
        return;
    };
    let width = ex.layout(sh.width, sh.height).plot.width as usize;
    let overlay = super::whatif::shown_in(&ex.whatif, &dev);
    let hl = Highlights {
        match_list: &ex.search.matches,
        lifetime: ex.inspect.as_ref().map(|i| i.id),
        whatif: overlay.map(|o| (&o.series[..], o.oom.as_ref().map(|x| x.at))),
    };
    ex.view.recompute(&dev, width, &hl);
}

/// Recomputes the live set (and the inspector, which depends on the cursor) at the cursor;
/// inline, or on a worker when the last live set was huge.
pub fn refresh_live(sh: &mut Shared, ex: &mut ExplorerState) -> Vec<Effect> {
    let Some(dev) = ex.device().cloned() else {
        return Vec::new();
    };
    let at = ex.view.cursor;
    let mut fx = Vec::new();
    if ex.live.at != at {
        ex.live.at = at;
        ex.live.bands = dev.index.bands_at(&dev.trace, at);
        if ex.live.count > HUGE_LIVE {
            let gen = sh.gen();
            ex.live.gen = gen;
            ex.live.pending = true;
            fx.push(Effect::Live {
                gen,
                at,
                group: ex.live.group,
                device: dev.clone(),
            });
        } else {
            let r = liveset::compute_in(&dev.trace, &dev.index, &dev.frames, at, ex.live.group);
            apply_live(sh, ex, &dev, r);
        }
    }
    if let Some(a) = ex.alloc.as_mut() {
        if super::alloc::refresh(a, &dev, at) {
            fx.push(Effect::Wait {
                device: dev.clone(),
                fact: crate::tui::effect::Behind::Model,
            });
        }
    }
    fix_alloc_scroll(sh, ex);
    ex.live.selected = ex.live.selected.min(ex.live.len().saturating_sub(1));
    fix_scroll(sh, ex);
    fx
}

/// Installs a computed live set, keeping the selected storage selected when still live.
pub fn apply_live(sh: &Shared, ex: &mut ExplorerState, dev: &Device, r: LiveResult) {
    let prev = ex.live.selected_entry().map(|e| e.id);
    ex.live.pending = false;
    ex.live.count = r.count;
    ex.live.total = r.total;
    ex.live.rows = r.rows;
    ex.live.groups = r.groups;
    ex.live.persistent = r.persistent;
    ex.live.tree = r.tree;
    flatten_tree(ex);
    ex.live.selected = prev
        .and_then(|p| ex.live.rows.iter().position(|e| e.id == p))
        .unwrap_or(0);
    if let Some(i) = &ex.inspect {
        let (id, scroll) = (i.id, i.scroll);
        ex.inspect = Some(InspectState {
            id,
            lines: details::with_doubts(
                details::lines_in(
                    &dev.trace,
                    id,
                    ex.live.at,
                    &dev.frames,
                    ex.absolute_time,
                    dev.has_allocator(),
                ),
                dev.doubtful(),
            ),
            scroll,
        });
    }
    ex.live.selected = ex.live.selected.min(ex.live.len().saturating_sub(1));
    fix_scroll(sh, ex);
}

/// Recomputes the tree's visible rows (expanded nodes; the search query filters them).
pub fn flatten_tree(ex: &mut ExplorerState) {
    let rows = match &ex.live.tree {
        Some(t) => crate::tui::tree::flatten(t, &ex.live.expanded, &ex.search.query),
        None => Vec::new(),
    };
    ex.live.tree_rows = rows;
    ex.live.selected = ex.live.selected.min(ex.live.len().saturating_sub(1));
}

/// Keeps the allocator view's selection inside its panel (title, totals and pool rows and
/// the column header above the segment rows).
pub fn fix_alloc_scroll(sh: &Shared, ex: &mut ExplorerState) {
    let panel = ex.layout(sh.width, sh.height).panel;
    if let Some(a) = ex.alloc.as_mut() {
        let pools = a.totals.as_ref().map_or(0, |t| t.pools.len());
        let rows = crate::tui::layout::alloc_segment_rows(pools, panel.height);
        a.fix_scroll(rows);
    }
}

/// Keeps the selected live row inside the panel.
pub fn fix_scroll(sh: &Shared, ex: &mut ExplorerState) {
    let rows = ex.layout(sh.width, sh.height).live_rows().max(1);
    let l = &mut ex.live;
    if l.selected < l.offset {
        l.offset = l.selected;
    } else if l.selected >= l.offset + rows {
        l.offset = l.selected + 1 - rows;
    }
    l.offset = l.offset.min(l.len().saturating_sub(1));
}

/// Moves the cursor to `at`, scrolling the view if needed.
pub fn jump(sh: &mut Shared, ex: &mut ExplorerState, at: Seq) -> Vec<Effect> {
    let Some(dev) = ex.device().cloned() else {
        return Vec::new();
    };
    let at = Seq(at.0.min(dev.last().0));
    ex.view.cursor = at;
    let visible = ex.view.col_of(at).is_some() && !ex.view.columns.is_empty();
    if !visible {
        ex.view.ensure_visible(&dev, at);
        refresh_view(sh, ex);
    } else {
        ex.view.cursor_col = ex.view.col_of(at);
    }
    refresh_live(sh, ex)
}

/// Moves the cursor by `d` columns to the next column showing a different instant, panning
/// at the edges.
pub fn move_cols(sh: &mut Shared, ex: &mut ExplorerState, d: i64) -> Vec<Effect> {
    let Some(dev) = ex.device().cloned() else {
        return Vec::new();
    };
    let width = ex.view.columns.len();
    if width == 0 {
        return Vec::new();
    }
    let cur = ex.view.cursor;
    let mut col = ex.view.cursor_col.unwrap_or(0) as i64;
    for _ in 0..(2 * width) {
        col += d;
        if col < 0 || col >= width as i64 {
            let before = (ex.view.lo, ex.view.hi, ex.view.t0, ex.view.t1);
            ex.view.pan(&dev, d, width);
            if before == (ex.view.lo, ex.view.hi, ex.view.t0, ex.view.t1) {
                break; // at the end of the trace
            }
            refresh_view(sh, ex);
            col = col.clamp(0, width as i64 - 1);
        }
        if let Some(c) = ex.view.columns.get(col as usize) {
            if !c.empty && c.at != cur {
                ex.view.cursor = c.at;
                ex.view.cursor_col = Some(col as usize);
                break;
            }
        }
    }
    refresh_live(sh, ex)
}
