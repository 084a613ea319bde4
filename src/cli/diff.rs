//! `memtide diff A B`: two runs compared — peaks, band deltas at each one's peak, the
//! per-step table aligned by step marks (the steps that differ most first), and the
//! allocations that grew with their user frames; as text, JSON or Markdown.

use super::load::{open, pick_device};
use super::DiffArgs;
use anyhow::{bail, Result};
use memtide_core::analysis::diff::{diff, Diff};
use memtide_core::analysis::grown::{owner_changes, Grown, OwnerChanges};
use memtide_core::analysis::persistent::{persistent, Persistent};
use memtide_core::analysis::summary_json::PersistentJson;
use memtide_core::trace::{human_bytes, Band};
use serde_json::json;
use std::fmt::Write as _;
use std::process::ExitCode;

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

pub fn run(a: &DiffArgs) -> Result<ExitCode> {
    if !a.json
        && !a.markdown
        && !a.require_parity
        && std::io::IsTerminal::is_terminal(&std::io::stdout())
    {
        return super::explore::diff(&a.a, &a.b, &a.input);
    }
    let c = compare(a)?;
    let Compared {
        x,
        y,
        d,
        g,
        split,
        f,
        ..
    } = &c;
    if a.json {
        let v = json(a, &c);
        crate::out_json!("{}", crate::safe_text::json_pretty(&v)?);
    } else if a.markdown {
        let opts = memtide_core::analysis::summary::SummaryOptions::default();
        let sum = |t: &memtide_core::open::Device| {
            memtide_core::analysis::Summary::build_with(&t.trace, &t.index, None, &opts, &t.frames)
                .explained(&t.trace, &t.index, None, &t.frames)
        };
        let (sa, sb) = (sum(x), sum(y));
        let (na, nb) = (a.a.display().to_string(), a.b.display().to_string());
        let md = super::markdown::diff::render(&super::markdown::diff::DiffReport {
            a_name: &na,
            b_name: &nb,
            a: &sa,
            b: &sb,
            diff: d,
            changes: g.as_ref(),
            fair: f,
        });
        crate::outln!("{}", md.trim_end_matches('\n'));
    } else {
        crate::outln!(
            "{}",
            render(d, a, x, y, g.as_ref(), split, f).trim_end_matches('\n')
        );
    }
    Ok(parity_exit(a, f))
}

/// Both runs read and compared: what every output of `diff` is made of.
pub struct Compared {
    pub x: memtide_core::open::Device,
    pub y: memtide_core::open::Device,
    pub d: Diff,
    pub g: Option<OwnerChanges>,
    pub split: (Option<Persistent>, Option<Persistent>),
    pub f: memtide_core::analysis::fair::Fair,
    pub rules: memtide_core::analysis::frames::FrameRules,
}

/// Reads both runs (`a.a`, `a.b`) and compares them.
pub fn compare(a: &DiffArgs) -> Result<Compared> {
    let la = open(&a.a, &a.input, None)?;
    let ia = pick_device(&la, a.input.device.as_deref())?;
    let lb = open(&a.b, &a.input, None)?;
    let ib = pick_device(&lb, a.input.device.as_deref())?;
    let rules = la.rules.frames.clone();
    let (Some(x), Some(y)) = (la.take(ia), lb.take(ib)) else {
        bail!("nothing to compare");
    };
    let d = diff(&x.trace, &x.index, &y.trace, &y.index);
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
    let f = memtide_core::analysis::fair::fair(
        &x.trace,
        &x.index,
        d.peak_a.map(|p| p.bytes.0),
        &y.trace,
        &y.index,
        d.peak_b.map(|p| p.bytes.0),
    );
    Ok(Compared {
        x,
        y,
        d,
        g,
        split,
        f,
        rules,
    })
}

/// The document `diff --json` prints.
pub fn json(a: &DiffArgs, c: &Compared) -> serde_json::Value {
    let mut v = to_json(&c.d, a, &c.x, &c.y, c.g.as_ref(), &c.split);
    if let Some(m) = v.as_object_mut() {
        for (k, val) in super::diff_fair::json_keys(&c.f) {
            m.insert(k.to_string(), val);
        }
    }
    v
}

/// `--require-parity`: exit 1 when the runs did different work, 2 when the files cannot
/// tell (a gate that could not check fails too); said on stderr either way.
fn parity_exit(a: &DiffArgs, f: &memtide_core::analysis::fair::Fair) -> ExitCode {
    use memtide_core::analysis::parity::Verdict;
    if !a.require_parity {
        return ExitCode::SUCCESS;
    }
    match f.parity.verdict {
        Verdict::DifferentWork => {
            crate::errln!("memtide: parity required: {}", f.parity.words);
            ExitCode::from(1)
        }
        Verdict::CannotTell => {
            crate::errln!(
                "memtide: parity required but not checkable: {} (exit 2: the gate could not check)",
                f.parity.words
            );
            ExitCode::from(2)
        }
        Verdict::SameWork => ExitCode::SUCCESS,
    }
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
            // The external band is null where the run measures none (never 0).
            let bands: serde_json::Map<String, serde_json::Value> = Band::ALL
                .iter()
                .map(|b| {
                    let known = *b != Band::External || t.trace.external_known;
                    let v = known.then(|| p.bands.get(*b));
                    (b.name().to_string(), v.into())
                })
                .collect();
            json!({
                "bytes": p.bytes.0,
                "index": t.trace.event_number(p.at),
                "time_us": memtide_core::analysis::summary_json::Micros(t.trace.time_us(p.at)),
                "mark": t.trace.enclosing_mark(p.at).map(|m| t.trace.mark_label(m).into_owned()),
                "bands": bands,
                // The external band at the peak by source (null where unavailable).
                "external_by_source": memtide_core::analysis::summary::external_by_source(
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

fn to_json(
    d: &Diff,
    a: &DiffArgs,
    x: &memtide_core::open::Device,
    y: &memtide_core::open::Device,
    g: Option<&OwnerChanges>,
    split: &(Option<Persistent>, Option<Persistent>),
) -> serde_json::Value {
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
        "a": {"source": a.a.display().to_string(), "device": x.trace.device, "peak": peak_json(x, d.peak_a), "persistent": split.0.as_ref().map(PersistentJson::new)},
        "b": {"source": a.b.display().to_string(), "device": y.trace.device, "peak": peak_json(y, d.peak_b), "persistent": split.1.as_ref().map(PersistentJson::new)},
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

fn render(
    d: &Diff,
    a: &DiffArgs,
    x: &memtide_core::open::Device,
    y: &memtide_core::open::Device,
    g: Option<&OwnerChanges>,
    split: &(Option<Persistent>, Option<Persistent>),
    f: &memtide_core::analysis::fair::Fair,
) -> String {
    let mut o = String::new();
    crate::report_line!(o, "memtide diff (B − A; binary units)");
    crate::report_line!(o, "A  {} · {}", a.a.display(), x.trace.device);
    crate::report_line!(o, "B  {} · {}", a.b.display(), y.trace.device);
    o.push_str(&super::diff_fair::text(f));
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
        let frame = super::frames::short_frame(&x.frame);
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
