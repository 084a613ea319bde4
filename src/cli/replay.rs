//! `memtide replay SRC OUT.jsonl --rate N`: writes a trace as JSONL progressively, so anyone
//! can demo and test the live view without a GPU.

use super::load::{load, pick_device};
use super::ReplayArgs;
use anyhow::{Context, Result};
use memtide_core::formats::jsonl_write::JsonlWriter;
use memtide_core::formats::{detect, Format};
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

/// Replay writes OUT progressively (a follower reads it as it grows), so it cannot go through
/// a temporary file; instead it never opens its own input for writing (the same file by
/// another name, a hard link or a symlink included).
fn refuse_own_input(src: &std::path::Path, out: &std::path::Path) -> Result<()> {
    let (Ok(_), Ok(b)) = (std::fs::metadata(src), std::fs::metadata(out)) else {
        return Ok(()); // OUT does not exist yet (or SRC is unreadable: reported when read)
    };
    if crate::output_file::same_file(src, out) {
        anyhow::bail!(
            "{} is the input {}: replay would overwrite what it reads; write to another file",
            out.display(),
            src.display()
        );
    }
    if !b.is_file() {
        anyhow::bail!("{} exists and is not a regular file", out.display());
    }
    Ok(())
}

pub fn run(a: &ReplayArgs) -> Result<ExitCode> {
    let mut head = [0u8; 4096];
    let n = {
        let mut f = memtide_core::formats::source::open_regular(&a.src)
            .with_context(|| format!("cannot read {}", a.src.display()))?;
        f.read(&mut head)?
    };
    refuse_own_input(&a.src, &a.out)?;
    let out = std::fs::File::create(&a.out)
        .with_context(|| format!("cannot create {}", a.out.display()))?;
    let mut out = std::io::BufWriter::new(out);
    let mut pacer = Pacer::new(a.rate);
    if detect(&head[..n]) == Some(Format::Jsonl) {
        // Native input: the lines themselves, verbatim, so the replay is exact.
        let f = memtide_core::formats::source::open_regular(&a.src)?;
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
        crate::errln!("replayed {} events to {}", pacer.sent, a.out.display());
        return Ok(ExitCode::SUCCESS);
    }
    let loaded = load(&a.src, &a.input)?;
    let i = pick_device(&loaded, a.input.device.as_deref())?;
    let Some(trace) = loaded.traces.get(i) else {
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
        "replayed {} events of {} ({}) to {}",
        pacer.sent,
        a.src.display(),
        trace.device,
        a.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
