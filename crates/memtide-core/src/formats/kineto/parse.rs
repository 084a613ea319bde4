//! Streaming pass over a Kineto Chrome trace: keeps `[memory]` / `[OutOfMemory]` instants and
//! the `ph:"X"` spans needed for attribution and marks, compactly, skipping everything else.

use super::ahead::Part;
use super::blocks::Blocks;
use super::feed::{Feed, FeedError};
use rustc_hash::FxHashMap;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserializer;
use std::borrow::Cow;
use std::fmt;

/// Marks an absent `Total Allocated` / `Total Reserved` (keeps [`MemEv`] small).
pub(crate) const ABSENT: i64 = i64::MIN;

/// `Addr` of a `[memory]` event that has none (older PyTorch writes only `Bytes`).
pub(crate) const NO_ADDR: u64 = u64::MAX;

/// One `[memory]` instant (file order). 56 bytes: a 1 GB trace holds ~10⁶ of them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MemEv {
    pub ts: i64,
    /// [`NO_ADDR`] when the event carries no `Addr`.
    pub addr: u64,
    /// Position of the event in the file's `traceEvents` array.
    pub src: u64,
    pub bytes: i64,
    /// `Total Allocated` ([`ABSENT`] when absent).
    pub total_alloc: i64,
    /// `Total Reserved` ([`ABSENT`] when absent).
    pub total_res: i64,
    pub dev_type: i16,
    pub dev_id: i16,
    pub tid: u32,
}

impl MemEv {
    pub fn total_alloc(&self) -> Option<i64> {
        (self.total_alloc != ABSENT).then_some(self.total_alloc)
    }
    pub fn total_res(&self) -> Option<i64> {
        (self.total_res != ABSENT).then_some(self.total_res)
    }
    pub fn has_addr(&self) -> bool {
        self.addr != NO_ADDR
    }
}

/// One `[OutOfMemory]` instant.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OomEv {
    pub ts: i64,
    /// Position of the event in the file's `traceEvents` array.
    pub src: u64,
    pub bytes: i64,
    pub dev_type: i32,
    pub dev_id: i32,
}

/// What an `X` span is used for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SpanKind {
    CpuOp = 0,
    Python = 1,
    Annotation = 2,
    /// A runtime call that opens or closes a stream capture (`cudaStreamBeginCapture`,
    /// `cudaStreamEndCapture`, `hipStream…`): where a CUDA graph's pool may grow.
    Capture = 3,
}

/// A complete (`ph:"X"`) event: `[start, end)` in ns. 24 bytes (the kind sits in the top
/// bits of the name id): a 1 GB trace holds millions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    pub start: i64,
    pub end: i64,
    pub tid: u32,
    tag: u32,
}

const NAME_BITS: u32 = 30;

impl Span {
    /// None when the name id does not fit (more than 2³⁰ distinct names).
    pub fn new(start: i64, end: i64, tid: u32, name: u32, kind: SpanKind) -> Option<Span> {
        (name < 1 << NAME_BITS).then_some(Span {
            start,
            end,
            tid,
            tag: name | (kind as u32) << NAME_BITS,
        })
    }
    pub fn name(&self) -> u32 {
        self.tag & ((1 << NAME_BITS) - 1)
    }
    pub fn kind(&self) -> SpanKind {
        match self.tag >> NAME_BITS {
            0 => SpanKind::CpuOp,
            1 => SpanKind::Python,
            2 => SpanKind::Annotation,
            _ => SpanKind::Capture,
        }
    }
}

/// Deduplicated names (span names and the few instants we keep).
#[derive(Default, Debug)]
pub(crate) struct Names {
    ids: FxHashMap<Box<str>, u32>,
    pub list: Vec<Box<str>>,
}

impl Names {
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.list.len() as u32;
        self.list.push(s.into());
        self.ids.insert(s.into(), id);
        id
    }
    pub fn get(&self, id: u32) -> &str {
        self.list.get(id as usize).map_or("", |s| s)
    }
}

/// A device's properties from the header (`deviceProperties`).
#[derive(Clone, Debug, Default, serde::Deserialize)]
pub(crate) struct DevProp {
    #[serde(default)]
    pub id: Option<i64>,
    #[serde(default, rename = "totalGlobalMem")]
    pub total_global_mem: Option<u64>,
}

/// Everything kept from one pass over the file.
#[derive(Default, Debug)]
pub(crate) struct Collected {
    pub base_ns: Option<i64>,
    pub dev_props: Vec<DevProp>,
    pub mem: Blocks<MemEv>,
    pub ooms: Vec<OomEv>,
    pub spans: Vec<Span>,
    pub names: Names,
    /// Number of `traceEvents` entries read completely.
    pub events_read: u64,
    pub saw_trace_events: bool,
    /// `distributedInfo` (rank, world size, backend) when the header has it.
    pub distributed: Option<crate::trace::Distributed>,
    /// Problems with header fields that were skipped, with their byte offsets.
    pub warnings: Vec<String>,
    /// `[memory]` events left out because `Bytes` is missing or not an integer number
    /// (`"5"`, `null`, `1e400`, `1.5`), and the `traceEvents` position of the first.
    pub bad_bytes: u64,
    pub first_bad_bytes: Option<u64>,
    tids: FxHashMap<TidKey, u32>,
    /// Of `events_read`, those parsed ahead on the second thread ([`super::ahead`]).
    pub events_ahead: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) enum TidKey {
    Num(i64),
    Str(Box<str>),
}

impl Collected {
    pub fn new() -> Self {
        Collected::default()
    }

    /// The thread keys by id (tests compare passes by them).
    #[cfg(test)]
    pub(super) fn thread_keys(&self) -> Vec<(u32, TidKey)> {
        let mut v: Vec<_> = self.tids.iter().map(|(k, &id)| (id, k.clone())).collect();
        v.sort_by_key(|&(id, _)| id);
        v
    }

    /// Frees the op spans once attribution is done (only annotations and captures are needed
    /// after).
    pub fn drop_op_spans(&mut self) {
        self.spans
            .retain(|s| matches!(s.kind(), SpanKind::Annotation | SpanKind::Capture));
        self.spans.shrink_to_fit();
    }
}

struct DevPropLoose(Option<DevProp>);
impl<'de> de::Deserialize<'de> for DevPropLoose {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Buffer the small object so that a surprising shape is skipped, not fatal.
        let v = <serde_json::Value as de::Deserialize>::deserialize(d)?;
        Ok(DevPropLoose(serde_json::from_value(v).ok()))
    }
}

/// Reads the whole trace object from `feed` into `c`. On error, `c` holds what was read.
pub(crate) fn scan<R: std::io::Read>(
    feed: &mut Feed<R, Part>,
    c: &mut Collected,
) -> Result<(), FeedError> {
    scan_with(feed, c, true)
}

/// [`scan`], optionally without the fast path (tests compare both).
fn scan_with<R: std::io::Read>(
    feed: &mut Feed<R, Part>,
    c: &mut Collected,
    fast: bool,
) -> Result<(), FeedError> {
    // The Chrome trace "JSON array format": the events alone, without the wrapping object.
    if feed.peek()? == Some(b'[') {
        c.saw_trace_events = true;
        events(feed, c, fast)?;
        return end_of_trace(feed);
    }
    feed.expect(b'{', "'{' (a Kineto trace is one JSON object)")?;
    if feed.peek()? == Some(b'}') {
        feed.bump();
        return end_of_trace(feed);
    }
    loop {
        let key: String = feed.value()?;
        feed.expect(b':', "':' after an object key")?;
        match key.as_str() {
            "traceEvents" => {
                c.saw_trace_events = true;
                events(feed, c, fast)?;
            }
            "baseTimeNanoseconds" => c.base_ns = feed.value::<Num>()?.as_i64(),
            "distributedInfo" => {
                feed.peek()?; // past the whitespace: the offset is the value's
                let at = feed.offset();
                let v: serde_json::Value = feed.value()?;
                match distributed_info(&v) {
                    Some(d) => c.distributed = Some(d),
                    None => c.warnings.push(format!(
                        "distributedInfo at byte {at} is not an object with rank, world_size or backend (ignored)"
                    )),
                }
            }
            "deviceProperties" => {
                let v: Option<Vec<DevPropLoose>> = feed.value()?;
                c.dev_props = v
                    .unwrap_or_default()
                    .into_iter()
                    .filter_map(|d| d.0)
                    .collect();
            }
            // Streamed past, not held: an unknown key's value may be of any size.
            _ => feed.skip_value()?,
        }
        match feed.peek()? {
            Some(b',') => feed.bump(),
            Some(b'}') => {
                feed.bump();
                break;
            }
            Some(x) => {
                return Err(feed.error_here(format!(
                    "expected ',' or '}}' after the value of {key:?}, found {:?}",
                    char::from(x)
                )))
            }
            None => {
                return Err(FeedError::Eof {
                    offset: feed.offset(),
                })
            }
        }
    }
    end_of_trace(feed)
}

/// After the trace: nothing but whitespace, to the end of an input that was not cut.
fn end_of_trace<R: std::io::Read>(feed: &mut Feed<R, Part>) -> Result<(), FeedError> {
    match feed.peek()? {
        None => feed.end(),
        Some(x) => Err(feed.error_here(format!(
            "unexpected {:?} after the end of the trace",
            char::from(x)
        ))),
    }
}

/// Rank, world size and backend from `distributedInfo` (numbers or numeric strings); None
/// when it is not an object or holds none of them.
fn distributed_info(v: &serde_json::Value) -> Option<crate::trace::Distributed> {
    let o = v.as_object()?;
    let num = |k: &str| match o.get(k)? {
        serde_json::Value::Number(n) => n.as_u64(),
        serde_json::Value::String(s) => s.trim().parse().ok(),
        _ => None,
    };
    let d = crate::trace::Distributed {
        rank: num("rank"),
        world_size: num("world_size"),
        backend: o
            .get("backend")
            .and_then(|b| b.as_str())
            .filter(|b| !b.is_empty())
            .map(String::from),
    };
    (d != crate::trace::Distributed::default()).then_some(d)
}

/// c10::DeviceType of a device named as PyTorch prints it (`"cuda"`, `"XPU"`).
pub(crate) fn device_type_of_name(s: &str) -> Option<i64> {
    let l = s.trim().to_ascii_lowercase();
    let l = l.split(':').next().unwrap_or("");
    super::build::DEVICE_TYPES
        .iter()
        .position(|&n| n == l)
        .map(|i| i as i64)
}

fn events<R: std::io::Read>(
    feed: &mut Feed<R, Part>,
    c: &mut Collected,
    fast: bool,
) -> Result<(), FeedError> {
    feed.expect(b'[', "'[' (traceEvents is an array)")?;
    if feed.peek()? == Some(b']') {
        feed.bump();
        return Ok(());
    }
    loop {
        feed.parse(|s| {
            Ok(raw_event(s, fast)?.map(|(ev, used)| {
                keep(c, ev);
                ((), used)
            }))
        })?;
        c.events_read += 1;
        match feed.peek()? {
            Some(b',') => {
                feed.bump();
                // The events after this comma may have been read ahead on another thread.
                if let Some(part) = feed.take_spec() {
                    c.absorb(part);
                }
            }
            Some(b']') => {
                feed.bump();
                return Ok(());
            }
            Some(x) => {
                return Err(feed.error_here(format!(
                    "expected ',' or ']' between trace events, found {:?}",
                    char::from(x)
                )))
            }
            None => {
                return Err(FeedError::Eof {
                    offset: feed.offset(),
                })
            }
        }
    }
}

/// The trace event at the start of `s` (after whitespace) and the bytes it takes: by the fast
/// path when it can, else by serde_json. None: `s` ends first.
pub(super) fn raw_event(
    s: &[u8],
    fast: bool,
) -> Result<Option<(RawEvent<'_>, usize)>, serde_json::Error> {
    if let Some(x) = fast.then(|| super::fast::event(s)).flatten() {
        return Ok(Some(x));
    }
    let mut it = serde_json::Deserializer::from_slice(s).into_iter::<RawEvent>();
    match it.next() {
        Some(Ok(ev)) => Ok(Some((ev, it.byte_offset()))),
        Some(Err(e)) => Err(e),
        None => Ok(None),
    }
}

/// Fields of one trace event, as far as they matter (the name borrowed from the input).
#[derive(Default)]
pub(super) struct RawEvent<'a> {
    pub ph: u8,
    pub cat: Cat,
    pub name: Option<Cow<'a, str>>,
    pub ts: Option<f64>,
    pub dur: Option<f64>,
    pub tid: Option<TidKey>,
    pub args: ArgsOut,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
pub(super) enum Cat {
    #[default]
    Other,
    /// The GPU-time copy of an annotation: not a mark (the CPU span is).
    GpuAnnotation,
    CpuOp,
    Python,
    UserAnnotation,
}

#[derive(Default)]
pub(super) struct ArgsOut {
    pub addr: Option<u64>,
    pub bytes: Option<i64>,
    pub total_alloc: Option<i64>,
    pub total_res: Option<i64>,
    pub dev_type: Option<i64>,
    pub dev_id: Option<i64>,
}

impl Cat {
    pub fn from_str(s: &[u8]) -> Cat {
        match s {
            b"cpu_op" | b"Operator" | b"operator" => Cat::CpuOp,
            b"python_function" => Cat::Python,
            b"user_annotation" => Cat::UserAnnotation,
            b"gpu_user_annotation" => Cat::GpuAnnotation,
            _ => Cat::Other,
        }
    }
}

enum EvKey {
    Ph,
    Cat,
    Name,
    Ts,
    Dur,
    Tid,
    Args,
    Other,
}
struct EvKeyD(EvKey);
impl<'de> de::Deserialize<'de> for EvKeyD {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = EvKeyD;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an event key")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<EvKeyD, E> {
                Ok(EvKeyD(match s {
                    "ph" => EvKey::Ph,
                    "cat" => EvKey::Cat,
                    "name" => EvKey::Name,
                    "ts" => EvKey::Ts,
                    "dur" => EvKey::Dur,
                    "tid" => EvKey::Tid,
                    "args" => EvKey::Args,
                    _ => EvKey::Other,
                }))
            }
        }
        d.deserialize_identifier(V)
    }
}

/// `ph`: only its first byte matters.
struct Ph(u8);
impl<'de> de::Deserialize<'de> for Ph {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Ph;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a phase string")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Ph, E> {
                Ok(Ph(s.as_bytes().first().copied().unwrap_or(0)))
            }
        }
        d.deserialize_str(V)
    }
}

struct CatD(Cat);
impl<'de> de::Deserialize<'de> for CatD {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = CatD;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a category string")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<CatD, E> {
                Ok(CatD(Cat::from_str(s.as_bytes())))
            }
            fn visit_unit<E: de::Error>(self) -> Result<CatD, E> {
                Ok(CatD(Cat::Other))
            }
        }
        d.deserialize_any(V)
    }
}

/// A name, borrowed from the input when it has no escapes.
struct NameD<'a>(Option<Cow<'a, str>>);
impl<'de> de::Deserialize<'de> for NameD<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NameD<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a name string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(NameD(Some(Cow::Borrowed(s))))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(NameD(Some(Cow::Owned(s.to_owned()))))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(NameD(None))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(NameD(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(NameD(Some(Cow::Owned(v.to_string()))))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(NameD(Some(Cow::Owned(v.to_string()))))
            }
        }
        d.deserialize_any(V)
    }
}

/// A JSON number of any shape (or a numeric string), kept as both integer and float.
#[derive(Clone, Copy, Default)]
struct Num {
    i: Option<i64>,
    u: Option<u64>,
    f: Option<f64>,
    /// Written as a string (`"5"`): fine for ids, not for a byte count.
    quoted: bool,
}
impl Num {
    /// A byte count: an integer (or integral float) written as a number; else None.
    fn as_bytes(self) -> Option<i64> {
        if self.quoted {
            return None;
        }
        self.i
            .or_else(|| self.u.and_then(|u| i64::try_from(u).ok()))
            .or_else(|| {
                self.f
                    .filter(|f| f.is_finite() && f.fract() == 0.0 && f.abs() < 9.2e18)
                    .map(|f| f as i64)
            })
    }
    fn as_i64(self) -> Option<i64> {
        self.i
            .or_else(|| self.u.and_then(|u| i64::try_from(u).ok()))
            .or_else(|| self.f.filter(|f| f.is_finite()).map(|f| f.round() as i64))
    }
    fn as_u64(self) -> Option<u64> {
        self.u
            .or_else(|| self.i.and_then(|i| u64::try_from(i).ok()))
            .or_else(|| self.f.filter(|f| *f >= 0.0).map(|f| f.round() as u64))
    }
    fn as_f64(self) -> Option<f64> {
        self.f
            .or_else(|| self.i.map(|i| i as f64))
            .or_else(|| self.u.map(|u| u as f64))
    }
}
impl<'de> de::Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Num;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Num, E> {
                Ok(Num {
                    i: Some(v),
                    ..Num::default()
                })
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Num, E> {
                Ok(Num {
                    u: Some(v),
                    ..Num::default()
                })
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Num, E> {
                Ok(Num {
                    f: Some(v),
                    ..Num::default()
                })
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Num, E> {
                let s = s.trim();
                Ok(if let Ok(i) = s.parse::<i64>() {
                    Num {
                        i: Some(i),
                        quoted: true,
                        ..Num::default()
                    }
                } else if let Ok(u) = s.parse::<u64>() {
                    Num {
                        u: Some(u),
                        quoted: true,
                        ..Num::default()
                    }
                } else {
                    Num {
                        f: s.parse::<f64>().ok(),
                        quoted: true,
                        ..Num::default()
                    }
                })
            }
            fn visit_unit<E: de::Error>(self) -> Result<Num, E> {
                Ok(Num::default())
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Num, E> {
                Ok(Num::default())
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Num, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Num::default())
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Num, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Num::default())
            }
        }
        d.deserialize_any(V)
    }
}

/// `Device Type`: a c10::DeviceType number, or its name.
struct DevTypeD(Option<i64>);
impl<'de> de::Deserialize<'de> for DevTypeD {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = DevTypeD;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a device type")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<DevTypeD, E> {
                Ok(DevTypeD(Some(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<DevTypeD, E> {
                Ok(DevTypeD(i64::try_from(v).ok()))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<DevTypeD, E> {
                Ok(DevTypeD(v.is_finite().then_some(v.round() as i64)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<DevTypeD, E> {
                Ok(DevTypeD(
                    s.trim()
                        .parse::<i64>()
                        .ok()
                        .or_else(|| device_type_of_name(s)),
                ))
            }
            fn visit_unit<E: de::Error>(self) -> Result<DevTypeD, E> {
                Ok(DevTypeD(None))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<DevTypeD, E> {
                Ok(DevTypeD(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<DevTypeD, A::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(DevTypeD(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<DevTypeD, A::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(DevTypeD(None))
            }
        }
        d.deserialize_any(V)
    }
}

struct TidD(TidKey);
impl<'de> de::Deserialize<'de> for TidD {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = TidD;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a thread id")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<TidD, E> {
                Ok(TidD(TidKey::Num(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<TidD, E> {
                Ok(TidD(TidKey::Num(v as i64)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<TidD, E> {
                Ok(TidD(TidKey::Num(v as i64)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<TidD, E> {
                Ok(TidD(match s.parse::<i64>() {
                    Ok(n) => TidKey::Num(n),
                    Err(_) => TidKey::Str(s.into()),
                }))
            }
            fn visit_unit<E: de::Error>(self) -> Result<TidD, E> {
                Ok(TidD(TidKey::Num(-1)))
            }
        }
        d.deserialize_any(V)
    }
}

enum ArgKey {
    Addr,
    Bytes,
    TotalAlloc,
    TotalRes,
    DevType,
    DevId,
    Other,
}
struct ArgKeyD(ArgKey);
impl<'de> de::Deserialize<'de> for ArgKeyD {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = ArgKeyD;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an args key")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<ArgKeyD, E> {
                Ok(ArgKeyD(match s {
                    "Addr" => ArgKey::Addr,
                    "Bytes" => ArgKey::Bytes,
                    "Total Allocated" => ArgKey::TotalAlloc,
                    "Total Reserved" => ArgKey::TotalRes,
                    "Device Type" => ArgKey::DevType,
                    "Device Id" => ArgKey::DevId,
                    _ => ArgKey::Other,
                }))
            }
        }
        d.deserialize_identifier(V)
    }
}

/// `args`: picks the allocator fields, skips everything else (cheap for op args too).
struct ArgsSeed;
impl<'de> DeserializeSeed<'de> for ArgsSeed {
    type Value = ArgsOut;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<ArgsOut, D::Error> {
        d.deserialize_any(self)
    }
}
impl<'de> Visitor<'de> for ArgsSeed {
    type Value = ArgsOut;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an args object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<ArgsOut, A::Error> {
        let mut a = ArgsOut::default();
        while let Some(k) = m.next_key::<ArgKeyD>()? {
            match k.0 {
                ArgKey::Addr => a.addr = m.next_value::<Num>()?.as_u64(),
                ArgKey::Bytes => a.bytes = m.next_value::<Num>()?.as_bytes(),
                ArgKey::TotalAlloc => a.total_alloc = m.next_value::<Num>()?.as_i64(),
                ArgKey::TotalRes => a.total_res = m.next_value::<Num>()?.as_i64(),
                ArgKey::DevType => a.dev_type = m.next_value::<DevTypeD>()?.0,
                ArgKey::DevId => a.dev_id = m.next_value::<Num>()?.as_i64(),
                ArgKey::Other => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(a)
    }
    fn visit_unit<E: de::Error>(self) -> Result<ArgsOut, E> {
        Ok(ArgsOut::default())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<ArgsOut, A::Error> {
        while s.next_element::<IgnoredAny>()?.is_some() {}
        Ok(ArgsOut::default())
    }
}

/// µs (float) → ns, rounded: Kineto writes 3 decimals, i.e. whole nanoseconds.
pub(crate) fn us_to_ns(us: f64) -> i64 {
    (us * 1000.0).round() as i64
}

impl<'de> de::Deserialize<'de> for RawEvent<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawEvent<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a trace event object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<RawEvent<'de>, A::Error> {
                let mut ev = RawEvent::default();
                while let Some(k) = m.next_key::<EvKeyD>()? {
                    match k.0 {
                        EvKey::Ph => ev.ph = m.next_value::<Ph>()?.0,
                        EvKey::Cat => ev.cat = m.next_value::<CatD>()?.0,
                        EvKey::Name => ev.name = m.next_value::<NameD>()?.0,
                        EvKey::Ts => ev.ts = m.next_value::<Num>()?.as_f64(),
                        EvKey::Dur => ev.dur = m.next_value::<Num>()?.as_f64(),
                        EvKey::Tid => ev.tid = Some(m.next_value::<TidD>()?.0),
                        // Span args (shapes, ids) are never needed: skip them unread.
                        EvKey::Args if ev.ph == b'X' => {
                            m.next_value::<IgnoredAny>()?;
                        }
                        EvKey::Args => ev.args = m.next_value_seed(ArgsSeed)?,
                        EvKey::Other => {
                            m.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(ev)
            }
        }
        d.deserialize_map(V)
    }
}

/// Where the kept parts of events go: the whole pass ([`Collected`]) or the part of a chunk
/// parsed ahead ([`super::ahead::Part`]).
pub(super) trait Keep {
    /// The `traceEvents` position of the event being kept.
    fn src(&self) -> u64;
    fn tid(&mut self, k: TidKey) -> u32;
    fn name(&mut self, s: &str) -> u32;
    fn mem(&mut self, ev: MemEv);
    fn oom(&mut self, ev: OomEv);
    fn span(&mut self, sp: Span);
    /// A `[memory]` event without a usable `Bytes`.
    fn bad_bytes(&mut self, src: u64);
}

impl Keep for Collected {
    fn src(&self) -> u64 {
        self.events_read
    }
    fn tid(&mut self, k: TidKey) -> u32 {
        let n = self.tids.len() as u32;
        *self.tids.entry(k).or_insert(n)
    }
    fn name(&mut self, s: &str) -> u32 {
        self.names.intern(s)
    }
    fn mem(&mut self, ev: MemEv) {
        self.mem.push(ev);
    }
    fn oom(&mut self, ev: OomEv) {
        self.ooms.push(ev);
    }
    fn span(&mut self, sp: Span) {
        self.spans.push(sp);
    }
    fn bad_bytes(&mut self, src: u64) {
        self.bad_bytes += 1;
        self.first_bad_bytes.get_or_insert(src);
    }
}

/// Whether a runtime call opens (`Some(true)`) or closes (`Some(false)`) a stream capture:
/// `cudaStreamBeginCapture` / `cudaStreamEndCapture` as CUPTI names them (with or without a
/// `_v10000`-style suffix), `hipStreamBeginCapture` / `hipStreamEndCapture` on ROCm.
pub(crate) fn capture_call(name: &str) -> Option<bool> {
    let bare = name.split('_').next().unwrap_or(name);
    match bare {
        "cudaStreamBeginCapture" | "hipStreamBeginCapture" => Some(true),
        "cudaStreamEndCapture" | "hipStreamEndCapture" => Some(false),
        _ => None,
    }
}

/// Keeps what matters of one event.
pub(super) fn keep(k: &mut impl Keep, ev: RawEvent<'_>) {
    let Some(ts) = ev.ts.filter(|t| t.is_finite()) else {
        return;
    };
    let ts = us_to_ns(ts);
    let name = ev.name.as_deref();
    match ev.ph {
        b'i' | b'I' | b'n' => {
            let a = &ev.args;
            let src = k.src();
            if name == Some("[memory]") {
                let Some(bytes) = a.bytes else {
                    k.bad_bytes(src);
                    return;
                };
                let tid = ev.tid.map_or(u32::MAX, |t| k.tid(t));
                k.mem(MemEv {
                    ts,
                    // An address of u64::MAX cannot be a real pointer: taken as none.
                    addr: a.addr.unwrap_or(NO_ADDR),
                    src,
                    bytes,
                    total_alloc: a.total_alloc.unwrap_or(ABSENT),
                    total_res: a.total_res.unwrap_or(ABSENT),
                    dev_type: a.dev_type.unwrap_or(0).clamp(-1, i16::MAX as i64) as i16,
                    dev_id: a.dev_id.unwrap_or(-1).clamp(-1, i16::MAX as i64) as i16,
                    tid,
                });
            } else if name == Some("[OutOfMemory]") {
                k.oom(OomEv {
                    ts,
                    src,
                    bytes: a.bytes.unwrap_or(0),
                    dev_type: a.dev_type.unwrap_or(0) as i32,
                    dev_id: a.dev_id.unwrap_or(-1) as i32,
                });
            }
        }
        b'X' => {
            let Some(name) = name else { return };
            let is_step = name.starts_with("ProfilerStep#") && ev.cat != Cat::GpuAnnotation;
            let kind = if is_step {
                SpanKind::Annotation
            } else {
                match ev.cat {
                    Cat::CpuOp => SpanKind::CpuOp,
                    Cat::Python => SpanKind::Python,
                    Cat::UserAnnotation => SpanKind::Annotation,
                    Cat::Other if capture_call(name).is_some() => SpanKind::Capture,
                    Cat::Other | Cat::GpuAnnotation => return,
                }
            };
            let dur = ev.dur.filter(|d| d.is_finite() && *d >= 0.0).unwrap_or(0.0);
            let tid = ev.tid.map_or(u32::MAX, |t| k.tid(t));
            let name = k.name(name);
            if let Some(sp) = Span::new(ts, ts.saturating_add(us_to_ns(dur)), tid, name, kind) {
                k.span(sp);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::source::Progress;

    fn collect(bytes: &[u8], fast: bool) -> Collected {
        let mut feed = Feed::new(bytes, Progress::new());
        let mut c = Collected::new();
        scan_with(&mut feed, &mut c, fast).expect("parses");
        c
    }

    /// Gives its bytes `.1` at a time.
    struct Pieces<'a>(&'a [u8], usize);
    impl std::io::Read for Pieces<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let k = self.0.len().min(self.1).min(out.len());
            out[..k].copy_from_slice(&self.0[..k]);
            self.0 = &self.0[k..];
            Ok(k)
        }
    }

    fn same(bytes: &[u8]) {
        let (a, b) = (collect(bytes, true), collect(bytes, false));
        assert_eq!(a.events_read, b.events_read);
        assert_eq!(format!("{:?}", a.mem), format!("{:?}", b.mem));
        assert_eq!(format!("{:?}", a.ooms), format!("{:?}", b.ooms));
        assert_eq!(format!("{:?}", a.spans), format!("{:?}", b.spans));
        assert_eq!(a.names.list, b.names.list);
        assert_eq!(a.base_ns, b.base_ns);
    }

    /// The fast path and serde_json read exactly the same from real and hand-made traces.
    #[test]
    fn fast_path_equals_serde_path() {
        use std::io::Read;
        let gz = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/kineto-cpu-baseline/trace.json.gz"
        );
        let mut real = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(gz).expect("baseline trace"))
            .read_to_end(&mut real)
            .expect("gunzip");
        let c = collect(&real, true);
        assert_eq!(c.mem.len(), 6158);
        same(&real);
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/kineto");
        for f in [
            "relative.json",
            "absolute.json",
            "cuda.json",
            "unsorted.json",
        ] {
            same(&std::fs::read(format!("{dir}/{f}")).expect("fixture"));
        }
        // The same fed in pieces of a few sizes: a value (a number such as `12.`, `-`, `1e`)
        // cut by the window's end is read again with more input, never an error.
        let small: &[u8] = br#"{"traceEvents":[{"ph":"i","name":"[memory]","ts":-12.5e1,"tid":7,"args":{"Bytes":4,"Addr":1,"Total Allocated":4.0,"extra":[-1.5e3,2.5]}},{"ph":"X","cat":"cpu_op","name":"a","ts":1.25,"dur":2E-1,"tid":7}]}"#;
        for (doc, pieces) in [(&real[..], &[7, 4093][..]), (small, &[1, 2, 3, 5][..])] {
            for fast in [true, false] {
                let want = collect(doc, fast);
                for &piece in pieces {
                    let mut feed = Feed::new(Pieces(doc, piece), Progress::new());
                    let mut c = Collected::new();
                    scan_with(&mut feed, &mut c, fast).expect("parses in pieces");
                    assert_eq!(c.events_read, want.events_read, "pieces of {piece}");
                    assert_eq!(format!("{:?}", c.mem), format!("{:?}", want.mem));
                    assert_eq!(format!("{:?}", c.spans), format!("{:?}", want.spans));
                }
            }
        }
        // Escapes, string tids and numbers, odd spacing, nested args.
        same(br#"{"traceEvents":[ {"ph":"X","cat":"cpu_op","name":"a\"b\u00e9","ts":1,"dur":2,"tid":"7"},
            {"ph" : "i" , "name":"[memory]","ts":1.5,"tid":7,"args":{"Bytes":4,"Addr":1,"Total Allocated":4.0,"x":[1,{"y":"}"}]}},
            {"ph":"X","cat":"python_function","name":"f.py(1): g","ts":"0.5","dur":9,"tid":7,"args":{}} ]}"#);
    }
}
