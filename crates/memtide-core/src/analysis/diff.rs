//! Comparing two runs: each one's peak, the band-by-band difference at the peaks, and the
//! per-step table aligned by step ordinal (or a single whole-run row when there are no marks).

use super::peak::{global_peak, Peak};
use super::trend::{trend, StepRow};
use crate::index::Index;
use crate::trace::{Band, Bytes, Seq, Trace};

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

/// One aligned span of a two-run picture: the same step of both runs side by side.
#[derive(Clone, Debug, PartialEq)]
pub struct Span {
    pub name: String,
    /// The span's share of the width, `[x0, x1)` in 0..=1.
    pub x0: f64,
    pub x1: f64,
    /// Each run's event range drawn in the span (inclusive; None: the run lacks this step).
    pub a: Option<(Seq, Seq)>,
    pub b: Option<(Seq, Seq)>,
}

/// How two runs of `len_a` and `len_b` events line up on one horizontal axis, as the diff
/// screen draws them: by step (each aligned step gets the same share of the width in both,
/// what precedes the first step a narrow span sized by its share of the events, at most one
/// step's share), or over the whole width by event index when a run has no steps.
pub fn align(d: &Diff, len_a: usize, len_b: usize) -> Vec<Span> {
    let whole = |n: usize| (n > 0).then(|| (Seq(0), Seq(n as u64 - 1)));
    let by_steps = d.steps.iter().any(|s| s.a.is_some()) && d.steps.iter().any(|s| s.b.is_some());
    if !by_steps {
        return vec![Span {
            name: "whole run".into(),
            x0: 0.0,
            x1: 1.0,
            a: whole(len_a),
            b: whole(len_b),
        }];
    }
    let first =
        |pick: fn(&StepPair) -> Option<Seq>| d.steps.iter().find_map(pick).map_or(0, |s| s.0);
    let pre_a = first(|s| s.a.as_ref().map(|r| r.lo));
    let pre_b = first(|s| s.b.as_ref().map(|r| r.lo));
    let n = d.steps.len();
    let mut out = Vec::with_capacity(n + 1);
    let mut x = 0.0;
    if pre_a > 0 || pre_b > 0 {
        let frac = (pre_a as f64 / len_a.max(1) as f64)
            .max(pre_b as f64 / len_b.max(1) as f64)
            .min(1.0 / (n + 1) as f64);
        let range = |pre: u64| (pre > 0).then(|| (Seq(0), Seq(pre - 1)));
        out.push(Span {
            name: "before steps".into(),
            x0: 0.0,
            x1: frac,
            a: range(pre_a),
            b: range(pre_b),
        });
        x = frac;
    }
    let rest = 1.0 - x;
    for (k, s) in d.steps.iter().enumerate() {
        let name =
            s.a.as_ref()
                .or(s.b.as_ref())
                .map_or_else(|| format!("step #{k}"), |r| r.name.clone());
        out.push(Span {
            name,
            x0: x + rest * k as f64 / n as f64,
            x1: x + rest * (k + 1) as f64 / n as f64,
            a: s.a.as_ref().map(|r| (r.lo, r.hi)),
            b: s.b.as_ref().map(|r| (r.lo, r.hi)),
        });
    }
    out
}
