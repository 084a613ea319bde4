//! Snapshot JSON → [`Raw`], streaming: the top-level map is visited key by key and each
//! trace entry becomes a row as soon as it is parsed (no `serde_json::Value` of the file).

use super::raw::{
    fx_name, is_placeholder_context, Action, Annotation, Block, BlockState, Extra, Frames, Raw,
    Row, Segment,
};
use crate::formats::error::FormatError;
use crate::formats::kineto::feed::{with_read_ahead, Feed, FeedError};
use crate::formats::source::Progress;
use crate::trace::{StackId, StrId};
use rustc_hash::FxHashMap;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::fmt;
use std::io::Read;

/// An integer as JSON writes it (u64, i64, or a float for out-of-range values).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Num(pub(super) i128);

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Num, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an integer")
            }
            fn visit_u64<E>(self, v: u64) -> Result<Num, E> {
                Ok(Num(v as i128))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Num, E> {
                Ok(Num(v as i128))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Num, E> {
                if v.is_finite() && v.fract() == 0.0 {
                    Ok(Num(v as i128))
                } else {
                    Err(E::custom(format!("expected an integer, found {v}")))
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl Num {
    /// Two's complement to 64 bits, as the allocator's unsigned fields are.
    fn u64(self) -> u64 {
        self.0 as u64
    }
    fn i64(self) -> i64 {
        self.0.clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }
}

#[derive(Deserialize)]
struct JFrameObj {
    #[serde(default)]
    filename: String,
    #[serde(default)]
    line: Option<Num>,
    #[serde(default)]
    name: String,
    #[serde(default)]
    fx_node_op: Option<String>,
    #[serde(default)]
    fx_node_name: Option<String>,
    #[serde(default)]
    fx_node_target: Option<String>,
    #[serde(default)]
    fx_original_trace: Option<String>,
}

/// A frame: a `{filename, line, name, fx_*}` object, or a plain string (some writers, FX).
enum JFrame {
    Obj(JFrameObj),
    Text(String),
}

impl<'de> Deserialize<'de> for JFrame {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<JFrame, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = JFrame;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a frame object {filename, line, name} or a string")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<JFrame, E> {
                Ok(JFrame::Text(v.to_string()))
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<JFrame, A::Error> {
                JFrameObj::deserialize(de::value::MapAccessDeserializer::new(m)).map(JFrame::Obj)
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Deserialize)]
struct JEntry {
    action: String,
    #[serde(default)]
    addr: Option<Num>,
    #[serde(default)]
    size: Option<Num>,
    #[serde(default)]
    time_us: Option<Num>,
    #[serde(default)]
    device_free: Option<Num>,
    /// A string, or any JSON value (kept as its text).
    #[serde(default)]
    user_metadata: Option<serde_json::Value>,
    #[serde(default)]
    frames: Option<Vec<JFrame>>,
    // Kept fields, as raw JSON text: the common defaults are recognised without parsing.
    #[serde(default)]
    stream: Option<Box<RawValue>>,
    #[serde(default)]
    pool_id: Option<Box<RawValue>>,
    #[serde(default)]
    compile_context: Option<Box<RawValue>>,
    #[serde(default)]
    forward_frames: Option<Box<RawValue>>,
    /// PyTorch's memory profiler category (`_profile_to_snapshot`); any other value is
    /// ignored.
    #[serde(default)]
    category: Option<serde_json::Value>,
}

/// A kept field's value unless it is a default (0, null, "", "N/A", [], [0, 0]).
fn kept(v: Option<&str>) -> Option<serde_json::Value> {
    let text = v?.trim();
    if matches!(text, "0" | "null" | "\"\"" | "\"N/A\"" | "[]" | "{}") {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    if is_default_pool(&v) {
        return None;
    }
    Some(v)
}

#[derive(Deserialize)]
struct JBlock {
    #[serde(default)]
    size: Option<Num>,
    #[serde(default)]
    requested_size: Option<Num>,
    #[serde(default)]
    state: String,
    #[serde(default)]
    frames: Option<Vec<JFrame>>,
    #[serde(default)]
    user_metadata: Option<serde_json::Value>,
    #[serde(default)]
    forward_frames: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct JSegment {
    #[serde(default)]
    device: Option<Num>,
    #[serde(default)]
    address: Option<Num>,
    #[serde(default)]
    total_size: Option<Num>,
    #[serde(default)]
    blocks: Vec<JBlock>,
    #[serde(default)]
    frames: Option<Vec<JFrame>>,
    #[serde(default)]
    stream: Option<serde_json::Value>,
    #[serde(default)]
    segment_type: Option<serde_json::Value>,
    #[serde(default)]
    segment_pool_id: Option<serde_json::Value>,
    #[serde(default)]
    is_expandable: Option<serde_json::Value>,
}

/// Non-empty: not null, "", [] or {}.
fn nonempty(v: &Option<serde_json::Value>) -> Option<&serde_json::Value> {
    use serde_json::Value as J;
    v.as_ref().filter(|v| match v {
        J::Null => false,
        J::String(s) => !s.is_empty(),
        J::Array(a) => !a.is_empty(),
        J::Object(o) => !o.is_empty(),
        _ => true,
    })
}

fn is_default_pool(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::Null => true,
        serde_json::Value::Array(x) => x.iter().all(|e| e.as_i64() == Some(0)),
        _ => false,
    }
}

#[derive(Deserialize)]
struct JAnnotation {
    #[serde(default)]
    name: String,
    #[serde(default)]
    stage: String,
    #[serde(default)]
    device: Option<Num>,
    #[serde(default)]
    time_us: Option<Num>,
}

/// A frame as both paths hand it over, borrowed from the input where possible.
pub(super) enum FrameIn<'a> {
    Obj {
        filename: Cow<'a, str>,
        line: Option<Num>,
        name: Cow<'a, str>,
        /// `fx_node_op`, `fx_node_name`, `fx_node_target`, `fx_original_trace`.
        fx: [Option<Cow<'a, str>>; 4],
    },
    Text(Cow<'a, str>),
    /// A frame byte-identical to one read before: its packed id (see [`Frames::frame`]).
    Packed(u32),
}

impl JFrame {
    fn as_in(&self) -> FrameIn<'_> {
        match self {
            JFrame::Text(t) => FrameIn::Text(Cow::Borrowed(t)),
            JFrame::Obj(f) => FrameIn::Obj {
                filename: Cow::Borrowed(&f.filename),
                line: f.line,
                name: Cow::Borrowed(&f.name),
                fx: [
                    &f.fx_node_op,
                    &f.fx_node_name,
                    &f.fx_node_target,
                    &f.fx_original_trace,
                ]
                .map(|x| x.as_deref().map(Cow::Borrowed)),
            },
        }
    }
}

/// An entry's `frames`.
pub(super) enum StackIn<'a> {
    /// Absent or null.
    None,
    /// Parsed frames; from the scanner also each frame's exact bytes and the list's, to be
    /// remembered, and whether the list was looked up.
    Frames(Vec<FrameIn<'a>>, Option<Scanned<'a>>),
    /// A list byte-identical to one already read: its stack.
    Known(StackId),
}

/// What the scanner saw of a `frames` list: each frame's bytes, the list's, and whether the
/// list was looked up first.
pub(super) struct Scanned<'a> {
    pub spans: Vec<&'a [u8]>,
    pub list: &'a [u8],
    pub tried: bool,
}

/// `user_metadata`: absent or empty, a string, or another value (kept as its JSON text).
pub(super) enum Meta<'a> {
    None,
    Str(Cow<'a, str>),
    Val(serde_json::Value),
}

impl Meta<'_> {
    pub(super) fn of(v: Option<serde_json::Value>) -> Meta<'static> {
        match nonempty(&v) {
            None => Meta::None,
            Some(serde_json::Value::String(_)) => match v {
                Some(serde_json::Value::String(s)) => Meta::Str(Cow::Owned(s)),
                _ => Meta::None,
            },
            Some(_) => v.map_or(Meta::None, Meta::Val),
        }
    }
}

/// A trace entry as both paths hand it over.
pub(super) struct EntryIn<'a> {
    pub action: Cow<'a, str>,
    pub addr: Option<Num>,
    pub size: Option<Num>,
    pub time_us: Option<Num>,
    pub device_free: Option<Num>,
    pub meta: Meta<'a>,
    pub stack: StackIn<'a>,
    /// Kept fields as raw JSON text: `stream`, `pool_id`, `compile_context`, `forward_frames`.
    pub kept: [Option<&'a str>; 4],
    /// `category`, when a string memtide knows.
    pub category: Option<crate::trace::Category>,
}

impl JEntry {
    fn as_in(&self) -> EntryIn<'_> {
        EntryIn {
            action: Cow::Borrowed(&self.action),
            addr: self.addr,
            size: self.size,
            time_us: self.time_us,
            device_free: self.device_free,
            meta: match nonempty(&self.user_metadata) {
                None => Meta::None,
                Some(serde_json::Value::String(s)) => Meta::Str(Cow::Borrowed(s)),
                Some(v) => Meta::Val(v.clone()),
            },
            stack: match &self.frames {
                None => StackIn::None,
                Some(v) => StackIn::Frames(v.iter().map(JFrame::as_in).collect(), None),
            },
            kept: [
                &self.stream,
                &self.pool_id,
                &self.compile_context,
                &self.forward_frames,
            ]
            .map(|v| v.as_ref().map(|r| r.get())),
            category: self
                .category
                .as_ref()
                .and_then(|c| c.as_str())
                .and_then(super::raw::entry_category),
        }
    }
}

/// Frames and frame lists remembered by their bytes, up to this many bytes in all.
const KNOWN_BUDGET: usize = 64 << 20;

/// Frames and stacks already read, by their exact bytes: a frame or `frames` list
/// byte-identical to one read before means the same (and was valid), so it is not formatted
/// and interned (a list: not parsed) again. A list is kept from its second sighting on
/// (lists seen once are only counted by hash), so unique stacks cost no memory here.
#[derive(Default)]
pub(super) struct KnownStacks {
    lists: FxHashMap<Box<[u8]>, StackId>,
    once: rustc_hash::FxHashSet<u64>,
    frames: FxHashMap<Box<[u8]>, u32>,
    bytes: usize,
    /// Lists looked up, and found.
    tried: u64,
    hits: u64,
    lists_read: u64,
}

impl KnownStacks {
    pub(super) fn list(&self, list: &[u8]) -> Option<StackId> {
        self.lists.get(list).copied()
    }
    /// Whether to look the next list up (its end found first): while lookups pay off,
    /// and for every 16th list otherwise (files of unique stacks skip the extra pass).
    pub(super) fn try_lists(&self) -> bool {
        self.tried < 64 || self.hits * 4 >= self.tried || self.lists_read.is_multiple_of(16)
    }
    pub(super) fn frame(&self, frame: &[u8]) -> Option<u32> {
        self.frames.get(frame).copied()
    }
    fn remember_list(&mut self, list: &[u8], id: StackId) {
        use std::hash::BuildHasher as _;
        if self.bytes + list.len() > KNOWN_BUDGET || self.lists.contains_key(list) {
            return;
        }
        let h = rustc_hash::FxBuildHasher.hash_one(list);
        if self.once.insert(h) {
            return;
        }
        self.bytes += list.len();
        self.lists.insert(list.into(), id);
    }
    fn remember_frame(&mut self, frame: &[u8], p: u32) {
        if self.bytes + frame.len() <= KNOWN_BUDGET && !self.frames.contains_key(frame) {
            self.bytes += frame.len();
            self.frames.insert(frame.into(), p);
        }
    }
}

struct Ctx {
    raw: Raw,
    frames: Frames,
    packed: Vec<u32>,
    known: KnownStacks,
}

impl Ctx {
    fn new(cpp_frames: bool) -> Ctx {
        Ctx {
            raw: Raw::new(),
            frames: Frames::new(cpp_frames),
            packed: Vec::new(),
            known: KnownStacks::default(),
        }
    }

    fn stack_of(&mut self, frames: &Option<Vec<JFrame>>) -> StackId {
        match frames {
            None => StackId(0),
            Some(v) => {
                let v: Vec<FrameIn> = v.iter().map(JFrame::as_in).collect();
                self.stack(&v, &[])
            }
        }
    }

    /// Interns a stack; `spans` (empty, or one per frame) are the frames' bytes to remember.
    fn stack(&mut self, fs: &[FrameIn], spans: &[&[u8]]) -> StackId {
        self.packed.clear();
        for (k, f) in fs.iter().enumerate() {
            let (filename, line, name, fx) = match f {
                FrameIn::Packed(p) => {
                    self.packed.push(*p);
                    continue;
                }
                FrameIn::Obj {
                    filename,
                    line,
                    name,
                    fx,
                } => (filename, line, name, fx),
                FrameIn::Text(text) => {
                    let p = self.frames.frame_text(&mut self.raw.strings, text);
                    self.packed.push(p);
                    if let Some(b) = spans.get(k) {
                        self.known.remember_frame(b, p);
                    }
                    continue;
                }
            };
            let line = line.map_or(0, |l| l.i64());
            let p = if fx.iter().any(|x| x.is_some()) {
                let name = fx_name(name, fx.each_ref().map(|x| x.as_deref().unwrap_or("")));
                self.frames
                    .frame(&mut self.raw.strings, filename, line, &name)
            } else {
                self.frames
                    .frame(&mut self.raw.strings, filename, line, name)
            };
            self.packed.push(p);
            if let Some(b) = spans.get(k) {
                self.known.remember_frame(b, p);
            }
        }
        self.frames.stack(&mut self.raw.strings, &self.packed)
    }

    /// Appends entry `e`: its row (an error: over the memory budget).
    fn entry(&mut self, e: EntryIn) -> Result<u32, String> {
        let action = Action::parse(&e.action);
        if action == Action::Unknown {
            super::raw::count_unknown_action(&mut self.raw.unknown_actions, &e.action);
        }
        let stack = match e.stack {
            StackIn::None => StackId(0),
            StackIn::Known(id) => {
                self.known.tried += 1;
                self.known.hits += 1;
                self.known.lists_read += 1;
                id
            }
            StackIn::Frames(v, None) => self.stack(&v, &[]),
            StackIn::Frames(v, Some(sc)) => {
                self.known.tried += sc.tried as u64;
                self.known.lists_read += 1;
                let id = self.stack(&v, &sc.spans);
                self.known.remember_list(sc.list, id);
                id
            }
        };
        let name = match &e.meta {
            Meta::None => StrId(0),
            Meta::Str(s) if s.is_empty() => StrId(0),
            Meta::Str(s) => self.raw.strings.intern(s),
            Meta::Val(v) => self.raw.strings.intern(&v.to_string()),
        };
        let mut extra = Extra::default();
        for (k, v) in ["stream", "pool_id", "compile_context", "forward_frames"]
            .into_iter()
            .zip(e.kept)
        {
            if let Some(v) = kept(v) {
                if !v.as_str().is_some_and(is_placeholder_context) {
                    extra.put(k, v);
                }
            }
        }
        let row = Row {
            addr: e.addr.map_or(0, Num::u64),
            size: e.size.map_or(0, Num::u64),
            time_us: e.time_us.map_or(0, Num::i64),
            stack,
            action,
            has_time: e.time_us.is_some(),
            category: e.category,
        };
        let r = self.raw.push_row(row)?;
        if name.0 != 0 {
            self.raw.row_names.insert(r, name);
        }
        if let Some(f) = e.device_free {
            self.raw.device_free.insert(r, f.u64());
        }
        if !extra.is_empty() {
            let x = extra.intern(&mut self.raw.strings);
            self.raw.row_extra.insert(r, x);
        }
        Ok(r)
    }

    fn segments(&mut self, segs: Vec<JSegment>) -> Vec<Segment> {
        let mut out = Vec::with_capacity(segs.len());
        for s in segs {
            let blocks = s
                .blocks
                .iter()
                .map(|b| {
                    let size = b.size.map_or(0, Num::u64);
                    let mut extra = Extra::default();
                    if let Some(v) = nonempty(&b.user_metadata) {
                        extra.put("user_metadata", v.clone());
                    }
                    if let Some(v) = nonempty(&b.forward_frames) {
                        extra.put("forward_frames", v.clone());
                    }
                    Block {
                        size,
                        requested: b.requested_size.map_or(size, Num::u64),
                        state: BlockState::parse(&b.state),
                        stack: self.stack_of(&b.frames),
                        extra: extra.intern(&mut self.raw.strings),
                    }
                })
                .collect();
            let mut extra = Extra::default();
            if let Some(v) = nonempty(&s.stream).filter(|v| v.as_u64() != Some(0)) {
                extra.put("stream", v.clone());
            }
            if let Some(v) = nonempty(&s.segment_type) {
                extra.put("segment_type", v.clone());
            }
            if let Some(v) = nonempty(&s.segment_pool_id).filter(|v| !is_default_pool(v)) {
                extra.put("segment_pool_id", v.clone());
            }
            if let Some(v) = nonempty(&s.is_expandable) {
                extra.put("is_expandable", v.clone());
            }
            out.push(Segment {
                device: s.device.map_or(0, Num::u64),
                address: s.address.map_or(0, Num::u64),
                total_size: s.total_size.map_or(0, Num::u64),
                blocks,
                stack: self.stack_of(&s.frames),
                extra: extra.intern(&mut self.raw.strings),
            });
        }
        out
    }
}

struct Top<'a>(&'a mut Ctx);

impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a snapshot object {\"segments\": [...], \"device_traces\": [[...]]}")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
        let mut seen = false;
        while let Some(k) = m.next_key::<String>()? {
            match k.as_str() {
                "device_traces" => {
                    seen = true;
                    self.0.raw.has_traces_key = true;
                    m.next_value_seed(Devices(&mut *self.0))?;
                }
                "segments" => {
                    seen = true;
                    let s: Vec<JSegment> = m.next_value()?;
                    self.0.raw.segments = self.0.segments(s);
                    self.0.raw.has_segments_key = true;
                }
                "allocator_settings" => {
                    let v: serde_json::Value = m.next_value()?;
                    if !v.is_null() {
                        self.0.raw.allocator_settings = Some(v.to_string());
                    }
                }
                "host_segments" => {
                    self.0.raw.has_host = true;
                    let s: Option<Vec<JSegment>> = m.next_value()?;
                    let s = self.0.segments(s.unwrap_or_default());
                    self.0.raw.host_segments = s;
                }
                "host_traces" => {
                    self.0.raw.has_host = true;
                    m.next_value_seed(HostTraces(&mut *self.0))?;
                }
                "external_annotations" => {
                    let v: Vec<JAnnotation> = m.next_value()?;
                    for a in v {
                        let Some(t) = a.time_us else { continue };
                        self.0.raw.annotations.push(Annotation {
                            device: a.device.map(Num::u64),
                            name: a.name,
                            start: a.stage != "END",
                            time_us: t.i64(),
                        });
                    }
                }
                _ => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        if !seen {
            return Err(de::Error::custom(
                "not a PyTorch memory snapshot: no 'segments' or 'device_traces' key",
            ));
        }
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        // `torch.cuda.memory_snapshot()`: a bare list of segments.
        let mut v = Vec::new();
        while let Some(x) = s.next_element::<JBareSegment>()? {
            v.push(x.0);
        }
        self.0.raw.segments = self.0.segments(v);
        self.0.raw.has_segments_key = true;
        Ok(())
    }
}

/// A segment of a bare list: must have `address` and `total_size` (else this list is not
/// a snapshot).
struct JBareSegment(JSegment);

impl<'de> Deserialize<'de> for JBareSegment {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<JBareSegment, D::Error> {
        let s = JSegment::deserialize(d)?;
        if s.address.is_none() || s.total_size.is_none() {
            return Err(de::Error::custom(
                "not a PyTorch memory snapshot: a list item is not a segment with 'address' and 'total_size'",
            ));
        }
        Ok(JBareSegment(s))
    }
}

/// `host_traces`: a list of entries, or a list of such lists; null is no host trace.
struct HostTraces<'a>(&'a mut Ctx);

impl<'de> DeserializeSeed<'de> for HostTraces<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for HostTraces<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of host trace entries")
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        while s.next_element_seed(HostItem(&mut *self.0))?.is_some() {}
        Ok(())
    }
}

/// One item of `host_traces`: an entry, or a list of entries.
struct HostItem<'a>(&'a mut Ctx);

impl<'de> DeserializeSeed<'de> for HostItem<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for HostItem<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a host trace entry or a list of them")
    }
    fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<(), A::Error> {
        let e = JEntry::deserialize(de::value::MapAccessDeserializer::new(m))?;
        let r = self.0.entry(e.as_in()).map_err(de::Error::custom)?;
        self.0.raw.host_rows.push(r);
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        while let Some(e) = s.next_element::<JEntry>()? {
            let r = self.0.entry(e.as_in()).map_err(de::Error::custom)?;
            self.0.raw.host_rows.push(r);
        }
        Ok(())
    }
}

struct Devices<'a>(&'a mut Ctx);

impl<'de> DeserializeSeed<'de> for Devices<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Devices<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of per-device trace lists")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        loop {
            let mut rows = Vec::new();
            if s.next_element_seed(Entries(&mut *self.0, &mut rows))?
                .is_none()
            {
                break;
            }
            self.0.raw.devices.push(rows);
        }
        Ok(())
    }
}

struct Entries<'a>(&'a mut Ctx, &'a mut Vec<u32>);

impl<'de> DeserializeSeed<'de> for Entries<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Entries<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of trace entries")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        while let Some(e) = s.next_element::<JEntry>()? {
            let r = self.0.entry(e.as_in()).map_err(de::Error::custom)?;
            self.1.push(r);
        }
        Ok(())
    }
}

/// The reference reader: one serde_json pass over the whole document (streaming from the
/// reader, every value through serde). [`read`] gives the same result, faster; tests compare
/// the two.
pub fn read_serde(r: impl Read, cpp_frames: bool) -> Result<Raw, FormatError> {
    let mut ctx = Ctx::new(cpp_frames);
    let mut de = serde_json::Deserializer::from_reader(r);
    let res = Top(&mut ctx).deserialize(&mut de).and_then(|()| de.end());
    match res {
        Ok(()) => Ok(ctx.raw),
        Err(e) if e.is_io() => Err(crate::formats::source::io_or_cancel(std::io::Error::from(
            e,
        ))),
        Err(e) => Err(FormatError::line(
            e.line() as u64,
            format!("column {}: {e}", e.column()),
        )),
    }
}

/// Reads a snapshot JSON document into [`Raw`].
pub fn read(r: impl Read + Send, cpp_frames: bool) -> Result<Raw, FormatError> {
    read_with(r, cpp_frames, &Progress::new())
}

/// [`read`], honouring `progress`'s cancellation. The document is read through a sliding
/// window (memory stays constant); each trace entry is parsed by a byte scanner
/// (`json_fast`) when it has the usual shape, else by serde_json, and the top-level
/// structure is walked by hand. Errors carry the byte offset in the decompressed stream.
pub(crate) fn read_with(
    r: impl Read + Send,
    cpp_frames: bool,
    progress: &Progress,
) -> Result<Raw, FormatError> {
    let mut ctx = Ctx::new(cpp_frames);
    let res = with_read_ahead(r, progress, |ra| {
        let mut feed = Feed::chunks(ra, progress.clone()).strict();
        scan(&mut feed, &mut ctx, true)
    });
    finish(res, ctx)
}

fn finish(res: Result<(), FeedError>, ctx: Ctx) -> Result<Raw, FormatError> {
    match res {
        Ok(()) => Ok(ctx.raw),
        Err(FeedError::Cancelled) => Err(FormatError::Cancelled),
        Err(FeedError::Io(e)) => Err(crate::formats::source::io_or_cancel(e)),
        Err(FeedError::Eof { offset }) => Err(FormatError::at(
            offset,
            "the snapshot JSON ends inside a value (is the file cut short?)",
        )),
        // A whole top-level value without a snapshot's keys, or a list item that is no
        // segment: certainly not a trace.
        Err(FeedError::Json { offset, line, msg }) if msg.starts_with(NOT_SNAPSHOT) => Err(
            FormatError::NotATrace(format!("{msg} (byte offset {offset}, line {line})")),
        ),
        Err(FeedError::Json { offset, line, msg }) => Err(FormatError::at(
            offset,
            format!("malformed snapshot JSON (line {line}): {msg}"),
        )),
    }
}

const NOT_SNAPSHOT: &str = "not a PyTorch memory snapshot";

/// The next token, consumed when it is `,` (true) or `close` (false); else an error.
fn next_or_close<R: Read>(feed: &mut Feed<R>, close: u8, what: &str) -> Result<bool, FeedError> {
    match feed.peek()? {
        Some(b',') => {
            feed.bump();
            Ok(true)
        }
        Some(c) if c == close => {
            feed.bump();
            Ok(false)
        }
        Some(c) => Err(feed.error_here(format!(
            "expected ',' or '{}' {what}, found {:?}",
            char::from(close),
            char::from(c)
        ))),
        None => Err(FeedError::Eof {
            offset: feed.offset(),
        }),
    }
}

/// Opens a list; false when it is empty (and already closed).
fn open_list<R: Read>(feed: &mut Feed<R>, what: &str) -> Result<bool, FeedError> {
    feed.expect(b'[', what)?;
    if feed.peek()? == Some(b']') {
        feed.bump();
        return Ok(false);
    }
    Ok(true)
}

/// Parses one value of type `T` at the window's start with serde_json.
fn serde_one<T: serde::de::DeserializeOwned>(
    s: &[u8],
) -> Result<Option<(T, usize)>, serde_json::Error> {
    let mut it = serde_json::Deserializer::from_slice(s).into_iter::<T>();
    match it.next() {
        Some(Ok(v)) => Ok(Some((v, it.byte_offset()))),
        Some(Err(e)) => Err(e),
        None => Ok(None),
    }
}

/// One trace entry (the scanner, else serde_json); returns its row.
fn entry<R: Read>(feed: &mut Feed<R>, ctx: &mut Ctx, fast: bool) -> Result<u32, FeedError> {
    feed.parse(|s| {
        if fast {
            if let Some((e, used)) = super::json_fast::entry(s, &ctx.known) {
                let r = ctx.entry(e).map_err(de::Error::custom)?;
                return Ok(Some((r, used)));
            }
        }
        match serde_one::<JEntry>(s)? {
            Some((e, used)) => Ok(Some((
                ctx.entry(e.as_in()).map_err(de::Error::custom)?,
                used,
            ))),
            None => Ok(None),
        }
    })
}

/// A list of trace entries; their rows go to `rows`.
fn entries<R: Read>(
    feed: &mut Feed<R>,
    ctx: &mut Ctx,
    fast: bool,
    rows: &mut Vec<u32>,
) -> Result<(), FeedError> {
    if !open_list(feed, "'[' (a list of trace entries)")? {
        return Ok(());
    }
    loop {
        rows.push(entry(feed, ctx, fast)?);
        if !next_or_close(feed, b']', "between trace entries")? {
            return Ok(());
        }
    }
}

/// A list of segments (each parsed on its own, then interned, in file order).
fn segment_list<R: Read>(
    feed: &mut Feed<R>,
    ctx: &mut Ctx,
    bare: bool,
) -> Result<Vec<Segment>, FeedError> {
    let mut out = Vec::new();
    if !open_list(feed, "'[' (a list of segments)")? {
        return Ok(out);
    }
    loop {
        feed.peek()?;
        let at = feed.offset();
        let s: JSegment = feed.parse(serde_one)?;
        if bare && (s.address.is_none() || s.total_size.is_none()) {
            return Err(FeedError::Json {
                offset: at,
                line: 0,
                msg: format!(
                    "{NOT_SNAPSHOT}: a list item is not a segment with 'address' and 'total_size'"
                ),
            });
        }
        out.extend(ctx.segments(vec![s]));
        if !next_or_close(feed, b']', "between segments")? {
            return Ok(out);
        }
    }
}

/// The whole document: the snapshot object, or a bare list of segments.
fn scan<R: Read>(feed: &mut Feed<R>, ctx: &mut Ctx, fast: bool) -> Result<(), FeedError> {
    match feed.peek()? {
        Some(b'[') => {
            ctx.raw.segments = segment_list(feed, ctx, true)?;
            ctx.raw.has_segments_key = true;
        }
        Some(b'{') => top(feed, ctx, fast)?,
        Some(c) => {
            return Err(feed.error_here(format!(
                "expected a snapshot object {{\"segments\": [...], \"device_traces\": [[...]]}}, found {:?}",
                char::from(c)
            )))
        }
        None => {
            return Err(FeedError::Eof {
                offset: feed.offset(),
            })
        }
    }
    match feed.peek()? {
        None => feed.end(),
        Some(c) => Err(feed.error_here(format!(
            "unexpected {:?} after the end of the snapshot",
            char::from(c)
        ))),
    }
}

fn top<R: Read>(feed: &mut Feed<R>, ctx: &mut Ctx, fast: bool) -> Result<(), FeedError> {
    feed.expect(b'{', "'{'")?;
    let mut seen = false;
    let mut more = feed.peek()? != Some(b'}');
    if !more {
        feed.bump();
    }
    while more {
        let key: String = feed.value()?;
        feed.expect(b':', "':' after an object key")?;
        match key.as_str() {
            "device_traces" => {
                seen = true;
                ctx.raw.has_traces_key = true;
                if open_list(feed, "'[' (device_traces is a list of per-device lists)")? {
                    loop {
                        let mut rows = Vec::new();
                        entries(feed, ctx, fast, &mut rows)?;
                        ctx.raw.devices.push(rows);
                        if !next_or_close(feed, b']', "between device trace lists")? {
                            break;
                        }
                    }
                }
            }
            "segments" => {
                seen = true;
                ctx.raw.segments = segment_list(feed, ctx, false)?;
                ctx.raw.has_segments_key = true;
            }
            "allocator_settings" => {
                let v: serde_json::Value = feed.value()?;
                if !v.is_null() {
                    ctx.raw.allocator_settings = Some(v.to_string());
                }
            }
            "host_segments" => {
                ctx.raw.has_host = true;
                ctx.raw.host_segments = if feed.peek()? == Some(b'[') {
                    segment_list(feed, ctx, false)?
                } else {
                    let s: Option<Vec<JSegment>> = feed.value()?;
                    ctx.segments(s.unwrap_or_default())
                };
            }
            "host_traces" => {
                ctx.raw.has_host = true;
                if feed.peek()? == Some(b'[') {
                    host_traces(feed, ctx, fast)?;
                } else {
                    // null: no host trace (anything else is refused by serde_json).
                    feed.value::<()>()?;
                }
            }
            "external_annotations" => {
                let v: Vec<JAnnotation> = feed.value()?;
                for a in v {
                    let Some(t) = a.time_us else { continue };
                    ctx.raw.annotations.push(Annotation {
                        device: a.device.map(Num::u64),
                        name: a.name,
                        start: a.stage != "END",
                        time_us: t.i64(),
                    });
                }
            }
            // Streamed past, not held: an unknown key's value may be of any size.
            _ => feed.skip_value()?,
        }
        more = next_or_close(feed, b'}', "after a top-level value")?;
    }
    if !seen {
        return Err(FeedError::Json {
            offset: 0,
            line: 1,
            msg: format!("{NOT_SNAPSHOT}: no 'segments' or 'device_traces' key"),
        });
    }
    Ok(())
}

/// `host_traces`: a list of entries, or a list of such lists.
fn host_traces<R: Read>(feed: &mut Feed<R>, ctx: &mut Ctx, fast: bool) -> Result<(), FeedError> {
    if !open_list(feed, "'[' (a list of host trace entries)")? {
        return Ok(());
    }
    let mut rows = Vec::new();
    loop {
        match feed.peek()? {
            Some(b'[') => entries(feed, ctx, fast, &mut rows)?,
            Some(b'{') => rows.push(entry(feed, ctx, fast)?),
            Some(c) => {
                return Err(feed.error_here(format!(
                    "expected a host trace entry or a list of them, found {:?}",
                    char::from(c)
                )))
            }
            None => {
                return Err(FeedError::Eof {
                    offset: feed.offset(),
                })
            }
        }
        ctx.raw.host_rows.append(&mut rows);
        if !next_or_close(feed, b']', "between host trace items")? {
            return Ok(());
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fixture(name: &str) -> Vec<u8> {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/snapshot")
            .join(name);
        let b = std::fs::read(p).unwrap();
        if name.ends_with(".gz") {
            let mut out = Vec::new();
            flate2::read::MultiGzDecoder::new(&b[..])
                .read_to_end(&mut out)
                .unwrap();
            out
        } else {
            b
        }
    }

    /// Every JSON fixture (not the truth files).
    fn json_fixtures() -> Vec<String> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/snapshot");
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| (n.ends_with(".json") || n.ends_with(".json.gz")) && !n.contains(".truth."))
            .collect();
        v.sort();
        v
    }

    /// Yields at most `n` bytes per read, so values are cut at many window ends.
    struct Trickle<'a>(&'a [u8], usize);
    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let k = buf.len().min(self.0.len()).min(self.1);
            buf[..k].copy_from_slice(&self.0[..k]);
            self.0 = &self.0[k..];
            Ok(k)
        }
    }

    /// The new reader with or without its scanner, over a trickling window.
    fn read_feed(b: &[u8], fast: bool, piece: usize) -> Result<Raw, FormatError> {
        let mut ctx = Ctx::new(false);
        let mut feed = Feed::new(Trickle(b, piece), Progress::new()).strict();
        let res = scan(&mut feed, &mut ctx, fast);
        finish(res, ctx)
    }

    fn dbg(r: &Result<Raw, FormatError>) -> Result<String, ()> {
        r.as_ref().map(|r| format!("{r:?}")).map_err(|_| ())
    }

    /// The fast reader, the same walk without the scanner, and the same over small reads
    /// all equal the reference serde reader: the same raw model, or all an error.
    fn same_as_serde(b: &[u8]) {
        let want = dbg(&read_serde(b, false));
        let fast = read(b, false);
        assert_eq!(dbg(&fast), want, "fast path vs serde: {:?}", fast.err());
        assert_eq!(
            dbg(&read_feed(b, false, usize::MAX)),
            want,
            "no scanner vs serde"
        );
        assert_eq!(
            dbg(&read_feed(b, true, 61)),
            want,
            "fast path, 61-byte reads"
        );
    }

    #[test]
    fn every_json_fixture_reads_as_serde_does() {
        let names = json_fixtures();
        assert!(names.len() >= 4, "{names:?}");
        for n in names {
            let b = fixture(&n);
            assert!(read_serde(&b[..], false).is_ok(), "{n}");
            same_as_serde(&b);
            // With C++ frames too.
            let a = format!("{:?}", read_serde(&b[..], true).unwrap());
            assert_eq!(
                format!("{:?}", read_with(&b[..], true, &Progress::new()).unwrap()),
                a,
                "{n}"
            );
        }
    }

    #[test]
    fn odd_but_valid_shapes_read_as_serde_does() {
        let docs = [
            // escapes, floats, big and negative numbers, nulls, fx fields, unknown fields,
            // repeated frame lists, a string frame, object metadata, struct-as-list entries
            r#"{"device_traces": [[
              {"action": "alloc", "addr": 1.0e3, "size": 18446744073709551615, "time_us": -5,
               "frames": [{"filename": "C:\\w\\a.py", "line": 3, "name": "f\u00e9"}, "x.py:1"],
               "user_metadata": {"b": [1, 2]}, "stream": 7, "pool_id": [1, 2], "extra": {"k": [null]}},
              {"action":"alloc","addr":2,"size":3,"frames":[{"filename": "C:\\w\\a.py", "line": 3, "name": "f\u00e9"}, "x.py:1"]},
              {"action":"alloc","addr":2,"size":3,"frames":[{"filename": "C:\\w\\a.py", "line": 3, "name": "f\u00e9"}, "x.py:1"]},
              {"action": "free_completed", "addr": 2, "size": null, "frames": null, "user_metadata": "n",
               "compile_context": "ctx", "forward_frames": "fw\nx", "device_free": 9},
              {"action": "weird", "frames": [{"filename": "a.py", "line": null, "name": "g",
               "fx_node_op": "call", "fx_node_name": null, "fx_original_trace": "File a.py\n  x = 1"}]},
              ["alloc", 5, 6, 7],
              {"action": "alloc", "addr": -0, "size": 1e2, "user_metadata": "", "frames": []}
             ], []],
             "segments": [{"device": 0, "address": 0, "total_size": 8, "blocks": [
               {"size": 8, "state": "active_allocated", "frames": ["s"], "user_metadata": 3}]}],
             "host_traces": [{"action": "alloc", "addr": 1, "size": 2},
                             [{"action": "free_completed", "addr": 1, "size": 2}]],
             "host_segments": null, "allocator_settings": {"x": 1},
             "external_annotations": [{"name": "s", "stage": "START", "time_us": 4}],
             "unknown": [1, {"a": "b"}]}"#,
            "{\"segments\": [], \"device_traces\": [[{\"action\" : \"alloc\"\r\n,\t\"size\":1}]]}",
            r#"[{"address": 1, "total_size": 2, "blocks": []}]"#,
            r#"{"segments": [], "host_traces": null, "device_traces": []}"#,
            // `_profile_to_snapshot`'s category: known, unknown, not a string, escaped.
            r#"{"segments": [], "device_traces": [[
              {"action": "alloc", "addr": 1, "size": 2, "category": "parameter", "frames": []},
              {"action": "alloc", "addr": 3, "size": 2, "category": "unknown"},
              {"action": "alloc", "addr": 5, "size": 2, "category": 7},
              {"action": "alloc", "addr": 7, "size": 2, "category": "optimizer\u005fstate"},
              {"action": "alloc", "addr": 9, "size": 2, "category": "sideways"}]]}"#,
        ];
        for d in docs {
            assert!(read_serde(d.as_bytes(), false).is_ok(), "{d}");
            same_as_serde(d.as_bytes());
        }
    }

    #[test]
    fn bad_input_errors_as_serde_does_with_an_offset() {
        let docs = [
            r#"{"device_traces": [[{"action": "alloc", "action": "free"}]]}"#,
            r#"{"device_traces": [[{"size": 1}]]}"#,
            r#"{"device_traces": [[{"action": "alloc", "size": 01}]]}"#,
            r#"{"device_traces": [[{"action": "alloc", "size": 1.5}]]}"#,
            r#"{"device_traces": [[{"action": "alloc", "frames": [{"filename": null}]}]]}"#,
            r#"{"device_traces": [[{"action": "alloc", "stream": [1 2]}]]}"#,
            r#"{"device_traces": [[{"action": "alloc", "x": [1,]}]]}"#,
            "{\"device_traces\": [[{\"action\": \"al\u{1}loc\"}]]}",
            "{\"device_traces\": [[{\"action\": \"alloc\"}]]\u{c}}",
            r#"{"device_traces": [[{"action": "alloc"}]]} x"#,
            r#"{"device_traces": [[{"action": "alloc"}"#,
            r#"{"device_traces": null}"#,
            r#"{"other": 1}"#,
            r#"[{"address": 1}]"#,
            r#"{"segments": [], "host_traces": 3}"#,
            "",
            "7",
        ];
        for d in docs {
            assert!(read_serde(d.as_bytes(), false).is_err(), "{d}");
            same_as_serde(d.as_bytes());
        }
        let e = read(
            &br#"{"segments": [],
 "device_traces": [[{"action": "alloc", "size": 1,}]]}"#[..],
            false,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("byte offset 67: ") && e.contains("line 2"),
            "{e}"
        );
        let e = read(&b"{\"device_traces\": [[{\"action\": \"alloc\""[..], false)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("byte offset 38: ") && e.contains("cut short"),
            "{e}"
        );
    }

    fn mutate(mut b: Vec<u8>, edits: &[(usize, u8)], cut: Option<usize>) -> Vec<u8> {
        for &(pos, val) in edits {
            if !b.is_empty() {
                let i = pos % b.len();
                b[i] = val;
            }
        }
        if let Some(c) = cut {
            if !b.is_empty() {
                b.truncate(c % b.len());
            }
        }
        b
    }

    /// Bytes that matter to a JSON scanner, so that mutations hit structure often.
    fn byte() -> impl Strategy<Value = u8> {
        prop_oneof![
            any::<u8>(),
            prop::sample::select(b"\"\\{}[],: \x0c\n0-1.eE9nul\xc3\xff".to_vec()),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

        #[test]
        fn mutated_json_reads_as_serde_does(
            which in 0usize..3,
            edits in prop::collection::vec((any::<usize>(), byte()), 1..6),
            cut in prop::option::of(any::<usize>()),
        ) {
            let f = ["small.json", "fields.json", "segments_list.json"][which];
            let b = mutate(fixture(f), &edits, cut);
            let want = dbg(&read_serde(&b[..], false));
            prop_assert_eq!(dbg(&read(&b[..], false)), want.clone());
            prop_assert_eq!(dbg(&read_feed(&b, true, 4093)), want);
        }
    }
}
