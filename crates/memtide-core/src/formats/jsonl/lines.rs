//! The reading half of the JSONL decoder: bytes framed into lines, each line decoded into an
//! [`Item`] (an event with its strings interned, the header, or why the line is bad). It
//! needs only the string interner, never the trace, so it can run on its own thread ahead of
//! the half that applies the items (`apply`, in `mod.rs`'s `Applier`).

use super::apply::Ev;
use super::line::{parse_line, show_num, LineText, Num, Op, RawLine};
use crate::formats::bytes_memo::BytesMemo;
use crate::formats::error::FormatError;
use crate::trace::{Bytes, Category, Clock, Interner, MarkKind, StackId, StrId};

/// The whole blank lines (ASCII whitespace only, as [`LineText::trimmed`] has it) at the
/// start of `b`: the bytes they take, through their last newline, and how many there are.
/// Whitespace is tested 32 bytes at a time (the compiler vectorises the fixed-size folds).
fn blank_lines(b: &[u8]) -> (usize, u64) {
    if !b.first().is_some_and(u8::is_ascii_whitespace) {
        return (0, 0);
    }
    let ws = |x: u8| (x == b' ') | (x == b'\n') | (x == b'\r') | (x == b'\t') | (x == b'\x0c');
    let mut i = 0;
    let mut lines = 0u64;
    for c in b.chunks_exact(32) {
        if !c.iter().fold(true, |all, &x| all & ws(x)) {
            break;
        }
        lines += c.iter().fold(0u32, |n, &x| n + u32::from(x == b'\n')) as u64;
        i += 32;
    }
    while i < b.len() && ws(b[i]) {
        lines += u64::from(b[i] == b'\n');
        i += 1;
    }
    match memchr::memrchr(b'\n', &b[..i]) {
        Some(last) => (last + 1, lines),
        None => (0, 0),
    }
}

/// What one line means, for the half that applies it, in file order.
#[derive(Debug)]
pub(super) enum Item {
    Ev(Ev),
    Header(Header),
    /// A line that could not be decoded, and whether the header had been read by then (a
    /// bad line before it is never skipped).
    Bad {
        line: u64,
        reason: String,
        header_seen: bool,
    },
    /// A warning for the trace (a last line still being written).
    Warn(String),
    /// Whether the file holds explicit `external` spans, from the [`ExternalProbe`], just
    /// before the first `sample` event (the first that needs to know).
    ExternalSpans(Result<bool, FormatError>),
}

/// Answers whether the whole file holds explicit `external` spans (then `sample` lines do
/// not stand for external memory): a scan of the file, run only when a `sample` line comes.
pub struct ExternalProbe(pub Box<dyn FnMut() -> Result<bool, FormatError> + Send>);

impl std::fmt::Debug for ExternalProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExternalProbe")
    }
}

/// The header line's fields for the trace: those read before a bad one, when one is bad
/// (a bad header field is a bad line, skipped under `--lenient`; what came before it stays).
#[derive(Debug, Default)]
pub(super) struct Header {
    device: Option<String>,
    clock: Option<Clock>,
    capacity: Option<Option<Bytes>>,
    /// `source`, then the other keys in file order.
    meta: Vec<(String, String)>,
}

impl Header {
    pub(super) fn apply_to(self, trace: &mut crate::trace::Trace) {
        if let Some(d) = self.device {
            trace.device = d;
        }
        if let Some(c) = self.clock {
            trace.clock = c;
        }
        if let Some(c) = self.capacity {
            trace.capacity_source = c.map(|_| "the JSONL header's capacity".to_string());
            trace.capacity = c;
        }
        trace.meta.extend(self.meta);
    }
}

/// The names the applying half gives memory it makes up: interned here, in line order, so
/// that it never touches the interner.
const SAMPLE_EXTERNAL_NAME: &str = "external (device used − reserved)";
const OOM_NAME: &str = "OOM";

/// Line framing and decoding state.
#[derive(Debug)]
pub(super) struct Lines {
    /// Bytes of a line still waiting for its newline.
    partial: Vec<u8>,
    /// Lines consumed so far (1-based number of the last complete line).
    line: u64,
    header_seen: bool,
    clock: Clock,
    /// Event lines decoded (the source index of the next one).
    next_src: u64,
    last_t: Option<i64>,
    /// Scratch for a stack's frames.
    frames: Vec<StrId>,
    /// Stacks by the bytes of their `stack` arrays (the interner only grows, so they hold).
    stacks: BytesMemo,
    /// Run once, at the first `sample` event.
    pub(super) probe: Option<ExternalProbe>,
}

/// Where decoded items go; an error stops the reading (decoding never fails: a bad line is
/// an item).
pub(super) trait Sink {
    type Error;
    fn take(&mut self, item: Item) -> Result<(), Self::Error>;
}

impl Lines {
    pub(super) fn new() -> Self {
        Lines {
            partial: Vec::new(),
            line: 0,
            header_seen: false,
            clock: Clock::Us,
            next_src: 0,
            last_t: None,
            frames: Vec::new(),
            stacks: BytesMemo::default(),
            probe: None,
        }
    }

    pub(super) fn header_seen(&self) -> bool {
        self.header_seen
    }

    /// Decodes every complete line in `bytes` (appended to any earlier torn line).
    pub(super) fn feed<S: Sink>(
        &mut self,
        strings: &mut Interner,
        bytes: &[u8],
        sink: &mut S,
    ) -> Result<(), S::Error> {
        let mut rest = bytes;
        if !self.partial.is_empty() {
            match memchr::memchr(b'\n', rest) {
                None => {
                    self.partial.extend_from_slice(rest);
                    return Ok(());
                }
                Some(nl) => {
                    let mut line = std::mem::take(&mut self.partial);
                    line.extend_from_slice(&rest[..nl]);
                    self.line_complete(strings, LineText::unchecked(&line), sink)?;
                    line.clear();
                    self.partial = line;
                    rest = &rest[nl + 1..];
                }
            }
        }
        // The whole lines checked as UTF-8 at once (a torn character can only follow the
        // last newline); when some line is not, each line is checked on its own.
        let whole = memchr::memrchr(b'\n', rest).unwrap_or(0);
        let text = std::str::from_utf8(&rest[..whole]).ok();
        let mut start = 0;
        loop {
            // Runs of blank lines are counted, not framed one by one (a file padded with a
            // gigabyte of newlines reads at memory speed).
            let (skip, blank) = blank_lines(&rest[start..]);
            self.line += blank;
            start += skip;
            let Some(k) = memchr::memchr(b'\n', &rest[start..]) else {
                break;
            };
            let nl = start + k;
            let line = LineText {
                bytes: &rest[start..nl],
                text: text.and_then(|t| t.get(start..nl)),
            };
            self.line_complete(strings, line, sink)?;
            start = nl + 1;
        }
        self.partial.extend_from_slice(&rest[start..]);
        Ok(())
    }

    /// Ends the input: a last line without a newline is decoded, or, when it is not yet a
    /// whole JSON object (a line still being written, not an error: docs/formats.md), left out
    /// with a warning.
    pub(super) fn finish<S: Sink>(
        &mut self,
        strings: &mut Interner,
        sink: &mut S,
    ) -> Result<(), S::Error> {
        if self.partial.is_empty() {
            return Ok(());
        }
        let line = std::mem::take(&mut self.partial);
        if self.header_seen && is_torn(&line) {
            self.line += 1;
            sink.take(Item::Warn(format!(
                "line {}: the last line has no newline and is not a whole JSON object yet (a line still being written): left out",
                self.line
            )))
        } else {
            self.line_complete(strings, LineText::unchecked(&line), sink)
        }
    }

    fn line_complete<S: Sink>(
        &mut self,
        strings: &mut Interner,
        raw: LineText<'_>,
        sink: &mut S,
    ) -> Result<(), S::Error> {
        self.line += 1;
        let trimmed = raw.trimmed();
        if trimmed.bytes.is_empty() || trimmed.bytes[0] == b'#' {
            return Ok(());
        }
        let mut header = None;
        let item = match self.decode(strings, trimmed, &mut header) {
            Ok(item) => item,
            Err(reason) => Some(Item::Bad {
                line: self.line,
                reason,
                header_seen: self.header_seen,
            }),
        };
        if let Some(h) = header {
            sink.take(Item::Header(h))?;
        }
        if let Some(Item::Ev(ev)) = &item {
            if ev.op == Op::Sample {
                if let Some(mut probe) = self.probe.take() {
                    sink.take(Item::ExternalSpans((probe.0)()))?;
                }
            }
        }
        match item {
            Some(item) => sink.take(item),
            None => Ok(()),
        }
    }

    /// An event line's event; None for the header line, whose fields go to `header` (those
    /// read before a bad one too).
    fn decode(
        &mut self,
        strings: &mut Interner,
        line: LineText<'_>,
        header: &mut Option<Header>,
    ) -> Result<Option<Item>, String> {
        if line.bytes.first() != Some(&b'{') {
            return Err(format!(
                "expected a JSON object starting with '{{', found {}",
                describe_start(line.bytes)
            ));
        }
        let mut l = RawLine::default();
        parse_line(line, strings, &mut self.frames, &mut self.stacks, &mut l)?;
        if !self.header_seen {
            return self
                .header(l, header.get_or_insert_with(Header::default))
                .map(|()| None);
        }
        if l.memtide.is_some() {
            return Err("a second header line (\"memtide\" key) after the first".into());
        }
        let t_raw = l.t.ok_or("missing required field \"t\"")?;
        let t = self.to_ns(t_raw)?;
        let op_s = l.op.as_deref().ok_or("missing required field \"op\"")?;
        let op = Op::parse(op_s).ok_or_else(|| {
            format!("unknown op {op_s:?}: expected one of alloc, view, release, free, reserve, unreserve, external, sample, mark, oom")
        })?;
        if let Some(prev) = self.last_t {
            if t < prev {
                return Err(format!(
                    "t goes backwards ({} after {}): t must be non-decreasing",
                    show_num(t_raw),
                    self.show_t(prev)
                ));
            }
        }
        let need_id = |n: Option<Num>, what: &str| -> Result<u64, String> {
            match n {
                Some(Num::U(v)) => Ok(v),
                Some(Num::I(v)) => Err(format!(
                    "\"{what}\" must be a non-negative integer, got {v}"
                )),
                Some(Num::F(v)) if v.fract() == 0.0 && v >= 18_446_744_073_709_551_616.0 => Err(format!(
                    "\"{what}\" is too large: at most 18446744073709551615 (64 bits), got about {v:e}"
                )),
                Some(Num::F(v)) => Err(format!(
                    "\"{what}\" must be a non-negative integer, got {v}"
                )),
                None => Err(format!("op {op_s:?} needs field \"{what}\"")),
            }
        };
        let mut ev = Ev {
            line: self.line,
            src: 0,
            t,
            op,
            id: 0,
            size: 0,
            of: 0,
            used: 0,
            free: None,
            cat: None,
            name: StrId(0),
            kind: MarkKind::Note,
            stack: StackId(0),
            extra: None,
            parts: None,
        };
        match op {
            Op::Alloc | Op::External | Op::Reserve => {
                ev.id = need_id(l.id, "id")?;
                ev.size = need_id(l.size, "size")?;
            }
            Op::View => {
                ev.id = need_id(l.id, "id")?;
                ev.of = need_id(l.of, "of")?;
            }
            Op::Release | Op::Free | Op::Unreserve => ev.id = need_id(l.id, "id")?,
            Op::Sample => ev.used = need_id(l.used, "used")?,
            Op::Mark => {
                if let Some(k) = l.kind.as_deref() {
                    ev.kind = MarkKind::parse(k).ok_or_else(|| {
                        format!("unknown mark kind {k:?}: expected step, phase, reset_peak or note")
                    })?;
                }
                if l.name.is_none() {
                    return Err("op \"mark\" needs field \"name\"".into());
                }
            }
            Op::Oom => {
                ev.size = need_id(l.size, "size")?;
                ev.free = match l.free {
                    None => None,
                    some => Some(need_id(some, "free")?),
                };
            }
        }
        if let Some(c) = l.cat.as_deref() {
            ev.cat = Some(Category::parse(c).ok_or_else(|| {
                format!("unknown cat {c:?}: expected param, grad, optimizer, buffer, activation, input, workspace, temp or external")
            })?);
        }
        if let Some(n) = l.name {
            ev.name = n;
        }
        match op {
            // The storage a sample stands for (when the file has no explicit external
            // spans) has a fixed name; an OOM without a name is called "OOM".
            Op::Sample => ev.name = strings.intern(SAMPLE_EXTERNAL_NAME),
            Op::Oom if ev.name == StrId(0) => ev.name = strings.intern(OOM_NAME),
            _ => {}
        }
        if let Some(st) = l.stack {
            ev.stack = st;
        }
        if op == Op::Sample {
            // Interned here: the applying half has no interner.
            let mut parts: Vec<(StrId, StrId, u64)> = sample_sources(&l.extra)?
                .into_iter()
                .map(|(k, b)| {
                    let name = strings.intern(&format!("external: {k} (recorder)"));
                    (strings.intern(&k), name, b)
                })
                .collect();
            parts.push((
                strings.intern(crate::trace::external::UNATTRIBUTED),
                strings.intern(SAMPLE_EXTERNAL_NAME),
                super::apply::SAMPLE_REST,
            ));
            ev.parts = Some(Box::new(super::apply::SampleParts(parts)));
        }
        if !l.extra.is_empty() && matches!(op, Op::Alloc | Op::External) {
            let mut s = String::from("{");
            for (i, (k, v)) in l.extra.iter().enumerate() {
                if i > 0 {
                    s.push(',');
                }
                s.push_str(&serde_json::to_string(&**k).unwrap_or_default());
                s.push(':');
                s.push_str(v.get());
            }
            s.push('}');
            ev.extra = Some(strings.intern(&s));
        }
        ev.src = self.next_src;
        self.next_src += 1;
        self.last_t = Some(t);
        Ok(Some(Item::Ev(ev)))
    }

    fn header(&mut self, l: RawLine<'_>, h: &mut Header) -> Result<(), String> {
        match l.memtide {
            Some(Num::U(1)) => {}
            Some(n) => {
                return Err(format!(
                    "unsupported memtide JSONL version {}: this memtide reads version 1",
                    show_num(n)
                ))
            }
            None => {
                return Err("expected the header line {\"memtide\":1,...} before any event".into())
            }
        }
        // From here on a bad field is a bad line to skip under --lenient (the file is a
        // memtide JSONL file), not a refusal of the file.
        self.header_seen = true;
        h.device = l.device.map(|d| d.into_owned());
        self.clock = match l.clock.as_deref() {
            None | Some("us") => Clock::Us,
            Some("ns") => Clock::Ns,
            Some("seq") => Clock::Seq,
            Some(o) => return Err(format!("unknown clock {o:?}: expected us, ns or seq")),
        };
        h.clock = Some(self.clock);
        h.capacity = Some(match l.capacity {
            Some(Num::U(c)) => Some(Bytes(c)),
            None => None,
            Some(n) => {
                return Err(format!(
                    "capacity must be a byte count, got {}",
                    show_num(n)
                ))
            }
        });
        if let Some(s) = l.source {
            h.meta.push(("source".into(), s.into_owned()));
        }
        for (k, v) in l.extra {
            // The parameter count divides the persistent bytes (bytes per parameter): a
            // count that is not a whole number of parameters is refused, not ignored.
            if k == "param_count" {
                let text = v.get().trim();
                if text != "null" && text.parse::<u64>().is_err() {
                    return Err(format!(
                        "param_count must be a whole number of parameters (or null), got {text}"
                    ));
                }
            }
            h.meta.push((k.into_owned(), v.get().to_string()));
        }
        Ok(())
    }

    fn to_ns(&self, n: Num) -> Result<i64, String> {
        let mult: f64 = match self.clock {
            Clock::Us => 1000.0,
            Clock::Ns | Clock::Seq => 1.0,
        };
        match n {
            Num::U(v) => i64::try_from(v)
                .ok()
                .and_then(|v| v.checked_mul(mult as i64))
                .ok_or_else(|| format!("t {v} is out of range")),
            Num::I(v) => Err(format!("t must be non-negative, got {v}")),
            Num::F(v) if v.is_finite() && v >= 0.0 && v * mult < 9.2e18 => {
                Ok((v * mult).round() as i64)
            }
            Num::F(v) => Err(format!("t must be a non-negative number, got {v}")),
        }
    }

    fn show_t(&self, ns: i64) -> String {
        match self.clock {
            Clock::Us => {
                if ns % 1000 == 0 {
                    (ns / 1000).to_string()
                } else {
                    format!("{}", ns as f64 / 1000.0)
                }
            }
            _ => ns.to_string(),
        }
    }
}

/// Whether a last line (no newline after it) is cut short: not one whole JSON value yet.
fn is_torn(raw: &[u8]) -> bool {
    let t = raw.trim_ascii();
    !t.is_empty() && t[0] != b'#' && serde_json::from_slice::<serde::de::IgnoredAny>(t).is_err()
}

fn describe_start(b: &[u8]) -> String {
    match b.first() {
        Some(c) if c.is_ascii_graphic() => format!("{:?}", *c as char),
        Some(c) => format!("byte 0x{c:02x}"),
        None => "end of line".into(),
    }
}

/// A `sample` line's `sources` (`{"nccl": 1048576}`: bytes of its external memory that a
/// recorder's source names), checked; empty when absent. `scope` (`process` or `device`)
/// and `host_pinned` (host bytes, never on the device) are informational.
fn sample_sources(
    extra: &[(std::borrow::Cow<'_, str>, &serde_json::value::RawValue)],
) -> Result<Vec<(String, u64)>, String> {
    let Some((_, raw)) = extra.iter().find(|(k, _)| k == "sources") else {
        return Ok(Vec::new());
    };
    let map: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(raw.get()).map_err(|_| {
            format!(
                "\"sources\" must be an object of source name -> bytes, got {}",
                raw.get()
            )
        })?;
    let mut out = Vec::with_capacity(map.len());
    for (k, v) in map {
        let Some(b) = v.as_u64() else {
            return Err(format!(
                "\"sources\".{k:?} must be a non-negative byte count, got {v}"
            ));
        };
        if k.is_empty() || k.len() > 64 {
            return Err(format!(
                "\"sources\" names must be 1 to 64 bytes long, got {k:?}"
            ));
        }
        out.push((k, b));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::formats::jsonl::{JsonlDecoder, JsonlOptions};
    use crate::trace::Trace;

    /// The trace and the result, the input fed in pieces of `piece` bytes. Pieces of one
    /// byte check every line as UTF-8 on its own (each is put together from the torn rest).
    fn read(bytes: &[u8], piece: usize, lenient: bool) -> String {
        let mut trace = Trace::new("cuda:0", "t.jsonl", "jsonl");
        let mut dec = JsonlDecoder::new(JsonlOptions {
            lenient,
            has_external_spans: Some(false),
        });
        let fed = bytes
            .chunks(piece)
            .try_for_each(|c| dec.feed(&mut trace, c));
        let finished = fed.and_then(|()| dec.finish(&mut trace));
        format!("{finished:?}\n{trace:?}")
    }

    #[test]
    fn lines_checked_as_utf8_by_the_chunk_read_as_lines_checked_one_by_one() {
        let good = concat!(
            "{\"memtide\":1,\"device\":\"cuda:0\"}\n",
            "{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":4,\"name\":\"é\",\"stack\":[\"a.py:1 ü\"]}\n",
            "{\"t\":2,\"op\":\"alloc\",\"id\":2,\"size\":4,\"name\":\"中\",\"stack\":[\"a.py:1 ü\"]}\n",
        )
        .as_bytes()
        .to_vec();
        let mut bad_line = good.clone();
        bad_line.extend_from_slice(
            b"{\"t\":3,\"op\":\"alloc\",\"id\":3,\"size\":4,\"name\":\"\xff\"}\n",
        );
        bad_line.extend_from_slice(b"{\"t\":4,\"op\":\"free\",\"id\":1}\n");
        let mut bad_stack = good.clone();
        bad_stack.extend_from_slice(
            b"{\"t\":3,\"op\":\"alloc\",\"id\":3,\"size\":4,\"stack\":[\"a.py:1 \xc3\"]}\n",
        );
        for (what, bytes) in [
            ("good", &good),
            ("bad name", &bad_line),
            ("bad frame", &bad_stack),
        ] {
            for lenient in [false, true] {
                let one_by_one = read(bytes, 1, lenient);
                for piece in [2, 3, 5, 64, bytes.len()] {
                    assert_eq!(
                        read(bytes, piece, lenient),
                        one_by_one,
                        "{what}, pieces of {piece}"
                    );
                }
            }
        }
        let strict = read(&bad_line, bad_line.len(), false);
        assert!(
            strict.starts_with("Err(") && strict.contains("line: 4"),
            "{strict}"
        );
        assert!(
            read(&bad_line, bad_line.len(), true).starts_with("Ok"),
            "the bad line is skipped"
        );
    }

    #[test]
    fn blank_runs_are_whole_lines_counted() {
        use super::blank_lines;
        assert_eq!(blank_lines(b""), (0, 0));
        assert_eq!(blank_lines(b"{}\n"), (0, 0));
        assert_eq!(
            blank_lines(b"   "),
            (0, 0),
            "no newline: not a whole line yet"
        );
        assert_eq!(blank_lines(b"\n\n{"), (2, 2));
        assert_eq!(
            blank_lines(b"\r\n \t\x0c\n  {"),
            (6, 2),
            "the next line keeps its indent"
        );
        let run = [b"\n".repeat(100), b"\r\n".repeat(50), b" \n".repeat(7)].concat();
        let mut b = run.clone();
        b.extend_from_slice(b"  # x\n");
        assert_eq!(blank_lines(&b), (run.len(), 157));
    }

    #[test]
    fn runs_of_blank_and_comment_lines_keep_every_line_number() {
        // Blank runs of every length around the 32-byte steps, CRLF and other whitespace,
        // comments; then a bad line whose number is counted independently here.
        let mut doc = b"{\"memtide\":1,\"device\":\"cuda:0\"}\n".to_vec();
        for (k, n) in [0usize, 1, 31, 32, 33, 64, 65, 200].into_iter().enumerate() {
            doc.extend(b"\n".repeat(n));
            doc.extend(b"\r\n \t\n".repeat(n % 3));
            doc.extend(format!("# comment {k}\n").bytes());
            doc.extend(format!("{{\"t\":{k},\"op\":\"alloc\",\"id\":{k},\"size\":4}}\n").bytes());
        }
        doc.extend(b"\n".repeat(40));
        doc.extend(b"{\"t\":99,\"op\":\"nope\"}\n");
        let want = doc.iter().filter(|&&c| c == b'\n').count();
        let whole = read(&doc, doc.len(), false);
        assert!(whole.contains(&format!("line: {want}")), "{whole}");
        for piece in [1, 7, 31, 32, 33, 100] {
            assert_eq!(read(&doc, piece, false), whole, "pieces of {piece}");
        }
    }
}
