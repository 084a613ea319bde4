//! `memtide replay SRC OUT.jsonl --rate N`: writes a trace as JSONL progressively, so anyone
//! can demo and test the live view without a GPU.

use super::load::{open, pick_device};
use super::ReplayArgs;
use anyhow::{Context, Result};
use memtide_core::formats::{detect, Format, JsonlWriter};
use std::io::{BufRead, BufReader, Read, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Paces output at `rate` events per second (0: unpaced).
struct Pacer {
    rate: u64,
    start: Instant,
    sent: u64,
}

impl Pacer {
    fn new(rate: u64) -> Self {
        Pacer {
            rate,
            start: Instant::now(),
            sent: 0,
        }
    }
    /// How many more events may go out now; sleeps a tick when none may.
    fn allowance(&mut self) -> u64 {
        if self.rate == 0 {
            return u64::MAX;
        }
        loop {
            let due = (self.start.elapsed().as_secs_f64() * self.rate as f64) as u64 + 1;
            if due > self.sent {
                return due - self.sent;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

pub fn run(a: &ReplayArgs) -> Result<ExitCode> {
    // Replay writes OUT progressively (a follower reads it as it grows), so it cannot go
    // through a temporary file: OUT is checked against every input (the trace and the side
    // files, by identity) before it is opened, and nothing is truncated before that.
    let mut inputs = vec![a.src.as_path()];
    inputs.extend(super::load::side_files(&a.input));
    crate::output_file::refuse_inputs(&a.out, &inputs)?;
    let mut head = [0u8; 4096];
    let n = {
        let mut f = memtide_core::formats::open_regular(&a.src)
            .with_context(|| format!("cannot read {}", a.src.display()))?;
        f.read(&mut head)?
    };
    let shown = crate::output_file::shown(&a.out);
    let mut pacer = Pacer::new(a.rate);
    if detect(&head[..n]) == Some(Format::Jsonl) {
        let mut out = std::io::BufWriter::new(crate::output_file::open_stream(&a.out, &inputs)?);
        // Native input: the lines themselves, verbatim, so the replay is exact.
        let f = memtide_core::formats::open_regular(&a.src)?;
        let mut lines = BufReader::new(f).lines();
        let mut header_done = false;
        'outer: loop {
            let allow = pacer.allowance();
            let mut k = 0;
            while k < allow {
                let Some(line) = lines.next() else {
                    break 'outer;
                };
                let line = line?;
                writeln!(out, "{line}")?;
                let t = line.trim_start();
                if t.is_empty() || t.starts_with('#') {
                    continue;
                }
                if !header_done {
                    header_done = true;
                    continue;
                }
                k += 1;
                pacer.sent += 1;
            }
            out.flush()?;
        }
        out.flush()?;
        crate::errln!("replayed {} events to {shown}", pacer.sent);
        return Ok(ExitCode::SUCCESS);
    }
    let opened = open(&a.src, &a.input, None)?;
    let i = pick_device(&opened, a.input.device.as_deref())?;
    let Some(trace) = opened.devices.get(i).map(|d| &d.trace) else {
        anyhow::bail!("no trace to replay");
    };
    if !trace.identities_known() {
        anyhow::bail!(
            "{}: cannot replay {}: {}, and JSONL needs one line per allocation",
            a.src.display(),
            trace.device,
            memtide_core::trace::NO_IDENTITIES
        );
    }
    // Opened once the trace is read: a file that cannot be read leaves OUT as it was.
    let mut out = std::io::BufWriter::new(crate::output_file::open_stream(&a.out, &inputs)?);
    let mut w = JsonlWriter::new(trace);
    w.header(&mut out)?;
    out.flush()?;
    'events: loop {
        let allow = pacer.allowance();
        for _ in 0..allow.min(100_000) {
            if !w.next_event(&mut out)? {
                break 'events;
            }
            pacer.sent += 1;
        }
        out.flush()?;
    }
    out.flush()?;
    crate::errln!(
        "replayed {} events of {} ({}) to {shown}",
        pacer.sent,
        a.src.display(),
        trace.device
    );
    Ok(ExitCode::SUCCESS)
}
