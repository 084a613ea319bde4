//! Peaks: the global peak (first instant the maximum is reached) and the peak of any window.

use crate::index::Index;
use crate::trace::{BandTotals, Bytes, Seq, Trace};

/// The state at one real instant where a total is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peak {
    pub at: Seq,
    pub bytes: Bytes,
    pub bands: BandTotals,
}

/// The global peak of the trace, or None when it has no events.
pub fn global_peak(trace: &Trace, index: &Index) -> Option<Peak> {
    if index.is_empty() {
        return None;
    }
    window_peak(trace, index, Seq(0), Seq(index.len() as u64 - 1))
}

/// The peak of `[lo, hi]` (inclusive positions).
pub fn window_peak(trace: &Trace, index: &Index, lo: Seq, hi: Seq) -> Option<Peak> {
    let (at, bytes) = index.argmax(lo, hi)?;
    Some(Peak {
        at,
        bytes,
        bands: index.bands_at(trace, at),
    })
}

/// Bytes live after the last event.
pub fn final_bytes(index: &Index) -> Bytes {
    if index.is_empty() {
        return Bytes(index.baseline().total());
    }
    index.total(Seq(index.len() as u64 - 1))
}
