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

use super::error::FormatError;
use super::source::io_or_cancel;
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
    items: Vec<T>,
    memo: u32,
    shared: bool,
    /// A hook's cached conversion of this container (`u32::MAX`: none).
    conv: u32,
    /// For a dict the hook converted from its items as they were set ([`Hook::dict_filled`]):
    /// the hook's kind, else `NOT_SEALED`. A sealed dict stores no items and takes no more.
    sealed: u8,
}

const NOT_SEALED: u8 = u8::MAX;

impl<T> Slot<T> {
    fn new(items: Vec<T>) -> Self {
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
        self.items = Vec::new();
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
fn place<T>(slots: &mut Vec<Slot<T>>, free: &mut Vec<u32>, slot: Slot<T>) -> u32 {
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
    lists: Vec<Slot<Val>>,
    free_lists: Vec<u32>,
    dicts: Vec<Slot<(Val, Val)>>,
    free_dicts: Vec<u32>,
    tuples: Vec<Box<[Val]>>,
    memo: Vec<Val>,
    /// Memo indices far beyond the end (a sparse, hostile file): kept aside.
    memo_far: FxHashMap<u64, Val>,
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

    pub fn list(&self, id: u32) -> &[Val] {
        self.lists.get(id as usize).map_or(&[], |s| &s.items)
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
        self.lists.get_mut(id as usize).map(|s| &mut s.items)
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
        if let Some(m) = self.memo.get_mut(idx as usize) {
            if *m == old {
                *m = new;
            }
        }
    }

    fn new_list(&mut self, items: Vec<Val>) -> Val {
        Val::List(place(
            &mut self.lists,
            &mut self.free_lists,
            Slot::new(items),
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
        let len = self.memo.len() as u64;
        if idx < len {
            self.memo[idx as usize] = v;
        } else if idx == len {
            self.memo.push(v);
        } else {
            self.memo_far.insert(idx, v);
        }
    }

    fn memo_get(&mut self, idx: u64) -> Option<Val> {
        let v = match self.memo.get(idx as usize) {
            Some(v) => *v,
            None => *self.memo_far.get(&idx)?,
        };
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
        Some(v)
    }

    /// Drops the memo (call after the last opcode to free memory early).
    pub fn drop_memo(&mut self) {
        self.memo = Vec::new();
        self.memo_far = FxHashMap::default();
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

/// Larger than the 1 MiB `BufReader` under a plain file, so reads bypass its copy.
const CHUNK: usize = 4 << 20;

impl<R: Read> Src<R> {
    fn offset(&self) -> u64 {
        self.base + self.pos as u64
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
                            && e.to_string() != "cancelled" => {}
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

    #[inline]
    fn take(&mut self, n: usize, what: &str) -> Result<&[u8], FormatError> {
        if !self.fill(n)? {
            return Err(FormatError::at(
                self.offset(),
                format!(
                    "the pickle is truncated: {what} needs {n} more bytes but the input ends after {}",
                    self.end - self.pos
                ),
            ));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    #[inline]
    fn u8(&mut self, what: &str) -> Result<u8, FormatError> {
        Ok(self.take(1, what)?[0])
    }

    #[inline]
    fn u32(&mut self, what: &str) -> Result<u32, FormatError> {
        let b = self.take(4, what)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    #[inline]
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
pub const MAX_STRING: usize = 64 << 20;

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

/// Decodes a little-endian two's complement integer of any length.
fn decode_long(b: &[u8]) -> Val {
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
    let mut a = [fill; 8];
    let k = n.min(8);
    a[..k].copy_from_slice(&b[..k]);
    let u = u64::from_le_bytes(a);
    if negative {
        Val::Int(u as i64)
    } else if u > i64::MAX as u64 {
        Val::UInt(u)
    } else {
        Val::Int(u as i64)
    }
}

/// Reads one pickle from `r`. Returns the arena and the top-level value.
pub fn unpickle<R: Read>(r: R, hook: &mut impl Hook) -> Result<(Arena, Val), FormatError> {
    let mut arena = Arena::new();
    let top = unpickle_into(r, &mut arena, hook)?;
    Ok((arena, top))
}

/// As [`unpickle`], into an existing arena (so a hook can pre-intern the keys it looks for).
pub fn unpickle_into<R: Read>(
    r: R,
    a: &mut Arena,
    hook: &mut impl Hook,
) -> Result<Val, FormatError> {
    let mut vm = Machine {
        src: Src {
            r,
            buf: Vec::new(),
            pos: 0,
            end: 0,
            base: 0,
            eof: false,
        },
        a,
        hook,
        stack: Vec::with_capacity(1024),
        marks: Vec::with_capacity(64),
        proto_seen: false,
        off: 0,
    };
    loop {
        let op = vm.next_opcode()?;
        if let Some(top) = vm.execute(op)? {
            return Ok(top);
        }
    }
}

/// The pickle machine: the input, the arena it builds into, the value stack and the marks.
struct Machine<'a, R, H> {
    src: Src<R>,
    a: &'a mut Arena,
    hook: &'a mut H,
    stack: Vec<Val>,
    marks: Vec<usize>,
    proto_seen: bool,
    /// The offset of the opcode being executed (where its errors point).
    off: u64,
}

impl<R: Read, H: Hook> Machine<'_, R, H> {
    /// Reads the next opcode byte, noting its offset.
    #[inline(always)]
    fn next_opcode(&mut self) -> Result<u8, FormatError> {
        self.off = self.src.offset();
        if !self.src.fill(1)? {
            return Err(FormatError::at(
                self.off,
                "the pickle is truncated: the input ends before the STOP opcode",
            ));
        }
        let op = self.src.buf[self.src.pos];
        self.src.pos += 1;
        Ok(op)
    }

    /// Executes one opcode; the top-level value once STOP is reached.
    #[inline(always)]
    fn execute(&mut self, op: u8) -> Result<Option<Val>, FormatError> {
        match op {
            0x80 => self.proto()?,
            0x95 => {
                self.src.u64("FRAME")?;
            }
            b'.' => return self.stop().map(Some),
            0x94 | b'q' | b'r' => self.memo_put(op)?,
            b'h' | b'j' => self.memo_get(op)?,
            0x8c | b'X' | 0x8d => self.string(op)?,
            b'C' | b'B' | 0x8e => self.bytes(op)?,
            b'J' | b'K' | b'M' | 0x8a | 0x8b | b'G' => self.number(op)?,
            b'N' => self.stack.push(Val::None),
            0x88 => self.stack.push(Val::Bool(true)),
            0x89 => self.stack.push(Val::Bool(false)),
            b'}' => {
                let v = self.a.new_dict(Vec::new());
                self.stack.push(v);
            }
            b']' => {
                let v = self.a.new_list(Vec::new());
                self.stack.push(v);
            }
            b')' => self.push_tuple(Box::new([])),
            b'(' => self.marks.push(self.stack.len()),
            b'0' => {
                self.pop("POP")?;
            }
            b'1' => {
                let m = self.pop_mark("POP_MARK")?;
                self.stack.truncate(m);
            }
            0x85..=0x87 | b't' => self.tuple(op)?,
            b'l' => self.list()?,
            b'd' => self.dict()?,
            b'a' => self.append()?,
            b'e' => self.appends()?,
            b's' => self.setitem()?,
            b'u' => self.setitems()?,
            _ => return Err(self.not_read(op)),
        }
        Ok(None)
    }

    /// An error at the current opcode.
    fn fail(&self, reason: String) -> FormatError {
        FormatError::at(self.off, reason)
    }

    #[inline(always)]
    fn pop(&mut self, what: &str) -> Result<Val, FormatError> {
        self.stack.pop().ok_or_else(|| {
            self.fail(format!(
                "{what} needs a value but the pickle stack is empty (corrupt pickle)"
            ))
        })
    }

    #[inline(always)]
    fn pop_mark(&mut self, what: &str) -> Result<usize, FormatError> {
        match self.marks.pop() {
            Some(m) if m <= self.stack.len() => Ok(m),
            _ => Err(self.fail(format!("{what} has no matching MARK (corrupt pickle)"))),
        }
    }

    #[inline(always)]
    fn push_tuple(&mut self, items: Box<[Val]>) {
        self.a.tuples.push(items);
        self.stack.push(Val::Tuple(self.a.tuples.len() as u32 - 1));
    }

    /// PROTO: only protocols 2 to 5.
    fn proto(&mut self) -> Result<(), FormatError> {
        let v = self.src.u8("PROTO")?;
        if !(2..=5).contains(&v) {
            return Err(self.fail(format!(
                "pickle protocol {v} is not supported (memtide reads protocols 2 to 5)"
            )));
        }
        self.proto_seen = true;
        Ok(())
    }

    /// STOP: the value on top of the stack is the pickle's.
    fn stop(&mut self) -> Result<Val, FormatError> {
        let v = self.pop("STOP")?;
        if !self.proto_seen {
            return Err(self.fail("no PROTO opcode: not a protocol 2–5 pickle".into()));
        }
        Ok(v)
    }

    /// MEMOIZE, BINPUT, LONG_BINPUT: remember the top of the stack.
    #[inline(always)]
    fn memo_put(&mut self, op: u8) -> Result<(), FormatError> {
        let (idx, name) = match op {
            0x94 => (self.a.memo.len() as u64, "MEMOIZE"),
            b'q' => (self.src.u8("BINPUT")? as u64, "BINPUT"),
            _ => (self.src.u32("LONG_BINPUT")? as u64, "BINPUT"),
        };
        let Some(&v) = self.stack.last() else {
            return Err(self.fail(format!("{name} with an empty stack (corrupt pickle)")));
        };
        self.a.memo_put(idx, v);
        Ok(())
    }

    /// BINGET, LONG_BINGET: push a remembered value.
    #[inline(always)]
    fn memo_get(&mut self, op: u8) -> Result<(), FormatError> {
        let idx = if op == b'h' {
            self.src.u8("BINGET")? as u64
        } else {
            self.src.u32("LONG_BINGET")? as u64
        };
        match self.a.memo_get(idx) {
            Some(v) => {
                self.stack.push(v);
                Ok(())
            }
            None => Err(self.fail(format!(
                "memo reference {idx} was never stored (corrupt pickle)"
            ))),
        }
    }

    /// SHORT_BINUNICODE, BINUNICODE, BINUNICODE8: an interned UTF-8 string.
    #[inline(always)]
    fn string(&mut self, op: u8) -> Result<(), FormatError> {
        let n = match op {
            0x8c => self.src.u8("SHORT_BINUNICODE")? as u64,
            b'X' => self.src.u32("BINUNICODE")? as u64,
            _ => self.src.u64("BINUNICODE8")?,
        };
        let n = bounded_len(n, "a string").map_err(|e| self.fail(e))?;
        let off = self.off;
        let b = self.src.take(n, "a string")?;
        let s = std::str::from_utf8(b)
            .map_err(|e| FormatError::at(off, format!("string is not valid UTF-8: {e}")))?;
        let id = self.a.intern(s);
        self.stack.push(Val::Str(id));
        Ok(())
    }

    /// SHORT_BINBYTES, BINBYTES, BINBYTES8.
    #[inline(always)]
    fn bytes(&mut self, op: u8) -> Result<(), FormatError> {
        let n = match op {
            b'C' => self.src.u8("SHORT_BINBYTES")? as u64,
            b'B' => self.src.u32("BINBYTES")? as u64,
            _ => self.src.u64("BINBYTES8")?,
        };
        let n = bounded_len(n, "a bytes object").map_err(|e| self.fail(e))?;
        let b: Box<[u8]> = self.src.take(n, "a bytes object")?.into();
        self.a.bytes.push(b);
        self.stack.push(Val::Bytes(self.a.bytes.len() as u32 - 1));
        Ok(())
    }

    /// BININT, BININT1, BININT2, LONG1, LONG4, BINFLOAT.
    #[inline(always)]
    fn number(&mut self, op: u8) -> Result<(), FormatError> {
        let v = match op {
            b'J' => Val::Int(self.src.u32("BININT")? as i32 as i64),
            b'K' => Val::Int(self.src.u8("BININT1")? as i64),
            b'M' => {
                let b = self.src.take(2, "BININT2")?;
                Val::Int(u16::from_le_bytes([b[0], b[1]]) as i64)
            }
            0x8a | 0x8b => {
                let n = if op == 0x8a {
                    self.src.u8("LONG1")? as usize
                } else {
                    let n = self.src.u32("LONG4")? as i32;
                    if n < 0 {
                        return Err(self.fail(format!("LONG4 with negative length {n}")));
                    }
                    bounded_len(n as u64, "a long integer").map_err(|e| self.fail(e))?
                };
                decode_long(self.src.take(n, "a long integer")?)
            }
            // BINFLOAT is big-endian; u64() reads little-endian.
            _ => Val::Float(f64::from_bits(self.src.u64("BINFLOAT")?.swap_bytes())),
        };
        self.stack.push(v);
        Ok(())
    }

    /// TUPLE1–3 (the top values) and TUPLE (the values above the mark).
    #[inline(always)]
    fn tuple(&mut self, op: u8) -> Result<(), FormatError> {
        let from = if op == b't' {
            self.pop_mark("TUPLE")?
        } else {
            let n = (op - 0x84) as usize;
            if self.stack.len() < n {
                return Err(self.fail(format!(
                    "TUPLE{n} needs {n} values but the stack holds {} (corrupt pickle)",
                    self.stack.len()
                )));
            }
            self.stack.len() - n
        };
        let items: Box<[Val]> = self.stack.split_off(from).into();
        self.push_tuple(items);
        Ok(())
    }

    /// LIST: the values above the mark, each passed through the hook.
    #[inline(always)]
    fn list(&mut self) -> Result<(), FormatError> {
        let m = self.pop_mark("LIST")?;
        let items = self.stack.split_off(m);
        let mut conv = Vec::with_capacity(items.len());
        for v in items {
            conv.push(self.hook.appended(self.a, v).map_err(|e| self.fail(e))?);
        }
        let v = self.a.new_list(conv);
        self.stack.push(v);
        Ok(())
    }

    /// DICT: key/value pairs above the mark.
    #[inline(always)]
    fn dict(&mut self) -> Result<(), FormatError> {
        let m = self.pop_mark("DICT")?;
        let items = self.stack.split_off(m);
        if !items.len().is_multiple_of(2) {
            return Err(self.fail("DICT with an odd number of items (corrupt pickle)".into()));
        }
        let pairs = items.chunks_exact(2).map(|p| (p[0], p[1])).collect();
        let v = self.a.new_dict(pairs);
        self.stack.push(v);
        Ok(())
    }

    /// The list at stack position `at` (for APPEND/APPENDS), or an error naming what is there.
    #[inline(always)]
    fn list_at(&self, at: Option<usize>, what: &str) -> Result<u32, FormatError> {
        match at.and_then(|i| self.stack.get(i)) {
            Some(&Val::List(id)) => Ok(id),
            other => Err(self.fail(format!(
                "{what} onto a {} (expected a list)",
                other.map_or("nothing", |v| v.type_name())
            ))),
        }
    }

    /// The dict at stack position `at` (for SETITEM/SETITEMS).
    #[inline(always)]
    fn dict_at(&self, at: Option<usize>, what: &str) -> Result<u32, FormatError> {
        match at.and_then(|i| self.stack.get(i)) {
            Some(&Val::Dict(id)) => Ok(id),
            other => Err(self.fail(format!(
                "{what} onto a {} (expected a dict)",
                other.map_or("nothing", |v| v.type_name())
            ))),
        }
    }

    /// APPEND: one value onto the list below it.
    #[inline(always)]
    fn append(&mut self) -> Result<(), FormatError> {
        let v = self.pop("APPEND")?;
        let id = self.list_at(self.stack.len().checked_sub(1), "APPEND")?;
        let v = self.hook.appended(self.a, v).map_err(|e| self.fail(e))?;
        if let Some(s) = self.a.lists.get_mut(id as usize) {
            s.items.push(v);
        }
        Ok(())
    }

    /// APPENDS: the values above the mark onto the list below it.
    #[inline(always)]
    fn appends(&mut self) -> Result<(), FormatError> {
        let m = self.pop_mark("APPENDS")?;
        if m == 0 {
            return Err(self.fail("APPENDS without a list below its MARK".into()));
        }
        let id = self.list_at(Some(m - 1), "APPENDS")?;
        // Converted in place on the stack: no per-batch buffers.
        for i in m..self.stack.len() {
            let v = self.stack[i];
            self.stack[i] = self.hook.appended(self.a, v).map_err(|e| self.fail(e))?;
        }
        if let Some(s) = self.a.lists.get_mut(id as usize) {
            s.items.extend_from_slice(&self.stack[m..]);
        }
        self.stack.truncate(m);
        Ok(())
    }

    /// SETITEM: one key/value into the dict below them.
    #[inline(always)]
    fn setitem(&mut self) -> Result<(), FormatError> {
        let v = self.pop("SETITEM")?;
        let k = self.pop("SETITEM")?;
        let id = self.dict_at(self.stack.len().checked_sub(1), "SETITEM")?;
        if self.a.dict_sealed(id).is_some() {
            return Err(self.fail(SEALED.into()));
        }
        dict_insert(self.a, id, k, v);
        Ok(())
    }

    /// SETITEMS: the pairs above the mark into the dict below it; a fresh dict inside an
    /// APPENDS batch may be converted by the hook straight from the stack.
    #[inline(always)]
    fn setitems(&mut self) -> Result<(), FormatError> {
        let m = self.pop_mark("SETITEMS")?;
        if m == 0 {
            return Err(self.fail("SETITEMS without a dict below its MARK".into()));
        }
        let id = self.dict_at(Some(m - 1), "SETITEMS")?;
        if !(self.stack.len() - m).is_multiple_of(2) {
            return Err(self.fail("SETITEMS with an odd number of items (corrupt pickle)".into()));
        }
        let fresh = match self.a.dicts.get(id as usize) {
            Some(s) if s.sealed != NOT_SEALED => return Err(self.fail(SEALED.into())),
            Some(s) => s.items.is_empty(),
            None => false,
        };
        // A fresh dict about to be appended (an APPENDS batch onto a list is open below it).
        let in_batch = fresh
            && self.marks.last().is_some_and(|&p| {
                p >= 1 && p < m && matches!(self.stack.get(p - 1), Some(Val::List(_)))
            });
        if in_batch {
            let filled = self
                .hook
                .dict_filled(self.a, &self.stack[m..])
                .map_err(|e| FormatError::at(self.off, e))?;
            if let Some((kind, conv)) = filled {
                if let Some(s) = self.a.dicts.get_mut(id as usize) {
                    s.sealed = kind;
                    s.conv = conv;
                }
                self.stack.truncate(m);
                return Ok(());
            }
        }
        if let Some(items) = self.a.dict_mut(id) {
            items.reserve((self.stack.len() - m) / 2);
        }
        let mut i = m;
        while i + 1 < self.stack.len() {
            dict_insert(self.a, id, self.stack[i], self.stack[i + 1]);
            i += 2;
        }
        self.stack.truncate(m);
        Ok(())
    }

    /// An opcode memtide does not execute: refused (it would run code), unsupported, unknown.
    fn not_read(&self, op: u8) -> FormatError {
        if let Some(name) = refused(op) {
            return self.fail(format!(
                "refused opcode {name} (0x{op:02x}): it would make Python import or call code; a memory snapshot holds only plain data (dict, list, str, int, float), so this file is not a snapshot or was tampered with"
            ));
        }
        if let Some(name) = unsupported(op) {
            return self.fail(format!(
                "unsupported opcode {name} (0x{op:02x}): not used by PyTorch memory snapshots"
            ));
        }
        self.fail(format!(
            "unknown opcode 0x{op:02x}: not a pickle opcode memtide reads (corrupt or not a snapshot)"
        ))
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
        let items = a.list(t);
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
        assert_eq!(a.list(t), &[Val::Done(7, 3), Val::Done(7, 7)]);
        // Without the hook the same bytes give plain dicts.
        let (a, top) = load(b).unwrap();
        let Val::List(t) = top else { panic!() };
        let Val::Dict(d) = a.list(t)[1] else { panic!() };
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
        let Val::Dict(d) = a.list(t)[0] else { panic!() };
        assert_eq!(a.dict(d).len(), 3);
        let e = unpickle(&b[..], &mut Seal).unwrap_err().to_string();
        assert!(
            e.contains("already converted") && e.contains("byte offset 29"),
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
