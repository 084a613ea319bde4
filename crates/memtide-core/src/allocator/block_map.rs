//! The active blocks of a [`super::State`] by address: an ordered map that answers what the
//! replay asks of it on every entry — the block at an address, the nearest block at or below
//! one, the first in a range — in a few word operations instead of a tree search.
//!
//! A training loop allocates at the same few thousand addresses again and again, and a
//! history knows them before it is replayed: a map made [`BlockMap::over`] those addresses
//! keeps each block in a slot numbered by its address's rank, with a bit per slot in a
//! bitset of a few levels (one bit above per word below), so the nearest occupied slot is
//! found by scanning a word per level. A block at any other address goes to a tree beside
//! it, and every query merges the two: the map answers as a plain ordered map would, whatever
//! addresses it is given, and [`BlockMap::default`] is that tree alone.

use super::state::Active;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The addresses a map keeps in slots: sorted, each with its rank; and the rank of each
/// address of a numbered list (a history's address table), found without hashing.
#[derive(Debug, Default)]
struct Universe {
    sorted: Vec<u64>,
    rank: FxHashMap<u64, u32>,
    of_number: Vec<u32>,
}

/// An address located among a map's slots once, for several queries at it (a replayed
/// allocation asks for its free run, then for what it overlaps, then is inserted).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Loc {
    pub(crate) addr: u64,
    /// Its slot, when the map keeps blocks at it in one.
    rank: Option<u32>,
    /// How many slots are for lower addresses.
    below: usize,
}

impl Loc {
    /// Slots for addresses at or below it.
    fn at_or_below(&self) -> usize {
        self.below + usize::from(self.rank.is_some())
    }
}

impl Universe {
    /// `addr`, number `n` of the numbered list.
    fn locate_number(&self, addr: u64, n: u32) -> Loc {
        match self.of_number.get(n as usize) {
            Some(&r) if self.sorted.get(r as usize) == Some(&addr) => Loc {
                addr,
                rank: Some(r),
                below: r as usize,
            },
            _ => self.locate(addr),
        }
    }

    fn locate(&self, addr: u64) -> Loc {
        match self.rank.get(&addr) {
            Some(&r) => Loc {
                addr,
                rank: Some(r),
                below: r as usize,
            },
            None => Loc {
                addr,
                rank: None,
                below: self.sorted.partition_point(|&u| u < addr),
            },
        }
    }
}

/// A set of slot numbers in levels of 64-bit words: level 0 has a bit per slot, each level
/// above a bit per word of the one below (set when that word is not empty).
#[derive(Clone, Debug, Default)]
struct Bits {
    levels: Vec<Vec<u64>>,
}

impl Bits {
    fn new(n: usize) -> Bits {
        let mut levels = Vec::new();
        let mut words = n.div_ceil(64).max(1);
        loop {
            levels.push(vec![0u64; words]);
            if words == 1 {
                break;
            }
            words = words.div_ceil(64);
        }
        Bits { levels }
    }

    fn contains(&self, i: usize) -> bool {
        self.levels
            .first()
            .and_then(|l| l.get(i >> 6))
            .is_some_and(|w| w >> (i & 63) & 1 == 1)
    }

    fn insert(&mut self, i: usize) {
        let mut i = i;
        for level in &mut self.levels {
            let Some(w) = level.get_mut(i >> 6) else {
                return;
            };
            let was_empty = *w == 0;
            *w |= 1 << (i & 63);
            if !was_empty {
                return;
            }
            i >>= 6;
        }
    }

    fn remove(&mut self, i: usize) {
        let mut i = i;
        for level in &mut self.levels {
            let Some(w) = level.get_mut(i >> 6) else {
                return;
            };
            *w &= !(1 << (i & 63));
            if *w != 0 {
                return;
            }
            i >>= 6;
        }
    }

    /// The greatest member below `end` (exclusive).
    fn last_below(&self, end: usize) -> Option<usize> {
        // Climb while the word holding `end - 1` has nothing at or below it, then come down
        // taking the highest bit of each word.
        let mut pos = end.checked_sub(1)?;
        let mut depth = 0;
        loop {
            let level = self.levels.get(depth)?;
            let w = level.get(pos >> 6).copied().unwrap_or(0);
            let masked = w & (u64::MAX >> (63 - (pos & 63)));
            if masked != 0 {
                pos = (pos & !63) | (63 - masked.leading_zeros() as usize);
                break;
            }
            pos = (pos >> 6).checked_sub(1)?;
            depth += 1;
        }
        while depth > 0 {
            depth -= 1;
            let w = self.levels.get(depth)?.get(pos)?;
            pos = (pos << 6) | (63 - w.leading_zeros() as usize);
        }
        Some(pos)
    }

    /// The least member at or above `start`.
    fn first_from(&self, start: usize) -> Option<usize> {
        let mut pos = start;
        let mut depth = 0;
        loop {
            let level = self.levels.get(depth)?;
            let w = *level.get(pos >> 6)?;
            let masked = w & (u64::MAX << (pos & 63));
            if masked != 0 {
                pos = (pos & !63) | masked.trailing_zeros() as usize;
                break;
            }
            pos = (pos >> 6) + 1;
            depth += 1;
        }
        while depth > 0 {
            depth -= 1;
            let w = self.levels.get(depth)?.get(pos)?;
            pos = (pos << 6) | w.trailing_zeros() as usize;
        }
        Some(pos)
    }
}

/// Active blocks by address (see the module's page).
#[derive(Clone, Default)]
pub(crate) struct BlockMap {
    universe: Arc<Universe>,
    /// The block of each ranked address (meaningful where `occupied` has its rank).
    slots: Vec<Active>,
    occupied: Bits,
    /// Blocks at addresses outside the universe.
    other: BTreeMap<u64, Active>,
    ranked: usize,
}

const EMPTY: Active = Active {
    size: 0,
    requested: 0,
    pending: false,
};

impl BlockMap {
    /// An empty map that keeps blocks in slots at the addresses of `numbered` (distinct,
    /// each known by its place in the list) and of `others` (any order, repeats allowed).
    pub(crate) fn over(numbered: &[u64], others: Vec<u64>) -> BlockMap {
        let mut sorted = others;
        sorted.extend_from_slice(numbered);
        sorted.sort_unstable();
        sorted.dedup();
        let rank: FxHashMap<u64, u32> = sorted
            .iter()
            .enumerate()
            .map(|(r, &a)| (a, r as u32))
            .collect();
        let of_number = numbered
            .iter()
            .map(|a| rank.get(a).copied().unwrap_or(u32::MAX))
            .collect();
        BlockMap::empty_in(Arc::new(Universe {
            sorted,
            rank,
            of_number,
        }))
    }

    /// An empty map keeping blocks in slots at the same addresses.
    pub(crate) fn empty_like(&self) -> BlockMap {
        BlockMap::empty_in(Arc::clone(&self.universe))
    }

    /// An empty map with a slot for each address of `universe`.
    fn empty_in(universe: Arc<Universe>) -> BlockMap {
        let n = universe.sorted.len();
        BlockMap {
            universe,
            slots: vec![EMPTY; n],
            occupied: Bits::new(n),
            other: BTreeMap::new(),
            ranked: 0,
        }
    }

    fn at_rank(&self, r: usize) -> Option<(u64, &Active)> {
        Some((*self.universe.sorted.get(r)?, self.slots.get(r)?))
    }

    pub(crate) fn len(&self) -> usize {
        self.ranked + self.other.len()
    }

    /// Whether the map keeps blocks in slots (else every block is in the tree).
    pub(crate) fn has_slots(&self) -> bool {
        !self.universe.sorted.is_empty()
    }

    /// `addr` located among the slots, for the `_at` queries.
    pub(crate) fn locate(&self, addr: u64) -> Loc {
        if !self.has_slots() {
            // No slots (a map for any address): the tree alone, as fast as a tree.
            return Loc {
                addr,
                rank: None,
                below: 0,
            };
        }
        self.universe.locate(addr)
    }

    /// `addr`, number `n` of the list the map was made [`BlockMap::over`], located.
    pub(crate) fn locate_number(&self, addr: u64, n: u32) -> Loc {
        self.universe.locate_number(addr, n)
    }

    pub(crate) fn get(&self, addr: u64) -> Option<&Active> {
        let at = self.locate(addr);
        match at.rank {
            Some(r) if self.occupied.contains(r as usize) => self.slots.get(r as usize),
            Some(_) => None,
            None => self.other.get(&addr),
        }
    }

    pub(crate) fn contains_key(&self, addr: u64) -> bool {
        self.get(addr).is_some()
    }

    /// The block at a located address, to change.
    pub(crate) fn get_mut_at(&mut self, at: &Loc) -> Option<&mut Active> {
        match at.rank {
            Some(r) if self.occupied.contains(r as usize) => self.slots.get_mut(r as usize),
            Some(_) => None,
            None => self.other.get_mut(&at.addr),
        }
    }

    pub(crate) fn insert(&mut self, addr: u64, b: Active) {
        let at = self.locate(addr);
        self.insert_at(&at, b);
    }

    /// [`BlockMap::insert`] at a located address.
    pub(crate) fn insert_at(&mut self, at: &Loc, b: Active) {
        match at.rank {
            Some(r) => {
                let r = r as usize;
                if let Some(s) = self.slots.get_mut(r) {
                    *s = b;
                    if !self.occupied.contains(r) {
                        self.occupied.insert(r);
                        self.ranked += 1;
                    }
                }
            }
            None => {
                self.other.insert(at.addr, b);
            }
        }
    }

    pub(crate) fn remove(&mut self, addr: u64) -> Option<Active> {
        let at = self.locate(addr);
        self.remove_at(&at)
    }

    /// [`BlockMap::remove`] at a located address.
    pub(crate) fn remove_at(&mut self, at: &Loc) -> Option<Active> {
        match at.rank {
            Some(r) if self.occupied.contains(r as usize) => {
                self.occupied.remove(r as usize);
                self.ranked -= 1;
                self.slots.get(r as usize).copied()
            }
            Some(_) => None,
            None => self.other.remove(&at.addr),
        }
    }

    /// The block at the greatest address at or below a located one.
    pub(crate) fn last_at_or_below_at(&self, at: &Loc) -> Option<(u64, &Active)> {
        let ranked = (self.ranked > 0)
            .then(|| self.occupied.last_below(at.at_or_below()))
            .flatten()
            .and_then(|r| self.at_rank(r));
        let other = self
            .other
            .range(..=at.addr)
            .next_back()
            .map(|(&a, b)| (a, b));
        later(ranked, other)
    }

    /// The block at the greatest address below `addr`.
    pub(crate) fn last_below(&self, addr: u64) -> Option<(u64, &Active)> {
        self.last_below_at(&self.locate(addr))
    }

    /// [`BlockMap::last_below`] a located address.
    pub(crate) fn last_below_at(&self, at: &Loc) -> Option<(u64, &Active)> {
        let ranked = (self.ranked > 0)
            .then(|| self.occupied.last_below(at.below))
            .flatten()
            .and_then(|r| self.at_rank(r));
        let other = self
            .other
            .range(..at.addr)
            .next_back()
            .map(|(&a, b)| (a, b));
        later(ranked, other)
    }

    /// The block at the least address in `[a, b)`, `a` located.
    pub(crate) fn first_in_at(&self, at: &Loc, b: u64) -> Option<(u64, &Active)> {
        let a = at.addr;
        if a >= b {
            return None;
        }
        let ranked = (self.ranked > 0)
            .then(|| self.occupied.first_from(at.below))
            .flatten()
            .and_then(|r| self.at_rank(r))
            .filter(|&(x, _)| x < b);
        let other = self.other.range(a..b).next().map(|(&x, v)| (x, v));
        match (ranked, other) {
            (Some(r), Some(o)) => Some(if o.0 < r.0 { o } else { r }),
            (r, o) => r.or(o),
        }
    }

    /// The blocks at addresses in `[a, b)`, ascending.
    pub(crate) fn range(&self, a: u64, b: u64) -> impl Iterator<Item = (u64, Active)> + '_ {
        let ranked = self
            .ranked_from(self.locate(a).below)
            .take_while(move |&(x, _)| x < b);
        let other = self.other.range(a..b.max(a)).map(|(&x, &v)| (x, v));
        Merge::ascending(ranked, other)
    }

    /// The blocks at addresses below a located one, descending.
    pub(crate) fn below_rev(&self, at: Loc) -> impl Iterator<Item = (u64, Active)> + '_ {
        let mut end = at.below;
        let ranked = std::iter::from_fn(move || {
            let r = (self.ranked > 0).then(|| self.occupied.last_below(end))??;
            end = r;
            self.at_rank(r).map(|(x, v)| (x, *v))
        });
        let other = self.other.range(..at.addr).rev().map(|(&x, &v)| (x, v));
        Merge::descending(ranked, other)
    }

    /// Every block, ascending.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (u64, Active)> + '_ {
        let other = self.other.iter().map(|(&a, &v)| (a, v));
        Merge::ascending(self.ranked_from(0), other)
    }

    /// The blocks in slots from rank `r` on, ascending.
    fn ranked_from(&self, r: usize) -> impl Iterator<Item = (u64, Active)> + '_ {
        let mut from = r;
        std::iter::from_fn(move || {
            let r = self.occupied.first_from(from)?;
            from = r + 1;
            self.at_rank(r).map(|(a, v)| (a, *v))
        })
    }
}

/// The one of two candidates at the greater address.
fn later<'a>(
    x: Option<(u64, &'a Active)>,
    y: Option<(u64, &'a Active)>,
) -> Option<(u64, &'a Active)> {
    match (x, y) {
        (Some(p), Some(q)) => Some(if q.0 > p.0 { q } else { p }),
        (p, q) => p.or(q),
    }
}

/// Two runs of distinct addresses in the same order, merged.
struct Merge<A: Iterator, B: Iterator> {
    a: std::iter::Peekable<A>,
    b: std::iter::Peekable<B>,
    descending: bool,
}

impl<A, B> Merge<A, B>
where
    A: Iterator<Item = (u64, Active)>,
    B: Iterator<Item = (u64, Active)>,
{
    fn ascending(a: A, b: B) -> Self {
        Merge {
            a: a.peekable(),
            b: b.peekable(),
            descending: false,
        }
    }

    fn descending(a: A, b: B) -> Self {
        Merge {
            descending: true,
            ..Merge::ascending(a, b)
        }
    }
}

impl<A, B> Iterator for Merge<A, B>
where
    A: Iterator<Item = (u64, Active)>,
    B: Iterator<Item = (u64, Active)>,
{
    type Item = (u64, Active);

    fn next(&mut self) -> Option<(u64, Active)> {
        match (self.a.peek(), self.b.peek()) {
            (Some(x), Some(y)) if (y.0 < x.0) != self.descending => self.b.next(),
            (Some(_), _) => self.a.next(),
            (None, _) => self.b.next(),
        }
    }
}

impl FromIterator<(u64, Active)> for BlockMap {
    fn from_iter<I: IntoIterator<Item = (u64, Active)>>(iter: I) -> BlockMap {
        BlockMap {
            other: iter.into_iter().collect(),
            ..BlockMap::default()
        }
    }
}

/// Two maps are equal when they hold the same blocks, however they keep them.
impl PartialEq for BlockMap {
    fn eq(&self, other: &BlockMap) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for BlockMap {}

impl std::fmt::Debug for BlockMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn active(size: u64) -> Active {
        Active {
            size,
            requested: size,
            pending: false,
        }
    }

    #[derive(Clone, Debug)]
    enum Step {
        Insert(u64, u64),
        Remove(u64),
        Pend(u64),
    }

    fn step(addrs: Vec<u64>) -> impl Strategy<Value = Step> {
        let pick = proptest::sample::select(addrs);
        prop_oneof![
            (pick.clone(), 1u64..4096).prop_map(|(a, s)| Step::Insert(a, s)),
            pick.clone().prop_map(Step::Remove),
            pick.prop_map(Step::Pend),
        ]
    }

    /// Addresses in and out of the universe, a universe of up to a few thousand (bitsets of
    /// one, two and three levels), and queries at every address around them.
    fn case() -> impl Strategy<Value = (Vec<u64>, Vec<u64>, Vec<Step>)> {
        (
            proptest::collection::vec(0u64..10_000, 1..5000),
            proptest::collection::vec(0u64..10_000, 1..40),
        )
            .prop_flat_map(|(universe, extra)| {
                let all: Vec<u64> = universe.iter().chain(&extra).copied().collect();
                (
                    Just(universe),
                    Just(all.clone()),
                    proptest::collection::vec(step(all), 0..300),
                )
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Every query answers as a BTreeMap given the same steps does.
        #[test]
        fn answers_as_an_ordered_map((universe, probes, steps) in case()) {
            let (numbered, others) = universe.split_at(universe.len() / 2);
            let mut numbered = numbered.to_vec();
            numbered.sort_unstable();
            numbered.dedup();
            let mut m = BlockMap::over(&numbered, others.to_vec());
            let mut t: BTreeMap<u64, Active> = BTreeMap::new();
            // An address of the numbered list is located by its number (a wrong number, as
            // a stale list would give, falls back to the address); the others by address.
            let locate = |m: &BlockMap, a: u64, k: usize| match numbered.binary_search(&a) {
                Ok(i) => m.locate_number(a, i as u32),
                Err(_) if k.is_multiple_of(3) => m.locate_number(a, k as u32),
                Err(_) => m.locate(a),
            };
            for (k, s) in steps.iter().enumerate() {
                match *s {
                    Step::Insert(a, size) => {
                        let at = locate(&m, a, k);
                        m.insert_at(&at, active(size));
                        t.insert(a, active(size));
                    }
                    Step::Remove(a) if k.is_multiple_of(2) => {
                        let at = locate(&m, a, k);
                        prop_assert_eq!(m.remove_at(&at), t.remove(&a));
                    }
                    Step::Remove(a) => prop_assert_eq!(m.remove(a), t.remove(&a)),
                    Step::Pend(a) => {
                        let at = locate(&m, a, k);
                        if let Some(b) = m.get_mut_at(&at) {
                            b.pending = true;
                        }
                        if let Some(b) = t.get_mut(&a) {
                            b.pending = true;
                        }
                    }
                }
            }
            prop_assert_eq!(m.len(), t.len());
            let all: Vec<(u64, Active)> = t.iter().map(|(&a, &b)| (a, b)).collect();
            prop_assert_eq!(m.iter().collect::<Vec<_>>(), all.clone());
            for &p in probes.iter().chain(&[0, 1, 9_999, 10_000, u64::MAX]) {
                for q in [p.saturating_sub(1), p, p.saturating_add(1)] {
                    let tree_le = t.range(..=q).next_back().map(|(&a, &b)| (a, b));
                    prop_assert_eq!(m.last_at_or_below_at(&m.locate(q)).map(|(a, b)| (a, *b)), tree_le);
                    let tree_lt = t.range(..q).next_back().map(|(&a, &b)| (a, b));
                    prop_assert_eq!(m.last_below(q).map(|(a, b)| (a, *b)), tree_lt);
                    let end = q.saturating_add(700);
                    let tree_in = t.range(q..end).next().map(|(&a, &b)| (a, b));
                    prop_assert_eq!(m.first_in_at(&m.locate(q), end).map(|(a, b)| (a, *b)), tree_in);
                    let tree_range: Vec<_> = t.range(q..end).map(|(&a, &b)| (a, b)).collect();
                    prop_assert_eq!(m.range(q, end).collect::<Vec<_>>(), tree_range);
                    let tree_rev: Vec<_> =
                        t.range(..q).rev().take(5).map(|(&a, &b)| (a, b)).collect();
                    prop_assert_eq!(m.below_rev(m.locate(q)).take(5).collect::<Vec<_>>(), tree_rev);
                    prop_assert_eq!(m.get(q), t.get(&q));
                }
            }
            let tree_map: BlockMap = t.iter().map(|(&a, &b)| (a, b)).collect();
            prop_assert_eq!(&m, &tree_map);
        }
    }

    #[test]
    fn bitset_levels_find_neighbours_across_words() {
        let mut b = Bits::new(300_000);
        assert_eq!(b.levels.len(), 4);
        assert_eq!(b.last_below(300_000), None);
        assert_eq!(b.first_from(0), None);
        for i in [0, 63, 64, 4095, 4096, 262_143, 262_144, 299_999] {
            b.insert(i);
        }
        assert_eq!(b.last_below(1), Some(0));
        assert_eq!(b.last_below(0), None);
        assert_eq!(b.last_below(262_144), Some(262_143));
        assert_eq!(b.last_below(300_000), Some(299_999));
        assert_eq!(b.first_from(65), Some(4095));
        assert_eq!(b.first_from(262_145), Some(299_999));
        assert_eq!(b.first_from(300_000), None);
        b.remove(4095);
        b.remove(4096);
        assert_eq!(b.first_from(65), Some(262_143));
        assert_eq!(b.last_below(262_143), Some(64));
    }
}
