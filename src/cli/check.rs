//! `memtide check`: a CI gate — exit 0 under the limit, 1 over it, with a one-line reason;
//! 2 on bad input, and on a trace whose reader warned that its figures may be wrong (unless
//! `--allow-warnings`). Every device of the file with events is gated (`--device` names one).
//! The verdict is [`memtide_core::gate`]'s; this file reads the flags, loads the trace and
//! prints the verdict as text (`gate_text`), JSON (`--json`) or a report.

use super::load::{open, pick_device};
use super::CheckArgs;
use anyhow::Result;
use memtide_core::gate::{self, FileVerdict, GateError, Limits};
use memtide_core::open::Device;
use std::path::Path;
use std::process::ExitCode;

/// A gate error as the CLI says it: about one file, that file's name first.
pub fn gate_error(file: &Path, e: GateError) -> anyhow::Error {
    if e.about_file() {
        anyhow::anyhow!("{}: {e}", file.display())
    } else {
        anyhow::Error::new(e)
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

/// The `check --json` document (docs/ci-gates.md): the file, the exit code and the verdict.
#[derive(serde::Serialize)]
pub struct CheckJson<'a, V: serde::Serialize> {
    /// `device` (one trace) or `job` (a directory or several files).
    pub kind: &'static str,
    pub file: String,
    pub exit_code: u8,
    #[serde(flatten)]
    pub verdict: &'a V,
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
    let limits = Limits {
        max_peak: a
            .max_peak
            .as_deref()
            .map(|s| super::flags::size("--max-peak", s))
            .transpose()?,
        max_growth: a
            .max_growth
            .as_deref()
            .map(|s| super::flags::percent("--max-growth", s))
            .transpose()?,
        window: a.window.clone(),
        allow_warnings: a.allow_warnings,
    };
    refuse_json_and_stdout_report(a)?;
    if let Some(path) = &a.report {
        // Before the (long) load: the report is never one of the inputs.
        crate::output_file::refuse_inputs(path, &inputs(a))?;
    }
    let opened = open(&a.file, &a.input, a.capacity.as_deref())?;
    let devices = match a.input.device.as_deref() {
        Some(_) => {
            let i = pick_device(&opened, a.input.device.as_deref())?;
            opened.devices.get(i..=i).unwrap_or_default()
        }
        None => opened.devices.as_slice(),
    };
    let j = judge(devices, &a.file, &limits)?;
    let code = j.verdict.outcome().exit_code();
    print_doc(a, &j, &j.lines)?;
    if let Some(path) = &a.report {
        let gated = j.gated_devices();
        let shown: Vec<&Device> = devices
            .iter()
            .filter(|d| gated.contains(&d.name()))
            .collect();
        write_report(a, &shown, &j.lines, path)?;
    }
    Ok(ExitCode::from(code))
}

/// A file's verdict with the lines `check` prints for it.
pub struct Judged {
    pub verdict: FileVerdict,
    pub lines: Vec<String>,
    /// The file as given.
    pub file: String,
}

impl Judged {
    /// The `check --json` document's `kind`: `device` (one device gated) or `devices`.
    pub fn kind(&self) -> &'static str {
        match self.verdict {
            FileVerdict::One(_) => "device",
            FileVerdict::Several(_) => "devices",
        }
    }

    /// The devices gated, by name.
    pub fn gated_devices(&self) -> Vec<&str> {
        match &self.verdict {
            FileVerdict::One(v) => vec![v.device.as_str()],
            FileVerdict::Several(v) => v.devices.iter().map(|d| d.device.as_str()).collect(),
        }
    }
}

impl serde::Serialize for Judged {
    /// The `check --json` document.
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let (kind, file) = (self.kind(), self.file.clone());
        let exit_code = self.verdict.outcome().exit_code();
        match &self.verdict {
            FileVerdict::One(v) => CheckJson {
                kind,
                file,
                exit_code,
                verdict: v.as_ref(),
            }
            .serialize(s),
            FileVerdict::Several(v) => CheckJson {
                kind,
                file,
                exit_code,
                verdict: v,
            }
            .serialize(s),
        }
    }
}

/// The core's gate on every device of `devices` that has events (the caller narrows them to
/// one for `--device`), with its lines; what `check` exits 2 on is an error.
pub fn judge(devices: &[Device], file: &Path, limits: &Limits) -> Result<Judged> {
    let verdict = gate::check_file(devices, limits).map_err(|e| gate_error(file, e))?;
    let lines = match &verdict {
        FileVerdict::One(v) => super::gate_text::device_lines(v),
        FileVerdict::Several(v) => super::gate_text::devices_lines(v),
    };
    Ok(Judged {
        verdict,
        lines,
        file: file.display().to_string(),
    })
}

/// The `--report` file: the verdict, then the Markdown summary of each gated device.
fn write_report(a: &CheckArgs, devices: &[&Device], lines: &[String], path: &Path) -> Result<()> {
    let opts = memtide_core::analysis::summary::SummaryOptions {
        boundary: false,
        ..Default::default()
    };
    let mut md = String::from("## memtide check\n\n");
    for l in lines {
        md.push_str(&format!("- {}\n", super::markdown::cell(l)));
    }
    for t in devices {
        let resolved = match a.window.as_deref() {
            Some(w) => Some(
                memtide_core::analysis::window_spec::WindowSpec::parse(w)?
                    .resolve(&t.trace, &t.index)?,
            ),
            None => None,
        };
        md.push('\n');
        md.push_str(&super::markdown::render(
            &t.summary(&opts, resolved.as_ref()),
        ));
    }
    crate::output_file::write_atomically(path, md.as_bytes(), &inputs(a))
}
