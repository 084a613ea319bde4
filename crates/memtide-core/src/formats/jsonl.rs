//! memtide JSONL v1 (DESIGN §3): an incremental decoder that turns appended bytes into trace
//! events. Torn last lines wait for their newline; events sharing one `t` are buffered so that
//! frees apply before allocs, then written to the trace in application order.

use super::error::FormatError;
use crate::trace::{
    AllocId, Bytes, Category, Clock, EventKind, Interner, Mark, MarkKind, Seq, StackId,
    StorageKind, StrId, Trace, Ts, View,
};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::Deserializer;
use std::borrow::Cow;
use std::fmt;

/// Options of the JSONL reader.
#[derive(Clone, Copy, Debug, Default)]
pub struct JsonlOptions {
    /// Skip and count bad lines instead of failing.
    pub lenient: bool,
    /// Whether the whole input is known to hold explicit `external` spans (then `sample`
    /// lines do not synthesise external memory). None: decide as lines arrive.
    pub has_external_spans: Option<bool>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Alloc,
    View,
    Release,
    Free,
    Reserve,
    Unreserve,
    External,
    Sample,
    Mark,
    Oom,
}

impl Op {
    fn parse(s: &str) -> Option<Op> {
        Some(match s {
            "alloc" => Op::Alloc,
            "view" => Op::View,
            "release" => Op::Release,
            "free" => Op::Free,
            "reserve" => Op::Reserve,
            "unreserve" => Op::Unreserve,
            "external" => Op::External,
            "sample" => Op::Sample,
            "mark" => Op::Mark,
            "oom" => Op::Oom,
            _ => return None,
        })
    }
    fn kind(self) -> EventKind {
        match self {
            Op::Alloc => EventKind::Alloc,
            Op::View => EventKind::View,
            Op::Release => EventKind::Release,
            Op::Free => EventKind::Free,
            Op::Reserve => EventKind::Reserve,
            Op::Unreserve => EventKind::Unreserve,
            Op::External => EventKind::External,
            Op::Sample => EventKind::Sample,
            Op::Mark => EventKind::Mark,
            Op::Oom => EventKind::Oom,
        }
    }
}

/// A number as written: integers stay exact, others are floats.
#[derive(Clone, Copy, Debug)]
enum Num {
    U(u64),
    I(i64),
    F(f64),
}

struct NumVisitor;
impl<'de> Visitor<'de> for NumVisitor {
    type Value = Num;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number")
    }
    fn visit_u64<E>(self, v: u64) -> Result<Num, E> {
        Ok(Num::U(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Num, E> {
        Ok(Num::I(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Num, E> {
        Ok(Num::F(v))
    }
}
struct NumSeed;
impl<'de> DeserializeSeed<'de> for NumSeed {
    type Value = Num;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Num, D::Error> {
        d.deserialize_any(NumVisitor)
    }
}

/// A string borrowed from the input unless it holds escapes (serde's own `Cow<str>` impl
/// always allocates, which dominated the parse profile).
struct Str<'de>(Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Str<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// An optional [`Str`] (`null` allowed).
fn opt_str<'de, A: MapAccess<'de>>(m: &mut A) -> Result<Option<Cow<'de, str>>, A::Error> {
    let v: Option<Str<'de>> = m.next_value()?;
    Ok(v.map(|s| s.0))
}

/// One line, fields borrowed from the input where possible.
#[derive(Default)]
struct RawLine<'a> {
    t: Option<Num>,
    op: Option<Cow<'a, str>>,
    id: Option<Num>,
    size: Option<Num>,
    of: Option<Num>,
    used: Option<Num>,
    free: Option<Num>,
    cat: Option<Cow<'a, str>>,
    name: Option<StrId>,
    kind: Option<Cow<'a, str>>,
    stack: Option<StackId>,
    // header
    memtide: Option<Num>,
    device: Option<Cow<'a, str>>,
    clock: Option<Cow<'a, str>>,
    capacity: Option<Num>,
    source: Option<Cow<'a, str>>,
    extra: Vec<(Cow<'a, str>, &'a serde_json::value::RawValue)>,
}

/// Parses one line, interning `name` and `stack` as they are read (no per-line allocations
/// for the common case).
/// Fills `out` in place: the line struct is large, and returning it by value cost a memcpy
/// per hop.
struct LineVisitor<'s, 'de> {
    strings: &'s mut Interner,
    frames: &'s mut Vec<StrId>,
    out: &'s mut RawLine<'de>,
}

impl<'de> Visitor<'de> for LineVisitor<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
        let l = self.out;
        // Keys already seen (bit per known key): a repeated key is an error, as in every
        // other JSON memtide reads, instead of the last value silently winning.
        let mut seen = 0u32;
        let mut once = |bit: u32, key: &str| -> Result<(), A::Error> {
            if seen & (1 << bit) != 0 {
                return Err(serde::de::Error::custom(format!("duplicate key {key:?}")));
            }
            seen |= 1 << bit;
            Ok(())
        };
        while let Some(Str(key)) = m.next_key::<Str<'de>>()? {
            match &*key {
                "t" => {
                    once(0, &key)?;
                    l.t = Some(m.next_value_seed(NumSeed)?)
                }
                "op" => {
                    once(1, &key)?;
                    l.op = Some(m.next_value::<Str<'de>>()?.0)
                }
                "id" => {
                    once(2, &key)?;
                    l.id = Some(m.next_value_seed(NumSeed)?)
                }
                "size" => {
                    once(3, &key)?;
                    l.size = Some(m.next_value_seed(NumSeed)?)
                }
                "of" => {
                    once(4, &key)?;
                    l.of = Some(m.next_value_seed(NumSeed)?)
                }
                "used" => {
                    once(5, &key)?;
                    l.used = Some(m.next_value_seed(NumSeed)?)
                }
                "free" => {
                    once(6, &key)?;
                    l.free = Some(m.next_value_seed(NumSeed)?)
                }
                "cat" => {
                    once(7, &key)?;
                    l.cat = opt_str(&mut m)?
                }
                "name" => {
                    once(8, &key)?;
                    l.name = opt_str(&mut m)?.map(|n| self.strings.intern(&n));
                }
                "kind" => {
                    once(9, &key)?;
                    l.kind = opt_str(&mut m)?
                }
                "stack" => {
                    once(10, &key)?;
                    self.frames.clear();
                    l.stack = m.next_value_seed(StackSeed {
                        strings: &mut *self.strings,
                        frames: &mut *self.frames,
                    })?;
                }
                "memtide" => {
                    once(11, &key)?;
                    l.memtide = Some(m.next_value_seed(NumSeed)?)
                }
                "device" => {
                    once(12, &key)?;
                    l.device = opt_str(&mut m)?
                }
                "clock" => {
                    once(13, &key)?;
                    l.clock = opt_str(&mut m)?
                }
                "capacity" => {
                    once(14, &key)?;
                    l.capacity = m.next_value_seed(OptNumSeed)?
                }
                "source" => {
                    once(15, &key)?;
                    l.source = opt_str(&mut m)?
                }
                _ => {
                    if l.extra.iter().any(|(k, _)| **k == *key) {
                        return Err(serde::de::Error::custom(format!(
                            "duplicate key {:?}",
                            &*key
                        )));
                    }
                    let raw: &'de serde_json::value::RawValue = m.next_value()?;
                    l.extra.push((key, raw));
                }
            }
        }
        Ok(())
    }
}

/// A `stack` array (or null), interned frame by frame.
struct StackSeed<'s> {
    strings: &'s mut Interner,
    frames: &'s mut Vec<StrId>,
}

impl<'de> DeserializeSeed<'de> for StackSeed<'_> {
    type Value = Option<StackId>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<StackId>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StackSeed<'_> {
    type Value = Option<StackId>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of frame strings")
    }
    fn visit_unit<E>(self) -> Result<Option<StackId>, E> {
        Ok(None)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Option<StackId>, A::Error> {
        while let Some(Str(f)) = seq.next_element::<Str<'de>>()? {
            self.frames.push(self.strings.intern(&f));
        }
        Ok(Some(self.strings.intern_stack(self.frames)))
    }
}

struct OptNumSeed;
impl<'de> DeserializeSeed<'de> for OptNumSeed {
    type Value = Option<Num>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<Num>, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Option<Num>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number or null")
            }
            fn visit_unit<E>(self) -> Result<Option<Num>, E> {
                Ok(None)
            }
            fn visit_u64<E>(self, v: u64) -> Result<Option<Num>, E> {
                Ok(Some(Num::U(v)))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Option<Num>, E> {
                Ok(Some(Num::I(v)))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Option<Num>, E> {
                Ok(Some(Num::F(v)))
            }
        }
        d.deserialize_any(V)
    }
}

fn parse_line<'b>(
    bytes: &'b [u8],
    strings: &mut Interner,
    frames: &mut Vec<StrId>,
    out: &mut RawLine<'b>,
) -> Result<(), String> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    de.deserialize_map(LineVisitor {
        strings,
        frames,
        out,
    })
    .map_err(|e| format!("invalid JSON: {e}"))?;
    de.end()
        .map_err(|e| format!("trailing characters after the JSON object: {e}"))
}

/// A decoded event line, waiting in its equal-`t` group.
#[derive(Clone, Debug)]
struct Ev {
    line: u64,
    src: u64,
    t: i64,
    op: Op,
    id: u64,
    size: u64,
    of: u64,
    used: u64,
    free: Option<u64>,
    cat: Option<Category>,
    name: StrId,
    kind: MarkKind,
    stack: StackId,
    extra: Option<StrId>,
}

/// Opens and closes decided while applying one equal-`t` group, logged when it ends.
#[derive(Debug, Default)]
struct GroupFx {
    opened: Vec<AllocId>,
    opened_set: FxHashSet<AllocId>,
    closed_here: FxHashSet<AllocId>,
    changes: Vec<(Seq, AllocId, bool)>,
}

impl GroupFx {
    fn clear(&mut self) {
        self.opened.clear();
        self.opened_set.clear();
        self.closed_here.clear();
        self.changes.clear();
    }
    fn open(&mut self, id: AllocId) {
        self.opened.push(id);
        self.opened_set.insert(id);
    }
    fn close(&mut self, trace: &Trace, id: AllocId, at: Seq) {
        if self.opened_set.contains(&id) {
            self.closed_here.insert(id);
        } else if trace.end(id).is_none() {
            self.changes.push((at, id, false));
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct TensorRef {
    storage: AllocId,
    /// Index into `trace.views` when this tensor is a view.
    view: Option<u32>,
}

/// Incremental JSONL v1 decoder. Feed it bytes as they arrive; call [`JsonlDecoder::finish`]
/// at the end of a complete file.
#[derive(Debug)]
pub struct JsonlDecoder {
    opts: JsonlOptions,
    /// Bytes of a line still waiting for its newline.
    partial: Vec<u8>,
    /// Lines consumed so far (1-based number of the last complete line).
    line: u64,
    header_seen: bool,
    clock: Clock,
    /// Event lines seen (the source index of the next one).
    next_src: u64,
    last_t: Option<i64>,
    group: Vec<Ev>,
    tensors: FxHashMap<u64, TensorRef>,
    refcount: FxHashMap<AllocId, u32>,
    view_tensors: FxHashMap<AllocId, Vec<u64>>,
    segments: FxHashMap<u64, AllocId>,
    reserved_now: u64,
    sample_storage: Option<AllocId>,
    external_seen: bool,
    first_skip: Option<String>,
    /// An error of the previous equal-`t` group, found while reading the line that closed it:
    /// it belongs to the group's own line, not to the line being read.
    group_error: Option<FormatError>,
    unmatched_examples: u32,
    // Scratch buffers reused across lines and groups (no allocation per event).
    frames: Vec<StrId>,
    spare_group: Vec<Ev>,
    scratch: GroupScratch,
}

/// Reusable per-group working sets.
#[derive(Debug, Default)]
struct GroupScratch {
    introduced_t: FxHashSet<u64>,
    introduced_s: FxHashSet<u64>,
    first: Vec<usize>,
    second: Vec<usize>,
    fx: GroupFx,
}

const MAX_EXAMPLE_WARNINGS: u32 = 5;

impl JsonlDecoder {
    pub fn new(opts: JsonlOptions) -> Self {
        JsonlDecoder {
            opts,
            partial: Vec::new(),
            line: 0,
            header_seen: false,
            clock: Clock::Us,
            next_src: 0,
            last_t: None,
            group: Vec::new(),
            tensors: FxHashMap::default(),
            refcount: FxHashMap::default(),
            view_tensors: FxHashMap::default(),
            segments: FxHashMap::default(),
            reserved_now: 0,
            sample_storage: None,
            external_seen: opts.has_external_spans.unwrap_or(false),
            first_skip: None,
            group_error: None,
            unmatched_examples: 0,
            frames: Vec::new(),
            spare_group: Vec::new(),
            scratch: GroupScratch::default(),
        }
    }

    /// Whether the header line has been read.
    pub fn header_seen(&self) -> bool {
        self.header_seen
    }

    /// Decodes every complete line in `bytes` (appended to any earlier torn line). Events whose
    /// `t` group may still grow stay buffered until a later `t` arrives or `finish`.
    pub fn feed(&mut self, trace: &mut Trace, bytes: &[u8]) -> Result<(), FormatError> {
        let mut rest = bytes;
        if !self.partial.is_empty() {
            match memchr::memchr(b'\n', rest) {
                None => {
                    self.partial.extend_from_slice(rest);
                    return Ok(());
                }
                Some(nl) => {
                    let mut line = std::mem::take(&mut self.partial);
                    line.extend_from_slice(&rest[..nl]);
                    self.line_complete(trace, &line)?;
                    rest = &rest[nl + 1..];
                }
            }
        }
        while let Some(nl) = memchr::memchr(b'\n', rest) {
            self.line_complete(trace, &rest[..nl])?;
            rest = &rest[nl + 1..];
        }
        self.partial.extend_from_slice(rest);
        Ok(())
    }

    /// Ends the input: a last line without a newline is decoded, and the pending group is
    /// applied. A last line without a newline that is not yet a whole JSON object is a line
    /// still being written (DESIGN §3: not an error): it is left out, with a warning.
    pub fn finish(&mut self, trace: &mut Trace) -> Result<(), FormatError> {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            if self.header_seen && is_torn(&line) {
                self.line += 1;
                trace.warn(format!(
                    "line {}: the last line has no newline and is not a whole JSON object yet (a line still being written): left out",
                    self.line
                ));
            } else {
                self.line_complete(trace, &line)?;
            }
        }
        self.flush(trace)?;
        if trace.skipped_lines > 0 {
            let first = self.first_skip.clone().unwrap_or_default();
            // What those lines held is missing from every figure.
            trace.warn_doubtful(format!(
                "--lenient: skipped {} bad line(s); first: {first}",
                trace.skipped_lines
            ));
        }
        Ok(())
    }

    /// Applies the pending equal-`t` group now (used by followers after an idle period is not
    /// safe in general; exposed for tests and for `finish`).
    pub fn flush(&mut self, trace: &mut Trace) -> Result<(), FormatError> {
        self.apply_pending(trace)
    }

    /// Applies the buffered group, recycling its buffer.
    fn apply_pending(&mut self, trace: &mut Trace) -> Result<(), FormatError> {
        let mut group = std::mem::replace(&mut self.group, std::mem::take(&mut self.spare_group));
        let r = self.apply_group(trace, &group);
        group.clear();
        self.spare_group = group;
        r
    }

    fn line_complete(&mut self, trace: &mut Trace, raw: &[u8]) -> Result<(), FormatError> {
        self.line += 1;
        let line = self.line;
        let trimmed = trim_ascii(raw);
        if trimmed.is_empty() || trimmed[0] == b'#' {
            return Ok(());
        }
        let r = match self.decode(trace, trimmed) {
            Ok(()) => Ok(()),
            // A bad header is never skipped: nothing after it could be read right.
            Err(reason) if !self.header_seen => Err(FormatError::line(line, reason)),
            Err(reason) => self.reject(trace, line, reason),
        };
        match self.group_error.take() {
            None => r,
            Some(e) if self.opts.lenient => {
                trace.skipped_lines += 1;
                self.first_skip.get_or_insert_with(|| e.to_string());
                r
            }
            Some(e) => Err(e),
        }
    }

    fn decode(&mut self, trace: &mut Trace, bytes: &[u8]) -> Result<(), String> {
        if bytes.first() != Some(&b'{') {
            return Err(format!(
                "expected a JSON object starting with '{{', found {}",
                describe_start(bytes)
            ));
        }
        let mut l = RawLine::default();
        parse_line(bytes, &mut trace.strings, &mut self.frames, &mut l)?;
        if !self.header_seen {
            return self.header(trace, l);
        }
        if l.memtide.is_some() {
            return Err("a second header line (\"memtide\" key) after the first".into());
        }
        let t_raw = l.t.ok_or("missing required field \"t\"")?;
        let t = self.to_ns(t_raw)?;
        let op_s = l.op.as_deref().ok_or("missing required field \"op\"")?;
        let op = Op::parse(op_s).ok_or_else(|| {
            format!("unknown op {op_s:?}: expected one of alloc, view, release, free, reserve, unreserve, external, sample, mark, oom")
        })?;
        if let Some(prev) = self.last_t {
            if t < prev {
                return Err(format!(
                    "t goes backwards ({} after {}): t must be non-decreasing",
                    show_num(t_raw),
                    self.show_t(prev)
                ));
            }
        }
        let need_id = |n: Option<Num>, what: &str| -> Result<u64, String> {
            match n {
                Some(Num::U(v)) => Ok(v),
                Some(Num::I(v)) => Err(format!(
                    "\"{what}\" must be a non-negative integer, got {v}"
                )),
                Some(Num::F(v)) if v.fract() == 0.0 && v >= 18_446_744_073_709_551_616.0 => Err(format!(
                    "\"{what}\" is too large: at most 18446744073709551615 (64 bits), got about {v:e}"
                )),
                Some(Num::F(v)) => Err(format!(
                    "\"{what}\" must be a non-negative integer, got {v}"
                )),
                None => Err(format!("op {op_s:?} needs field \"{what}\"")),
            }
        };
        let mut ev = Ev {
            line: self.line,
            src: 0,
            t,
            op,
            id: 0,
            size: 0,
            of: 0,
            used: 0,
            free: None,
            cat: None,
            name: StrId(0),
            kind: MarkKind::Note,
            stack: StackId(0),
            extra: None,
        };
        match op {
            Op::Alloc | Op::External | Op::Reserve => {
                ev.id = need_id(l.id, "id")?;
                ev.size = need_id(l.size, "size")?;
            }
            Op::View => {
                ev.id = need_id(l.id, "id")?;
                ev.of = need_id(l.of, "of")?;
            }
            Op::Release | Op::Free | Op::Unreserve => ev.id = need_id(l.id, "id")?,
            Op::Sample => ev.used = need_id(l.used, "used")?,
            Op::Mark => {
                if let Some(k) = l.kind.as_deref() {
                    ev.kind = MarkKind::parse(k).ok_or_else(|| {
                        format!("unknown mark kind {k:?}: expected step, phase, reset_peak or note")
                    })?;
                }
                if l.name.is_none() {
                    return Err("op \"mark\" needs field \"name\"".into());
                }
            }
            Op::Oom => {
                ev.size = need_id(l.size, "size")?;
                ev.free = match l.free {
                    None => None,
                    some => Some(need_id(some, "free")?),
                };
            }
        }
        if let Some(c) = l.cat.as_deref() {
            ev.cat = Some(Category::parse(c).ok_or_else(|| {
                format!("unknown cat {c:?}: expected param, grad, optimizer, buffer, activation, input, workspace, temp or external")
            })?);
        }
        if let Some(n) = l.name {
            ev.name = n;
        }
        if let Some(st) = l.stack {
            ev.stack = st;
        }
        if !l.extra.is_empty() && matches!(op, Op::Alloc | Op::External) {
            let mut s = String::from("{");
            for (i, (k, v)) in l.extra.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                s.push_str(&serde_json::to_string(&**k).unwrap_or_default());
                s.push(':');
                s.push_str(v.get());
            }
            s.push('}');
            ev.extra = Some(trace.strings.intern(&s));
        }
        if op == Op::External {
            self.external_seen = true;
        }
        ev.src = self.next_src;
        self.next_src += 1;
        if self.last_t != Some(t) {
            if let Err(e) = self.apply_pending(trace) {
                self.group_error = Some(e);
            }
        }
        self.last_t = Some(t);
        self.group.push(ev);
        Ok(())
    }

    fn header(&mut self, trace: &mut Trace, l: RawLine<'_>) -> Result<(), String> {
        match l.memtide {
            Some(Num::U(1)) => {}
            Some(n) => {
                return Err(format!(
                    "unsupported memtide JSONL version {}: this memtide reads version 1",
                    show_num(n)
                ))
            }
            None => {
                return Err("expected the header line {\"memtide\":1,...} before any event".into())
            }
        }
        self.header_seen = true;
        if let Some(d) = l.device {
            trace.device = d.into_owned();
        }
        self.clock = match l.clock.as_deref() {
            None | Some("us") => Clock::Us,
            Some("ns") => Clock::Ns,
            Some("seq") => Clock::Seq,
            Some(o) => return Err(format!("unknown clock {o:?}: expected us, ns or seq")),
        };
        trace.clock = self.clock;
        trace.capacity = match l.capacity {
            Some(Num::U(c)) => Some(Bytes(c)),
            None => None,
            Some(n) => {
                return Err(format!(
                    "capacity must be a byte count, got {}",
                    show_num(n)
                ))
            }
        };
        if let Some(s) = l.source {
            trace.meta.push(("source".into(), s.into_owned()));
        }
        for (k, v) in l.extra {
            trace.meta.push((k.into_owned(), v.get().to_string()));
        }
        Ok(())
    }

    fn to_ns(&self, n: Num) -> Result<i64, String> {
        let mult: f64 = match self.clock {
            Clock::Us => 1000.0,
            Clock::Ns | Clock::Seq => 1.0,
        };
        match n {
            Num::U(v) => i64::try_from(v)
                .ok()
                .and_then(|v| v.checked_mul(mult as i64))
                .ok_or_else(|| format!("t {v} is out of range")),
            Num::I(v) => Err(format!("t must be non-negative, got {v}")),
            Num::F(v) if v.is_finite() && v >= 0.0 && v * mult < 9.2e18 => {
                Ok((v * mult).round() as i64)
            }
            Num::F(v) => Err(format!("t must be a non-negative number, got {v}")),
        }
    }

    fn show_t(&self, ns: i64) -> String {
        match self.clock {
            Clock::Us => {
                if ns % 1000 == 0 {
                    (ns / 1000).to_string()
                } else {
                    format!("{}", ns as f64 / 1000.0)
                }
            }
            _ => ns.to_string(),
        }
    }

    /// Applies one equal-`t` group: frees first (file order), except an id's own free that
    /// follows its alloc in the group; storages opened and closed inside the group are never
    /// live (zero-length interval).
    fn apply_group(&mut self, trace: &mut Trace, group: &[Ev]) -> Result<(), FormatError> {
        if group.is_empty() {
            return Ok(());
        }
        let mut sc = std::mem::take(&mut self.scratch);
        let r = self.apply_group_with(trace, group, &mut sc);
        sc.introduced_t.clear();
        sc.introduced_s.clear();
        sc.first.clear();
        sc.second.clear();
        sc.fx.clear();
        self.scratch = sc;
        r
    }

    fn apply_group_with(
        &mut self,
        trace: &mut Trace,
        group: &[Ev],
        sc: &mut GroupScratch,
    ) -> Result<(), FormatError> {
        // Application order.
        let GroupScratch {
            introduced_t,
            introduced_s,
            first,
            second,
            fx,
        } = sc;
        for (i, e) in group.iter().enumerate() {
            match e.op {
                Op::Alloc | Op::View | Op::External => {
                    introduced_t.insert(e.id);
                    second.push(i);
                }
                Op::Reserve => {
                    introduced_s.insert(e.id);
                    second.push(i);
                }
                Op::Unreserve if !introduced_s.contains(&e.id) => first.push(i),
                Op::Release | Op::Free if !introduced_t.contains(&e.id) => first.push(i),
                _ => second.push(i),
            }
        }
        for &i in first.iter().chain(second.iter()) {
            let e = &group[i];
            let at = trace.push_event_src(Ts(e.t), e.op.kind(), e.src);
            self.apply_event(trace, e, at, fx)?;
        }
        // Storages made in this group: opened at their start; closed at their start too when
        // the group also freed them (never live).
        for &id in &fx.opened {
            let start = trace.start(id);
            fx.changes.push((start, id, true));
            if fx.closed_here.contains(&id) {
                fx.changes.push((start, id, false));
            }
        }
        fx.changes.sort_by_key(|&(at, _, open)| (at, !open));
        for &(at, id, open) in &fx.changes {
            trace.log(id, at, open);
        }
        Ok(())
    }

    fn apply_event(
        &mut self,
        trace: &mut Trace,
        e: &Ev,
        at: Seq,
        fx: &mut GroupFx,
    ) -> Result<(), FormatError> {
        match e.op {
            Op::Alloc | Op::External => {
                if let Some(prev) = self.tensors.get(&e.id) {
                    let s = prev.storage;
                    return self.reject(
                        trace,
                        e.line,
                        format!(
                            "id {} is already live (allocated at event {}); free or release it first",
                            e.id,
                            trace.event_number(trace.start(s))
                        ),
                    );
                }
                let cat = if e.op == Op::External {
                    e.cat.unwrap_or(Category::External)
                } else {
                    e.cat.unwrap_or(Category::Unknown)
                };
                let id = trace.new_storage(
                    at,
                    Bytes(e.size),
                    cat,
                    StorageKind::Block,
                    e.name,
                    e.stack,
                    e.id,
                );
                if let Some(x) = e.extra {
                    trace.extra.insert(id, x);
                }
                fx.open(id);
                self.tensors.insert(
                    e.id,
                    TensorRef {
                        storage: id,
                        view: None,
                    },
                );
                self.refcount.insert(id, 1);
            }
            Op::View => {
                if self.tensors.contains_key(&e.id) {
                    return self.reject(
                        trace,
                        e.line,
                        format!("view id {} is already a live tensor", e.id),
                    );
                }
                let Some(base) = self.tensors.get(&e.of).copied() else {
                    return self.reject(
                        trace,
                        e.line,
                        format!(
                            "view {} is \"of\" {}, which is not a live tensor",
                            e.id, e.of
                        ),
                    );
                };
                let vi = trace.add_view(View {
                    storage: base.storage,
                    tensor: e.id,
                    name: e.name,
                    stack: e.stack,
                    created: at,
                    released: None,
                });
                self.tensors.insert(
                    e.id,
                    TensorRef {
                        storage: base.storage,
                        view: Some(vi as u32),
                    },
                );
                *self.refcount.entry(base.storage).or_insert(0) += 1;
                self.view_tensors
                    .entry(base.storage)
                    .or_default()
                    .push(e.id);
            }
            Op::Release => {
                let Some(r) = self.tensors.remove(&e.id) else {
                    self.unmatched(trace, e, "release");
                    return Ok(());
                };
                match r.view {
                    Some(vi) => {
                        if let Some(v) = trace.views.get_mut(vi as usize) {
                            v.released = Some(at);
                        }
                        if let Some(list) = self.view_tensors.get_mut(&r.storage) {
                            list.retain(|&t| t != e.id);
                        }
                    }
                    None => {
                        trace.base_released.insert(r.storage, at);
                    }
                }
                let rc = self.refcount.entry(r.storage).or_insert(1);
                *rc = rc.saturating_sub(1);
                if *rc == 0 {
                    self.refcount.remove(&r.storage);
                    self.view_tensors.remove(&r.storage);
                    fx.close(trace, r.storage, at);
                }
            }
            Op::Free => {
                let Some(r) = self.tensors.get(&e.id).copied() else {
                    self.unmatched(trace, e, "free");
                    return Ok(());
                };
                let sid = r.storage;
                // Drop every tensor of the storage: the base and any views.
                let base_tensor = trace.storages.src_id.get(sid.idx()).copied();
                if let Some(b) = base_tensor {
                    if self
                        .tensors
                        .get(&b)
                        .is_some_and(|t| t.storage == sid && t.view.is_none())
                    {
                        self.tensors.remove(&b);
                    }
                }
                for t in self.view_tensors.remove(&sid).unwrap_or_default() {
                    if let Some(tr) = self.tensors.remove(&t) {
                        if let Some(vi) = tr.view {
                            if let Some(v) = trace.views.get_mut(vi as usize) {
                                v.released = Some(at);
                            }
                        }
                    }
                }
                self.tensors.remove(&e.id);
                self.refcount.remove(&sid);
                fx.close(trace, sid, at);
            }
            Op::Reserve => {
                if self.segments.contains_key(&e.id) {
                    return self.reject(
                        trace,
                        e.line,
                        format!("segment id {} is already reserved", e.id),
                    );
                }
                let id = trace.new_storage(
                    at,
                    Bytes(e.size),
                    Category::Unknown,
                    StorageKind::Segment,
                    e.name,
                    e.stack,
                    e.id,
                );
                fx.open(id);
                self.segments.insert(e.id, id);
                self.reserved_now += e.size;
            }
            Op::Unreserve => {
                let Some(id) = self.segments.remove(&e.id) else {
                    trace.warn(format!(
                        "line {}: unreserve of unknown segment id {}",
                        e.line, e.id
                    ));
                    return Ok(());
                };
                self.reserved_now = self.reserved_now.saturating_sub(trace.size(id).0);
                fx.close(trace, id, at);
            }
            Op::Sample => {
                if self.external_seen {
                    return Ok(());
                }
                if let Some(prev) = self.sample_storage.take() {
                    fx.close(trace, prev, at);
                }
                let ext = e.used.saturating_sub(self.reserved_now);
                let name = trace.strings.intern("external (device used − reserved)");
                let id = trace.new_storage(
                    at,
                    Bytes(ext),
                    Category::External,
                    StorageKind::Block,
                    name,
                    StackId(0),
                    u64::MAX,
                );
                fx.open(id);
                self.sample_storage = Some(id);
            }
            Op::Mark => {
                trace.add_mark(Mark {
                    at,
                    ts: Ts(e.t),
                    name: e.name,
                    kind: e.kind,
                    end: None,
                    size: None,
                    free: None,
                });
            }
            Op::Oom => {
                let name = if e.name == StrId(0) {
                    trace.strings.intern("OOM")
                } else {
                    e.name
                };
                trace.add_mark(Mark {
                    at,
                    ts: Ts(e.t),
                    name,
                    kind: MarkKind::Oom,
                    end: None,
                    size: Some(Bytes(e.size)),
                    free: e.free.map(Bytes),
                });
            }
        }
        Ok(())
    }

    fn reject(&mut self, trace: &mut Trace, line: u64, reason: String) -> Result<(), FormatError> {
        if self.opts.lenient {
            trace.skipped_lines += 1;
            if self.first_skip.is_none() {
                self.first_skip = Some(format!("line {line}: {reason}"));
            }
            Ok(())
        } else {
            Err(FormatError::line(line, reason))
        }
    }

    fn unmatched(&mut self, trace: &mut Trace, e: &Ev, what: &str) {
        trace.unmatched_frees += 1;
        if self.unmatched_examples < MAX_EXAMPLE_WARNINGS {
            self.unmatched_examples += 1;
            trace.warn(format!(
                "line {}: {what} of unknown id {} (counted as an unmatched free)",
                e.line, e.id
            ));
        }
    }
}

/// Whether a last line (no newline after it) is cut short: not one whole JSON value yet.
fn is_torn(raw: &[u8]) -> bool {
    let t = trim_ascii(raw);
    !t.is_empty() && t[0] != b'#' && serde_json::from_slice::<serde::de::IgnoredAny>(t).is_err()
}

fn trim_ascii(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &b[start..end.max(start)]
}

fn describe_start(b: &[u8]) -> String {
    match b.first() {
        Some(c) if c.is_ascii_graphic() => format!("{:?}", *c as char),
        Some(c) => format!("byte 0x{c:02x}"),
        None => "end of line".into(),
    }
}

fn show_num(n: Num) -> String {
    match n {
        Num::U(v) => v.to_string(),
        Num::I(v) => v.to_string(),
        Num::F(v) => v.to_string(),
    }
}
