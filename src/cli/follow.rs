//! `memtide check -f FILE --max-peak X`: follows a growing trace beside a training job and
//! exits 1 the moment the peak crosses X (0 once the file stays idle for `--idle-exit`).

use super::load::pick_device;
use super::CheckArgs;
use crate::follow::{TailEvent, Tailer, Watcher};
use anyhow::{Context, Result};
use memtide_core::formats::jsonl::JsonlDecoder;
use memtide_core::formats::Progress;
use memtide_core::open::{Device, Follow};
use memtide_core::trace::{human_bytes, Bytes, Seq};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// A followed device, and for JSONL the decoder to continue with.
struct Followed {
    device: Device,
    decoder: Option<JsonlDecoder>,
    offset: u64,
}

fn open(a: &CheckArgs) -> Result<Followed> {
    let opts = super::load::open_options(&a.input, None)?;
    let mut opened = memtide_core::open::open_followed(&a.file, &opts, &Progress::new())
        .map_err(super::load::open_error)?;
    super::load::say_notes(&opened);
    let i = pick_device(&opened, a.input.device.as_deref())?;
    let Follow { decoder, offset } = opened.take_follow();
    let device = opened
        .take(i)
        .with_context(|| format!("{}: no trace", a.file.display()))?;
    Ok(Followed {
        device,
        decoder,
        offset,
    })
}

/// The peak of the events from `from` on (the initial state too when `from` is 0), if it is
/// over `limit`.
fn over(f: &Followed, from: usize, limit: Bytes) -> Option<memtide_core::analysis::Peak> {
    if f.device.index.len() <= from {
        return None;
    }
    let p = memtide_core::analysis::window_peak(
        &f.device.trace,
        &f.device.index,
        Seq(from as u64),
        Seq(f.device.index.len() as u64 - 1),
    )?;
    (p.bytes > limit).then_some(p)
}

fn fail(f: &Followed, p: &memtide_core::analysis::Peak, limit: Bytes) -> ExitCode {
    // The core's evidence; a followed file numbers its events as it grows, so the file's own
    // numbering is not given beside them.
    let (trace, index) = (&f.device.trace, &f.device.index);
    let ev = memtide_core::gate::peak_evidence(trace, p);
    let at = match ev.event {
        None => "at start (before the first event)".to_string(),
        Some(e) => format!("at event #{e}"),
    };
    let live = memtide_core::gate::biggest_live(trace, index, p, 3);
    crate::outln!(
        "FAIL: peak {} ({} B) {at} exceeds --max-peak {}; biggest live: {}",
        human_bytes(ev.bytes),
        ev.bytes,
        human_bytes(limit.0),
        super::gate_text::biggest_live_text(live.as_deref())
    );
    ExitCode::from(1)
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
    let mut f = open(a)?;
    memtide_core::gate::refuse_doubtful(&f.device.trace, a.allow_warnings)
        .map_err(|e| super::check::gate_error(&a.file, e))?;
    if let Some(p) = over(&f, 0, limit) {
        return Ok(fail(&f, &p, limit));
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
                    if let Some(p) = over(&f, 0, limit) {
                        return Ok(fail(&f, &p, limit));
                    }
                }
                Some(TailEvent::Appended(bytes)) => {
                    let from = f.device.index.len();
                    if let Some(dec) = f.decoder.as_mut() {
                        let (_, r) = f.device.append(dec, Some(&bytes));
                        r.with_context(|| format!("in {}", a.file.display()))?;
                    }
                    last_growth = Instant::now();
                    flushed = false;
                    if let Some(p) = over(&f, from, limit) {
                        return Ok(fail(&f, &p, limit));
                    }
                }
            }
        }
        // After a quiet moment, apply the last equal-t group too.
        if !flushed && last_growth.elapsed() >= Duration::from_millis(200) {
            let from = f.device.index.len();
            if let Some(dec) = f.decoder.as_mut() {
                let (_, r) = f.device.append(dec, None);
                r?;
            }
            flushed = true;
            if let Some(p) = over(&f, from, limit) {
                return Ok(fail(&f, &p, limit));
            }
        }
        if let Some(idle) = idle {
            if last_growth.elapsed() >= idle {
                memtide_core::gate::refuse_doubtful(&f.device.trace, a.allow_warnings)
                    .map_err(|e| super::check::gate_error(&a.file, e))?;
                let peak = memtide_core::analysis::global_peak(&f.device.trace, &f.device.index)
                    .filter(|p| p.bytes.0 > 0);
                let Some((b, idx)) = peak.map(|p| (p.bytes.0, f.device.trace.event_number(p.at)))
                else {
                    anyhow::bail!(
                        "{}: nothing was checked: idle for {:.1} s and no event of the {} read holds any memory",
                        a.file.display(),
                        idle.as_secs_f64(),
                        f.device.index.len()
                    );
                };
                crate::outln!(
                    "ok: peak {} ({} B) at event #{idx} stayed within --max-peak {}; idle for {:.1} s",
                    human_bytes(b),
                    b,
                    human_bytes(limit.0),
                    idle.as_secs_f64()
                );
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
}
