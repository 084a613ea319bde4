//! PyTorch CUDA memory snapshots (`torch.cuda.memory._dump_snapshot()`): pickle (protocols
//! 2–5, read by a data-only unpickler) or JSON, plain or gzip. One [`Trace`] per device
//! ("cuda:N"), replayed as MemoryViz does, plus "host:pinned" when the file records pinned
//! host memory; snapshots carry no categories, so every trace says `BandsSource::Inferred`
//! (`crate::load` infers them). A snapshot without history
//! (or the bare segment list of `torch.cuda.memory_snapshot()`) is one instant per device.

pub mod from_json;
pub mod from_pickle;
mod json_fast;
pub mod raw;
pub mod timeline;
pub mod to_allocator;

use super::detect::Format;
use super::error::FormatError;
use super::source::{Input, Progress};
use super::LoadOptions;
use crate::trace::{BandsSource, Trace};
use raw::Raw;

/// Reads every device of a snapshot: its traces and the allocator history of each CUDA device.
pub fn read(
    source: &str,
    input: Input,
    format: Format,
    opts: &LoadOptions,
    progress: &Progress,
) -> Result<(Vec<crate::allocator::History>, Vec<Trace>), FormatError> {
    let raw = decode(input, format, opts.cpp_frames, progress)?;
    if progress.is_cancelled() {
        return Err(FormatError::Cancelled);
    }
    let traces = build(&raw, source);
    Ok((histories(&raw, &traces), traces))
}

/// The allocator history of each CUDA device among `traces` ("cuda:N"), in trace order.
pub fn histories(raw: &Raw, traces: &[Trace]) -> Vec<crate::allocator::History> {
    traces
        .iter()
        .filter_map(|t| t.device.strip_prefix("cuda:")?.parse::<usize>().ok())
        .map(|d| to_allocator::history(raw, d))
        .collect()
}

/// Decodes the file into [`Raw`] (no replay yet).
pub fn decode(
    input: Input,
    format: Format,
    cpp_frames: bool,
    progress: &Progress,
) -> Result<Raw, FormatError> {
    let gzip = input.gzip;
    let mut r = input.into_reader();
    let raw = match format {
        Format::SnapshotJson => from_json::read_with(r, cpp_frames, progress),
        _ => {
            let raw = from_pickle::read(&mut r, cpp_frames)?;
            if gzip {
                check_gzip_end(&mut r)?;
            }
            Ok(raw)
        }
    }?;
    check_sizes(&raw)?;
    Ok(raw)
}

/// The unpickler stops at STOP, before the gzip trailer: read on to the end of the stream
/// (at most 64 KiB more) so a bad CRC or a cut trailer is an error, not silently accepted.
/// Data beyond that is not looked at (pickle ignores what follows STOP).
fn check_gzip_end<R: std::io::Read>(r: &mut R) -> Result<(), FormatError> {
    let mut rest = std::io::Read::take(r, 64 * 1024);
    std::io::copy(&mut rest, &mut std::io::sink())
        .map(|_| ())
        .map_err(|e| {
            FormatError::Invalid(format!(
                "the gzip stream is damaged after the pickle (bad CRC or a cut end): {e}"
            ))
        })
}

/// Refuses sizes that are negative in the file (both readers keep them as 64-bit two's
/// complement, so they show as 2^63 B or more): a negative size would wrap the totals.
fn check_sizes(raw: &Raw) -> Result<(), FormatError> {
    let neg = |x: u64| x > i64::MAX as u64;
    let bad = |what: String, x: u64| {
        FormatError::Invalid(format!(
            "{what} is negative ({}) or beyond 2^63 B: a size cannot be",
            x as i64
        ))
    };
    let traces = raw
        .devices
        .iter()
        .enumerate()
        .map(|(d, v)| (format!("device_traces[{d}]"), v));
    // Rows are scanned only when one has such a size (to name it): most files have none.
    let rows_to_check = traces
        .chain(std::iter::once(("host_traces".to_string(), &raw.host_rows)))
        .filter(|_| raw.any_negative_size);
    for (name, rows) in rows_to_check {
        for (i, &r) in rows.iter().enumerate() {
            if let Some(row) = raw.rows.get(r as usize).filter(|row| neg(row.size)) {
                return Err(bad(format!("{name}[{i}].size"), row.size));
            }
        }
    }
    for (key, segs) in [
        ("segments", &raw.segments),
        ("host_segments", &raw.host_segments),
    ] {
        for (si, s) in segs.iter().enumerate() {
            if neg(s.total_size) {
                return Err(bad(format!("{key}[{si}].total_size"), s.total_size));
            }
            for (bi, b) in s.blocks.iter().enumerate() {
                if neg(b.size) || neg(b.requested) {
                    let x = if neg(b.size) { b.size } else { b.requested };
                    return Err(bad(format!("{key}[{si}].blocks[{bi}].size"), x));
                }
            }
        }
    }
    Ok(())
}

/// Replays every device of a decoded snapshot (categories are left for inference).
pub fn build(raw: &Raw, source: &str) -> Vec<Trace> {
    let max_seg_dev = raw
        .segments
        .iter()
        .map(|s| s.device as usize + 1)
        .max()
        .unwrap_or(0);
    let n = raw.devices.len().max(max_seg_dev.min(1 << 16));
    let mut out = Vec::new();
    for d in 0..n {
        let has_rows = raw.devices.get(d).is_some_and(|v| !v.is_empty());
        let has_segs = raw.segments.iter().any(|s| s.device == d as u64);
        if !has_rows && !has_segs {
            continue;
        }
        let mut t = timeline::build(raw, d, source);
        if raw.skipped_items > 0 {
            t.warn(format!(
                "{} items of device_traces were not trace-entry dicts (ignored)",
                raw.skipped_items
            ));
        }
        t.bands_source = BandsSource::Inferred;
        out.push(t);
    }
    if raw.has_host && (!raw.host_rows.is_empty() || !raw.host_segments.is_empty()) {
        let mut t = timeline::build_host(raw, source);
        t.bands_source = BandsSource::Inferred;
        out.push(t);
    }
    if out.is_empty() {
        // An idle snapshot still names its device so `summary` can say "no events".
        out.push(Trace::new("cuda:0", source, "snapshot"));
    }
    out
}
