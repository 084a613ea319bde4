//! `memtide whatif FILE [--alloc-conf CONF]... [--capacity SIZE]`: replays the trace's
//! allocations and frees through a model of PyTorch's caching allocator under the file's own
//! settings and each `--alloc-conf`, and prints reserved peak, allocated peak, segments,
//! fragmentation at the reserved peak and any OOM side by side with what the file recorded
//! (`memtide_core::allocator::sim`).

use super::load::{index_all, load_whole, pick_device};
use super::WhatifArgs;
use anyhow::{bail, Context, Result};
use memtide_core::allocator::sim::{whatif, AllocConf, RunResult, WhatIf};
use memtide_core::trace::human_bytes;
use std::process::ExitCode;

pub fn run(a: &WhatifArgs) -> Result<ExitCode> {
    // Bad settings fail before a long load.
    let confs: Vec<AllocConf> = a
        .alloc_conf
        .iter()
        .map(|s| AllocConf::parse(s).with_context(|| "--alloc-conf".to_string()))
        .collect::<Result<_>>()?;
    let capacity = match &a.capacity {
        Some(c) => Some(super::flags::capacity(c)?.0),
        None => None,
    };
    let loaded = load_whole(&a.file, &a.input)?;
    let i = pick_device(&loaded, a.input.device.as_deref())?;
    let (_, traces) = index_all(loaded);
    let Some(t) = traces.get(i) else {
        bail!("no trace to replay");
    };
    let capacity = capacity.or(t.trace.capacity.map(|c| c.0));
    let w = whatif(&t.trace, t.allocator.as_ref(), &confs, capacity)
        .with_context(|| format!("{}: allocator_settings", a.file.display()))?;
    if w.runs.first().is_some_and(|r| r.ops == 0) {
        bail!(
            "{}: {} has no allocations to replay",
            a.file.display(),
            t.trace.device
        );
    }
    if a.json {
        let mut v = serde_json::to_value(&w)?;
        if let Some(m) = v.as_object_mut() {
            m.insert(
                "file".into(),
                serde_json::Value::String(a.file.display().to_string()),
            );
        }
        crate::out_json!("{}", crate::safe_text::json_pretty(&v)?);
    } else {
        crate::outln!("{}", render(&w, &a.file.display().to_string()).trim_end());
    }
    Ok(ExitCode::SUCCESS)
}

fn pct(x: Option<f64>) -> String {
    x.map_or_else(|| "n/a".into(), |f| format!("{:.1}%", 100.0 * f))
}

fn label(r: &RunResult) -> String {
    let conf = if r.alloc_conf.is_empty() {
        "defaults".to_string()
    } else {
        r.alloc_conf.clone()
    };
    match r.settings_source.as_str() {
        "recorded" => format!("file's settings ({conf})"),
        "defaults" => "PyTorch defaults".into(),
        _ => conf,
    }
}

fn oom_cell(r: &RunResult, capacity: Option<u64>) -> String {
    match (&r.oom, capacity) {
        (Some(o), _) => format!("OOM at #{} ({})", o.index, o.verdict.name()),
        (None, Some(_)) => "fits".into(),
        (None, None) => "-".into(),
    }
}

/// The text report.
pub fn render(w: &WhatIf, file: &str) -> String {
    let mut s = String::new();
    let ops = w.runs.first().map_or(0, |r| r.ops);
    s += &format!(
        "whatif {} · {file}: {ops} allocator events replayed through a model of PyTorch's CUDACachingAllocator\n",
        w.device
    );
    if w.estimate {
        s += "estimate: this file records no caching allocator (no segments); the figures are what PyTorch's allocator would reserve for these allocations on a CUDA device\n";
    }
    match w.capacity {
        Some(c) => s += &format!("capacity: {}\n", human_bytes(c)),
        None => s += "capacity: unlimited (pass --capacity 80GiB to find where it would run out of memory)\n",
    }
    let mut rows: Vec<[String; 6]> = vec![[
        "settings".into(),
        "reserved peak".into(),
        "allocated peak".into(),
        "segments (max)".into(),
        "frag. at peak".into(),
        "OOM".into(),
    ]];
    if let Some(r) = &w.recorded {
        rows.push([
            "recorded in the file".into(),
            human_bytes(r.reserved_peak),
            "".into(),
            format!("{}", r.segments),
            "".into(),
            "".into(),
        ]);
    }
    for r in &w.runs {
        let est = if w.estimate { "~" } else { "" };
        rows.push([
            label(r),
            format!("{est}{}", human_bytes(r.reserved_peak)),
            format!("{est}{}", human_bytes(r.allocated_peak)),
            format!("{} ({})", r.segments, r.segments_max),
            pct(r.fragmentation_at_peak),
            oom_cell(r, w.capacity),
        ]);
    }
    let widths: Vec<usize> = (0..6)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (x, w))| {
                if c == 0 {
                    format!("{x:<w$}")
                } else {
                    format!("{x:>w$}")
                }
            })
            .collect();
        s += line.join("  ").trim_end();
        s += "\n";
    }
    if let (Some(rec), Some(first)) = (&w.recorded, w.runs.first()) {
        if rec.reserved_peak > 0 && first.oom.is_none() {
            let err =
                (first.reserved_peak as f64 - rec.reserved_peak as f64) / rec.reserved_peak as f64;
            s += &format!(
                "model check: under the file's own settings the model's reserved peak is {:+.2}% off the recorded one\n",
                100.0 * err
            );
        }
    }
    for r in &w.runs {
        if let Some(o) = &r.oom {
            s += &format!(
                "\n{}: out of memory at #{} — request {} ({} after rounding, {} pool); reserved {}, allocated {}, free in reserve {}, largest free block {}\n  verdict: {} — {}\n",
                label(r),
                o.index,
                o.requested_bytes.map_or("?".into(), human_bytes),
                o.rounded_bytes.map_or("?".into(), human_bytes),
                o.pool.as_deref().unwrap_or("?"),
                o.reserved.map_or("?".into(), human_bytes),
                o.allocated.map_or("?".into(), human_bytes),
                o.free_in_reserve.map_or("?".into(), human_bytes),
                o.largest_free_block.map_or("?".into(), human_bytes),
                o.verdict.name(),
                o.advice
            );
        }
        if r.recorded_ooms_served > 0 {
            s += &format!(
                "{}: the file's OOM request{} would have been served\n",
                label(r),
                if r.recorded_ooms_served > 1 { "s" } else { "" }
            );
        }
    }
    if let Some(r) = w.runs.first() {
        s += "\nwhere the model simplifies:\n";
        for x in &r.simplifications {
            s += &format!("  - {x}\n");
        }
    }
    s
}
