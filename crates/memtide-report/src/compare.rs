//! The comparison of two runs (`memtide diff A B`): both opened through the prologue, the
//! core's diff, owner changes, persistent splits and fair comparison, and the answer's text,
//! JSON and Markdown. The command line prints it; the explorer's diff page and Python read it.

use crate::options::InputOptions;
use crate::prologue::{open, pick_device, Say};
use anyhow::{bail, Result};
use memtide_core::analysis::{
    diff, owner_changes, persistent, Diff, Grown, OwnerChanges, Persistent, PersistentJson,
};
use memtide_core::trace::{human_bytes, Band};
use serde_json::json;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn signed(d: i128) -> String {
    let s = human_bytes(d.unsigned_abs() as u64);
    if d < 0 {
        format!("-{s}")
    } else if d > 0 {
        format!("+{s}")
    } else {
        "0 B".into()
    }
}

/// Both runs read and compared: what every output of `diff` is made of.
pub struct Compared {
    /// The files as given.
    pub a: PathBuf,
    pub b: PathBuf,
    pub x: memtide_core::open::Device,
    pub y: memtide_core::open::Device,
    pub d: Diff,
    pub g: Option<OwnerChanges>,
    pub split: (Option<Persistent>, Option<Persistent>),
    pub f: memtide_core::analysis::Fair,
    pub rules: memtide_core::analysis::FrameRules,
}

/// Reads both runs (`a`, `b`: the device `input` names in each) and compares them; the
/// openings' notes go to `say`.
pub fn compare(a: &Path, b: &Path, input: &InputOptions, say: Say) -> Result<Compared> {
    let la = open(a, input, None, say)?;
    let ia = pick_device(&la, input.device.as_deref(), say)?;
    let lb = open(b, input, None, say)?;
    let ib = pick_device(&lb, input.device.as_deref(), say)?;
    let rules = la.rules.frames.clone();
    let (Some(x), Some(y)) = (la.take(ia), lb.take(ib)) else {
        bail!("nothing to compare");
    };
    let (d, f) = diff_and_fair(&x, &y);
    let g = match (&d.peak_a, &d.peak_b) {
        (Some(p), Some(q)) => {
            owner_changes((&x.trace, &x.index, p), (&y.trace, &y.index, q), &rules)
        }
        _ => None,
    };
    let per = |t: &memtide_core::open::Device, p: Option<memtide_core::analysis::Peak>| {
        p.and_then(|p| persistent(&t.trace, &p.live(&t.trace, &t.index)))
    };
    let split = (per(&x, d.peak_a), per(&y, d.peak_b));
    Ok(Compared {
        a: a.to_path_buf(),
        b: b.to_path_buf(),
        x,
        y,
        d,
        g,
        split,
        f,
        rules,
    })
}

impl Compared {
    /// The document `diff --json` prints.
    pub fn json(&self) -> serde_json::Value {
        json(self)
    }

    /// The text `diff` prints.
    pub fn text(&self) -> String {
        render(self)
    }

    /// The Markdown report `diff --markdown` prints: each run's summary (frames under its
    /// own rules) beside the comparison.
    pub fn markdown(&self) -> String {
        let opts = memtide_core::analysis::SummaryOptions::default();
        let sum = |t: &memtide_core::open::Device| {
            memtide_core::analysis::Summary::build_with(&t.trace, &t.index, None, &opts, &t.frames)
                .explained(&t.trace, &t.index, None, &t.frames)
        };
        let (sa, sb) = (sum(&self.x), sum(&self.y));
        let (na, nb) = (self.a.display().to_string(), self.b.display().to_string());
        crate::markdown::diff::render(&crate::markdown::diff::DiffReport {
            a_name: &na,
            b_name: &nb,
            a: &sa,
            b: &sb,
            diff: &self.d,
            changes: self.g.as_ref(),
            fair: &self.f,
        })
    }
}

/// What every view of a comparison starts with (the command's answer, the explorer's diff
/// page): the core's diff of the two devices and the fair comparison.
pub fn diff_and_fair(
    x: &memtide_core::open::Device,
    y: &memtide_core::open::Device,
) -> (Diff, memtide_core::analysis::Fair) {
    let d = diff(&x.trace, &x.index, &y.trace, &y.index);
    let f = memtide_core::analysis::fair(
        &x.trace,
        &x.index,
        d.peak_a.map(|p| p.bytes.0),
        &y.trace,
        &y.index,
        d.peak_b.map(|p| p.bytes.0),
    );
    (d, f)
}

/// The document `diff --json` prints.
fn json(c: &Compared) -> serde_json::Value {
    let mut v = to_json(c);
    if let Some(m) = v.as_object_mut() {
        for (k, val) in crate::diff_fair::json_keys(&c.f) {
            m.insert(k.to_string(), val);
        }
    }
    v
}

/// How many grown owners the text and JSON list.
const GROWN_SHOWN: usize = 20;

fn owners_json(g: Option<&[Grown]>) -> serde_json::Value {
    match g {
        None => serde_json::Value::Null,
        Some(g) => g
            .iter()
            .take(GROWN_SHOWN)
            .map(|x| {
                json!({
                    "category": x.category,
                    "label": x.label,
                    "frame": x.frame,
                    "a_frame": x.a_frame,
                    "a_bytes": x.a_bytes,
                    "a_count": x.a_count,
                    "b_bytes": x.b_bytes,
                    "b_count": x.b_count,
                    "delta": x.delta() as i64,
                })
            })
            .collect::<Vec<_>>()
            .into(),
    }
}

fn peak_json(
    t: &memtide_core::open::Device,
    p: Option<memtide_core::analysis::Peak>,
) -> serde_json::Value {
    match p {
        None => serde_json::Value::Null,
        Some(p) => {
            // A band is null where the run does not know it (never 0).
            let bands: serde_json::Map<String, serde_json::Value> = Band::ALL
                .iter()
                .map(|b| {
                    let known = t.trace.band_known(*b);
                    let v = known.then(|| p.bands.get(*b));
                    (b.name().to_string(), v.into())
                })
                .collect();
            json!({
                "bytes": p.bytes.0,
                "index": t.trace.event_number(p.at),
                "time_us": memtide_core::analysis::Micros(t.trace.time_us(p.at)),
                "mark": t.trace.enclosing_mark(p.at).map(|m| t.trace.mark_label(m).into_owned()),
                "bands": bands,
                // The external band at the peak by source (null where unavailable).
                "external_by_source": memtide_core::analysis::external_by_source(
                    &t.trace,
                    &t.index.live_at_unsorted(&t.trace, p.at),
                )
                .map(|v| {
                    v.into_iter()
                        .map(|(k, b)| (k, serde_json::Value::from(b)))
                        .collect::<serde_json::Map<String, serde_json::Value>>()
                }),
            })
        }
    }
}

fn to_json(c: &Compared) -> serde_json::Value {
    let (d, x, y, g, split) = (&c.d, &c.x, &c.y, c.g.as_ref(), &c.split);
    let deltas: serde_json::Map<String, serde_json::Value> = Band::ALL
        .iter()
        .map(|b| {
            let known = d.band_known(*b) == [true; 2];
            let v = known.then(|| d.band_delta[b.idx()] as i64);
            (b.name().to_string(), v.into())
        })
        .collect();
    let steps: Vec<serde_json::Value> = d
        .steps
        .iter()
        .map(|s| {
            json!({
                "ordinal": s.ordinal,
                "a": s.a.as_ref().map(|r| json!({"name": &*r.name, "baseline": r.baseline.0, "peak": r.peak.0})),
                "b": s.b.as_ref().map(|r| json!({"name": &*r.name, "baseline": r.baseline.0, "peak": r.peak.0})),
                "delta": s.delta().map(|v| v as i64),
            })
        })
        .collect();
    json!({
        "a": {"source": c.a.display().to_string(), "device": x.trace.device, "peak": peak_json(x, d.peak_a), "persistent": split.0.as_ref().map(PersistentJson::new)},
        "b": {"source": c.b.display().to_string(), "device": y.trace.device, "peak": peak_json(y, d.peak_b), "persistent": split.1.as_ref().map(PersistentJson::new)},
        "peak_delta": match (d.peak_a, d.peak_b) {
            (Some(p), Some(q)) => json!(q.bytes.0 as i64 - p.bytes.0 as i64),
            _ => serde_json::Value::Null,
        },
        "band_delta_at_peaks": deltas,
        "aligned_by": d.aligned_by,
        "steps": steps,
        "most_different_steps": d.most_different,
        "grown": owners_json(g.map(|c| c.grew.as_slice())),
        "shrunk": owners_json(g.map(|c| c.shrank.as_slice())),
    })
}

fn render(c: &Compared) -> String {
    let (d, x, y, g, split, f) = (&c.d, &c.x, &c.y, c.g.as_ref(), &c.split, &c.f);
    let mut o = String::new();
    crate::report_line!(o, "memtide diff (B − A; binary units)");
    crate::report_line!(o, "A  {} · {}", c.a.display(), x.trace.device);
    crate::report_line!(o, "B  {} · {}", c.b.display(), y.trace.device);
    o.push_str(&crate::diff_fair::text(f));
    let _ = writeln!(o);
    let pk = |t: &memtide_core::open::Device, p: Option<memtide_core::analysis::Peak>| match p {
        None => "unavailable".to_string(),
        Some(p) => format!(
            "{} at #{}{}",
            human_bytes(p.bytes.0),
            t.trace.event_number(p.at),
            t.trace
                .enclosing_mark(p.at)
                .map(|m| format!(" ({})", t.trace.mark_label(m)))
                .unwrap_or_default()
        ),
    };
    crate::report_line!(o, "peak A  {}", pk(x, d.peak_a));
    crate::report_line!(o, "peak B  {}", pk(y, d.peak_b));
    if let (Some(p), Some(q)) = (d.peak_a, d.peak_b) {
        crate::report_line!(
            o,
            "delta   {}",
            signed(q.bytes.0 as i128 - p.bytes.0 as i128)
        );
        let _ = writeln!(o);
        crate::report_line!(
            o,
            "bands at each one's peak:        A            B        B − A"
        );
        for b in Band::ALL {
            let [ka, kb] = d.band_known(b);
            let shown = |known: bool, v: u64| {
                if known {
                    human_bytes(v)
                } else {
                    "unavailable".into()
                }
            };
            crate::report_line!(
                o,
                "  {:<12} {:>14} {:>12} {:>12}",
                b.name(),
                shown(ka, p.bands.get(b)),
                shown(kb, q.bands.get(b)),
                if ka && kb {
                    signed(d.band_delta[b.idx()])
                } else {
                    "unavailable".into()
                }
            );
        }
    }
    persistent_text(&mut o, split);
    let _ = writeln!(o);
    crate::report_line!(o, "per step (aligned by {}):", d.aligned_by);
    for s in &d.steps {
        let name = s.a.as_ref().or(s.b.as_ref()).map_or("-", |r| &*r.name);
        let pa = s.a.as_ref().map_or("-".into(), |r| human_bytes(r.peak.0));
        let pb = s.b.as_ref().map_or("-".into(), |r| human_bytes(r.peak.0));
        let dd = s.delta().map_or("-".into(), signed);
        crate::report_line!(o, "  {name:<16} {pa:>11} {pb:>11} {dd:>12}");
    }
    if let Some(&k) = d.most_different.first() {
        let s = &d.steps[k];
        let name = s.a.as_ref().or(s.b.as_ref()).map_or("-", |r| &*r.name);
        crate::report_line!(
            o,
            "most different: {name} ({})",
            s.delta().map_or("-".into(), signed)
        );
    }
    match g {
        None => {
            let _ = writeln!(o);
            crate::report_line!(
                o,
                "grew: unavailable (a file records no allocation identities)"
            );
        }
        Some(c) => {
            owners_text(&mut o, "grew", &c.grew);
            owners_text(&mut o, "shrank", &c.shrank);
        }
    }
    o
}

/// `grew at the peaks (…):` and its rows, or a line saying nothing did.
fn owners_text(o: &mut String, what: &str, rows: &[Grown]) {
    if rows.is_empty() {
        let _ = writeln!(o);
        crate::report_line!(o, "{what}: nothing (by owner, at the peaks)");
        return;
    }
    let _ = writeln!(o);
    crate::report_line!(
        o,
        "{what} at the peaks (by owner; B − A, A, B; {} of {}):",
        rows.len().min(GROWN_SHOWN),
        rows.len()
    );
    for x in rows.iter().take(GROWN_SHOWN) {
        let frame = crate::frames::moved_frame(x);
        let what = if x.label.is_empty() {
            frame.to_string()
        } else {
            format!("{:<28} {frame}", x.label)
        };
        crate::report_line!(
            o,
            "  {:>11} {:>11} {:>11}  {:<16} {}",
            signed(x.delta()),
            human_bytes(x.a_bytes),
            human_bytes(x.b_bytes),
            x.category,
            what.trim_end()
        );
    }
}

/// The persistent split at each one's peak (when either has persistent bytes).
fn persistent_text(o: &mut String, (pa, pb): &(Option<Persistent>, Option<Persistent>)) {
    if pa.is_none() && pb.is_none() {
        return;
    }
    let _ = writeln!(o);
    crate::report_line!(
        o,
        "persistent at each one's peak:   A            B        B − A"
    );
    type Get = fn(&Persistent) -> Option<u64>;
    let rows: [(&str, Get); 6] = [
        ("params", |p| p.params),
        ("grads", |p| p.grads),
        ("optimizer", |p| p.optimizer),
        ("buffers", |p| p.buffers),
        ("other", |p| Some(p.other)),
        ("total", |p| Some(p.total)),
    ];
    for (name, get) in rows {
        let x = pa.as_ref().and_then(get);
        let y = pb.as_ref().and_then(get);
        let shown = |v: Option<u64>| v.map_or("unavailable".into(), human_bytes);
        let dd = match (x, y) {
            (Some(x), Some(y)) => signed(y as i128 - x as i128),
            _ => "-".into(),
        };
        crate::report_line!(o, "  {name:<12} {:>14} {:>12} {dd:>12}", shown(x), shown(y));
    }
    let bpp = |p: &Option<Persistent>| {
        p.as_ref()
            .and_then(|p| p.bytes_per_param)
            .map_or("unavailable".into(), |b| format!("{b:.1} B/param"))
    };
    crate::report_line!(o, "  {:<12} {:>14} {:>12}", "per param", bpp(pa), bpp(pb));
}
