//! `memtide plot A B -o diff.svg`: two runs on one scale, aligned by step as `diff` aligns
//! them (`analysis::diff::align`), each run's total as a step line on peak-preserving
//! columns, both peaks marked with their exact bytes, step boundaries, OOMs, and a legend
//! naming the files.

use crate::picture::Palette;
use crate::picture::{css, nice_top, xml, y_axis};
use anyhow::{bail, Result};
use memtide_core::analysis::{align, event_columns, Column, Diff, Peak, Span};
use memtide_core::index::Index;
use memtide_core::trace::{grouped, human_bytes, Band, MarkKind, Seq, Trace};
use std::fmt::Write as _;

const LEFT: f64 = 86.0;
const RIGHT: f64 = 24.0;
const TOP: f64 = 66.0;
const BOTTOM: f64 = 76.0;
/// Run A's and run B's colours.
const COLOURS: [&str; 2] = ["#1f5fbf", "#d0341f"];

/// One run of the picture.
pub struct Run<'a> {
    pub trace: &'a Trace,
    pub index: &'a Index,
    /// The file as the user named it.
    pub name: &'a str,
}

/// Two runs, their diff and the picture's size.
pub struct DiffPicture<'a> {
    pub a: Run<'a>,
    pub b: Run<'a>,
    pub diff: &'a Diff,
    pub width: u32,
    pub height: u32,
    /// Also draw each run's stacked bands, faint, in these colours.
    pub bands: Option<&'a Palette>,
}

/// A run's columns in one span, with their left edge and width in pixels.
struct Drawn {
    x0: f64,
    colw: f64,
    cols: Vec<Column>,
}

fn columns(run: &Run, range: Option<(Seq, Seq)>, x0: f64, x1: f64) -> Option<Drawn> {
    let (lo, hi) = range?;
    if lo > hi || run.index.is_empty() {
        return None;
    }
    let events = (hi.0 - lo.0 + 1) as usize;
    let n = ((x1 - x0).round() as usize).clamp(1, events);
    Some(Drawn {
        x0,
        colw: (x1 - x0) / n as f64,
        cols: event_columns(run.trace, run.index, lo, hi, n),
    })
}

/// `A peak 9.312 GiB (9,999,220,736 B) · step 1`.
fn peak_text(k: &str, run: &Run, p: &Peak) -> String {
    let mark = if p.at_start {
        Some("at start".to_string())
    } else {
        run.trace
            .enclosing_mark(p.at)
            .map(|m| run.trace.mark_label(m).into_owned())
    };
    format!(
        "{k} peak {} ({} B){}",
        human_bytes(p.bytes.0),
        grouped(p.bytes.0),
        mark.map(|m| format!(" · {m}")).unwrap_or_default()
    )
}

/// The picture `memtide plot A B` draws: both runs' devices compared
/// ([`diff`](memtide_core::analysis::diff())) and drawn on one scale, aligned by step; their
/// bands faint behind when `bands` gives a palette.
pub fn of_runs(
    a: (&memtide_core::open::Device, &str),
    b: (&memtide_core::open::Device, &str),
    bands: Option<&Palette>,
    width: u32,
    height: u32,
) -> Result<String> {
    let (x, y) = (a.0, b.0);
    let d = memtide_core::analysis::diff(&x.trace, &x.index, &y.trace, &y.index);
    svg(&DiffPicture {
        a: Run {
            trace: &x.trace,
            index: &x.index,
            name: a.1,
        },
        b: Run {
            trace: &y.trace,
            index: &y.index,
            name: b.1,
        },
        diff: &d,
        width,
        height,
        bands,
    })
}

/// The two runs' picture as SVG text.
pub fn svg(p: &DiffPicture) -> Result<String> {
    let d = p.diff;
    let (Some(pa), Some(pb)) = (d.peak_a, d.peak_b) else {
        bail!("nothing to draw: a run has no events");
    };
    let (w, h) = (f64::from(p.width), f64::from(p.height));
    let (cw, ch) = (w - LEFT - RIGHT, h - TOP - BOTTOM);
    let spans = align(d, p.a.index.len(), p.b.index.len());
    let top = nice_top(pa.bytes.0.max(pb.bytes.0));
    let y = |b: u64| TOP + ch - (b as f64 / top as f64) * ch;
    let px = |f: f64| LEFT + f * cw;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r##"<rect width="{w}" height="{h}" fill="#ffffff"/>"##);
    let delta = pb.bytes.0 as i128 - pa.bytes.0 as i128;
    let sign = match delta.signum() {
        -1 => "−",
        1 => "+",
        _ => "",
    };
    let title = format!(
        "memtide diff · peak B − A {sign}{} ({sign}{} B) · aligned by {}",
        human_bytes(delta.unsigned_abs() as u64),
        grouped(delta.unsigned_abs() as u64),
        d.aligned_by
    );
    let _ = writeln!(
        s,
        r#"<text x="{LEFT}" y="20" font-size="15" font-weight="bold">{}</text>"#,
        xml(&title)
    );
    let _ = writeln!(
        s,
        r#"<g id="chart" data-x0="{LEFT}" data-y0="{}" data-ytop="{TOP}" data-top-bytes="{top}">"#,
        TOP + ch
    );
    y_axis(&mut s, top, LEFT, cw, &y);
    step_lines(&mut s, &spans, &px, ch);
    for (k, (run, peak)) in [(&p.a, pa), (&p.b, pb)].into_iter().enumerate() {
        let drawn: Vec<Drawn> = spans
            .iter()
            .filter_map(|sp| {
                let range = if k == 0 { sp.a } else { sp.b };
                columns(run, range, px(sp.x0), px(sp.x1))
            })
            .collect();
        if let Some(theme) = p.bands {
            faint_bands(&mut s, &drawn, k, theme, &y);
        }
        total_line(&mut s, &drawn, k, &y);
        ooms(&mut s, run, &drawn, k, TOP + ch, LEFT + cw);
        marker(&mut s, run, &peak, &drawn, k, &y, LEFT + cw * 0.6);
    }
    let _ = writeln!(s, "</g>");
    legend(&mut s, p, pa, pb, h);
    let _ = writeln!(s, "</svg>");
    Ok(s)
}

/// A run's stacked bands, faint (one path per band), under the lines.
fn faint_bands(s: &mut String, drawn: &[Drawn], k: usize, theme: &Palette, y: &dyn Fn(u64) -> f64) {
    for b in Band::ALL {
        let mut d = String::new();
        for dr in drawn {
            for (c, col) in dr.cols.iter().enumerate() {
                let v = col.bands.get(b);
                if col.empty || v == 0 {
                    continue;
                }
                let below: u64 = Band::ALL
                    .iter()
                    .take_while(|o| **o != b)
                    .map(|o| col.bands.get(*o))
                    .sum();
                let _ = write!(
                    d,
                    "M{:.2} {:.2}h{:.2}V{:.2}h{:.2}Z",
                    dr.x0 + c as f64 * dr.colw,
                    y(below),
                    dr.colw,
                    y(below + v),
                    -dr.colw
                );
            }
        }
        if !d.is_empty() {
            let _ = writeln!(
                s,
                r#"<path class="band-{}" data-band="{}" fill="{}" fill-opacity="0.16" d="{d}"/>"#,
                ["a", "b"][k],
                b.name(),
                css(&theme.bands[b.idx()], "#888888")
            );
        }
    }
}

/// Each run's total as a step line, one polyline per span.
fn total_line(s: &mut String, drawn: &[Drawn], k: usize, y: &dyn Fn(u64) -> f64) {
    for dr in drawn {
        let mut pts = String::new();
        for (c, col) in dr.cols.iter().enumerate() {
            if col.empty {
                continue;
            }
            let (xl, yy) = (dr.x0 + c as f64 * dr.colw, y(col.bands.total()));
            let _ = write!(pts, "{xl:.2},{yy:.2} {:.2},{yy:.2} ", xl + dr.colw);
        }
        let _ = writeln!(
            s,
            r#"<polyline class="total-{}" fill="none" stroke="{}" stroke-width="1.8" points="{}"/>"#,
            ["a", "b"][k],
            COLOURS[k],
            pts.trim_end()
        );
    }
}

/// The column of `at` in the drawn spans: its left edge and width.
fn column_of(drawn: &[Drawn], at: Seq) -> Option<(f64, f64)> {
    drawn.iter().find_map(|dr| {
        dr.cols
            .iter()
            .position(|c| !c.empty && c.lo <= at && at <= c.hi)
            .map(|i| (dr.x0 + i as f64 * dr.colw, dr.colw))
    })
}

/// A run's peak: a dot on its line and the exact bytes above the chart.
fn marker(
    s: &mut String,
    run: &Run,
    peak: &Peak,
    drawn: &[Drawn],
    k: usize,
    y: &dyn Fn(u64) -> f64,
    right_half: f64,
) {
    let at = if peak.at_start { Seq(0) } else { peak.at };
    let Some((x0, colw)) = column_of(drawn, at) else {
        return;
    };
    let (cx, cy) = (x0 + colw / 2.0, y(peak.bytes.0));
    let id = ["a", "b"][k];
    let anchor = if cx > right_half { "end" } else { "start" };
    let ly = TOP - 26.0 + 14.0 * k as f64;
    let _ = writeln!(
        s,
        r#"<line x1="{cx:.2}" y1="{ly:.1}" x2="{cx:.2}" y2="{cy:.2}" stroke="{c}" stroke-width="0.8" stroke-dasharray="1 2"/><circle id="peak-{id}" data-bytes="{}" cx="{cx:.2}" cy="{cy:.2}" r="3.5" fill="{c}"/><text id="peak-label-{id}" x="{cx:.1}" y="{:.1}" text-anchor="{anchor}" font-weight="bold" fill="{c}">{}</text>"#,
        peak.bytes.0,
        ly - 3.0,
        xml(&peak_text(&id.to_uppercase(), run, peak)),
        c = COLOURS[k]
    );
}

/// OOM marks of a run under the chart, in its colour.
fn ooms(s: &mut String, run: &Run, drawn: &[Drawn], k: usize, y0: f64, right_edge: f64) {
    for m in run.trace.marks.iter().filter(|m| m.kind == MarkKind::Oom) {
        let Some((x0, colw)) = column_of(drawn, m.at) else {
            continue;
        };
        let cx = x0 + colw / 2.0;
        // Near the right edge the mark ends at its column instead of centring on it.
        let anchor = if cx > right_edge - 30.0 {
            "end"
        } else {
            "middle"
        };
        let _ = writeln!(
            s,
            r#"<text class="oom-{}" x="{:.1}" y="{:.1}" text-anchor="{anchor}" font-weight="bold" fill="{}">✖ OOM</text>"#,
            ["a", "b"][k],
            cx,
            y0 + 30.0 + 12.0 * k as f64,
            COLOURS[k]
        );
    }
}

/// Dashed lines where aligned spans begin, named when there is room.
fn step_lines(s: &mut String, spans: &[Span], px: &dyn Fn(f64) -> f64, ch: f64) {
    for sp in spans {
        let (x0, x1) = (px(sp.x0), px(sp.x1));
        if sp.x0 > 0.0 {
            let _ = write!(
                s,
                r##"<line class="step" x1="{x0:.1}" y1="{TOP}" x2="{x0:.1}" y2="{:.1}" stroke="#8a8a8a" stroke-dasharray="2 3"/>"##,
                TOP + ch
            );
        }
        if x1 - x0 >= 56.0 || spans.len() == 1 {
            let _ = write!(
                s,
                r##"<text class="span" x="{:.1}" y="{:.1}" text-anchor="middle" fill="#555555">{}</text>"##,
                (x0 + x1) / 2.0,
                TOP + ch + 16.0,
                xml(&sp.name)
            );
        }
        let _ = writeln!(s);
    }
}

/// One row per run: its colour, the file's name, device and peak.
fn legend(s: &mut String, p: &DiffPicture, pa: Peak, pb: Peak, h: f64) {
    for (k, (run, peak)) in [(&p.a, pa), (&p.b, pb)].into_iter().enumerate() {
        let yy = h - 20.0 + 14.0 * k as f64;
        let name = std::path::Path::new(run.name).file_name().map_or_else(
            || run.name.to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        let text = format!(
            "{} {name} · {} · peak {}",
            ["A", "B"][k],
            run.trace.device,
            human_bytes(peak.bytes.0)
        );
        let _ = writeln!(
            s,
            r#"<line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{c}" stroke-width="2.5"/><text class="legend-{}" x="{:.1}" y="{yy:.1}">{}</text>"#,
            yy - 4.0,
            LEFT + 18.0,
            yy - 4.0,
            ["a", "b"][k],
            LEFT + 24.0,
            xml(&text),
            c = COLOURS[k]
        );
    }
}
