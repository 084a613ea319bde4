//! A streaming, data-only unpickler (protocols 2–5) over an arena of compact `Copy` handles.
//!
//! It understands only the opcodes of plain data (dict, list, tuple, str, bytes, int, float,
//! bool, None, the memo, MARK/FRAME/PROTO) and refuses everything that would import or call
//! Python code (GLOBAL, REDUCE, BUILD, …) with the opcode and its byte offset. Nothing is ever
//! executed. Memo hits copy a handle, never the object, so shared frame lists stay shared.
//!
//! A [`Hook`] sees every value appended to a list and may replace it by a compact handle of
//! its own (the snapshot reader turns trace-entry dicts into columnar rows there); the
//! replaced containers are released to a free list so the arena stays small while streaming.

mod list;
mod memo;

use super::error::FormatError;
use super::source::io_or_cancel;
use list::Items;
pub use list::ListItems;
use memo::Memo;
use rustc_hash::FxHashMap;
use std::io::Read;

/// A value: a 16-byte `Copy` handle. Containers and strings live in the [`Arena`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Val {
    None,
    Bool(bool),
    Int(i64),
    /// A non-negative integer above `i64::MAX` that fits in 64 bits (e.g. `2**64-1`).
    UInt(u64),
    /// An integer outside the 64-bit range; only its sign is kept.
    Big {
        negative: bool,
    },
    Float(f64),
    Str(u32),
    Bytes(u32),
    List(u32),
    Dict(u32),
    Tuple(u32),
    /// A handle a [`Hook`] put in place of a container it consumed: (hook's kind, id).
    Done(u8, u32),
}

impl Val {
    /// Python type name, for error messages.
    pub fn type_name(self) -> &'static str {
        match self {
            Val::None => "None",
            Val::Bool(_) => "bool",
            Val::Int(_) | Val::UInt(_) | Val::Big { .. } => "int",
            Val::Float(_) => "float",
            Val::Str(_) => "str",
            Val::Bytes(_) => "bytes",
            Val::List(_) => "list",
            Val::Dict(_) => "dict",
            Val::Tuple(_) => "tuple",
            Val::Done(..) => "converted object",
        }
    }

    /// The value as an unsigned 64-bit integer (negative ints wrap, as a C++ `-1` cast does).
    pub fn as_u64(self) -> Option<u64> {
        match self {
            Val::Int(i) => Some(i as u64),
            Val::UInt(u) => Some(u),
            Val::Bool(b) => Some(b as u64),
            _ => None,
        }
    }

    /// The value as a signed 64-bit integer.
    pub fn as_i64(self) -> Option<i64> {
        match self {
            Val::Int(i) => Some(i),
            Val::Bool(b) => Some(b as i64),
            _ => None,
        }
    }
}

/// Slot of a list or dict: its items, its memo index (for release) and whether a memo hit
/// ever fetched it (then other holders may exist and it is never released).
#[derive(Debug)]
struct Slot<T> {
    items: T,
    memo: u32,
    shared: bool,
    /// A hook's cached conversion of this container (`u32::MAX`: none).
    conv: u32,
    /// For a dict the hook converted from its items as they were set ([`Hook::dict_filled`]):
    /// the hook's kind, else `NOT_SEALED`. A sealed dict stores no items and takes no more.
    sealed: u8,
}

const NOT_SEALED: u8 = u8::MAX;

impl<T: Default> Slot<T> {
    fn new(items: T) -> Self {
        Slot {
            items,
            memo: NO_MEMO,
            shared: false,
            conv: u32::MAX,
            sealed: NOT_SEALED,
        }
    }

    /// Caches the conversion `conv` and drops the items (converted containers are only ever
    /// read through it, even when the memo shares them). Returns the memo index to repoint
    /// and whether the slot may be reused: a shared slot stays, so holders of the old handle
    /// still find the conversion.
    fn consume(&mut self, conv: u32) -> (u32, bool) {
        self.conv = conv;
        self.items = T::default();
        let memo = self.memo;
        if self.shared {
            return (memo, false);
        }
        self.memo = NO_MEMO;
        self.conv = u32::MAX;
        (memo, true)
    }
}

/// Puts `slot` in a free place of `slots` (or at the end); returns its id.
fn place<T: Default>(slots: &mut Vec<Slot<T>>, free: &mut Vec<u32>, slot: Slot<T>) -> u32 {
    if let Some(id) = free.pop() {
        if let Some(s) = slots.get_mut(id as usize) {
            *s = slot;
            return id;
        }
    }
    slots.push(slot);
    slots.len() as u32 - 1
}

const NO_MEMO: u32 = u32::MAX;

/// Storage behind the handles. Strings are interned by value.
#[derive(Debug, Default)]
pub struct Arena {
    strs: Vec<Box<str>>,
    str_ids: FxHashMap<Box<str>, u32>,
    bytes: Vec<Box<[u8]>>,
    lists: Vec<Slot<Items>>,
    free_lists: Vec<u32>,
    dicts: Vec<Slot<Vec<(Val, Val)>>>,
    free_dicts: Vec<u32>,
    tuples: Vec<Box<[Val]>>,
    memo: Memo,
    /// How often a memo store replaced a flat slot (picklers never do; a hostile file may).
    memo_rebinds: u64,
}

impl Arena {
    pub fn new() -> Self {
        Arena::default()
    }

    /// Interns `s` and returns its id (the same id every time for the same text).
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.str_ids.get(s) {
            return id;
        }
        let id = self.strs.len() as u32;
        let b: Box<str> = s.into();
        self.strs.push(b.clone());
        self.str_ids.insert(b, id);
        id
    }

    /// The id of `s` if it was ever interned (no dict key can equal a string never seen).
    pub fn find(&self, s: &str) -> Option<u32> {
        self.str_ids.get(s).copied()
    }

    pub fn str(&self, id: u32) -> &str {
        self.strs.get(id as usize).map_or("", |s| s)
    }

    pub fn list(&self, id: u32) -> ListItems<'_> {
        self.lists
            .get(id as usize)
            .map_or(ListItems::Vals(&[]), |s| s.items.view())
    }

    pub fn dict(&self, id: u32) -> &[(Val, Val)] {
        self.dicts.get(id as usize).map_or(&[], |s| &s.items)
    }

    pub fn tuple(&self, id: u32) -> &[Val] {
        self.tuples.get(id as usize).map_or(&[], |s| s)
    }

    /// Looks up a str key in a dict.
    pub fn get(&self, dict: u32, key: u32) -> Option<Val> {
        self.dict(dict)
            .iter()
            .find(|(k, _)| *k == Val::Str(key))
            .map(|&(_, v)| v)
    }

    pub fn list_mut(&mut self, id: u32) -> Option<&mut Vec<Val>> {
        self.lists.get_mut(id as usize).map(|s| s.items.vals_mut())
    }

    pub fn dict_mut(&mut self, id: u32) -> Option<&mut Vec<(Val, Val)>> {
        self.dicts.get_mut(id as usize).map(|s| &mut s.items)
    }

    pub fn list_conv(&self, id: u32) -> Option<u32> {
        self.lists
            .get(id as usize)
            .map(|s| s.conv)
            .filter(|&c| c != u32::MAX)
    }

    pub fn dict_conv(&self, id: u32) -> Option<u32> {
        self.dicts
            .get(id as usize)
            .map(|s| s.conv)
            .filter(|&c| c != u32::MAX)
    }

    /// The hook's (kind, conversion) of a dict it converted while its items were set.
    pub fn dict_sealed(&self, id: u32) -> Option<(u8, u32)> {
        self.dicts
            .get(id as usize)
            .filter(|s| s.sealed != NOT_SEALED)
            .map(|s| (s.sealed, s.conv))
    }

    /// Records a conversion of list `id` into `repl`: cached on the slot (its items are
    /// dropped), the memo entry becomes `repl`, and when nothing else can hold the list
    /// (never fetched from the memo) the slot is freed for reuse.
    pub fn consume_list(&mut self, id: u32, conv: u32, repl: Val) -> bool {
        let Some(s) = self.lists.get_mut(id as usize) else {
            return false;
        };
        let (memo, freed) = s.consume(conv);
        self.set_memo_if(memo, Val::List(id), repl);
        if freed {
            self.free_lists.push(id);
        }
        freed
    }

    /// As [`Arena::consume_list`], for dicts.
    pub fn consume_dict(&mut self, id: u32, conv: u32, repl: Val) -> bool {
        let Some(s) = self.dicts.get_mut(id as usize) else {
            return false;
        };
        let (memo, freed) = s.consume(conv);
        self.set_memo_if(memo, Val::Dict(id), repl);
        if freed {
            self.free_dicts.push(id);
        }
        freed
    }

    fn set_memo_if(&mut self, idx: u32, old: Val, new: Val) {
        if idx == NO_MEMO {
            return;
        }
        self.memo.replace_if(u64::from(idx), old, new);
    }

    fn new_list(&mut self, items: Vec<Val>) -> Val {
        Val::List(place(
            &mut self.lists,
            &mut self.free_lists,
            Slot::new(Items::new(items)),
        ))
    }

    fn new_dict(&mut self, items: Vec<(Val, Val)>) -> Val {
        Val::Dict(place(
            &mut self.dicts,
            &mut self.free_dicts,
            Slot::new(items),
        ))
    }

    fn memo_put(&mut self, idx: u64, v: Val) {
        // Remember where a container sits in the memo so a release can repoint it; a second
        // memo slot for the same container pins it (it is then never released).
        match v {
            Val::List(id) => {
                if let Some(s) = self.lists.get_mut(id as usize) {
                    if s.memo == NO_MEMO && idx < NO_MEMO as u64 {
                        s.memo = idx as u32;
                    } else {
                        s.shared = true;
                    }
                }
            }
            Val::Dict(id) => {
                if let Some(s) = self.dicts.get_mut(id as usize) {
                    if s.memo == NO_MEMO && idx < NO_MEMO as u64 {
                        s.memo = idx as u32;
                    } else {
                        s.shared = true;
                    }
                }
            }
            _ => {}
        }
        if self.memo.put(idx, v) {
            self.memo_rebinds += 1;
        }
    }

    /// How often a memo store replaced a slot of the flat memo: a value read from a slot
    /// stays what the slot holds while this is unchanged, except for a container its hook
    /// converted (then the slot holds the conversion).
    pub fn memo_rebinds(&self) -> u64 {
        self.memo_rebinds
    }

    /// The number of entries of the flat memo (MEMOIZE's next index).
    #[inline]
    pub fn memo_len(&self) -> u64 {
        self.memo.len()
    }

    /// Memo entry `idx` of the flat memo, as stored (no sharing is recorded: for a reader
    /// that only takes values no container handle is in).
    #[inline(always)]
    pub fn memo_peek(&self, idx: u64) -> Option<Val> {
        self.memo.get(usize::try_from(idx).ok()?)
    }

    /// The str id memo entry `idx` of the flat memo holds, if a str (as [`Arena::memo_peek`]).
    #[inline(always)]
    pub fn memo_str(&self, idx: u64) -> Option<u32> {
        self.memo.str_at(usize::try_from(idx).ok()?)
    }

    /// Stores memo entry `idx` as MEMOIZE or BINPUT would.
    pub fn memo_store(&mut self, idx: u64, v: Val) {
        self.memo_put(idx, v);
    }

    #[cold]
    fn memo_get(&mut self, idx: u64) -> Option<Val> {
        let v = self.memo.get_any(idx)?;
        self.mark_fetched(v);
        Some(v)
    }

    /// A memo hit fetched `v`: a container may now have other holders (never released).
    #[inline(always)]
    fn mark_fetched(&mut self, v: Val) {
        match v {
            Val::List(id) => {
                if let Some(s) = self.lists.get_mut(id as usize) {
                    s.shared = true;
                }
            }
            Val::Dict(id) => {
                if let Some(s) = self.dicts.get_mut(id as usize) {
                    s.shared = true;
                }
            }
            _ => {}
        }
    }

    /// Drops the memo (call after the last opcode to free memory early).
    pub fn drop_memo(&mut self) {
        self.memo = Memo::default();
    }
}

/// Sees every value appended to a list (`APPEND`/`APPENDS`) and may return a replacement
/// handle. An `Err` becomes a [`FormatError::At`] at the opcode's offset.
pub trait Hook {
    fn appended(&mut self, arena: &mut Arena, v: Val) -> Result<Val, String>;

    /// Sees the flat key/value items of a SETITEMS into a still-empty dict that sits inside
    /// an APPENDS batch (about to become a list element). Returning `Some((kind, conv))`
    /// seals the dict: its items are never stored, [`Arena::dict_sealed`] gives the
    /// conversion, and any later assignment into it is refused.
    fn dict_filled(
        &mut self,
        _arena: &mut Arena,
        _items: &[Val],
    ) -> Result<Option<(u8, u32)>, String> {
        Ok(None)
    }

    /// Whether a dict sealed as `kind` ([`Hook::dict_filled`]) stands as its conversion at
    /// once: `Val::Done(kind, conv)` on the stack and in its memo slot, the dict given back
    /// (as [`Hook::fast_dict`] may leave the dicts it reads). Else it stays a sealed dict
    /// until [`Hook::appended`] sees it.
    fn stands_converted(&self, _kind: u8) -> bool {
        false
    }

    /// A chance to read a whole dict straight from the bytes after its EMPTY_DICT (`bytes`:
    /// what is buffered from there), when it opens inside an APPENDS batch as
    /// [`Hook::dict_filled`]'s dicts do. Returns the value that stands for the dict and how
    /// many bytes it read, with the memo entries those bytes store already stored; None
    /// (having changed nothing the interpreter would see differently) lets the interpreter
    /// read the dict opcode by opcode.
    fn fast_dict(&mut self, _arena: &mut Arena, _bytes: &[u8]) -> Option<(Val, usize)> {
        None
    }
}

/// A hook that keeps everything as is.
pub struct NoHook;

impl Hook for NoHook {
    fn appended(&mut self, _: &mut Arena, v: Val) -> Result<Val, String> {
        Ok(v)
    }
}

/// Refill buffer over a reader, tracking the absolute offset.
struct Src<R> {
    r: R,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    /// Absolute offset of `buf[0]`.
    base: u64,
    eof: bool,
}

/// Larger than the `BufReader` under a plain file (`source::FILE_BUFFER`), so reads bypass its
/// copy.
const CHUNK: usize = 4 << 20;

impl<R: Read> Src<R> {
    fn new(r: R) -> Self {
        Src {
            r,
            buf: Vec::new(),
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
        }
    }

    fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// The next opcode and its offset; the input may not end before STOP.
    #[inline(always)]
    fn opcode(&mut self) -> Result<(u64, u8), FormatError> {
        let off = self.offset();
        if !self.fill(1)? {
            return Err(FormatError::at(
                off,
                "the pickle is truncated: the input ends before the STOP opcode",
            ));
        }
        let op = self.buf[self.pos];
        self.pos += 1;
        Ok((off, op))
    }

    /// Ensures `n` bytes are buffered at `pos`; false at end of input.
    #[inline]
    fn fill(&mut self, n: usize) -> Result<bool, FormatError> {
        if self.end - self.pos >= n {
            return Ok(true);
        }
        self.refill(n)
    }

    #[cold]
    fn refill(&mut self, n: usize) -> Result<bool, FormatError> {
        // Move the unread tail to the front, grow for long strings, read more.
        self.buf.copy_within(self.pos..self.end, 0);
        self.base += self.pos as u64;
        self.end -= self.pos;
        self.pos = 0;
        if self.buf.len() < CHUNK {
            self.grow(CHUNK - self.buf.len())?;
        }
        while self.end < n && !self.eof {
            // Grow only as data arrives: a hostile length cannot make us allocate it upfront.
            if self.end == self.buf.len() {
                let grow = self.buf.len().min(n - self.end).max(1);
                self.grow(self.end + grow - self.buf.len())?;
            }
            let k = loop {
                match self.r.read(&mut self.buf[self.end..]) {
                    Ok(k) => break k,
                    Err(e)
                        if e.kind() == std::io::ErrorKind::Interrupted
                            && !super::source::is_cancel(&e) => {}
                    Err(e) => return Err(io_or_cancel(e)),
                }
            };
            if k == 0 {
                self.eof = true;
            }
            self.end += k;
        }
        Ok(self.end - self.pos >= n)
    }

    /// Widens the buffer by `more` bytes, as an error (not an abort) when memory runs out.
    fn grow(&mut self, more: usize) -> Result<(), FormatError> {
        crate::budget::try_grow(&mut self.buf, more, "the pickle read buffer")
            .map_err(|e| FormatError::at(self.base + self.end as u64, e))?;
        self.buf.resize(self.buf.len() + more, 0);
        Ok(())
    }

    #[inline(always)]
    fn take(&mut self, n: usize, what: &str) -> Result<&[u8], FormatError> {
        if self.end - self.pos < n && !self.refill(n)? {
            return Err(self.truncated(n, what));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    #[cold]
    fn truncated(&self, n: usize, what: &str) -> FormatError {
        FormatError::at(
            self.offset(),
            format!(
                "the pickle is truncated: {what} needs {n} more bytes but the input ends after {}",
                self.end - self.pos
            ),
        )
    }

    #[inline(always)]
    fn u8(&mut self, what: &str) -> Result<u8, FormatError> {
        Ok(self.take(1, what)?[0])
    }

    #[inline(always)]
    fn u32(&mut self, what: &str) -> Result<u32, FormatError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    #[inline(always)]
    fn u64(&mut self, what: &str) -> Result<u64, FormatError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }
}

/// Name of a refused opcode and why, or None when the byte is not a refused known opcode.
fn refused(op: u8) -> Option<&'static str> {
    Some(match op {
        b'c' => "GLOBAL",
        0x93 => "STACK_GLOBAL",
        b'R' => "REDUCE",
        b'b' => "BUILD",
        b'i' => "INST",
        b'o' => "OBJ",
        0x81 => "NEWOBJ",
        0x92 => "NEWOBJ_EX",
        b'P' => "PERSID",
        b'Q' => "BINPERSID",
        0x82 => "EXT1",
        0x83 => "EXT2",
        0x84 => "EXT4",
        _ => return None,
    })
}

/// Known opcodes outside the data subset a snapshot uses (not code, but not needed either).
fn unsupported(op: u8) -> Option<&'static str> {
    Some(match op {
        b'p' => "PUT",
        b'g' => "GET",
        b'I' => "INT",
        b'L' => "LONG",
        b'F' => "FLOAT",
        b'S' => "STRING",
        b'T' => "BINSTRING",
        b'U' => "SHORT_BINSTRING",
        b'V' => "UNICODE",
        b'2' => "DUP",
        0x8f => "EMPTY_SET",
        0x90 => "ADDITEMS",
        0x91 => "FROZENSET",
        0x96 => "BYTEARRAY8",
        0x97 => "NEXT_BUFFER",
        0x98 => "READONLY_BUFFER",
        _ => return None,
    })
}

/// Longest string, bytes object or long integer memtide reads: 64 MiB. A snapshot's longest
/// strings are file names and `allocator_settings`; a longer declared length is refused
/// before any byte of it is read or buffered.
pub(crate) const MAX_STRING: usize = 64 << 20;

/// A declared length, refused above [`MAX_STRING`].
fn bounded_len(n: u64, what: &str) -> Result<usize, String> {
    usize::try_from(n)
        .ok()
        .filter(|&n| n <= MAX_STRING)
        .ok_or_else(|| {
            format!(
                "{what} of {n} bytes exceeds the limit of {} MiB on one pickle string (not a memory snapshot, or a corrupt length)",
                MAX_STRING >> 20
            )
        })
}

/// Decodes a little-endian two's complement integer of any length (a LONG1/LONG4 payload).
/// Inlined: returned through memory, its value was read back in one 16-byte load that
/// stalled on store forwarding (an eighth of the entry byte reader's time).
#[inline]
pub(crate) fn decode_long(b: &[u8]) -> Val {
    if b.is_empty() {
        return Val::Int(0);
    }
    let negative = b[b.len() - 1] & 0x80 != 0;
    // Strip redundant sign-extension bytes, then fit into i64/u64 when possible.
    let fill = if negative { 0xff } else { 0x00 };
    let mut n = b.len();
    while n > 1 && b[n - 1] == fill && (b[n - 2] & 0x80 != 0) == negative {
        n -= 1;
    }
    if n > 9 || (n == 9 && (negative || b[8] != 0)) {
        return Val::Big { negative };
    }
    // Built in a register: a byte copy into an array read back as a u64 stalled on store
    // forwarding (7 % of the interpreter's time in `perf annotate`).
    let k = n.min(8);
    let mut u = b[..k]
        .iter()
        .rev()
        .fold(0u64, |u, &x| u << 8 | u64::from(x));
    if negative && k < 8 {
        u |= u64::MAX << (8 * k);
    }
    if negative {
        Val::Int(u as i64)
    } else if u > i64::MAX as u64 {
        Val::UInt(u)
    } else {
        Val::Int(u as i64)
    }
}

/// How [`walk_opcodes`] skips an opcode's argument: a fixed byte count (0–8), a
/// little-endian length of 1, 4 or 8 bytes then that many bytes (`LEN | width`), STOP, or
/// not walked (an opcode [`unpickle_into`] does not read either).
const LEN: u8 = 0x10;
const STOP: u8 = 0x20;
const NOT_WALKED: u8 = 0xff;

const WALK: [u8; 256] = {
    let mut t = [NOT_WALKED; 256];
    // No argument.
    let none = [
        0x94, b'N', 0x88, 0x89, b'}', b']', b')', b'(', b'0', b'1', 0x85, 0x86, 0x87, b't', b'l',
        b'd', b'a', b'e', b's', b'u',
    ];
    let mut i = 0;
    while i < none.len() {
        t[none[i] as usize] = 0;
        i += 1;
    }
    t[b'.' as usize] = STOP;
    t[0x80] = 1; // PROTO
    t[0x95] = 8; // FRAME (its length is a hint; the opcodes inside are walked as usual)
    t[b'q' as usize] = 1; // BINPUT
    t[b'r' as usize] = 4; // LONG_BINPUT
    t[b'h' as usize] = 1; // BINGET
    t[b'j' as usize] = 4; // LONG_BINGET
    t[b'K' as usize] = 1; // BININT1
    t[b'M' as usize] = 2; // BININT2
    t[b'J' as usize] = 4; // BININT
    t[b'G' as usize] = 8; // BINFLOAT
    t[0x8c] = LEN | 1; // SHORT_BINUNICODE
    t[b'X' as usize] = LEN | 4; // BINUNICODE
    t[0x8d] = LEN | 8; // BINUNICODE8
    t[b'C' as usize] = LEN | 1; // SHORT_BINBYTES
    t[b'B' as usize] = LEN | 4; // BINBYTES
    t[0x8e] = LEN | 8; // BINBYTES8
    t[0x8a] = LEN | 1; // LONG1
    t[0x8b] = LEN | 4; // LONG4 (signed: a negative length is refused)
    t
};

/// The bare opcode walk, the floor a decoder is measured against: reads the pickle and
/// skips every opcode's argument by its encoding (protocols 2–5, the opcodes
/// `unpickle_into` reads), building nothing and checking no UTF-8. Returns the number of
/// opcodes up to and including STOP (what Python's `pickletools.genops` yields).
///
/// Bad input is a [`FormatError::At`]: truncation, an opcode outside that set, a declared
/// length over `MAX_STRING`.
pub fn walk_opcodes<R: Read>(r: R) -> Result<u64, FormatError> {
    let mut src = Src::new(r);
    let mut n = 0u64;
    loop {
        let (off, op) = src.opcode()?;
        n += 1;
        let k = WALK[op as usize];
        if k <= 8 {
            src.take(k as usize, "an opcode argument")?;
            continue;
        }
        if k == STOP {
            return Ok(n);
        }
        if k == NOT_WALKED {
            return Err(FormatError::at(
                off,
                format!("opcode 0x{op:02x} is not one a memory snapshot uses"),
            ));
        }
        let len = match k & 0x0f {
            1 => src.u8("a length")? as u64,
            4 if op == 0x8b => {
                let l = src.u32("a length")? as i32;
                if l < 0 {
                    return Err(FormatError::at(
                        off,
                        format!("LONG4 with negative length {l}"),
                    ));
                }
                l as u64
            }
            4 => src.u32("a length")? as u64,
            _ => src.u64("a length")?,
        };
        let len = bounded_len(len, "an argument").map_err(|e| FormatError::at(off, e))?;
        src.take(len, "an opcode argument")?;
    }
}

/// The rest of a run of memo fetches (a stack's frames are dozens of BINGETs in a row), taken
/// without the main loop's refill and dispatch. Anything else — another opcode, a fetch cut
/// by the buffer's end, a slot off the flat memo — is left to the main loop, which reads it
/// with its full checks.
#[inline(always)]
fn fetch_run<R>(src: &mut Src<R>, a: &mut Arena, stack: &mut Vec<Val>) {
    let buf = &src.buf[..src.end];
    let mut p = src.pos;
    loop {
        let (idx, next) = match buf.get(p) {
            Some(b'h') => match buf.get(p + 1) {
                Some(&i) => (usize::from(i), p + 2),
                None => break,
            },
            Some(b'j') => match buf.get(p + 1..p + 5) {
                Some(&[b0, b1, b2, b3]) => (u32::from_le_bytes([b0, b1, b2, b3]) as usize, p + 5),
                _ => break,
            },
            _ => break,
        };
        let Some(v) = a.memo.get(idx) else {
            break;
        };
        a.mark_fetched(v);
        stack.push(v);
        p = next;
    }
    src.pos = p;
}

/// Reads one pickle from `r`. Returns the arena and the top-level value.
pub fn unpickle<R: Read>(r: R, hook: &mut impl Hook) -> Result<(Arena, Val), FormatError> {
    let mut arena = Arena::new();
    let top = unpickle_into(r, &mut arena, hook)?;
    Ok((arena, top))
}

/// As [`unpickle`], into an existing arena (so a hook can pre-intern the keys it looks for).
///
/// One loop with one arm per opcode, on purpose: split into a machine with one method per
/// opcode family, the same reader ran 7.5 % more instructions on a 100 k-entry snapshot
/// (callgrind, `memtide summary --json`: 1.212 G vs 1.128 G), so the measured-faster shape stays.
pub(crate) fn unpickle_into<R: Read>(
    r: R,
    a: &mut Arena,
    hook: &mut impl Hook,
) -> Result<Val, FormatError> {
    let mut src = Src::new(r);
    let mut stack: Vec<Val> = Vec::with_capacity(1024);
    let mut marks: Vec<usize> = Vec::with_capacity(64);
    let mut proto_seen = false;

    loop {
        let (off, op) = src.opcode()?;
        let err = |reason: String| FormatError::at(off, reason);
        macro_rules! pop {
            ($what:expr) => {
                match stack.pop() {
                    Some(v) => v,
                    None => {
                        return Err(err(format!(
                            "{} needs a value but the pickle stack is empty (corrupt pickle)",
                            $what
                        )))
                    }
                }
            };
        }
        macro_rules! pop_mark {
            ($what:expr) => {
                match marks.pop() {
                    Some(m) if m <= stack.len() => m,
                    _ => {
                        return Err(err(format!(
                            "{} has no matching MARK (corrupt pickle)",
                            $what
                        )))
                    }
                }
            };
        }
        match op {
            0x80 => {
                let v = src.u8("PROTO")?;
                if !(2..=5).contains(&v) {
                    return Err(err(format!(
                        "pickle protocol {v} is not supported (memtide reads protocols 2 to 5)"
                    )));
                }
                proto_seen = true;
            }
            0x95 => {
                src.u64("FRAME")?;
            }
            b'.' => {
                let v = pop!("STOP");
                if !proto_seen {
                    return Err(err("no PROTO opcode: not a protocol 2–5 pickle".into()));
                }
                return Ok(v);
            }
            0x94 => {
                let Some(&v) = stack.last() else {
                    return Err(err("MEMOIZE with an empty stack (corrupt pickle)".into()));
                };
                let idx = a.memo.len();
                a.memo_put(idx, v);
            }
            b'q' | b'r' => {
                let idx = if op == b'q' {
                    src.u8("BINPUT")? as u64
                } else {
                    src.u32("LONG_BINPUT")? as u64
                };
                let Some(&v) = stack.last() else {
                    return Err(err("BINPUT with an empty stack (corrupt pickle)".into()));
                };
                a.memo_put(idx, v);
            }
            b'h' | b'j' => {
                let idx = if op == b'h' {
                    src.u8("BINGET")? as u64
                } else {
                    src.u32("LONG_BINGET")? as u64
                };
                // Fast path inline (most opcodes of a snapshot are memo fetches).
                let hit = match a.memo.get(idx as usize) {
                    Some(v) => {
                        a.mark_fetched(v);
                        Some(v)
                    }
                    None => a.memo_get(idx),
                };
                match hit {
                    Some(v) => stack.push(v),
                    None => {
                        return Err(err(format!(
                            "memo reference {idx} was never stored (corrupt pickle)"
                        )))
                    }
                }
                fetch_run(&mut src, a, &mut stack);
            }
            0x8c | b'X' | 0x8d => {
                let n = match op {
                    0x8c => src.u8("SHORT_BINUNICODE")? as u64,
                    b'X' => src.u32("BINUNICODE")? as u64,
                    _ => src.u64("BINUNICODE8")?,
                };
                let n = bounded_len(n, "a string").map_err(err)?;
                let b = src.take(n, "a string")?;
                let s = std::str::from_utf8(b)
                    .map_err(|e| err(format!("string is not valid UTF-8: {e}")))?;
                let id = a.intern(s);
                stack.push(Val::Str(id));
            }
            b'C' | b'B' | 0x8e => {
                let n = match op {
                    b'C' => src.u8("SHORT_BINBYTES")? as u64,
                    b'B' => src.u32("BINBYTES")? as u64,
                    _ => src.u64("BINBYTES8")?,
                };
                let n = bounded_len(n, "a bytes object").map_err(err)?;
                let b: Box<[u8]> = src.take(n, "a bytes object")?.into();
                a.bytes.push(b);
                stack.push(Val::Bytes(a.bytes.len() as u32 - 1));
            }
            b'J' => {
                let v = src.u32("BININT")? as i32;
                stack.push(Val::Int(v as i64));
            }
            b'K' => {
                let v = src.u8("BININT1")?;
                stack.push(Val::Int(v as i64));
            }
            b'M' => {
                let b = src.take(2, "BININT2")?;
                stack.push(Val::Int(u16::from_le_bytes([b[0], b[1]]) as i64));
            }
            0x8a | 0x8b => {
                let n = if op == 0x8a {
                    src.u8("LONG1")? as usize
                } else {
                    let n = src.u32("LONG4")? as i32;
                    if n < 0 {
                        return Err(err(format!("LONG4 with negative length {n}")));
                    }
                    bounded_len(n as u64, "a long integer").map_err(err)?
                };
                let b = src.take(n, "a long integer")?;
                stack.push(decode_long(b));
            }
            b'G' => {
                let v = src.u64("BINFLOAT")?;
                // BINFLOAT is big-endian; u64() read it little-endian.
                stack.push(Val::Float(f64::from_bits(v.swap_bytes())));
            }
            b'N' => stack.push(Val::None),
            0x88 => stack.push(Val::Bool(true)),
            0x89 => stack.push(Val::Bool(false)),
            b'}' => {
                // A dict that opens inside an APPENDS batch (a trace entry) may be read by
                // the hook straight from the bytes.
                let in_batch = marks.last().is_some_and(|&p| {
                    p >= 1 && p <= stack.len() && matches!(stack.get(p - 1), Some(Val::List(_)))
                });
                if in_batch {
                    if let Some((v, used)) = hook.fast_dict(a, &src.buf[src.pos..src.end]) {
                        src.pos += used;
                        stack.push(v);
                        continue;
                    }
                }
                let v = a.new_dict(Vec::new());
                stack.push(v);
            }
            b']' => {
                let v = a.new_list(Vec::new());
                stack.push(v);
            }
            b')' => {
                a.tuples.push(Box::new([]));
                stack.push(Val::Tuple(a.tuples.len() as u32 - 1));
            }
            b'(' => marks.push(stack.len()),
            b'0' => {
                pop!("POP");
            }
            b'1' => {
                let m = pop_mark!("POP_MARK");
                stack.truncate(m);
            }
            0x85..=0x87 => {
                let n = (op - 0x84) as usize;
                if stack.len() < n {
                    return Err(err(format!(
                        "TUPLE{n} needs {n} values but the stack holds {} (corrupt pickle)",
                        stack.len()
                    )));
                }
                let items: Box<[Val]> = stack.split_off(stack.len() - n).into();
                a.tuples.push(items);
                stack.push(Val::Tuple(a.tuples.len() as u32 - 1));
            }
            b't' => {
                let m = pop_mark!("TUPLE");
                let items: Box<[Val]> = stack.split_off(m).into();
                a.tuples.push(items);
                stack.push(Val::Tuple(a.tuples.len() as u32 - 1));
            }
            b'l' => {
                let m = pop_mark!("LIST");
                let items = stack.split_off(m);
                let mut conv = Vec::with_capacity(items.len());
                for v in items {
                    conv.push(hook.appended(a, v).map_err(err)?);
                }
                let v = a.new_list(conv);
                stack.push(v);
            }
            b'd' => {
                let m = pop_mark!("DICT");
                let items = stack.split_off(m);
                if !items.len().is_multiple_of(2) {
                    return Err(err(
                        "DICT with an odd number of items (corrupt pickle)".into()
                    ));
                }
                let pairs = items.chunks_exact(2).map(|p| (p[0], p[1])).collect();
                let v = a.new_dict(pairs);
                stack.push(v);
            }
            b'a' => {
                let v = pop!("APPEND");
                let Some(&Val::List(id)) = stack.last() else {
                    return Err(err(format!(
                        "APPEND onto a {} (expected a list)",
                        stack.last().map_or("nothing", |v| v.type_name())
                    )));
                };
                let v = hook.appended(a, v).map_err(err)?;
                if let Some(s) = a.lists.get_mut(id as usize) {
                    s.items.extend(&[v]);
                }
            }
            b'e' => {
                let m = pop_mark!("APPENDS");
                if m == 0 {
                    return Err(err("APPENDS without a list below its MARK".into()));
                }
                let Some(&Val::List(id)) = stack.get(m - 1) else {
                    return Err(err(format!(
                        "APPENDS onto a {} (expected a list)",
                        stack.get(m - 1).map_or("nothing", |v| v.type_name())
                    )));
                };
                // Converted in place on the stack: no per-batch buffers.
                for v in &mut stack[m..] {
                    *v = hook.appended(a, *v).map_err(err)?;
                }
                if let Some(s) = a.lists.get_mut(id as usize) {
                    s.items.extend(&stack[m..]);
                }
                stack.truncate(m);
            }
            b's' => {
                let v = pop!("SETITEM");
                let k = pop!("SETITEM");
                let Some(&Val::Dict(id)) = stack.last() else {
                    return Err(err(format!(
                        "SETITEM onto a {} (expected a dict)",
                        stack.last().map_or("nothing", |v| v.type_name())
                    )));
                };
                if a.dict_sealed(id).is_some() {
                    return Err(err(SEALED.into()));
                }
                dict_insert(a, id, k, v);
            }
            b'u' => {
                let m = pop_mark!("SETITEMS");
                if m == 0 {
                    return Err(err("SETITEMS without a dict below its MARK".into()));
                }
                let Some(&Val::Dict(id)) = stack.get(m - 1) else {
                    return Err(err(format!(
                        "SETITEMS onto a {} (expected a dict)",
                        stack.get(m - 1).map_or("nothing", |v| v.type_name())
                    )));
                };
                if !(stack.len() - m).is_multiple_of(2) {
                    return Err(err(
                        "SETITEMS with an odd number of items (corrupt pickle)".into()
                    ));
                }
                let fresh = match a.dicts.get(id as usize) {
                    Some(s) if s.sealed != NOT_SEALED => return Err(err(SEALED.into())),
                    Some(s) => s.items.is_empty(),
                    None => false,
                };
                // A fresh dict about to be appended (an APPENDS batch onto a list is open
                // below it) may be converted by the hook straight from the stack.
                let in_batch = fresh
                    && marks.last().is_some_and(|&p| {
                        p >= 1 && p < m && matches!(stack.get(p - 1), Some(Val::List(_)))
                    });
                if in_batch {
                    if let Some((kind, conv)) = hook.dict_filled(a, &stack[m..]).map_err(err)? {
                        if let Some(s) = a.dicts.get_mut(id as usize) {
                            s.sealed = kind;
                            s.conv = conv;
                        }
                        stack.truncate(m);
                        if hook.stands_converted(kind) {
                            // From now on it is its conversion, on the stack and in the memo
                            // (a holder that fetched it before keeps the sealed dict).
                            let done = Val::Done(kind, conv);
                            a.consume_dict(id, conv, done);
                            if let Some(top) = stack.last_mut() {
                                *top = done;
                            }
                        }
                        continue;
                    }
                }
                if let Some(items) = a.dict_mut(id) {
                    items.reserve((stack.len() - m) / 2);
                }
                let mut i = m;
                while i + 1 < stack.len() {
                    dict_insert(a, id, stack[i], stack[i + 1]);
                    i += 2;
                }
                stack.truncate(m);
            }
            _ => {
                if let Some(name) = refused(op) {
                    // Before any container: the top-level value is a Python object (a pickled
                    // config or `argparse.Namespace`), certainly not a snapshot, whose
                    // top-level value is a dict or a list made first.
                    let top_is_object = marks.is_empty()
                        && !stack.iter().any(|v| {
                            matches!(
                                v,
                                Val::Dict(_) | Val::List(_) | Val::Tuple(_) | Val::Done(..)
                            )
                        });
                    if top_is_object {
                        return Err(FormatError::NotATrace(
                            err(format!(
                                "the pickle holds a Python object (refused opcode {name} (0x{op:02x}) before any dict or list: it would make Python import or call code), not a memory snapshot"
                            ))
                            .to_string(),
                        ));
                    }
                    return Err(err(format!(
                        "refused opcode {name} (0x{op:02x}): it would make Python import or call code; a memory snapshot holds only plain data (dict, list, str, int, float), so this file is not a snapshot or was tampered with"
                    )));
                }
                if let Some(name) = unsupported(op) {
                    return Err(err(format!(
                        "unsupported opcode {name} (0x{op:02x}): not used by PyTorch memory snapshots"
                    )));
                }
                return Err(err(format!(
                    "unknown opcode 0x{op:02x}: not a pickle opcode memtide reads (corrupt or not a snapshot)"
                )));
            }
        }
    }
}

const SEALED: &str =
    "assignment into a dict whose items were already converted (not a snapshot layout memtide reads)";

/// Dict assignment keeps Python semantics: an existing key is overwritten in place.
fn dict_insert(a: &mut Arena, id: u32, k: Val, v: Val) {
    if let Some(items) = a.dict_mut(id) {
        // Small dicts (the norm here) are scanned; the last write wins.
        if items.len() <= 16 {
            if let Some(slot) = items.iter_mut().find(|(kk, _)| *kk == k) {
                slot.1 = v;
                return;
            }
        }
        items.push((k, v));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn load(b: &[u8]) -> Result<(Arena, Val), FormatError> {
        unpickle(b, &mut NoHook)
    }

    #[test]
    fn long1_two_complement() {
        assert_eq!(decode_long(&[0xff]), Val::Int(-1));
        assert_eq!(decode_long(&[0xff, 0x00]), Val::Int(255));
        assert_eq!(
            decode_long(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00]),
            Val::UInt(u64::MAX)
        );
        assert_eq!(
            decode_long(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]),
            Val::Big { negative: false }
        );
        assert_eq!(decode_long(&[0x00, 0x80]), Val::Int(-32768));
    }

    #[test]
    fn shared_memo_objects_stay_shared() {
        // pickle.dumps([l, l], protocol=4) with l = [{"x": 1}]
        let b = b"\x80\x04\x95\x13\x00\x00\x00\x00\x00\x00\x00]\x94(]\x94}\x94\x8c\x01x\x94K\x01sah\x01e.";
        let (a, top) = load(b).unwrap();
        let Val::List(t) = top else { panic!() };
        let items = a.list(t).to_vec();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0], items[1]);
    }

    #[test]
    fn refuses_code() {
        // pickle.dumps(os.system) style: GLOBAL
        let b = b"\x80\x02cos\nsystem\nq\x00.";
        let e = load(b).unwrap_err().to_string();
        assert!(e.contains("GLOBAL") && e.contains("byte offset 2"), "{e}");
        let b = b"\x80\x04\x93.";
        let e = load(b).unwrap_err().to_string();
        assert!(e.contains("STACK_GLOBAL"), "{e}");
    }

    /// Seals every dict filled inside an APPENDS batch, converting it to the sum of its ints.
    struct Seal;

    impl Hook for Seal {
        fn appended(&mut self, a: &mut Arena, v: Val) -> Result<Val, String> {
            match v {
                Val::Dict(id) => Ok(a.dict_sealed(id).map_or(v, |(k, c)| Val::Done(k, c))),
                _ => Ok(v),
            }
        }

        fn dict_filled(
            &mut self,
            _: &mut Arena,
            items: &[Val],
        ) -> Result<Option<(u8, u32)>, String> {
            let sum = items.iter().filter_map(|v| v.as_i64()).sum::<i64>();
            Ok(Some((7, sum as u32)))
        }
    }

    #[test]
    fn sealed_dicts_convert_from_setitems() {
        // pickle.dumps([{"x": 1, "y": 2}, {"x": 3, "y": 4}], protocol=4)
        let b = b"\x80\x04\x95!\x00\x00\x00\x00\x00\x00\x00]\x94(}\x94(\x8c\x01x\x94K\x01\x8c\x01y\x94K\x02u}\x94(h\x02K\x03h\x03K\x04ue.";
        let (a, top) = unpickle(&b[..], &mut Seal).unwrap();
        let Val::List(t) = top else { panic!() };
        assert_eq!(a.list(t).to_vec(), vec![Val::Done(7, 3), Val::Done(7, 7)]);
        // Without the hook the same bytes give plain dicts.
        let (a, top) = load(b).unwrap();
        let Val::List(t) = top else { panic!() };
        let Val::Dict(d) = a.list(t).to_vec()[1] else {
            panic!()
        };
        assert_eq!(a.dict(d).len(), 2);
    }

    #[test]
    fn assignment_into_a_sealed_dict_is_refused() {
        // [d] where d = {"x": 1, "y": 2} is fetched back from the memo and given "z": 3
        // before the APPENDS: Python gives [{'x': 1, 'y': 2, 'z': 3}].
        let b =
            b"\x80\x04]\x94(}\x94(\x8c\x01x\x94K\x01\x8c\x01y\x94K\x02uh\x01\x8c\x01z\x94K\x03s0e.";
        let (a, top) = load(b).unwrap();
        let Val::List(t) = top else { panic!() };
        let Val::Dict(d) = a.list(t).to_vec()[0] else {
            panic!()
        };
        assert_eq!(a.dict(d).len(), 3);
        let e = unpickle(&b[..], &mut Seal).unwrap_err().to_string();
        assert!(
            e.contains("already converted") && e.contains("byte offset 29"),
            "{e}"
        );
    }

    #[test]
    fn walk_counts_opcodes() {
        // The shared-memo pickle above: PROTO FRAME EMPTY_LIST MEMOIZE MARK EMPTY_LIST MEMOIZE
        // EMPTY_DICT MEMOIZE SHORT_BINUNICODE MEMOIZE BININT1 SETITEM APPEND BINGET APPENDS
        // STOP = 17 (pickletools.genops agrees).
        let b = b"\x80\x04\x95\x13\x00\x00\x00\x00\x00\x00\x00]\x94(]\x94}\x94\x8c\x01x\x94K\x01sah\x01e.";
        assert_eq!(walk_opcodes(&b[..]).unwrap(), 17);
        // Every length-prefixed and fixed-width argument kind, each once, by hand:
        // PROTO 2, BINUNICODE "ab", BINBYTES8 b"", LONG4 of 2 bytes, BINFLOAT, BININT2,
        // TUPLE3, POP, STOP = 9 (pickletools.genops agrees; pickle.loads gives b"").
        let mut b = vec![0x80, 2, b'X', 2, 0, 0, 0, b'a', b'b', 0x8e];
        b.extend_from_slice(&[0; 8]);
        b.extend_from_slice(&[0x8b, 2, 0, 0, 0, 1, 2, b'G']);
        b.extend_from_slice(&[0x3f, 0xf0, 0, 0, 0, 0, 0, 0, b'M', 1, 2, 0x87, b'0', b'.']);
        assert_eq!(walk_opcodes(&b[..]).unwrap(), 9);
        // The decoder reads the same bytes (the walk's set is the decoder's).
        let (_, top) = load(&b).unwrap();
        assert!(matches!(top, Val::Bytes(_)));
    }

    #[test]
    fn walk_counts_the_baseline_like_genops() {
        // `sum(1 for _ in pickletools.genops(open(path, "rb").read()))` = 273718 (Python 3).
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/snapshot-baseline/baseline.pickle"
        );
        let f = std::fs::File::open(path).unwrap();
        assert_eq!(walk_opcodes(f).unwrap(), 273_718);
    }

    #[test]
    fn walk_refuses_what_the_decoder_refuses() {
        let e = walk_opcodes(&b"\x80\x02cos\nsystem\n."[..])
            .unwrap_err()
            .to_string();
        assert!(e.contains("0x63") && e.contains("byte offset 2"), "{e}");
        let e = walk_opcodes(&b"\x80\x04\x8c\x05ab"[..])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("byte offset 4") && e.contains("truncated"),
            "{e}"
        );
        let e = walk_opcodes(&b"\x80\x04\x8b\xff\xff\xff\xff."[..])
            .unwrap_err()
            .to_string();
        assert!(e.contains("negative"), "{e}");
        let e = walk_opcodes(&b"\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\xff."[..])
            .unwrap_err()
            .to_string();
        assert!(e.contains("exceeds the limit"), "{e}");
    }

    #[test]
    fn a_run_of_memo_fetches_reads_as_single_fetches_and_keeps_error_offsets() {
        // PROTO 4, MARK, EMPTY_LIST, MEMOIZE (memo 0), then fetches of it: BINGET 0,
        // LONG_BINGET 0, BINGET 0, LIST (the MARK's items), STOP.
        let b = b"\x80\x04(]\x94h\x00j\x00\x00\x00\x00h\x00l.";
        let (a, top) = load(b).unwrap();
        let Val::List(id) = top else {
            panic!("a list: {top:?}")
        };
        let items = a.list(id).to_vec();
        assert_eq!(items.len(), 4, "the list and its three fetches");
        assert!(items.iter().all(|v| *v == items[0]), "{items:?}");
        // A fetch of a slot never stored, inside a run: the error names its own offset
        // (BINGET 0 at 4, BINGET 0 at 6, BINGET 9 at 8).
        let b = b"\x80\x04]\x94h\x00h\x00h\x09.";
        let e = load(b).unwrap_err().to_string();
        assert!(
            e.contains("memo reference 9") && e.contains("byte offset 8"),
            "{e}"
        );
        // A LONG_BINGET cut by the end of the input, after a run.
        let b = b"\x80\x04]\x94h\x00j\x00\x00";
        let e = load(b).unwrap_err().to_string();
        assert!(
            e.contains("truncated") && e.contains("byte offset 7"),
            "{e}"
        );
    }

    #[test]
    fn truncation_has_offset() {
        let b = b"\x80\x04\x8c\x05ab";
        let e = load(b).unwrap_err().to_string();
        assert!(
            e.contains("byte offset 4") && e.contains("truncated"),
            "{e}"
        );
    }
}
