//! `memtide check -f FILE --max-peak X`: follows a growing trace beside a training job and
//! exits 1 the moment the peak crosses X (0 once the file stays idle for `--idle-exit`).

use super::load::pick_device;
use super::CheckArgs;
use crate::follow::{TailEvent, Tailer, Watcher};
use anyhow::{Context, Result};
use memtide_core::formats::{JsonlDecoder, Progress};
use memtide_core::open::{Device, Follow};
use memtide_core::trace::Bytes;
use memtide_report::check::followed;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// The followed file's devices (every one, or the one `--device` names), and for JSONL the
/// decoder to continue with and the device it appends to.
struct Followed {
    devices: Vec<Device>,
    /// The device a JSONL file's new lines go to (its one device).
    growing: usize,
    decoder: Option<JsonlDecoder>,
    offset: u64,
}

impl Followed {
    /// Whether the verdict names its device (the file has several with events).
    fn names_devices(&self) -> bool {
        self.devices.iter().filter(|d| !d.is_empty()).count() > 1
    }
}

fn open(a: &CheckArgs) -> Result<Followed> {
    let opts = super::load::open_options(&a.input, None)?;
    let mut opened = memtide_core::open::open_followed(&a.file, &opts, &Progress::new())
        .map_err(super::load::open_error)?;
    super::load::say_notes(&opened);
    let i = pick_device(&opened, a.input.device.as_deref())?;
    let Follow { decoder, offset } = opened.take_follow();
    // Every device is gated, as `check` gates a file; `--device` narrows it to one.
    let (devices, growing) = if a.input.device.is_some() {
        let d = opened
            .take(i)
            .with_context(|| format!("{}: no trace", a.file.display()))?;
        (vec![d], 0)
    } else {
        (opened.devices, i)
    };
    Ok(Followed {
        devices,
        growing,
        decoder,
        offset,
    })
}

fn fail(f: &Followed, d: &Device, p: &memtide_core::analysis::Peak, limit: Bytes) -> ExitCode {
    crate::outln!("{}", followed::fail_line(d, p, limit, f.names_devices()));
    ExitCode::from(1)
}

/// Refuses figures a reader doubted, on any device (unless `--allow-warnings`).
fn refuse_doubtful(a: &CheckArgs, f: &Followed) -> Result<()> {
    for d in &f.devices {
        memtide_core::gate::refuse_doubtful(&d.trace, a.allow_warnings)
            .map_err(|e| super::check::gate_error(&a.file, e))?;
    }
    Ok(())
}

/// The growing device's new events since `from`, over `limit`: the failure's exit code.
fn grown_over(f: &Followed, from: usize, limit: Bytes) -> Option<ExitCode> {
    let d = f.devices.get(f.growing)?;
    followed::over(d, from, limit).map(|p| fail(f, d, &p, limit))
}

/// Applies `bytes` (None: the last equal-t group) to the growing device; returns the event
/// count before them.
fn append(f: &mut Followed, bytes: Option<&[u8]>) -> Result<usize> {
    let Some(d) = f.devices.get_mut(f.growing) else {
        return Ok(0);
    };
    let from = d.index.len();
    if let Some(dec) = f.decoder.as_mut() {
        let (_, r) = d.append(dec, bytes);
        r?;
    }
    Ok(from)
}

/// A file not there yet (the job has not created it) is waited for, saying so on standard
/// error, as `tail -F` does; with `--idle-exit`, for that long at most (then exit 2: nothing
/// was checked).
fn wait_for_file(a: &CheckArgs) -> Result<()> {
    if crate::follow::appeared(&a.file) {
        return Ok(());
    }
    crate::errln!(
        "memtide: waiting for {} to appear (Ctrl-C to stop)",
        a.file.display()
    );
    let limit = a.idle_exit.map(Duration::from_secs_f64);
    match crate::follow::wait_for(&a.file, limit, &|| false) {
        crate::follow::Waited::Appeared => Ok(()),
        _ => anyhow::bail!(
            "{}: nothing was checked: the file did not appear within {:.1} s (--idle-exit)",
            a.file.display(),
            limit.map_or(0.0, |l| l.as_secs_f64())
        ),
    }
}

pub fn run_check(a: &CheckArgs) -> Result<ExitCode> {
    let Some(max_peak) = a.max_peak.as_deref() else {
        anyhow::bail!("check --follow needs --max-peak");
    };
    if a.json {
        anyhow::bail!("check --follow prints its verdict as text only (the trace is still growing); run check without -f for --json");
    }
    if a.report.is_some() {
        anyhow::bail!("check --follow cannot write --report (the trace is still growing); run check without -f for a report");
    }
    let limit = super::flags::size("--max-peak", max_peak)?;
    wait_for_file(a)?;
    let mut f = open(a)?;
    refuse_doubtful(a, &f)?;
    if let Some((d, p)) = followed::any_over(&f.devices, limit) {
        return Ok(fail(&f, d, &p, limit));
    }
    let watcher = Watcher::new(&a.file, a.follow.mode());
    let mut tail = Tailer::new(&a.file, f.offset, f.decoder.is_some());
    let idle = a.idle_exit.map(Duration::from_secs_f64);
    let mut last_growth = Instant::now();
    let mut flushed = true;
    loop {
        // Wake on a change signal, or every 200 ms as a safety net.
        let _ = watcher.signals().recv_timeout(Duration::from_millis(200));
        loop {
            match tail.poll()? {
                None => break,
                Some(TailEvent::Missing) => break,
                Some(TailEvent::Reload(why)) => {
                    crate::errln!("memtide: {why}; reloading {}", a.file.display());
                    f = open(a)?;
                    tail.reset(f.offset);
                    last_growth = Instant::now();
                    if let Some((d, p)) = followed::any_over(&f.devices, limit) {
                        return Ok(fail(&f, d, &p, limit));
                    }
                }
                Some(TailEvent::Appended(bytes)) => {
                    let from = append(&mut f, Some(&bytes))
                        .with_context(|| format!("in {}", a.file.display()))?;
                    last_growth = Instant::now();
                    flushed = false;
                    if let Some(code) = grown_over(&f, from, limit) {
                        return Ok(code);
                    }
                }
            }
        }
        // After a quiet moment, apply the last equal-t group too.
        if !flushed && last_growth.elapsed() >= Duration::from_millis(200) {
            let from = append(&mut f, None)?;
            flushed = true;
            if let Some(code) = grown_over(&f, from, limit) {
                return Ok(code);
            }
        }
        if let Some(idle) = idle {
            if last_growth.elapsed() >= idle {
                refuse_doubtful(a, &f)?;
                let idle_secs = idle.as_secs_f64();
                let Some(lines) =
                    followed::quiet_lines(&f.devices, limit, idle_secs, f.names_devices())
                else {
                    let events: usize = f.devices.iter().map(|d| d.index.len()).sum();
                    anyhow::bail!(
                        "{}: nothing was checked: idle for {idle_secs:.1} s and no event of the {events} read holds any memory",
                        a.file.display(),
                    );
                };
                for l in lines {
                    crate::outln!("{l}");
                }
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
}
