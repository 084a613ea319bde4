//! One JSONL v1 line decoded (docs/formats.md): the `op`, numbers kept exact (unsigned, signed
//! or float, so a wrong type is reported, not rounded), `name` and `stack` interned as they
//! are read, unknown fields kept raw. No trace semantics here.

use crate::formats::bytes_memo::BytesMemo;
use crate::trace::{EventKind, Interner, StackId, StrId};
use serde::de::{DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::Deserializer;
use std::borrow::Cow;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Op {
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
    pub(super) fn parse(s: &str) -> Option<Op> {
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
    pub(super) fn kind(self) -> EventKind {
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
pub(super) enum Num {
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
pub(super) struct RawLine<'a> {
    pub(super) t: Option<Num>,
    pub(super) op: Option<Cow<'a, str>>,
    pub(super) id: Option<Num>,
    pub(super) size: Option<Num>,
    pub(super) of: Option<Num>,
    pub(super) used: Option<Num>,
    pub(super) free: Option<Num>,
    pub(super) cat: Option<Cow<'a, str>>,
    pub(super) name: Option<StrId>,
    pub(super) kind: Option<Cow<'a, str>>,
    pub(super) stack: Option<StackId>,
    // header
    pub(super) memtide: Option<Num>,
    pub(super) device: Option<Cow<'a, str>>,
    pub(super) clock: Option<Cow<'a, str>>,
    pub(super) capacity: Option<Num>,
    pub(super) source: Option<Cow<'a, str>>,
    pub(super) extra: Vec<(Cow<'a, str>, &'a serde_json::value::RawValue)>,
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

/// One line's bytes, with its text when they were already found to be UTF-8 (the lines of a
/// chunk are checked at once: a check per line cost more than the rest of some lines).
#[derive(Clone, Copy, Debug)]
pub(super) struct LineText<'a> {
    pub bytes: &'a [u8],
    pub text: Option<&'a str>,
}

impl<'a> LineText<'a> {
    /// Bytes not checked yet.
    pub fn unchecked(bytes: &'a [u8]) -> Self {
        LineText { bytes, text: None }
    }

    /// Without the ASCII whitespace around it.
    pub fn trimmed(self) -> Self {
        LineText {
            bytes: self.bytes.trim_ascii(),
            text: self.text.map(str::trim_ascii),
        }
    }
}

/// Parses one line: the fast scanner for the common shape, else serde (which also gives every
/// error its wording).
pub(super) fn parse_line<'b>(
    line: LineText<'b>,
    strings: &mut Interner,
    frames: &mut Vec<StrId>,
    stacks: &mut BytesMemo,
    out: &mut RawLine<'b>,
) -> Result<(), String> {
    if let Some(text) = line.text.or_else(|| std::str::from_utf8(line.bytes).ok()) {
        if super::scan::scan_line(text, strings, frames, stacks, out) {
            return Ok(());
        }
        *out = RawLine::default();
    }
    parse_line_serde(line.bytes, strings, frames, out)
}

/// Parses one line with serde_json (the reference reader).
pub(super) fn parse_line_serde<'b>(
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

pub(super) fn show_num(n: Num) -> String {
    match n {
        Num::U(v) => v.to_string(),
        Num::I(v) => v.to_string(),
        Num::F(v) => v.to_string(),
    }
}
