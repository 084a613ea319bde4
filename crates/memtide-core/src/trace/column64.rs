//! A column of 64-bit values, one per event, in 4 bytes a value where it can: each block of
//! [`BLOCK`] positions keeps its first value whole and the others as signed 32-bit offsets
//! from it (wrapping, so unsigned and signed values alike). A block whose values move more
//! than ±2^31 from its first (a 4 GiB tensor freed in the index's totals; more than 2.1 s
//! between events in nanosecond times) is kept whole, 8 bytes each: every value reads back
//! exactly. The index's totals and the trace's times.

/// Positions per block.
const BLOCK: usize = 1024;

/// No whole copy: the block's values are its offsets.
const NARROW: u32 = u32::MAX;

#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct Column64 {
    len: usize,
    /// The first value of each block.
    base: Vec<u64>,
    /// Each value less its block's first (wrapping; 0 in a whole block).
    off: Vec<i32>,
    /// Per block, where its whole values are in `whole` ([`NARROW`]: none).
    whole_of: Vec<u32>,
    whole: Vec<Vec<u64>>,
}

impl Column64 {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn reserve(&mut self, n: usize) {
        self.off.reserve(n);
        self.base.reserve(n / BLOCK + 1);
        self.whole_of.reserve(n / BLOCK + 1);
    }

    /// Appends the value of the next position.
    pub(crate) fn push(&mut self, value: u64) {
        let (b, i) = (self.len / BLOCK, self.len % BLOCK);
        if i == 0 {
            self.base.push(value);
            self.whole_of.push(NARROW);
        }
        let base = self.base.get(b).copied().unwrap_or(value);
        let off = i32::try_from(value.wrapping_sub(base) as i64).ok();
        match (self.whole_of.get(b).copied(), off) {
            (Some(NARROW), Some(off)) => self.off.push(off),
            (Some(NARROW), None) => {
                // Keep the block whole from here: what it holds so far, then this.
                let mut w: Vec<u64> = (b * BLOCK..self.len).map(|p| self.get(p)).collect();
                w.push(value);
                if let Some(slot) = self.whole_of.get_mut(b) {
                    *slot = self.whole.len() as u32;
                }
                self.whole.push(w);
                self.off.push(0);
            }
            (Some(k), _) => {
                if let Some(w) = self.whole.get_mut(k as usize) {
                    w.push(value);
                }
                self.off.push(0);
            }
            (None, _) => self.off.push(0),
        }
        self.len += 1;
    }

    /// The value at position `p` (0 past the end).
    #[inline]
    pub(crate) fn get(&self, p: usize) -> u64 {
        if p >= self.len {
            return 0;
        }
        let b = p / BLOCK;
        match (self.whole_of.get(b), self.base.get(b), self.off.get(p)) {
            (Some(&NARROW), Some(&base), Some(&off)) => base.wrapping_add_signed(i64::from(off)),
            _ => self.whole_at(p),
        }
    }

    /// The value at position `p` of a block kept whole.
    #[cold]
    #[inline(never)]
    fn whole_at(&self, p: usize) -> u64 {
        let b = p / BLOCK;
        self.whole_of
            .get(b)
            .and_then(|&k| self.whole.get(k as usize))
            .and_then(|w| w.get(p % BLOCK))
            .copied()
            .unwrap_or(0)
    }

    /// The highest value at positions `lo..=hi` and the first position holding it (None
    /// when the range is empty or past the end). A block kept as offsets is scanned on its
    /// offsets, so a scan costs what a slice's would: the highest offset is the highest value
    /// unless a value of the range wraps past 0 or 2^64 (then each value is read).
    pub(crate) fn first_max(&self, lo: usize, hi: usize) -> Option<(u64, usize)> {
        let hi = hi.min(self.len.checked_sub(1)?);
        let mut best: Option<(u64, usize)> = None;
        let mut consider = |v: u64, p: usize| {
            if best.is_none_or(|(b, _)| v > b) {
                best = Some((v, p));
            }
        };
        let mut p = lo;
        while p <= hi {
            let b = p / BLOCK;
            let end = hi.min((b + 1) * BLOCK - 1);
            let base = self.base.get(b).copied().unwrap_or(0);
            let scanned = match (self.whole_of.get(b), self.off.get(p..=end)) {
                (Some(&NARROW), Some(offs)) => highest_offset(offs)
                    .filter(|&(lowest, _, _)| base.checked_add_signed(i64::from(lowest)).is_some())
                    .and_then(|(_, o, k)| Some((base.checked_add_signed(i64::from(o))?, p + k))),
                _ => None,
            };
            match scanned {
                Some((v, q)) => consider(v, q),
                None => (p..=end).for_each(|q| consider(self.get(q), q)),
            }
            p = end + 1;
        }
        best
    }

    /// Every value in position order.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = u64> + ExactSizeIterator + '_ {
        (0..self.len).map(|p| self.get(p))
    }

    /// The first position whose value fails `pred` (`pred` holds for a prefix: sorted
    /// values), as `slice::partition_point`.
    pub(crate) fn partition_point(&self, pred: impl Fn(u64) -> bool) -> usize {
        self.partition_point_in(0, self.len, pred)
    }

    /// [`Column64::partition_point`] of positions `lo..hi` (`pred` holds for a prefix of them).
    pub(crate) fn partition_point_in(
        &self,
        mut lo: usize,
        mut hi: usize,
        pred: impl Fn(u64) -> bool,
    ) -> usize {
        hi = hi.min(self.len);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(self.get(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.base.capacity() * 8
            + self.off.capacity() * 4
            + self.whole_of.capacity() * 4
            + self.whole.iter().map(|w| w.capacity() * 8).sum::<usize>()
    }
}

/// The lowest offset, the highest and the first position of the highest (None: no offsets).
fn highest_offset(offs: &[i32]) -> Option<(i32, i32, usize)> {
    let mut it = offs.iter().copied().enumerate();
    let (_, first) = it.next()?;
    Some(it.fold((first, first, 0), |(lowest, high, at), (k, o)| {
        let (high, at) = if o > high { (o, k) } else { (high, at) };
        (lowest.min(o), high, at)
    }))
}

/// As the list of values (what a `Vec` of them prints).
impl std::fmt::Debug for Column64 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the steps (small, or beyond ±2 GiB, or up to the 64-bit edges), every
        /// total reads back as pushed.
        #[test]
        fn totals_read_back_as_pushed(steps in prop::collection::vec(
            prop_oneof![
                8 => -4096i64..4096,
                1 => Just(3i64 << 30),
                1 => Just(-(3i64 << 30)),
                1 => any::<i64>(),
            ], 0..3000)) {
            let mut t = Column64::default();
            let mut want = Vec::new();
            let mut x = 1u64 << 40;
            for s in steps {
                x = x.wrapping_add_signed(s);
                t.push(x);
                want.push(x);
            }
            prop_assert_eq!(t.iter().len(), want.len());
            prop_assert_eq!(t.iter().collect::<Vec<_>>(), want.clone());
            for (p, &w) in want.iter().enumerate() {
                prop_assert_eq!(t.get(p), w);
            }
            prop_assert_eq!(t.get(want.len()), 0);
        }
    }

    proptest! {
        /// The first highest value of any range is a scan's, whatever the values (offsets,
        /// whole blocks, values near 0 and 2^64).
        #[test]
        fn first_max_is_a_scan_s(
            steps in prop::collection::vec(prop_oneof![
                8 => -4096i64..4096,
                1 => Just(3i64 << 30),
                1 => any::<i64>(),
            ], 1..3000),
            start in prop_oneof![Just(0u64), Just(1u64 << 40), Just(u64::MAX - 5000)],
            a in any::<usize>(),
            b in any::<usize>(),
        ) {
            let mut t = Column64::default();
            let mut v = Vec::new();
            let mut x = start;
            for s in steps {
                x = x.wrapping_add_signed(s);
                t.push(x);
                v.push(x);
            }
            let (lo, hi) = (a % v.len(), b % (v.len() + 10));
            let mut want: Option<(u64, usize)> = None;
            for (p, &x) in v.iter().enumerate().take(hi.min(v.len() - 1) + 1).skip(lo) {
                if want.is_none_or(|(w, _)| x > w) {
                    want = Some((x, p));
                }
            }
            prop_assert_eq!(t.first_max(lo, hi), want);
        }

        /// On rising values (times), the first position past any cut is the slice's.
        #[test]
        fn partition_point_is_the_slice_s(
            steps in prop::collection::vec(prop_oneof![4 => 0u64..1000, 1 => Just(5u64 << 30)], 0..3000),
            cut in any::<u64>(),
        ) {
            let mut t = Column64::default();
            let mut v = Vec::new();
            let mut x = 0u64;
            for s in steps {
                x = x.saturating_add(s);
                t.push(x);
                v.push(x);
            }
            let cut = v.get(cut as usize % (v.len() + 1)).copied().unwrap_or(u64::MAX);
            prop_assert_eq!(t.partition_point(|x| x < cut), v.partition_point(|&x| x < cut));
            prop_assert_eq!(t.partition_point(|x| x <= cut), v.partition_point(|&x| x <= cut));
        }
    }

    #[test]
    fn a_block_within_2_gib_of_its_first_total_takes_4_bytes_a_total() {
        let mut t = Column64::default();
        for p in 0..(3 * BLOCK) as u64 {
            t.push((1 << 40) + (p % 4) * (1 << 29));
        }
        assert!(t.whole.is_empty());
        // A block's first total is its base, whatever it is; the next one 2^64 - 2^40 away
        // keeps the block whole.
        t.push(1 << 40);
        t.push(u64::MAX);
        assert_eq!(t.whole.len(), 1);
        assert_eq!(t.get(3 * BLOCK), 1 << 40);
        assert_eq!(t.get(3 * BLOCK + 1), u64::MAX);
        assert_eq!(t.get(3 * BLOCK - 1), (1 << 40) + 3 * (1 << 29));
    }
}
