//! `memtide summary FILE`: the summary answer ([`memtide_report::summary`]) printed as the
//! readable report, `--json` or `--markdown`.

use super::load::{open, pick_device};
use super::SummaryArgs;
use anyhow::{bail, Result};
use memtide_core::analysis::{FixReplay, Summary, SummaryOptions, TreeFrames};
use memtide_report::summary::{summarise, TextView};
use std::process::ExitCode;

pub fn run(a: &SummaryArgs) -> Result<ExitCode> {
    let opened = open(&a.file, &a.input, a.capacity.as_deref())?;
    let (t_load, t_index) = (opened.timings.read, opened.timings.index);
    let primary = pick_device(&opened, a.input.device.as_deref())?;
    let traces = opened.devices;
    if a.timings {
        let size = std::fs::metadata(&a.file).map(|m| m.len()).unwrap_or(0);
        let events: usize = traces.iter().map(|t| t.trace.len()).sum();
        let ix: usize = traces.iter().map(|t| t.index.heap_bytes()).sum();
        let tr: usize = traces.iter().map(|t| t.trace.heap_bytes()).sum();
        eprintln!(
            "timings: read {:.1} MB in {:.3} s ({:.0} MB/s), index {:.3} s; {} events; index {:.1} B/event, trace columns {:.1} B/event",
            size as f64 / 1e6,
            t_load.as_secs_f64(),
            size as f64 / 1e6 / t_load.as_secs_f64().max(1e-9),
            t_index.as_secs_f64(),
            events,
            ix as f64 / events.max(1) as f64,
            tr as f64 / events.max(1) as f64,
        );
    }
    let devices: Vec<String> = traces.iter().map(|t| t.trace.device.clone()).collect();
    let opts = SummaryOptions {
        tree_frames: if a.frames == "all" {
            TreeFrames::All
        } else {
            TreeFrames::User
        },
        // The boundary (the text's line, `--json`'s key) is one more pass over the storages:
        // the Markdown report, which does not show it, skips it.
        boundary: !a.markdown || a.json,
        fixes: FixReplay::from_flag(a.fixes),
    };
    let summaries = summarise(&traces, a.window.as_deref(), &opts)?;
    let Some(main) = summaries.get(primary) else {
        bail!("no trace to summarise");
    };
    if summaries.iter().all(|s| s.events == 0) {
        bail!(
            "{}: the trace has no events (header only?); nothing to summarise",
            a.file.display()
        );
    }
    if a.json {
        use memtide_core::analysis::{write_document, DocumentJson};
        let doc = DocumentJson::new(main, &summaries, &devices, a.input.device.is_some());
        super::write_json_out(|w| write_document(w, &doc))?;
    } else if a.markdown {
        let shown: Vec<&Summary> = if a.input.device.is_some() {
            vec![main]
        } else {
            lead_with(primary, summaries.iter())
                .filter(|s| s.events > 0)
                .collect()
        };
        if let Some(line) = memtide_report::markdown::devices_line(&shown) {
            crate::outln!("{line}\n");
        }
        for s in shown {
            crate::outln!(
                "{}",
                memtide_report::markdown::render_with(s, a.windows == "all").trim_end_matches('\n')
            );
            crate::outln!("");
        }
    } else {
        let shown: Vec<(&Summary, &memtide_core::open::Device)> = if a.input.device.is_some() {
            summaries
                .iter()
                .zip(&traces)
                .skip(primary)
                .take(1)
                .collect()
        } else {
            lead_with(primary, summaries.iter().zip(&traces))
                .filter(|(s, _)| s.events > 0)
                .collect()
        };
        let view = TextView {
            all_frames: a.frames == "all",
            tree: a.tree,
            absolute_time: a.absolute_time,
            all_windows: a.windows == "all",
        };
        let listed: Vec<&Summary> = shown.iter().map(|(s, _)| *s).collect();
        if let Some(line) = memtide_report::summary::devices_line(&listed) {
            crate::outln!("{line}\n");
        }
        for (i, (s, _)) in shown.iter().enumerate() {
            if i > 0 {
                crate::outln!("");
            }
            let text = memtide_report::summary::text(s, &view);
            crate::outln!("{}", text.trim_end_matches('\n'));
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The devices' items with the one the device rule picked first (the one that ran out of
/// memory, on a file of several GPUs), the others after it in file order.
fn lead_with<T>(primary: usize, items: impl Iterator<Item = T>) -> impl Iterator<Item = T> {
    let mut items: Vec<T> = items.collect();
    if primary < items.len() {
        let first = items.remove(primary);
        items.insert(0, first);
    }
    items.into_iter()
}
