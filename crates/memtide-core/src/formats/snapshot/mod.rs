//! PyTorch CUDA memory snapshots (`torch.cuda.memory._dump_snapshot()`): pickle (protocols
//! 2–5, read by a data-only unpickler) or JSON, plain or gzip. One [`Trace`] per device
//! ("cuda:N"), replayed as MemoryViz does, plus "host:pinned" when the file records pinned
//! host memory; snapshots usually carry no categories, so a trace says
//! `BandsSource::Inferred` (the door's reading step infers them) unless every allocation's
//! entry carried PyTorch's own `category` (`_profile_to_snapshot`), kept as recorded either
//! way. A snapshot without history
//! (or the bare segment list of `torch.cuda.memory_snapshot()`) is one instant per device.

mod block_sizes;
mod entry_bytes;
pub(crate) mod from_json;
pub(crate) mod from_pickle;
mod json_fast;
mod pickle_build;
pub(crate) mod raw;
pub(crate) mod rows;
pub(crate) mod timeline;
pub(crate) mod to_allocator;

use super::detect::Format;
use super::error::FormatError;
use super::source::{Input, Progress};
use super::{Histories, LoadOptions};
use crate::trace::{AllocId, BandsSource, Category, StorageKind, Trace};
pub use from_json::{read as read_json, read_serde as read_json_serde};
pub use from_pickle::{
    read as read_pickle, read_in_batches as read_pickle_in_batches,
    read_opcode_by_opcode as read_pickle_opcode_by_opcode, read_threads as read_pickle_threads,
};
pub use raw::Raw;

/// What a snapshot file gives: a trace per device and, per CUDA device, its allocator
/// history — already replayed into its model when [`LoadOptions::allocator_models`] asked
/// (then `histories` is empty).
#[derive(Debug)]
pub struct Snapshot {
    pub traces: Vec<Trace>,
    pub histories: Vec<crate::allocator::History>,
    pub models: crate::allocator::Models,
}

/// Reads every device of a snapshot: its traces and the allocator history of each CUDA device.
pub fn read(
    source: &str,
    input: Input,
    format: Format,
    opts: &LoadOptions,
    progress: &Progress,
) -> Result<Snapshot, FormatError> {
    let mut raw = decode(input, format, opts.cpp_frames, opts.threads, progress)?;
    if progress.is_cancelled() {
        return Err(FormatError::Cancelled);
    }
    if raw.segments.is_empty() && raw.rows.is_empty() {
        return Err(FormatError::Empty(NOTHING_RECORDED.into()));
    }
    Ok(replay(&mut raw, source, opts))
}

/// What a snapshot with no segment and no history row on any device says: nothing of it
/// can be shown, and the usual cause.
const NOTHING_RECORDED: &str = "the snapshot holds no segment and no recorded allocation on any device: nothing was on the GPU when it was dumped and nothing was allocated while its history was recorded (did the work run on the GPU, after torch.cuda.memory._record_memory_history()?)";

/// Replays a decoded snapshot: the traces and each CUDA device's allocator history (or
/// model). The rows are freed block by block as the passes go past them, so `raw` is left
/// with the rest of what was decoded; a row list out of row order keeps every row.
#[doc(hidden)]
pub fn replay(raw: &mut Raw, source: &str, opts: &LoadOptions) -> Snapshot {
    // The allocator histories (and models) and the traces read the decoded file
    // independently: on two threads when the trace is long enough for that to pay.
    let devices = cuda_devices(raw);
    let entries = opts.histories == Histories::Whole || raw.any_oom;
    plan_passes(raw, &devices, entries);
    let raw = &*raw;
    let both = opts
        .threads
        .second_for(raw.rows.len() as u64, SECOND_THREAD_FROM_ROWS);
    // The models are replayed on a thread of their own once the caller starts them (when
    // it has inferred, checked and indexed the traces: the replay would share their second
    // core), and waited for when it needs them.
    let allocators = || {
        let mut h = histories_of(raw, &devices, entries);
        if opts.allocator_models {
            (Vec::new(), crate::allocator::Models::held(h, both))
        } else {
            // A headless answer about a file that ran out of memory starts with the
            // allocator's state at each OOM: replayed here, where the second core is free
            // while the traces are built.
            if raw.any_oom {
                h.iter_mut()
                    .for_each(crate::allocator::History::replay_to_ooms);
            }
            (h, crate::allocator::Models::none())
        }
    };
    let ((histories, models), traces) = if both {
        std::thread::scope(|s| {
            let h = s.spawn(allocators);
            let traces = build(raw, source);
            // (Rows it read may be freed by now: its panic goes on here, nothing is redone.)
            let h = h.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
            (h, traces)
        })
    } else {
        (allocators(), build(raw, source))
    };
    Snapshot {
        traces,
        histories,
        models,
    }
}

/// Plans the passes [`replay`] makes over the rows, so that each block of rows is freed once
/// the last of them has gone past it: the allocator history of each of `cuda` (the devices
/// [`histories_of`] reads) when it reads their `entries`, then [`build`]'s timelines.
fn plan_passes(raw: &mut Raw, cuda: &[usize], entries: bool) {
    let traced: Vec<usize> = traced_devices(raw).collect();
    let histories = if entries { cuda } else { &[] };
    let mut lists: Vec<&[u32]> = histories
        .iter()
        .chain(&traced)
        .filter_map(|&d| raw.devices.get(d).map(Vec::as_slice))
        .collect();
    if has_host_trace(raw) {
        lists.push(&raw.host_rows);
    }
    raw.rows.plan(&lists);
}

/// Traces at least this long build their allocator history on a second thread (and replay
/// its model on a thread of its own once started).
const SECOND_THREAD_FROM_ROWS: u64 = 100_000;

/// The allocator history of each CUDA device among `traces` ("cuda:N"), in trace order.
pub fn histories(raw: &Raw, traces: &[Trace]) -> Vec<crate::allocator::History> {
    let devices: Vec<usize> = traces
        .iter()
        .filter_map(|t| t.device.strip_prefix("cuda:")?.parse::<usize>().ok())
        .collect();
    histories_of(raw, &devices, true)
}

/// The allocator history of each of `devices`, with its `entries` or the final segments only.
fn histories_of(raw: &Raw, devices: &[usize], entries: bool) -> Vec<crate::allocator::History> {
    devices
        .iter()
        .map(|&d| match entries {
            true => to_allocator::history(raw, d),
            false => to_allocator::final_only(raw, d),
        })
        .collect()
}

/// The CUDA devices [`build`] makes a trace of, in its order.
fn cuda_devices(raw: &Raw) -> Vec<usize> {
    let mut out: Vec<usize> = traced_devices(raw).collect();
    let host = has_host_trace(raw);
    if out.is_empty() && !host {
        out.push(0);
    }
    out
}

/// Device numbers to look at: those with a trace list, or any segment's device.
fn device_count(raw: &Raw) -> usize {
    let max_seg_dev = raw
        .segments
        .iter()
        .map(|s| s.device as usize + 1)
        .max()
        .unwrap_or(0);
    raw.devices.len().max(max_seg_dev.min(1 << 16))
}

/// The CUDA devices that get a trace, in order.
fn traced_devices(raw: &Raw) -> impl Iterator<Item = usize> + '_ {
    (0..device_count(raw)).filter(|&d| has_device(raw, d))
}

/// Whether CUDA device `d` has entries or segments (else it gets no trace).
fn has_device(raw: &Raw, d: usize) -> bool {
    let has_rows = raw.devices.get(d).is_some_and(|v| !v.is_empty());
    has_rows || raw.segments.iter().any(|s| s.device == d as u64)
}

/// Whether pinned host memory gets a trace of its own.
fn has_host_trace(raw: &Raw) -> bool {
    raw.has_host && (!raw.host_rows.is_empty() || !raw.host_segments.is_empty())
}

/// Decodes the file into [`Raw`] (no replay yet).
pub fn decode(
    input: Input,
    format: Format,
    cpp_frames: bool,
    threads: super::Threads,
    progress: &Progress,
) -> Result<Raw, FormatError> {
    let gzip = input.gzip;
    let mut r = input.into_reader();
    let raw = match format {
        Format::SnapshotJson => from_json::read_with(r, cpp_frames, progress),
        _ => {
            let raw = from_pickle::read_threads(&mut r, cpp_frames, threads)?;
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
/// (streamed, nothing kept) so that a bad CRC, a cut trailer or trailing garbage is an error
/// naming its offset in the file, not silently accepted.
fn check_gzip_end<R: std::io::Read>(r: &mut R) -> Result<(), FormatError> {
    std::io::copy(r, &mut std::io::sink())
        .map(|_| ())
        .map_err(super::source::io_or_cancel)
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
    if raw.any_negative_size {
        let host = std::iter::once(("host_traces".to_string(), &raw.host_rows));
        for (name, rows) in traces.chain(host) {
            for (i, &r) in rows.iter().enumerate() {
                if let Some(row) = raw.rows.get(r).filter(|row| neg(row.size)) {
                    return Err(bad(format!("{name}[{i}].size"), row.size));
                }
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

/// The categories the entries carried (PyTorch's `_profile_to_snapshot` writes its memory
/// profiler's on each alloc), said in a note: the bands are recorded when every block has
/// one, else inferred for the others (the door's reading step keeps the recorded ones).
fn recorded_categories(t: &mut Trace) -> BandsSource {
    let blocks = (0..t.storage_count())
        .map(|i| AllocId(i as u32))
        .filter(|&id| t.storage_kind(id) != StorageKind::Segment);
    let (mut n, mut with) = (0u64, 0u64);
    for id in blocks {
        n += 1;
        with += u64::from(t.category(id) != Category::Unknown);
    }
    if with == 0 {
        return BandsSource::Inferred;
    }
    let rest = if with == n {
        String::new()
    } else {
        format!("; the other {} inferred", n - with)
    };
    t.meta.push((
        "note".into(),
        format!(
            "{with} of {n} allocations carry PyTorch's own category (the entries' 'category' key, from its memory profiler): used as recorded{rest}"
        ),
    ));
    if with == n {
        BandsSource::Recorded
    } else {
        BandsSource::Inferred
    }
}

/// Replays every device of a decoded snapshot (categories the entries carry are kept; the
/// rest are left for inference).
pub fn build(raw: &Raw, source: &str) -> Vec<Trace> {
    let mut out = Vec::new();
    for d in traced_devices(raw) {
        let mut t = timeline::build(raw, d, source);
        if raw.skipped_items > 0 {
            t.warn(format!(
                "{} items of device_traces were not trace-entry dicts (ignored)",
                raw.skipped_items
            ));
        }
        t.bands_source = recorded_categories(&mut t);
        out.push(t);
    }
    if has_host_trace(raw) {
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
