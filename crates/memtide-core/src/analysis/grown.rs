//! What grew between two runs: the live sets at each one's peak grouped by what owns them
//! (category, row label, user frame), and the groups that hold more bytes in B than in A,
//! biggest growth first.

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

/// The owners holding more bytes at B's peak than at A's, biggest growth first (ties by
/// label and frame); None when either file records no allocation identities (its live set
/// is unknown).
pub fn grown(
    (ta, ia, pa): (&Trace, &Index, &Peak),
    (tb, ib, pb): (&Trace, &Index, &Peak),
    rules: &FrameRules,
) -> Option<Vec<Grown>> {
    if !ta.identities_known() || !tb.identities_known() {
        return None;
    }
    let mut ga = groups(ta, ia, pa, rules);
    let gb = groups(tb, ib, pb, rules);
    let mut out: Vec<Grown> = Vec::new();
    for (k, (bb, bc)) in gb {
        let (ab, ac) = ga.remove(&k).unwrap_or_default();
        if bb > ab {
            out.push(Grown {
                category: k.0,
                label: k.1,
                frame: k.2,
                a_bytes: ab,
                a_count: ac,
                b_bytes: bb,
                b_count: bc,
            });
        }
    }
    out.sort_by(|x, y| {
        y.delta()
            .cmp(&x.delta())
            .then_with(|| (&x.label, &x.frame).cmp(&(&y.label, &y.frame)))
    });
    Some(out)
}
