//! The what-if answer (`memtide whatif FILE [--alloc-conf CONF]...`): the trace's
//! allocations and frees replayed through a model of PyTorch's caching allocator under the
//! file's own settings and each given one (`memtide_core::allocator::sim`), with reserved
//! peak, allocated peak, segments, fragmentation and any OOM side by side with what the file
//! recorded; as text or JSON.

use crate::options::InputOptions;
use crate::prologue::{open_whole, pick_device, Say};
use anyhow::{bail, Context, Result};
use memtide_core::allocator::sim::{
    reserved_series, whatif_under, AllocConf, Ceiling, RunResult, WhatIf,
};
use memtide_core::open::Device;
use memtide_core::trace::{human_bytes, Seq};
use std::path::{Path, PathBuf};

/// A file replayed under its settings and each asked for, with the device read.
pub struct Replayed {
    /// The file as given.
    pub file: PathBuf,
    pub whatif: WhatIf,
    pub device: memtide_core::open::Device,
}

impl Replayed {
    /// The document `whatif --json` prints.
    pub fn json(&self) -> Result<serde_json::Value> {
        let mut v = serde_json::to_value(&self.whatif)?;
        if let Some(m) = v.as_object_mut() {
            m.insert(
                "file".into(),
                serde_json::Value::String(self.file.display().to_string()),
            );
        }
        Ok(v)
    }

    /// The text `whatif` prints.
    pub fn text(&self) -> String {
        render(
            &self.whatif,
            &self.file.display().to_string(),
            file_oom(&self.device.trace),
        )
    }
}

/// Reads `file` (the device `input` names) and replays it under the file's settings and each
/// of `alloc_conf` (PYTORCH_CUDA_ALLOC_CONF syntax), with `capacity` (a size as written) as
/// the device's memory where given; the opening's notes go to `say`.
pub fn replay(
    file: &Path,
    input: &InputOptions,
    alloc_conf: &[String],
    capacity: Option<&str>,
    say: Say,
) -> Result<Replayed> {
    // Bad settings fail before a long load.
    let confs: Vec<AllocConf> = alloc_conf
        .iter()
        .map(|s| AllocConf::parse(s).with_context(|| "--alloc-conf".to_string()))
        .collect::<Result<_>>()?;
    let given = match capacity {
        Some(c) => Some(crate::sizes::capacity(c)?.0),
        None => None,
    };
    let opened = open_whole(file, input, say)?;
    let i = pick_device(&opened, input.device.as_deref(), say)?;
    let Some(t) = opened.take(i) else {
        bail!("no trace to replay");
    };
    // A capacity below what the file shows the device held is refused, as everywhere.
    if let Some(g) = given {
        memtide_core::open::check_capacity(&t, g).map_err(crate::prologue::open_error)?;
    }
    let ceiling = memtide_core::allocator::sim::derive_ceiling(&t.trace, &t.index, given);
    let w = whatif_under(&t.trace, t.history(), &confs, ceiling.as_ref())
        .with_context(|| format!("{}: allocator_settings", file.display()))?;
    if w.runs.first().is_some_and(|r| r.ops == 0) {
        bail!(
            "{}: {} has no allocations to replay",
            file.display(),
            t.trace.device
        );
    }
    Ok(Replayed {
        file: file.to_path_buf(),
        whatif: w,
        device: t,
    })
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

/// The result cell of a run under a ceiling: `would have fit` (a proven ceiling), `depends:
/// …` (an upper bound), or `OOM at #N: 1.000 GiB, 490.0 MiB short` (`as recorded` when the
/// file's own settings reproduce the file's OOM).
fn result_cell(r: &RunResult, ceiling: Option<&Ceiling>) -> String {
    match &r.oom {
        None => match r.model_check.as_ref().filter(|m| m.result == "served") {
            Some(m) => format!("served; the file ran out at #{} (model off)", m.file_oom),
            None => ceiling.map_or("would have fit".into(), |c| c.fit_words(r.reserved_peak)),
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
fn render(w: &WhatIf, file: &str, file_oom: Option<u64>) -> String {
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
        None => s += &format!("{}\n", memtide_core::allocator::sim::NO_CEILING),
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
            row.push(result_cell(r, w.ceiling.as_ref()));
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
                "\n{}: {}: the whole history replays under the {} ceiling, the file's OOM request{} included (reserved peak {})\n",
                label(r),
                c.fit_words(r.reserved_peak),
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

/// Where the simulated run ran out of memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimOom {
    pub at: Seq,
    /// `OOM at #N (verdict)`.
    pub text: String,
}

/// The what-if overlay of one device, ready to draw.
#[derive(Clone, Debug)]
pub struct Overlay {
    /// The legend: `whatif reserved (expandable_segments:True)`.
    pub label: String,
    /// Reserved bytes after each event; shorter than the trace when the run ran out of
    /// memory (nothing is drawn after it).
    pub series: Vec<u64>,
    pub peak: u64,
    pub oom: Option<SimOom>,
    /// The source records no allocator: the figures estimate a CUDA run.
    pub estimate: bool,
    /// The ceiling the run was replayed under, in words (None: no ceiling; reserved peaks
    /// only).
    pub ceiling: Option<String>,
    /// Where the run went through under that ceiling: `would have fit` (a proven ceiling) or
    /// what it depends on (an upper bound); None without a ceiling or with an OOM.
    pub fit: Option<String>,
}

/// The settings in words, as `whatif` names its runs.
fn settings(r: &RunResult) -> String {
    match r.settings_source.as_str() {
        "recorded" if r.alloc_conf.is_empty() => "file's settings: defaults".into(),
        "recorded" => format!("file's settings: {}", r.alloc_conf),
        _ if r.alloc_conf.is_empty() => "PyTorch defaults".into(),
        _ => r.alloc_conf.clone(),
    }
}

/// The explorer's what-if overlay (`w`) of device `dev`: its reserved line simulated under
/// `conf` (None: the file's own settings, else the defaults), below the ceiling the allocator
/// really had (`whatif`'s: reserved + driver free at the file's OOM, else the device's
/// capacity from `--capacity` or the file).
pub fn overlay(dev: &Device, conf: Option<&AllocConf>) -> Result<Overlay, String> {
    let tr = &dev.trace;
    let history = dev.allocator().map(|m| m.history());
    let ceiling = memtide_core::allocator::sim::derive_ceiling(tr, &dev.index, None);
    let capacity = ceiling.as_ref().map(|c| c.bytes);
    let s = reserved_series(tr, history, conf, capacity)
        .map_err(|e| format!("the file's allocator_settings: {e}"))?;
    if s.run.ops == 0 {
        return Err(format!("{} has no allocations to replay", tr.device));
    }
    let estimate = s.run.estimate;
    let label = if estimate {
        format!("whatif reserved, estimate ({})", settings(&s.run))
    } else {
        format!("whatif reserved ({})", settings(&s.run))
    };
    let oom = s.run.oom.as_ref().map(|o| SimOom {
        at: Seq(o.index),
        text: format!(
            "OOM at #{} ({})",
            tr.event_number(Seq(o.index)),
            o.verdict.name()
        ),
    });
    let fit = ceiling
        .as_ref()
        .filter(|_| oom.is_none())
        .map(|c| c.fit_words(s.peak()));
    Ok(Overlay {
        fit,
        label,
        peak: s.peak(),
        series: s.reserved,
        oom,
        estimate,
        ceiling: ceiling.map(|c| {
            let from = match c.source {
                "oom_figures" => "reserved + driver free at the file's OOM",
                "oom_cap" => "the cap the file's OOM implies",
                _ => "the capacity",
            };
            format!("{} ceiling ({from})", human_bytes(c.bytes))
        }),
    })
}
