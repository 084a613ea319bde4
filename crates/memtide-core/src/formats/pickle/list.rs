//! The items of an arena list, with a run of converted handles kept as three numbers: a
//! snapshot's trace list holds one handle per entry (`Done(entry, row)`, rows numbered in
//! file order), 16 bytes each, which were a sixth of the decode's memory at its peak.
//! [`ListItems`] reads either form as the same values.

use super::Val;

/// Consecutive handles `Done(kind, first)`, `Done(kind, first + 1)`, …: `len` of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Run {
    kind: u8,
    first: u32,
    len: u32,
}

impl Run {
    fn get(self, i: usize) -> Option<Val> {
        let i = u32::try_from(i).ok().filter(|&i| i < self.len)?;
        Some(Val::Done(self.kind, self.first.checked_add(i)?))
    }

    /// Takes `v` as the next handle, if it is one.
    fn extend(&mut self, v: Val) -> bool {
        let Val::Done(kind, id) = v else { return false };
        if self.len == 0 {
            *self = Run {
                kind,
                first: id,
                len: 1,
            };
            return true;
        }
        let next = self.first.checked_add(self.len);
        if kind != self.kind || next != Some(id) || self.len == u32::MAX {
            return false;
        }
        self.len += 1;
        true
    }
}

/// A list's items: a run while every item continues it, else values.
#[derive(Debug, Default)]
pub(super) struct Items {
    run: Run,
    vals: Vec<Val>,
}

impl Items {
    pub fn new(vals: Vec<Val>) -> Items {
        Items {
            run: Run::default(),
            vals,
        }
    }

    /// Appends `new` in order.
    #[inline]
    pub fn extend(&mut self, new: &[Val]) {
        let mut rest = new;
        if self.vals.is_empty() {
            while let Some((&v, tail)) = rest.split_first() {
                if !self.run.extend(v) {
                    break;
                }
                rest = tail;
            }
            if rest.is_empty() {
                return;
            }
        }
        self.vals_mut().extend_from_slice(rest);
    }

    pub fn view(&self) -> ListItems<'_> {
        if self.run.len > 0 {
            ListItems::Run(self.run)
        } else {
            ListItems::Vals(&self.vals)
        }
    }

    /// The items as values (a run is spelled out first).
    pub fn vals_mut(&mut self) -> &mut Vec<Val> {
        if self.run.len > 0 {
            self.vals = ListItems::Run(self.run).to_vec();
            self.run = Run::default();
        }
        &mut self.vals
    }
}

/// A list's items, read as values whatever their form.
#[derive(Clone, Copy, Debug)]
pub enum ListItems<'a> {
    Vals(&'a [Val]),
    Run(Run),
}

impl ListItems<'_> {
    pub fn len(&self) -> usize {
        match self {
            ListItems::Vals(v) => v.len(),
            ListItems::Run(r) => r.len as usize,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, i: usize) -> Option<Val> {
        match self {
            ListItems::Vals(v) => v.get(i).copied(),
            ListItems::Run(r) => r.get(i),
        }
    }

    pub fn iter(&self) -> ListIter<'_> {
        match *self {
            ListItems::Vals(v) => ListIter::Vals(v.iter()),
            ListItems::Run(r) => ListIter::Run {
                kind: r.kind,
                ids: u64::from(r.first)..u64::from(r.first) + u64::from(r.len),
            },
        }
    }

    pub fn to_vec(self) -> Vec<Val> {
        self.iter().collect()
    }
}

/// The items of a list in order (a run's ids counted, not looked up one by one).
pub enum ListIter<'a> {
    Vals(std::slice::Iter<'a, Val>),
    Run { kind: u8, ids: std::ops::Range<u64> },
}

impl Iterator for ListIter<'_> {
    type Item = Val;

    #[inline]
    fn next(&mut self) -> Option<Val> {
        match self {
            ListIter::Vals(v) => v.next().copied(),
            // (A run's ids fit in 32 bits: it only takes ids that do.)
            ListIter::Run { kind, ids } => ids.next().map(|id| Val::Done(*kind, id as u32)),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            ListIter::Vals(v) => v.size_hint(),
            ListIter::Run { ids, .. } => ids.size_hint(),
        }
    }
}

impl PartialEq<[Val]> for ListItems<'_> {
    fn eq(&self, other: &[Val]) -> bool {
        self.len() == other.len() && self.iter().zip(other).all(|(a, b)| a == *b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn val(k: u8) -> impl Strategy<Value = Val> {
        prop_oneof![
            (0u8..2, 0u32..6).prop_map(|(kind, id)| Val::Done(kind, id)),
            (u32::MAX - 2..=u32::MAX).prop_map(move |id| Val::Done(k, id)),
            (0i64..3).prop_map(Val::Int),
            Just(Val::None),
        ]
    }

    proptest! {
        /// Any sequence of appends (in batches) reads back as the plain vector of them.
        #[test]
        fn items_read_as_the_values_appended(
            batches in prop::collection::vec(prop::collection::vec(val(1), 0..6), 0..8),
            consecutive in 0usize..40,
        ) {
            let mut items = Items::default();
            let mut plain: Vec<Val> = Vec::new();
            // A run first, as a trace list has.
            let run: Vec<Val> = (0..consecutive as u32).map(|i| Val::Done(7, 100 + i)).collect();
            items.extend(&run);
            plain.extend_from_slice(&run);
            for b in &batches {
                items.extend(b);
                plain.extend_from_slice(b);
                let v = items.view();
                prop_assert!(v == plain[..], "{:?} vs {:?}", v.to_vec(), plain);
                prop_assert_eq!(v.get(plain.len()), None);
            }
            prop_assert_eq!(items.vals_mut().clone(), plain);
        }
    }

    #[test]
    fn a_run_stays_three_numbers() {
        let mut items = Items::default();
        let run: Vec<Val> = (0..10_000).map(|i| Val::Done(3, i)).collect();
        items.extend(&run[..4000]);
        items.extend(&run[4000..]);
        assert!(matches!(items.view(), ListItems::Run(r) if r.len == 10_000));
        assert!(items.vals.capacity() == 0);
        items.extend(&[Val::Done(3, 5)]);
        assert!(matches!(items.view(), ListItems::Vals(v) if v.len() == 10_001));
        // A run up to the last id reads to its end.
        let mut top = Items::default();
        let last = [Val::Done(1, u32::MAX - 1), Val::Done(1, u32::MAX)];
        top.extend(&last);
        assert!(matches!(top.view(), ListItems::Run(_)));
        assert_eq!(top.view().iter().collect::<Vec<_>>(), last);
    }
}
