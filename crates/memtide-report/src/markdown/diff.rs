//! The Markdown report of two runs (`memtide diff A B --markdown`): both peaks and the delta,
//! band deltas at the peaks, the persistent split of both, the per-step table aligned by step,
//! and the allocations that grew, with their user frames — GitHub tables, binary units.

use super::{cell, size};
use memtide_core::analysis::{Diff, Grown, OwnerChanges, Persistent, Summary};
use memtide_core::trace::{grouped, human_bytes, Band};
use std::fmt::Write as _;

/// What the diff report shows.
pub struct DiffReport<'a> {
    /// The files as the user named them.
    pub a_name: &'a str,
    pub b_name: &'a str,
    pub a: &'a Summary,
    pub b: &'a Summary,
    pub diff: &'a Diff,
    /// None: a file records no allocation identities (its live set is unknown).
    pub changes: Option<&'a OwnerChanges>,
    /// Parity, boundaries, what the change bought and cost, methods.
    pub fair: &'a memtide_core::analysis::Fair,
}

/// How many grown owners the report lists.
pub const GROWN_ROWS: usize = 20;

/// `+1.0 GiB`, `-512 KiB`, `0 B`.
pub fn signed(d: i128) -> String {
    let s = human_bytes(d.unsigned_abs() as u64);
    match d.signum() {
        -1 => format!("−{s}"),
        1 => format!("+{s}"),
        _ => "0 B".into(),
    }
}

fn peak_text(s: &Summary) -> String {
    match &s.peak {
        None => "unavailable (no events)".into(),
        Some(p) => {
            let mut t = size(p.bytes);
            if p.at_start {
                t.push_str(" at start");
            } else {
                let _ = write!(t, " at event #{}", p.index);
            }
            if let Some(m) = &p.mark {
                let _ = write!(t, " in {}", cell(m));
            }
            t
        }
    }
}

pub fn render(r: &DiffReport) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "### memtide diff · B − A\n");
    let _ = writeln!(o, "| run | file | device | peak |\n|---|---|---|---|");
    for (k, name, s) in [("A", r.a_name, r.a), ("B", r.b_name, r.b)] {
        let _ = writeln!(
            o,
            "| {k} | {} | {} | {} |",
            cell(name),
            cell(&s.device),
            peak_text(s)
        );
    }
    let _ = writeln!(o);
    super::diff_fair::render(&mut o, r.fair);
    match (&r.a.peak, &r.b.peak) {
        (Some(p), Some(q)) => {
            let d = q.bytes as i128 - p.bytes as i128;
            let pct = if p.bytes > 0 {
                format!(" ({:+.1} %)", d as f64 * 100.0 / p.bytes as f64)
            } else {
                String::new()
            };
            let _ = writeln!(
                o,
                "**Peak delta {}{pct}** ({} B).\n",
                signed(d),
                if d > 0 {
                    format!("+{}", grouped(d as u64))
                } else if d < 0 {
                    format!("−{}", grouped(d.unsigned_abs() as u64))
                } else {
                    "0".into()
                }
            );
            bands(&mut o, r, p.bands, q.bands);
        }
        _ => {
            let _ = writeln!(o, "Peak delta: unavailable (a run has no events).\n");
        }
    }
    persistent(&mut o, r);
    steps(&mut o, r.diff);
    match r.changes {
        None => {
            let _ = writeln!(
                o,
                "Allocations that grew: unavailable (a file records no allocation identities, so its live set is unknown).\n"
            );
        }
        Some(c) => {
            owners(&mut o, "grew", "more", &c.grew);
            owners(&mut o, "shrank", "less", &c.shrank);
        }
    }
    o
}

fn bands(o: &mut String, r: &DiffReport, a: [u64; Band::COUNT], b: [u64; Band::COUNT]) {
    let _ = writeln!(
        o,
        "**Bands at each one's peak**\n\n| band | A | B | B − A |\n|---|---:|---:|---:|"
    );
    for band in Band::ALL {
        let [ka, kb] = r.diff.band_known(band);
        let shown = |known: bool, v: u64| {
            if known {
                human_bytes(v)
            } else {
                "unavailable".into()
            }
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} |",
            band.name(),
            shown(ka, a[band.idx()]),
            shown(kb, b[band.idx()]),
            if ka && kb {
                signed(r.diff.band_delta[band.idx()])
            } else {
                "unavailable".into()
            }
        );
    }
    let _ = writeln!(o);
}

fn persistent(o: &mut String, r: &DiffReport) {
    let pa = r.a.peak.as_ref().and_then(|p| p.persistent.as_ref());
    let pb = r.b.peak.as_ref().and_then(|p| p.persistent.as_ref());
    if pa.is_none() && pb.is_none() {
        return;
    }
    let _ = writeln!(
        o,
        "**Persistent at each one's peak**\n\n| part | A | B | B − A |\n|---|---:|---:|---:|"
    );
    type Get = fn(&Persistent) -> Option<u64>;
    let rows: [(&str, Get); 6] = [
        ("parameters", |p| p.params),
        ("gradients", |p| p.grads),
        ("optimizer state", |p| p.optimizer),
        ("buffers", |p| p.buffers),
        ("other", |p| Some(p.other)),
        ("total", |p| Some(p.total)),
    ];
    for (name, get) in rows {
        let x = pa.and_then(get);
        let y = pb.and_then(get);
        let shown = |v: Option<u64>| v.map_or("unavailable".into(), human_bytes);
        let d = match (x, y) {
            (Some(x), Some(y)) => signed(y as i128 - x as i128),
            _ => "-".into(),
        };
        let _ = writeln!(o, "| {name} | {} | {} | {d} |", shown(x), shown(y));
    }
    let bpp = |p: Option<&Persistent>| {
        p.and_then(|p| p.bytes_per_param)
            .map_or("unavailable".into(), |b| format!("{b:.1}"))
    };
    let _ = writeln!(o, "| B/param | {} | {} | - |", bpp(pa), bpp(pb));
    let model = |p: Option<&Persistent>| p.map_or("-".into(), |p| cell(&p.model));
    let _ = writeln!(o, "| model | {} | {} | - |\n", model(pa), model(pb));
}

fn steps(o: &mut String, d: &Diff) {
    if d.steps.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "**Per step** (aligned by {})\n\n| step | A baseline | A peak | B baseline | B peak | B − A (peak) |\n|---|---:|---:|---:|---:|---:|",
        d.aligned_by
    );
    let most = d.most_different.first().copied();
    for (k, s) in d.steps.iter().enumerate() {
        let name =
            s.a.as_ref()
                .or(s.b.as_ref())
                .map_or_else(|| format!("step #{k}"), |r| r.name.to_string());
        let f = |v: Option<u64>| v.map_or("-".into(), human_bytes);
        let mut delta = s.delta().map_or("-".into(), signed);
        if most == Some(k) && s.delta().is_some_and(|d| d != 0) {
            delta = format!("**{delta}**");
        }
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {delta} |",
            cell(&name),
            f(s.a.as_ref().map(|r| r.baseline.0)),
            f(s.a.as_ref().map(|r| r.peak.0)),
            f(s.b.as_ref().map(|r| r.baseline.0)),
            f(s.b.as_ref().map(|r| r.peak.0)),
        );
    }
    let _ = writeln!(o);
}

fn owners(o: &mut String, what: &str, more: &str, g: &[Grown]) {
    if g.is_empty() {
        let _ = writeln!(
            o,
            "No allocation owner holds {more} at B's peak than at A's.\n"
        );
        return;
    }
    let _ = writeln!(
        o,
        "**Allocations that {what}** (live at each one's peak, by owner; {} of {})\n\n| B − A | A | B | category | name | frame |\n|---:|---:|---:|---|---|---|",
        g.len().min(GROWN_ROWS),
        g.len()
    );
    for x in g.iter().take(GROWN_ROWS) {
        let dash = |s: String| if s.is_empty() { "-".into() } else { s };
        let _ = writeln!(
            o,
            "| {} | {} ({}) | {} ({}) | {} | {} | {} |",
            signed(x.delta()),
            human_bytes(x.a_bytes),
            x.a_count,
            human_bytes(x.b_bytes),
            x.b_count,
            cell(x.category),
            dash(cell(&x.label)),
            dash(cell(&crate::frames::moved_frame(x)))
        );
    }
    let _ = writeln!(o);
}
