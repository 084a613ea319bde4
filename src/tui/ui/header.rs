//! The two header rows: file, device and global peak; the cursor's bytes with the band
//! breakdown, event index, time and enclosing mark.

use super::fit::{self, Part};
use super::put;
use crate::tui::device::Device;
use crate::tui::explorer::ExplorerState;
use crate::tui::fmt;
use crate::tui::layout::Layout;
use crate::tui::shared::Shared;
use crate::tui::theme::Fill;
use memtide_core::analysis::Persistent;
use memtide_core::trace::Band;
use ratatui::buffer::Buffer;

pub fn draw(buf: &mut Buffer, l: &Layout, sh: &Shared, ex: &ExplorerState, dev: &Device) {
    let r = l.header;
    fit::draw(buf, r.x, r.y, r.right(), &title_parts(sh, ex, dev));
    let x = fit::draw(buf, r.x, r.y + 1, r.right(), &cursor_parts(sh, ex, dev));
    // The visible stretch, right-aligned when there is room.
    let tr = &dev.trace;
    let v = &ex.view;
    let range = match v.axis {
        memtide_core::analysis::Axis::Event => format!(
            "view #{}–#{} ",
            tr.event_number(v.first_seq()),
            tr.event_number(v.last_seq())
        ),
        memtide_core::analysis::Axis::Time => {
            format!(
                "view {}–{} ",
                fmt::time_at_ns(tr, v.t0, ex.absolute_time),
                fmt::time_at_ns(tr, v.t1, ex.absolute_time)
            )
        }
    };
    let w = range.chars().count() as u16;
    if x + w + 2 <= r.right() {
        put(buf, r.right() - w, r.y + 1, &range, w, sh.theme.header_dim);
    }
}

/// The fewest columns of the file's name the header keeps before it leaves it out (the
/// separator and `…` among them).
const FILE_LEAST: usize = 16;

/// The first row: file, device and the run's figures, the peak and reserved figures kept
/// longest when the terminal is narrow.
fn title_parts(sh: &Shared, ex: &ExplorerState, dev: &Device) -> Vec<Part> {
    let th = &sh.theme;
    let tr = &dev.trace;
    let sep = format!(" {} ", sh.glyphs.sep());
    let text = |s: String, keep: u8| Part::text(s, th.header_text, keep);
    let file = ex.path.file_name().map_or_else(
        || ex.path.display().to_string(),
        |f| f.to_string_lossy().into(),
    );
    let mut parts = vec![
        Part::text(" memtide", th.header_title, 3),
        // Cut from the left before it goes: at 80 columns a long name keeps its end.
        Part::cuttable(format!("{sep}{file}"), th.header_text, 6, FILE_LEAST),
    ];
    let mut device = format!("{sep}{}", tr.device);
    if ex.devices.len() > 1 {
        device.push_str(&format!(" [{}/{}]", ex.current + 1, ex.devices.len()));
    }
    parts.push(text(device, 7));
    if !dev.doubtful().is_empty() {
        // The figures may be wrong: said as long as the peak is (Enter lists why).
        parts.push(Part::text(format!("{sep}! doubtful"), th.error, 10));
    }
    if let Some(d) = tr.distributed.as_ref().filter(|d| !d.label().is_empty()) {
        parts.push(text(format!("{sep}{}", d.label()), 4));
    }
    if let Some(p) = dev.peak {
        if p.at_start {
            parts.push(text(
                format!("{sep}peak {} at start", fmt::bytes(p.bytes.0)),
                10,
            ));
        } else {
            parts.push(text(
                format!(
                    "{sep}peak {} @ #{}",
                    fmt::bytes(p.bytes.0),
                    tr.event_number(p.at)
                ),
                10,
            ));
            if let Some(m) = tr.enclosing_mark(p.at) {
                parts.push(text(format!(" ({})", tr.mark_label(m)), 2));
            }
        }
    }
    if let Some(rp) = dev.reserved_peak {
        parts.push(text(format!("{sep}reserved {}", fmt::bytes(rp.0)), 9));
    }
    if let Some(c) = tr.capacity {
        // Before the file's name: the timeline's scale shows the capacity too.
        parts.push(text(format!("{sep}capacity {}", fmt::bytes(c.0)), 5));
    }
    parts.push(text(format!("{sep}bands {}", tr.bands_source.name()), 1));
    if let Some(d) = &tr.device_log {
        parts.push(text(format!("{sep}{}", d.label()), 2));
    }
    if let Some(n) = &tr.nsys {
        parts.push(text(format!("{sep}{}", n.label()), 2));
    }
    if !tr.external_known {
        parts.push(text(format!("{sep}external unavailable"), 1));
    }
    parts
}

/// The second row: the cursor's position, its bytes and every band's figure (kept longest),
/// its mark, and the persistent band's split (left out first).
fn cursor_parts(sh: &Shared, ex: &ExplorerState, dev: &Device) -> Vec<Part> {
    let th = &sh.theme;
    let tr = &dev.trace;
    let sep = format!(" {} ", sh.glyphs.sep());
    let at = ex.view.cursor;
    let place = fmt::at_src_mode(tr, at, ex.absolute_time);
    let (index, time) = match place.split_once(" t=") {
        Some((i, t)) => (i.to_string(), format!(" t={t}")),
        None => (place.clone(), String::new()),
    };
    let mut parts = vec![
        Part::text(" cursor", th.header_dim, 2),
        Part::text(format!(" {index}"), th.header_dim, 8),
        Part::text(time, th.header_dim, 5),
    ];
    let bands = ex.live.bands;
    parts.push(Part::text(
        format!("  {}", fmt::bytes(bands.total())),
        th.header_title,
        10,
    ));
    let mut first = true;
    for b in Band::ALL {
        let v = bands.get(b);
        if v == 0 {
            continue;
        }
        let lead = if first { " = " } else { " + " };
        first = false;
        parts.push(Part {
            least: 0,
            spans: vec![
                (lead.to_string(), th.header_dim),
                (
                    format!(
                        "{}{} {}",
                        sh.glyphs.band_fill(b),
                        &b.name()[..3],
                        fmt::bytes_short(v)
                    ),
                    th.band(b),
                ),
            ],
            keep: 9,
        });
        if b == Band::External {
            if let Some(p) = source_parts(sh, dev, at) {
                parts.push(p);
            }
        }
    }
    if let Some(m) = tr.enclosing_mark(at) {
        parts.push(Part::text(
            format!("{sep}{}", tr.mark_label(m)),
            th.header_dim,
            4,
        ));
    }
    if let Some(text) = ex.live.persistent.as_ref().and_then(breakdown) {
        parts.push(Part::text(
            format!(" ({text})"),
            th.band(Band::Persistent),
            1,
        ));
    }
    parts
}

/// The external band's sources at `at`, each in its sub-band's colour (the legend of the
/// timeline's sub-bands): ` (█nccl 64Mi █cudnn 16Mi)`; None without a split or with only
/// one source that names nothing (`recorded`, `unattributed`).
fn source_parts(sh: &Shared, dev: &Device, at: memtide_core::trace::Seq) -> Option<Part> {
    let split = dev.ext_split()?;
    let anonymous = |s: &str| {
        s == memtide_core::trace::external::RECORDED
            || s == memtide_core::trace::external::UNATTRIBUTED
    };
    if let [one] = split.sources.as_slice() {
        if anonymous(one) {
            return None;
        }
    }
    let th = &sh.theme;
    let mut spans = vec![(" (".to_string(), th.header_dim)];
    let mut any = false;
    for (k, (name, v)) in split.sources.iter().zip(split.at(at)).enumerate() {
        if v == 0 {
            continue;
        }
        let f = Fill::Source(k.min(255) as u8);
        if any {
            spans.push((" ".to_string(), th.header_dim));
        }
        any = true;
        spans.push((
            format!("{}{} {}", sh.glyphs.fill_char(f), name, fmt::bytes_short(v)),
            th.fill(f),
        ));
    }
    spans.push((")".to_string(), th.header_dim));
    any.then_some(Part {
        spans,
        keep: 3,
        least: 0,
    })
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
