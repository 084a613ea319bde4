//! One trace entry read straight from the pickle's bytes, for the shape PyTorch writes: after
//! EMPTY_DICT, a memo store, MARK, str keys fetched from the memo with plain values (memo
//! fetches of strs and ints, small int opcodes), the `frames` list either fetched or fresh
//! with every frame fetched, then SETITEMS. The interpreter would build and convert the same
//! dict item by item; anything else (a new string, a nested container, a FRAME boundary,
//! the buffer's end) is left to it, with nothing changed.

use crate::formats::bytes_memo::BytesMemo;
use crate::formats::pickle::{decode_long, Arena, Val};

/// A memo store the entry's bytes make, applied only once the whole entry is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Store {
    /// The entry dict itself.
    Dict(u64),
    /// The fresh frames list.
    List(u64),
}

/// What [`scan`] read: the flat key/value items (the fresh frames list's value is a
/// placeholder at `frames_at`, its frame ids in `frames`), the memo stores, bytes used.
#[derive(Debug, Default)]
pub(super) struct Scanned {
    pub items: Vec<Val>,
    pub frames: Vec<u32>,
    pub frames_at: Option<usize>,
    /// The fresh frames list's bytes are those of a stack defined before: its number (then
    /// `frames` is empty).
    pub known_stack: Option<u32>,
    /// Where the fresh frames list's fetches lie in the bytes (MARK to APPENDS), when they
    /// were read one by one.
    pub frames_span: Option<(usize, usize)>,
    pub stores: Vec<Store>,
    pub used: usize,
}

/// Stacks already defined, by the bytes of their fresh frames list (MARK, the frames' memo
/// fetches, APPENDS): a list with the same bytes fetches the same memo slots, so it has the
/// same frames while no memo slot was stored over ([`Arena::memo_rebinds`]; a frame the hook
/// converted stays converted). A training loop allocates from the same few thousand stacks
/// again and again: one lookup then replaces a memo load per frame, each a likely cache miss
/// in a memo of millions of slots.
#[derive(Debug, Default)]
pub(super) struct StackSpans {
    by_bytes: BytesMemo,
    /// The arena's rebind count the stacks were read under.
    rebinds: u64,
}

impl StackSpans {
    /// Forgets every stack when a memo slot was stored over since they were read.
    pub fn check(&mut self, a: &Arena) {
        if a.memo_rebinds() != self.rebinds {
            self.by_bytes.clear();
            self.rebinds = a.memo_rebinds();
        }
    }

    /// Stack `n` was defined from the frames list whose fetches are `span`.
    pub fn insert(&mut self, span: &[u8], n: u32) {
        self.by_bytes.insert(span, n);
    }

    fn get(&self, span: &[u8]) -> Option<u32> {
        self.by_bytes.get(span)
    }
}

/// The hook's kinds of converted containers a plain entry may fetch.
#[derive(Clone, Copy, Debug)]
pub(super) struct Kinds {
    /// A frame dict (items of a frames list).
    pub frame: u8,
    /// A frames list (the value of `frames`, when the memo shares it).
    pub stack: u8,
}

/// Reads the bytes after an EMPTY_DICT into `out`; false when they are not the plain shape
/// (then `out` means nothing). `frames_key`: the arena id of `"frames"`.
pub(super) fn scan(
    b: &[u8],
    a: &Arena,
    frames_key: u32,
    kinds: Kinds,
    spans: &StackSpans,
    out: &mut Scanned,
) -> bool {
    out.items.clear();
    out.frames.clear();
    out.frames_at = None;
    out.known_stack = None;
    out.frames_span = None;
    out.stores.clear();
    let mut c = Cur {
        b,
        p: 0,
        a,
        memo_len: a.memo_len(),
        next_store: a.memo_len(),
    };
    match read_entry(&mut c, frames_key, kinds, spans, out) {
        Some(used) => {
            out.used = used;
            true
        }
        None => false,
    }
}

/// The entry's memo store, MARK, key/value pairs and SETITEMS; the bytes read.
fn read_entry(
    c: &mut Cur,
    frames_key: u32,
    kinds: Kinds,
    spans: &StackSpans,
    out: &mut Scanned,
) -> Option<usize> {
    if let Some(idx) = c.store()? {
        out.stores.push(Store::Dict(idx));
    }
    c.expect(b'(')?;
    loop {
        let key = match c.op()? {
            b'u' => return Some(c.p),
            op => c.fetched_str(op)?,
        };
        out.items.push(Val::Str(key));
        let op = c.op()?;
        if op == b']' && key == frames_key && out.frames_at.is_none() {
            if let Some(idx) = c.store()? {
                out.stores.push(Store::List(idx));
            }
            match c.fetch_run() {
                Some(span) => match spans.get(&c.b[span.0..span.1]) {
                    Some(n) => {
                        c.p = span.1;
                        out.known_stack = Some(n);
                    }
                    None => {
                        c.frames(kinds.frame, &mut out.frames)?;
                        out.frames_span = (c.p == span.1).then_some(span);
                    }
                },
                None => c.frames(kinds.frame, &mut out.frames)?,
            }
            out.frames_at = Some(out.items.len());
            out.items.push(Val::None);
            continue;
        }
        c.value(op, kinds.stack, &mut out.items)?;
    }
}

struct Cur<'b> {
    b: &'b [u8],
    p: usize,
    a: &'b Arena,
    /// Memo entries that existed before this entry: the only ones it may fetch.
    memo_len: u64,
    /// The index the next MEMOIZE stores at.
    next_store: u64,
}

impl Cur<'_> {
    fn op(&mut self) -> Option<u8> {
        let op = *self.b.get(self.p)?;
        self.p += 1;
        Some(op)
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.p).copied()
    }

    fn expect(&mut self, op: u8) -> Option<()> {
        (self.op()? == op).then_some(())
    }

    fn bytes(&mut self, n: usize) -> Option<&[u8]> {
        let s = self.b.get(self.p..self.p.checked_add(n)?)?;
        self.p += n;
        Some(s)
    }

    fn u32(&mut self) -> Option<u32> {
        let s = self.bytes(4)?;
        Some(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }

    /// A memo store (MEMOIZE, or BINPUT at the next index, as picklers number them), if
    /// one comes next: its index.
    fn store(&mut self) -> Option<Option<u64>> {
        let idx = match self.peek() {
            Some(0x94) => {
                self.p += 1;
                self.next_store
            }
            Some(b'q') => {
                self.p += 1;
                u64::from(*self.bytes(1)?.first()?)
            }
            Some(b'r') => {
                self.p += 1;
                u64::from(self.u32()?)
            }
            _ => return Some(None),
        };
        if idx != self.next_store {
            return None;
        }
        self.next_store += 1;
        Some(Some(idx))
    }

    /// The str of memo fetch `op` (BINGET, LONG_BINGET) of an entry stored before.
    #[inline(always)]
    fn fetched_str(&mut self, op: u8) -> Option<u32> {
        let idx = self.fetch_index(op)?;
        self.a.memo_str(idx)
    }

    /// The memo index of fetch `op` of an entry stored before.
    #[inline(always)]
    fn fetch_index(&mut self, op: u8) -> Option<u64> {
        let idx = match op {
            b'h' => u64::from(*self.bytes(1)?.first()?),
            b'j' => u64::from(self.u32()?),
            _ => return None,
        };
        (idx < self.memo_len).then_some(idx)
    }

    /// The value of memo fetch `op` (BINGET, LONG_BINGET) of an entry stored before.
    #[inline(always)]
    fn fetched(&mut self, op: u8) -> Option<Val> {
        let idx = self.fetch_index(op)?;
        self.a.memo_peek(idx)
    }

    /// A plain value, pushed onto `out`: a fetched str, int, bool, None, float or converted
    /// frames list, or a small int opcode. Each arm pushes a whole value: building an
    /// `Option<Val>` piece by piece and copying it out stalled the store buffer (a quarter of
    /// this function's time in `perf annotate`).
    #[inline(always)]
    fn value(&mut self, op: u8, stack_kind: u8, out: &mut Vec<Val>) -> Option<()> {
        match op {
            b'h' | b'j' => {
                let v = self.fetched(op)?;
                match v {
                    Val::Str(_)
                    | Val::Int(_)
                    | Val::UInt(_)
                    | Val::Bool(_)
                    | Val::None
                    | Val::Float(_) => {}
                    Val::Done(k, _) if k == stack_kind => {}
                    _ => return None,
                }
                out.push(v);
            }
            b'J' => out.push(Val::Int(i64::from(self.u32()? as i32))),
            b'K' => out.push(Val::Int(i64::from(*self.bytes(1)?.first()?))),
            b'M' => {
                let s = self.bytes(2)?;
                out.push(Val::Int(i64::from(u16::from_le_bytes([s[0], s[1]]))));
            }
            0x8a => {
                let n = usize::from(*self.bytes(1)?.first()?);
                out.push(decode_long(self.bytes(n)?));
            }
            b'N' => out.push(Val::None),
            0x88 => out.push(Val::Bool(true)),
            0x89 => out.push(Val::Bool(false)),
            _ => return None,
        }
        Some(())
    }

    /// The bytes of a MARK, memo fetches and APPENDS coming next (nothing is read).
    fn fetch_run(&self) -> Option<(usize, usize)> {
        let b = self.b;
        if b.get(self.p) != Some(&b'(') {
            return None;
        }
        let mut p = self.p + 1;
        loop {
            match b.get(p)? {
                b'h' => p += 2,
                b'j' => p += 5,
                b'e' => return Some((self.p, p + 1)),
                _ => return None,
            }
        }
    }

    /// The items of a fresh list (after its EMPTY_LIST and memo store): MARK, fetched
    /// frames, APPENDS; or one fetched frame and APPEND; or none (the next key follows).
    fn frames(&mut self, frame_kind: u8, out: &mut Vec<u32>) -> Option<()> {
        match self.peek() {
            Some(b'(') => {
                self.p += 1;
                loop {
                    match self.op()? {
                        b'e' => return Some(()),
                        op => out.push(self.frame(op, frame_kind)?),
                    }
                }
            }
            Some(op @ (b'h' | b'j')) => {
                let save = self.p;
                self.p += 1;
                match self.frame(op, frame_kind) {
                    Some(p) if self.peek() == Some(b'a') => {
                        self.p += 1;
                        out.push(p);
                    }
                    _ => self.p = save,
                }
                Some(())
            }
            _ => Some(()),
        }
    }

    /// A fetched frame dict the hook already converted: its packed id.
    fn frame(&mut self, op: u8, frame_kind: u8) -> Option<u32> {
        match self.fetched(op)? {
            Val::Done(k, p) if k == frame_kind => Some(p),
            _ => None,
        }
    }
}
