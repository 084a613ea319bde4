//! Skipping a JSON value of any size without holding it: the window moves past each piece as
//! it is checked, so a 4 GiB string under an unknown key costs a scan (memchr for the quote
//! and the backslash) and no memory. Containers are walked with a small stack (not by
//! recursion), scalars parsed as usual. What it accepts and refuses is what serde_json's
//! `IgnoredAny` does (control characters in strings and bad escapes are errors), except that
//! nesting is limited to [`MAX_DEPTH`] levels, so the stack of open containers stays small.

use super::{Feed, FeedError};
use serde::de::IgnoredAny;
use std::io::Read;

/// The deepest nesting skipped (a trace nests a few levels; a file of a billion `[` is not
/// one): the stack of open containers takes at most this many bytes.
pub(crate) const MAX_DEPTH: usize = 1 << 20;

impl<R: Read, S> Feed<R, S> {
    /// Skips the value at the window (after whitespace).
    pub fn skip_value(&mut self) -> Result<(), FeedError> {
        // The closing byte of each open container, innermost last.
        let mut open: Vec<u8> = Vec::new();
        loop {
            // A value starts here.
            match self.peek()? {
                None => return Err(self.eof_here()),
                Some(b'"') => self.skip_string()?,
                Some(c @ (b'[' | b'{')) => {
                    if open.len() == MAX_DEPTH {
                        return Err(self.error_here(format!(
                            "arrays and objects nested deeper than {MAX_DEPTH} levels"
                        )));
                    }
                    self.bump();
                    let close = if c == b'[' { b']' } else { b'}' };
                    if self.peek()? == Some(close) {
                        self.bump();
                    } else {
                        open.push(close);
                        if close == b'}' {
                            self.key()?;
                        }
                        continue;
                    }
                }
                Some(_) => {
                    self.value::<IgnoredAny>()?;
                }
            }
            // After a value: close what ends here, or go on to the next element.
            loop {
                let Some(&close) = open.last() else {
                    return Ok(());
                };
                match self.peek()? {
                    Some(b',') => {
                        self.bump();
                        if close == b'}' {
                            self.key()?;
                        }
                        break;
                    }
                    Some(c) if c == close => {
                        self.bump();
                        open.pop();
                    }
                    Some(c) => {
                        return Err(self.error_here(format!(
                            "expected ',' or '{}', found {:?}",
                            char::from(close),
                            char::from(c)
                        )))
                    }
                    None => return Err(self.eof_here()),
                }
            }
        }
    }

    fn eof_here(&self) -> FeedError {
        FeedError::Eof {
            offset: self.offset(),
        }
    }

    /// An object key and its colon.
    fn key(&mut self) -> Result<(), FeedError> {
        match self.peek()? {
            Some(b'"') => self.skip_string()?,
            Some(c) => {
                return Err(self.error_here(format!(
                    "expected an object key (a string), found {:?}",
                    char::from(c)
                )))
            }
            None => return Err(self.eof_here()),
        }
        self.expect(b':', "':' after an object key")
    }

    /// At least `n` unread bytes in the window; false when the input ends first.
    fn have(&mut self, n: usize) -> Result<bool, FeedError> {
        while self.end - self.pos < n {
            if !self.fill()? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Skips the string at the window, in pieces: only its unread rest is ever held.
    fn skip_string(&mut self) -> Result<(), FeedError> {
        self.bump();
        loop {
            if !self.have(1)? {
                return Err(self.eof_here());
            }
            let s = &self.buf[self.pos..self.end];
            let stop = memchr::memchr2(b'"', b'\\', s).unwrap_or(s.len());
            if let Some(k) = s[..stop].iter().position(|&c| c < 0x20) {
                self.pos += k;
                return Err(self.error_here(
                    "control character (\\u0000-\\u001F) found while parsing a string".into(),
                ));
            }
            self.pos += stop;
            match s.get(stop) {
                None => {}
                Some(b'"') => {
                    self.bump();
                    return Ok(());
                }
                Some(_) => self.skip_escape()?,
            }
        }
    }

    /// Skips a backslash escape: `\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`, `\uXXXX`.
    fn skip_escape(&mut self) -> Result<(), FeedError> {
        if !self.have(2)? {
            return Err(self.eof_here());
        }
        let len = match self.buf[self.pos + 1] {
            b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => 2,
            b'u' => {
                if !self.have(6)? {
                    return Err(self.eof_here());
                }
                let hex = &self.buf[self.pos + 2..self.pos + 6];
                if let Some(k) = hex.iter().position(|c| !c.is_ascii_hexdigit()) {
                    self.pos += 2 + k;
                    return Err(
                        self.error_here("invalid \\u escape (expected 4 hex digits)".into())
                    );
                }
                6
            }
            _ => {
                self.pos += 1;
                return Err(self.error_here("invalid escape".into()));
            }
        };
        self.pos += len;
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::formats::source::Progress;

    /// Skips the first value of `doc` fed `piece` bytes at a time (then finds what follows
    /// it), or the error; serde_json's verdict on the same value is the reference.
    fn skip(doc: &[u8], piece: usize) -> Result<u64, String> {
        struct Pieces<'a>(&'a [u8], usize);
        impl Read for Pieces<'_> {
            fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
                let k = self.0.len().min(self.1).min(out.len());
                out[..k].copy_from_slice(&self.0[..k]);
                self.0 = &self.0[k..];
                Ok(k)
            }
        }
        let mut feed: Feed<_> = Feed::new(Pieces(doc, piece), Progress::new()).strict();
        feed.skip_value().map_err(|e| format!("{e:?}"))?;
        feed.expect(b',', ",").map_err(|e| format!("{e:?}"))?;
        let after = feed.offset();
        assert_eq!(
            feed.peek().map_err(|e| format!("{e:?}"))?,
            Some(b'7'),
            "what follows"
        );
        Ok(after)
    }

    fn serde_accepts(value: &[u8]) -> bool {
        serde_json::from_slice::<IgnoredAny>(value).is_ok()
    }

    #[test]
    fn skips_what_serde_skips_and_refuses_what_it_refuses() {
        let deep = format!("{}1{}", "[{\"a\":".repeat(200), "}]".repeat(200));
        let long = format!(
            "\"{}\\\"{}\\u00e9\"",
            "a".repeat(100_000),
            "b".repeat(70_000)
        );
        let cases: Vec<Vec<u8>> = [
            "1",
            "-2.5e3",
            "true",
            "null",
            "\"\"",
            "\"a\\\\\\\"b\\/\\n\\u12aF\"",
            "[]",
            "{}",
            "[1, [2, {\"a\": [3, \"x\"]}], {}]",
            "{\"a\": 1, \"b\": {\"c\": [], \"d\": \"]}\"}}",
            " [ 1 , 2 ] ",
            deep.as_str(),
            long.as_str(),
            // Refused:
            "\"a\u{1}b\"",
            "\"\\x\"",
            "\"\\u12g4\"",
            "[1 2]",
            "{\"a\" 1}",
            "{1: 2}",
            "[1,]",
            "{\"a\": 1,}",
            "]",
        ]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
        for value in &cases {
            let mut doc = value.clone();
            doc.extend_from_slice(b", 7");
            let want = serde_accepts(value);
            for piece in [1, 2, 3, 5, 64, doc.len()] {
                let got = skip(&doc, piece);
                assert_eq!(
                    got.is_ok(),
                    want,
                    "{} (pieces of {piece}): {got:?}",
                    String::from_utf8_lossy(&value[..value.len().min(60)])
                );
                if let Ok(after) = got {
                    assert_eq!(after, value.len() as u64 + 1, "stops right after the value");
                }
            }
        }
    }

    #[test]
    fn nesting_past_the_limit_is_refused_without_holding_it() {
        let doc = format!("{}, 7", "[".repeat(MAX_DEPTH + 1));
        let mut feed: Feed<_> = Feed::new(doc.as_bytes(), Progress::new());
        match feed.skip_value() {
            Err(FeedError::Json { offset, msg, .. }) => {
                assert_eq!(offset, MAX_DEPTH as u64);
                assert!(msg.contains("nested deeper"), "{msg}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_value_cut_short_is_an_end_of_input() {
        for doc in ["\"abc", "[1, 2", "{\"a\": ", "\"ab\\", "\"\\u12"] {
            let mut feed: Feed<_> = Feed::new(doc.as_bytes(), Progress::new());
            assert!(
                matches!(feed.skip_value(), Err(FeedError::Eof { .. })),
                "{doc}"
            );
        }
    }
}
