//! String and stack interner: a million events sharing 500 stacks store 500 stacks.

use super::units::{StackId, StrId};
use rustc_hash::FxHashMap;

/// Deduplicating store of strings and stacks (frame lists, innermost first).
#[derive(Debug, Default, Clone)]
pub struct Interner {
    strings: Vec<Box<str>>,
    str_ids: FxHashMap<Box<str>, StrId>,
    stacks: Vec<Box<[StrId]>>,
    stack_ids: FxHashMap<Box<[StrId]>, StackId>,
}

impl Interner {
    pub fn new() -> Self {
        let mut i = Interner::default();
        // StrId(0) is the empty string, StackId(0) the empty stack: "absent" costs nothing.
        i.intern("");
        i.intern_stack(&[]);
        i
    }

    pub fn intern(&mut self, s: &str) -> StrId {
        if let Some(&id) = self.str_ids.get(s) {
            return id;
        }
        let id = StrId(self.strings.len() as u32);
        let b: Box<str> = s.into();
        self.strings.push(b.clone());
        self.str_ids.insert(b, id);
        id
    }

    pub fn lookup(&self, s: &str) -> Option<StrId> {
        self.str_ids.get(s).copied()
    }

    pub fn intern_stack(&mut self, frames: &[StrId]) -> StackId {
        if let Some(&id) = self.stack_ids.get(frames) {
            return id;
        }
        let id = StackId(self.stacks.len() as u32);
        let b: Box<[StrId]> = frames.into();
        self.stacks.push(b.clone());
        self.stack_ids.insert(b, id);
        id
    }

    pub fn str(&self, id: StrId) -> &str {
        self.strings.get(id.0 as usize).map(|s| &**s).unwrap_or("")
    }

    pub fn stack(&self, id: StackId) -> &[StrId] {
        self.stacks.get(id.0 as usize).map(|s| &**s).unwrap_or(&[])
    }

    pub fn string_count(&self) -> usize {
        self.strings.len()
    }

    pub fn stack_count(&self) -> usize {
        self.stacks.len()
    }

    /// All interned strings with their ids (for search).
    pub fn strings(&self) -> impl Iterator<Item = (StrId, &str)> {
        self.strings
            .iter()
            .enumerate()
            .map(|(i, s)| (StrId(i as u32), &**s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_stacks_are_stored_once() {
        let mut i = Interner::new();
        let a = i.intern("train.py:12 build");
        let b = i.intern("model.py:3 forward");
        let s1 = i.intern_stack(&[a, b]);
        let s2 = i.intern_stack(&[a, b]);
        let s3 = i.intern_stack(&[b, a]);
        assert_eq!(s1, s2);
        assert_ne!(s1, s3);
        assert_eq!(i.stack_count(), 3); // empty + two
        assert_eq!(i.str(a), "train.py:12 build");
        assert_eq!(i.intern("train.py:12 build"), a);
    }
}
