//! memtide JSONL v1 (DESIGN §3): an incremental decoder that turns appended bytes into trace
//! events. Torn last lines wait for their newline; events sharing one `t` are buffered so that
//! frees apply before allocs, then written to the trace in application order.

//!
//! Four parts: `scan` reads a line of the common shape fast, `line` decodes any line (serde,
//! the reference), this file frames bytes into lines and gathers equal-`t` groups, `apply`
//! gives each event its meaning.

mod apply;
mod line;
mod scan;

use super::error::FormatError;
use crate::trace::{AllocId, Bytes, Category, Clock, MarkKind, StackId, StrId, Trace};
use apply::{Ev, GroupScratch, TensorRef};
use line::{parse_line, show_num, Num, Op, RawLine};
use rustc_hash::FxHashMap;

/// Options of the JSONL reader.
#[derive(Clone, Copy, Debug, Default)]
pub struct JsonlOptions {
    /// Skip and count bad lines instead of failing.
    pub lenient: bool,
    /// Whether the whole input is known to hold explicit `external` spans (then `sample`
    /// lines do not synthesise external memory). None: decide as lines arrive.
    pub has_external_spans: Option<bool>,
}

/// Incremental JSONL v1 decoder. Feed it bytes as they arrive; call [`JsonlDecoder::finish`]
/// at the end of a complete file.
#[derive(Debug)]
pub struct JsonlDecoder {
    opts: JsonlOptions,
    /// Bytes of a line still waiting for its newline.
    partial: Vec<u8>,
    /// Lines consumed so far (1-based number of the last complete line).
    line: u64,
    header_seen: bool,
    clock: Clock,
    /// Event lines seen (the source index of the next one).
    next_src: u64,
    last_t: Option<i64>,
    group: Vec<Ev>,
    tensors: FxHashMap<u64, TensorRef>,
    refcount: FxHashMap<AllocId, u32>,
    view_tensors: FxHashMap<AllocId, Vec<u64>>,
    segments: FxHashMap<u64, AllocId>,
    reserved_now: u64,
    sample_storage: Option<AllocId>,
    external_seen: bool,
    first_skip: Option<String>,
    /// An error of the previous equal-`t` group, found while reading the line that closed it:
    /// it belongs to the group's own line, not to the line being read.
    group_error: Option<FormatError>,
    unmatched_examples: u32,
    // Scratch buffers reused across lines and groups (no allocation per event).
    frames: Vec<StrId>,
    spare_group: Vec<Ev>,
    scratch: GroupScratch,
}

const MAX_EXAMPLE_WARNINGS: u32 = 5;

impl JsonlDecoder {
    pub fn new(opts: JsonlOptions) -> Self {
        JsonlDecoder {
            opts,
            partial: Vec::new(),
            line: 0,
            header_seen: false,
            clock: Clock::Us,
            next_src: 0,
            last_t: None,
            group: Vec::new(),
            tensors: FxHashMap::default(),
            refcount: FxHashMap::default(),
            view_tensors: FxHashMap::default(),
            segments: FxHashMap::default(),
            reserved_now: 0,
            sample_storage: None,
            external_seen: opts.has_external_spans.unwrap_or(false),
            first_skip: None,
            group_error: None,
            unmatched_examples: 0,
            frames: Vec::new(),
            spare_group: Vec::new(),
            scratch: GroupScratch::default(),
        }
    }

    /// Whether the header line has been read.
    pub fn header_seen(&self) -> bool {
        self.header_seen
    }

    /// Decodes every complete line in `bytes` (appended to any earlier torn line). Events whose
    /// `t` group may still grow stay buffered until a later `t` arrives or `finish`.
    pub fn feed(&mut self, trace: &mut Trace, bytes: &[u8]) -> Result<(), FormatError> {
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
                    self.line_complete(trace, &line)?;
                    rest = &rest[nl + 1..];
                }
            }
        }
        while let Some(nl) = memchr::memchr(b'\n', rest) {
            self.line_complete(trace, &rest[..nl])?;
            rest = &rest[nl + 1..];
        }
        self.partial.extend_from_slice(rest);
        Ok(())
    }

    /// Ends the input: a last line without a newline is decoded, and the pending group is
    /// applied. A last line without a newline that is not yet a whole JSON object is a line
    /// still being written (DESIGN §3: not an error): it is left out, with a warning.
    pub fn finish(&mut self, trace: &mut Trace) -> Result<(), FormatError> {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            if self.header_seen && is_torn(&line) {
                self.line += 1;
                trace.warn(format!(
                    "line {}: the last line has no newline and is not a whole JSON object yet (a line still being written): left out",
                    self.line
                ));
            } else {
                self.line_complete(trace, &line)?;
            }
        }
        self.flush(trace)?;
        if trace.skipped_lines > 0 {
            let first = self.first_skip.clone().unwrap_or_default();
            // What those lines held is missing from every figure.
            trace.warn_doubtful(format!(
                "--lenient: skipped {} bad line(s); first: {first}",
                trace.skipped_lines
            ));
        }
        Ok(())
    }

    /// Applies the pending equal-`t` group now (used by followers after an idle period is not
    /// safe in general; exposed for tests and for `finish`).
    pub fn flush(&mut self, trace: &mut Trace) -> Result<(), FormatError> {
        self.apply_pending(trace)
    }

    /// Applies the buffered group, recycling its buffer.
    fn apply_pending(&mut self, trace: &mut Trace) -> Result<(), FormatError> {
        let mut group = std::mem::replace(&mut self.group, std::mem::take(&mut self.spare_group));
        let r = self.apply_group(trace, &group);
        group.clear();
        self.spare_group = group;
        r
    }

    fn line_complete(&mut self, trace: &mut Trace, raw: &[u8]) -> Result<(), FormatError> {
        self.line += 1;
        let line = self.line;
        let trimmed = trim_ascii(raw);
        if trimmed.is_empty() || trimmed[0] == b'#' {
            return Ok(());
        }
        let r = match self.decode(trace, trimmed) {
            Ok(()) => Ok(()),
            // A bad header is never skipped: nothing after it could be read right.
            Err(reason) if !self.header_seen => Err(FormatError::line(line, reason)),
            Err(reason) => self.reject(trace, line, reason),
        };
        match self.group_error.take() {
            None => r,
            Some(e) if self.opts.lenient => {
                trace.skipped_lines += 1;
                self.first_skip.get_or_insert_with(|| e.to_string());
                r
            }
            Some(e) => Err(e),
        }
    }

    fn decode(&mut self, trace: &mut Trace, bytes: &[u8]) -> Result<(), String> {
        if bytes.first() != Some(&b'{') {
            return Err(format!(
                "expected a JSON object starting with '{{', found {}",
                describe_start(bytes)
            ));
        }
        let mut l = RawLine::default();
        parse_line(bytes, &mut trace.strings, &mut self.frames, &mut l)?;
        if !self.header_seen {
            return self.header(trace, l);
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
        if let Some(st) = l.stack {
            ev.stack = st;
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
            ev.extra = Some(trace.strings.intern(&s));
        }
        if op == Op::External {
            self.external_seen = true;
        }
        ev.src = self.next_src;
        self.next_src += 1;
        if self.last_t != Some(t) {
            if let Err(e) = self.apply_pending(trace) {
                self.group_error = Some(e);
            }
        }
        self.last_t = Some(t);
        self.group.push(ev);
        Ok(())
    }

    fn header(&mut self, trace: &mut Trace, l: RawLine<'_>) -> Result<(), String> {
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
        self.header_seen = true;
        if let Some(d) = l.device {
            trace.device = d.into_owned();
        }
        self.clock = match l.clock.as_deref() {
            None | Some("us") => Clock::Us,
            Some("ns") => Clock::Ns,
            Some("seq") => Clock::Seq,
            Some(o) => return Err(format!("unknown clock {o:?}: expected us, ns or seq")),
        };
        trace.clock = self.clock;
        trace.capacity = match l.capacity {
            Some(Num::U(c)) => Some(Bytes(c)),
            None => None,
            Some(n) => {
                return Err(format!(
                    "capacity must be a byte count, got {}",
                    show_num(n)
                ))
            }
        };
        if let Some(s) = l.source {
            trace.meta.push(("source".into(), s.into_owned()));
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
            trace.meta.push((k.into_owned(), v.get().to_string()));
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
    let t = trim_ascii(raw);
    !t.is_empty() && t[0] != b'#' && serde_json::from_slice::<serde::de::IgnoredAny>(t).is_err()
}

fn trim_ascii(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &b[start..end.max(start)]
}

fn describe_start(b: &[u8]) -> String {
    match b.first() {
        Some(c) if c.is_ascii_graphic() => format!("{:?}", *c as char),
        Some(c) => format!("byte 0x{c:02x}"),
        None => "end of line".into(),
    }
}
