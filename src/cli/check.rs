//! `memtide check`: a CI gate — exit 0 under the limit, 1 over it, with a one-line reason;
//! 2 on bad input, and on a trace whose reader warned that its figures may be wrong (unless
//! `--allow-warnings`).

use super::load::{open, pick_device};
use super::CheckArgs;
use anyhow::Result;
use memtide_core::analysis::live::entry_in;
use memtide_core::trace::{human_bytes, Trace};
use std::path::Path;
use std::process::ExitCode;

/// Refuses a trace whose reader said its figures may be wrong (unless `allow`): `check` must
/// never print `ok` on figures it cannot vouch for. Informational warnings do not count.
pub fn refuse_doubtful(file: &Path, trace: &Trace, allow: bool) -> Result<()> {
    let doubts: Vec<&str> = trace.doubtful_warnings().collect();
    if allow || doubts.is_empty() {
        return Ok(());
    }
    anyhow::bail!(
        "{}: cannot vouch for the figures of {}: the reader reported that they may be wrong: {} (pass --allow-warnings to check it anyway)",
        file.display(),
        trace.device,
        doubts.join("; ")
    )
}

/// Refuses a trace whose inferred persistent split at the peak fits no usual model (unless
/// `allow`): the bands are then likely misread, and `check` must not vouch for them.
fn refuse_doubtful_model(file: &Path, t: &memtide_core::open::Device, allow: bool) -> Result<()> {
    if allow || !t.trace.identities_known() {
        return Ok(());
    }
    let Some(peak) = memtide_core::analysis::global_peak(&t.trace, &t.index) else {
        return Ok(());
    };
    let ids = peak.live(&t.trace, &t.index);
    let why = memtide_core::analysis::persistent::persistent(&t.trace, &ids)
        .as_ref()
        .and_then(memtide_core::analysis::persistent::doubt);
    match why {
        None => Ok(()),
        Some(w) => anyhow::bail!(
            "{}: cannot vouch for the figures of {}: {w} (pass --allow-warnings to check it anyway)",
            file.display(),
            t.trace.device
        ),
    }
}

/// The top live storages for a FAIL line, or why they are unknown.
pub fn biggest_live(
    trace: &Trace,
    index: &memtide_core::index::Index,
    peak: &memtide_core::analysis::Peak,
) -> String {
    if !trace.identities_known() {
        return "unavailable (the file records no addresses)".into();
    }
    let view = memtide_core::analysis::frames::FrameView::new(trace, &Default::default());
    let top: Vec<String> = peak
        .live(trace, index)
        .into_iter()
        .take(3)
        .map(|id| entry_in(trace, id, peak.at, &view))
        .map(|e| {
            // The row's label (name, module path or op) and its user frame.
            let frame = super::frames::shown_frame(&e, false);
            let what = match (e.label.is_empty(), frame.is_empty()) {
                (false, false) => format!("{} ({frame})", e.label),
                (false, true) => e.label.clone(),
                (true, false) => frame,
                (true, true) => "unnamed".to_string(),
            };
            format!("{} {} {what}", human_bytes(e.bytes.0), e.band.name())
        })
        .collect();
    top.join(", ")
}

/// ` (N warnings that the figures may be wrong were allowed)` after an `ok`, if any.
fn allowed_note(trace: &Trace) -> String {
    match trace.doubtful_warnings().count() {
        0 => String::new(),
        n => format!(
            " ({n} warning{} that the figures may be wrong allowed by --allow-warnings)",
            if n == 1 { "" } else { "s" }
        ),
    }
}

/// Every file `check` reads: the trace(s) and the side files (`--report` never overwrites
/// one).
pub fn inputs(a: &CheckArgs) -> Vec<&Path> {
    let mut v = vec![a.file.as_path()];
    v.extend(a.more.iter().map(|p| p.as_path()));
    v.extend(super::load::side_files(&a.input));
    v
}

/// Refuses a trace in which nothing holds memory: every gate would pass on a peak of 0 B
/// (a file whose entries were all ignored, say), which checks nothing.
fn refuse_nothing_to_gate(file: &Path, t: &memtide_core::open::Device) -> Result<()> {
    if t.index.totals().iter().any(|&b| b > 0) {
        return Ok(());
    }
    let why = match t.trace.warnings.first() {
        Some(w) => format!(" (the reader: {w})"),
        None => String::new(),
    };
    anyhow::bail!(
        "{}: nothing to check on {}: none of its {} events holds any memory, so every limit would pass on a peak of 0 B{why}",
        file.display(),
        t.trace.device,
        t.index.len()
    )
}

pub fn run(a: &CheckArgs) -> Result<ExitCode> {
    let limit = a
        .max_peak
        .as_deref()
        .map(|s| super::flags::size("--max-peak", s))
        .transpose()?;
    let growth_limit = a
        .max_growth
        .as_deref()
        .map(|s| super::flags::percent("--max-growth", s))
        .transpose()?;
    if let Some(path) = &a.report {
        // Before the (long) load: the report is never one of the inputs.
        crate::output_file::refuse_inputs(path, &inputs(a))?;
    }
    let opened = open(&a.file, &a.input, a.capacity.as_deref())?;
    let i = pick_device(&opened, a.input.device.as_deref())?;
    let Some(t) = opened.devices.get(i) else {
        anyhow::bail!("no trace to check");
    };
    if t.index.is_empty() {
        anyhow::bail!("{}: the trace has no events", a.file.display());
    }
    refuse_doubtful(&a.file, &t.trace, a.allow_warnings)?;
    refuse_doubtful_model(&a.file, t, a.allow_warnings)?;
    refuse_nothing_to_gate(&a.file, t)?;
    let note = allowed_note(&t.trace);
    let (code, lines) = verdict(a, t, limit, growth_limit, &note)?;
    if !a
        .report
        .as_deref()
        .is_some_and(crate::output_file::is_stdout)
    {
        for l in &lines {
            crate::outln!("{}", crate::safe_text::one_line(l));
        }
    }
    if let Some(path) = &a.report {
        write_report(a, t, &lines, path)?;
    }
    Ok(code)
}

/// The `--report` file: the verdict, then the Markdown summary of the checked device.
fn write_report(
    a: &CheckArgs,
    t: &memtide_core::open::Device,
    lines: &[String],
    path: &Path,
) -> Result<()> {
    let resolved = match a.window.as_deref() {
        Some(w) => Some(
            memtide_core::analysis::window_spec::WindowSpec::parse(w)?
                .resolve(&t.trace, &t.index)?,
        ),
        None => None,
    };
    let opts = memtide_core::analysis::summary::SummaryOptions {
        frame_rules: memtide_core::open::frame_rules(&super::load::load_options(&a.input))
            .map_err(super::load::open_error)?,
        boundary: false,
        ..Default::default()
    };
    let s = t.summary(&opts, resolved.as_ref());
    let mut md = String::from("## memtide check\n\n");
    for l in lines {
        md.push_str(&format!("- {}\n", super::markdown::cell(l)));
    }
    md.push('\n');
    md.push_str(&super::markdown::render(&s));
    crate::output_file::write_atomically(path, md.as_bytes(), &inputs(a))
}

/// `out of memory …` with the first OOM's verdict, when the trace has any OOM.
fn oom_line(t: &memtide_core::open::Device) -> Option<String> {
    let ooms = t.ooms();
    let x = ooms.first()?;
    let more = match ooms.len() {
        1 => String::new(),
        n => format!(" (and {} more OOM{})", n - 1, if n == 2 { "" } else { "s" }),
    };
    let fits: Vec<&str> = x
        .fixes
        .iter()
        .filter(|f| f.would_have_fit == Some(true))
        .map(|f| f.setting.as_str())
        .collect();
    let fixes = match (x.fixes.is_empty(), fits.is_empty()) {
        (true, _) => String::new(),
        (false, true) if x.fixes_ceiling.is_some() => {
            "; checked by replay: no allocator setting would have fit".to_string()
        }
        (false, true) => String::new(),
        (false, false) => format!("; checked by replay: {} would have fit", fits.join(", ")),
    };
    Some(format!(
        "out of memory at event #{} on {}: verdict {} — {} (requested {}, allocated {}, reserved {}, driver free {}){more}{fixes}: {}",
        x.index,
        x.device,
        x.verdict.name(),
        x.reasoning,
        memtide_core::allocator::explain::shown(x.rounded_bytes),
        memtide_core::allocator::explain::shown(x.allocated),
        memtide_core::allocator::explain::shown(x.reserved),
        memtide_core::allocator::explain::shown(x.device_free),
        x.advice
    ))
}

/// The gate itself: exit code and the lines that say why.
fn verdict(
    a: &CheckArgs,
    t: &memtide_core::open::Device,
    limit: Option<memtide_core::trace::Bytes>,
    growth_limit: Option<f64>,
    note: &str,
) -> Result<(ExitCode, Vec<String>)> {
    let mut lines: Vec<String> = Vec::new();
    let mut failed = false;
    // An OOM fails the peak gate (the run asked for more than the device held); with only
    // the growth gate it is said, not counted: a run that stopped mid-step can still be
    // judged on its complete steps.
    if let Some(l) = oom_line(t) {
        if limit.is_some() {
            lines.push(format!("FAIL: {l}"));
            failed = true;
        } else {
            lines.push(format!("note: {l} (not gated: --max-peak gates an OOM)"));
        }
    }
    if let Some(g) = growth_limit {
        let tr = memtide_core::analysis::trend::trend(&t.trace, &t.index);
        let (Some(growth), Some(d)) = (tr.growth, tr.growth_bytes) else {
            anyhow::bail!(
                "--max-growth needs step marks: at least one step after the warm-up step (the trace has {} step marks)",
                tr.steps.len()
            );
        };
        if growth > g {
            let view =
                memtide_core::analysis::frames::FrameView::new(&t.trace, &Default::default());
            let who: Vec<String> = tr
                .survivors
                .iter()
                .take(3)
                .map(|s| {
                    // Where the group was allocated: the user frame of its first allocation.
                    let frame = s
                        .ids
                        .first()
                        .map(|&id| view.of_stack(&t.trace, t.trace.stack_id(id)).user)
                        .filter(|f| !f.is_empty())
                        .map(|f| format!(", {f}"))
                        .unwrap_or_default();
                    format!(
                        "{} × {} ({}{frame})",
                        s.count,
                        s.name,
                        human_bytes(s.bytes.0)
                    )
                })
                .collect();
            lines.push(format!(
                "FAIL: step baseline grew by {} ({:+.2}%) after warm-up, over --max-growth {:.2}%{}",
                human_bytes(d.unsigned_abs() as u64),
                growth * 100.0,
                g * 100.0,
                if who.is_empty() { String::new() } else { format!("; surviving every step: {}", who.join(", ")) }
            ));
            failed = true;
        } else {
            lines.push(format!(
                "ok: step baseline growth {:+.2}% is within --max-growth {:.2}%{note}",
                growth * 100.0,
                g * 100.0
            ));
        }
    }
    let Some(limit) = limit else {
        return Ok((
            if failed {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            },
            lines,
        ));
    };
    let (lo, hi, wlabel) = match a.window.as_deref() {
        Some(w) => {
            let r = memtide_core::analysis::window_spec::WindowSpec::parse(w)?
                .resolve(&t.trace, &t.index)?;
            let label = format!(" in window {} ({})", r.spec, r.label);
            (r.lo, r.hi, label)
        }
        None => (
            memtide_core::trace::Seq(0),
            memtide_core::trace::Seq(t.index.len() as u64 - 1),
            String::new(),
        ),
    };
    let Some(peak) = memtide_core::analysis::window_peak(&t.trace, &t.index, lo, hi) else {
        anyhow::bail!("{}: the trace has no events", a.file.display());
    };
    let mark = t
        .trace
        .enclosing_mark(peak.at)
        .filter(|_| !peak.at_start)
        .map(|m| format!(" ({})", t.trace.mark_label(m)))
        .unwrap_or_default();
    // Where the peak holds: after an event, or in the initial state before the first one.
    let at = if peak.at_start {
        "at start (before the first event)".to_string()
    } else if t.trace.numbers_differ_from_source() {
        format!(
            "at event #{} (#{} in the file)",
            t.trace.event_number(peak.at),
            t.trace.src_index(peak.at)
        )
    } else {
        format!("at event #{}", t.trace.event_number(peak.at))
    };
    if peak.bytes <= limit {
        if failed {
            return Ok((ExitCode::from(1), lines));
        }
        lines.push(format!(
            "ok: peak {} ({} B){wlabel} {at}{mark} is within --max-peak {}{note}",
            human_bytes(peak.bytes.0),
            peak.bytes.0,
            human_bytes(limit.0)
        ));
        return Ok((ExitCode::SUCCESS, lines));
    }
    lines.push(format!(
        "FAIL: peak {} ({} B){wlabel} {at}{mark} exceeds --max-peak {} by {}; biggest live: {}",
        human_bytes(peak.bytes.0),
        peak.bytes.0,
        human_bytes(limit.0),
        human_bytes(peak.bytes.0 - limit.0),
        biggest_live(&t.trace, &t.index, &peak)
    ));
    Ok((ExitCode::from(1), lines))
}
