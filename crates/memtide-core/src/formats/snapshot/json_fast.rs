//! Fast path for one snapshot trace entry: a byte scanner for the shape PyTorch's
//! snapshots have (plain keys, integers, string values, frame objects or strings). It
//! borrows strings from the input and has no side effects: whatever it does not recognise
//! (a duplicate key, a float, a missing `action`, invalid bytes, an entry cut off at the
//! window's end) returns None, and serde_json parses the entry instead (and reports any
//! error). Values it does not use are checked by serde_json, so it accepts exactly what
//! serde_json accepts. A `frames` list byte-identical to one read before is not parsed
//! again: its stack is known.

use super::from_json::{EntryIn, FrameIn, KnownStacks, Meta, Num, Scanned, StackIn};
use crate::formats::json::scan::{skip_str, skip_value, ws};
use serde::de::IgnoredAny;
use std::borrow::Cow;

/// Consumes `c` (after whitespace).
#[inline]
fn eat(s: &[u8], i: &mut usize, c: u8) -> Option<()> {
    ws(s, i);
    if s.get(*i) == Some(&c) {
        *i += 1;
        Some(())
    } else {
        None
    }
}

/// The exact text of one value, checked by serde_json as a `T`.
fn value_as<'a, T: serde::de::DeserializeOwned>(
    s: &'a [u8],
    i: &mut usize,
) -> Option<(T, &'a [u8])> {
    let start = *i;
    skip_value(s, i)?;
    let text = &s[start..*i];
    Some((serde_json::from_slice::<T>(text).ok()?, text))
}

/// A string, `i` at its opening quote: borrowed when it has no escapes, else decoded by
/// serde_json. None for control characters or invalid UTF-8 (serde_json refuses those).
#[inline]
fn string<'a>(s: &'a [u8], i: &mut usize) -> Option<Cow<'a, str>> {
    if s.get(*i) != Some(&b'"') {
        return None;
    }
    let start = *i + 1;
    let mut j = start;
    while j < s.len() {
        match s[j] {
            b'"' => {
                *i = j + 1;
                return std::str::from_utf8(&s[start..j]).ok().map(Cow::Borrowed);
            }
            b'\\' => {
                let open = *i;
                skip_str(s, i)?;
                return serde_json::from_slice::<String>(&s[open..*i])
                    .ok()
                    .map(Cow::Owned);
            }
            0..=0x1f => return None,
            _ => j += 1,
        }
    }
    None
}

/// A key without escapes, with its `:`.
#[inline]
fn key<'a>(s: &'a [u8], i: &mut usize) -> Option<&'a [u8]> {
    ws(s, i);
    if s.get(*i) != Some(&b'"') {
        return None;
    }
    let start = *i + 1;
    let mut j = start;
    loop {
        match *s.get(j)? {
            b'"' => break,
            b'\\' | 0..=0x1f | 0x80..=0xff => return None,
            _ => j += 1,
        }
    }
    *i = j + 1;
    eat(s, i, b':')?;
    ws(s, i);
    Some(&s[start..j])
}

/// An integer (or null) as serde_json reads it into [`Num`].
#[inline]
fn num(s: &[u8], i: &mut usize) -> Option<Option<Num>> {
    let start = *i;
    let neg = s.get(start) == Some(&b'-');
    let d0 = start + neg as usize;
    let mut j = d0;
    let mut v: u64 = 0;
    let mut plain = true;
    while j < s.len() && s[j].is_ascii_digit() {
        match v
            .checked_mul(10)
            .and_then(|v| v.checked_add((s[j] - b'0') as u64))
        {
            Some(x) => v = x,
            None => plain = false,
        }
        j += 1;
    }
    plain &= j > d0
        && j < s.len()
        && !(s[d0] == b'0' && j - d0 > 1)
        && !matches!(s[j], b'.' | b'e' | b'E')
        && (!neg || v <= 1 << 63);
    if plain {
        *i = j;
        return Some(Some(Num(if neg { -(v as i128) } else { v as i128 })));
    }
    // Floats, big numbers, null, and anything invalid: as serde_json has it.
    value_as::<Option<Num>>(s, i).map(|(v, _)| v)
}

/// A kept field's raw text (checked by serde_json unless it is a common default).
fn raw<'a>(s: &'a [u8], i: &mut usize) -> Option<&'a str> {
    let start = *i;
    skip_value(s, i)?;
    let text = std::str::from_utf8(&s[start..*i]).ok()?;
    if !matches!(text, "0" | "null" | "\"\"" | "\"N/A\"" | "[]" | "{}") {
        serde_json::from_str::<IgnoredAny>(text).ok()?;
    }
    Some(text)
}

/// `null`, exactly.
fn null(s: &[u8], i: &mut usize) -> Option<()> {
    let start = *i;
    skip_value(s, i)?;
    (&s[start..*i] == b"null").then_some(())
}

fn frame<'a>(s: &'a [u8], i: &mut usize) -> Option<FrameIn<'a>> {
    ws(s, i);
    match *s.get(*i)? {
        b'"' => return string(s, i).map(FrameIn::Text),
        b'{' => *i += 1,
        _ => return None,
    }
    let mut filename = Cow::Borrowed("");
    let mut name = Cow::Borrowed("");
    let mut line = None;
    let mut fx: [Option<Cow<str>>; 4] = [None, None, None, None];
    let mut seen = 0u8;
    ws(s, i);
    if s.get(*i) == Some(&b'}') {
        *i += 1;
    } else {
        loop {
            let k = key(s, i)?;
            let bit = match k {
                b"filename" => 0,
                b"line" => 1,
                b"name" => 2,
                b"fx_node_op" => 3,
                b"fx_node_name" => 4,
                b"fx_node_target" => 5,
                b"fx_original_trace" => 6,
                _ => 7,
            };
            if bit < 7 {
                if seen & (1 << bit) != 0 {
                    return None;
                }
                seen |= 1 << bit;
            }
            match bit {
                0 => filename = string(s, i)?,
                1 => line = num(s, i)?,
                2 => name = string(s, i)?,
                3..=6 => {
                    fx[bit - 3] = if s.get(*i) == Some(&b'"') {
                        Some(string(s, i)?)
                    } else {
                        null(s, i)?;
                        None
                    }
                }
                _ => {
                    value_as::<IgnoredAny>(s, i)?;
                }
            }
            ws(s, i);
            match *s.get(*i)? {
                b',' => *i += 1,
                b'}' => {
                    *i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    Some(FrameIn::Obj {
        filename,
        line,
        name,
        fx,
    })
}

fn frames<'a>(s: &'a [u8], i: &mut usize, known: &KnownStacks) -> Option<StackIn<'a>> {
    if s.get(*i) != Some(&b'[') {
        null(s, i)?;
        return Some(StackIn::None);
    }
    let start = *i;
    let tried = known.try_lists();
    if tried {
        let mut end = start;
        skip_value(s, &mut end)?;
        if let Some(id) = known.list(&s[start..end]) {
            *i = end;
            return Some(StackIn::Known(id));
        }
    }
    *i += 1;
    let mut v = Vec::with_capacity(16);
    let mut spans = Vec::with_capacity(16);
    ws(s, i);
    if s.get(*i) == Some(&b']') {
        *i += 1;
    } else {
        loop {
            ws(s, i);
            let at = *i;
            let f = frame(s, i)?;
            let span = &s[at..*i];
            match known.frame(span) {
                Some(p) => v.push(FrameIn::Packed(p)),
                None => v.push(f),
            }
            spans.push(span);
            ws(s, i);
            match *s.get(*i)? {
                b',' => *i += 1,
                b']' => {
                    *i += 1;
                    break;
                }
                _ => return None,
            }
        }
    }
    Some(StackIn::Frames(
        v,
        Some(Scanned {
            spans,
            list: &s[start..*i],
            tried,
        }),
    ))
}

/// Parses the trace entry object at the window's start (after whitespace); returns it and
/// the bytes used, or None: let serde_json do it.
pub(super) fn entry<'a>(s: &'a [u8], known: &KnownStacks) -> Option<(EntryIn<'a>, usize)> {
    let mut i = 0;
    eat(s, &mut i, b'{')?;
    let mut e = EntryIn {
        action: Cow::Borrowed(""),
        addr: None,
        size: None,
        time_us: None,
        device_free: None,
        meta: Meta::None,
        stack: StackIn::None,
        kept: [None; 4],
        category: None,
    };
    let mut seen = 0u16;
    loop {
        let k = key(s, &mut i)?;
        let bit = match k {
            b"action" => 0,
            b"addr" => 1,
            b"size" => 2,
            b"time_us" => 3,
            b"device_free" => 4,
            b"user_metadata" => 5,
            b"frames" => 6,
            b"stream" => 7,
            b"pool_id" => 8,
            b"compile_context" => 9,
            b"forward_frames" => 10,
            b"category" => 11,
            _ => 12,
        };
        if bit < 12 {
            if seen & (1 << bit) != 0 {
                return None;
            }
            seen |= 1 << bit;
        }
        match bit {
            0 => e.action = string(s, &mut i)?,
            1 => e.addr = num(s, &mut i)?,
            2 => e.size = num(s, &mut i)?,
            3 => e.time_us = num(s, &mut i)?,
            4 => e.device_free = num(s, &mut i)?,
            5 => {
                e.meta = if s.get(i) == Some(&b'"') {
                    Meta::Str(string(s, &mut i)?)
                } else {
                    Meta::of(value_as::<Option<serde_json::Value>>(s, &mut i)?.0)
                }
            }
            6 => e.stack = frames(s, &mut i, known)?,
            7..=10 => e.kept[bit - 7] = Some(raw(s, &mut i)?),
            11 => {
                e.category = if s.get(i) == Some(&b'"') {
                    super::raw::entry_category(&string(s, &mut i)?)
                } else {
                    value_as::<IgnoredAny>(s, &mut i)?;
                    None
                }
            }
            _ => {
                value_as::<IgnoredAny>(s, &mut i)?;
            }
        }
        ws(s, &mut i);
        match *s.get(i)? {
            b',' => i += 1,
            b'}' => {
                i += 1;
                break;
            }
            _ => return None,
        }
    }
    // `action` is required.
    (seen & 1 != 0).then_some((e, i))
}
