//! Measurement windows delimited by marks: each step, each `reset_peak` window, each phase.

use super::peak::{window_peak, Peak};
use crate::index::Index;
use crate::trace::{MarkKind, Seq, Trace};

/// What delimits a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WindowKind {
    Step,
    ResetPeak,
    Phase,
}

impl WindowKind {
    pub fn name(self) -> &'static str {
        match self {
            WindowKind::Step => "step",
            WindowKind::ResetPeak => "reset_peak",
            WindowKind::Phase => "phase",
        }
    }
}

/// A window `[lo, hi]` of the event axis and its peak.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    pub kind: WindowKind,
    pub name: String,
    pub lo: Seq,
    pub hi: Seq,
    pub peak: Option<Peak>,
}

/// Windows of one mark kind: from each mark to the event before the next mark of that kind
/// (or the mark's own recorded end, for span marks), the last one to the end of the trace.
pub fn windows_of(trace: &Trace, index: &Index, kind: MarkKind) -> Vec<Window> {
    let n = index.len() as u64;
    if n == 0 {
        return Vec::new();
    }
    let wk = match kind {
        MarkKind::Step => WindowKind::Step,
        MarkKind::ResetPeak => WindowKind::ResetPeak,
        _ => WindowKind::Phase,
    };
    let marks: Vec<_> = trace.marks.iter().filter(|m| m.kind == kind).collect();
    // A phase ends where the next phase or step begins; steps and resets at their own next.
    let ends_here = |m: &crate::trace::Mark| {
        m.kind == kind || (kind == MarkKind::Phase && m.kind == MarkKind::Step)
    };
    // Where marks that end a window of this kind stand, in order: the next one after `lo` is
    // a binary search away (marks are kept in event order).
    let mut ends: Vec<Seq> = trace
        .marks
        .iter()
        .filter(|x| ends_here(x))
        .map(|x| x.at)
        .collect();
    ends.sort_unstable();
    let mut out = Vec::with_capacity(marks.len());
    for m in marks.iter() {
        let lo = m.at;
        let hi = match m.end {
            Some(e) => e,
            None => ends
                .get(ends.partition_point(|&at| at <= lo))
                .map_or(Seq(n - 1), |next| Seq(next.0.saturating_sub(1).max(lo.0))),
        };
        let hi = Seq(hi.0.min(n - 1));
        out.push(Window {
            kind: wk,
            name: trace.mark_name(m).to_string(),
            lo,
            hi,
            peak: window_peak(trace, index, lo, hi),
        });
    }
    out
}

/// Every window of the trace: steps, then reset_peak windows, then phases.
pub fn all_windows(trace: &Trace, index: &Index) -> Vec<Window> {
    let mut v = windows_of(trace, index, MarkKind::Step);
    v.extend(windows_of(trace, index, MarkKind::ResetPeak));
    v.extend(windows_of(trace, index, MarkKind::Phase));
    v
}
