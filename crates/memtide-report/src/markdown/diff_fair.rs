//! The fair-comparison section of the Markdown diff report: the parity verdict and its lines,
//! both measurement boundaries, what the change bought and cost, the methods recognised.

use super::cell;
use memtide_core::analysis::{Fair, StepTime};
use memtide_core::trace::human_bytes;
use std::fmt::Write as _;

fn bytes(v: Option<u64>) -> String {
    v.map_or("unavailable".into(), human_bytes)
}

fn time(s: &Option<StepTime>) -> String {
    match s {
        None => "unavailable".into(),
        Some(s) => format!("{:.3} ms", s.median_us / 1e3),
    }
}

fn signed(d: Option<i64>, c: Option<f64>) -> String {
    let b = match d {
        None => return "-".into(),
        Some(0) => "0 B".to_string(),
        Some(d) if d < 0 => format!("−{}", human_bytes(d.unsigned_abs())),
        Some(d) => format!("+{}", human_bytes(d as u64)),
    };
    match c {
        Some(c) => format!(
            "{b} ({})",
            format!("{:+.1} %", c * 100.0).replacen('-', "−", 1)
        ),
        None => b,
    }
}

/// The section, ending with a blank line.
pub fn render(o: &mut String, f: &Fair) {
    let _ = writeln!(o, "**Parity: {}**\n", cell(&f.parity.words));
    let _ = writeln!(o, "| check | result |\n|---|---|");
    for l in &f.parity.lines {
        let _ = writeln!(o, "| {} | {} |", l.line.replace('_', " "), cell(&l.words));
    }
    let _ = writeln!(o, "| boundary A | {} |", cell(&f.boundary_a.words));
    let _ = writeln!(o, "| boundary B | {} |", cell(&f.boundary_b.words));
    let _ = writeln!(o);
    if let Some(w) = &f.boundary_warning {
        let _ = writeln!(o, "> **Warning:** {}\n", cell(w));
    }
    let _ = writeln!(o, "**What it bought and cost:** {}\n", cell(&f.headline));
    let _ = writeln!(o, "| | A | B | B − A |\n|---|---:|---:|---:|");
    let (a, b) = (&f.cost.a, &f.cost.b);
    let _ = writeln!(
        o,
        "| peak allocated | {} | {} | {} |",
        bytes(a.peak_allocated),
        bytes(b.peak_allocated),
        signed(f.cost.peak_delta, f.cost.peak_change)
    );
    let _ = writeln!(
        o,
        "| peak reserved | {} | {} | {} |",
        bytes(a.reserved_peak),
        bytes(b.reserved_peak),
        signed(f.cost.reserved_delta, f.cost.reserved_change)
    );
    let clock = a
        .step_time
        .as_ref()
        .or(b.step_time.as_ref())
        .map_or(String::new(), |s| format!(" ({})", s.clock.words()));
    let _ = writeln!(
        o,
        "| step time{clock} | {} | {} | {} |",
        time(&a.step_time),
        time(&b.step_time),
        f.cost
            .step_time_change
            .map_or("-".into(), |c| format!("{:+.1} %", c * 100.0)
                .replacen('-', "−", 1))
    );
    let _ = writeln!(o);
    if f.methods.is_empty() {
        let _ = writeln!(o, "Methods recognised: none.\n");
    } else {
        let _ = writeln!(o, "Methods recognised:\n");
        for m in &f.methods {
            let _ = writeln!(o, "- {}", cell(&m.words));
        }
        let _ = writeln!(o);
    }
}
