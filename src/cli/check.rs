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

/// Whether `--report` adds to its file instead of replacing it: `--report-append`, or the
/// file is the step summary GitHub Actions named in `$GITHUB_STEP_SUMMARY` (one summary per
/// step, which earlier lines and other checks also write to).
fn appends(a: &CheckArgs, path: &Path) -> bool {
    a.report_append || is_step_summary(path, std::env::var_os("GITHUB_STEP_SUMMARY").as_deref())
}

/// Whether `path` is the file `summary` names (the same file, by identity; or the same path
/// when neither exists yet).
fn is_step_summary(path: &Path, summary: Option<&std::ffi::OsStr>) -> bool {
    match summary {
        Some(s) if !s.is_empty() => {
            let s = Path::new(s);
            path == s || crate::output_file::same_file(path, s)
        }
        _ => false,
    }
}

/// Writes the `--report` Markdown to `path`: appended (see `appends`) or replacing the file,
/// never over one of `inputs`.
pub fn write_report(a: &CheckArgs, path: &Path, md: &str, inputs: &[&Path]) -> Result<()> {
    if appends(a, path) {
        crate::output_file::append(path, md.as_bytes(), inputs)
    } else {
        crate::output_file::write_atomically(path, md.as_bytes(), inputs)
    }
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
        write_report(a, path, &md, &inputs(a))?;
    }
    Ok(ExitCode::from(j.verdict.outcome().exit_code()))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::is_step_summary;
    use std::ffi::OsStr;
    use std::path::Path;

    #[test]
    fn the_step_summary_is_told_by_its_path_or_identity() {
        let dir = tempfile::tempdir().unwrap();
        let summary = dir.path().join("step_summary");
        std::fs::write(&summary, "x").unwrap();
        let link = dir.path().join("link");
        #[cfg(unix)]
        std::os::unix::fs::symlink(&summary, &link).unwrap();
        let s = Some(summary.as_os_str());
        assert!(is_step_summary(&summary, s));
        #[cfg(unix)]
        assert!(is_step_summary(&link, s));
        assert!(!is_step_summary(&dir.path().join("report.md"), s));
        assert!(!is_step_summary(&summary, None));
        assert!(!is_step_summary(&summary, Some(OsStr::new(""))));
        // Not there yet: the same path still counts.
        let later = dir.path().join("later");
        assert!(is_step_summary(&later, Some(later.as_os_str())));
        assert!(!is_step_summary(
            Path::new("other"),
            Some(later.as_os_str())
        ));
    }
}
