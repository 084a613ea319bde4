//! Comparing two runs: each one's peak, the band-by-band difference at the peaks, and the
//! per-step table aligned by step ordinal (or a single whole-run row when there are no marks).

use super::peak::{global_peak, Peak};
use super::trend::{trend, StepRow};
use crate::index::Index;
use crate::trace::{Band, Bytes, Trace};

/// One aligned step of two runs.
#[derive(Clone, Debug, PartialEq)]
pub struct StepPair {
    pub ordinal: usize,
    pub a: Option<StepRow>,
    pub b: Option<StepRow>,
}

impl StepPair {
    /// Peak of B minus peak of A (None when one side lacks the step).
    pub fn delta(&self) -> Option<i128> {
        Some(self.b.as_ref()?.peak.0 as i128 - self.a.as_ref()?.peak.0 as i128)
    }
}

/// The comparison.
#[derive(Clone, Debug, PartialEq)]
pub struct Diff {
    pub peak_a: Option<Peak>,
    pub peak_b: Option<Peak>,
    /// B − A per band at each one's peak.
    pub band_delta: [i128; Band::COUNT],
    pub steps: Vec<StepPair>,
    /// Ordinals of `steps` sorted by |delta|, biggest first.
    pub most_different: Vec<usize>,
    pub aligned_by: &'static str,
}

pub fn diff(ta: &Trace, ia: &Index, tb: &Trace, ib: &Index) -> Diff {
    let peak_a = global_peak(ta, ia);
    let peak_b = global_peak(tb, ib);
    let mut band_delta = [0i128; Band::COUNT];
    for b in Band::ALL {
        let x = peak_a.map_or(0, |p| p.bands.get(b)) as i128;
        let y = peak_b.map_or(0, |p| p.bands.get(b)) as i128;
        band_delta[b.idx()] = y - x;
    }
    let sa = trend(ta, ia).steps;
    let sb = trend(tb, ib).steps;
    let (steps, aligned_by) = if sa.is_empty() && sb.is_empty() {
        // No marks: one row for the whole run each (aligned by event index).
        let whole = |t: &Trace, i: &Index, p: Option<Peak>| {
            p.map(|p| StepRow {
                name: "whole run".into(),
                lo: crate::trace::Seq(0),
                hi: crate::trace::Seq(i.len().saturating_sub(1) as u64),
                baseline: Bytes(i.baseline().total()),
                peak: p.bytes,
                peak_at: p.at,
            })
            .filter(|_| !t.is_empty())
        };
        (
            vec![StepPair {
                ordinal: 0,
                a: whole(ta, ia, peak_a),
                b: whole(tb, ib, peak_b),
            }],
            "event index (no step marks)",
        )
    } else {
        let n = sa.len().max(sb.len());
        (
            (0..n)
                .map(|k| StepPair {
                    ordinal: k,
                    a: sa.get(k).cloned(),
                    b: sb.get(k).cloned(),
                })
                .collect(),
            "step marks",
        )
    };
    let mut most: Vec<usize> = (0..steps.len())
        .filter(|&k| steps[k].delta().is_some())
        .collect();
    most.sort_by_key(|&k| std::cmp::Reverse(steps[k].delta().map_or(0, |d| d.unsigned_abs())));
    Diff {
        peak_a,
        peak_b,
        band_delta,
        steps,
        most_different: most,
        aligned_by,
    }
}
