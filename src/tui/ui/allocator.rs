//! The allocator view (`s`): the caching allocator's state at the cursor — totals
//! (allocated, reserved, free in reserve, largest free block, fragmentation, per pool), then
//! one row per segment (address in hex, size, free bytes, default/private pool, stream,
//! small/large, expandable) with its blocks drawn to scale by state and the device's largest
//! free block marked; the expanded segment lists its blocks with their allocations. Without
//! a block model (Kineto, JSONL) it shows what is known and says what is not.

use super::fit::{self, Part};
use super::put;
use crate::tui::explorer::alloc::{AllocRow, AllocView};
use crate::tui::explorer::ExplorerState;
use crate::tui::fmt;
use crate::tui::layout::alloc_pool_rows;
use crate::tui::shared::Shared;
use crate::tui::theme::{Glyphs, Theme};
use memtide_core::allocator::{BlockState, SegmentView};
use memtide_core::trace::Band;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Style;

fn plural(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

fn pct(f: Option<f64>) -> String {
    f.map_or("unavailable (nothing free)".to_string(), |f| {
        format!("{:.1}%", f * 100.0)
    })
}

/// What one bar cell shows.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Cell {
    Allocated,
    Pending,
    Free,
    /// Part of the device's largest free block.
    Largest,
}

/// The segment's blocks to scale on `w` cells: each cell shows the state holding most of its
/// bytes; a cell touching the largest free block shows it.
fn bar(seg: &SegmentView, w: usize, largest: Option<u64>) -> Vec<Cell> {
    let mut out = Vec::with_capacity(w);
    let size = seg.size.max(1) as u128;
    let mut j = 0usize;
    for c in 0..w {
        let lo = (size * c as u128 / w as u128) as u64;
        let hi = ((size * (c as u128 + 1) / w as u128) as u64).max(lo + 1);
        let (mut a, mut p, mut f) = (0u64, 0u64, 0u64);
        let mut touches_largest = false;
        while let Some(b) = seg.blocks.get(j) {
            if b.address.saturating_sub(seg.address) + b.size <= lo {
                j += 1;
            } else {
                break;
            }
        }
        for b in seg.blocks.iter().skip(j) {
            let s = b.address.saturating_sub(seg.address);
            if s >= hi {
                break;
            }
            let e = s + b.size;
            let ov = e.min(hi).saturating_sub(s.max(lo));
            match b.state {
                BlockState::Allocated => a += ov,
                BlockState::PendingFree => p += ov,
                BlockState::Free => {
                    f += ov;
                    touches_largest |= ov > 0 && largest == Some(b.address);
                }
            }
        }
        out.push(if touches_largest {
            Cell::Largest
        } else if a >= p && a >= f && a > 0 {
            Cell::Allocated
        } else if p >= f && p > 0 {
            Cell::Pending
        } else {
            Cell::Free
        });
    }
    out
}

fn cell_glyph(c: Cell, g: Glyphs, th: &Theme) -> (char, Style) {
    let ascii = g == Glyphs::Ascii;
    match c {
        Cell::Allocated => (if ascii { '#' } else { '█' }, th.band(Band::Persistent)),
        Cell::Pending => (if ascii { '+' } else { '▓' }, th.reserved),
        Cell::Free => (if ascii { '.' } else { '░' }, th.dim),
        Cell::Largest => (if ascii { '=' } else { '═' }, th.oom),
    }
}

pub fn draw(buf: &mut Buffer, r: Rect, sh: &Shared, ex: &ExplorerState) {
    let th = &sh.theme;
    let (Some(view), Some(dev)) = (ex.alloc.as_ref(), ex.device()) else {
        return;
    };
    if r.height == 0 {
        return;
    }
    let tr = &dev.trace;
    let sep = sh.glyphs.sep();
    let at = fmt::at_mode(tr, ex.view.cursor, ex.absolute_time);
    super::fill(buf, Rect::new(r.x, r.y, r.width, 1), th.live_header);
    if view.waiting.is_some() {
        let title = format!(" allocator at {at}   s/Esc: close");
        let what = "replaying the allocator's segments and blocks from the file's history: the view fills in when the replay is done (every key works meanwhile)";
        super::waiting_panel(buf, r, sh, &title, what);
        return;
    }
    if !view.model {
        let title = format!(" allocator at {at}   s/Esc: close");
        put(buf, r.x, r.y, &title, r.width, th.live_header);
        // Allocated as every screen counts it: the header's total less its external band.
        let at = ex.view.cursor;
        let allocated = (!dev.is_empty()).then(|| dev.index.allocated_at(tr, at).0);
        let outside = (!dev.is_empty())
            .then(|| {
                dev.index
                    .bands_at(tr, at)
                    .get(memtide_core::trace::Band::External)
            })
            .filter(|&b| b > 0);
        let reserved = tr.has_reserved.then(|| dev.index.reserved_at(tr, at).0);
        let free = reserved.zip(allocated).map(|(r, a)| r.saturating_sub(a));
        let shown = memtide_core::allocator::shown;
        let outside = outside.map_or(String::new(), |b| {
            format!(" {sep} outside the allocator {}", fmt::bytes(b))
        });
        let lines = [
            "this file records no segments: the block map (segments, blocks, pools, streams, largest free block) is unavailable — only PyTorch memory snapshots record it".to_string(),
            format!(
                "known at the cursor: allocated {}{outside} {sep} reserved {} {sep} free in reserve {} {sep} capacity {}",
                shown(allocated),
                shown(reserved),
                shown(free),
                shown(tr.capacity.map(|c| c.0)),
            ),
            "fragmentation: unavailable (it needs the free blocks)".to_string(),
        ];
        let wrapped = lines
            .iter()
            .flat_map(|l| fmt::wrap(l, (r.width as usize).saturating_sub(4).max(10)));
        for (i, l) in wrapped.enumerate() {
            let y = r.y + 1 + i as u16;
            if y >= r.bottom() {
                break;
            }
            put(buf, r.x + 2, y, &l, r.width.saturating_sub(2), th.text);
        }
        return;
    }
    let title = [
        (format!(" allocator at {at}"), 9),
        (
            format!(" {sep} {}", plural(view.segments.len() as u64, "segment")),
            6,
        ),
        (format!(" {sep} sorted by {} (S)", view.sort.name()), 4),
        ("   j/k select · Enter blocks · s/Esc close".to_string(), 2),
    ];
    fit::draw(buf, r.x, r.y, r.right(), &parts(&title, th.live_header));
    let mut y = r.y + 1;
    if let Some(t) = &view.totals {
        let frag = memtide_core::allocator::fragmentation(t.largest_free_block, t.free_in_reserve);
        let b = fmt::bytes;
        // Long labels where they fit, else short ones; the least telling figures go first.
        let figures = |long: bool| {
            let label = |l: &'static str, s: &'static str| if long { l } else { s };
            let mut v = vec![
                (
                    format!(" {} {}", label("allocated", "alloc"), b(t.allocated)),
                    9,
                ),
                (format!(" {sep} reserved {}", b(t.reserved)), 9),
                (
                    format!(
                        " {sep} {} {}",
                        label("free in reserve", "free"),
                        b(t.free_in_reserve)
                    ),
                    8,
                ),
                (
                    format!(
                        " {sep} {} {}",
                        label("largest free block", "largest"),
                        b(t.largest_free_block)
                    ),
                    8,
                ),
                (
                    format!(" {sep} {} {}", label("fragmentation", "frag"), pct(frag)),
                    6,
                ),
            ];
            if t.pending_free > 0 {
                v.push((format!(" {sep} pending free {}", b(t.pending_free)), 5));
            }
            parts(&v, th.header_title)
        };
        if y < r.bottom() {
            fit::draw(buf, r.x, y, r.right(), &fit::longest(figures, r.width));
            y += 1;
        }
        for p in t
            .pools
            .iter()
            .take(alloc_pool_rows(t.pools.len(), r.height))
        {
            if y >= r.bottom() {
                break;
            }
            let figures = |long: bool| {
                let label = |l: &'static str, s: &'static str| if long { l } else { s };
                let v = [
                    (
                        format!(
                            "   pool {}: {}",
                            p.key.label(),
                            plural(p.segments, "segment")
                        ),
                        9,
                    ),
                    (format!(" {sep} reserved {}", b(p.reserved)), 8),
                    (
                        format!(" {sep} {} {}", label("allocated", "alloc"), b(p.allocated)),
                        7,
                    ),
                    (format!(" {sep} free {}", b(p.free_in_reserve)), 7),
                    (
                        format!(
                            " {sep} {} {}",
                            label("largest free", "largest"),
                            b(p.largest_free_block)
                        ),
                        6,
                    ),
                    (
                        format!(
                            " {sep} {} {}",
                            label("fragmentation", "frag"),
                            pct(p.fragmentation)
                        ),
                        5,
                    ),
                ];
                parts(&v, th.dim)
            };
            fit::draw(buf, r.x, y, r.right(), &fit::longest(figures, r.width));
            y += 1;
        }
    }
    if y >= r.bottom() {
        return;
    }
    let (a, p, f, l) = if sh.glyphs == Glyphs::Ascii {
        ('#', '+', '.', '=')
    } else {
        ('█', '▓', '░', '═')
    };
    let head = format!(
        "   {:<16} {:>10} {:>10}  {:<7} {:<6} {:<5} {:<3}  blocks to scale: {a} allocated {p} pending free {f} free {l} largest free",
        "address", "size", "free", "pool", "stream", "set", "exp"
    );
    put(buf, r.x, y, &head, r.width, th.dim);
    y += 1;
    if view.segments.is_empty() && y < r.bottom() {
        put(
            buf,
            r.x + 2,
            y,
            "no segments at the cursor (nothing reserved)",
            r.width.saturating_sub(2),
            th.dim,
        );
        return;
    }
    let sel_style = Theme::as_bg(th.live_selected);
    for (i, row) in view.rows.iter().enumerate().skip(view.offset) {
        if y >= r.bottom() {
            break;
        }
        let selected = i == view.selected;
        if selected {
            super::fill(buf, Rect::new(r.x, y, r.width, 1), sel_style);
        }
        let marker = if selected { sh.glyphs.selected() } else { " " };
        match *row {
            AllocRow::Segment(si) => {
                let Some(seg) = view.segments.get(si) else {
                    continue;
                };
                segment_row(buf, r, y, sh, view, seg, marker);
            }
            AllocRow::Block(si, bi) => {
                let Some(b) = view.segments.get(si).and_then(|s| s.blocks.get(bi)) else {
                    continue;
                };
                let state = match b.state {
                    BlockState::Allocated => "allocated",
                    BlockState::PendingFree => "pending free",
                    BlockState::Free => "free",
                };
                let mut s = format!(
                    "{marker}    {:<16} {:>10} {:<12}",
                    fmt::addr(b.address),
                    fmt::bytes(b.size),
                    state
                );
                if b.state != BlockState::Free {
                    s.push_str(&format!(" requested {}", fmt::bytes(b.requested)));
                    if let Some(&id) = view.owners.get(&b.address) {
                        let e =
                            memtide_core::analysis::entry_in(tr, id, ex.view.cursor, &dev.frames);
                        let what = if e.user_frame.is_empty() {
                            e.frame.clone()
                        } else {
                            e.user_frame.clone()
                        };
                        s.push_str(&format!("  {}  {what}", e.label));
                    }
                }
                let st = if view.largest_free == Some(b.address) {
                    s.push_str("  ◀ largest free block");
                    th.oom
                } else if b.state == BlockState::Free {
                    th.dim
                } else {
                    th.text
                };
                put(buf, r.x, y, &s, r.width, st);
            }
        }
        y += 1;
    }
}

fn segment_row(
    buf: &mut Buffer,
    r: Rect,
    y: u16,
    sh: &Shared,
    view: &AllocView,
    seg: &SegmentView,
    marker: &str,
) {
    let th = &sh.theme;
    let open = if view.expanded == Some(seg.address) {
        "-"
    } else {
        "+"
    };
    let pool = if seg.key.pool_id.is_default() {
        "default"
    } else {
        "private"
    };
    let s = format!(
        "{marker}{open} {:<16} {:>10} {:>10}  {:<7} {:<6} {:<5} {:<3}  ",
        fmt::addr(seg.address),
        fmt::bytes(seg.size),
        fmt::bytes(seg.free),
        pool,
        seg.key.stream,
        seg.key.kind.name(),
        if seg.expandable { "yes" } else { "no" }
    );
    let x = put(buf, r.x, y, &s, r.width, th.text);
    let w = r.right().saturating_sub(x) as usize;
    if w == 0 {
        return;
    }
    for (i, c) in bar(seg, w, view.largest_free).into_iter().enumerate() {
        let (ch, st) = cell_glyph(c, sh.glyphs, th);
        buf[(x + i as u16, y)].set_char(ch).set_style(st);
    }
}

/// Parts of one style from (text, how long it stays) pairs.
fn parts(v: &[(String, u8)], style: ratatui::style::Style) -> Vec<Part> {
    v.iter()
        .map(|(t, keep)| Part::text(t.clone(), style, *keep))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use memtide_core::allocator::{BlockView, PoolId, PoolKey, PoolKind};

    fn seg(blocks: &[(u64, BlockState)]) -> SegmentView {
        let mut addr = 0x1000;
        let mut v = Vec::new();
        for &(size, state) in blocks {
            v.push(BlockView {
                address: addr,
                size,
                requested: size,
                state,
            });
            addr += size;
        }
        SegmentView {
            address: 0x1000,
            size: addr - 0x1000,
            key: PoolKey {
                pool_id: PoolId(0, 0),
                kind: PoolKind::Large,
                stream: 0,
            },
            expandable: false,
            blocks: v,
            allocated: 0,
            pending_free: 0,
            free: 0,
            largest_free_block: 0,
        }
    }

    #[test]
    fn bar_is_to_scale_and_marks_the_largest_free_block() {
        // 3/4 allocated then 1/4 free, on 8 cells: 6 allocated, 2 free.
        let s = seg(&[(600, BlockState::Allocated), (200, BlockState::Free)]);
        let b = bar(&s, 8, None);
        assert_eq!(b.iter().filter(|&&c| c == Cell::Allocated).count(), 6);
        assert_eq!(b.iter().filter(|&&c| c == Cell::Free).count(), 2);
        let b = bar(&s, 8, Some(0x1000 + 600));
        assert_eq!(b.iter().filter(|&&c| c == Cell::Largest).count(), 2);
        assert!(b[..6].iter().all(|&c| c == Cell::Allocated));
    }
}
