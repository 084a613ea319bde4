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
    /// Per run (A, B) and band, whether its bytes are known ([`Trace::band_known`]): where
    /// one is not, that band and its delta are unavailable, not 0.
    pub bands_known: [[bool; Band::COUNT]; 2],
}

impl Diff {
    /// Whether band `b` is known in each run (A, B).
    pub fn band_known(&self, b: Band) -> [bool; 2] {
        self.bands_known.map(|k| k[b.idx()])
    }
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
        bands_known: [ta, tb].map(|t| Band::ALL.map(|b| t.band_known(b))),
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
                .map_or_else(|| format!("step #{k}"), |r| r.name.to_string());
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

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, lo: u64, hi: u64) -> StepRow {
        StepRow {
            name: name.into(),
            lo: Seq(lo),
            hi: Seq(hi),
            baseline: Bytes(0),
            peak: Bytes(0),
            peak_at: Seq(lo),
        }
    }

    fn with_steps(a: Vec<Option<StepRow>>, b: Vec<Option<StepRow>>) -> Diff {
        let n = a.len().max(b.len());
        Diff {
            peak_a: None,
            peak_b: None,
            band_delta: [0; Band::COUNT],
            steps: (0..n)
                .map(|k| StepPair {
                    ordinal: k,
                    a: a.get(k).cloned().flatten(),
                    b: b.get(k).cloned().flatten(),
                })
                .collect(),
            most_different: Vec::new(),
            aligned_by: "step marks",
            bands_known: [[true; Band::COUNT]; 2],
        }
    }

    #[test]
    fn steps_get_equal_shares_after_a_bounded_setup_span() {
        // A: 10 setup events of 100, steps at 10..40, 40..70, 70..99; B: 100 setup events of
        // 200 and only two steps. The setup span is the larger share (100/200 = 0.5), capped
        // at one step's share (1/4 with three steps).
        let d = with_steps(
            vec![
                Some(row("step 0", 10, 40)),
                Some(row("step 1", 40, 70)),
                Some(row("step 2", 70, 99)),
            ],
            vec![Some(row("step 0", 100, 150)), Some(row("step 1", 150, 199))],
        );
        let s = align(&d, 100, 200);
        assert_eq!(s.len(), 4);
        assert_eq!(s[0].name, "before steps");
        assert_eq!((s[0].x0, s[0].x1), (0.0, 0.25));
        assert_eq!(s[0].a, Some((Seq(0), Seq(9))));
        assert_eq!(s[0].b, Some((Seq(0), Seq(99))));
        for w in s.windows(2) {
            assert_eq!(w[0].x1, w[1].x0, "contiguous");
        }
        assert!((s[3].x1 - 1.0).abs() < 1e-12);
        for sp in &s[1..] {
            assert!((sp.x1 - sp.x0 - 0.25).abs() < 1e-12, "{sp:?}");
        }
        assert_eq!(s[3].name, "step 2");
        assert_eq!(s[3].b, None, "B has no third step");
        assert_eq!(s[2].b, Some((Seq(150), Seq(199))));
    }

    #[test]
    fn without_steps_on_both_sides_the_whole_runs_span_the_width() {
        let d = with_steps(vec![Some(row("step 0", 0, 9))], vec![None]);
        let s = align(&d, 10, 30);
        assert_eq!(s.len(), 1);
        assert_eq!((s[0].x0, s[0].x1), (0.0, 1.0));
        assert_eq!(s[0].a, Some((Seq(0), Seq(9))));
        assert_eq!(s[0].b, Some((Seq(0), Seq(29))));
    }
}
