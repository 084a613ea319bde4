//! Long texts shortened for one-line fields: every text the reports and the explorer show on
//! one line (a frame, a name, a label, a mark, an action) holds at most `TEXT_CAP` bytes.
//!
//! A longer text keeps its head and ends in `… (N bytes)`, N its full length in bytes
//! (`nnnn…nnn… (1,048,576 bytes)`); the whole stays within the cap, so shortening twice
//! changes nothing. A frame (`file:line name`) shortens its file and its name each, so its
//! line number stays readable (`joined`). The analyses shorten what they copy out of a
//! trace, so a 1 MiB function name shared by a thousand frames costs a thousand short texts,
//! never a thousand copies; the JSON writer shortens every string it writes
//! (`ClipFormatter`), the one place `summary --json` goes through.

use crate::digits::grouped;
use std::borrow::Cow;
use std::io;

/// The most bytes a one-line text field holds (`… (N bytes)` included).
pub const TEXT_CAP: usize = 1024;

/// `s` within `TEXT_CAP` bytes.
pub fn clip(s: &str) -> Cow<'_, str> {
    clip_to(s, TEXT_CAP)
}

/// `s` within `cap` bytes: unchanged when it fits, else its head and `… (N bytes)`.
pub(crate) fn clip_to(s: &str, cap: usize) -> Cow<'_, str> {
    if s.len() <= cap {
        return Cow::Borrowed(s);
    }
    let suffix = suffix(s.len());
    let cut = floor_char_boundary(s, cap.saturating_sub(suffix.len()));
    Cow::Owned(format!("{}{suffix}", &s[..cut]))
}

/// What replaces the tail of a text of `len` bytes.
fn suffix(len: usize) -> String {
    format!("… ({} bytes)", grouped(len as u64))
}

/// The largest char boundary of `s` at or below `i`.
pub(crate) fn floor_char_boundary(s: &str, i: usize) -> usize {
    (0..=i.min(s.len()))
        .rev()
        .find(|&k| s.is_char_boundary(k))
        .unwrap_or(0)
}

/// `head + mid + tail` within [`TEXT_CAP`] bytes (`mid` is short: `:12 `), shortening the
/// longer of `head` and `tail` first: a frame's file and name around its line.
pub(crate) fn joined(head: &str, mid: &str, tail: &str) -> String {
    let room = TEXT_CAP.saturating_sub(mid.len());
    if head.len() + tail.len() <= room {
        return format!("{head}{mid}{tail}");
    }
    let half = room / 2;
    let (h, t) = if head.len() <= half {
        (head.len(), room - head.len())
    } else if tail.len() <= room - half {
        (room - tail.len(), tail.len())
    } else {
        (half, room - half)
    };
    format!("{}{mid}{}", clip_to(head, h), clip_to(tail, t))
}

/// A `serde_json` formatter that writes every string (keys too) as [`clip`] shortens it:
/// the text up to where any cut could fall goes out as it comes, the next few dozen bytes
/// are held until the string ends (then written, or cut and followed by `… (N bytes)`), and
/// the rest is only counted. Wraps the compact or the pretty formatter.
pub(crate) struct ClipFormatter<F> {
    inner: F,
    /// Bytes of the current string's text so far.
    seen: usize,
    /// Bytes of its text written as they came (at most [`SAFE`]).
    written: usize,
    /// Its text past [`SAFE`], up to [`TEXT_CAP`], as it would be written.
    held: Vec<Held>,
}

/// A piece of a string's text held back: plain text, or one escaped char (one byte of text).
enum Held {
    Text(String),
    Escape(Vec<u8>),
}

/// Bytes of a string's text that stay whatever its length: the cap less the longest suffix.
const SAFE: usize = TEXT_CAP - "… (18,446,744,073,709,551,615 bytes)".len();

impl<F> ClipFormatter<F> {
    pub fn new(inner: F) -> ClipFormatter<F> {
        ClipFormatter {
            inner,
            seen: 0,
            written: 0,
            held: Vec::new(),
        }
    }
}

impl<F: serde_json::ser::Formatter> ClipFormatter<F> {
    /// Writes the held text that [`clip`] keeps of a string of `self.seen` bytes, then the
    /// suffix when it was cut.
    fn flush_held<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        let held = std::mem::take(&mut self.held);
        if self.seen <= TEXT_CAP {
            for h in &held {
                match h {
                    Held::Text(t) => self.inner.write_string_fragment(w, t)?,
                    Held::Escape(e) => w.write_all(e)?,
                }
            }
            return Ok(());
        }
        let sfx = suffix(self.seen);
        let mut room = TEXT_CAP
            .saturating_sub(sfx.len())
            .saturating_sub(self.written);
        for h in &held {
            match h {
                Held::Text(t) => {
                    let cut = floor_char_boundary(t, room);
                    self.inner.write_string_fragment(w, &t[..cut])?;
                    room -= cut;
                    if cut < t.len() {
                        break;
                    }
                }
                Held::Escape(e) if room > 0 => {
                    w.write_all(e)?;
                    room -= 1;
                }
                Held::Escape(_) => break,
            }
        }
        self.inner.write_string_fragment(w, &sfx)
    }
}

impl<F: serde_json::ser::Formatter> serde_json::ser::Formatter for ClipFormatter<F> {
    fn begin_string<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.seen = 0;
        self.written = 0;
        self.held.clear();
        self.inner.begin_string(w)
    }

    fn end_string<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.flush_held(w)?;
        self.inner.end_string(w)
    }

    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        let start = self.seen;
        self.seen += fragment.len();
        let mut rest = fragment;
        if self.held.is_empty() && start < SAFE {
            let cut = floor_char_boundary(fragment, SAFE - start);
            self.inner.write_string_fragment(w, &fragment[..cut])?;
            self.written += cut;
            rest = &fragment[cut..];
        }
        let at = self.seen - rest.len();
        if !rest.is_empty() && at < TEXT_CAP {
            let keep = floor_char_boundary(rest, TEXT_CAP - at);
            self.held.push(Held::Text(rest[..keep].to_string()));
        }
        Ok(())
    }

    fn write_char_escape<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        char_escape: serde_json::ser::CharEscape,
    ) -> io::Result<()> {
        let at = self.seen;
        self.seen += 1;
        if self.held.is_empty() && at < SAFE {
            self.written += 1;
            return self.inner.write_char_escape(w, char_escape);
        }
        if at < TEXT_CAP {
            let mut buf: Vec<u8> = Vec::with_capacity(6);
            self.inner.write_char_escape(&mut buf, char_escape)?;
            self.held.push(Held::Escape(buf));
        }
        Ok(())
    }

    // Everything else as the wrapped formatter writes it.
    fn write_null<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.write_null(w)
    }
    fn write_bool<W: ?Sized + io::Write>(&mut self, w: &mut W, v: bool) -> io::Result<()> {
        self.inner.write_bool(w, v)
    }
    fn write_i64<W: ?Sized + io::Write>(&mut self, w: &mut W, v: i64) -> io::Result<()> {
        self.inner.write_i64(w, v)
    }
    fn write_u64<W: ?Sized + io::Write>(&mut self, w: &mut W, v: u64) -> io::Result<()> {
        self.inner.write_u64(w, v)
    }
    fn write_f64<W: ?Sized + io::Write>(&mut self, w: &mut W, v: f64) -> io::Result<()> {
        self.inner.write_f64(w, v)
    }
    fn write_number_str<W: ?Sized + io::Write>(&mut self, w: &mut W, v: &str) -> io::Result<()> {
        self.inner.write_number_str(w, v)
    }
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.begin_array(w)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.end_array(w)
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.inner.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.end_array_value(w)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.begin_object(w)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.end_object(w)
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.inner.begin_object_key(w, first)
    }
    fn end_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.end_object_key(w)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.inner.end_object_value(w)
    }
}

/// `v` as JSON text, every string shortened as [`clip`] does (`pretty`: indented as
/// `serde_json::to_string_pretty`).
pub fn to_json_writer<W: io::Write, T: serde::Serialize + ?Sized>(
    w: W,
    v: &T,
    pretty: bool,
) -> serde_json::Result<()> {
    use crate::json_text::EscapingFormatter;
    if pretty {
        let f = ClipFormatter::new(EscapingFormatter(serde_json::ser::PrettyFormatter::new()));
        v.serialize(&mut serde_json::Serializer::with_formatter(w, f))
    } else {
        let f = ClipFormatter::new(EscapingFormatter(serde_json::ser::CompactFormatter));
        v.serialize(&mut serde_json::Serializer::with_formatter(w, f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_text_keeps_its_head_and_says_its_length() {
        let s = "n".repeat(1 << 20);
        let c = clip(&s);
        assert!(c.len() <= TEXT_CAP, "{}", c.len());
        assert!(
            c.ends_with("n… (1,048,576 bytes)"),
            "{}",
            &c[c.len() - 30..]
        );
        assert_eq!(clip(&c), c, "shortening twice changes nothing");
        assert_eq!(clip("short"), "short");
        let exact = "x".repeat(TEXT_CAP);
        assert!(matches!(clip(&exact), Cow::Borrowed(_)));
    }

    #[test]
    fn a_cut_never_splits_a_char() {
        let s = "é".repeat(TEXT_CAP);
        let c = clip(&s);
        assert!(c.len() <= TEXT_CAP);
        assert!(
            c.starts_with("éé") && c.ends_with("é… (2,048 bytes)"),
            "{c}"
        );
    }

    #[test]
    fn a_frame_keeps_its_line_and_both_ends_short() {
        let long = "f".repeat(5000);
        let j = joined(&long, ":12 ", "forward");
        assert!(j.len() <= TEXT_CAP);
        assert!(j.ends_with("… (5,000 bytes):12 forward"), "{j}");
        let j = joined("train.py", ":3 ", &long);
        assert!(j.starts_with("train.py:3 ff") && j.len() <= TEXT_CAP, "{j}");
        let j = joined(&long, ":3 ", &long);
        assert!(j.len() <= TEXT_CAP && j.contains(" bytes):3 f"), "{j}");
        assert_eq!(joined("a.py", ":1 ", "f"), "a.py:1 f");
    }

    fn written(v: &serde_json::Value, pretty: bool) -> String {
        let mut out = Vec::new();
        to_json_writer(&mut out, v, pretty).expect("writes");
        String::from_utf8(out).expect("utf-8")
    }

    /// Every string the formatter writes is the JSON form of the string [`clip`] gives.
    fn formatter_agrees(s: &str) {
        let v = serde_json::json!({ s: [s, 1] });
        let c = clip(s).into_owned();
        let want = serde_json::json!({ c.clone(): [c, 1] });
        assert_eq!(written(&v, false), want.to_string());
        assert_eq!(
            written(&v, true),
            serde_json::to_string_pretty(&want).expect("json")
        );
    }

    #[test]
    fn the_formatter_writes_what_clip_gives() {
        formatter_agrees("");
        formatter_agrees("plain");
        formatter_agrees(&"a".repeat(TEXT_CAP));
        formatter_agrees(&"a".repeat(TEXT_CAP + 1));
        formatter_agrees(&"\"\n".repeat(TEXT_CAP));
        formatter_agrees(&"é".repeat(600));
        formatter_agrees(&format!("{}\"{}", "a".repeat(990), "b".repeat(100)));
    }

    proptest::proptest! {
        #[test]
        fn the_formatter_agrees_on_any_text(
            parts in proptest::collection::vec(
                proptest::sample::select(vec!["a", "é", "\"", "\\", "\n", "\u{1}", "日本", "xyz"]),
                0..1400,
            ),
            pad in 0usize..1100,
        ) {
            let s = format!("{}{}", "p".repeat(pad), parts.concat());
            formatter_agrees(&s);
        }
    }
}
