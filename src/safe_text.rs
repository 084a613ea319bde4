//! Terminal-safe text: names, frames, marks and paths come from untrusted files, so every
//! control character in text output (C0 but newline and tab, DEL, C1) is shown escaped
//! (`\x1b`, `\u{9b}`) instead of reaching the terminal, where it could set the title, write
//! the clipboard (OSC 52) or clear the screen. JSON output is exact and does not pass here.

use std::borrow::Cow;

/// Whether `c` would be interpreted by a terminal rather than shown.
fn is_terminal_control(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c)
}

/// `s` with every terminal control character escaped; borrowed when there is none.
pub fn terminal_safe(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_terminal_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_terminal_control(c) {
            let v = u32::from(c);
            if v < 0x80 {
                out.push_str(&format!("\\x{v:02x}"));
            } else {
                out.push_str(&format!("\\u{{{v:x}}}"));
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::terminal_safe;

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
}
