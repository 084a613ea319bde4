//! The gate's answer (`memtide check`): the limits as written, every device of the file
//! judged by the core's gate ([`memtide_core::gate`]), the verdict with its `ok:` / `FAIL:`
//! lines ([`crate::gate_text`]), the `check --json` document and the `--report` Markdown.

use anyhow::Result;
use memtide_core::gate::{self, FileVerdict, GateError, Limits};
use memtide_core::open::{Device, Opened};
use std::path::Path;

/// The gate's limits from their texts (`"70GiB"`, `"5%"`), parsed as the command line parses
/// its flags.
pub fn limits(
    max_peak: Option<&str>,
    max_growth: Option<&str>,
    window: Option<String>,
    allow_warnings: bool,
) -> Result<Limits> {
    Ok(Limits {
        max_peak: max_peak
            .map(|s| crate::sizes::size("--max-peak", s))
            .transpose()?,
        max_growth: max_growth
            .map(|s| crate::sizes::percent("--max-growth", s))
            .transpose()?,
        window,
        allow_warnings,
    })
}

/// The devices a file's gate judges: the one `device` names (a note to `say` for a ROCm
/// alias), else every device.
pub fn gated<'a>(
    opened: &'a Opened,
    device: Option<&str>,
    say: crate::prologue::Say,
) -> Result<&'a [Device]> {
    Ok(match device {
        Some(_) => {
            let i = crate::prologue::pick_device(opened, device, say)?;
            opened.devices.get(i..=i).unwrap_or_default()
        }
        None => opened.devices.as_slice(),
    })
}

/// A gate error as the front ends say it: about one file, that file's name first.
pub fn gate_error(file: &Path, e: GateError) -> anyhow::Error {
    if e.about_file() {
        anyhow::anyhow!("{}: {e}", file.display())
    } else {
        anyhow::Error::new(e)
    }
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

    /// The `--report` Markdown: the verdict's lines, then the summary of each gated device of
    /// `devices` (its peak in `window` when given).
    pub fn report(&self, devices: &[Device], window: Option<&str>) -> Result<String> {
        let opts = memtide_core::analysis::summary::SummaryOptions {
            boundary: false,
            ..Default::default()
        };
        let gated = self.gated_devices();
        let mut md = report_head(&self.lines);
        for t in devices.iter().filter(|d| gated.contains(&d.name())) {
            let resolved = match window {
                Some(w) => Some(
                    memtide_core::analysis::window_spec::WindowSpec::parse(w)?
                        .resolve(&t.trace, &t.index)?,
                ),
                None => None,
            };
            md.push('\n');
            md.push_str(&crate::markdown::render(
                &t.summary(&opts, resolved.as_ref()),
            ));
        }
        Ok(md)
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
        FileVerdict::One(v) => crate::gate_text::device_lines(v),
        FileVerdict::Several(v) => crate::gate_text::devices_lines(v),
    };
    Ok(Judged {
        verdict,
        lines,
        file: file.display().to_string(),
    })
}

/// A report's head: its title and the verdict's lines as a list.
pub fn report_head(lines: &[String]) -> String {
    let mut md = String::from("## memtide check\n\n");
    for l in lines {
        md.push_str(&format!("- {}\n", crate::markdown::cell(l)));
    }
    md
}
