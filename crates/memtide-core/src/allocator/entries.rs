//! A device's trace entries, packed: 12 bytes an entry instead of 24, since the explorer
//! keeps every entry of every history (1.5 M entries of a 220 MB snapshot: 18 MB less).
//!
//! An entry fits when its address is a multiple of 512 below 2^49 (every block and segment
//! address the caching allocator hands out), its size is below 2^31 or a multiple of 512
//! below 2^40, and its place is below 2^20. Any other entry (an OOM's free-bytes figure in
//! `addr`, a hostile file's odd numbers) is kept whole on the side, so every entry reads
//! back exactly as it was pushed.

use super::replay::{Entry, Op};
use std::ops::Range;

/// Address and size units of a packed entry.
const UNIT_SHIFT: u32 = 9;
/// The op nibble of an entry kept whole on the side (its first and last words are its index
/// there).
const WIDE: u32 = 0xF;
/// Set in the size word when it counts units of 512 bytes rather than bytes.
const SIZE_IN_UNITS: u32 = 1 << 31;
const PLACE_BITS: u32 = 20;

/// One entry in three words: the address in units (low 32 bits; high 8 bits in `w[1]`),
/// op and place in `w[1]`, the size in `w[2]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Packed([u32; 3]);

const _: () = assert!(std::mem::size_of::<Packed>() == 12);

impl Packed {
    /// `e` in three words, if it fits.
    fn of(e: &Entry) -> Option<Packed> {
        if e.addr & ((1 << UNIT_SHIFT) - 1) != 0 || e.place >= 1 << PLACE_BITS {
            return None;
        }
        let units = e.addr >> UNIT_SHIFT;
        if units >= 1 << 40 {
            return None;
        }
        let size = if e.size < u64::from(SIZE_IN_UNITS) {
            e.size as u32
        } else if e.size & ((1 << UNIT_SHIFT) - 1) == 0
            && e.size >> UNIT_SHIFT < u64::from(SIZE_IN_UNITS)
        {
            SIZE_IN_UNITS | (e.size >> UNIT_SHIFT) as u32
        } else {
            return None;
        };
        let op = e.op as u32;
        Some(Packed([
            units as u32,
            (units >> 32) as u32 | op << 8 | e.place << 12,
            size,
        ]))
    }

    /// The slot of the entry kept at `index` on the side: the index's low 32 bits in the
    /// first word, its high bits in the size word (so no count of odd entries wraps).
    fn wide(index: usize) -> Packed {
        let index = index as u64;
        Packed([index as u32, WIDE << 8, (index >> 32) as u32])
    }

    fn op_bits(self) -> u32 {
        (self.0[1] >> 8) & 0xF
    }

    /// The entry, or the index of the one kept on the side.
    fn unpack(self) -> Result<Entry, usize> {
        let [lo, mid, size] = self.0;
        let op = match self.op_bits() {
            0 => Op::Alloc,
            1 => Op::FreeRequested,
            2 => Op::FreeCompleted,
            3 => Op::SegmentAlloc,
            4 => Op::SegmentFree,
            5 => Op::SegmentMap,
            6 => Op::SegmentUnmap,
            7 => Op::Oom,
            8 => Op::Other,
            _ => return Err((u64::from(lo) | u64::from(size) << 32) as usize),
        };
        let units = u64::from(lo) | u64::from(mid & 0xFF) << 32;
        let size = if size & SIZE_IN_UNITS != 0 {
            u64::from(size & !SIZE_IN_UNITS) << UNIT_SHIFT
        } else {
            u64::from(size)
        };
        Ok(Entry {
            addr: units << UNIT_SHIFT,
            size,
            place: mid >> 12,
            op,
        })
    }
}

/// A history's entries in trace order (entry i is event #i), packed.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Entries {
    packed: Vec<Packed>,
    /// The entries that do not fit in three words, in order.
    wide: Vec<Entry>,
}

impl std::fmt::Debug for Entries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Entries {
    pub fn new() -> Self {
        Entries::default()
    }

    pub fn len(&self) -> usize {
        self.packed.len()
    }

    pub fn is_empty(&self) -> bool {
        self.packed.is_empty()
    }

    /// Room for `n` more entries.
    pub fn reserve(&mut self, n: usize) {
        self.packed.reserve(n);
    }

    pub fn push(&mut self, e: Entry) {
        let p = Packed::of(&e).unwrap_or_else(|| {
            self.wide.push(e);
            Packed::wide(self.wide.len() - 1)
        });
        self.packed.push(p);
    }

    /// Entry `i`.
    pub fn get(&self, i: usize) -> Option<Entry> {
        self.packed.get(i).map(|&p| self.read(p))
    }

    /// Keeps the first `n` entries.
    pub fn truncate(&mut self, n: usize) {
        if let Some(first_wide) = self
            .packed
            .get(n..)
            .unwrap_or_default()
            .iter()
            .find_map(|p| p.unpack().err())
        {
            self.wide.truncate(first_wide);
        }
        self.packed.truncate(n);
    }

    /// Every entry, in order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            entries: self,
            slots: self.packed.iter(),
        }
    }

    /// Entries `r` (None when `r` is not within them, as a slice's `get`).
    pub fn range(&self, r: Range<usize>) -> Option<Iter<'_>> {
        Some(Iter {
            entries: self,
            slots: self.packed.get(r)?.iter(),
        })
    }

    fn read(&self, p: Packed) -> Entry {
        p.unpack().unwrap_or_else(|i| {
            // A wide slot names an entry pushed with it: always there.
            self.wide.get(i).copied().unwrap_or(Entry {
                addr: 0,
                size: 0,
                place: 0,
                op: Op::Other,
            })
        })
    }
}

impl From<Vec<Entry>> for Entries {
    fn from(v: Vec<Entry>) -> Self {
        v.into_iter().collect()
    }
}

impl FromIterator<Entry> for Entries {
    fn from_iter<I: IntoIterator<Item = Entry>>(it: I) -> Self {
        let mut e = Entries::new();
        e.extend(it);
        e
    }
}

impl Extend<Entry> for Entries {
    fn extend<I: IntoIterator<Item = Entry>>(&mut self, it: I) {
        let it = it.into_iter();
        self.reserve(it.size_hint().0);
        for e in it {
            self.push(e);
        }
    }
}

impl<'a> IntoIterator for &'a Entries {
    type Item = Entry;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// Entries read back in order (either way).
#[derive(Clone)]
pub struct Iter<'a> {
    entries: &'a Entries,
    slots: std::slice::Iter<'a, Packed>,
}

impl Iterator for Iter<'_> {
    type Item = Entry;
    fn next(&mut self) -> Option<Entry> {
        self.slots.next().map(|&p| self.entries.read(p))
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        self.slots.size_hint()
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Entry> {
        self.slots.next_back().map(|&p| self.entries.read(p))
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const OPS: [Op; 9] = [
        Op::Alloc,
        Op::FreeRequested,
        Op::FreeCompleted,
        Op::SegmentAlloc,
        Op::SegmentFree,
        Op::SegmentMap,
        Op::SegmentUnmap,
        Op::Oom,
        Op::Other,
    ];

    /// Numbers near every edge of the packing, and any.
    fn number() -> impl Strategy<Value = u64> {
        prop_oneof![
            any::<u64>(),
            (0u64..1 << 40).prop_map(|u| u << 9),
            (0u64..1 << 31),
            Just((1 << 31) - 1),
            Just(1 << 31),
            Just(((1u64 << 31) - 1) << 9),
            Just((1u64 << 31) << 9),
            Just(((1u64 << 40) - 1) << 9),
            Just((1u64 << 40) << 9),
            Just(u64::MAX),
            Just(0),
            Just(511),
            Just(513),
        ]
    }

    fn entry() -> impl Strategy<Value = Entry> {
        (
            number(),
            number(),
            prop_oneof![0u32..4, Just((1 << 20) - 1), Just(1 << 20), any::<u32>()],
            0usize..OPS.len(),
        )
            .prop_map(|(addr, size, place, op)| Entry {
                addr,
                size,
                place,
                op: OPS[op],
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        /// Whatever is pushed reads back exactly, by index, forwards, backwards, by range
        /// and after a truncation, as a plain vector of the same entries does.
        #[test]
        fn entries_read_back_as_the_plain_vector(
            v in prop::collection::vec(entry(), 0..60),
            cut in 0usize..70,
            more in prop::collection::vec(entry(), 0..5),
            a in 0usize..70,
            b in 0usize..70,
        ) {
            let mut e = Entries::from(v.clone());
            prop_assert_eq!(e.len(), v.len());
            prop_assert_eq!(e.iter().collect::<Vec<_>>(), v.clone());
            prop_assert_eq!(e.iter().rev().collect::<Vec<_>>(), v.iter().rev().copied().collect::<Vec<_>>());
            for (i, x) in v.iter().enumerate() {
                prop_assert_eq!(e.get(i), Some(*x));
            }
            prop_assert_eq!(e.get(v.len()), None);
            prop_assert_eq!(
                e.range(a..b).map(|r| r.collect::<Vec<_>>()),
                v.get(a..b).map(<[Entry]>::to_vec)
            );
            let mut w = v.clone();
            e.truncate(cut);
            w.truncate(cut);
            e.extend(more.iter().copied());
            w.extend(more.iter().copied());
            prop_assert_eq!(e.iter().collect::<Vec<_>>(), w.clone());
            prop_assert_eq!(&e, &Entries::from(w.clone()), "a truncation leaves no stale wide entry");
            prop_assert_eq!(format!("{e:?}"), format!("{w:?}"));
        }
    }

    #[test]
    fn allocator_shaped_entries_take_twelve_bytes_and_odd_ones_are_kept_whole() {
        let fits = Entry {
            addr: 0x7f12_3456_7000,
            size: 20 << 30,
            place: 3,
            op: Op::SegmentAlloc,
        };
        let odd = Entry {
            addr: 79_999_999_999,
            size: 1 << 30,
            place: 0,
            op: Op::Oom,
        };
        assert!(Packed::of(&fits).is_some());
        assert!(
            Packed::of(&Entry { size: 4, ..fits }).is_some(),
            "a small size is kept exactly"
        );
        assert!(Packed::of(&odd).is_none());
        let e = Entries::from(vec![fits, odd, fits]);
        assert_eq!(e.wide, vec![odd]);
        for index in [
            0usize,
            7,
            u32::MAX as usize,
            (u32::MAX as usize) + 5,
            1 << 40,
        ] {
            assert_eq!(
                Packed::wide(index).unpack(),
                Err(index),
                "wide slot {index}"
            );
        }
        assert_eq!(e.iter().collect::<Vec<_>>(), vec![fits, odd, fits]);
    }
}
