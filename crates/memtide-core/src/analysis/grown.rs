//! What grew (and shrank) between two runs: the live sets at each one's peak grouped by what
//! owns them (category, row label, user frame), the groups that hold more bytes in B than in
//! A, biggest growth first, and those that hold less, biggest drop first.

use super::frames::{FrameRules, FrameView};
use super::live::entry_in;
use super::peak::Peak;
use crate::index::Index;
use crate::trace::Trace;
use std::collections::BTreeMap;

/// One owner of bytes live at both peaks (or at one of them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grown {
    pub category: &'static str,
    /// The row label (the source's name, else the module path, else the op), or empty.
    pub label: String,
    /// The user frame (`file.py:123 function`), else the top frame, or empty.
    pub frame: String,
    pub a_bytes: u64,
    pub a_count: usize,
    pub b_bytes: u64,
    pub b_count: usize,
}

impl Grown {
    /// B − A in bytes.
    pub fn delta(&self) -> i128 {
        self.b_bytes as i128 - self.a_bytes as i128
    }
}

type Key = (&'static str, String, String);

fn groups(
    trace: &Trace,
    index: &Index,
    peak: &Peak,
    rules: &FrameRules,
) -> BTreeMap<Key, (u64, usize)> {
    let view = FrameView::new(trace, rules);
    let mut out: BTreeMap<Key, (u64, usize)> = BTreeMap::new();
    for id in peak.live(trace, index) {
        let e = entry_in(trace, id, peak.at, &view);
        let frame = if e.user_frame.is_empty() {
            e.frame
        } else {
            e.user_frame
        };
        let g = out.entry((e.category, e.label, frame)).or_default();
        g.0 += e.bytes.0;
        g.1 += 1;
    }
    out
}

/// The owners whose bytes differ between the two peaks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OwnerChanges {
    /// More bytes at B's peak than at A's, biggest growth first (ties by label and frame).
    pub grew: Vec<Grown>,
    /// Fewer bytes at B's peak than at A's, biggest drop first.
    pub shrank: Vec<Grown>,
}

/// The owners whose bytes changed between A's peak and B's; None when either file records
/// no allocation identities (its live set is unknown).
pub fn owner_changes(
    (ta, ia, pa): (&Trace, &Index, &Peak),
    (tb, ib, pb): (&Trace, &Index, &Peak),
    rules: &FrameRules,
) -> Option<OwnerChanges> {
    if !ta.identities_known() || !tb.identities_known() {
        return None;
    }
    let mut ga = groups(ta, ia, pa, rules);
    let gb = groups(tb, ib, pb, rules);
    let row = |k: Key, (ab, ac): (u64, usize), (bb, bc): (u64, usize)| Grown {
        category: k.0,
        label: k.1,
        frame: k.2,
        a_bytes: ab,
        a_count: ac,
        b_bytes: bb,
        b_count: bc,
    };
    let mut out = OwnerChanges::default();
    for (k, b) in gb {
        let a = ga.remove(&k).unwrap_or_default();
        if b.0 > a.0 {
            out.grew.push(row(k, a, b));
        } else if b.0 < a.0 {
            out.shrank.push(row(k, a, b));
        }
    }
    for (k, a) in ga {
        if a.0 > 0 {
            out.shrank.push(row(k, a, (0, 0)));
        }
    }
    let tie = |x: &Grown, y: &Grown| (&x.label, &x.frame).cmp(&(&y.label, &y.frame));
    out.grew
        .sort_by(|x, y| y.delta().cmp(&x.delta()).then_with(|| tie(x, y)));
    out.shrank
        .sort_by(|x, y| x.delta().cmp(&y.delta()).then_with(|| tie(x, y)));
    Some(out)
}
