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

use memtide_core::json_text::is_format_or_separator;

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

/// Appends one line of a text report to `o`: what `line` formats, with any newline inside it
/// (only a field from the file can hold one) escaped as `\n`, then the line's end.
pub fn push_line(o: &mut String, line: std::fmt::Arguments<'_>) {
    let start = o.len();
    let _ = std::fmt::Write::write_fmt(o, line);
    if o[start..].contains('\n') {
        let text = o.split_off(start).replace('\n', "\\n");
        o.push_str(&text);
    }
    o.push('\n');
}

/// What a text report is written into (a `String`, owned or borrowed: method syntax takes
/// either).
pub trait ReportText {
    fn report_text(&mut self) -> &mut String;
}

impl ReportText for String {
    fn report_text(&mut self) -> &mut String {
        self
    }
}

/// `writeln!(o, …)` for text reports: one line whatever the fields hold ([`push_line`]).
#[macro_export]
macro_rules! report_line {
    ($o:expr, $($arg:tt)*) => {
        {
            use $crate::safe_text::ReportText as _;
            $crate::safe_text::push_line($o.report_text(), format_args!($($arg)*))
        }
    };
}

/// `v` as pretty-printed JSON whose strings also escape DEL, C1 controls, format characters
/// and line separators (`\u007f`, `\u202e`, `\udb40\udc41`: the same value, safe to print),
/// each at most `memtide_core::clip::TEXT_CAP` bytes as every JSON report writes them.
pub fn json_pretty<T: Serialize + ?Sized>(v: &T) -> serde_json::Result<String> {
    let mut out = Vec::with_capacity(256);
    memtide_core::clip::to_json_writer(&mut out, v, true)?;
    // The serializer writes UTF-8 only, and every escape is ASCII.
    String::from_utf8(out).map_err(|e| serde::ser::Error::custom(e.to_string()))
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
        assert!(!text.chars().any(
            |c| memtide_core::json_text::is_escaped_in_json(c) || (c.is_control() && c != '\n')
        ));
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
