//! The storages' names: on the side while few storages have one (a snapshot names only the
//! allocations a user annotated), a column of 4 bytes each once a quarter of them do (a
//! Kineto or JSONL trace names every tensor). Either way every name reads back as set.

use super::units::StrId;
use rustc_hash::FxHashMap;

/// Storages pushed before the share of named ones is judged.
const WARM_UP: usize = 1024;

#[derive(Clone, PartialEq, Eq)]
pub(crate) enum NameColumn {
    /// The storages with a name, by index (the others have `StrId(0)`, the empty name).
    Sparse {
        len: usize,
        named: FxHashMap<u32, StrId>,
    },
    Dense(Vec<StrId>),
}

impl Default for NameColumn {
    fn default() -> Self {
        NameColumn::Sparse {
            len: 0,
            named: FxHashMap::default(),
        }
    }
}

impl NameColumn {
    pub(crate) fn reserve(&mut self, n: usize) {
        if let NameColumn::Dense(v) = self {
            v.reserve(n);
        }
    }

    pub(crate) fn push(&mut self, name: StrId) {
        match self {
            NameColumn::Sparse { len, named } => {
                if name != StrId::default() {
                    named.insert(*len as u32, name);
                }
                *len += 1;
                if *len >= WARM_UP && named.len() * 4 > *len {
                    self.densify();
                }
            }
            NameColumn::Dense(v) => v.push(name),
        }
    }

    /// The name of storage `i` (the empty name past the end).
    #[inline]
    pub(crate) fn get(&self, i: usize) -> StrId {
        match self {
            NameColumn::Sparse { len, named } if i < *len => {
                named.get(&(i as u32)).copied().unwrap_or_default()
            }
            NameColumn::Sparse { .. } => StrId::default(),
            NameColumn::Dense(v) => v.get(i).copied().unwrap_or_default(),
        }
    }

    /// Names storage `i` (nothing past the end).
    pub(crate) fn set(&mut self, i: usize, name: StrId) {
        match self {
            NameColumn::Sparse { len, named } if i < *len => {
                if name == StrId::default() {
                    named.remove(&(i as u32));
                } else {
                    named.insert(i as u32, name);
                }
            }
            NameColumn::Sparse { .. } => {}
            NameColumn::Dense(v) => {
                if let Some(n) = v.get_mut(i) {
                    *n = name;
                }
            }
        }
    }

    fn densify(&mut self) {
        if let NameColumn::Sparse { len, named } = self {
            let mut v = vec![StrId::default(); *len];
            for (&i, &n) in named.iter() {
                if let Some(slot) = v.get_mut(i as usize) {
                    *slot = n;
                }
            }
            *self = NameColumn::Dense(v);
        }
    }

    fn len(&self) -> usize {
        match self {
            NameColumn::Sparse { len, .. } => *len,
            NameColumn::Dense(v) => v.len(),
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            NameColumn::Sparse { named, .. } => named.capacity() * 8,
            NameColumn::Dense(v) => v.capacity() * 4,
        }
    }
}

/// As the list of names (what a `Vec` of them prints).
impl std::fmt::Debug for NameColumn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries((0..self.len()).map(|i| self.get(i)))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Names pushed and set over, few or many, read back as a plain vector holds them;
        /// the column is dense exactly when a quarter of the storages were named by then.
        #[test]
        fn names_read_back_as_set(
            names in prop::collection::vec(prop_oneof![6 => Just(0u32), 1 => 1u32..50], 0..3000),
            sets in prop::collection::vec((any::<usize>(), prop_oneof![Just(0u32), 1u32..9]), 0..40),
        ) {
            let mut c = NameColumn::default();
            let mut v: Vec<StrId> = Vec::new();
            for &n in &names {
                c.push(StrId(n));
                v.push(StrId(n));
            }
            for (i, n) in sets {
                let i = i % (v.len() + 1);
                c.set(i, StrId(n));
                if let Some(x) = v.get_mut(i) {
                    *x = StrId(n);
                }
            }
            for (i, &n) in v.iter().enumerate() {
                prop_assert_eq!(c.get(i), n);
            }
            prop_assert_eq!(c.get(v.len()), StrId::default());
            prop_assert_eq!(format!("{c:?}"), format!("{v:?}"));
        }
    }

    #[test]
    fn a_column_where_most_storages_are_named_turns_dense() {
        let mut c = NameColumn::default();
        for i in 0..WARM_UP as u32 {
            c.push(StrId(i % 3));
        }
        assert!(matches!(c, NameColumn::Dense(_)));
        let mut s = NameColumn::default();
        for i in 0..(4 * WARM_UP) as u32 {
            s.push(StrId(u32::from(i % 5 == 0)));
        }
        assert!(matches!(s, NameColumn::Sparse { .. }));
    }
}
