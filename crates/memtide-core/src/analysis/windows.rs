//! Measurement windows delimited by marks: each step, each `reset_peak` window, each phase.

use super::peak::{window_peak, Peak};
use crate::index::Index;
use crate::trace::{MarkKind, Seq, StrId, Trace};
use rustc_hash::FxHashMap;
use std::sync::Arc;

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
    /// The mark's name as one-line fields show it ([`crate::clip`]), shared by every window
    /// of one name.
    pub name: Arc<str>,
    pub lo: Seq,
    pub hi: Seq,
    pub peak: Option<Peak>,
}

/// Windows of one mark kind: from each mark to the event before the next mark of that kind
/// (or the mark's own recorded end, for span marks), the last one to the end of the trace.
pub fn windows_of(trace: &Trace, index: &Index, kind: MarkKind) -> Vec<Window> {
    each_window_of(trace, index, kind).collect()
}

/// [`windows_of`] one window at a time (a run of millions of steps is never held whole).
pub(crate) fn each_window_of<'a>(
    trace: &'a Trace,
    index: &'a Index,
    kind: MarkKind,
) -> impl Iterator<Item = Window> + 'a {
    let n = index.len() as u64;
    let wk = match kind {
        MarkKind::Step => WindowKind::Step,
        MarkKind::ResetPeak => WindowKind::ResetPeak,
        _ => WindowKind::Phase,
    };
    // A phase ends where the next phase or step begins; steps and resets at their own next.
    let ends_here = move |m: &crate::trace::Mark| {
        m.kind == kind || (kind == MarkKind::Phase && m.kind == MarkKind::Step)
    };
    // Where marks that end a window of this kind stand, in order: the next one after `lo` is
    // a binary search away (marks are kept in event order).
    let mut ends: Vec<Seq> = if n == 0 {
        Vec::new()
    } else {
        trace
            .marks
            .iter()
            .filter(|x| ends_here(x))
            .map(|x| x.at)
            .collect()
    };
    ends.sort_unstable();
    let mut names = Names::default();
    trace
        .marks
        .iter()
        .filter(move |m| n > 0 && m.kind == kind)
        .map(move |m| {
            let lo = m.at;
            let hi = match m.end {
                Some(e) => e,
                None => ends
                    .get(ends.partition_point(|&at| at <= lo))
                    .map_or(Seq(n - 1), |next| Seq(next.0.saturating_sub(1).max(lo.0))),
            };
            let hi = Seq(hi.0.min(n - 1));
            Window {
                kind: wk,
                name: names.of(trace, m.name),
                lo,
                hi,
                peak: window_peak(trace, index, lo, hi),
            }
        })
}

/// Mark names as windows hold them: each name shortened and allocated once.
#[derive(Default)]
pub(crate) struct Names(FxHashMap<StrId, Arc<str>>);

impl Names {
    pub fn of(&mut self, trace: &Trace, id: StrId) -> Arc<str> {
        self.0
            .entry(id)
            .or_insert_with(|| Arc::from(crate::clip::clip(trace.strings.text(id)).as_ref()))
            .clone()
    }
}

/// Every window of the trace: steps, then reset_peak windows, then phases.
pub fn all_windows(trace: &Trace, index: &Index) -> Vec<Window> {
    each_window(trace, index).collect()
}

/// [`all_windows`] one window at a time.
pub(crate) fn each_window<'a>(
    trace: &'a Trace,
    index: &'a Index,
) -> impl Iterator<Item = Window> + 'a {
    each_window_of(trace, index, MarkKind::Step)
        .chain(each_window_of(trace, index, MarkKind::ResetPeak))
        .chain(each_window_of(trace, index, MarkKind::Phase))
}
