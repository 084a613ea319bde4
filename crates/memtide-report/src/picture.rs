//! The timeline as a picture (SVG text; PNG rendered from it by resvg): stacked bands in the
//! theme's colours on the explorer's peak-preserving columns, the reserved outline, the
//! capacity line, step marks, the peak with its exact bytes, OOMs. Used by `memtide plot`
//! (`cli/plot.rs`, `cli/plot_diff.rs`) and the explorer's `e` (export the view), so it sits
//! beside `tui`, not inside it; it takes its colours from `tui::theme`.

use anyhow::{bail, Context, Result};
use memtide_core::analysis::{event_columns, window_peak, Column, ExternalSplit};
use memtide_core::index::Index;
use memtide_core::trace::{external, grouped, human_bytes, Band, MarkKind, Seq, Trace};
use std::fmt::Write as _;

/// Margins of the chart area inside the picture, in pixels.
const LEFT: f64 = 86.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 54.0;
const BOTTOM: f64 = 58.0;

/// The colours a picture is drawn in, as CSS (`#rrggbb`): each None where the theme gives
/// none (the picture's own default is used). The explorer's themes make one
/// (`Theme::palette`); the built-in light theme's is what `memtide plot` draws by default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Palette {
    pub bands: [Option<String>; Band::COUNT],
    pub reserved: Option<String>,
    pub capacity: Option<String>,
    pub peak_marker: Option<String>,
    pub mark: Option<String>,
    pub oom: Option<String>,
    /// The fill of the `k`th source of external memory (0: the external band's), for k up
    /// to 255.
    pub sources: Vec<Option<String>>,
}

/// The fills of the sources of external memory after the first (the external band's own).
const SOURCES: [&str; 5] = ["#d75fd7", "#8787ff", "#ff87d7", "#875faf", "#d7afff"];

impl Palette {
    /// The built-in light theme's colours (`themes/light.toml`): what `memtide plot` and
    /// Python's `Trace.svg()` draw in by default. The explorer's `Theme::palette` of that theme
    /// gives the same (its tests check it).
    pub fn light() -> Palette {
        let c = |s: &str| Some(s.to_string());
        let external = "#7f3fbf";
        Palette {
            bands: [
                c("#1f5fbf"),
                c("#c45a00"),
                c("#3f8f1f"),
                c(external),
                c("#6c6c6c"),
            ],
            reserved: c("#8f7f00"),
            capacity: c("#c00000"),
            peak_marker: c("#c00000"),
            mark: c("#8a8a8a"),
            oom: c("#d70000"),
            sources: (0..=255usize)
                .map(|k| match k {
                    0 => c(external),
                    k => c(SOURCES[(k - 1) % SOURCES.len()]),
                })
                .collect(),
        }
    }

    /// The fill of source `k` (past 255: the 255th's).
    pub fn source(&self, k: usize) -> &Option<String> {
        static NONE: Option<String> = None;
        self.sources.get(k.min(255)).unwrap_or(&NONE)
    }
}

/// A colour of the palette as CSS, or `fallback` where it has none.
pub(crate) fn css(c: &Option<String>, fallback: &str) -> String {
    c.clone().unwrap_or_else(|| fallback.to_string())
}

/// Text from the trace made safe for XML (and free of control characters).
pub(crate) fn xml(s: &str) -> String {
    let s = crate::safe_text::terminal_safe(s);
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            '\n' | '\t' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// A round top for the y axis: the next of 1, 2, 2.5, 5 × a power of 1024-based units.
pub(crate) fn nice_top(max: u64) -> u64 {
    let max = max.max(1);
    let mut unit: u64 = 1;
    while unit <= max / 1024 {
        unit *= 1024;
    }
    for m in [
        1u64, 2, 4, 5, 8, 10, 16, 20, 25, 32, 40, 50, 64, 80, 100, 128, 256, 512, 1024,
    ] {
        if let Some(v) = unit.checked_mul(m) {
            if v >= max {
                return v;
            }
        }
    }
    max
}

/// What to draw: a range of one trace, at a size, with a title.
pub struct Picture<'a> {
    pub trace: &'a Trace,
    pub index: &'a Index,
    pub theme: &'a Palette,
    /// Shown first in the title (the file name).
    pub name: &'a str,
    /// The event range drawn (inclusive positions) and how to name it ("" for the whole run).
    pub lo: Seq,
    pub hi: Seq,
    pub range_label: String,
    pub width: u32,
    pub height: u32,
}

/// The picture `memtide plot FILE` draws of device `d`: the whole run, or `window` (as
/// written: `steady`, `step:N`, …), titled with `name` (the file's name).
pub fn of_device(
    d: &memtide_core::open::Device,
    name: &str,
    window: Option<&str>,
    palette: &Palette,
    width: u32,
    height: u32,
) -> Result<String> {
    let (lo, hi, range_label) = match window {
        Some(w) => {
            let r = memtide_core::analysis::WindowSpec::parse(w)?.resolve(&d.trace, &d.index)?;
            (r.lo, r.hi, format!("window {}", r.label))
        }
        None => (
            Seq(0),
            Seq(d.index.len().saturating_sub(1) as u64),
            String::new(),
        ),
    };
    svg(&Picture {
        trace: &d.trace,
        index: &d.index,
        theme: palette,
        name,
        lo,
        hi,
        range_label,
        width,
        height,
    })
}

/// The picture as SVG text.
pub fn svg(p: &Picture) -> Result<String> {
    let (trace, index, theme, name) = (p.trace, p.index, p.theme, p.name);
    let (lo, hi) = (p.lo, p.hi);
    let wlabel = if p.range_label.is_empty() {
        String::new()
    } else {
        format!(" · {}", p.range_label)
    };
    if index.is_empty() || lo > hi {
        bail!("nothing to draw: the range has no events");
    }
    let (w, h) = (f64::from(p.width), f64::from(p.height));
    let (cw, ch) = (w - LEFT - RIGHT, h - TOP - BOTTOM);
    let events = hi.0 - lo.0 + 1;
    let ncols = (cw as u64).min(events).max(1) as usize;
    let cols = event_columns(trace, index, lo, hi, ncols);
    let peak = window_peak(trace, index, lo, hi).context("the window has no events")?;
    let reserved_max = cols.iter().map(|c| c.reserved.0).max().unwrap_or(0);
    let mut top = peak.bytes.0.max(reserved_max);
    let capacity = trace
        .capacity
        .map(|c| c.0)
        .filter(|&c| c <= top.saturating_mul(2));
    if let Some(c) = capacity {
        top = top.max(c);
    }
    let top = nice_top(top);
    let colw = cw / ncols as f64;
    let y = |b: u64| TOP + ch - (b as f64 / top as f64) * ch;
    let x = |c: usize| LEFT + c as f64 * colw;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r##"<rect width="{w}" height="{h}" fill="#ffffff"/>"##);
    let title = format!(
        "{} · {} · peak {} ({} B){wlabel}",
        name,
        trace.device,
        human_bytes(peak.bytes.0),
        grouped(peak.bytes.0)
    );
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="22" font-size="15" font-weight="bold">{}</text>"#,
        xml(&title)
    );
    // The chart group names its geometry so a reader (or a test) can measure it.
    let _ = writeln!(
        s,
        r#"<g id="chart" data-x0="{LEFT}" data-y0="{}" data-ytop="{TOP}" data-top-bytes="{top}" data-columns="{ncols}">"#,
        TOP + ch
    );
    y_axis(&mut s, top, LEFT, cw, &y);
    bands(&mut s, &cols, theme, &x, &y, colw);
    let split = named_split(trace);
    if let Some(split) = &split {
        sources(&mut s, &cols, split, theme, &x, &y, colw);
    }
    reserved(&mut s, &cols, theme, &x, &y, colw);
    if let Some(c) = capacity {
        let _ = writeln!(
            s,
            r#"<line id="capacity" x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="1.5" stroke-dasharray="6 3"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="{}">capacity {}</text>"#,
            y(c),
            LEFT + cw,
            y(c),
            css(&theme.capacity, "#c00000"),
            LEFT + cw,
            y(c) - 4.0,
            css(&theme.capacity, "#c00000"),
            xml(&human_bytes(c))
        );
    }
    // Marks: steps as dashed lines (labelled when they fit), OOMs as crosses.
    let col_of = |at: Seq| -> Option<usize> {
        (at >= lo && at <= hi)
            .then(|| (((at.0 - lo.0) as f64 / events as f64) * ncols as f64) as usize)
    };
    let steps: Vec<_> = trace
        .marks
        .iter()
        .filter(|m| m.kind == MarkKind::Step)
        .collect();
    let label_steps = steps.len() <= (cw / 60.0) as usize;
    for m in &steps {
        let Some(c) = col_of(m.at) else { continue };
        let xx = x(c);
        let _ = write!(
            s,
            r#"<line class="step" x1="{xx:.1}" y1="{TOP}" x2="{xx:.1}" y2="{:.1}" stroke="{}" stroke-dasharray="2 3"/>"#,
            TOP + ch,
            css(&theme.mark, "#8a8a8a")
        );
        if label_steps {
            let _ = write!(
                s,
                r##"<text x="{:.1}" y="{:.1}" font-size="10" fill="#666666">{}</text>"##,
                xx + 3.0,
                TOP + 11.0,
                xml(&trace.mark_label(m))
            );
        }
        let _ = writeln!(s);
    }
    for m in trace.marks.iter().filter(|m| m.kind == MarkKind::Oom) {
        let Some(c) = col_of(m.at) else { continue };
        let (xx, yy) = (x(c) + colw / 2.0, TOP + ch + 12.0);
        let anchor = if xx > LEFT + cw - 30.0 {
            "end"
        } else {
            "middle"
        };
        let _ = writeln!(
            s,
            r#"<text class="oom" x="{xx:.1}" y="{yy:.1}" text-anchor="{anchor}" font-weight="bold" fill="{}">✖ OOM</text>"#,
            css(&theme.oom, "#d70000")
        );
    }
    peak_marker(
        &mut s,
        trace,
        &peak,
        &col_of,
        &x,
        &y,
        colw,
        theme,
        LEFT + cw * 0.55,
        split.as_ref(),
    );
    let _ = writeln!(s, "</g>");
    // X axis: event numbers at both ends and the middle.
    for (k, pos) in [lo.0, lo.0 + (hi.0 - lo.0) / 2, hi.0]
        .into_iter()
        .enumerate()
    {
        let anchor = ["start", "middle", "end"][k];
        let xx = [LEFT, LEFT + cw / 2.0, LEFT + cw][k];
        let _ = writeln!(
            s,
            r##"<text x="{xx:.1}" y="{:.1}" text-anchor="{anchor}" fill="#555555">#{}</text>"##,
            TOP + ch + 24.0,
            trace.event_number(Seq(pos))
        );
    }
    legend(&mut s, theme, h, trace.external_known, split.as_ref());
    if !trace.external_known {
        // No band drawn for it: a note says why, rather than a band of 0.
        let _ = writeln!(
            s,
            r##"<text id="external-note" x="{:.1}" y="{:.1}" text-anchor="end" font-size="10" fill="#666666">external memory unavailable: no source of it (--nsys, --device-log)</text>"##,
            w - RIGHT,
            TOP - 6.0
        );
    }
    let _ = writeln!(s, "</svg>");
    Ok(s)
}

/// The grid and y axis: five ticks from 0 to `top` in binary units, left of the chart at
/// `left` and across its width `cw`; `y` maps bytes to the SVG y coordinate.
pub fn y_axis(s: &mut String, top: u64, left: f64, cw: f64, y: &dyn Fn(u64) -> f64) {
    for k in 0..=4u64 {
        let b = top / 4 * k;
        let yy = y(b);
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{yy:.1}" x2="{:.1}" y2="{yy:.1}" stroke="#e4e4e4"/><text x="{:.1}" y="{:.1}" text-anchor="end" fill="#555555">{}</text>"##,
            left + cw,
            left - 6.0,
            yy + 4.0,
            xml(&human_bytes(b))
        );
    }
}

/// The stacked bands: one path per band, a rectangle per column.
fn bands(
    s: &mut String,
    cols: &[Column],
    theme: &Palette,
    x: &dyn Fn(usize) -> f64,
    y: &dyn Fn(u64) -> f64,
    colw: f64,
) {
    for b in Band::ALL {
        let mut d = String::new();
        for (c, col) in cols.iter().enumerate() {
            if col.empty {
                continue;
            }
            let below: u64 = Band::ALL
                .iter()
                .take_while(|o| **o != b)
                .map(|o| col.bands.get(*o))
                .sum();
            let v = col.bands.get(b);
            if v == 0 {
                continue;
            }
            let (y0, y1) = (y(below), y(below + v));
            let _ = write!(
                d,
                "M{:.2} {:.2}h{:.2}V{:.2}h{:.2}Z",
                x(c),
                y0,
                colw,
                y1,
                -colw
            );
        }
        if !d.is_empty() {
            let _ = writeln!(
                s,
                r#"<path class="band" data-band="{}" fill="{}" d="{d}"/>"#,
                b.name(),
                css(&theme.bands[b.idx()], "#888888")
            );
        }
    }
}

/// The reserved outline: a step line over the columns.
fn reserved(
    s: &mut String,
    cols: &[Column],
    theme: &Palette,
    x: &dyn Fn(usize) -> f64,
    y: &dyn Fn(u64) -> f64,
    colw: f64,
) {
    if cols.iter().all(|c| c.reserved.0 == 0) {
        return;
    }
    let mut d = String::new();
    for (c, col) in cols.iter().enumerate() {
        let yy = y(col.reserved.0);
        let cmd = if c == 0 { 'M' } else { 'L' };
        let _ = write!(d, "{cmd}{:.2} {yy:.2}H{:.2}", x(c), x(c) + colw);
    }
    let _ = writeln!(
        s,
        r#"<path id="reserved" fill="none" stroke="{}" stroke-width="1.5" d="{d}"/>"#,
        css(&theme.reserved, "#8f7f00")
    );
}

/// The peak: its column's bands again as separate rectangles (measurable), a marker and the
/// exact bytes with the enclosing mark.
#[allow(clippy::too_many_arguments)]
fn peak_marker(
    s: &mut String,
    trace: &Trace,
    peak: &memtide_core::analysis::Peak,
    col_of: &dyn Fn(Seq) -> Option<usize>,
    x: &dyn Fn(usize) -> f64,
    y: &dyn Fn(u64) -> f64,
    colw: f64,
    theme: &Palette,
    right_half: f64,
    split: Option<&ExternalSplit>,
) {
    let Some(c) = col_of(peak.at) else { return };
    let _ = write!(s, r#"<g id="peak-column" data-bytes="{}">"#, peak.bytes.0);
    let mut below = 0u64;
    for b in Band::ALL {
        let v = peak.bands.get(b);
        if v > 0 {
            let (y0, y1) = (y(below), y(below + v));
            let _ = write!(
                s,
                r#"<rect data-band="{}" x="{:.2}" y="{y1:.2}" width="{colw:.2}" height="{:.2}" fill="{}"/>"#,
                b.name(),
                x(c),
                y0 - y1,
                css(&theme.bands[b.idx()], "#888888")
            );
        }
        if let (Band::External, Some(split)) = (b, split) {
            // Its sources over it, stacked in the band's place.
            let at = split.at(peak.at);
            let parts = if peak.at_start {
                split.initial()
            } else {
                &at[..]
            };
            let mut under = below;
            for (k, &w) in parts.iter().enumerate() {
                let w = w.min((below + v).saturating_sub(under));
                if w == 0 {
                    continue;
                }
                let (y0, y1) = (y(under), y(under + w));
                let _ = write!(
                    s,
                    r#"<rect data-source="{}" x="{:.2}" y="{y1:.2}" width="{colw:.2}" height="{:.2}" fill="{}"/>"#,
                    xml(&split.sources[k]),
                    x(c),
                    y0 - y1,
                    css(theme.source(usize::from(k.min(255) as u8)), "#888888")
                );
                under += w;
            }
        }
        below += v;
    }
    let _ = writeln!(s, "</g>");
    let (px, py) = (x(c) + colw / 2.0, y(peak.bytes.0));
    let colour = css(&theme.peak_marker, "#c00000");
    let mark = if peak.at_start {
        Some("at start".to_string())
    } else {
        trace
            .enclosing_mark(peak.at)
            .map(|m| trace.mark_label(m).into_owned())
    };
    let label = format!(
        "▼ peak {} ({} B){}",
        human_bytes(peak.bytes.0),
        grouped(peak.bytes.0),
        mark.map(|m| format!(" · {m}")).unwrap_or_default()
    );
    // Keep the label inside the picture: anchored at its end when the peak is on the right.
    let anchor = if px > right_half { "end" } else { "start" };
    let _ = writeln!(
        s,
        r#"<line x1="{px:.1}" y1="{TOP}" x2="{px:.1}" y2="{:.1}" stroke="{colour}" stroke-width="0.8" stroke-dasharray="1 2"/><path id="peak-marker" d="M{:.1} {:.1}l-5 -9h10Z" fill="{colour}"/><text id="peak-label" x="{px:.1}" y="{:.1}" text-anchor="{anchor}" font-weight="bold" fill="{colour}">{}</text>"#,
        py - 11.0,
        px,
        py - 2.0,
        TOP - 8.0,
        xml(&label)
    );
}

/// The external band's split by source when it names any (not a lone `recorded` /
/// `unattributed` source).
fn named_split(trace: &Trace) -> Option<ExternalSplit> {
    let split = ExternalSplit::of(trace)?;
    let anonymous = |n: &str| n == external::RECORDED || n == external::UNATTRIBUTED;
    match split.sources.as_slice() {
        [one] if anonymous(one) => None,
        _ => Some(split),
    }
}

/// The external band of each column drawn again as one sub-band per source, stacked in the
/// band's place (the band's own colour first).
fn sources(
    s: &mut String,
    cols: &[Column],
    split: &ExternalSplit,
    theme: &Palette,
    x: &dyn Fn(usize) -> f64,
    y: &dyn Fn(u64) -> f64,
    colw: f64,
) {
    let mut paths: Vec<String> = vec![String::new(); split.sources.len()];
    for (c, col) in cols.iter().enumerate() {
        if col.empty {
            continue;
        }
        let mut below: u64 = Band::ALL
            .iter()
            .take_while(|o| **o != Band::External)
            .map(|o| col.bands.get(*o))
            .sum();
        let room = col.bands.get(Band::External);
        let mut used = 0u64;
        for (k, v) in split.at(col.at).into_iter().enumerate() {
            let v = v.min(room.saturating_sub(used));
            if v == 0 {
                continue;
            }
            used += v;
            let (y0, y1) = (y(below), y(below + v));
            below += v;
            if let Some(d) = paths.get_mut(k) {
                let _ = write!(
                    d,
                    "M{:.2} {:.2}h{:.2}V{:.2}h{:.2}Z",
                    x(c),
                    y0,
                    colw,
                    y1,
                    -colw
                );
            }
        }
    }
    for (k, d) in paths.iter().enumerate() {
        if d.is_empty() {
            continue;
        }
        let _ = writeln!(
            s,
            r#"<path class="source" data-source="{}" fill="{}" d="{d}"/>"#,
            xml(&split.sources[k]),
            css(theme.source(usize::from(k.min(255) as u8)), "#888888")
        );
    }
}

/// The most sources named in the legend (the rest: "+N more").
const LEGEND_SOURCES: usize = 6;

fn legend(
    s: &mut String,
    theme: &Palette,
    h: f64,
    external_known: bool,
    split: Option<&ExternalSplit>,
) {
    let mut xx = LEFT;
    let yy = h - 14.0;
    for b in Band::ALL {
        if b == Band::External && !external_known {
            continue;
        }
        let _ = write!(
            s,
            r#"<rect x="{xx:.1}" y="{:.1}" width="12" height="12" fill="{}"/><text x="{:.1}" y="{yy:.1}">{}</text>"#,
            yy - 10.0,
            css(&theme.bands[b.idx()], "#888888"),
            xx + 16.0,
            b.name()
        );
        xx += 110.0;
    }
    let _ = writeln!(
        s,
        r#"<line x1="{xx:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{}" stroke-width="1.5"/><text x="{:.1}" y="{yy:.1}">reserved</text>"#,
        yy - 4.0,
        xx + 14.0,
        yy - 4.0,
        css(&theme.reserved, "#8f7f00"),
        xx + 18.0
    );
    // The sources of the external band, on a row under the title.
    let Some(split) = split else {
        return;
    };
    let (mut xx, yy) = (LEFT, TOP - 10.0);
    let _ = write!(
        s,
        r##"<text x="{xx:.1}" y="{yy:.1}" fill="#555555">external by source:</text>"##
    );
    xx += 130.0;
    for (k, name) in split.sources.iter().enumerate().take(LEGEND_SOURCES) {
        let _ = write!(
            s,
            r#"<rect x="{xx:.1}" y="{:.1}" width="12" height="12" fill="{}"/><text class="source-legend" x="{:.1}" y="{yy:.1}">{}</text>"#,
            yy - 10.0,
            css(theme.source(usize::from(k as u8)), "#888888"),
            xx + 16.0,
            xml(name)
        );
        xx += 24.0 + 7.0 * name.chars().count() as f64;
    }
    if split.sources.len() > LEGEND_SOURCES {
        let _ = write!(
            s,
            r##"<text x="{xx:.1}" y="{yy:.1}" fill="#555555">+{} more</text>"##,
            split.sources.len() - LEGEND_SOURCES
        );
    }
    let _ = writeln!(s);
}

/// The SVG rendered to PNG (fonts from the system; without any, the text is left out).
pub fn to_png(svg: &str) -> Result<Vec<u8>> {
    let mut opt = resvg::usvg::Options::default();
    opt.fontdb_mut().load_system_fonts();
    let tree = resvg::usvg::Tree::from_str(svg, &opt).context("rendering the plot")?;
    let size = tree.size().to_int_size();
    let mut pixmap = resvg::tiny_skia::Pixmap::new(size.width(), size.height())
        .context("a picture of that size")?;
    resvg::render(
        &tree,
        resvg::tiny_skia::Transform::default(),
        &mut pixmap.as_mut(),
    );
    pixmap.encode_png().context("encoding the PNG")
}
