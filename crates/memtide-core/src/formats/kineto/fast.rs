//! Fast path for one trace event: a byte scanner for the plain shape Kineto writes (keys
//! without escapes, numbers, flat `[memory]` args). Whatever it does not recognise — escapes,
//! odd types, a value cut off at the window's end — returns None and the event is parsed by
//! serde_json instead, which also reports errors. Values that are skipped (span args) are
//! only checked for balanced brackets and strings.

use super::parse::{ArgsOut, Cat, RawEvent, TidKey};
use crate::formats::json_scan::{skip_str, skip_value, ws};
use std::borrow::Cow;

/// The bytes of a string without escapes, `i` at its opening quote.
#[inline]
fn plain_str<'a>(s: &'a [u8], i: &mut usize) -> Option<&'a [u8]> {
    if s.get(*i) != Some(&b'"') {
        return None;
    }
    let start = *i + 1;
    // Keys and most values are short: a plain loop beats a vectorised search's setup.
    let short = s.len().min(start + 24);
    let mut j = start;
    while j < short {
        match s[j] {
            b'"' => {
                *i = j + 1;
                return Some(&s[start..j]);
            }
            b'\\' => return None,
            _ => j += 1,
        }
    }
    let len = memchr::memchr2(b'"', b'\\', &s[j..])? + (j - start);
    if s[start + len] != b'"' {
        return None;
    }
    *i = start + len + 1;
    Some(&s[start..start + len])
}

/// A number's text, `i` at its first byte.
#[inline]
fn num_text<'a>(s: &'a [u8], i: &mut usize) -> Option<&'a [u8]> {
    let start = *i;
    while *i < s.len() && matches!(s[*i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
        *i += 1;
    }
    (*i > start && *i < s.len()).then(|| &s[start..*i])
}

#[inline]
fn int(t: &[u8]) -> Option<i64> {
    let (neg, digits) = match t.first()? {
        b'-' => (true, &t[1..]),
        _ => (false, t),
    };
    if digits.is_empty() {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add((d - b'0') as i64)?;
    }
    Some(if neg { -v } else { v })
}

#[inline]
fn float(t: &[u8]) -> Option<f64> {
    // Correctly rounded, like serde_json's own result for these short decimals.
    std::str::from_utf8(t).ok()?.parse::<f64>().ok()
}

/// An integer field, also accepting a whole float (`1024.0`).
fn int_value(s: &[u8], i: &mut usize) -> Option<i64> {
    let t = num_text(s, i)?;
    int(t).or_else(|| float(t).filter(|f| f.is_finite()).map(|f| f.round() as i64))
}

/// A byte count: an integer, or a float with no fraction (as the serde path's `as_bytes`);
/// anything else reads as absent, and the event is left out and counted.
fn bytes_value(s: &[u8], i: &mut usize) -> Option<i64> {
    let t = num_text(s, i)?;
    int(t).or_else(|| {
        float(t)
            .filter(|f| f.is_finite() && f.fract() == 0.0 && f.abs() < 9.2e18)
            .map(|f| f as i64)
    })
}

fn args(s: &[u8], i: &mut usize) -> Option<ArgsOut> {
    if s.get(*i) != Some(&b'{') {
        return None;
    }
    *i += 1;
    let mut a = ArgsOut::default();
    ws(s, i);
    if s.get(*i) == Some(&b'}') {
        *i += 1;
        return Some(a);
    }
    loop {
        ws(s, i);
        let key = plain_str(s, i)?;
        ws(s, i);
        if s.get(*i) != Some(&b':') {
            return None;
        }
        *i += 1;
        ws(s, i);
        match key {
            b"Addr" => a.addr = int_value(s, i).and_then(|v| u64::try_from(v).ok()),
            b"Bytes" => a.bytes = bytes_value(s, i),
            b"Total Allocated" => a.total_alloc = int_value(s, i),
            b"Total Reserved" => a.total_res = int_value(s, i),
            b"Device Type" => a.dev_type = int_value(s, i),
            b"Device Id" => a.dev_id = int_value(s, i),
            _ => skip_value(s, i)?,
        }
        ws(s, i);
        match s.get(*i)? {
            b',' => *i += 1,
            b'}' => {
                *i += 1;
                return Some(a);
            }
            _ => return None,
        }
    }
}

/// Parses the event object at `s[0]`; None: let serde_json do it.
pub fn event(s: &[u8]) -> Option<(RawEvent<'_>, usize)> {
    let mut i = 0;
    ws(s, &mut i);
    if s.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    let mut ev = RawEvent::default();
    ws(s, &mut i);
    if s.get(i) == Some(&b'}') {
        return Some((ev, i + 1));
    }
    loop {
        ws(s, &mut i);
        let key = plain_str(s, &mut i)?;
        ws(s, &mut i);
        if s.get(i) != Some(&b':') {
            return None;
        }
        i += 1;
        ws(s, &mut i);
        match key {
            b"ph" => ev.ph = *plain_str(s, &mut i)?.first()?,
            b"cat" => {
                ev.cat = match s.get(i)? {
                    b'"' => Cat::from_str(plain_str(s, &mut i)?),
                    _ => {
                        skip_value(s, &mut i)?;
                        Cat::Other
                    }
                }
            }
            b"name" => {
                // Lossy: old Kineto wrote invalid UTF-8 and raw control characters in
                // names, which strict JSON parsers reject; a name is not worth failing for.
                let start = i;
                ev.name = Some(match plain_str(s, &mut i) {
                    Some(b) => String::from_utf8_lossy(b),
                    None => {
                        // Escapes (`\"`, `\u00e9`): decode just this string.
                        skip_str(s, &mut i)?;
                        Cow::Owned(serde_json::from_slice::<String>(&s[start..i]).ok()?)
                    }
                });
            }
            b"ts" => ev.ts = Some(float(num_text(s, &mut i)?)?),
            b"dur" => ev.dur = Some(float(num_text(s, &mut i)?)?),
            b"tid" => {
                ev.tid = Some(match s.get(i)? {
                    b'"' => {
                        let b = String::from_utf8_lossy(plain_str(s, &mut i)?);
                        match b.parse::<i64>() {
                            Ok(n) => TidKey::Num(n),
                            Err(_) => TidKey::Str(b.into()),
                        }
                    }
                    _ => TidKey::Num(int(num_text(s, &mut i)?)?),
                })
            }
            b"args" if ev.ph == b'X' => skip_value(s, &mut i)?,
            b"args" => ev.args = args(s, &mut i)?,
            _ => skip_value(s, &mut i)?,
        }
        ws(s, &mut i);
        match s.get(i)? {
            b',' => i += 1,
            b'}' => return Some((ev, i + 1)),
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kineto_shapes() {
        let mem = b"{\n    \"ph\": \"i\",\n    \n    \"cat\": \"cpu_instant_event\",\n    \"s\": \"t\",\n    \"name\": \"[memory]\",\n    \"pid\": 27247,\n    \"tid\": 27247,\n    \"ts\": 5077464335096.375\n    ,\n    \"args\": {\n      \"Total Reserved\": 0, \"Total Allocated\": 65536, \"Bytes\": -65536, \"Device Id\": -1, \"Device Type\": 0, \"Addr\": 94435228271936, \"finished\": false, \"Ev Idx\": 13740\n    }\n  },";
        let (ev, used) = event(&mem[..]).expect("fast path");
        let (_, used2) = event(&[b"\n  ", &mem[..]].concat()).expect("leading whitespace");
        assert_eq!(used2, used + 3);
        assert_eq!(&mem[used..], b",");
        assert_eq!(ev.ph, b'i');
        assert_eq!(ev.name.as_deref(), Some("[memory]"));
        assert_eq!(ev.ts, Some(5077464335096.375));
        assert_eq!(ev.args.bytes, Some(-65536));
        assert_eq!(ev.args.addr, Some(94435228271936));
        assert_eq!(ev.args.dev_id, Some(-1));
        assert_eq!(ev.tid, Some(TidKey::Num(27247)));
        let x = b"{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 1, \"tid\": \"stream 7\", \"ts\": 12, \"dur\": 3.5, \"args\": {\"Input Dims\": [[1, 2], []], \"s\": \"a}\\\"b\"}}]";
        let (ev, used) = event(x).expect("fast path");
        assert_eq!(&x[used..], b"]");
        assert!(ev.cat == Cat::CpuOp);
        assert_eq!(ev.dur, Some(3.5));
        assert_eq!(ev.tid, Some(TidKey::Str("stream 7".into())));
        // Invalid UTF-8 and raw control characters in a name are tolerated.
        let (ev, _) = event(b"{\"name\": \"a\xff\x01b\", \"ts\": 1}").expect("lossy");
        assert_eq!(ev.name.as_deref(), Some("a\u{fffd}\u{1}b"));
        // Escaped names are decoded; cut-off events go to serde_json.
        let (ev, _) = event(b"{\"name\": \"a\\\"b\\u00e9\", \"ts\": 1}").expect("escapes");
        assert_eq!(ev.name.as_deref(), Some("a\"b\u{e9}"));
        assert!(event(b"{\"name\": \"ab\", \"ts\": 1").is_none());
        assert!(event(b"{\"name\": \"ab\", \"ts\": 1").is_none());
    }
}
