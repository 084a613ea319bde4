//! A device's trace entries, packed: 6 bytes an entry instead of 24, since the explorer
//! keeps every entry of every history (17 M entries of a 1 GB snapshot: 306 MB less).
//!
//! A training loop allocates the same few thousand addresses and a few dozen sizes again and
//! again (in the 79 histories of real snapshots others published that were measured, at most
//! 2,533 distinct addresses and 99 sizes). So each entry is its op, its place and the numbers
//! of its address and its size in two tables of the distinct values ([`Small`]). When a table
//! stops paying (more distinct values than an eighth of the entries, past 65,536, or past what
//! the bits number) or a place is 8 or more, every entry is packed again in 12 bytes
//! ([`Packed`]): its address in units of 512 below 2^49, its size below 2^31 or a multiple of
//! 512 below 2^40, its place below 2^20; any other entry (an OOM's free-bytes figure in `addr`,
//! a hostile file's odd numbers) is then kept whole on the side. Either way every entry reads
//! back exactly as it was pushed.

use super::replay::{Entry, Op};
use rustc_hash::FxHashMap;
use std::ops::Range;

/// Every op, at its number in an entry.
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

/// One entry in six bytes: the op (4 bits), the place (3 bits), the address's number in
/// the address table (22 bits) and the size's in the size table (19 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Small([u16; 3]);

const _: () = assert!(std::mem::size_of::<Small>() == 6);

const SMALL_PLACE_BITS: u32 = 3;
const SMALL_ADDR_BITS: u32 = 22;
const SMALL_SIZE_BITS: u32 = 19;
const _: () = assert!(4 + SMALL_PLACE_BITS + SMALL_ADDR_BITS + SMALL_SIZE_BITS == 48);

impl Small {
    fn new(op: Op, place: u32, addr: u32, size: u32) -> Small {
        let bits = op as u64
            | u64::from(place) << 4
            | u64::from(addr) << (4 + SMALL_PLACE_BITS)
            | u64::from(size) << (4 + SMALL_PLACE_BITS + SMALL_ADDR_BITS);
        Small([bits as u16, (bits >> 16) as u16, (bits >> 32) as u16])
    }

    /// (op number, place, address number, size number).
    fn fields(self) -> (usize, u32, usize, usize) {
        let [a, b, c] = self.0;
        let bits = u64::from(a) | u64::from(b) << 16 | u64::from(c) << 32;
        let field = |shift: u32, width: u32| (bits >> shift) & ((1 << width) - 1);
        (
            field(0, 4) as usize,
            field(4, SMALL_PLACE_BITS) as u32,
            field(4 + SMALL_PLACE_BITS, SMALL_ADDR_BITS) as usize,
            field(4 + SMALL_PLACE_BITS + SMALL_ADDR_BITS, SMALL_SIZE_BITS) as usize,
        )
    }
}

/// The distinct values of one field, each numbered once (in the order first seen).
#[derive(Clone, Debug, Default)]
struct Table {
    values: Vec<u64>,
    number: FxHashMap<u64, u32>,
}

impl Table {
    /// The number of `v`, numbering it if it is new and the table may grow.
    fn number_of(&mut self, v: u64, may_grow: bool) -> Option<u32> {
        if let Some(&n) = self.number.get(&v) {
            return Some(n);
        }
        if !may_grow {
            return None;
        }
        let n = u32::try_from(self.values.len()).ok()?;
        self.values.push(v);
        self.number.insert(v, n);
        Some(n)
    }

    fn value(&self, n: usize) -> u64 {
        // A number pushed with its value: always there.
        self.values.get(n).copied().unwrap_or(0)
    }
}

/// Distinct values a table always may hold (past this, only while they are at most an
/// eighth of the entries: a table costs about 30 bytes a value, an entry saves 6).
const TABLE_PAYS_UP_TO: usize = 1 << 16;

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
        let Some(&op) = OPS.get(self.op_bits() as usize) else {
            return Err((u64::from(lo) | u64::from(size) << 32) as usize);
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
#[derive(Clone)]
pub struct Entries {
    /// While the tables pay: every entry in six bytes.
    small: Vec<Small>,
    addrs: Table,
    sizes: Table,
    /// Distinct values a table always may hold ([`TABLE_PAYS_UP_TO`]; tests use fewer).
    table_floor: usize,
    /// Once they do not: every entry in twelve bytes, and (`is_packed`) never small again.
    packed: Vec<Packed>,
    /// The packed entries that do not fit in three words, in order.
    wide: Vec<Entry>,
    is_packed: bool,
}

impl Default for Entries {
    fn default() -> Self {
        Entries::with_table_floor(TABLE_PAYS_UP_TO)
    }
}

impl PartialEq for Entries {
    /// The same entries (however they are kept).
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for Entries {}

impl std::fmt::Debug for Entries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Entries {
    pub fn new() -> Self {
        Entries::default()
    }

    fn with_table_floor(table_floor: usize) -> Self {
        Entries {
            small: Vec::new(),
            addrs: Table::default(),
            sizes: Table::default(),
            table_floor,
            packed: Vec::new(),
            wide: Vec::new(),
            is_packed: false,
        }
    }

    pub fn len(&self) -> usize {
        match self.is_packed {
            true => self.packed.len(),
            false => self.small.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Room for `n` more entries.
    pub fn reserve(&mut self, n: usize) {
        match self.is_packed {
            true => self.packed.reserve(n),
            false => self.small.reserve(n),
        }
    }

    pub fn push(&mut self, e: Entry) {
        if !self.is_packed {
            match self.small_of(&e) {
                Some(s) => {
                    self.small.push(s);
                    return;
                }
                None => self.pack_all(),
            }
        }
        self.push_packed(e);
    }

    /// `e` in six bytes, numbering its address and size, while the tables pay.
    fn small_of(&mut self, e: &Entry) -> Option<Small> {
        if e.place >= 1 << SMALL_PLACE_BITS {
            return None;
        }
        let grows = |t: &Table, bits: u32, entries: usize, floor: usize| {
            let n = t.values.len();
            n < 1 << bits && (n < floor || n < entries / 8)
        };
        let entries = self.small.len();
        let a_grows = grows(&self.addrs, SMALL_ADDR_BITS, entries, self.table_floor);
        let s_grows = grows(&self.sizes, SMALL_SIZE_BITS, entries, self.table_floor);
        let addr = self.addrs.number_of(e.addr, a_grows)?;
        let size = self.sizes.number_of(e.size, s_grows)?;
        Some(Small::new(e.op, e.place, addr, size))
    }

    /// The same entries kept in twelve bytes (no address table: a replay of them finds
    /// each address in a tree).
    #[cfg(test)]
    pub(crate) fn packed_copy(&self) -> Entries {
        let mut e = self.clone();
        if !e.is_packed {
            e.pack_all();
        }
        e
    }

    /// Every entry from now on in twelve bytes: those pushed so far are packed again and
    /// the tables dropped.
    fn pack_all(&mut self) {
        let small = std::mem::take(&mut self.small);
        self.packed.reserve(small.len());
        for s in small {
            let e = self.read_small(s);
            self.push_packed(e);
        }
        self.addrs = Table::default();
        self.sizes = Table::default();
        self.is_packed = true;
    }

    fn push_packed(&mut self, e: Entry) {
        let p = Packed::of(&e).unwrap_or_else(|| {
            self.wide.push(e);
            Packed::wide(self.wide.len() - 1)
        });
        self.packed.push(p);
    }

    /// Entry `i`.
    pub fn get(&self, i: usize) -> Option<Entry> {
        match self.is_packed {
            true => self.packed.get(i).map(|&p| self.read(p)),
            false => self.small.get(i).map(|&s| self.read_small(s)),
        }
    }

    /// The distinct addresses the entries name (in the order first seen), while every entry
    /// is kept in six bytes; None once they are not (then there are too many to list).
    pub(crate) fn addresses(&self) -> Option<&[u64]> {
        (!self.is_packed).then_some(self.addrs.values.as_slice())
    }

    /// The number of `addr` in [`Entries::addresses`] (None: not named, or no list).
    pub(crate) fn address_number(&self, addr: u64) -> Option<u32> {
        match self.is_packed {
            true => None,
            false => self.addrs.number.get(&addr).copied(),
        }
    }

    /// Entries `r` (clamped to them), each with its address's number in
    /// [`Entries::addresses`] while there is that list: a replay then finds the address's
    /// slot without hashing it.
    pub(crate) fn numbered(
        &self,
        r: Range<usize>,
    ) -> impl Iterator<Item = (Entry, Option<u32>)> + '_ {
        let end = r.end.min(self.len());
        let r = r.start.min(end)..end;
        let (small, packed): (&[Small], &[Packed]) = match self.is_packed {
            true => (&[], self.packed.get(r).unwrap_or_default()),
            false => (self.small.get(r).unwrap_or_default(), &[]),
        };
        small
            .iter()
            .map(|&s| {
                let (_, _, addr, _) = s.fields();
                (self.read_small(s), Some(addr as u32))
            })
            .chain(packed.iter().map(|&p| (self.read(p), None)))
    }

    /// Keeps the first `n` entries.
    pub fn truncate(&mut self, n: usize) {
        if !self.is_packed {
            // (Values only the dropped entries named stay numbered: harmless.)
            self.small.truncate(n);
            return;
        }
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
            front: 0,
            back: self.len(),
        }
    }

    /// Entries `r` (None when `r` is not within them, as a slice's `get`).
    pub fn range(&self, r: Range<usize>) -> Option<Iter<'_>> {
        (r.start <= r.end && r.end <= self.len()).then_some(Iter {
            entries: self,
            front: r.start,
            back: r.end,
        })
    }

    fn read_small(&self, s: Small) -> Entry {
        let (op, place, addr, size) = s.fields();
        Entry {
            addr: self.addrs.value(addr),
            size: self.sizes.value(size),
            place,
            op: OPS.get(op).copied().unwrap_or(Op::Other),
        }
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
    /// The next entry from the front, and one past the next from the back.
    front: usize,
    back: usize,
}

impl Iterator for Iter<'_> {
    type Item = Entry;
    fn next(&mut self) -> Option<Entry> {
        if self.front >= self.back {
            return None;
        }
        self.front += 1;
        self.entries.get(self.front - 1)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.back.saturating_sub(self.front);
        (n, Some(n))
    }
}

impl DoubleEndedIterator for Iter<'_> {
    fn next_back(&mut self) -> Option<Entry> {
        if self.front >= self.back {
            return None;
        }
        self.back -= 1;
        self.entries.get(self.back)
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Entries kept in twelve bytes from the first.
    fn packed_from(v: Vec<Entry>) -> Entries {
        let mut e = Entries::new();
        e.pack_all();
        e.extend(v);
        e
    }

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
            keep in 0usize..3,
        ) {
            // Kept in six bytes (tables that always pay), in six until the tables stop
            // paying after two values, or in twelve from the first.
            let mut e = match keep {
                0 => Entries::from(v.clone()),
                1 => {
                    let mut e = Entries::with_table_floor(2);
                    e.extend(v.iter().copied());
                    e
                }
                _ => packed_from(v.clone()),
            };
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
        let e = packed_from(vec![fits, odd, fits]);
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

    /// A training loop's entries (a few thousand addresses, a hundred sizes, a few places)
    /// take six bytes each however many there are; entries that number a new address or
    /// size nearly every time, or a ninth place, go to twelve bytes, and all read back.
    #[test]
    fn loop_shaped_entries_take_six_bytes_and_the_rest_twelve() {
        let shaped = |i: u64| Entry {
            addr: 0x7f00_0000_0000 + (i * 7919 % 3000) * 2048,
            size: 512 * (1 + i % 100),
            place: (i % 5) as u32,
            op: OPS[(i % OPS.len() as u64) as usize],
        };
        let mut e = Entries::new();
        e.extend((0..300_000).map(shaped));
        assert!(!e.is_packed, "a loop's entries stay small");
        assert_eq!(e.small.len(), 300_000);
        assert_eq!((e.addrs.values.len(), e.sizes.values.len()), (3000, 100));
        assert!(e.iter().zip((0..).map(shaped)).all(|(a, b)| a == b));

        // Every address new: the table pays up to its floor, then stops.
        let fresh = |i: u64| Entry {
            addr: i * 512,
            ..shaped(i)
        };
        let mut e = Entries::new();
        e.extend((0..200_000).map(fresh));
        assert!(e.is_packed && e.small.is_empty() && e.addrs.values.is_empty());
        assert_eq!(e.packed.len(), 200_000);
        assert!(e.iter().zip((0..).map(fresh)).all(|(a, b)| a == b));

        // A ninth place.
        let mut e = Entries::from(vec![
            shaped(1),
            Entry {
                place: 8,
                ..shaped(2)
            },
            shaped(3),
        ]);
        assert!(e.is_packed);
        e.push(shaped(4));
        assert_eq!(
            e.iter().collect::<Vec<_>>(),
            vec![
                shaped(1),
                Entry {
                    place: 8,
                    ..shaped(2)
                },
                shaped(3),
                shaped(4)
            ]
        );
    }
}
