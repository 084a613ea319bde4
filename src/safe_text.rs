//! Terminal-safe text: names, frames, marks and paths come from untrusted files, so every
//! character that a terminal would act on or that could disguise text is shown escaped
//! (`\x1b`, `\u{202e}`) instead of reaching the terminal:
//!
//! - control characters (C0 but newline and tab, DEL, C1), which could set the title, write
//!   the clipboard (OSC 52) or clear the screen;
//! - Unicode format characters (General_Category `Cf`: bidi overrides and isolates, zero-width
//!   spaces and joiners, tag characters, the byte-order mark, …) and the line and paragraph
//!   separators (`Zl`, `Zp`: U+2028, U+2029), which reorder, hide or break what is shown.
//!
//! [`terminal_safe`] is for multi-line output (a report: its newlines and tabs are the
//! report's own); [`one_line`] is for one field inside a line (a name, a frame, a file name):
//! there a newline or a tab is escaped too, so a name can never forge a line of output.
//! [`json_pretty`] writes JSON whose strings escape the same characters as `\uXXXX`, so the
//! JSON stays exact (a parser reads back the same text) and is safe to print.

use serde::Serialize;
use std::borrow::Cow;
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
fn is_format_or_separator(c: char) -> bool {
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

/// Whether `c` would be interpreted by a terminal, or disguise text, rather than be shown.
fn is_unsafe_in_text(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || is_format_or_separator(c)
}

/// Whether `c` must be escaped inside a one-line field.
fn is_unsafe_in_field(c: char) -> bool {
    c.is_control() || is_format_or_separator(c)
}

/// `s` with every character `unsafe_char` picks escaped; borrowed when there is none.
fn escaped(s: &str, unsafe_char: fn(char) -> bool) -> Cow<'_, str> {
    // Printable ASCII is always safe: most text is only that.
    if s.bytes().all(|b| (0x20..0x7f).contains(&b)) || !s.chars().any(unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !unsafe_char(c) {
            out.push(c);
            continue;
        }
        let v = u32::from(c);
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            _ if v < 0x80 => out.push_str(&format!("\\x{v:02x}")),
            _ => out.push_str(&format!("\\u{{{v:x}}}")),
        }
    }
    Cow::Owned(out)
}

/// `s` (multi-line text) with every control, format and separator character escaped but its
/// newlines and tabs; borrowed when there is none.
pub fn terminal_safe(s: &str) -> Cow<'_, str> {
    escaped(s, is_unsafe_in_text)
}

/// `s` as one field of a line: [`terminal_safe`], and newlines and tabs escaped too.
pub fn one_line(s: &str) -> Cow<'_, str> {
    escaped(s, is_unsafe_in_field)
}

/// `v` as pretty-printed JSON whose strings also escape DEL, C1 controls, format characters
/// and line separators (`\u007f`, `\u202e`, `\udb40\udc41`): the same value, safe to print.
pub fn json_pretty<T: Serialize + ?Sized>(v: &T) -> serde_json::Result<String> {
    let mut out = Vec::with_capacity(256);
    json_pretty_to(&mut out, v)?;
    // The serializer writes UTF-8 only, and every escape is ASCII.
    String::from_utf8(out).map_err(|e| serde::ser::Error::custom(e.to_string()))
}

/// [`json_pretty`] written to `w`.
pub fn json_pretty_to<W: io::Write, T: Serialize + ?Sized>(w: W, v: &T) -> serde_json::Result<()> {
    let mut ser = serde_json::Serializer::with_formatter(w, SafeFormatter::default());
    v.serialize(&mut ser)
}

/// serde_json's pretty formatter, with string fragments escaped as [`json_pretty`] says.
#[derive(Default)]
struct SafeFormatter(serde_json::ser::PrettyFormatter<'static>);

/// Whether `c` is escaped in JSON strings beyond what serde_json escapes (it escapes C0).
fn is_escaped_in_json(c: char) -> bool {
    ('\u{7f}'..='\u{9f}').contains(&c) || is_format_or_separator(c)
}

impl serde_json::ser::Formatter for SafeFormatter {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let mut rest = fragment;
        while let Some((i, c)) = rest.char_indices().find(|&(_, c)| is_escaped_in_json(c)) {
            w.write_all(&rest.as_bytes()[..i])?;
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                write!(w, "\\u{u:04x}")?;
            }
            rest = &rest[i + c.len_utf8()..];
        }
        w.write_all(rest.as_bytes())
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
    fn escapes_c0_del_and_c1_but_keeps_text() {
        assert_eq!(terminal_safe("plain · 1 GiB\tok\n"), "plain · 1 GiB\tok\n");
        assert_eq!(
            terminal_safe("a\x1b]52;c;aGk=\x07b\x7f\u{9b}2J\r"),
            "a\\x1b]52;c;aGk=\\x07b\\x7f\\u{9b}2J\\x0d"
        );
        let out = terminal_safe("\x1b[2J\u{85}");
        assert!(!out.chars().any(|c| c.is_control() && c != '\n'));
    }

    #[test]
    fn escapes_format_characters_and_separators() {
        // Bidi override, zero-width space, tag characters, line and paragraph separators.
        let s = "evil\u{202e}txt.exe\u{200b}·\u{e0041}\u{2028}x\u{2029}\u{feff}";
        assert_eq!(
            terminal_safe(s),
            "evil\\u{202e}txt.exe\\u{200b}·\\u{e0041}\\u{2028}x\\u{2029}\\u{feff}"
        );
        // Letters, marks and symbols of other scripts pass.
        let text = "Größe 日本語 ▼ é µs";
        assert_eq!(terminal_safe(text), text);
        assert!(matches!(terminal_safe(text), Cow::Borrowed(_)));
    }

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
    fn one_line_escapes_newlines_and_tabs() {
        assert_eq!(one_line("rank0.json\nok: all"), "rank0.json\\nok: all");
        assert_eq!(one_line("a\tb\r"), "a\\tb\\x0d");
        assert_eq!(one_line("train.py:12 main"), "train.py:12 main");
    }

    #[test]
    fn json_escapes_del_c1_and_format_characters_exactly() {
        let s = "a\u{7f}b\u{85}c\u{202e}d\u{e0041}e\u{2028}\n\"";
        let text = json_pretty(&serde_json::json!({ "name": s })).expect("json");
        assert!(
            text.contains(r#"a\u007fb\u0085c\u202ed\udb40\udc41e\u2028\n\""#),
            "{text}"
        );
        assert!(!text
            .chars()
            .any(|c| is_escaped_in_json(c) || (c.is_control() && c != '\n')));
        // The same value reads back, and the layout is serde_json's pretty one.
        let back: serde_json::Value = serde_json::from_str(&text).expect("parse");
        assert_eq!(back["name"], s);
        let plain = serde_json::json!({"a": [1, {"b": "x"}], "c": {}});
        assert_eq!(
            json_pretty(&plain).expect("json"),
            serde_json::to_string_pretty(&plain).expect("json")
        );
    }
}
