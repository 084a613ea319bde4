//! Peak-preserving timeline columns: each column covers a range of the axis and shows the
//! stacked bands at the instant where the total is highest within it (a real simultaneous
//! state), so the global peak can never be averaged away.

use crate::index::Index;
use crate::trace::{BandTotals, Bytes, Seq, Trace, Ts};

/// One terminal column of the timeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    /// First and last position covered (inclusive); `lo > hi` for an empty column.
    pub lo: Seq,
    pub hi: Seq,
    /// The instant shown: where the total is highest in `[lo, hi]`.
    pub at: Seq,
    pub bands: BandTotals,
    pub reserved: Bytes,
    pub empty: bool,
}

/// The axis the columns are laid on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    /// Every event is one step (MemoryViz's default).
    Event,
    /// Wall clock.
    Time,
}

/// Splits the position range `[lo, hi]` into `width` columns on the event axis.
pub fn event_columns(trace: &Trace, index: &Index, lo: Seq, hi: Seq, width: usize) -> Vec<Column> {
    let ranges = event_ranges(lo, hi, width);
    ranges
        .into_iter()
        .map(|r| column(trace, index, r))
        .collect()
}

/// Splits the time range `[t0, t1]` into `width` columns of equal duration.
pub fn time_columns(trace: &Trace, index: &Index, t0: Ts, t1: Ts, width: usize) -> Vec<Column> {
    time_ranges(trace, t0, t1, width)
        .into_iter()
        .map(|r| column(trace, index, r))
        .collect()
}

/// Position ranges of `width` equal slices of `[lo, hi]`.
pub(crate) fn event_ranges(lo: Seq, hi: Seq, width: usize) -> Vec<(Seq, Seq)> {
    if width == 0 || lo > hi {
        return Vec::new();
    }
    let span = hi.0 - lo.0 + 1;
    (0..width as u64)
        .map(|c| {
            let a = lo.0 + span * c / width as u64;
            let b = lo.0 + span * (c + 1) / width as u64;
            // Columns wider than the data repeat the single event they cover.
            if b > a {
                (Seq(a), Seq(b - 1))
            } else {
                (Seq(a.min(hi.0)), Seq(a.min(hi.0)))
            }
        })
        .collect()
}

/// Position ranges of `width` equal time slices of `[t0, t1]`; an empty slice is `(x+1, x)`.
pub(crate) fn time_ranges(trace: &Trace, t0: Ts, t1: Ts, width: usize) -> Vec<(Seq, Seq)> {
    if width == 0 || trace.is_empty() || t1 < t0 {
        return Vec::new();
    }
    let dur = (t1.0 - t0.0).max(1) as i128;
    (0..width as i128)
        .map(|c| {
            let a = t0.0 as i128 + dur * c / width as i128;
            let b = t0.0 as i128 + dur * (c + 1) / width as i128;
            let first = trace.ts_partition_point(|x| (x as i128) < a);
            let last_excl = if c + 1 == width as i128 {
                trace.ts_partition_point(|x| (x as i128) <= b)
            } else {
                trace.ts_partition_point(|x| (x as i128) < b)
            };
            if last_excl > first {
                (Seq(first as u64), Seq(last_excl as u64 - 1))
            } else if first > 0 {
                // Nothing happens in this slice: the state of the previous event holds.
                (Seq(first as u64 - 1), Seq(first as u64 - 1))
            } else {
                (Seq(1), Seq(0))
            }
        })
        .collect()
}

fn column(trace: &Trace, index: &Index, (lo, hi): (Seq, Seq)) -> Column {
    match index.argmax(lo, hi) {
        Some((at, _)) => {
            let (bands, reserved) = index.bands_and_reserved_at(trace, at);
            Column {
                lo,
                hi,
                at,
                bands,
                reserved,
                empty: false,
            }
        }
        None => Column {
            lo,
            hi,
            at: lo,
            bands: BandTotals::default(),
            reserved: Bytes(0),
            empty: true,
        },
    }
}
