//! The pickle memo, 8 bytes a slot: a memo holds handles (a str, bytes, list, dict or tuple,
//! or a container a hook converted: a kind and a 32-bit id), each packed into one word. A
//! number (Python's pickler never memoizes one, a hand-made file may) goes to a side table.

use super::Val;
use rustc_hash::FxHashMap;

const NONE: u64 = 0;
const BOOL: u64 = 1;
const STR: u64 = 2;
const BYTES: u64 = 3;
const LIST: u64 = 4;
const DICT: u64 = 5;
const TUPLE: u64 = 6;
const DONE: u64 = 7;
/// A number, at index `id` of the side table.
const WIDE: u64 = 8;
/// A number whose slot index is a key of `far` (the side table is full).
const WIDE_FAR: u64 = 9;

#[derive(Debug, Default)]
pub(crate) struct Memo {
    /// Slots 0..len: the tag in bits 0–7, a hook's kind in bits 8–15, the id in bits 32–63.
    flat: Vec<u64>,
    /// Numbers stored in the flat memo.
    wide: Vec<Val>,
    /// Indices far beyond the end (a sparse, hostile file), and numbers past a full side
    /// table: kept aside.
    far: FxHashMap<u64, Val>,
}

impl Memo {
    /// The number of flat slots (MEMOIZE's next index).
    #[inline]
    pub fn len(&self) -> u64 {
        self.flat.len() as u64
    }

    /// Slot `idx` of the flat memo.
    #[inline(always)]
    pub fn get(&self, idx: usize) -> Option<Val> {
        let s = *self.flat.get(idx)?;
        let id = (s >> 32) as u32;
        Some(match s & 0xff {
            STR => Val::Str(id),
            DONE => Val::Done((s >> 8) as u8, id),
            DICT => Val::Dict(id),
            LIST => Val::List(id),
            _ => self.unusual(idx, s)?,
        })
    }

    /// The str id in flat slot `idx`, if it holds a str.
    #[inline(always)]
    pub fn str_at(&self, idx: usize) -> Option<u32> {
        let s = *self.flat.get(idx)?;
        (s & 0xff == STR).then_some((s >> 32) as u32)
    }

    #[cold]
    #[inline(never)]
    fn unusual(&self, idx: usize, s: u64) -> Option<Val> {
        let id = (s >> 32) as u32;
        Some(match s & 0xff {
            NONE => Val::None,
            BOOL => Val::Bool(id != 0),
            BYTES => Val::Bytes(id),
            TUPLE => Val::Tuple(id),
            WIDE => *self.wide.get(id as usize)?,
            WIDE_FAR => *self.far.get(&(idx as u64))?,
            _ => return None,
        })
    }

    /// Slot `idx`, flat or far.
    pub fn get_any(&self, idx: u64) -> Option<Val> {
        match usize::try_from(idx).ok().filter(|&i| i < self.flat.len()) {
            Some(i) => self.get(i),
            None => self.far.get(&idx).copied(),
        }
    }

    /// Stores `v` at `idx` (MEMOIZE, BINPUT, LONG_BINPUT): whether it replaced a flat slot.
    #[inline]
    pub fn put(&mut self, idx: u64, v: Val) -> bool {
        let len = self.len();
        if idx > len {
            self.far.insert(idx, v);
            return false;
        }
        let s = self.pack(idx, v);
        if idx == len {
            self.flat.push(s);
            false
        } else {
            if let Some(slot) = self.flat.get_mut(idx as usize) {
                *slot = s;
            }
            true
        }
    }

    /// Replaces flat slot `idx` with `new` if it holds `old`.
    pub fn replace_if(&mut self, idx: u64, old: Val, new: Val) {
        let flat = usize::try_from(idx).is_ok_and(|i| i < self.flat.len());
        if flat && self.get_any(idx) == Some(old) {
            self.put(idx, new);
        }
    }

    #[inline]
    fn pack(&mut self, idx: u64, v: Val) -> u64 {
        let handle = |tag: u64, id: u32| tag | u64::from(id) << 32;
        match v {
            Val::None => NONE,
            Val::Bool(b) => handle(BOOL, u32::from(b)),
            Val::Str(id) => handle(STR, id),
            Val::Bytes(id) => handle(BYTES, id),
            Val::List(id) => handle(LIST, id),
            Val::Dict(id) => handle(DICT, id),
            Val::Tuple(id) => handle(TUPLE, id),
            Val::Done(kind, id) => handle(DONE, id) | u64::from(kind) << 8,
            Val::Int(_) | Val::UInt(_) | Val::Big { .. } | Val::Float(_) => {
                match u32::try_from(self.wide.len()) {
                    Ok(w) => {
                        self.wide.push(v);
                        handle(WIDE, w)
                    }
                    Err(_) => {
                        self.far.insert(idx, v);
                        WIDE_FAR
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Val; 13] = [
        Val::None,
        Val::Bool(false),
        Val::Bool(true),
        Val::Int(-5),
        Val::UInt(u64::MAX),
        Val::Big { negative: true },
        Val::Float(1.5),
        Val::Str(u32::MAX),
        Val::Bytes(7),
        Val::List(0),
        Val::Dict(12),
        Val::Tuple(3),
        Val::Done(200, u32::MAX - 1),
    ];

    #[test]
    fn every_value_reads_back_as_stored() {
        let mut m = Memo::default();
        for (i, v) in ALL.iter().enumerate() {
            assert!(!m.put(i as u64, *v));
        }
        for (i, v) in ALL.iter().enumerate() {
            assert_eq!(m.get(i), Some(*v), "slot {i}");
            assert_eq!(m.get_any(i as u64), Some(*v));
            let s = match v {
                Val::Str(s) => Some(*s),
                _ => None,
            };
            assert_eq!(m.str_at(i), s);
        }
        assert_eq!(m.get(ALL.len()), None);
        // Stored over, far, and replaced only when it holds the old value.
        assert!(m.put(3, Val::Str(9)));
        assert!(!m.put(1000, Val::Int(4)));
        assert_eq!(m.get(3), Some(Val::Str(9)));
        assert_eq!(m.get_any(1000), Some(Val::Int(4)));
        assert_eq!(m.len(), 13);
        m.replace_if(10, Val::Dict(11), Val::Done(1, 1));
        assert_eq!(m.get(10), Some(Val::Dict(12)));
        m.replace_if(10, Val::Dict(12), Val::Done(1, 1));
        assert_eq!(m.get(10), Some(Val::Done(1, 1)));
    }
}
