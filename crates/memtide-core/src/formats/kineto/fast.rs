//! Fast path for one trace event: a byte scanner for the plain shape Kineto writes (keys
//! without escapes, numbers, flat `[memory]` args). Whatever it does not recognise — escapes,
//! odd types, a value cut off at the window's end — returns None and the event is parsed by
//! serde_json instead, which also reports errors. Values that are skipped (span args) are
//! only checked for balanced brackets and strings.

use super::parse::{ArgsOut, Cat, RawEvent, TidKey};
use crate::formats::json::scan::{skip_value, ws};
use std::borrow::Cow;

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// High bit set in each byte of `w` equal to `b`. The lowest one set is exact (higher ones
/// may be false after a match), which is all a search for the first match needs.
#[inline(always)]
fn bytes_equal(w: u64, b: u8) -> u64 {
    let x = w ^ (ONES * b as u64);
    x.wrapping_sub(ONES) & !x & HIGHS
}

/// The first position at or after `j` holding a byte for which `hit` (on eight bytes at a
/// time, as [`bytes_equal`] gives) or `one` (the same test on a single byte) is true.
#[inline(always)]
fn find_from(
    s: &[u8],
    mut j: usize,
    hit: impl Fn(u64) -> u64,
    one: impl Fn(u8) -> bool,
) -> Option<usize> {
    // `first_chunk` is one 8-byte load (a copy into an array may become a memmove call).
    while let Some(w) = s.get(j..).and_then(|r| r.first_chunk::<8>()) {
        let m = hit(u64::from_le_bytes(*w));
        if m != 0 {
            return Some(j + (m.trailing_zeros() / 8) as usize);
        }
        j += 8;
    }
    while j < s.len() {
        if one(s[j]) {
            return Some(j);
        }
        j += 1;
    }
    None
}

/// The next `"` or `\\` at or after `j`.
#[inline(always)]
fn quote_or_escape(s: &[u8], j: usize) -> Option<usize> {
    find_from(
        s,
        j,
        |w| bytes_equal(w, b'"') | bytes_equal(w, b'\\'),
        |c| c == b'"' || c == b'\\',
    )
}

/// The bytes of a string without escapes, `i` at its opening quote.
#[inline(always)]
fn plain_str<'a>(s: &'a [u8], i: &mut usize) -> Option<&'a [u8]> {
    if s.get(*i) != Some(&b'"') {
        return None;
    }
    let start = *i + 1;
    let k = quote_or_escape(s, start)?;
    if s[k] != b'"' {
        return None;
    }
    *i = k + 1;
    Some(&s[start..k])
}

/// Skips any string, escapes included, `i` at its opening quote (as `json::scan::skip_str`).
#[inline]
fn skip_string(s: &[u8], i: &mut usize) -> Option<()> {
    let mut j = *i + 1;
    loop {
        let k = quote_or_escape(s, j)?;
        if s[k] == b'\\' {
            j = k + 2;
        } else {
            *i = k + 1;
            return Some(());
        }
    }
}

/// Skips one value of any type: exactly what `json::scan::skip_value` accepts (brackets only
/// counted, strings skipped), searching eight bytes at a time for the bytes that matter.
fn skip_any(s: &[u8], i: &mut usize) -> Option<()> {
    match *s.get(*i)? {
        b'"' => skip_string(s, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            // `[` and `]` are `{` and `}` without bit 5.
            let lift = ONES * 0x20;
            loop {
                let k = find_from(
                    s,
                    *i,
                    |w| {
                        bytes_equal(w, b'"')
                            | bytes_equal(w | lift, b'{')
                            | bytes_equal(w | lift, b'}')
                    },
                    |c| matches!(c, b'"' | b'{' | b'[' | b'}' | b']'),
                )?;
                *i = k;
                match s[k] {
                    b'"' => skip_string(s, i)?,
                    b'{' | b'[' => {
                        depth += 1;
                        *i += 1;
                    }
                    _ => {
                        depth -= 1;
                        *i += 1;
                        if depth == 0 {
                            return Some(());
                        }
                    }
                }
            }
        }
        _ => skip_value(s, i),
    }
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

/// 10^k for k <= 22: every one exact in f64.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

#[inline]
fn float(t: &[u8]) -> Option<f64> {
    // Correctly rounded, like serde_json's own result for these short decimals.
    if let Some(f) = plain_decimal(t) {
        return Some(f);
    }
    std::str::from_utf8(t).ok()?.parse::<f64>().ok()
}

/// A float field (`ts`, `dur`): the decimal fast path straight from the bytes (one pass), else
/// `float(num_text(..))` — the same value either way.
#[inline]
fn float_value(s: &[u8], i: &mut usize) -> Option<f64> {
    let start = *i;
    let neg = s.get(start) == Some(&b'-');
    let mut j = start + usize::from(neg);
    let (mut m, mut digits, mut point) = (0u64, 0usize, None::<usize>);
    while let Some(&c) = s.get(j) {
        match c {
            b'0'..=b'9' if digits < 19 => {
                m = m * 10 + (c - b'0') as u64;
                digits += 1;
            }
            b'.' if point.is_none() => point = Some(j),
            b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E' => break,
            _ => {
                let decimals = point.map_or(0, |p| j - p - 1);
                if digits == 0 || m > 1 << 53 || decimals >= POW10.len() {
                    break;
                }
                *i = j;
                let v = m as f64 / POW10[decimals];
                return Some(if neg { -v } else { v });
            }
        }
        j += 1;
    }
    float(num_text(s, i)?)
}

/// `[-]digits[.digits]` with a mantissa of at most 2^53 and at most 22 decimals (Kineto's
/// `5077464335096.375`): the mantissa and 10^decimals are exact doubles, so their quotient,
/// one correctly rounded division, is bit for bit the correctly rounded value `parse` gives
/// (Clinger's fast path). None: anything else, left to `parse`.
#[inline]
fn plain_decimal(t: &[u8]) -> Option<f64> {
    let (neg, d) = match t.first()? {
        b'-' => (true, &t[1..]),
        _ => (false, t),
    };
    let (mut m, mut digits, mut point) = (0u64, 0usize, None::<usize>);
    for (k, &c) in d.iter().enumerate() {
        match c {
            b'0'..=b'9' if digits < 19 => {
                m = m * 10 + (c - b'0') as u64;
                digits += 1;
            }
            b'.' if point.is_none() => point = Some(k),
            _ => return None,
        }
    }
    let decimals = point.map_or(0, |p| d.len() - p - 1);
    if digits == 0 || m > 1 << 53 || decimals >= POW10.len() {
        return None;
    }
    let v = m as f64 / POW10[decimals];
    Some(if neg { -v } else { v })
}

/// `[-]digits` ending where a number's text ends (not at the window's end), read in one
/// pass: what `int(num_text(..))` gives, or None (`i` unmoved) for anything else.
#[inline]
fn plain_int(s: &[u8], i: &mut usize) -> Option<i64> {
    let neg = s.get(*i) == Some(&b'-');
    let mut j = *i + usize::from(neg);
    let first = j;
    let mut v: i64 = 0;
    while let Some(&c) = s.get(j) {
        match c {
            b'0'..=b'9' => {
                v = v.checked_mul(10)?.checked_add((c - b'0') as i64)?;
                j += 1;
            }
            b'-' | b'+' | b'.' | b'e' | b'E' => return None,
            _ => {
                if j == first {
                    return None;
                }
                *i = j;
                return Some(if neg { -v } else { v });
            }
        }
    }
    None
}

/// An integer field, also accepting a whole float (`1024.0`).
fn int_value(s: &[u8], i: &mut usize) -> Option<i64> {
    if let Some(v) = plain_int(s, i) {
        return Some(v);
    }
    let t = num_text(s, i)?;
    int(t).or_else(|| float(t).filter(|f| f.is_finite()).map(|f| f.round() as i64))
}

/// A byte count: an integer, or a float with no fraction (as the serde path's `as_bytes`);
/// anything else reads as absent, and the event is left out and counted.
fn bytes_value(s: &[u8], i: &mut usize) -> Option<i64> {
    if let Some(v) = plain_int(s, i) {
        return Some(v);
    }
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
            _ => skip_any(s, i)?,
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
#[inline(always)]
pub(crate) fn event(s: &[u8]) -> Option<(RawEvent<'_>, usize)> {
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
                        skip_any(s, &mut i)?;
                        Cat::Other
                    }
                }
            }
            b"name" => {
                // Lossy: old Kineto wrote invalid UTF-8 and raw control characters in
                // names, which strict JSON parsers reject; a name is not worth failing for.
                let start = i;
                ev.name = Some(match plain_str(s, &mut i) {
                    Some(b) => match std::str::from_utf8(b) {
                        Ok(n) => Cow::Borrowed(n),
                        Err(_) => String::from_utf8_lossy(b),
                    },
                    None => {
                        // Escapes (`\"`, `\u00e9`): decode just this string.
                        skip_string(s, &mut i)?;
                        Cow::Owned(serde_json::from_slice::<String>(&s[start..i]).ok()?)
                    }
                });
            }
            b"ts" => ev.ts = Some(float_value(s, &mut i)?),
            b"dur" => ev.dur = Some(float_value(s, &mut i)?),
            b"tid" => {
                ev.tid = Some(match s.get(i)? {
                    b'"' => {
                        let b = String::from_utf8_lossy(plain_str(s, &mut i)?);
                        match b.parse::<i64>() {
                            Ok(n) => TidKey::Num(n),
                            Err(_) => TidKey::Str(b.into()),
                        }
                    }
                    _ => TidKey::Num(match plain_int(s, &mut i) {
                        Some(v) => v,
                        None => int(num_text(s, &mut i)?)?,
                    }),
                })
            }
            b"args" if ev.ph == b'X' => skip_any(s, &mut i)?,
            b"args" => ev.args = args(s, &mut i)?,
            _ => skip_any(s, &mut i)?,
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

    /// The decimal fast path gives the bits `parse` gives, or leaves the text to it.
    #[test]
    fn plain_decimals_equal_parse() {
        let mut texts: Vec<String> = [
            "0",
            "-0",
            "1.",
            ".5",
            "-.5",
            ".",
            "-",
            "5077464335096.375",
            "5077464335122.209",
            "1790857026000000.123",
            "9007199254740992",
            "9007199254740993",
            "0.1",
            "2.675",
            "123456789012345678",
            "1234567890123456789",
            "12345678901234567890",
            "1e3",
            "+5",
            "1.2.3",
            "0000.0001",
            "4398046511103.999",
            "0.0000000000000000000001",
        ]
        .iter()
        .map(|t| t.to_string())
        .collect();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let int = x % 10_000_000_000_000;
            let frac = (x >> 40) % 1000;
            texts.push(format!("{int}.{frac:03}"));
            texts.push(format!("-{}.{}", x % 100_000, (x >> 20) % 1_000_000_000));
        }
        for t in &texts {
            let want = t.parse::<f64>().ok();
            assert_eq!(
                float(t.as_bytes()).map(f64::to_bits),
                want.map(f64::to_bits),
                "{t}"
            );
            if let Some(f) = plain_decimal(t.as_bytes()) {
                assert_eq!(Some(f.to_bits()), want.map(f64::to_bits), "{t}");
            }
        }
    }

    /// `plain_int` reads what `int(num_text(..))` reads, or leaves it (and `i`) alone.
    #[test]
    fn plain_int_equals_int_of_num_text() {
        for t in [
            "0,",
            "-0}",
            "27247,",
            "-65536 ",
            "94435228271936\n",
            "9223372036854775807,",
            "9223372036854775808,",
            "-9223372036854775808,",
            "1.5,",
            "1e3,",
            "-,",
            "+5,",
            "5",
            ",",
            "12-3,",
            "00012,",
        ] {
            let b = t.as_bytes();
            let (mut i, mut j) = (0, 0);
            let fast = plain_int(b, &mut i);
            let slow = num_text(b, &mut j).and_then(int);
            if let Some(v) = fast {
                assert_eq!(Some(v), slow, "{t}");
                assert_eq!(i, j, "{t}");
            } else {
                assert_eq!(i, 0, "{t}");
            }
        }
    }

    /// `float_value` reads what `float(num_text(..))` reads, to the same byte.
    #[test]
    fn float_value_equals_float_of_num_text() {
        for t in [
            "5077464335096.375\n",
            "25.334,",
            "-0.5 ",
            "1.,",
            ".5}",
            ".,",
            "-,",
            "1e3,",
            "+5,",
            "1.2.3,",
            "9007199254740993.5,",
            "12345678901234567890.1,",
            "0.00000000000000000000001,",
            "5077464335096.375",
            "7-1,",
            "2000000.000\n",
        ] {
            let b = t.as_bytes();
            let (mut i, mut j) = (0, 0);
            let fast = float_value(b, &mut i);
            let slow = num_text(b, &mut j).and_then(float);
            assert_eq!(fast.map(f64::to_bits), slow.map(f64::to_bits), "{t}");
            if fast.is_some() {
                assert_eq!(i, j, "{t}");
            }
        }
    }

    /// `skip_any` accepts and ends exactly where `json::scan::skip_value` does, also on every
    /// cut-off prefix.
    #[test]
    fn skip_any_equals_skip_value() {
        let values: [&[u8]; 9] = [
            br#"{"External id": 3,"Sequence number": 1, "Concrete Inputs": ["", "", ""], "Input Strides": [[1367, 1], [1367, 1], []], "Ev Idx": 3}, "#,
            br#"["a\"b", {"c": "]}"}, [], "\\"]]"#,
            br#"{"a": [1, 2}}, 7"#,
            br#""plain string long enough for a word or two", "#,
            br#""esc \" quote\\", 1"#,
            b"27247,\n",
            b"[[[[[[[[[[[[]]]]]]]]]]]],",
            br#"{"Y_y": "_yY[", "k": "[[[{{{"}]"#,
            b"\"a\\",
        ];
        for v in values {
            for n in 0..=v.len() {
                let s = &v[..n];
                let (mut i, mut j) = (0, 0);
                let a = skip_any(s, &mut i);
                let b = skip_value(s, &mut j);
                assert_eq!(a, b, "{:?}", String::from_utf8_lossy(s));
                if a.is_some() {
                    assert_eq!(i, j, "{:?}", String::from_utf8_lossy(s));
                }
            }
        }
    }

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
