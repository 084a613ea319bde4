//! Streaming pass over a Kineto Chrome trace: keeps `[memory]` / `[OutOfMemory]` instants and
//! the `ph:"X"` spans needed for attribution and marks, compactly, skipping everything else.

use rustc_hash::FxHashMap;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserializer;
use std::fmt;

/// One `[memory]` instant (file order).
#[derive(Clone, Copy, Debug)]
pub struct MemEv {
    pub ts: i64,
    pub addr: u64,
    pub bytes: i64,
    /// `Total Allocated` (None when absent).
    pub total_alloc: Option<i64>,
    /// `Total Reserved` (None when absent).
    pub total_res: Option<i64>,
    pub dev_type: i32,
    pub dev_id: i32,
    pub tid: u32,
}

/// One `[OutOfMemory]` instant.
#[derive(Clone, Copy, Debug)]
pub struct OomEv {
    pub ts: i64,
    pub bytes: i64,
    pub dev_type: i32,
    pub dev_id: i32,
}

/// What an `X` span is used for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SpanKind {
    CpuOp,
    Python,
    Annotation,
}

/// A complete (`ph:"X"`) event: `[start, end)` in ns.
#[derive(Clone, Copy, Debug)]
pub struct Span {
    pub start: i64,
    pub end: i64,
    pub tid: u32,
    pub name: u32,
    pub kind: SpanKind,
}

/// Deduplicated names (span names and the few instants we keep).
#[derive(Default, Debug)]
pub struct Names {
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
pub struct DevProp {
    #[serde(default)]
    pub id: Option<i64>,
    #[serde(default, rename = "totalGlobalMem")]
    pub total_global_mem: Option<u64>,
}

/// Everything kept from one pass over the file.
#[derive(Default, Debug)]
pub struct Collected {
    pub base_ns: Option<i64>,
    pub dev_props: Vec<DevProp>,
    pub mem: Vec<MemEv>,
    pub ooms: Vec<OomEv>,
    pub spans: Vec<Span>,
    pub names: Names,
    /// Number of `traceEvents` entries read completely.
    pub events_read: u64,
    pub saw_trace_events: bool,
    tids: FxHashMap<TidKey, u32>,
    id_memory: u32,
    id_oom: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum TidKey {
    Num(i64),
    Str(Box<str>),
}

impl Collected {
    pub fn new() -> Self {
        let mut c = Collected::default();
        c.id_memory = c.names.intern("[memory]");
        c.id_oom = c.names.intern("[OutOfMemory]");
        c
    }

    fn tid(&mut self, k: TidKey) -> u32 {
        let n = self.tids.len() as u32;
        *self.tids.entry(k).or_insert(n)
    }
}

/// Root seed: `{ ..., "traceEvents": [...], ... }`.
pub struct Root<'a>(pub &'a mut Collected);

impl<'de> DeserializeSeed<'de> for Root<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Root<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Kineto trace object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
        while let Some(k) = m.next_key::<Key>()? {
            match k.0 {
                RootKey::TraceEvents => {
                    self.0.saw_trace_events = true;
                    m.next_value_seed(EventsSeed(self.0))?;
                }
                RootKey::Base => {
                    let v: Num = m.next_value()?;
                    self.0.base_ns = v.as_i64();
                }
                RootKey::DevProps => {
                    // Malformed properties are not worth failing the load for.
                    let v: Option<Vec<DevPropLoose>> = m.next_value()?;
                    self.0.dev_props = v
                        .unwrap_or_default()
                        .into_iter()
                        .filter_map(|d| d.0)
                        .collect();
                }
                RootKey::Other => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct DevPropLoose(Option<DevProp>);
impl<'de> de::Deserialize<'de> for DevPropLoose {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // Buffer the small object so that a surprising shape is skipped, not fatal.
        let v = serde_json::Value::deserialize(d)?;
        Ok(DevPropLoose(serde_json::from_value(v).ok()))
    }
}

enum RootKey {
    TraceEvents,
    Base,
    DevProps,
    Other,
}
struct Key(RootKey);
impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key, E> {
                Ok(Key(match s {
                    "traceEvents" => RootKey::TraceEvents,
                    "baseTimeNanoseconds" => RootKey::Base,
                    "deviceProperties" => RootKey::DevProps,
                    _ => RootKey::Other,
                }))
            }
        }
        d.deserialize_identifier(V)
    }
}

struct EventsSeed<'a>(&'a mut Collected);

impl<'de> DeserializeSeed<'de> for EventsSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for EventsSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the traceEvents array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        while s.next_element_seed(EventSeed(self.0))?.is_some() {
            self.0.events_read += 1;
        }
        Ok(())
    }
}

/// Fields of one trace event, as far as they matter.
#[derive(Default)]
struct Ev {
    ph: u8,
    cat: Cat,
    name: Option<u32>,
    ts: Option<f64>,
    dur: Option<f64>,
    tid: Option<TidKey>,
    args: MemArgs,
}

#[derive(Default, Clone, Copy, PartialEq, Eq)]
enum Cat {
    #[default]
    Other,
    CpuOp,
    Python,
    UserAnnotation,
}

#[derive(Default)]
struct MemArgs {
    addr: Option<u64>,
    bytes: Option<i64>,
    total_alloc: Option<i64>,
    total_res: Option<i64>,
    dev_type: Option<i64>,
    dev_id: Option<i64>,
}

struct EventSeed<'a>(&'a mut Collected);

impl<'de> DeserializeSeed<'de> for EventSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
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
                Ok(CatD(match s {
                    "cpu_op" | "Operator" | "operator" => Cat::CpuOp,
                    "python_function" => Cat::Python,
                    "user_annotation" => Cat::UserAnnotation,
                    _ => Cat::Other,
                }))
            }
            fn visit_unit<E: de::Error>(self) -> Result<CatD, E> {
                Ok(CatD(Cat::Other))
            }
        }
        d.deserialize_any(V)
    }
}

/// Interns a name straight from the parser's scratch buffer.
struct NameSeed<'a>(&'a mut Names);
impl<'de> DeserializeSeed<'de> for NameSeed<'_> {
    type Value = Option<u32>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Option<u32>, D::Error> {
        d.deserialize_any(self)
    }
}
impl Visitor<'_> for NameSeed<'_> {
    type Value = Option<u32>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a name string")
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Option<u32>, E> {
        Ok(Some(self.0.intern(s)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Option<u32>, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Option<u32>, E> {
        Ok(Some(self.0.intern(&v.to_string())))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Option<u32>, E> {
        Ok(Some(self.0.intern(&v.to_string())))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Option<u32>, E> {
        Ok(Some(self.0.intern(&v.to_string())))
    }
}

/// A JSON number of any shape (or a numeric string), kept as both integer and float.
#[derive(Clone, Copy, Default)]
struct Num {
    i: Option<i64>,
    u: Option<u64>,
    f: Option<f64>,
}
impl Num {
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
                        ..Num::default()
                    }
                } else if let Ok(u) = s.parse::<u64>() {
                    Num {
                        u: Some(u),
                        ..Num::default()
                    }
                } else {
                    Num {
                        f: s.parse::<f64>().ok(),
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
    type Value = MemArgs;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<MemArgs, D::Error> {
        d.deserialize_any(self)
    }
}
impl<'de> Visitor<'de> for ArgsSeed {
    type Value = MemArgs;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an args object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<MemArgs, A::Error> {
        let mut a = MemArgs::default();
        while let Some(k) = m.next_key::<ArgKeyD>()? {
            match k.0 {
                ArgKey::Addr => a.addr = m.next_value::<Num>()?.as_u64(),
                ArgKey::Bytes => a.bytes = m.next_value::<Num>()?.as_i64(),
                ArgKey::TotalAlloc => a.total_alloc = m.next_value::<Num>()?.as_i64(),
                ArgKey::TotalRes => a.total_res = m.next_value::<Num>()?.as_i64(),
                ArgKey::DevType => a.dev_type = m.next_value::<Num>()?.as_i64(),
                ArgKey::DevId => a.dev_id = m.next_value::<Num>()?.as_i64(),
                ArgKey::Other => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(a)
    }
    fn visit_unit<E: de::Error>(self) -> Result<MemArgs, E> {
        Ok(MemArgs::default())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<MemArgs, A::Error> {
        while s.next_element::<IgnoredAny>()?.is_some() {}
        Ok(MemArgs::default())
    }
}

/// µs (float) → ns, rounded: Kineto writes 3 decimals, i.e. whole nanoseconds.
pub fn us_to_ns(us: f64) -> i64 {
    (us * 1000.0).round() as i64
}

impl<'de> Visitor<'de> for EventSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a trace event object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
        let c = self.0;
        let mut ev = Ev::default();
        while let Some(k) = m.next_key::<EvKeyD>()? {
            match k.0 {
                EvKey::Ph => ev.ph = m.next_value::<Ph>()?.0,
                EvKey::Cat => ev.cat = m.next_value::<CatD>()?.0,
                EvKey::Name => ev.name = m.next_value_seed(NameSeed(&mut c.names))?,
                EvKey::Ts => ev.ts = m.next_value::<Num>()?.as_f64(),
                EvKey::Dur => ev.dur = m.next_value::<Num>()?.as_f64(),
                EvKey::Tid => ev.tid = Some(m.next_value::<TidD>()?.0),
                EvKey::Args => ev.args = m.next_value_seed(ArgsSeed)?,
                EvKey::Other => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        let Some(ts) = ev.ts.filter(|t| t.is_finite()) else {
            return Ok(());
        };
        let ts = us_to_ns(ts);
        match ev.ph {
            b'i' | b'I' | b'n' => {
                let a = &ev.args;
                if ev.name == Some(c.id_memory) {
                    let tid = ev.tid.map_or(u32::MAX, |t| c.tid(t));
                    c.mem.push(MemEv {
                        ts,
                        addr: a.addr.unwrap_or(0),
                        bytes: a.bytes.unwrap_or(0),
                        total_alloc: a.total_alloc,
                        total_res: a.total_res,
                        dev_type: a.dev_type.unwrap_or(0) as i32,
                        dev_id: a.dev_id.unwrap_or(-1) as i32,
                        tid,
                    });
                } else if ev.name == Some(c.id_oom) {
                    c.ooms.push(OomEv {
                        ts,
                        bytes: a.bytes.unwrap_or(0),
                        dev_type: a.dev_type.unwrap_or(0) as i32,
                        dev_id: a.dev_id.unwrap_or(-1) as i32,
                    });
                }
            }
            b'X' => {
                let Some(name) = ev.name else { return Ok(()) };
                let is_step = c.names.get(name).starts_with("ProfilerStep#");
                let kind = if is_step {
                    SpanKind::Annotation
                } else {
                    match ev.cat {
                        Cat::CpuOp => SpanKind::CpuOp,
                        Cat::Python => SpanKind::Python,
                        Cat::UserAnnotation => SpanKind::Annotation,
                        Cat::Other => return Ok(()),
                    }
                };
                let dur = ev.dur.filter(|d| d.is_finite() && *d >= 0.0).unwrap_or(0.0);
                let tid = ev.tid.map_or(u32::MAX, |t| c.tid(t));
                c.spans.push(Span {
                    start: ts,
                    end: ts + us_to_ns(dur),
                    tid,
                    name,
                    kind,
                });
            }
            _ => {}
        }
        Ok(())
    }
}
