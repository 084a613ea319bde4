//! The serving budget as the text report, the Markdown report and the explorer's budget view
//! show it (the figures are the core's [`memtide_core::analysis::ServingBudget`];
//! docs/serving.md).

use memtide_core::analysis::{Capture, Reconciled, ServingBudget, StageSource};
use memtide_core::formats::server_log::LogFigure;
use memtide_core::trace::{human_bytes, Band};
use std::fmt::Write as _;

fn figure(v: Option<u64>) -> String {
    v.map_or_else(|| "unknown".into(), human_bytes)
}

/// A stage's source as `summary --json` names it.
pub fn source(s: StageSource) -> &'static str {
    match s {
        StageSource::Trace => "trace",
        StageSource::Inferred => "inferred",
        StageSource::ServerLog => "server log",
    }
}

/// A logged figure as the server printed it: GiB with the decimals its rounding says
/// (`2.43 GiB`, `14.9888 GiB`, `-7.83 GiB`).
fn as_logged(bytes: i64, precision: u64) -> String {
    const GIB: f64 = (1u64 << 30) as f64;
    let decimals = if precision == 0 {
        4
    } else {
        (0.5 * GIB / precision as f64)
            .log10()
            .round()
            .clamp(0.0, 6.0) as usize
    };
    format!("{:.decimals$} GiB", bytes as f64 / GIB)
}

/// One logged figure beside the trace's: `KV cache 160.0 GiB as logged, 160.0 GiB in the
/// trace`, `graph memory estimated 2.430 GiB, measured 624.6 MiB in the capture`.
fn reconciled(r: &Reconciled) -> String {
    let logged = as_logged(r.logged, r.precision);
    let trace = r.trace.map_or_else(|| "unknown".into(), human_bytes);
    let mut s = match (r.figure, r.compared_with) {
        (LogFigure::GraphsEstimate, _) => match r.trace {
            Some(_) => format!("graph memory estimated {logged}, measured {trace} in the capture"),
            None => format!("graph memory estimated {logged}, unknown in the trace"),
        },
        (LogFigure::FreeAfterGraphs, _) => format!(
            "{} {logged} as logged, headroom {trace} in the trace",
            r.figure.label()
        ),
        (f, Some(_)) => format!("{} {logged} as logged, {trace} in the trace", f.label()),
        (f, None) => format!("{} {logged} as logged", f.label()),
    };
    if r.agrees == Some(false) {
        if let Some(t) = r.trace {
            let d = (i128::from(t) - i128::from(r.logged)).unsigned_abs();
            let d = u64::try_from(d).unwrap_or(u64::MAX);
            s.push_str(&format!(", {} apart", human_bytes(d)));
        }
    }
    s
}

/// Where the log's figures come from: `run.log, vLLM, rank 0`.
fn log_origin(b: &ServingBudget) -> String {
    let mut servers: Vec<&str> = Vec::new();
    for r in &b.reconcile {
        if !servers.contains(&r.server.name()) {
            servers.push(r.server.name());
        }
    }
    let rank = b
        .reconcile
        .iter()
        .find_map(|r| r.rank)
        .map(|r| format!(", rank {r}"))
        .unwrap_or_default();
    let missing = b
        .server_log_missing_rank
        .map(|n| format!(" (the log has no rank {n}, this device's: the lowest rank's lines)"))
        .unwrap_or_default();
    format!(
        "{}{}{rank}{missing}",
        crate::safe_text::one_line(b.server_log.as_deref().unwrap_or("server log")),
        if servers.is_empty() {
            String::new()
        } else {
            format!(", {}", servers.join(" and "))
        }
    )
}

/// `size 8192: +964.0 MiB (25 captures)`, `pool (1, 0): 80.0 MiB`, `pool (3, 0): released`.
fn rung(c: &Capture) -> String {
    let who = match (&c.pool, c.size) {
        (Some(p), _) if c.mem_pool => format!("MemPool {p}"),
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

/// One figure of the budget as the explorer's budget view draws it: a row per stage, with
/// its legend and where its figure comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Figure {
    pub name: &'static str,
    /// Bytes; None when the trace cannot say (unknown, never 0).
    pub bytes: Option<u64>,
    /// Where the figure comes from (`trace`, `inferred`, …, `computed` for the headroom);
    /// None when unknown.
    pub source: Option<&'static str>,
    /// What the stage holds, in a few words (the legend; at most 20 characters).
    pub what: &'static str,
    /// The band its memory belongs to (the swatch's colour and glyph); None for the headroom.
    pub band: Option<Band>,
}

/// The stages in a server's order — before trace, weights, activation peak, KV cache,
/// graphs, outside, headroom — each with its bytes, its source and its legend.
pub fn figures(b: &ServingBudget) -> Vec<Figure> {
    // A stage's source as the budget's `stages` names it (the stage is there when known).
    let staged = |stage: &str| {
        b.stages
            .iter()
            .find(|s| s.name == stage)
            .map(|s| source(s.source))
    };
    let row = |name, bytes: Option<u64>, stage, what, band| Figure {
        name,
        bytes,
        source: bytes.and(staged(stage)),
        what,
        band: Some(band),
    };
    vec![
        row(
            "before trace",
            b.before_trace,
            "before trace",
            "live at trace start",
            Band::Unknown,
        ),
        row(
            "weights",
            b.weights,
            "load weights",
            "model parameters",
            Band::Persistent,
        ),
        row(
            "activation peak",
            b.activation_peak,
            "activation peak",
            "profile run's peak",
            Band::Activation,
        ),
        row(
            "KV cache",
            b.kv_cache,
            "KV cache",
            "KV-cache buffers",
            Band::Persistent,
        ),
        row(
            "graphs",
            b.graphs,
            "graph capture",
            "CUDA-graph pools",
            Band::Persistent,
        ),
        Figure {
            name: "outside",
            bytes: b.outside,
            source: b.outside.map(|_| "trace"),
            what: "outside PyTorch",
            band: Some(Band::External),
        },
        Figure {
            name: "headroom",
            bytes: b.headroom,
            source: b.headroom.map(|_| "computed"),
            what: "left of the capacity",
            band: None,
        },
    ]
}

/// The capture ladder in one line (`size 16: +20.00 MiB (1 capture) · …`); None when the
/// budget has none.
pub fn ladder(b: &ServingBudget) -> Option<String> {
    (!b.captures.is_empty()).then(|| {
        let rungs: Vec<String> = b.captures.iter().map(rung).collect();
        rungs.join(" · ")
    })
}

/// `before trace 3.000 GiB (trace) → load weights 2.500 GiB (server log) → …`; None
/// without a stage.
fn stages(b: &ServingBudget) -> Option<String> {
    let stages: Vec<String> = b
        .stages
        .iter()
        .map(|s| format!("{} {} ({})", s.name, human_bytes(s.bytes), source(s.source)))
        .collect();
    (!stages.is_empty()).then(|| stages.join(" → "))
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
    if let Some(stages) = stages(b) {
        crate::report_line!(o, "stages           {stages}");
    }
    if let Some(l) = ladder(b) {
        crate::report_line!(o, "capture ladder   {l}");
    }
    if b.server_log.is_some() {
        crate::report_line!(o, "server log       {}", log_origin(b));
        for (i, r) in b.reconcile.iter().enumerate() {
            let head = if i == 0 { "reconcile" } else { "" };
            crate::report_line!(o, "{head:<17}{}", reconciled(r));
        }
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
    if let Some(l) = ladder(b) {
        let _ = writeln!(o, "Capture ladder: {l}.\n");
    }
    if let Some(stages) = stages(b) {
        let _ = writeln!(o, "Stages: {stages}.\n");
    }
    if b.server_log.is_some() {
        let _ = writeln!(
            o,
            "Server log ({}), reconciled with the trace:\n",
            log_origin(b)
        );
        for r in &b.reconcile {
            let _ = writeln!(o, "- line {}: {}", r.line, reconciled(r));
        }
        let _ = writeln!(o);
    }
}
