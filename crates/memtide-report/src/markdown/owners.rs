//! Who owns the peak, in the Markdown report: the persistent split (parameters, gradients,
//! optimizer state, buffers, bytes per parameter) and the top live allocations with their
//! user frames.

use super::{cell, size};
use crate::frames::shown_frame;
use memtide_core::analysis::Summary;
use memtide_core::trace::{grouped, human_bytes};
use std::fmt::Write as _;

/// `| part | bytes | share |` of the persistent band at the peak, then bytes per parameter.
pub fn persistent(o: &mut String, s: &Summary) {
    let Some(p) = s.peak.as_ref().and_then(|p| p.persistent.as_ref()) else {
        return;
    };
    if s.live_unavailable.is_some() {
        return;
    }
    let _ = writeln!(
        o,
        "**Persistent at the peak** ({}): {}\n",
        p.source,
        size(p.total)
    );
    let share = |v: u64| {
        if p.total > 0 {
            format!("{:.1} %", v as f64 * 100.0 / p.total as f64)
        } else {
            "-".into()
        }
    };
    let _ = writeln!(o, "| part | bytes | share |\n|---|---:|---:|");
    for (name, v) in [
        ("parameters", p.params),
        ("gradients", p.grads),
        ("optimizer state", p.optimizer),
        ("buffers", p.buffers),
    ] {
        match v {
            Some(v) => {
                let _ = writeln!(o, "| {name} | {} | {} |", human_bytes(v), share(v));
            }
            None => {
                let _ = writeln!(o, "| {name} | unavailable | - |");
            }
        }
    }
    if p.private_pool > 0 {
        let _ = writeln!(
            o,
            "| private pools | {} | {} |",
            human_bytes(p.private_pool),
            share(p.private_pool)
        );
    }
    let _ = writeln!(
        o,
        "| other | {} | {} |\n",
        human_bytes(p.other),
        share(p.other)
    );
    let per = match (p.bytes_per_param, p.param_count) {
        (Some(b), Some(n)) => format!("{b:.1} B/param × {} parameters", grouped(n)),
        (None, Some(n)) => format!(
            "unavailable ({} parameters, but the file splits no parameter bytes)",
            grouped(n)
        ),
        _ => "unavailable (the file records no parameter count)".into(),
    };
    let _ = writeln!(
        o,
        "Bytes per parameter (params + grads + optimizer): {per}; model: {}.\n",
        cell(&p.model)
    );
}

/// The top live allocations at the peak, each with its user frame.
pub fn live(o: &mut String, s: &Summary) {
    let Some(p) = &s.peak else { return };
    if let Some(why) = s.live_unavailable {
        let _ = writeln!(o, "Live at the peak: {}.\n", cell(why));
        return;
    }
    if p.live.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "**Top {} live at the peak** (of {})\n\n| size | band | category | name | frame |\n|---:|---|---|---|---|",
        p.live.len(),
        grouped(p.live_count as u64)
    );
    for e in &p.live {
        let mut cat = e.category.to_string();
        if e.inferred {
            cat.push('?');
        }
        let mut name = cell(&e.label);
        if let Some(r) = e.retained {
            let _ = write!(name, " ({})", r.words());
        }
        let mut frame = cell(&shown_frame(e, false));
        if !e.compiled.is_empty() {
            let _ = write!(frame, " \\[compiled: {}\\]", cell(&e.compiled));
        }
        if !e.forward_frame.is_empty() {
            let _ = write!(frame, " (forward: {})", cell(&e.forward_frame));
        }
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} |",
            human_bytes(e.bytes.0),
            e.band.name(),
            cell(&cat),
            if name.is_empty() { "-".into() } else { name },
            if frame.is_empty() { "-".into() } else { frame }
        );
    }
    let _ = writeln!(o);
}
