//! Writes any trace as memtide JSONL v1 (for `replay` and conversions).
//!
//! Storages become `alloc`/`free` (segments `reserve`/`unreserve`), marks become `mark`/`oom`.
//! Timestamps are made strictly increasing (ns clock) so that the reader's "frees first at
//! equal t" rule cannot reorder what the source recorded in order. Storages live from the
//! start are allocated first, at the first timestamp.

use crate::trace::{AllocId, MarkKind, Seq, StorageKind, Trace};
use std::io::{self, Write};

/// Renders a trace as JSONL lines, one event at a time (so callers can pace the output).
pub struct JsonlWriter<'a> {
    trace: &'a Trace,
    pos: usize,
    change: usize,
    mark: usize,
    last_t: i64,
    started: bool,
}

impl<'a> JsonlWriter<'a> {
    pub fn new(trace: &'a Trace) -> Self {
        JsonlWriter {
            trace,
            pos: 0,
            change: 0,
            mark: 0,
            last_t: i64::MIN,
            started: false,
        }
    }

    /// Whether every event has been written.
    pub fn done(&self) -> bool {
        self.started && self.pos >= self.trace.len()
    }

    fn t(&mut self, ts: i64) -> i64 {
        let t = ts.max(self.last_t.saturating_add(1)).max(0);
        self.last_t = t;
        t
    }

    /// Writes the header and the storages live from the start.
    pub fn header(&mut self, out: &mut impl Write) -> io::Result<()> {
        let tr = self.trace;
        let mut h = serde_json::Map::new();
        h.insert("memtide".into(), 1.into());
        h.insert("device".into(), tr.device.clone().into());
        h.insert("clock".into(), "ns".into());
        if let Some(c) = tr.capacity {
            h.insert("capacity".into(), c.0.into());
        }
        h.insert("source".into(), tr.source.clone().into());
        h.insert("converted_from".into(), tr.format.into());
        writeln!(out, "{}", serde_json::Value::Object(h))?;
        let t0 = tr.timestamps().next().unwrap_or(0);
        for i in 0..tr.storage_count() {
            let id = AllocId(i as u32);
            if tr.is_from_start(id) {
                let t = self.t(t0);
                self.open_line(out, t, id)?;
            }
        }
        self.started = true;
        Ok(())
    }

    fn open_line(&self, out: &mut impl Write, t: i64, id: AllocId) -> io::Result<()> {
        let tr = self.trace;
        let mut o = serde_json::Map::new();
        o.insert("t".into(), t.into());
        match tr.storage_kind(id) {
            StorageKind::Segment => {
                o.insert("op".into(), "reserve".into());
                o.insert("id".into(), id.0.into());
                o.insert("size".into(), tr.size(id).0.into());
            }
            StorageKind::Block => {
                o.insert("op".into(), "alloc".into());
                o.insert("id".into(), id.0.into());
                o.insert("size".into(), tr.size(id).0.into());
                let cat = tr.category(id);
                if cat != crate::trace::Category::Unknown {
                    o.insert("cat".into(), cat.name().into());
                }
                if !tr.name(id).is_empty() {
                    o.insert("name".into(), tr.name(id).into());
                }
                let stack = tr.stack(id);
                if !stack.is_empty() {
                    o.insert("stack".into(), stack.into());
                }
            }
        }
        writeln!(out, "{}", serde_json::Value::Object(o))
    }

    /// Writes the next source event (possibly several lines, or none for events that change
    /// nothing). Returns false once the trace is exhausted.
    pub fn next_event(&mut self, out: &mut impl Write) -> io::Result<bool> {
        let tr = self.trace;
        if self.pos >= tr.len() {
            return Ok(false);
        }
        let at = Seq(self.pos as u64);
        let ts = tr.ts(at).0;
        while let Some(ch) = tr.changes.get(self.change) {
            if ch.at() != at {
                break;
            }
            let t = self.t(ts);
            if ch.open() {
                self.open_line(out, t, ch.storage())?;
            } else {
                let op = match tr.storage_kind(ch.storage()) {
                    StorageKind::Segment => "unreserve",
                    StorageKind::Block => "free",
                };
                writeln!(
                    out,
                    "{{\"t\":{t},\"op\":\"{op}\",\"id\":{}}}",
                    ch.storage().0
                )?;
            }
            self.change += 1;
        }
        while let Some(m) = tr.marks.get(self.mark) {
            if m.at != at {
                break;
            }
            let t = self.t(ts);
            let name = serde_json::Value::from(tr.mark_name(m));
            match m.kind {
                MarkKind::Oom => {
                    let size = m.size.map_or(0, |b| b.0);
                    match m.free {
                        Some(f) => writeln!(out, "{{\"t\":{t},\"op\":\"oom\",\"size\":{size},\"free\":{},\"name\":{name}}}", f.0)?,
                        None => writeln!(out, "{{\"t\":{t},\"op\":\"oom\",\"size\":{size},\"name\":{name}}}")?,
                    }
                }
                k => {
                    let kind = match k {
                        MarkKind::Step | MarkKind::Phase | MarkKind::ResetPeak | MarkKind::Note => {
                            k.name()
                        }
                        _ => "note",
                    };
                    writeln!(
                        out,
                        "{{\"t\":{t},\"op\":\"mark\",\"name\":{name},\"kind\":\"{kind}\"}}"
                    )?;
                }
            }
            self.mark += 1;
        }
        self.pos += 1;
        Ok(true)
    }

    /// Writes everything.
    pub fn write_all(mut self, out: &mut impl Write) -> io::Result<()> {
        self.header(out)?;
        while self.next_event(out)? {}
        Ok(())
    }
}
