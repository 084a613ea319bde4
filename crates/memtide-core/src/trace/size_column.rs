//! The storages' sizes in 4 bytes each where they fit: below 4 GiB (nearly every tensor and
//! segment); a size of 4 GiB or more is kept whole on the side and reads back exactly.

use super::narrow::{Narrow, WIDE};

#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct SizeColumn {
    narrow: Narrow,
}

impl SizeColumn {
    pub(crate) fn reserve(&mut self, n: usize) {
        self.narrow.reserve(n);
    }

    pub(crate) fn push(&mut self, size: u64) {
        self.narrow.push(u32::try_from(size).ok(), size);
    }

    /// The size of storage `i` (0 past the end).
    #[inline]
    pub(crate) fn get(&self, i: usize) -> u64 {
        match self.narrow.word(i) {
            Some(s) if s != WIDE => u64::from(s),
            Some(_) => self.narrow.whole(i),
            None => 0,
        }
    }

    /// Sets the size of storage `i` (nothing past the end).
    pub(crate) fn set(&mut self, i: usize, size: u64) {
        self.narrow.set(i, u32::try_from(size).ok(), size);
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.narrow.heap_bytes()
    }
}

/// As the list of sizes (what a `Vec` of them prints).
impl std::fmt::Debug for SizeColumn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries((0..self.narrow.len()).map(|i| self.get(i)))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Sizes pushed and set over, below and above 4 GiB (u32::MAX itself included), read
        /// back as a plain vector holds them.
        #[test]
        fn sizes_read_back_as_set(
            sizes in prop::collection::vec(prop_oneof![
                4 => 0u64..1 << 20,
                1 => Just(u64::from(u32::MAX)),
                1 => Just(u64::from(u32::MAX) + 1),
                1 => any::<u64>(),
            ], 0..200),
            sets in prop::collection::vec((any::<usize>(), prop_oneof![0u64..9, Just(u64::MAX)]), 0..50),
        ) {
            let mut c = SizeColumn::default();
            let mut v = sizes.clone();
            for &s in &sizes {
                c.push(s);
            }
            for (i, s) in sets {
                let i = if v.is_empty() { i } else { i % (v.len() + 1) };
                c.set(i, s);
                if let Some(x) = v.get_mut(i) {
                    *x = s;
                }
            }
            for (i, &s) in v.iter().enumerate() {
                prop_assert_eq!(c.get(i), s);
            }
            prop_assert_eq!(c.get(v.len()), 0);
            prop_assert_eq!(format!("{c:?}"), format!("{v:?}"));
            prop_assert_eq!(c.narrow.wide_count(), v.iter().filter(|&&s| s >= u64::from(u32::MAX)).count());
        }
    }
}
