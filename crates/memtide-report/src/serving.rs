//! The serving budget as the text report and the Markdown report show it (the figures are
//! the core's [`memtide_core::analysis::ServingBudget`]; docs/serving.md).

use memtide_core::analysis::{Capture, ServingBudget, StageSource};
use memtide_core::trace::human_bytes;
use std::fmt::Write as _;

fn figure(v: Option<u64>) -> String {
    v.map_or_else(|| "unknown".into(), human_bytes)
}

fn source(s: StageSource) -> &'static str {
    match s {
        StageSource::Trace => "trace",
        StageSource::Inferred => "inferred",
    }
}

/// `size 8192: +964.0 MiB (25 captures)`, `pool (1, 0): 80.0 MiB`, `pool (3, 0): released`.
fn rung(c: &Capture) -> String {
    let who = match (&c.pool, c.size) {
        (Some(p), _) => format!("pool {p}"),
        (None, Some(n)) => format!("size {n}"),
        (None, None) => "size unknown".into(),
    };
    if c.released {
        return format!("{who}: released");
    }
    match c.captures {
        Some(n) => format!(
            "{who}: +{} ({n} capture{})",
            human_bytes(c.bytes_added),
            if n == 1 { "" } else { "s" }
        ),
        None => format!("{who}: {}", human_bytes(c.bytes_added)),
    }
}

fn headroom_text(b: &ServingBudget) -> String {
    match (b.headroom, b.outside) {
        (Some(h), Some(_)) => format!("{} (capacity − reserve peak − outside)", human_bytes(h)),
        (Some(h), None) => format!(
            "{} (capacity − reserve peak; memory outside PyTorch not measured)",
            human_bytes(h)
        ),
        (None, _) => "unknown (capacity unknown)".into(),
    }
}

/// The budget's lines in the text report.
pub fn text(o: &mut String, b: &ServingBudget) {
    crate::report_line!(
        o,
        "budget           before trace {} · weights {} · KV cache {} · graphs {} · activation peak {}",
        figure(b.before_trace),
        figure(b.weights),
        figure(b.kv_cache),
        figure(b.graphs),
        figure(b.activation_peak)
    );
    crate::report_line!(
        o,
        "                 outside {} · capacity {} · headroom {}",
        figure(b.outside),
        figure(b.capacity),
        headroom_text(b)
    );
    let stages: Vec<String> = b
        .stages
        .iter()
        .map(|s| format!("{} {} ({})", s.name, human_bytes(s.bytes), source(s.source)))
        .collect();
    if !stages.is_empty() {
        crate::report_line!(o, "stages           {}", stages.join(" → "));
    }
    if !b.captures.is_empty() {
        let rungs: Vec<String> = b.captures.iter().map(rung).collect();
        crate::report_line!(o, "capture ladder   {}", rungs.join(" · "));
    }
}

/// The budget as a Markdown table.
pub fn markdown(o: &mut String, b: &ServingBudget) {
    let _ = writeln!(o, "**Serving budget**\n\n| figure | bytes |\n|---|---|");
    for (name, v) in [
        ("before trace", b.before_trace),
        ("weights", b.weights),
        ("KV cache", b.kv_cache),
        ("graphs", b.graphs),
        ("activation peak", b.activation_peak),
        ("outside PyTorch", b.outside),
        ("capacity", b.capacity),
    ] {
        let _ = writeln!(o, "| {name} | {} |", figure(v));
    }
    let _ = writeln!(o, "| headroom | {} |\n", headroom_text(b));
    if !b.captures.is_empty() {
        let rungs: Vec<String> = b.captures.iter().map(rung).collect();
        let _ = writeln!(o, "Capture ladder: {}.\n", rungs.join(" · "));
    }
}
