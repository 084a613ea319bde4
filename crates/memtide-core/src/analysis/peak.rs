//! Peaks: the global peak (first instant the maximum is reached) and the peak of any window.
//! The initial state (everything live before the first event: frees whose alloc the trace
//! lost, blocks present at dump time) is an instant too, and a range starting at event 0
//! includes it: it comes first, so it wins ties.

use crate::index::Index;
use crate::trace::{AllocId, BandTotals, Bytes, Seq, Trace};

/// The state at one real instant where a total is reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peak {
    /// The event after which the state holds; `Seq(0)` when `at_start`.
    pub at: Seq,
    /// The peak is the initial state, before event 0 (`at` is then 0 but not applied).
    pub at_start: bool,
    pub bytes: Bytes,
    pub bands: BandTotals,
}

impl Peak {
    /// The blocks live at the peak, biggest first.
    pub fn live(&self, trace: &Trace, index: &Index) -> Vec<AllocId> {
        if self.at_start {
            index.live_at_start(trace)
        } else {
            index.live_at(trace, self.at)
        }
    }
}

/// The global peak of the trace, or None when it has no events.
pub fn global_peak(trace: &Trace, index: &Index) -> Option<Peak> {
    if index.is_empty() {
        return None;
    }
    window_peak(trace, index, Seq(0), Seq(index.len() as u64 - 1))
}

/// Why the file contradicts itself, or None: the framework held more at its peak than the
/// file's reserve ever reached (the allocator's bytes live inside its reserve; a reserve
/// sampled now and then may lag the peak, but not stay below it for the whole run).
pub fn reserve_doubt(trace: &Trace, index: &Index) -> Option<String> {
    let peak = global_peak(trace, index).filter(|p| !p.at_start)?;
    let (reserved, _) = index.reserved_peak_at()?;
    let inside = peak
        .bytes
        .0
        .saturating_sub(peak.bands.get(crate::trace::Band::External));
    (inside > reserved.0).then(|| {
        format!(
            "the file's highest reserve ({}) is below the {} it says the framework held at the peak: one of the two figures is wrong",
            crate::trace::human_bytes(reserved.0),
            crate::trace::human_bytes(inside)
        )
    })
}

/// The peak of `[lo, hi]` (inclusive positions); when `lo` is 0 the initial state is a
/// candidate too (and wins ties, being first).
pub fn window_peak(trace: &Trace, index: &Index, lo: Seq, hi: Seq) -> Option<Peak> {
    let best = index.argmax(lo, hi);
    if lo.0 == 0 && !index.is_empty() {
        let start = index.start_total();
        if best.is_none_or(|(_, b)| start >= b) {
            return Some(Peak {
                at: Seq(0),
                at_start: true,
                bytes: start,
                bands: index.baseline(),
            });
        }
    }
    let (at, bytes) = best?;
    Some(Peak {
        at,
        at_start: false,
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
