//! The headless report of one trace: the stable `summary --json` schema (DESIGN §7).

use super::live::{entry, LiveEntry};
use super::peak::{final_bytes, window_peak};
use super::trend::{trend, Trend};
use super::window_spec::Resolved;
use super::windows::{all_windows, Window};
use crate::index::Index;
use crate::trace::{Band, Trace};
use serde::Serialize;
use serde_json::{Map, Value};

/// How many live storages the summary lists.
pub const TOP_N: usize = 20;

/// Everything `summary` reports about one device's trace.
#[derive(Clone, Debug)]
pub struct Summary {
    pub source: String,
    pub format: String,
    pub device: String,
    pub events: u64,
    pub peak: Option<PeakReport>,
    pub reserved_peak: Option<u64>,
    pub reserved_peak_index: Option<u64>,
    /// The reserved peak is the initial state (before event 0).
    pub reserved_peak_at_start: bool,
    /// `allocator_settings` of a snapshot (JSON), None when the source has none.
    pub allocator_settings: Option<Value>,
    pub reserved_peak_source_index: Option<u64>,
    pub capacity: Option<u64>,
    pub final_bytes: u64,
    pub unmatched_frees: u64,
    /// False when the source names no allocation (whether a free matched is unknowable:
    /// `unmatched_frees` is then shown as unavailable, never 0).
    pub unmatched_frees_known: bool,
    pub skipped_lines: u64,
    pub warnings: Vec<String>,
    /// Facts about the source that do not put the figures in doubt (e.g. a snapshot without
    /// history is one instant).
    pub notes: Vec<String>,
    /// The warnings that say the figures may be wrong (a subset of `warnings`).
    pub doubtful: Vec<String>,
    /// Why the live set is unavailable (None: it is known).
    pub live_unavailable: Option<&'static str>,
    pub distributed: Option<crate::trace::Distributed>,
    pub windows: Vec<WindowReport>,
    pub bands_source: &'static str,
    pub time_available: bool,
    /// The measurement window the peak belongs to (None: the whole run).
    pub window: Option<WindowInfo>,
    pub trend: Trend,
}

/// The window a summary's peak was measured in, with its source indices.
#[derive(Clone, Debug)]
pub struct WindowInfo {
    pub spec: String,
    pub label: String,
    pub first_index: u64,
    pub last_index: u64,
    pub first_source_index: u64,
    pub last_source_index: u64,
}

/// The peak and the live set there.
#[derive(Clone, Debug)]
pub struct PeakReport {
    pub bytes: u64,
    /// Source index of the event after which the peak holds (0 when `at_start`).
    pub index: u64,
    /// The peak is the initial state, before the first event (`index` is then meaningless
    /// and the JSON says `"index": null, "at": "start"`).
    pub at_start: bool,
    /// The event's position in the source file (Kineto: in `traceEvents`).
    pub source_index: u64,
    pub time_us: Option<f64>,
    pub mark: Option<String>,
    pub bands: [u64; Band::COUNT],
    pub live_count: usize,
    pub live: Vec<LiveEntry>,
}

/// The peak of one window.
#[derive(Clone, Debug)]
pub struct WindowReport {
    pub kind: &'static str,
    pub name: String,
    pub first_index: u64,
    pub last_index: u64,
    pub first_source_index: u64,
    pub last_source_index: u64,
    pub peak_bytes: Option<u64>,
    pub peak_index: Option<u64>,
    pub peak_at_start: bool,
    pub peak_source_index: Option<u64>,
    pub peak_time_us: Option<f64>,
}

impl Summary {
    /// Builds the report of `trace` (indexed by `index`).
    pub fn build(trace: &Trace, index: &Index) -> Summary {
        Summary::build_in(trace, index, None)
    }

    /// Builds the report with the peak measured inside `window` (None: the whole run).
    pub fn build_in(trace: &Trace, index: &Index, window: Option<&Resolved>) -> Summary {
        let (lo, hi) = match window {
            Some(w) => (w.lo, w.hi),
            None => (
                crate::trace::Seq(0),
                crate::trace::Seq(index.len().saturating_sub(1) as u64),
            ),
        };
        let peak = (!index.is_empty())
            .then(|| window_peak(trace, index, lo, hi))
            .flatten()
            .map(|p| {
                let live_all = p.live(trace, index);
                let live_count = live_all.len();
                PeakReport {
                    bytes: p.bytes.0,
                    index: if p.at_start {
                        0
                    } else {
                        trace.event_number(p.at)
                    },
                    source_index: if p.at_start { 0 } else { trace.src_index(p.at) },
                    at_start: p.at_start,
                    // The initial state has no timestamp of its own.
                    time_us: (!p.at_start).then(|| trace.time_us(p.at)).flatten(),
                    mark: (!p.at_start)
                        .then(|| trace.enclosing_mark(p.at))
                        .flatten()
                        .map(|m| trace.mark_name(m).to_string()),
                    bands: p.bands.0,
                    live_count,
                    live: live_all
                        .iter()
                        .take(TOP_N)
                        .map(|&id| entry(trace, id, p.at))
                        .collect(),
                }
            });
        let windows = all_windows(trace, index)
            .into_iter()
            .map(|w: Window| WindowReport {
                kind: w.kind.name(),
                name: w.name,
                first_index: trace.event_number(w.lo),
                last_index: trace.event_number(w.hi),
                first_source_index: trace.src_index(w.lo),
                last_source_index: trace.src_index(w.hi),
                peak_bytes: w.peak.map(|p| p.bytes.0),
                peak_index: w
                    .peak
                    .filter(|p| !p.at_start)
                    .map(|p| trace.event_number(p.at)),
                peak_source_index: w
                    .peak
                    .filter(|p| !p.at_start)
                    .map(|p| trace.src_index(p.at)),
                peak_at_start: w.peak.is_some_and(|p| p.at_start),
                peak_time_us: w
                    .peak
                    .filter(|p| !p.at_start)
                    .and_then(|p| trace.time_us(p.at)),
            })
            .collect();
        let rp = index.reserved_peak_at();
        Summary {
            source: trace.source.clone(),
            format: trace.format.to_string(),
            device: trace.device.clone(),
            events: index.len() as u64,
            peak,
            reserved_peak: rp.map(|(b, _)| b.0),
            reserved_peak_index: rp.and_then(|(_, at)| at).map(|at| trace.event_number(at)),
            reserved_peak_source_index: rp.and_then(|(_, at)| at).map(|at| trace.src_index(at)),
            reserved_peak_at_start: rp.is_some_and(|(_, at)| at.is_none()),
            allocator_settings: trace
                .meta
                .iter()
                .find(|(k, _)| k == "allocator_settings")
                .and_then(|(_, v)| serde_json::from_str(v).ok()),
            capacity: trace.capacity.map(|c| c.0),
            final_bytes: final_bytes(index).0,
            unmatched_frees: trace.unmatched_frees,
            unmatched_frees_known: trace.identities_known(),
            skipped_lines: trace.skipped_lines,
            warnings: trace.warnings.clone(),
            notes: trace
                .meta
                .iter()
                .filter(|(k, _)| k == "note")
                .map(|(_, v)| v.clone())
                .collect(),
            doubtful: trace.doubtful_warnings().map(String::from).collect(),
            live_unavailable: (!trace.identities_known()).then_some(crate::trace::NO_IDENTITIES),
            distributed: trace.distributed.clone(),
            windows,
            bands_source: trace.bands_source.name(),
            time_available: trace.clock.has_time(),
            window: window.map(|w| WindowInfo {
                spec: w.spec.clone(),
                label: w.label.clone(),
                first_index: trace.event_number(w.lo),
                last_index: trace.event_number(w.hi),
                first_source_index: trace.src_index(w.lo),
                last_source_index: trace.src_index(w.hi),
            }),
            trend: trend(trace, index),
        }
    }

    /// The DESIGN §7 JSON object (extra keys allowed, listed keys always present).
    pub fn to_json(&self, devices: &[String]) -> Value {
        let mut o = Map::new();
        o.insert("source".into(), self.source.clone().into());
        o.insert("format".into(), self.format.clone().into());
        o.insert("devices".into(), devices.to_vec().into());
        o.insert("device".into(), self.device.clone().into());
        o.insert("events".into(), self.events.into());
        o.insert("axis".into(), "event".into());
        o.insert(
            "peak".into(),
            match &self.peak {
                None => Value::Null,
                Some(p) => {
                    let mut po = Map::new();
                    po.insert("bytes".into(), p.bytes.into());
                    if p.at_start {
                        po.insert("index".into(), Value::Null);
                        po.insert("source_index".into(), Value::Null);
                        po.insert("at".into(), "start".into());
                    } else {
                        po.insert("index".into(), p.index.into());
                        po.insert("source_index".into(), p.source_index.into());
                        po.insert("at".into(), "event".into());
                    }
                    po.insert("time_us".into(), time_json(p.time_us));
                    po.insert(
                        "mark".into(),
                        p.mark.clone().map_or(Value::Null, Value::from),
                    );
                    let mut bands = Map::new();
                    for b in Band::ALL {
                        bands.insert(b.name().into(), p.bands[b.idx()].into());
                    }
                    po.insert("bands".into(), bands.into());
                    po.insert("bands_source".into(), self.bands_source.into());
                    // Without identities the live set is unknown: null, never an empty list.
                    match self.live_unavailable {
                        Some(why) => {
                            po.insert("live_count".into(), Value::Null);
                            po.insert("live".into(), Value::Null);
                            po.insert("live_unavailable".into(), why.into());
                        }
                        None => {
                            po.insert("live_count".into(), p.live_count.into());
                            po.insert(
                                "live".into(),
                                p.live.iter().map(live_json).collect::<Vec<_>>().into(),
                            );
                            po.insert("live_unavailable".into(), Value::Null);
                        }
                    }
                    po.into()
                }
            },
        );
        o.insert(
            "window".into(),
            match &self.window {
                None => serde_json::json!({"spec": "all", "label": "whole run"}),
                Some(w) => serde_json::json!({
                    "spec": w.spec, "label": w.label,
                    "first_index": w.first_index, "last_index": w.last_index,
                    "first_source_index": w.first_source_index,
                    "last_source_index": w.last_source_index,
                }),
            },
        );
        o.insert("reserved_peak".into(), opt(self.reserved_peak));
        o.insert("reserved_peak_index".into(), opt(self.reserved_peak_index));
        o.insert(
            "reserved_peak_at".into(),
            match (self.reserved_peak, self.reserved_peak_at_start) {
                (None, _) => Value::Null,
                (Some(_), true) => "start".into(),
                (Some(_), false) => "event".into(),
            },
        );
        o.insert(
            "allocator_settings".into(),
            self.allocator_settings.clone().unwrap_or(Value::Null),
        );
        o.insert(
            "reserved_peak_source_index".into(),
            opt(self.reserved_peak_source_index),
        );
        o.insert("capacity".into(), opt(self.capacity));
        o.insert("final_bytes".into(), self.final_bytes.into());
        o.insert(
            "unmatched_frees".into(),
            opt(self.unmatched_frees_known.then_some(self.unmatched_frees)),
        );
        o.insert("skipped_lines".into(), self.skipped_lines.into());
        o.insert("warnings".into(), self.warnings.clone().into());
        o.insert("notes".into(), self.notes.clone().into());
        o.insert("doubtful_warnings".into(), self.doubtful.clone().into());
        o.insert(
            "distributed".into(),
            match &self.distributed {
                None => Value::Null,
                Some(d) => serde_json::json!({
                    "rank": d.rank, "world_size": d.world_size, "backend": d.backend,
                }),
            },
        );
        o.insert(
            "windows".into(),
            self.windows
                .iter()
                .map(|w| {
                    serde_json::json!({
                        "kind": w.kind,
                        "name": w.name,
                        "first_index": w.first_index,
                        "last_index": w.last_index,
                        "first_source_index": w.first_source_index,
                        "last_source_index": w.last_source_index,
                        "peak_bytes": w.peak_bytes,
                        "peak_index": w.peak_index,
                        "peak_at": if w.peak_bytes.is_none() { None } else if w.peak_at_start { Some("start") } else { Some("event") },
                        "peak_source_index": w.peak_source_index,
                        "peak_time_us": time_json(w.peak_time_us),
                    })
                })
                .collect::<Vec<_>>()
                .into(),
        );
        o.insert("steps".into(), trend_steps_json(&self.trend));
        o.insert("trend".into(), trend_json(&self.trend));
        o.into()
    }
}

/// The per-step table: baseline (bytes live at the step's start) and peak.
pub fn trend_steps_json(t: &Trend) -> Value {
    t.steps
        .iter()
        .map(|s| {
            serde_json::json!({
                "name": s.name, "baseline": s.baseline.0, "peak": s.peak.0,
            })
        })
        .collect::<Vec<_>>()
        .into()
}

/// Baseline growth after the warm-up step and the surviving allocations when it rises.
pub fn trend_json(t: &Trend) -> Value {
    serde_json::json!({
        "growth": t.growth,
        "growth_bytes": t.growth_bytes.map(|d| d as i64),
        "rising": t.rising,
        "probable_leak": t.rising,
        "survivors": t.survivors.iter().map(|s| serde_json::json!({
            "name": s.name, "frame": s.frame, "bytes": s.bytes.0, "count": s.count, "steps": s.steps,
        })).collect::<Vec<_>>(),
    })
}

fn opt(v: Option<u64>) -> Value {
    v.map_or(Value::Null, Value::from)
}

/// Times print as integers when whole (snapshot µs), else as exact decimals (Kineto).
pub fn time_json(t: Option<f64>) -> Value {
    match t {
        None => Value::Null,
        Some(t) if t.fract() == 0.0 && t.abs() < 9.0e15 => Value::from(t as i64),
        Some(t) => serde_json::Number::from_f64(t).map_or(Value::Null, Value::Number),
    }
}

fn live_json(e: &LiveEntry) -> Value {
    #[derive(Serialize)]
    struct L<'a> {
        bytes: u64,
        band: &'a str,
        category: &'a str,
        name: &'a str,
        frame: &'a str,
        views: usize,
        retained_by_view: bool,
        inferred: bool,
    }
    serde_json::to_value(L {
        bytes: e.bytes.0,
        band: e.band.name(),
        category: e.category,
        name: &e.name,
        frame: &e.frame,
        views: e.views,
        retained_by_view: e.retained_by_view,
        inferred: e.inferred,
    })
    .unwrap_or(Value::Null)
}
