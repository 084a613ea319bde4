//! `memtide check`: a CI gate — exit 0 under the limit, 1 over it, with a one-line reason;
//! 2 on bad input, and on a trace whose reader warned that its figures may be wrong (unless
//! `--allow-warnings`). Every device of the file with events is gated (`--device` names one).
//! The verdict is [`memtide_core::gate`]'s; this file reads the flags, loads the trace and
//! prints the verdict ([`memtide_report::check`]) as text, JSON (`--json`) or a report.

use super::load::open;
use super::CheckArgs;
use anyhow::Result;
pub use memtide_report::check::gate_error;
use memtide_report::check::{gated, judge, limits, CheckJson};
use std::path::Path;
use std::process::ExitCode;

/// Every file `check` reads: the trace(s) and the side files (`--report` never overwrites
/// one).
pub fn inputs(a: &CheckArgs) -> Vec<&Path> {
    let mut v = vec![a.file.as_path()];
    v.extend(a.more.iter().map(|p| p.as_path()));
    v.extend(super::load::side_files(&a.input));
    v
}

/// Refuses `--json` with `--report -`: both would print on standard output.
pub fn refuse_json_and_stdout_report(a: &CheckArgs) -> Result<()> {
    if a.json
        && a.report
            .as_deref()
            .is_some_and(crate::output_file::is_stdout)
    {
        anyhow::bail!("--json and --report - both print on standard output: give --report a file");
    }
    Ok(())
}

/// Prints the verdict: its lines, or `--json`; nothing when `--report -` prints the report.
pub fn print<V: serde::Serialize>(
    a: &CheckArgs,
    kind: &'static str,
    file: String,
    code: u8,
    verdict: &V,
    lines: &[String],
) -> Result<()> {
    let doc = CheckJson {
        kind,
        file,
        exit_code: code,
        verdict,
    };
    print_doc(a, &doc, lines)
}

/// Prints `lines`, or `doc` with `--json`; nothing when `--report -` prints the report.
fn print_doc(a: &CheckArgs, doc: &impl serde::Serialize, lines: &[String]) -> Result<()> {
    if a.json {
        crate::out_json!("{}", crate::safe_text::json_pretty(doc)?);
    } else if !a
        .report
        .as_deref()
        .is_some_and(crate::output_file::is_stdout)
    {
        for l in lines {
            crate::outln!("{}", crate::safe_text::one_line(l));
        }
    }
    Ok(())
}

pub fn run(a: &CheckArgs) -> Result<ExitCode> {
    let limits = limits(
        a.max_peak.as_deref(),
        a.max_growth.as_deref(),
        a.window.clone(),
        a.allow_warnings,
    )?;
    refuse_json_and_stdout_report(a)?;
    if let Some(path) = &a.report {
        // Before the (long) load: the report is never one of the inputs.
        crate::output_file::refuse_inputs(path, &inputs(a))?;
    }
    let opened = open(&a.file, &a.input, a.capacity.as_deref())?;
    let devices = gated(&opened, a.input.device.as_deref(), &mut super::load::say)?;
    let j = judge(devices, &a.file, &limits)?;
    print_doc(a, &j, &j.lines)?;
    if let Some(path) = &a.report {
        let md = j.report(devices, a.window.as_deref())?;
        crate::output_file::write_atomically(path, md.as_bytes(), &inputs(a))?;
    }
    Ok(ExitCode::from(j.verdict.outcome().exit_code()))
}
