//! The fast path for one JSONL v1 line of the common shape: known keys, each once; unsigned
//! integers; strings without escapes; `null`; a `stack` array of such strings. Anything else
//! (an escape, a float, a negative number, an unknown key, a duplicate, bad JSON) answers
//! "not mine" and the serde reader in `line` reads the line: its values and its errors are
//! the reference, and a property test holds the two to the same result.
//!
//! Strings are interned in the order their keys appear, as the serde reader does, so a line
//! this path gives up on half way leaves the interner as the serde reader would (it interns
//! the same prefix again, finding the same ids).
//!
//! A `stack` array whose bytes were read before is the stack they were read as (a training
//! loop writes the same few thousand stacks again and again): every frame of it is already
//! interned, so the interner ends as the long way would leave it.

use super::line::{Num, RawLine};
use crate::formats::bytes_memo::BytesMemo;
use crate::trace::{Interner, StackId, StrId};
use std::borrow::Cow;

/// A cursor over one line (valid UTF-8, so every slice between two ASCII quotes is a `str`).
struct Cur<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

impl<'a> Cur<'a> {
    fn skip_ws(&mut self) {
        // Most lines hold no whitespace: one compare then.
        if self.b.get(self.i).is_some_and(|&c| c > b' ') {
            return;
        }
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
        let j = string_stop(self.b, start)?;
        if self.b[j] != b'"' {
            return None;
        }
        self.i = j + 1;
        self.s.get(start..j)
    }

    /// A key of the common shape, its quotes consumed.
    fn key(&mut self) -> Option<Key> {
        if self.next()? != b'"' {
            return None;
        }
        let (key, len) = Key::prefix(self.b.get(self.i..)?)?;
        self.i += len;
        Some(key)
    }

    /// `null`, consumed; false (nothing consumed) for anything else.
    fn null(&mut self) -> bool {
        self.skip_ws();
        if self
            .b
            .get(self.i..)
            .and_then(|rest| rest.first_chunk::<4>())
            == Some(b"null")
        {
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
        let digits = self
            .b
            .get(start..)?
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let text = self.b.get(start..start + digits)?;
        if digits == 0 || (digits > 1 && text[0] == b'0') {
            return None;
        }
        // Up to 19 digits always fit in 64 bits; 20 may not.
        let v = if digits <= 19 {
            text.iter().fold(0u64, |v, &c| v * 10 + u64::from(c - b'0'))
        } else {
            text.iter().try_fold(0u64, |v, &c| {
                v.checked_mul(10)?.checked_add(u64::from(c - b'0'))
            })?
        };
        self.i = start + digits;
        if let Some(b'.' | b'e' | b'E') = self.b.get(self.i) {
            return None;
        }
        Some(Num::U(v))
    }
}

/// The keys an event line of the common shape has, each a bit of the keys seen.
#[derive(Clone, Copy)]
enum Key {
    T,
    Op,
    Id,
    Size,
    Of,
    Used,
    Free,
    Cat,
    Name,
    Kind,
    Stack,
}

impl Key {
    /// The key a string body starting with `b` spells, and the bytes it takes with its
    /// closing quote (matched byte by byte: a key string cut out and compared cost more than
    /// the rest of its field).
    fn prefix(b: &[u8]) -> Option<(Key, usize)> {
        Some(match b {
            [b't', b'"', ..] => (Key::T, 2),
            [b'o', b'p', b'"', ..] => (Key::Op, 3),
            [b'i', b'd', b'"', ..] => (Key::Id, 3),
            [b's', b'i', b'z', b'e', b'"', ..] => (Key::Size, 5),
            [b'o', b'f', b'"', ..] => (Key::Of, 3),
            [b'u', b's', b'e', b'd', b'"', ..] => (Key::Used, 5),
            [b'f', b'r', b'e', b'e', b'"', ..] => (Key::Free, 5),
            [b'c', b'a', b't', b'"', ..] => (Key::Cat, 4),
            [b'n', b'a', b'm', b'e', b'"', ..] => (Key::Name, 5),
            [b'k', b'i', b'n', b'd', b'"', ..] => (Key::Kind, 5),
            [b's', b't', b'a', b'c', b'k', b'"', ..] => (Key::Stack, 6),
            _ => return None,
        })
    }
}

/// Where the string body starting at `i` stops: the first `"`, `\\` or control character
/// (eight bytes at a time). None when the bytes end first.
fn string_stop(b: &[u8], mut i: usize) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    while let Some(&word) = b.get(i..).and_then(|rest| rest.first_chunk::<8>()) {
        let v = u64::from_le_bytes(word);
        let quote = v ^ (ONES * u64::from(b'"'));
        let backslash = v ^ (ONES * u64::from(b'\\'));
        // A byte's high bit is set where it is zero (below 0x20 for `v`); a false mark can
        // only lie above a true one, so the lowest mark is exact.
        let marks = ((quote.wrapping_sub(ONES) & !quote)
            | (backslash.wrapping_sub(ONES) & !backslash)
            | (v.wrapping_sub(ONES * 0x20) & !v))
            & HIGH;
        if marks != 0 {
            return Some(i + (marks.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    b.get(i..)?
        .iter()
        .position(|&c| matches!(c, b'"' | b'\\' | 0..=0x1f))
        .map(|k| i + k)
}

/// Reads `line` into `out` when it has the common shape; false when the serde reader must
/// read it (then `out` may hold part of the line and must be reset).
pub(super) fn scan_line<'a>(
    line: &'a str,
    strings: &mut Interner,
    frames: &mut Vec<StrId>,
    stacks: &mut BytesMemo,
    out: &mut RawLine<'a>,
) -> bool {
    scan(line, strings, frames, stacks, out).is_some()
}

fn scan<'a>(
    line: &'a str,
    strings: &mut Interner,
    frames: &mut Vec<StrId>,
    stacks: &mut BytesMemo,
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
            // Header keys and unknown ones: the serde reader (one line per file, or rare).
            let key = c.key()?;
            if c.next()? != b':' {
                return None;
            }
            // A repeated key before its value is read, as serde stops (nothing interned).
            let bit = 1u32 << key as u32;
            if seen & bit != 0 {
                return None;
            }
            seen |= bit;
            match key {
                Key::T => l.t = Some(c.uint()?),
                Key::Op => l.op = Some(Cow::Borrowed(c.string()?)),
                Key::Id => l.id = Some(c.uint()?),
                Key::Size => l.size = Some(c.uint()?),
                Key::Of => l.of = Some(c.uint()?),
                Key::Used => l.used = Some(c.uint()?),
                Key::Free => l.free = Some(c.uint()?),
                Key::Cat => l.cat = c.opt_string()?.map(Cow::Borrowed),
                Key::Name => l.name = c.opt_string()?.map(|n| strings.intern(n)),
                Key::Kind => l.kind = c.opt_string()?.map(Cow::Borrowed),
                Key::Stack => {
                    l.stack = if c.null() {
                        None
                    } else {
                        Some(known_or_new_stack(&mut c, strings, frames, stacks)?)
                    }
                }
            }
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

/// A `[…]` of plain strings: the stack its bytes were read as before, else read frame by
/// frame, interned, and its bytes kept for the next time.
fn known_or_new_stack(
    c: &mut Cur<'_>,
    strings: &mut Interner,
    frames: &mut Vec<StrId>,
    stacks: &mut BytesMemo,
) -> Option<StackId> {
    c.skip_ws();
    let start = c.i;
    if let Some(end) = array_end(c.b, start) {
        if let Some(id) = stacks.get(&c.b[start..end]) {
            c.i = end;
            return Some(StackId(id));
        }
    }
    frames.clear();
    stack(c, strings, frames)?;
    let id = strings.intern_stack(frames);
    stacks.insert(&c.b[start..c.i], id.0);
    Some(id)
}

/// Where the array opening at `start` ends (just past its `]`), for an array whose strings
/// hold no escapes or control characters: the first `]` outside a string. None when it is
/// not such an array.
fn array_end(b: &[u8], start: usize) -> Option<usize> {
    if b.get(start) != Some(&b'[') {
        return None;
    }
    let mut i = start + 1;
    loop {
        match *b.get(i)? {
            b']' => return Some(i + 1),
            b'"' => {
                let j = string_stop(b, i + 1)?;
                if b[j] != b'"' {
                    return None;
                }
                i = j + 1;
            }
            _ => i += 1,
        }
    }
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

    /// Two readers of a sequence of lines, each with its own interner: the fast path (with
    /// its stack memo) and serde.
    #[derive(Default)]
    struct Readers {
        fast: Interner,
        stacks: BytesMemo,
        serde: Interner,
    }

    impl Readers {
        fn new() -> Self {
            Readers {
                fast: Interner::new(),
                stacks: BytesMemo::default(),
                serde: Interner::new(),
            }
        }

        /// (fast accepted?, its reading, serde's reading or error) of the next line. A line
        /// the fast path gives up on is read by serde into the fast interner too, as
        /// `parse_line` does.
        fn next(&mut self, line: &str) -> (bool, String, String) {
            let mut frames = Vec::new();
            let mut fast = RawLine::default();
            let took = scan_line(
                line,
                &mut self.fast,
                &mut frames,
                &mut self.stacks,
                &mut fast,
            );
            let fast_said = described(&fast, &self.fast);
            if !took {
                let mut again = RawLine::default();
                let _ = parse_line_serde(line.as_bytes(), &mut self.fast, &mut frames, &mut again);
            }
            let mut reference = RawLine::default();
            let said = match parse_line_serde(
                line.as_bytes(),
                &mut self.serde,
                &mut frames,
                &mut reference,
            ) {
                Ok(()) => described(&reference, &self.serde),
                Err(e) => format!("error: {e}"),
            };
            (took, fast_said, said)
        }
    }

    /// (fast accepted?, its reading, serde's reading or error) of one line alone.
    fn both(line: &str) -> (bool, String, String) {
        Readers::new().next(line)
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

    #[test]
    fn a_stack_read_before_is_the_same_stack_and_interns_nothing() {
        let mut r = Readers::new();
        let lines = [
            r#"{"t":1,"op":"alloc","id":1,"size":1,"stack":["a.py:1 f","b.py:2 g]"]}"#,
            r#"{"t":2,"op":"alloc","id":2,"size":1,"name":"x","stack":["a.py:1 f","b.py:2 g]"]}"#,
            r#"{"t":3,"op":"alloc","id":3,"size":1,"stack":["a.py:1 f"]}"#,
            r#"{"t":4,"op":"alloc","id":4,"size":1,"stack":[ "a.py:1 f","b.py:2 g]"]}"#,
            r#"{"t":5,"op":"alloc","id":5,"size":1,"stack":["a.py:1 f","b.py:2 g]"],"x":1}"#,
            r#"{"t":6,"op":"alloc","id":6,"size":1,"stack":["a.py:1 f","b.py:2 g]"]}"#,
        ];
        for line in lines {
            let (took, fast, reference) = r.next(line);
            if took {
                assert_eq!(fast, reference, "{line}");
            }
        }
        assert_eq!(r.fast.stack_count(), r.serde.stack_count());
        assert_eq!(r.stacks.get(br#"["a.py:1 f","b.py:2 g]"]"#), Some(1));
        assert_eq!(r.stacks.get(br#"["a.py:1 f"]"#), Some(2));
        assert_eq!(
            array_end(br#"x["a]\"]"#, 1),
            None,
            "an escape is not read here"
        );
        assert_eq!(array_end(br#"["a]"] "#, 0), Some(6));
        assert_eq!(array_end(br#"["a]""#, 0), None, "an array cut short");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        /// A sequence of lines sharing one interner and one stack memo reads as serde reads
        /// it, line by line, with the same ids.
        #[test]
        fn a_sequence_of_lines_agrees_with_serde(lines in prop::collection::vec(
            prop_oneof![line(), stack_line()], 1..12)) {
            let mut r = Readers::new();
            for line in &lines {
                let (took, fast, reference) = r.next(line);
                if took {
                    prop_assert_eq!(fast, reference, "{}", line);
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// The word-at-a-time stop finds what a byte-by-byte walk finds, from any start.
        #[test]
        fn string_stop_is_the_first_quote_backslash_or_control(
            bytes in prop::collection::vec(prop_oneof![
                Just(b'"'), Just(b'\\'), 0u8..0x20, 0x20u8..0x80, 0x80u8..=0xff, Just(b'a')
            ], 0..40),
            start in 0usize..44,
        ) {
            let walk = bytes.get(start..).and_then(|rest| {
                rest.iter().position(|&c| matches!(c, b'"' | b'\\' | 0..=0x1f)).map(|k| start + k)
            });
            prop_assert_eq!(string_stop(&bytes, start), walk);
        }
    }

    /// A common line with a stack from a small set (so stacks repeat), spaced or not.
    fn stack_line() -> impl Strategy<Value = String> {
        (
            prop::collection::vec(
                prop_oneof![Just("a.py:1 f"), Just("b]:2 g"), Just("c[")],
                0..3,
            ),
            prop_oneof![Just(""), Just(" ")],
        )
            .prop_map(|(frames, ws)| {
                let fs: Vec<String> = frames.iter().map(|f| format!("\"{f}\"")).collect();
                format!(
                    r#"{{"t":1,"op":"alloc","id":1,"size":1,"stack":[{ws}{}]}}"#,
                    fs.join(",")
                )
            })
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
