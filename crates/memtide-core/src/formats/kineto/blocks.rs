//! The `[memory]` events of a pass, kept in fixed-size blocks: pushing never copies what is
//! already stored, and a block is freed as soon as the replay has used every event in it, so
//! the events and the trace built from them are not all in memory at once.

use std::ops::Index;

/// Events per block (a block of 56-byte events is 3.5 MiB).
const BLOCK_BITS: u32 = 16;
const BLOCK: usize = 1 << BLOCK_BITS;

/// A vector in blocks; `used` frees blocks whose events have all been used.
#[derive(Debug)]
pub(crate) struct Blocks<T> {
    blocks: Vec<Vec<T>>,
    len: usize,
    /// Per block, how many of its events are not yet used (filled on the first `used`).
    left: Vec<u32>,
}

impl<T> Default for Blocks<T> {
    fn default() -> Self {
        Blocks {
            blocks: Vec::new(),
            len: 0,
            left: Vec::new(),
        }
    }
}

impl<T> Blocks<T> {
    pub fn push(&mut self, v: T) {
        if self.len.is_multiple_of(BLOCK) {
            self.blocks.push(Vec::with_capacity(BLOCK));
        }
        if let Some(b) = self.blocks.last_mut() {
            b.push(v);
            self.len += 1;
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Event `i`; None when out of range or its block was freed.
    pub fn get(&self, i: usize) -> Option<&T> {
        self.blocks.get(i >> BLOCK_BITS)?.get(i & (BLOCK - 1))
    }

    /// Every event still stored, in order.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.blocks.iter().flatten()
    }

    /// Notes that event `i` is used for the last time; frees its block once all of the
    /// block's events are. Each event must be noted at most once.
    pub fn used(&mut self, i: usize) {
        if self.left.is_empty() {
            self.left = self.blocks.iter().map(|b| b.len() as u32).collect();
        }
        let b = i >> BLOCK_BITS;
        let Some(left) = self.left.get_mut(b) else {
            return;
        };
        *left = left.saturating_sub(1);
        if *left == 0 {
            if let Some(block) = self.blocks.get_mut(b) {
                *block = Vec::new();
            }
        }
    }
}

impl<T> Index<usize> for Blocks<T> {
    type Output = T;
    /// Panics, like a slice, when `i` is out of range (or its block was freed).
    fn index(&self, i: usize) -> &T {
        &self.blocks[i >> BLOCK_BITS][i & (BLOCK - 1)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_index_iterate_and_free() {
        let mut b = Blocks::default();
        let n = BLOCK * 2 + 5;
        for i in 0..n {
            b.push(i as u64);
        }
        assert_eq!(b.len(), n);
        assert_eq!(b[BLOCK + 3], (BLOCK + 3) as u64);
        assert_eq!(b.iter().count(), n);
        assert!(b.iter().copied().eq(0..n as u64));
        // Using all of the first block (in any order) frees it, and only it.
        for i in (0..BLOCK).rev() {
            assert!(b.get(i).is_some());
            b.used(i);
        }
        assert!(b.get(0).is_none());
        assert_eq!(b.get(BLOCK), Some(&(BLOCK as u64)));
        assert_eq!(b.len(), n);
        for i in BLOCK * 2..n {
            b.used(i);
        }
        assert!(b.get(BLOCK * 2).is_none());
        assert_eq!(b.iter().count(), BLOCK);
    }
}
