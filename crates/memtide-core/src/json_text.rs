//! JSON strings safe to print: the characters a terminal would act on or that disguise text
//! — DEL and the C1 controls, Unicode's format characters (General_Category `Cf`: bidi
//! overrides and isolates, zero-width spaces and joiners, tag characters, the byte-order
//! mark) and the line and paragraph separators (`Zl`, `Zp`) — are written as `\uXXXX`
//! escapes (surrogate pairs above U+FFFF). serde_json already escapes C0. The value a JSON
//! parser reads back is the same text.

use std::io;

/// Unicode's format characters (`Cf`) and the line and paragraph separators (`Zl`, `Zp`), as
/// inclusive ranges (Unicode 15).
const FORMAT_OR_SEPARATOR: &[(u32, u32)] = &[
    (0xAD, 0xAD),
    (0x600, 0x605),
    (0x61C, 0x61C),
    (0x6DD, 0x6DD),
    (0x70F, 0x70F),
    (0x890, 0x891),
    (0x8E2, 0x8E2),
    (0x180E, 0x180E),
    (0x200B, 0x200F),
    (0x2028, 0x202E),
    (0x2060, 0x2064),
    (0x2066, 0x206F),
    (0xFEFF, 0xFEFF),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x1343F),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
];

/// Whether `c` is a format character or a line/paragraph separator.
pub fn is_format_or_separator(c: char) -> bool {
    let v = u32::from(c);
    v >= 0xAD
        && FORMAT_OR_SEPARATOR
            .binary_search_by(|&(lo, hi)| {
                if hi < v {
                    std::cmp::Ordering::Less
                } else if lo > v {
                    std::cmp::Ordering::Greater
                } else {
                    std::cmp::Ordering::Equal
                }
            })
            .is_ok()
}

/// Whether `c` is escaped in JSON strings beyond what serde_json escapes (it escapes C0).
pub fn is_escaped_in_json(c: char) -> bool {
    ('\u{7f}'..='\u{9f}').contains(&c) || is_format_or_separator(c)
}

/// A `serde_json` formatter that writes [`is_escaped_in_json`] characters as `\uXXXX`;
/// everything else as the formatter it wraps (compact or pretty) writes it.
#[derive(Clone, Debug, Default)]
pub(crate) struct EscapingFormatter<F>(pub F);

impl<F: serde_json::ser::Formatter> serde_json::ser::Formatter for EscapingFormatter<F> {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut rest = fragment;
        while let Some((i, c)) = rest.char_indices().find(|&(_, c)| is_escaped_in_json(c)) {
            self.0.write_string_fragment(w, &rest[..i])?;
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                write!(w, "\\u{u:04x}")?;
            }
            rest = &rest[i + c.len_utf8()..];
        }
        self.0.write_string_fragment(w, rest)
    }
    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        e: serde_json::ser::CharEscape,
    ) -> io::Result<()> {
        self.0.write_char_escape(w, e)
    }
    fn begin_string<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_string(w)
    }
    fn end_string<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_string(w)
    }
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn end_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_key(w)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_sorted_and_matches_known_members() {
        assert!(FORMAT_OR_SEPARATOR
            .windows(2)
            .all(|w| w[0].0 <= w[0].1 && w[0].1 < w[1].0));
        for c in [
            '\u{ad}',
            '\u{61c}',
            '\u{200d}',
            '\u{2066}',
            '\u{e007f}',
            '\u{2028}',
        ] {
            assert!(is_format_or_separator(c), "{:x}", u32::from(c));
        }
        for c in [
            'a',
            ' ',
            '\u{ac}',
            '\u{ae}',
            '\u{2030}',
            '\u{fe0f}',
            '\u{e0080}',
        ] {
            assert!(!is_format_or_separator(c), "{:x}", u32::from(c));
        }
    }

    #[test]
    fn escapes_del_c1_and_format_characters_and_reads_back() {
        let s = "a\u{7f}b\u{85}c\u{202e}d\u{e0041}e\u{2028}\n\"";
        let mut out = Vec::new();
        let f = EscapingFormatter(serde_json::ser::CompactFormatter);
        serde::Serialize::serialize(&s, &mut serde_json::Serializer::with_formatter(&mut out, f))
            .expect("json");
        let text = String::from_utf8(out).expect("utf-8");
        assert_eq!(text, r#""a\u007fb\u0085c\u202ed\udb40\udc41e\u2028\n\"""#);
        let back: String = serde_json::from_str(&text).expect("parse");
        assert_eq!(back, s);
    }
}
