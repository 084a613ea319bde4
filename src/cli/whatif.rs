//! `memtide whatif FILE [--alloc-conf CONF]... [--capacity SIZE]`: replays the trace's
//! allocations and frees through a model of PyTorch's caching allocator under the file's own
//! settings and each `--alloc-conf`, and prints reserved peak, allocated peak, segments,
//! fragmentation at the reserved peak and any OOM side by side with what the file recorded
//! (`memtide_core::allocator::sim`).

use super::load::{open_whole, pick_device};
use super::WhatifArgs;
use anyhow::{bail, Context, Result};
use memtide_core::allocator::sim::{whatif_under, AllocConf, RunResult, WhatIf};
use memtide_core::trace::human_bytes;
use std::process::ExitCode;

pub fn run(a: &WhatifArgs) -> Result<ExitCode> {
    let (w, t) = replay(a)?;
    if a.json {
        let v = json(a, &w)?;
        crate::out_json!("{}", crate::safe_text::json_pretty(&v)?);
    } else {
        let file_oom = file_oom(&t.trace);
        crate::outln!(
            "{}",
            render(&w, &a.file.display().to_string(), file_oom).trim_end()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads the file and replays it under the file's settings and each `--alloc-conf`: what
/// `whatif` prints (and the Python module's `memtide.whatif` returns), with the device read.
pub fn replay(a: &WhatifArgs) -> Result<(WhatIf, memtide_core::open::Device)> {
    // Bad settings fail before a long load.
    let confs: Vec<AllocConf> = a
        .alloc_conf
        .iter()
        .map(|s| AllocConf::parse(s).with_context(|| "--alloc-conf".to_string()))
        .collect::<Result<_>>()?;
    let given = match &a.capacity {
        Some(c) => Some(super::flags::capacity(c)?.0),
        None => None,
    };
    let opened = open_whole(&a.file, &a.input)?;
    let i = pick_device(&opened, a.input.device.as_deref())?;
    let Some(t) = opened.take(i) else {
        bail!("no trace to replay");
    };
    // A capacity below what the file shows the device held is refused, as everywhere.
    if let Some(g) = given {
        memtide_core::open::check_capacity(&t, g).map_err(super::load::open_error)?;
    }
    let ceiling = memtide_core::allocator::sim::ceiling::derive(&t.trace, &t.index, given);
    let w = whatif_under(&t.trace, t.history(), &confs, ceiling.as_ref())
        .with_context(|| format!("{}: allocator_settings", a.file.display()))?;
    if w.runs.first().is_some_and(|r| r.ops == 0) {
        bail!(
            "{}: {} has no allocations to replay",
            a.file.display(),
            t.trace.device
        );
    }
    Ok((w, t))
}

/// The document `whatif --json` prints.
pub fn json(a: &WhatifArgs, w: &WhatIf) -> Result<serde_json::Value> {
    let mut v = serde_json::to_value(w)?;
    if let Some(m) = v.as_object_mut() {
        m.insert(
            "file".into(),
            serde_json::Value::String(a.file.display().to_string()),
        );
    }
    Ok(v)
}

/// The file's first OOM, `#N` as shown.
fn file_oom(t: &memtide_core::trace::Trace) -> Option<u64> {
    t.marks
        .iter()
        .find(|m| m.kind == memtide_core::trace::MarkKind::Oom)
        .map(|m| t.event_number(m.at))
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

/// The result cell of a run under a ceiling: `would have fit`, or `OOM at #N: 1.000 GiB,
/// 490.0 MiB short` (`as recorded` when the file's own settings reproduce the file's OOM).
fn result_cell(r: &RunResult) -> String {
    match &r.oom {
        None => match r.model_check.as_ref().filter(|m| m.result == "served") {
            Some(m) => format!("served; the file ran out at #{} (model off)", m.file_oom),
            None => "would have fit".into(),
        },
        Some(o) => {
            let mut s = format!(
                "OOM at #{}: {}",
                o.index,
                o.rounded_bytes
                    .or(o.requested_bytes)
                    .map_or("?".into(), human_bytes)
            );
            if let Some(b) = r.oom_shortfall {
                s += &format!(", {} short", human_bytes(b));
            }
            if r.model_check
                .as_ref()
                .is_some_and(|m| m.result == "reproduced")
            {
                s += " (as recorded)";
            }
            s
        }
    }
}

/// The text report: the ceiling (or that there is none) before the table, one row per run,
/// the model check, each OOM explained, what the model simplifies.
pub fn render(w: &WhatIf, file: &str, file_oom: Option<u64>) -> String {
    let mut s = String::new();
    let ops = w.runs.first().map_or(0, |r| r.ops);
    s += &format!(
        "whatif {} · {file}: {ops} allocator events replayed through a model of PyTorch's CUDACachingAllocator\n",
        w.device
    );
    if w.estimate {
        s += "estimate: this file records no caching allocator (no segments); the figures are what PyTorch's allocator would reserve for these allocations on a CUDA device\n";
    }
    match &w.ceiling {
        Some(c) => {
            s += &format!("ceiling: {}\n", c.text);
            s += "  every setting below is replayed from the start of the history under this ceiling\n";
        }
        None => s += &format!("{}\n", memtide_core::allocator::sim::ceiling::NO_CEILING),
    }
    let with_result = w.ceiling.is_some();
    let mut head = vec![
        "settings".to_string(),
        "reserved peak".into(),
        "allocated peak".into(),
        "segments (max)".into(),
        "frag. at peak".into(),
    ];
    if with_result {
        head.push("result".into());
    }
    let mut rows: Vec<Vec<String>> = vec![head];
    if let Some(r) = &w.recorded {
        let mut row = vec![
            "recorded in the file".into(),
            human_bytes(r.reserved_peak),
            "".into(),
            format!("{}", r.segments),
            "".into(),
        ];
        if with_result {
            row.push(file_oom.map_or("".into(), |n| format!("OOM at #{n}")));
        }
        rows.push(row);
    }
    for r in &w.runs {
        let est = if w.estimate { "~" } else { "" };
        let mut row = vec![
            label(r),
            format!("{est}{}", human_bytes(r.reserved_peak)),
            format!("{est}{}", human_bytes(r.allocated_peak)),
            format!("{} ({})", r.segments, r.segments_max),
            pct(r.fragmentation_at_peak),
        ];
        if with_result {
            row.push(result_cell(r));
        }
        rows.push(row);
    }
    s += &table(&rows);
    if let Some(first) = w.runs.first() {
        if let Some(m) = &first.model_check {
            s += &format!("model check: {}\n", m.text);
        } else if let Some(rec) = &w.recorded {
            if rec.reserved_peak > 0 && first.oom.is_none() {
                let err = (first.reserved_peak as f64 - rec.reserved_peak as f64)
                    / rec.reserved_peak as f64;
                s += &format!(
                    "model check: under the file's own settings the model's reserved peak is {:+.2}% off the recorded one\n",
                    100.0 * err
                );
            }
        }
    }
    for r in &w.runs {
        if let Some(o) = &r.oom {
            s += &format!(
                "\n{}: out of memory at #{} — request {} ({} after rounding, {} pool){}; reserved {}, allocated {}, free in reserve {}, largest free block {}\n  verdict: {} — {}\n",
                label(r),
                o.index,
                o.requested_bytes.map_or("?".into(), human_bytes),
                o.rounded_bytes.map_or("?".into(), human_bytes),
                o.pool.as_deref().unwrap_or("?"),
                r.oom_shortfall.map_or(String::new(), |b| format!(", {} short of the ceiling", human_bytes(b))),
                o.reserved.map_or("?".into(), human_bytes),
                o.allocated.map_or("?".into(), human_bytes),
                o.free_in_reserve.map_or("?".into(), human_bytes),
                o.largest_free_block.map_or("?".into(), human_bytes),
                o.verdict.name(),
                o.advice
            );
        } else if let (Some(c), true, false) = (
            &w.ceiling,
            r.recorded_ooms_served > 0,
            r.model_check.as_ref().is_some_and(|m| m.result == "served"),
        ) {
            s += &format!(
                "\n{}: would have fit: the whole history replays under the {} ceiling, the file's OOM request{} included (reserved peak {})\n",
                label(r),
                human_bytes(c.bytes),
                if r.recorded_ooms_served > 1 { "s" } else { "" },
                human_bytes(r.reserved_peak)
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

/// Columns padded: the first left-aligned, the others right-aligned.
fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |x| x.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut s = String::new();
    for r in rows {
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
    s
}
