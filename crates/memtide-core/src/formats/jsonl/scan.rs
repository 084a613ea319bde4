//! The fast path for one JSONL v1 line of the common shape: known keys, each once; unsigned
//! integers; strings without escapes; `null`; a `stack` array of such strings. Anything else
//! (an escape, a float, a negative number, an unknown key, a duplicate, bad JSON) answers
//! "not mine" and the serde reader in `line` reads the line: its values and its errors are
//! the reference, and a property test holds the two to the same result.
//!
//! Strings are interned in the order their keys appear, as the serde reader does, so a line
//! this path gives up on half way leaves the interner as the serde reader would (it interns
//! the same prefix again, finding the same ids).

use super::line::{Num, RawLine};
use crate::trace::{Interner, StrId};
use std::borrow::Cow;

/// A cursor over one line (valid UTF-8, so every slice between two ASCII quotes is a `str`).
struct Cur<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

impl<'a> Cur<'a> {
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    /// The next byte after whitespace, consumed.
    fn next(&mut self) -> Option<u8> {
        self.skip_ws();
        let c = *self.b.get(self.i)?;
        self.i += 1;
        Some(c)
    }

    /// The next byte after whitespace, not consumed.
    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.b.get(self.i).copied()
    }

    /// A string without escapes or control characters.
    fn string(&mut self) -> Option<&'a str> {
        if self.next()? != b'"' {
            return None;
        }
        let start = self.i;
        let mut j = start;
        loop {
            match *self.b.get(j)? {
                b'"' => break,
                b'\\' | 0..=0x1f => return None,
                _ => j += 1,
            }
        }
        self.i = j + 1;
        self.s.get(start..j)
    }

    /// `null`, consumed; false (nothing consumed) for anything else.
    fn null(&mut self) -> bool {
        self.skip_ws();
        if self.b[self.i..].starts_with(b"null") {
            self.i += 4;
            return true;
        }
        false
    }

    /// A string or `null`.
    fn opt_string(&mut self) -> Option<Option<&'a str>> {
        if self.null() {
            return Some(None);
        }
        self.string().map(Some)
    }

    /// An unsigned integer as JSON writes it (no leading zero, no fraction, no exponent) that
    /// fits in 64 bits: what serde_json reads as a `u64`.
    fn uint(&mut self) -> Option<Num> {
        self.skip_ws();
        let start = self.i;
        let mut v: u64 = 0;
        while let Some(&c) = self.b.get(self.i) {
            if !c.is_ascii_digit() {
                break;
            }
            v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
            self.i += 1;
        }
        let digits = self.i - start;
        if digits == 0 || (digits > 1 && self.b[start] == b'0') {
            return None;
        }
        if let Some(b'.' | b'e' | b'E') = self.b.get(self.i) {
            return None;
        }
        Some(Num::U(v))
    }
}

/// Reads `line` into `out` when it has the common shape; false when the serde reader must
/// read it (then `out` may hold part of the line and must be reset).
pub(super) fn scan_line<'a>(
    line: &'a str,
    strings: &mut Interner,
    frames: &mut Vec<StrId>,
    out: &mut RawLine<'a>,
) -> bool {
    scan(line, strings, frames, out).is_some()
}

fn scan<'a>(
    line: &'a str,
    strings: &mut Interner,
    frames: &mut Vec<StrId>,
    l: &mut RawLine<'a>,
) -> Option<()> {
    let mut c = Cur {
        s: line,
        b: line.as_bytes(),
        i: 0,
    };
    if c.next()? != b'{' {
        return None;
    }
    let mut seen = 0u32;
    if c.peek()? == b'}' {
        c.i += 1;
    } else {
        loop {
            let key = c.string()?;
            if c.next()? != b':' {
                return None;
            }
            let bit = match key {
                "t" => {
                    l.t = Some(c.uint()?);
                    0
                }
                "op" => {
                    l.op = Some(Cow::Borrowed(c.string()?));
                    1
                }
                "id" => {
                    l.id = Some(c.uint()?);
                    2
                }
                "size" => {
                    l.size = Some(c.uint()?);
                    3
                }
                "of" => {
                    l.of = Some(c.uint()?);
                    4
                }
                "used" => {
                    l.used = Some(c.uint()?);
                    5
                }
                "free" => {
                    l.free = Some(c.uint()?);
                    6
                }
                "cat" => {
                    l.cat = c.opt_string()?.map(Cow::Borrowed);
                    7
                }
                "name" => {
                    l.name = c.opt_string()?.map(|n| strings.intern(n));
                    8
                }
                "kind" => {
                    l.kind = c.opt_string()?.map(Cow::Borrowed);
                    9
                }
                "stack" => {
                    l.stack = if c.null() {
                        None
                    } else {
                        frames.clear();
                        stack(&mut c, strings, frames)?;
                        Some(strings.intern_stack(frames))
                    };
                    10
                }
                // Header keys and unknown ones: the serde reader (one line per file, or rare).
                _ => return None,
            };
            if seen & (1 << bit) != 0 {
                return None;
            }
            seen |= 1 << bit;
            match c.next()? {
                b',' => {}
                b'}' => break,
                _ => return None,
            }
        }
    }
    c.skip_ws();
    (c.i == c.b.len()).then_some(())
}

/// A `[…]` of plain strings, each interned into `frames`.
fn stack(c: &mut Cur<'_>, strings: &mut Interner, frames: &mut Vec<StrId>) -> Option<()> {
    if c.next()? != b'[' {
        return None;
    }
    if c.peek()? == b']' {
        c.i += 1;
        return Some(());
    }
    loop {
        frames.push(strings.intern(c.string()?));
        match c.next()? {
            b',' => {}
            b']' => return Some(()),
            _ => return None,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::line::{parse_line_serde, show_num};
    use super::*;
    use proptest::prelude::*;

    /// Everything a line decodes to, in words: the fields, the interned name and frames, and
    /// the ids they got (the interner order must match too).
    fn described(l: &RawLine<'_>, s: &Interner) -> String {
        let n = |v: Option<Num>| v.map(show_num);
        let stack = l.stack.map(|st| {
            let frames: Vec<String> = s.stack(st).iter().map(|f| s.text(*f).to_string()).collect();
            (st.0, frames)
        });
        format!(
            "t={:?} op={:?} id={:?} size={:?} of={:?} used={:?} free={:?} cat={:?} name={:?} kind={:?} stack={:?} strings={} stacks={} extra={}",
            n(l.t),
            l.op,
            n(l.id),
            n(l.size),
            n(l.of),
            n(l.used),
            n(l.free),
            l.cat,
            l.name.map(|id| (id.0, s.text(id).to_string())),
            l.kind,
            stack,
            s.string_count(),
            s.stack_count(),
            l.extra.len(),
        )
    }

    /// (fast accepted?, serde's reading or error).
    fn both(line: &str) -> (bool, String, String) {
        let mut fast_strings = Interner::new();
        let mut frames = Vec::new();
        let mut fast = RawLine::default();
        let took = scan_line(line, &mut fast_strings, &mut frames, &mut fast);
        let fast_said = described(&fast, &fast_strings);
        let mut strings = Interner::new();
        let mut reference = RawLine::default();
        let said =
            match parse_line_serde(line.as_bytes(), &mut strings, &mut frames, &mut reference) {
                Ok(()) => described(&reference, &strings),
                Err(e) => format!("error: {e}"),
            };
        (took, fast_said, said)
    }

    #[test]
    fn common_lines_take_the_fast_path_and_read_as_serde_reads_them() {
        for line in [
            r#"{"t":2,"op":"alloc","id":1,"size":14592000,"cat":"grad","name":"tensor_119","stack":["model.py:27 forward_17","train.py:43 train_step"]}"#,
            r#"{"t":5,"op":"free","id":2}"#,
            r#"{ "t" : 1 , "op" : "mark" , "name" : "step 0" , "kind" : "step" }"#,
            r#"{"t":7,"op":"alloc","id":3,"size":0,"name":null,"stack":null,"cat":null}"#,
            r#"{"t":18446744073709551615,"op":"sample","used":0}"#,
            r#"{"t":1,"op":"alloc","id":1,"size":1,"stack":[],"name":"é ü 中"}"#,
            "{}",
        ] {
            let (took, fast, reference) = both(line);
            assert!(took, "{line}");
            assert_eq!(fast, reference, "{line}");
        }
    }

    #[test]
    fn uncommon_lines_are_left_to_serde() {
        for line in [
            r#"{"t":1.5,"op":"free","id":2}"#,
            r#"{"t":-1,"op":"free","id":2}"#,
            r#"{"t":1e3,"op":"free","id":2}"#,
            r#"{"t":01,"op":"free","id":2}"#,
            r#"{"t":18446744073709551616,"op":"free","id":2}"#,
            r#"{"t":1,"op":"fr\u0065e","id":2}"#,
            r#"{"t":1,"t":2,"op":"free","id":2}"#,
            r#"{"t":1,"op":"free","id":2,"dtype":"f32"}"#,
            r#"{"t":1,"op":"free","id":2,}"#,
            r#"{"t":1,"op":"free","id":2} x"#,
            r#"{"t":1,"op":"free","id":null}"#,
            r#"{"t":1,"op":"alloc","id":1,"size":1,"stack":["a",null]}"#,
            r#"{"t":1,"op":"alloc","id":1,"size":1,"stack":"a"}"#,
            r#"{"memtide":1,"device":"cuda:0","clock":"us"}"#,
            "{\"t\":1,\"op\":\"free\",\"name\":\"a\tb\"}",
            r#"{"t":1,"op":"free""#,
        ] {
            let (took, _, _) = both(line);
            assert!(!took, "the fast path took {line}");
        }
    }

    /// Pieces of lines, common and odd, for the generator below.
    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            (0u64..u64::MAX).prop_map(|v| v.to_string()),
            Just("0".to_string()),
            Just("007".to_string()),
            Just("-3".to_string()),
            Just("2.5".to_string()),
            Just("1e2".to_string()),
            Just("99999999999999999999".to_string()),
            Just("null".to_string()),
            Just("true".to_string()),
            Just("nul".to_string()),
            "[a-z é\\\\\"\t]{0,6}".prop_map(|s| format!("\"{s}\"")),
            prop::collection::vec("[a-z:. ]{0,5}", 0..3).prop_map(|v| format!(
                "[{}]",
                v.iter()
                    .map(|f| format!("\"{f}\""))
                    .collect::<Vec<_>>()
                    .join(",")
            )),
            Just("[\"a\",]".to_string()),
            Just("{}".to_string()),
        ]
    }

    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("t"),
            Just("op"),
            Just("id"),
            Just("size"),
            Just("of"),
            Just("used"),
            Just("free"),
            Just("cat"),
            Just("name"),
            Just("kind"),
            Just("stack"),
            Just("memtide"),
            Just("dtype"),
        ]
        .prop_map(str::to_string)
    }

    fn line() -> impl Strategy<Value = String> {
        (
            prop::collection::vec((key(), value(), " ?"), 0..7),
            prop_oneof![Just(""), Just(","), Just(" "), Just("}"), Just("x")],
        )
            .prop_map(|(fields, tail)| {
                let body: Vec<String> = fields
                    .iter()
                    .map(|(k, v, ws)| format!("{ws}\"{k}\"{ws}:{ws}{v}"))
                    .collect();
                format!("{{{}}}{tail}", body.join(","))
            })
    }

    #[test]
    fn the_generator_reaches_both_paths() {
        use proptest::strategy::ValueTree;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let (mut took, mut agreed_error) = (0, 0);
        for _ in 0..4000 {
            let l = line().new_tree(&mut runner).unwrap().current();
            let (t, _, reference) = both(&l);
            took += usize::from(t);
            agreed_error += usize::from(!t && reference.starts_with("error"));
        }
        assert!(took > 200, "only {took} of 4000 lines took the fast path");
        assert!(
            agreed_error > 200,
            "only {agreed_error} of 4000 lines were bad JSON"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]
        /// Whatever the fast path takes, serde reads the same way (fields, interned strings
        /// and ids); what serde rejects, the fast path never takes.
        #[test]
        fn the_fast_path_agrees_with_serde(line in line()) {
            let (took, fast, reference) = both(&line);
            if took {
                prop_assert_eq!(fast, reference, "{}", line);
            }
        }
    }
}
