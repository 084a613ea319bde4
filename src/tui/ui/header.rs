//! The two header rows: file, device and global peak; the cursor's bytes with the band
//! breakdown, event index, time and enclosing mark.

use super::put;
use crate::tui::device::Device;
use crate::tui::explorer::ExplorerState;
use crate::tui::fmt;
use crate::tui::layout::Layout;
use crate::tui::shared::Shared;
use memtide_core::analysis::persistent::Persistent;
use memtide_core::trace::Band;
use ratatui::buffer::Buffer;

pub fn draw(buf: &mut Buffer, l: &Layout, sh: &Shared, ex: &ExplorerState, dev: &Device) {
    let r = l.header;
    let th = &sh.theme;
    let tr = &dev.trace;
    let sep = format!(" {} ", sh.glyphs.sep());
    let file = ex.path.file_name().map_or_else(
        || ex.path.display().to_string(),
        |f| f.to_string_lossy().into(),
    );
    let mut x = put(buf, r.x, r.y, " memtide", r.width, th.header_title);
    let mut title = format!("{sep}{file}{sep}{}", tr.device);
    if ex.devices.len() > 1 {
        title.push_str(&format!(" [{}/{}]", ex.current + 1, ex.devices.len()));
    }
    if let Some(d) = tr.distributed.as_ref().filter(|d| !d.label().is_empty()) {
        title.push_str(&format!("{sep}{}", d.label()));
    }
    if let Some(p) = dev.peak {
        if p.at_start {
            title.push_str(&format!("{sep}peak {} at start", fmt::bytes(p.bytes.0)));
        } else {
            title.push_str(&format!(
                "{sep}peak {} @ #{}",
                fmt::bytes(p.bytes.0),
                tr.event_number(p.at)
            ));
            if let Some(m) = tr.enclosing_mark(p.at) {
                title.push_str(&format!(" ({})", tr.mark_label(m)));
            }
        }
    }
    if let Some(rp) = dev.reserved_peak {
        title.push_str(&format!("{sep}reserved {}", fmt::bytes(rp.0)));
    }
    if let Some(c) = tr.capacity {
        title.push_str(&format!("{sep}capacity {}", fmt::bytes(c.0)));
    }
    title.push_str(&format!("{sep}bands {}", tr.bands_source.name()));
    if let Some(d) = &tr.device_log {
        title.push_str(&format!("{sep}{}", d.label()));
    }
    x = put(
        buf,
        x,
        r.y,
        &title,
        r.right().saturating_sub(x),
        th.header_text,
    );
    let _ = x;

    // Cursor readout.
    let at = ex.view.cursor;
    let y = r.y + 1;
    let mut x = put(
        buf,
        r.x,
        y,
        &format!(" cursor {}  ", fmt::at_src_mode(tr, at, ex.absolute_time)),
        r.width,
        th.header_dim,
    );
    let bands = ex.live.bands;
    x = put(
        buf,
        x,
        y,
        &fmt::bytes(bands.total()),
        r.right().saturating_sub(x),
        th.header_title,
    );
    let mut first = true;
    for b in Band::ALL {
        let v = bands.get(b);
        if v == 0 {
            continue;
        }
        let lead = if first { " = " } else { " + " };
        first = false;
        x = put(buf, x, y, lead, r.right().saturating_sub(x), th.header_dim);
        x = put(
            buf,
            x,
            y,
            &format!(
                "{}{} {}",
                sh.glyphs.band_fill(b),
                &b.name()[..3],
                fmt::bytes_short(v)
            ),
            r.right().saturating_sub(x),
            th.band(b),
        );
    }
    if let Some(m) = tr.enclosing_mark(at) {
        let s = format!("{sep}{}", tr.mark_label(m));
        x = put(buf, x, y, &s, r.right().saturating_sub(x), th.header_dim);
    }
    if let Some(p) = ex.live.persistent.as_ref() {
        if let Some(text) = breakdown(p) {
            x = put(
                buf,
                x,
                y,
                &format!(" ({text})"),
                r.right().saturating_sub(x),
                th.band(Band::Persistent),
            );
        }
    }
    // The visible stretch, right-aligned when there is room.
    let v = &ex.view;
    let range = match v.axis {
        memtide_core::analysis::columns::Axis::Event => format!(
            "view #{}–#{} ",
            tr.event_number(v.first_seq()),
            tr.event_number(v.last_seq())
        ),
        memtide_core::analysis::columns::Axis::Time => {
            format!(
                "view {}–{} ",
                fmt::time_at_ns(tr, v.t0, ex.absolute_time),
                fmt::time_at_ns(tr, v.t1, ex.absolute_time)
            )
        }
    };
    let w = range.chars().count() as u16;
    if x + w + 2 <= r.right() {
        put(buf, r.right() - w, y, &range, w, th.header_dim);
    }
}

/// The persistent band's split, short: `params 1.0Gi + grads 1.0Gi + optim 2.0Gi · 16.0
/// B/param`; None when the source splits nothing.
pub fn breakdown(p: &Persistent) -> Option<String> {
    let (Some(o), Some(b)) = (p.optimizer, p.buffers) else {
        return None;
    };
    let mut s = format!(
        "params {} + grads {} + optim {}",
        p.params.map_or("unknown".into(), fmt::bytes_short),
        p.grads.map_or("unknown".into(), fmt::bytes_short),
        fmt::bytes_short(o)
    );
    if b > 0 {
        s.push_str(&format!(" + buffers {}", fmt::bytes_short(b)));
    }
    if p.other > 0 {
        s.push_str(&format!(" + other {}", fmt::bytes_short(p.other)));
    }
    if let Some(bpp) = p.bytes_per_param {
        s.push_str(&format!(" · {bpp:.1} B/param"));
        if !p.model.is_empty() {
            s.push_str(&format!(" ({})", p.model));
        }
    }
    if p.source == "inferred" {
        s.push_str(" · inferred");
    }
    Some(s)
}
