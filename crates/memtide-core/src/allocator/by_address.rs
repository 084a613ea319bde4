//! A value per address of a history, kept in a vector by the address's number in the
//! entries' table ([`Entries::addresses`]) where the table has it, else in a hash map: a
//! pass over millions of entries that tracks each address (live, freed, pending) then
//! hashes nothing while the table lasts.

use super::entries::Entries;
use rustc_hash::FxHashMap;

pub(crate) struct ByAddress<'a, T: Copy> {
    entries: &'a Entries,
    /// By table number.
    numbered: Vec<Option<T>>,
    /// Addresses the table does not have (every address once the entries are not kept in
    /// six bytes).
    others: FxHashMap<u64, T>,
}

impl<'a, T: Copy> ByAddress<'a, T> {
    /// Nothing yet, for the addresses of `entries`.
    pub(crate) fn new(entries: &'a Entries) -> Self {
        ByAddress {
            entries,
            numbered: vec![None; entries.addresses().map_or(0, <[u64]>::len)],
            others: FxHashMap::default(),
        }
    }

    /// `addr`'s slot in the vector: its number `n` as an entry gave it (checked), else the
    /// table's (one lookup); None when the table does not have it.
    fn slot(&self, addr: u64, n: Option<u32>) -> Option<usize> {
        let by_table = |n: u32| {
            let i = n as usize;
            (self.entries.addresses()?.get(i) == Some(&addr)).then_some(i)
        };
        n.and_then(by_table)
            .or_else(|| self.entries.address_number(addr).and_then(by_table))
    }

    /// The value at `addr` (`n`: its number, when the entry read gave one).
    pub(crate) fn get(&self, addr: u64, n: Option<u32>) -> Option<T> {
        match self.slot(addr, n) {
            Some(i) => self.numbered.get(i).copied().flatten(),
            None => self.others.get(&addr).copied(),
        }
    }

    /// Sets the value at `addr`, giving the one it replaces.
    pub(crate) fn insert(&mut self, addr: u64, n: Option<u32>, v: T) -> Option<T> {
        match self.slot(addr, n) {
            Some(i) => self.numbered.get_mut(i).and_then(|s| s.replace(v)),
            None => self.others.insert(addr, v),
        }
    }

    /// Takes the value at `addr` away.
    pub(crate) fn remove(&mut self, addr: u64, n: Option<u32>) -> Option<T> {
        match self.slot(addr, n) {
            Some(i) => self.numbered.get_mut(i).and_then(Option::take),
            None => self.others.remove(&addr),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::allocator::replay::{Entry, Op};
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        /// It answers as a hash map by address does, whether the entries are numbered or
        /// packed, an address is given with its number, without one, or with a wrong one.
        #[test]
        fn answers_as_a_map_by_address(
            addrs in proptest::collection::vec(0u64..64, 1..50),
            steps in proptest::collection::vec((0u64..80, 0u8..3, 0u8..3, any::<u16>()), 0..200),
            packed in any::<bool>(),
        ) {
            let entries: Entries = addrs
                .iter()
                .map(|&a| Entry { addr: a << 9, size: 512, place: 0, op: Op::Alloc })
                .collect();
            let entries = if packed { entries.packed_copy() } else { entries };
            let mut m: ByAddress<u16> = ByAddress::new(&entries);
            let mut want: HashMap<u64, u16> = HashMap::new();
            for (a, what, how, v) in steps {
                let addr = a << 9;
                let n = match how {
                    0 => entries.address_number(addr),
                    1 => None,
                    _ => Some(a as u32),
                };
                match what {
                    0 => prop_assert_eq!(m.insert(addr, n, v), want.insert(addr, v)),
                    1 => prop_assert_eq!(m.remove(addr, n), want.remove(&addr)),
                    _ => prop_assert_eq!(m.get(addr, n), want.get(&addr).copied()),
                }
            }
        }
    }
}
