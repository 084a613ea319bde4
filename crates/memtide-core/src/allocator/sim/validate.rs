//! Validation of the simulator against a snapshot that recorded its segment events: replay
//! the file's own allocs and frees under its own `allocator_settings` and compare the
//! simulated `segment_alloc` / `segment_free` (map / unmap) sequence and reserved timeline
//! with the recorded ones.

use super::config::AllocConf;
use super::engine::SegKind;
use super::input::SimInput;
use super::run::{run, RunOptions};
use crate::allocator::replay::{History, Op};
use serde::Serialize;

/// How close the simulated run came to the recorded one.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Validation {
    /// Ops compared (allocs and frees of the history, not the prologue).
    pub compared: u64,
    /// Of those, how many left the simulated reserved bytes equal to the recorded ones.
    pub equal: u64,
    pub share_equal: f64,
    pub recorded_reserved_peak: u64,
    pub simulated_reserved_peak: u64,
    /// (simulated − recorded) / recorded.
    pub reserved_peak_error: f64,
    /// Recorded and simulated segment events (alloc, free, map, unmap) of the history.
    pub recorded_segment_events: u64,
    pub simulated_segment_events: u64,
    /// Leading segment events that match in kind and size.
    pub segment_events_matching_prefix: u64,
    /// Segments (max over the run) recorded and simulated.
    pub recorded_segments_max: u64,
    pub simulated_segments_max: u64,
    /// Blocks live before the history began (a late start makes exact agreement unlikely).
    pub prologue_blocks: u64,
}

/// Reserved bytes after each entry of the history, from its segment events and its final
/// segments (what was reserved before the first entry is the final reserve with the
/// history's segment events undone).
pub fn recorded_reserved(h: &History) -> Vec<u64> {
    let fin: u64 = h.segments.iter().map(|s| s.total_size).sum();
    let (mut up, mut down) = (0u64, 0u64);
    for e in &h.entries {
        match e.op {
            Op::SegmentAlloc | Op::SegmentMap => up += e.size,
            Op::SegmentFree | Op::SegmentUnmap => down += e.size,
            _ => {}
        }
    }
    let mut r = (fin + down).saturating_sub(up);
    h.entries
        .iter()
        .map(|e| {
            match e.op {
                Op::SegmentAlloc | Op::SegmentMap => r += e.size,
                Op::SegmentFree | Op::SegmentUnmap => r = r.saturating_sub(e.size),
                _ => {}
            }
            r
        })
        .collect()
}

/// Segments after each entry (segment_alloc +1, segment_free −1; map/unmap leave the count).
fn recorded_segments(h: &History) -> Vec<u64> {
    let (mut a, mut f) = (0i64, 0i64);
    for e in &h.entries {
        match e.op {
            Op::SegmentAlloc => a += 1,
            Op::SegmentFree => f += 1,
            _ => {}
        }
    }
    let mut n = h.segments.len() as i64 - a + f;
    h.entries
        .iter()
        .map(|e| {
            match e.op {
                Op::SegmentAlloc => n += 1,
                Op::SegmentFree => n -= 1,
                _ => {}
            }
            n.max(0) as u64
        })
        .collect()
}

/// The recorded figures `whatif` prints beside its runs: reserved peak, and the segments
/// at that peak.
pub fn recorded_peak(h: &History) -> Option<(u64, u64)> {
    let res = recorded_reserved(h);
    let segs = recorded_segments(h);
    if res.is_empty() {
        let fin: u64 = h.segments.iter().map(|s| s.total_size).sum();
        return (!h.segments.is_empty()).then_some((fin, h.segments.len() as u64));
    }
    let (mut best, mut at) = (0u64, 0usize);
    for (i, &r) in res.iter().enumerate() {
        if r > best {
            best = r;
            at = i;
        }
    }
    Some((best, segs.get(at).copied().unwrap_or(0)))
}

/// Replays the history under `conf` (normally its own settings) and compares.
pub fn validate(h: &History, conf: &AllocConf) -> Validation {
    let input = SimInput::from_history(h);
    let r = run(
        &input,
        conf,
        &RunOptions {
            timeline: true,
            segment_events: true,
            no_recorded_ooms: true,
            recorded_layout: true,
            ..RunOptions::default()
        },
    );
    let rec = recorded_reserved(h);
    // Simulated reserved after each entry: the timeline's change points, stepped.
    let mut sim_at = vec![0u64; rec.len()];
    {
        let mut k = 0usize;
        let mut cur = 0u64;
        for (i, slot) in sim_at.iter_mut().enumerate() {
            while k < r.timeline.len() && r.timeline[k].0 as usize <= i {
                cur = r.timeline[k].1;
                k += 1;
            }
            *slot = cur;
        }
    }
    let (mut compared, mut equal) = (0u64, 0u64);
    for (k, &at) in input.at.iter().enumerate().skip(input.prologue) {
        let _ = k;
        let i = at as usize;
        if i < rec.len() {
            compared += 1;
            equal += (sim_at[i] == rec[i]) as u64;
        }
    }
    let recorded_seq: Vec<(SegKind, u64)> = h
        .entries
        .iter()
        .filter_map(|e| match e.op {
            Op::SegmentAlloc => Some((SegKind::Alloc, e.size)),
            Op::SegmentFree => Some((SegKind::Free, e.size)),
            Op::SegmentMap => Some((SegKind::Map, e.size)),
            Op::SegmentUnmap => Some((SegKind::Unmap, e.size)),
            _ => None,
        })
        .collect();
    // The prologue's segments precede the history: compare what the history did.
    let prologue_events = r.prologue_segment_events;
    let sim_seq: Vec<(SegKind, u64)> = r
        .segment_events
        .iter()
        .skip(prologue_events)
        .map(|(_, e)| (e.kind, e.size))
        .collect();
    let prefix = recorded_seq
        .iter()
        .zip(&sim_seq)
        .take_while(|(a, b)| a == b)
        .count() as u64;
    let recorded_peak = rec.iter().copied().max().unwrap_or(0);
    let rsegs = recorded_segments(h);
    Validation {
        compared,
        equal,
        share_equal: if compared == 0 {
            1.0
        } else {
            equal as f64 / compared as f64
        },
        recorded_reserved_peak: recorded_peak,
        simulated_reserved_peak: r.reserved_peak,
        reserved_peak_error: if recorded_peak == 0 {
            0.0
        } else {
            (r.reserved_peak as f64 - recorded_peak as f64) / recorded_peak as f64
        },
        recorded_segment_events: recorded_seq.len() as u64,
        simulated_segment_events: sim_seq.len() as u64,
        segment_events_matching_prefix: prefix,
        recorded_segments_max: rsegs.iter().copied().max().unwrap_or(0),
        simulated_segments_max: r.segments_max,
        prologue_blocks: input.prologue as u64,
    }
}
