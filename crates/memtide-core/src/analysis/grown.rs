//! What grew (and shrank) between two runs: the live sets at each one's peak grouped by what
//! owns them (category, row label, user frame), the groups that hold more bytes in B than in
//! A, biggest growth first, and those that hold less, biggest drop first. Two runs of
//! different commits of the same code own the same bytes at other line numbers: owners left
//! unmatched are matched again by file and function, in line order, where both runs have as
//! many of them there.

use super::frames::{FrameRules, FrameView};
use super::live::entry_in;
use super::peak::Peak;
use crate::index::Index;
use crate::trace::Trace;
use std::collections::{BTreeMap, BTreeSet};

/// One owner of bytes live at both peaks (or at one of them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grown {
    pub category: &'static str,
    /// The row label (the source's name, else the module path, else the op), or empty.
    pub label: String,
    /// The user frame (`file.py:123 function`), else the top frame, or empty: B's where both
    /// runs own bytes there.
    pub frame: String,
    /// A's frame where the owner moved between the runs (the same file and function at
    /// another line: the code changed above it); None where A's frame is `frame`.
    pub a_frame: Option<String>,
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

    /// The line of A's frame where the owner moved between the runs.
    pub fn moved_from(&self) -> Option<u64> {
        place_and_line(self.a_frame.as_deref()?).map(|(_, line)| line)
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
    let mut gb = groups(tb, ib, pb, rules);
    let mut rows: Vec<Grown> = Vec::new();
    let row =
        |k: Key, a_frame: Option<String>, (ab, ac): (u64, usize), (bb, bc): (u64, usize)| Grown {
            category: k.0,
            label: k.1,
            frame: k.2,
            a_frame,
            a_bytes: ab,
            a_count: ac,
            b_bytes: bb,
            b_count: bc,
        };
    // The same owner in both runs.
    let both: Vec<Key> = gb.keys().filter(|k| ga.contains_key(*k)).cloned().collect();
    let stayed: BTreeSet<Place> = both.iter().filter_map(place_of).collect();
    for k in both {
        if let (Some(a), Some(b)) = (ga.remove(&k), gb.remove(&k)) {
            rows.push(row(k, None, a, b));
        }
    }
    // The same owner moved: A's and B's leftovers at one file and function, paired in line
    // order where each run has as many of them and none of that place stayed where it was.
    for (ka, kb) in moved(&ga, &gb, &stayed) {
        if let (Some(a), Some(b)) = (ga.remove(&ka), gb.remove(&kb)) {
            rows.push(row(kb, Some(ka.2), a, b));
        }
    }
    rows.extend(gb.into_iter().map(|(k, b)| row(k, None, (0, 0), b)));
    rows.extend(ga.into_iter().map(|(k, a)| row(k, None, a, (0, 0))));
    let mut out = OwnerChanges::default();
    for r in rows {
        match r.b_bytes.cmp(&r.a_bytes) {
            std::cmp::Ordering::Greater => out.grew.push(r),
            std::cmp::Ordering::Less => out.shrank.push(r),
            std::cmp::Ordering::Equal => {}
        }
    }
    let tie = |x: &Grown, y: &Grown| (&x.label, &x.frame).cmp(&(&y.label, &y.frame));
    out.grew
        .sort_by(|x, y| y.delta().cmp(&x.delta()).then_with(|| tie(x, y)));
    out.shrank
        .sort_by(|x, y| x.delta().cmp(&y.delta()).then_with(|| tie(x, y)));
    Some(out)
}

/// A frame `file.py:123 function` as its place without the line (`file.py function`) and
/// the line; None for a frame without a file and a line (a C++ frame `:0:void …`).
fn place_and_line(frame: &str) -> Option<(String, u64)> {
    let (head, function) = frame.split_once(' ')?;
    let (file, line) = head.rsplit_once(':')?;
    let line: u64 = line.parse().ok().filter(|&l| l > 0)?;
    (!file.is_empty()).then(|| (format!("{file} {function}"), line))
}

/// An owner without its line: category, label, and the frame's file and function.
type Place = (&'static str, String, String);

fn place_of(k: &Key) -> Option<Place> {
    place_and_line(&k.2).map(|(place, _)| (k.0, k.1.clone(), place))
}

/// The owners of `a` and `b` (each run's leftovers) that are one owner moved: the same
/// category, label, file and function at other lines, paired in line order where A and B
/// hold as many of them there and no owner of that place is in both runs at one line
/// (`stayed`: there the code did not move, and other lines are other allocations); else
/// left alone, as which is which cannot be told.
fn moved(
    a: &BTreeMap<Key, (u64, usize)>,
    b: &BTreeMap<Key, (u64, usize)>,
    stayed: &BTreeSet<Place>,
) -> Vec<(Key, Key)> {
    let by_place = |g: &BTreeMap<Key, (u64, usize)>| {
        let mut m: BTreeMap<Place, Vec<(u64, Key)>> = BTreeMap::new();
        for k in g.keys() {
            if let Some((place, line)) = place_and_line(&k.2) {
                let place = (k.0, k.1.clone(), place);
                if !stayed.contains(&place) {
                    m.entry(place).or_default().push((line, k.clone()));
                }
            }
        }
        for v in m.values_mut() {
            v.sort();
        }
        m
    };
    let (pa, pb) = (by_place(a), by_place(b));
    let mut out = Vec::new();
    for (place, xs) in &pa {
        match pb.get(place) {
            Some(ys) if ys.len() == xs.len() => {
                out.extend(
                    xs.iter()
                        .zip(ys)
                        .map(|((_, x), (_, y))| (x.clone(), y.clone())),
                );
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_splits_into_its_place_and_line() {
        assert_eq!(
            place_and_line("cs336_basics/optimizer.py:73 step"),
            Some(("cs336_basics/optimizer.py step".into(), 73))
        );
        assert_eq!(
            place_and_line("train.py:9 <lambda> of x"),
            Some(("train.py <lambda> of x".into(), 9))
        );
        assert_eq!(place_and_line(":0:void torch::autograd::f(int)"), None);
        assert_eq!(place_and_line("autograd backward"), None);
        assert_eq!(place_and_line(""), None);
    }

    fn group(entries: &[(&'static str, &str, &str, u64)]) -> BTreeMap<Key, (u64, usize)> {
        entries
            .iter()
            .map(|&(c, l, f, b)| ((c, l.to_string(), f.to_string()), (b, 1)))
            .collect()
    }

    #[test]
    fn leftovers_pair_in_line_order_only_where_both_runs_hold_as_many() {
        let a = group(&[
            ("optimizer", "step", "opt.py:76 step", 10),
            ("optimizer", "step", "opt.py:77 step", 10),
            ("activation", "relu", "model.py:40 forward", 5),
            ("activation", "relu", "model.py:41 forward", 5),
        ]);
        let b = group(&[
            ("optimizer", "step", "opt.py:73 step", 9),
            ("optimizer", "step", "opt.py:74 step", 9),
            // Three where A has two: which is which cannot be told.
            ("activation", "relu", "model.py:50 forward", 5),
            ("activation", "relu", "model.py:51 forward", 5),
            ("activation", "relu", "model.py:52 forward", 5),
        ]);
        let pairs = |stayed: &BTreeSet<Place>| -> Vec<(String, String)> {
            moved(&a, &b, stayed)
                .into_iter()
                .map(|(x, y)| (x.2, y.2))
                .collect()
        };
        assert_eq!(
            pairs(&BTreeSet::new()),
            [
                ("opt.py:76 step".to_string(), "opt.py:73 step".to_string()),
                ("opt.py:77 step".to_string(), "opt.py:74 step".to_string()),
            ]
        );
        // An owner of the place at one line in both runs: the code there did not move.
        let step = ("optimizer", "step".to_string(), "opt.py step".to_string());
        assert_eq!(pairs(&BTreeSet::from([step])), []);
    }
}
