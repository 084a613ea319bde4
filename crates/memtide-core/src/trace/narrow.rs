//! A storage column of 64-bit values kept in one 4-byte word each where the column's own
//! encoding fits them, the rest whole on the side by index: the mechanism the size and
//! source-id columns share (each says how a value becomes a word and back).

use rustc_hash::FxHashMap;

/// The word of a value kept on the side.
pub(crate) const WIDE: u32 = u32::MAX;

#[derive(Clone, Default, PartialEq, Eq)]
pub(crate) struct Narrow {
    words: Vec<u32>,
    wide: FxHashMap<u32, u64>,
}

impl Narrow {
    pub(crate) fn reserve(&mut self, n: usize) {
        self.words.reserve(n);
    }

    pub(crate) fn len(&self) -> usize {
        self.words.len()
    }

    /// Appends `value`, as `word` when the column's encoding fits it (never [`WIDE`]), else
    /// whole on the side.
    pub(crate) fn push(&mut self, word: Option<u32>, value: u64) {
        self.words.push(WIDE);
        self.set(self.words.len() - 1, word, value);
    }

    /// Sets value `i` as [`Narrow::push`] appends one (nothing past the end).
    pub(crate) fn set(&mut self, i: usize, word: Option<u32>, value: u64) {
        let Some(slot) = self.words.get_mut(i) else {
            return;
        };
        match word.filter(|&w| w != WIDE) {
            Some(w) => {
                if *slot == WIDE {
                    self.wide.remove(&(i as u32));
                }
                *slot = w;
            }
            None => {
                *slot = WIDE;
                self.wide.insert(i as u32, value);
            }
        }
    }

    /// The word of value `i` ([`WIDE`]: read it with [`Narrow::whole`]; None past the end).
    #[inline]
    pub(crate) fn word(&self, i: usize) -> Option<u32> {
        self.words.get(i).copied()
    }

    /// Value `i` kept on the side.
    #[cold]
    #[inline(never)]
    pub(crate) fn whole(&self, i: usize) -> u64 {
        self.wide.get(&(i as u32)).copied().unwrap_or(0)
    }

    /// Values kept on the side.
    #[cfg(test)]
    pub(crate) fn wide_count(&self) -> usize {
        self.wide.len()
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.words.capacity() * 4 + self.wide.capacity() * 12
    }
}
