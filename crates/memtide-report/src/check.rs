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
        // The gate's evidence replayed the fix lists already (`Device::ooms`).
        let opts = memtide_core::analysis::SummaryOptions {
            boundary: false,
            fixes: memtide_core::analysis::FixReplay::Always,
            ..Default::default()
        };
        let gated = self.gated_devices();
        let mut md = report_head(&self.lines);
        for t in devices.iter().filter(|d| gated.contains(&d.name())) {
            let resolved = match window {
                Some(w) => Some(
                    memtide_core::analysis::WindowSpec::parse(w)?.resolve(&t.trace, &t.index)?,
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

/// A job's verdict with the lines `check DIR` prints for it.
pub struct JudgedJob {
    pub verdict: memtide_core::gate::JobVerdict,
    pub lines: Vec<String>,
}

impl JudgedJob {
    /// The `--report` Markdown: the verdict's lines, then the job's table titled `title`.
    pub fn report(&self, r: &memtide_core::ranks::Ranks, title: &str) -> String {
        let mut md = report_head(&self.lines);
        md.push('\n');
        md.push_str(&crate::ranks::render_markdown(r, title));
        md
    }
}

/// The core's gate on a job's ranks, with its lines.
pub fn judge_job(
    r: &memtide_core::ranks::Ranks,
    limits: &memtide_core::gate::JobLimits,
) -> Result<JudgedJob> {
    let verdict = gate::check_job(r, limits)?;
    let lines = crate::gate_text::job_lines(&verdict);
    Ok(JudgedJob { verdict, lines })
}

/// The gate of a file still being written (`check -f`): whether a device's peak crossed the
/// limit, and the lines said when it did or when the file went quiet.
pub mod followed {
    use memtide_core::analysis::Peak;
    use memtide_core::open::Device;
    use memtide_core::trace::{human_bytes, Bytes, Seq};

    /// The peak of device `d`'s events from `from` on (the initial state too when `from` is
    /// 0), if it is over `limit`.
    pub fn over(d: &Device, from: usize, limit: Bytes) -> Option<Peak> {
        if d.index.len() <= from {
            return None;
        }
        let p = memtide_core::analysis::window_peak(
            &d.trace,
            &d.index,
            Seq(from as u64),
            Seq(d.index.len() as u64 - 1),
        )?;
        (p.bytes > limit).then_some(p)
    }

    /// The first of `devices` whose whole peak is over `limit`, with that peak.
    pub fn any_over(devices: &[Device], limit: Bytes) -> Option<(&Device, Peak)> {
        devices
            .iter()
            .find_map(|d| over(d, 0, limit).map(|p| (d, p)))
    }

    /// The `FAIL:` line of device `d` over `limit` at `p` (`named`: the device's name after
    /// the word, for a file of several). A followed file numbers its events as it grows, so
    /// the file's own numbering is not given beside them.
    pub fn fail_line(d: &Device, p: &Peak, limit: Bytes, named: bool) -> String {
        let (trace, index) = (&d.trace, &d.index);
        let ev = memtide_core::gate::peak_evidence(trace, p);
        let at = match ev.event {
            None => "at start (before the first event)".to_string(),
            Some(e) => format!("at event #{e}"),
        };
        let live = memtide_core::gate::biggest_live(trace, index, p, 3, &d.frames);
        format!(
            "FAIL: {}peak {} ({} B) {at} exceeds --max-peak {}; biggest live: {}",
            name(d, named),
            human_bytes(ev.bytes),
            ev.bytes,
            human_bytes(limit.0),
            crate::gate_text::biggest_live_text(live.as_deref())
        )
    }

    /// The `ok:` lines of a file gone quiet for `idle_secs`: each device's peak within
    /// `limit`; None when no event of any device holds memory (nothing was checked).
    pub fn quiet_lines(
        devices: &[Device],
        limit: Bytes,
        idle_secs: f64,
        named: bool,
    ) -> Option<Vec<String>> {
        let lines: Vec<String> = devices
            .iter()
            .filter_map(|d| {
                let p = memtide_core::analysis::global_peak(&d.trace, &d.index)
                    .filter(|p| p.bytes.0 > 0)?;
                let (b, idx) = (p.bytes.0, d.trace.event_number(p.at));
                Some(format!(
                    "ok: {}peak {} ({} B) at event #{idx} stayed within --max-peak {}; idle for {:.1} s",
                    name(d, named),
                    human_bytes(b),
                    b,
                    human_bytes(limit.0),
                    idle_secs
                ))
            })
            .collect();
        (!lines.is_empty()).then_some(lines)
    }

    fn name(d: &Device, named: bool) -> String {
        if named {
            format!("{}: ", d.name())
        } else {
            String::new()
        }
    }
}
