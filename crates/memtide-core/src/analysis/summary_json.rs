//! The `summary --json` schema (docs/summary-json.md) as serde-derived structs: one struct per JSON
//! object, fields in the order the keys are written. Built from a [`Summary`]; a figure that
//! cannot be known is `null`, never 0.
//!
//! Written as it is serialised ([`write_document`]: no JSON value tree of the whole report
//! is held), through `crate::clip::ClipFormatter`: every string is at most
//! `crate::clip::TEXT_CAP` (1,024) bytes, a longer one its head and `… (N bytes)`, N its
//! full length (a frame shortens its file and its name, keeping its line). `windows` lists
//! every window of a kind that has at most 500 (2 × [`super::summary::WINDOW_ENDS`]); a kind
//! with more lists its first and last 250 and every window holding the peak, and
//! `windows_omitted` (present only then) counts the windows left out. `windows_folded`
//! (present only when a phase name repeats) folds every phase window by name. `steps` lists every
//! step (the text and Markdown reports list the first and last 250 rows and say how many
//! they leave out).

use super::live::LiveEntry;
use super::persistent::Persistent;
use super::summary::{Summary, WindowReport};
use super::tree::TreeNode;
use super::trend::{StepRow, Trend};
use crate::trace::{Band, DeviceLogInfo};
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::Value;

/// One device's report, as `summary --json` prints it.
#[derive(Serialize)]
pub struct SummaryJson<'a> {
    pub source: &'a str,
    pub format: &'a str,
    /// Every device of the file, in the document's top-level object only: the objects of
    /// `per_device` leave it out (each repeating the whole list made the output grow with
    /// the square of the devices: 86 MB for a trace of 2,000 devices).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub devices: Option<&'a [String]>,
    pub device: &'a str,
    pub events: u64,
    /// The index space every `index` refers to (always `"event"`).
    pub axis: &'static str,
    pub peak: Option<PeakJson<'a>>,
    pub window: WindowJson<'a>,
    pub reserved_peak: Option<u64>,
    pub reserved_peak_index: Option<u64>,
    /// `"start"` (the initial state), `"event"`, or null without a reserved figure.
    pub reserved_peak_at: Option<&'static str>,
    pub allocator_settings: Option<&'a Value>,
    pub reserved_peak_source_index: Option<u64>,
    pub capacity: Option<u64>,
    pub final_bytes: u64,
    /// Null when the source names no allocation (whether a free matched is unknowable).
    pub unmatched_frees: Option<u64>,
    pub skipped_lines: u64,
    pub warnings: &'a [String],
    pub notes: &'a [String],
    pub doubtful_warnings: &'a [String],
    pub distributed: Option<DistributedJson<'a>>,
    pub windows: Vec<WindowPeakJson<'a>>,
    /// Windows not listed in `windows` (left out when every window is listed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub windows_omitted: Option<u64>,
    /// Phase windows folded by name (present only when a phase name repeats): every phase
    /// name once, with its count and the window of its highest peak.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub windows_folded: Vec<FoldedJson<'a>>,
    pub steps: StepsJson<'a>,
    pub trend: TrendJson<'a>,
    /// The run's measurement boundary (diff --json's per-side `boundary`); null when the
    /// trace holds no allocation.
    pub boundary: Option<&'a super::boundary::Boundary>,
    /// How `--device-log` was aligned (absent without one, so the schema is unchanged).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_log: Option<DeviceLogJson<'a>>,
    /// How `--nsys` was put on the trace (absent without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nsys: Option<&'a crate::trace::NsysInfo>,
    /// Every OOM explained (left out when the trace has none).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub ooms: &'a [crate::allocator::OomExplanation],
    /// Snapshots: the totals of the final `segments` (left out for other sources).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocator_at_end: Option<&'a crate::allocator::AllocatorAtEnd>,
    /// Snapshots whose history starts late: bounds on the peak (left out otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history_bounds: Option<&'a super::bounds::HistoryBounds>,
    /// The serving budget (docs/serving.md); null when nothing in the trace is serving memory.
    pub budget: Option<&'a super::serving::ServingBudget>,
}

/// The device log's alignment report and whether the peak lies inside the log.
#[derive(Serialize)]
pub struct DeviceLogJson<'a> {
    #[serde(flatten)]
    pub info: &'a DeviceLogInfo,
    /// Whether the peak's external bytes come from the log (its instant lies between the
    /// first and last sample).
    pub peak_covered: Option<bool>,
}

/// The peak and the live set there.
#[derive(Serialize)]
pub struct PeakJson<'a> {
    pub bytes: u64,
    /// Null when the peak is the initial state (`"at": "start"`).
    pub index: Option<u64>,
    pub source_index: Option<u64>,
    pub at: &'static str,
    pub time_us: Micros,
    pub mark: Option<&'a str>,
    /// Bytes per band; `external` is null when no source of external memory was read.
    pub bands: BandBytes,
    /// The external band by source (`{"nccl": …, "cudnn": …}`, biggest first); null when
    /// external memory is unavailable.
    pub external_by_source: Option<SourceBytes<'a>>,
    pub bands_source: &'a str,
    /// Null (with `live_unavailable` saying why) when the source names no allocation.
    pub live_count: Option<usize>,
    pub live: Option<Vec<LiveJson<'a>>>,
    pub live_unavailable: Option<&'a str>,
    /// The live set as a stack tree of user frames (bounded: `TREE_DEPTH` levels,
    /// `TREE_WIDTH` children per node); null when the live set is unavailable.
    pub tree: Option<TreeJson<'a>>,
    /// The persistent band split by category; null when nothing persistent is live or the
    /// live set is unavailable.
    pub persistent: Option<PersistentJson<'a>>,
}

/// One node of `peak.tree`: `bytes = self_bytes + Σ children.bytes + omitted_bytes`. A
/// `frame` may stand for several frames of a stack (see [`super::tree`]): `train.py:3 f
/// (×150,000)` for a run of one frame (a recursion), `… N frames …` for the middle of a path
/// longer than 128 levels.
#[derive(Serialize)]
pub struct TreeJson<'a> {
    pub frame: &'a str,
    pub bytes: u64,
    pub count: usize,
    pub self_bytes: u64,
    pub omitted_bytes: u64,
    pub children: Vec<TreeJson<'a>>,
}

impl<'a> TreeJson<'a> {
    fn new(n: &'a TreeNode) -> TreeJson<'a> {
        TreeJson {
            frame: &n.frame,
            bytes: n.bytes,
            count: n.count,
            self_bytes: n.self_bytes,
            omitted_bytes: n.omitted_bytes,
            children: n.children.iter().map(TreeJson::new).collect(),
        }
    }
}

/// `peak.persistent`: null figures where the source does not split them.
#[derive(Serialize)]
pub struct PersistentJson<'a> {
    pub total: u64,
    pub params: Option<u64>,
    pub grads: Option<u64>,
    pub optimizer: Option<u64>,
    pub buffers: Option<u64>,
    pub other: u64,
    pub private_pool: u64,
    pub param_count: Option<u64>,
    pub bytes_per_param: Option<f64>,
    pub source: &'a str,
    pub model: &'a str,
}

impl<'a> PersistentJson<'a> {
    pub fn new(p: &'a Persistent) -> PersistentJson<'a> {
        PersistentJson {
            total: p.total,
            params: p.params,
            grads: p.grads,
            optimizer: p.optimizer,
            buffers: p.buffers,
            other: p.other,
            private_pool: p.private_pool,
            param_count: p.param_count,
            bytes_per_param: p.bytes_per_param,
            source: p.source,
            model: &p.model,
        }
    }
}

/// One live storage at the peak.
#[derive(Serialize)]
pub struct LiveJson<'a> {
    /// Bytes the storage holds (a CUDA snapshot: the allocator's block, as
    /// `memory_allocated()` counts it).
    pub bytes: u64,
    /// What the caller asked for, only where it differs from `bytes`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_bytes: Option<u64>,
    pub band: &'a str,
    pub category: &'a str,
    pub name: &'a str,
    pub frame: &'a str,
    pub views: usize,
    pub retained_by_view: bool,
    /// Only where `retained_by_view`: the bytes of the views that keep the storage alive, null
    /// when the file does not record them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub view_bytes: Option<Option<u64>>,
    pub inferred: bool,
    /// The innermost frame that is user code, `file.py:123 function`; "" when none.
    pub user_frame: &'a str,
    /// The innermost frame's function or op (`relu`, `aten::addmm`); "" when none.
    pub innermost: &'a str,
    /// What to call the row: `name`, else the module path, else the op/function.
    pub label: &'a str,
    /// torch.compile: the compiled region (`compile_context`) and FX node; "" when none.
    pub compiled: &'a str,
    /// A backward allocation's forward line (from `forward_frames`); "" when none.
    pub forward_frame: &'a str,
}

/// The measurement window of the peak (`{"spec":"all","label":"whole run"}` for the run).
#[derive(Serialize)]
pub struct WindowJson<'a> {
    pub spec: &'a str,
    pub label: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_index: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_index: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_source_index: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_source_index: Option<u64>,
}

/// `distributedInfo` of a snapshot.
#[derive(Serialize)]
pub struct DistributedJson<'a> {
    pub rank: Option<u64>,
    pub world_size: Option<u64>,
    pub backend: Option<&'a str>,
}

/// The peak of one window (a step, a mark span).
#[derive(Serialize)]
pub struct WindowPeakJson<'a> {
    pub kind: &'a str,
    pub name: &'a str,
    pub first_index: u64,
    pub last_index: u64,
    pub first_source_index: u64,
    pub last_source_index: u64,
    pub peak_bytes: Option<u64>,
    pub peak_index: Option<u64>,
    pub peak_at: Option<&'static str>,
    pub peak_source_index: Option<u64>,
    pub peak_time_us: Micros,
}

/// The phase windows of one name: the highest one's figures, and how many there are.
#[derive(Serialize)]
pub struct FoldedJson<'a> {
    #[serde(flatten)]
    pub highest: WindowPeakJson<'a>,
    pub count: u64,
}

/// One row of the per-step table: bytes live at the step's start, and its peak.
#[derive(Serialize)]
pub(crate) struct StepJson<'a> {
    pub name: &'a str,
    pub baseline: u64,
    pub peak: u64,
}

/// Baseline growth after the warm-up step and the survivors when it rises.
#[derive(Serialize)]
pub struct TrendJson<'a> {
    pub growth: Option<f64>,
    pub growth_bytes: Option<i64>,
    pub rising: bool,
    pub probable_leak: bool,
    pub survivors: Vec<SurvivorJson<'a>>,
}

/// Allocations made in the steps and still alive when the baseline rises.
#[derive(Serialize)]
pub struct SurvivorJson<'a> {
    pub name: &'a str,
    pub frame: &'a str,
    pub bytes: u64,
    pub count: usize,
    pub steps: Vec<&'a str>,
    /// The user frame of the group's first allocation; "" when none.
    pub user_frame: &'a str,
}

/// A time in µs: an integer when whole (snapshot µs), else the exact decimal (Kineto); null
/// when the source has no clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Micros(pub Option<f64>);

impl Serialize for Micros {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            None => s.serialize_none(),
            Some(t) if t.fract() == 0.0 && t.abs() < 9.0e15 => s.serialize_i64(t as i64),
            Some(t) if t.is_finite() => s.serialize_f64(t),
            Some(_) => s.serialize_none(),
        }
    }
}

/// The JSON form (`123`, `1.5`), or `null` without a time.
impl std::fmt::Display for Micros {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let text = serde_json::to_string(self).map_err(|_| std::fmt::Error)?;
        f.write_str(&text)
    }
}

/// Bytes per band, keyed by band name in band order; a band is `null` where its bytes are
/// not known (the second field false at its index: [`Summary::band_known`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BandBytes(pub [u64; Band::COUNT], pub [bool; Band::COUNT]);

impl Serialize for BandBytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(Band::COUNT))?;
        for b in Band::ALL {
            if !self.1[b.idx()] {
                m.serialize_entry(b.name(), &Option::<u64>::None)?;
            } else {
                m.serialize_entry(b.name(), &self.0[b.idx()])?;
            }
        }
        m.end()
    }
}

/// Bytes per source, keyed by source name, in the order given.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SourceBytes<'a>(pub &'a [(String, u64)]);

impl Serialize for SourceBytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'a> SummaryJson<'a> {
    /// The schema view of `s`; `devices` lists every device of the file.
    pub fn new(s: &'a Summary, devices: &'a [String]) -> SummaryJson<'a> {
        SummaryJson {
            source: &s.source,
            format: &s.format,
            devices: Some(devices),
            device: &s.device,
            events: s.events,
            axis: "event",
            peak: s.peak.as_ref().map(|p| PeakJson {
                bytes: p.bytes,
                index: (!p.at_start).then_some(p.index),
                source_index: (!p.at_start).then_some(p.source_index),
                at: if p.at_start { "start" } else { "event" },
                time_us: Micros(p.time_us),
                mark: p.mark.as_deref(),
                bands: BandBytes(p.bands, Band::ALL.map(|b| s.band_known(b))),
                external_by_source: p.external_by_source.as_deref().map(SourceBytes),
                bands_source: s.bands_source,
                live_count: s.live_unavailable.is_none().then_some(p.live_count),
                live: s
                    .live_unavailable
                    .is_none()
                    .then(|| p.live.iter().map(LiveJson::new).collect()),
                live_unavailable: s.live_unavailable,
                tree: s.live_unavailable.is_none().then(|| TreeJson::new(&p.tree)),
                persistent: p
                    .persistent
                    .as_ref()
                    .filter(|_| s.live_unavailable.is_none())
                    .map(PersistentJson::new),
            }),
            window: match &s.window {
                None => WindowJson {
                    spec: "all",
                    label: "whole run",
                    first_index: None,
                    last_index: None,
                    first_source_index: None,
                    last_source_index: None,
                },
                Some(w) => WindowJson {
                    spec: &w.spec,
                    label: &w.label,
                    first_index: Some(w.first_index),
                    last_index: Some(w.last_index),
                    first_source_index: Some(w.first_source_index),
                    last_source_index: Some(w.last_source_index),
                },
            },
            reserved_peak: s.reserved_peak,
            reserved_peak_index: s.reserved_peak_index,
            reserved_peak_at: s.reserved_peak.map(|_| {
                if s.reserved_peak_at_start {
                    "start"
                } else {
                    "event"
                }
            }),
            allocator_settings: s.allocator_settings.as_ref(),
            reserved_peak_source_index: s.reserved_peak_source_index,
            capacity: s.capacity,
            final_bytes: s.final_bytes,
            unmatched_frees: s.unmatched_frees_known.then_some(s.unmatched_frees),
            skipped_lines: s.skipped_lines,
            warnings: &s.warnings,
            notes: &s.notes,
            doubtful_warnings: &s.doubtful,
            distributed: s.distributed.as_ref().map(|d| DistributedJson {
                rank: d.rank,
                world_size: d.world_size,
                backend: d.backend.as_deref(),
            }),
            windows: s.windows.iter().map(WindowPeakJson::new).collect(),
            windows_omitted: (s.windows_omitted > 0).then_some(s.windows_omitted),
            windows_folded: if s.windows_folded.iter().any(|f| f.count > 1) {
                s.windows_folded
                    .iter()
                    .map(|f| FoldedJson {
                        count: f.count,
                        highest: WindowPeakJson::new(&f.highest),
                    })
                    .collect()
            } else {
                Vec::new()
            },
            steps: StepsJson(&s.trend.steps),
            trend: TrendJson::new(&s.trend),
            boundary: s.boundary.as_ref(),
            device_log: s.device_log.as_ref().map(|info| DeviceLogJson {
                info,
                peak_covered: s.device_log_peak_covered,
            }),
            nsys: s.nsys.as_ref(),
            ooms: &s.ooms,
            allocator_at_end: s.allocator_at_end.as_ref(),
            history_bounds: s.history_bounds.as_ref(),
            budget: s.budget.as_ref(),
        }
    }
}

/// The whole `summary FILE --json` document: the shown device's object, with `per_device`
/// (every device's object) when the trace has several devices and none was picked.
#[derive(Serialize)]
pub struct DocumentJson<'a> {
    #[serde(flatten)]
    pub main: SummaryJson<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_device: Option<Vec<SummaryJson<'a>>>,
}

impl<'a> DocumentJson<'a> {
    /// The document of `main` among `summaries` (`devices`: every device of the file).
    pub fn new(
        main: &'a Summary,
        summaries: &'a [Summary],
        devices: &'a [String],
        device_picked: bool,
    ) -> DocumentJson<'a> {
        DocumentJson {
            main: SummaryJson::new(main, devices),
            per_device: (summaries.len() > 1 && !device_picked).then(|| {
                // Each entry leaves the device list to the top-level object.
                summaries
                    .iter()
                    .map(|s| SummaryJson {
                        devices: None,
                        ..SummaryJson::new(s, devices)
                    })
                    .collect()
            }),
        }
    }
}

/// Writes `doc` to `w` as `summary --json` prints it (indented, strings shortened, see the
/// module's doc), as it is serialised.
pub fn write_document<W: std::io::Write>(w: W, doc: &DocumentJson<'_>) -> serde_json::Result<()> {
    crate::clip::to_json_writer(w, doc, true)
}

impl<'a> LiveJson<'a> {
    fn new(e: &'a LiveEntry) -> LiveJson<'a> {
        LiveJson {
            bytes: e.bytes.0,
            requested_bytes: e.requested.map(|r| r.0),
            band: e.band.name(),
            category: e.category,
            name: &e.name,
            frame: &e.frame,
            views: e.views,
            retained_by_view: e.retained_by_view,
            view_bytes: e.retained.map(|r| r.view_bytes().map(|b| b.0)),
            inferred: e.inferred,
            user_frame: &e.user_frame,
            innermost: &e.innermost,
            label: &e.label,
            compiled: &e.compiled,
            forward_frame: &e.forward_frame,
        }
    }
}

impl<'a> WindowPeakJson<'a> {
    fn new(w: &'a WindowReport) -> WindowPeakJson<'a> {
        WindowPeakJson {
            kind: w.kind,
            name: &w.name,
            first_index: w.first_index,
            last_index: w.last_index,
            first_source_index: w.first_source_index,
            last_source_index: w.last_source_index,
            peak_bytes: w.peak_bytes,
            peak_index: w.peak_index,
            peak_at: w
                .peak_bytes
                .map(|_| if w.peak_at_start { "start" } else { "event" }),
            peak_source_index: w.peak_source_index,
            peak_time_us: Micros(w.peak_time_us),
        }
    }
}

/// The per-step table, one `StepJson` per step, made as it is written.
pub struct StepsJson<'a>(pub &'a [StepRow]);

impl Serialize for StepsJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|r| StepJson {
            name: &r.name,
            baseline: r.baseline.0,
            peak: r.peak.0,
        }))
    }
}

impl<'a> TrendJson<'a> {
    /// The trend object of `t`.
    pub fn new(t: &'a Trend) -> TrendJson<'a> {
        TrendJson {
            growth: t.growth,
            growth_bytes: t.growth_bytes.map(|d| d as i64),
            rising: t.rising,
            probable_leak: t.rising,
            survivors: t
                .survivors
                .iter()
                .map(|s| SurvivorJson {
                    name: &s.name,
                    frame: &s.frame,
                    bytes: s.bytes.0,
                    count: s.count,
                    steps: s.steps.iter().map(|x| &**x).collect(),
                    user_frame: &s.user_frame,
                })
                .collect(),
        }
    }
}
