//! `memtide check`: a CI gate — exit 0 under the limit, 1 over it, with a one-line reason.

use super::load::{index_all, load, pick_device};
use super::CheckArgs;
use crate::analysis::{global_peak, live_entries};
use crate::trace::{human_bytes, parse_size};
use anyhow::{Context, Result};
use std::process::ExitCode;

pub fn run(a: &CheckArgs) -> Result<ExitCode> {
    let limit = parse_size(&a.max_peak).context("--max-peak")?;
    let loaded = load(&a.file, &a.input)?;
    let i = pick_device(&loaded, a.input.device.as_deref())?;
    let (_, traces) = index_all(loaded);
    let Some(t) = traces.get(i) else {
        anyhow::bail!("no trace to check");
    };
    let Some(peak) = global_peak(&t.trace, &t.index) else {
        anyhow::bail!("{}: the trace has no events", a.file.display());
    };
    let mark = t
        .trace
        .enclosing_mark(peak.at)
        .map(|m| format!(" ({})", t.trace.mark_name(m)))
        .unwrap_or_default();
    let idx = t.trace.src_index(peak.at);
    if peak.bytes <= limit {
        println!(
            "ok: peak {} ({} B) at event #{idx}{mark} is within --max-peak {}",
            human_bytes(peak.bytes.0),
            peak.bytes.0,
            human_bytes(limit.0)
        );
        return Ok(ExitCode::SUCCESS);
    }
    let top: Vec<String> = live_entries(&t.trace, &t.index, peak.at, Some(3))
        .into_iter()
        .map(|e| {
            let name = if e.name.is_empty() {
                e.frame.clone()
            } else {
                e.name.clone()
            };
            let name = if name.is_empty() {
                "unnamed".to_string()
            } else {
                name
            };
            format!("{} {} {}", human_bytes(e.bytes.0), e.band.name(), name)
        })
        .collect();
    println!(
        "FAIL: peak {} ({} B) at event #{idx}{mark} exceeds --max-peak {} by {}; biggest live: {}",
        human_bytes(peak.bytes.0),
        peak.bytes.0,
        human_bytes(limit.0),
        human_bytes(peak.bytes.0 - limit.0),
        top.join(", ")
    );
    Ok(ExitCode::from(1))
}
