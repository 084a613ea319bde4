//! Snapshot JSON → [`Raw`], streaming: the top-level map is visited key by key and each
//! trace entry becomes a row as soon as it is parsed (no `serde_json::Value` of the file).

use super::raw::{
    fx_name, is_placeholder_context, Action, Annotation, Block, BlockState, Extra, Frames, Raw,
    Row, Segment,
};
use crate::formats::error::FormatError;
use crate::trace::{StackId, StrId};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use std::fmt;
use std::io::Read;

/// An integer as JSON writes it (u64, i64, or a float for out-of-range values).
#[derive(Clone, Copy, Debug, Default)]
struct Num(i128);

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
}

/// A kept field's value unless it is a default (0, null, "", "N/A", [], [0, 0]).
fn kept(v: &Option<Box<RawValue>>) -> Option<serde_json::Value> {
    let text = v.as_ref()?.get().trim();
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

struct Ctx {
    raw: Raw,
    frames: Frames,
    packed: Vec<u32>,
}

impl Ctx {
    fn stack(&mut self, frames: &Option<Vec<JFrame>>) -> StackId {
        let Some(fs) = frames else {
            return StackId(0);
        };
        self.packed.clear();
        for f in fs {
            let f = match f {
                JFrame::Obj(f) => f,
                JFrame::Text(text) => {
                    let p = self.frames.frame_text(&mut self.raw.strings, text);
                    self.packed.push(p);
                    continue;
                }
            };
            let line = f.line.map_or(0, |l| l.i64());
            let fx = [
                &f.fx_node_op,
                &f.fx_node_name,
                &f.fx_node_target,
                &f.fx_original_trace,
            ];
            let p = if fx.iter().any(|x| x.is_some()) {
                let name = fx_name(&f.name, fx.map(|x| x.as_deref().unwrap_or("")));
                self.frames
                    .frame(&mut self.raw.strings, &f.filename, line, &name)
            } else {
                self.frames
                    .frame(&mut self.raw.strings, &f.filename, line, &f.name)
            };
            self.packed.push(p);
        }
        self.frames.stack(&mut self.raw.strings, &self.packed)
    }

    fn entry(&mut self, e: JEntry) -> u32 {
        let action = Action::parse(&e.action);
        if action == Action::Unknown {
            *self
                .raw
                .unknown_actions
                .entry(e.action.clone())
                .or_insert(0) += 1;
        }
        let stack = self.stack(&e.frames);
        let name = match nonempty(&e.user_metadata) {
            Some(serde_json::Value::String(s)) => self.raw.strings.intern(s),
            Some(v) => self.raw.strings.intern(&v.to_string()),
            None => StrId(0),
        };
        let mut extra = Extra::default();
        for (k, v) in [
            ("stream", &e.stream),
            ("pool_id", &e.pool_id),
            ("compile_context", &e.compile_context),
            ("forward_frames", &e.forward_frames),
        ] {
            if let Some(v) = kept(v) {
                if !v.as_str().is_some_and(is_placeholder_context) {
                    extra.put(k, v);
                }
            }
        }
        let r = self.raw.rows.len() as u32;
        self.raw.rows.push(Row {
            addr: e.addr.map_or(0, Num::u64),
            size: e.size.map_or(0, Num::u64),
            time_us: e.time_us.map_or(0, Num::i64),
            stack,
            name,
            action,
            has_time: e.time_us.is_some(),
        });
        if let Some(f) = e.device_free {
            self.raw.device_free.insert(r, f.u64());
        }
        if !extra.is_empty() {
            let x = extra.intern(&mut self.raw.strings);
            self.raw.row_extra.insert(r, x);
        }
        r
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
                        stack: self.stack(&b.frames),
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
                stack: self.stack(&s.frames),
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
        let r = self.0.entry(e);
        self.0.raw.host_rows.push(r);
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        while let Some(e) = s.next_element::<JEntry>()? {
            let r = self.0.entry(e);
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
            let r = self.0.entry(e);
            self.1.push(r);
        }
        Ok(())
    }
}

/// Reads a snapshot JSON document into [`Raw`].
pub fn read(r: impl Read, cpp_frames: bool) -> Result<Raw, FormatError> {
    let mut ctx = Ctx {
        raw: Raw::new(),
        frames: Frames::new(cpp_frames),
        packed: Vec::new(),
    };
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
