//! The fair-comparison part of `memtide diff`: the parity verdict and its lines, each run's
//! measurement boundary, what the change bought and cost (peaks allocated and reserved, time
//! per step with its clock), the methods recognised — as text lines and `--json` keys.

use memtide_core::analysis::{Fair, Side, StepTime};
use memtide_core::trace::human_bytes;
use serde_json::{json, Value};
use std::fmt::Write as _;

/// The `--json` keys: `parity`, `boundary`, `reserved_peak`, `step_time`, `methods`,
/// `bought_and_cost`.
pub fn json_keys(f: &Fair) -> Vec<(&'static str, Value)> {
    let parity = {
        let lines: serde_json::Map<String, Value> = f
            .parity
            .lines
            .iter()
            .map(|l| {
                (
                    l.line.to_string(),
                    json!({"state": l.state, "breaks_parity": l.breaks_parity, "a": l.a, "b": l.b, "words": l.words}),
                )
            })
            .collect();
        json!({
            "verdict": f.parity.verdict,
            "words": f.parity.words,
            "differs": f.parity.differs,
            "missing": f.parity.missing,
            "lines": lines,
        })
    };
    let boundary =
        |b: &memtide_core::analysis::Boundary| serde_json::to_value(b).unwrap_or(Value::Null);
    let step = |s: &Side| s.step_time.as_ref().map_or(Value::Null, step_json);
    vec![
        ("parity", parity),
        (
            "boundary",
            json!({"a": boundary(&f.boundary_a), "b": boundary(&f.boundary_b), "warning": f.boundary_warning}),
        ),
        (
            "reserved_peak",
            json!({"a": f.cost.a.reserved_peak, "b": f.cost.b.reserved_peak, "delta": f.cost.reserved_delta, "change": f.cost.reserved_change}),
        ),
        (
            "step_time",
            json!({"a": step(&f.cost.a), "b": step(&f.cost.b), "change": f.cost.step_time_change}),
        ),
        (
            "methods",
            serde_json::to_value(&f.methods).unwrap_or(Value::Null),
        ),
        (
            "bought_and_cost",
            json!({"peak_change": f.cost.peak_change, "words": f.cost.words, "headline": f.headline}),
        ),
    ]
}

fn step_json(s: &StepTime) -> Value {
    json!({"median_us": s.median_us, "steps_timed": s.steps_timed, "warm_up_excluded": s.warm_up_excluded, "clock": s.clock})
}

fn time(s: &Option<StepTime>) -> String {
    match s {
        None => "unavailable".into(),
        Some(s) if s.median_us >= 1e6 => format!("{:.3} s", s.median_us / 1e6),
        Some(s) if s.median_us >= 1e3 => format!("{:.3} ms", s.median_us / 1e3),
        Some(s) => format!("{:.1} µs", s.median_us),
    }
}

fn bytes(v: Option<u64>) -> String {
    v.map_or("unavailable".into(), human_bytes)
}

fn signed(d: Option<i64>) -> String {
    match d {
        None => "-".into(),
        Some(0) => "0 B".into(),
        Some(d) if d < 0 => format!("−{}", human_bytes(d.unsigned_abs())),
        Some(d) => format!("+{}", human_bytes(d as u64)),
    }
}

fn pct(c: Option<f64>) -> String {
    c.map_or(String::new(), |c| {
        format!(" ({:+.1} %)", c * 100.0).replacen('-', "−", 1)
    })
}

/// The text block printed under the two file lines.
pub fn text(f: &Fair) -> String {
    let mut o = String::new();
    let _ = writeln!(o);
    crate::report_line!(o, "parity           {}", f.parity.words);
    for l in &f.parity.lines {
        let name = match l.line {
            "optimizer_state" => "optimizer state",
            x => x,
        };
        crate::report_line!(o, "  {name:<16}{}", l.words);
    }
    crate::report_line!(o, "boundary A       {}", f.boundary_a.words);
    crate::report_line!(o, "boundary B       {}", f.boundary_b.words);
    if let Some(w) = &f.boundary_warning {
        crate::report_line!(o, "warning: {w}");
    }
    let _ = writeln!(o);
    crate::report_line!(o, "bought and cost  {}", f.headline);
    crate::report_line!(o, "                       A            B        B − A");
    let (a, b) = (&f.cost.a, &f.cost.b);
    crate::report_line!(
        o,
        "  peak allocated {:>11} {:>12} {:>12}{}",
        bytes(a.peak_allocated),
        bytes(b.peak_allocated),
        signed(f.cost.peak_delta),
        pct(f.cost.peak_change)
    );
    crate::report_line!(
        o,
        "  peak reserved  {:>11} {:>12} {:>12}{}",
        bytes(a.reserved_peak),
        bytes(b.reserved_peak),
        signed(f.cost.reserved_delta),
        pct(f.cost.reserved_change)
    );
    let clock = match (&a.step_time, &b.step_time) {
        (Some(x), Some(y)) if x.clock == y.clock => format!("  {}", x.clock.words()),
        (Some(x), Some(y)) => format!("  A {}, B {}", x.clock.words(), y.clock.words()),
        (Some(x), None) | (None, Some(x)) => format!("  {}", x.clock.words()),
        (None, None) => String::new(),
    };
    crate::report_line!(
        o,
        "  step time      {:>11} {:>12} {:>12}{clock}",
        time(&a.step_time),
        time(&b.step_time),
        f.cost
            .step_time_change
            .map_or("-".into(), |c| format!("{:+.1} %", c * 100.0)
                .replacen('-', "−", 1)),
    );
    if f.methods.is_empty() {
        crate::report_line!(o, "methods          none recognised");
    } else {
        for (k, m) in f.methods.iter().enumerate() {
            let head = if k == 0 { "methods" } else { "" };
            crate::report_line!(o, "{head:<17}{}", m.words);
        }
    }
    o
}
