//! The pickle memo, 4 bytes a slot: a memo holds handles (a str, bytes, list, dict or tuple,
//! or a container a hook converted: a kind and a 32-bit id), each packed into one word of a
//! 4-bit tag and a 28-bit id. A handle that does not fit (an id of 2^28 or more, a hook's
//! kind above 7) or a number (Python's pickler never memoizes one, a hand-made file may) goes
//! to a side table. A big snapshot memoizes every trace entry: 7 M entries are 28 MB here
//! (56 MB at 8 bytes a slot).

use super::Val;
use rustc_hash::FxHashMap;

const NONE: u32 = 0;
const BOOL: u32 = 1;
const STR: u32 = 2;
const BYTES: u32 = 3;
const LIST: u32 = 4;
const DICT: u32 = 5;
const TUPLE: u32 = 6;
/// Anything else, at index `id` of the side table (or, when that is full, in `far`).
const WIDE: u32 = 7;
/// A hook's converted object of kind 0–7: tag `DONE + kind`.
const DONE: u32 = 8;
const TAG_BITS: u32 = 4;
const ID_LIMIT: u32 = 1 << (32 - TAG_BITS);
/// The id of a WIDE slot whose value is a key of `far` (the side table is full).
const FAR: u32 = ID_LIMIT - 1;

#[derive(Debug, Default)]
pub(crate) struct Memo {
    /// Slots 0..len: the tag in bits 0–3, the id in bits 4–31.
    flat: Vec<u32>,
    /// Values of the WIDE slots.
    wide: Vec<Val>,
    /// Indices far beyond the end (a sparse, hostile file), and values past a full side
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
        let id = s >> TAG_BITS;
        Some(match s & ((1 << TAG_BITS) - 1) {
            STR => Val::Str(id),
            DICT => Val::Dict(id),
            LIST => Val::List(id),
            t if t >= DONE => Val::Done((t - DONE) as u8, id),
            _ => self.unusual(idx, s)?,
        })
    }

    /// The str id in flat slot `idx`, if it holds a str.
    #[inline(always)]
    pub fn str_at(&self, idx: usize) -> Option<u32> {
        match self.get(idx)? {
            Val::Str(id) => Some(id),
            _ => None,
        }
    }

    #[cold]
    #[inline(never)]
    fn unusual(&self, idx: usize, s: u32) -> Option<Val> {
        let id = s >> TAG_BITS;
        Some(match s & ((1 << TAG_BITS) - 1) {
            NONE => Val::None,
            BOOL => Val::Bool(id != 0),
            BYTES => Val::Bytes(id),
            TUPLE => Val::Tuple(id),
            WIDE if id == FAR => *self.far.get(&(idx as u64))?,
            WIDE => *self.wide.get(id as usize)?,
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
    fn pack(&mut self, idx: u64, v: Val) -> u32 {
        let handle = |tag: u32, id: u32| (id < ID_LIMIT).then_some(tag | id << TAG_BITS);
        let packed = match v {
            Val::None => Some(NONE),
            Val::Bool(b) => handle(BOOL, u32::from(b)),
            Val::Str(id) => handle(STR, id),
            Val::Bytes(id) => handle(BYTES, id),
            Val::List(id) => handle(LIST, id),
            Val::Dict(id) => handle(DICT, id),
            Val::Tuple(id) => handle(TUPLE, id),
            Val::Done(kind, id) if kind < 8 => handle(DONE + u32::from(kind), id),
            _ => None,
        };
        packed.unwrap_or_else(|| self.wide_slot(idx, v))
    }

    /// A slot whose value is kept in the side table (or, when that is full, in `far`).
    #[cold]
    fn wide_slot(&mut self, idx: u64, v: Val) -> u32 {
        match u32::try_from(self.wide.len()).ok().filter(|&w| w < FAR) {
            Some(w) => {
                self.wide.push(v);
                WIDE | w << TAG_BITS
            }
            None => {
                self.far.insert(idx, v);
                WIDE | FAR << TAG_BITS
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Val; 17] = [
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
        Val::Done(7, ID_LIMIT - 1),
        Val::Done(0, 5),
        Val::Str(ID_LIMIT),
        Val::Dict(ID_LIMIT - 1),
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
        assert_eq!(m.len(), ALL.len() as u64);
        m.replace_if(10, Val::Dict(11), Val::Done(1, 1));
        assert_eq!(m.get(10), Some(Val::Dict(12)));
        m.replace_if(10, Val::Dict(12), Val::Done(1, 1));
        assert_eq!(m.get(10), Some(Val::Done(1, 1)));
    }
}
