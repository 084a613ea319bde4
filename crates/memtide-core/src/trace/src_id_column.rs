//! The storages' source ids (a snapshot's block address, a JSONL tensor id) in 4 bytes each
//! where they fit: a small id below 2^31 − 1 as it is; an address that is a multiple of 512
//! as its units counted from a base within 512 GiB below the first such address (one
//! device's blocks lie in a few hundred GiB of address space); anything else kept whole on
//! the side. Every id reads back exactly.

use super::narrow::{Narrow, WIDE};

/// Set on a small id kept as it is.
const SMALL: u32 = 1 << 31;
/// Address units: 512 bytes.
const UNIT_SHIFT: u32 = 9;
/// Units below the first address that the base lies (512 GiB).
const BELOW_FIRST: u64 = 1 << 30;

#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct SrcIdColumn {
    narrow: Narrow,
    /// The base of the address units (set by the first address kept in units).
    base_units: Option<u64>,
}

impl SrcIdColumn {
    pub(crate) fn reserve(&mut self, n: usize) {
        self.narrow.reserve(n);
    }

    pub(crate) fn push(&mut self, id: u64) {
        let word = self.narrow_of(id);
        self.narrow.push(word, id);
    }

    /// `id` in 4 bytes, if it fits (numbering the address units from a base on the first).
    fn narrow_of(&mut self, id: u64) -> Option<u32> {
        if id < u64::from(SMALL - 1) {
            return Some(SMALL | id as u32);
        }
        if id & ((1 << UNIT_SHIFT) - 1) != 0 {
            return None;
        }
        let units = id >> UNIT_SHIFT;
        let base = *self
            .base_units
            .get_or_insert(units.saturating_sub(BELOW_FIRST));
        units
            .checked_sub(base)
            .and_then(|u| u32::try_from(u).ok())
            .filter(|&u| u < SMALL)
    }

    /// The id of storage `i` (None past the end).
    #[inline]
    pub(crate) fn get(&self, i: usize) -> Option<u64> {
        let n = self.narrow.word(i)?;
        Some(if n == WIDE {
            self.narrow.whole(i)
        } else if n & SMALL != 0 {
            u64::from(n & !SMALL)
        } else {
            (self.base_units.unwrap_or(0) + u64::from(n)) << UNIT_SHIFT
        })
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.narrow.heap_bytes()
    }
}

/// As the list of ids (what a `Vec` of them prints).
impl std::fmt::Debug for SrcIdColumn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries((0..self.narrow.len()).filter_map(|i| self.get(i)))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Ids near every edge of the packing: small ones up to 2^31, addresses in units around
    /// a first address, odd and huge values.
    fn id() -> impl Strategy<Value = u64> {
        prop_oneof![
            4 => 0u64..1 << 20,
            1 => Just(u64::from(SMALL) - 2),
            1 => Just(u64::from(SMALL) - 1),
            1 => Just(u64::from(SMALL)),
            4 => (0x7f00_0000u64..0x7f00_2000).prop_map(|u| u << UNIT_SHIFT),
            1 => (0u64..1 << 40).prop_map(|u| u << UNIT_SHIFT),
            1 => Just(u64::MAX),
            1 => Just(u64::MAX - 511),
            1 => any::<u64>(),
        ]
    }

    proptest! {
        /// Whatever ids are pushed read back as a plain vector holds them, and only those
        /// that do not fit are kept on the side.
        #[test]
        fn ids_read_back_as_pushed(ids in prop::collection::vec(id(), 0..200)) {
            let mut c = SrcIdColumn::default();
            for &x in &ids {
                c.push(x);
            }
            prop_assert_eq!(c.narrow.len(), ids.len());
            for (i, &x) in ids.iter().enumerate() {
                prop_assert_eq!(c.get(i), Some(x));
            }
            prop_assert_eq!(c.get(ids.len()), None);
            prop_assert_eq!(format!("{c:?}"), format!("{ids:?}"));
            let small = ids.iter().filter(|&&x| x < u64::from(SMALL - 1)).count();
            prop_assert!(c.narrow.wide_count() <= ids.len() - small);
        }
    }

    /// A device's block addresses (aligned, within a few hundred GiB of the first, some
    /// below it) take 4 bytes each; an OOM's odd figure and an address 1 TiB away go aside.
    #[test]
    fn a_devices_addresses_take_four_bytes() {
        let first = 0x7f4a_2000_0000u64;
        let mut c = SrcIdColumn::default();
        let ids: Vec<u64> = (0..10_000u64)
            .map(|i| first + (i * 7919 % 400_000) * 512 * 1024 - (100 << 30))
            .collect();
        let odd = [79_999_999_999u64 | 1, first + (1 << 40)];
        c.push(first);
        for &x in ids.iter().chain(&odd) {
            c.push(x);
        }
        assert_eq!(c.narrow.wide_count(), 2, "only the odd ones aside");
        assert_eq!(c.get(0), Some(first));
        for (i, &x) in ids.iter().chain(&odd).enumerate() {
            assert_eq!(c.get(i + 1), Some(x));
        }
    }
}
