//! The total after each event, in 4 bytes instead of 8: each block of [`BLOCK`] positions
//! keeps its first total whole and the others as signed offsets from it. A block whose totals
//! move more than ±2 GiB from its first (a 4 GiB tensor freed) is kept whole, 8 bytes each:
//! every total reads back exactly.

use super::BLOCK;

/// No whole copy: the block's totals are its offsets.
const NARROW: u32 = u32::MAX;

#[derive(Debug, Clone, Default)]
pub(crate) struct Totals {
    len: usize,
    /// The first total of each block.
    base: Vec<u64>,
    /// Each total less its block's first (wrapping; 0 in a whole block).
    off: Vec<i32>,
    /// Per block, where its whole totals are in `whole` ([`NARROW`]: none).
    whole_of: Vec<u32>,
    whole: Vec<Vec<u64>>,
}

impl Totals {
    /// Appends the total after the next position.
    pub(crate) fn push(&mut self, total: u64) {
        let (b, i) = (self.len / BLOCK, self.len % BLOCK);
        if i == 0 {
            self.base.push(total);
            self.whole_of.push(NARROW);
        }
        let base = self.base.get(b).copied().unwrap_or(total);
        let off = i32::try_from(i128::from(total) - i128::from(base)).ok();
        match (self.whole_of.get(b).copied(), off) {
            (Some(NARROW), Some(off)) => self.off.push(off),
            (Some(NARROW), None) => {
                // Keep the block whole from here: what it holds so far, then this.
                let mut w: Vec<u64> = (b * BLOCK..self.len).map(|p| self.get(p)).collect();
                w.push(total);
                if let Some(slot) = self.whole_of.get_mut(b) {
                    *slot = self.whole.len() as u32;
                }
                self.whole.push(w);
                self.off.push(0);
            }
            (Some(k), _) => {
                if let Some(w) = self.whole.get_mut(k as usize) {
                    w.push(total);
                }
                self.off.push(0);
            }
            (None, _) => self.off.push(0),
        }
        self.len += 1;
    }

    /// The total after position `p` (0 past the end).
    #[inline]
    pub(crate) fn get(&self, p: usize) -> u64 {
        if p >= self.len {
            return 0;
        }
        let b = p / BLOCK;
        match self.whole_of.get(b) {
            Some(&NARROW) => match (self.base.get(b), self.off.get(p)) {
                (Some(&base), Some(&off)) => base.wrapping_add_signed(i64::from(off)),
                _ => 0,
            },
            Some(&k) => self
                .whole
                .get(k as usize)
                .and_then(|w| w.get(p % BLOCK))
                .copied()
                .unwrap_or(0),
            None => 0,
        }
    }

    /// Every total in position order.
    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        (0..self.len).map(|p| self.get(p))
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.base.capacity() * 8
            + self.off.capacity() * 4
            + self.whole_of.capacity() * 4
            + self.whole.iter().map(|w| w.capacity() * 8).sum::<usize>()
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
            let mut t = Totals::default();
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

    #[test]
    fn a_block_within_2_gib_of_its_first_total_takes_4_bytes_a_total() {
        let mut t = Totals::default();
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
