//! Address ranges as a merged set: what a mapping leaves unmapped found in as many steps as
//! there are merged ranges, however many pieces were mapped inside it.

use std::collections::BTreeMap;

/// Disjoint address ranges `[start, end)`, merged (ranges that overlap or touch become one).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct RangeSet(BTreeMap<u64, u64>);

impl RangeSet {
    pub(crate) fn add(&mut self, a: u64, b: u64) {
        if a >= b {
            return;
        }
        let (mut lo, mut hi) = (a, b);
        // Merge with every range that overlaps or touches [a, b).
        let touching: Vec<(u64, u64)> = self
            .0
            .range(..=b)
            .rev()
            .take_while(|&(_, &e)| e >= a)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in touching {
            self.0.remove(&s);
            lo = lo.min(s);
            hi = hi.max(e);
        }
        self.0.insert(lo, hi);
    }

    /// The parts of `[a, b)` no range covers, in order: as few steps as there are ranges
    /// touching it (merged, so few), however many pieces were mapped inside it.
    pub(crate) fn gaps(&self, a: u64, b: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        if a >= b {
            // An empty range (a segment of size 0) leaves nothing unmapped; the map's range
            // query below needs a start before its end.
            return out;
        }
        let mut cur = a;
        let first = self
            .0
            .range(..=a)
            .next_back()
            .filter(|&(_, &e)| e > a)
            .map(|(&s, &e)| (s, e));
        for (s, e) in first.into_iter().chain(
            self.0
                .range((std::ops::Bound::Excluded(a), std::ops::Bound::Excluded(b)))
                .map(|(&s, &e)| (s, e)),
        ) {
            if s > cur {
                out.push((cur, s.min(b)));
            }
            cur = cur.max(e);
            if cur >= b {
                break;
            }
        }
        if cur < b {
            out.push((cur, b));
        }
        out
    }

    /// The ranges in address order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.0.iter().map(|(&s, &e)| (s, e))
    }

    pub(crate) fn remove(&mut self, a: u64, b: u64) {
        if a >= b {
            return;
        }
        let over: Vec<(u64, u64)> = self
            .0
            .range(..b)
            .rev()
            .take_while(|&(_, &e)| e > a)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in over {
            self.0.remove(&s);
            if s < a {
                self.0.insert(s, a);
            }
            if e > b {
                self.0.insert(b, e);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RangeSet;

    #[test]
    fn an_empty_or_reversed_range_has_no_gaps_and_changes_nothing() {
        let mut r = RangeSet::default();
        r.add(10, 20);
        assert!(r.gaps(15, 15).is_empty());
        assert!(r.gaps(30, 30).is_empty());
        assert!(r.gaps(25, 5).is_empty());
        r.add(40, 40);
        r.remove(12, 12);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(10, 20)]);
    }

    #[test]
    fn gaps_are_what_no_range_covers() {
        let mut r = RangeSet::default();
        r.add(10, 20);
        r.add(30, 40);
        r.add(20, 25); // touches the first: merged
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(10, 25), (30, 40)]);
        assert_eq!(r.gaps(0, 50), vec![(0, 10), (25, 30), (40, 50)]);
        assert_eq!(r.gaps(12, 35), vec![(25, 30)]);
        r.remove(15, 32);
        assert_eq!(r.iter().collect::<Vec<_>>(), vec![(10, 15), (32, 40)]);
    }
}
