//! The headless report of one trace (`summary`); its JSON form is [`super::summary_json`].

use super::frames::{FrameRules, FrameView};
use super::live::{entry_in, LiveEntry};
use super::peak::{final_bytes, window_peak};
use super::persistent::{persistent, Persistent};
use super::summary_json::SummaryJson;
use super::tree::{stack_tree, TreeFrames, TreeNode};
use super::trend::{trend, Trend};
use super::window_spec::Resolved;
use super::windows::{each_window, Window, WindowKind};
use crate::index::Index;
use crate::trace::units::grouped;
use crate::trace::{Band, DeviceLogInfo, Trace};
use serde_json::Value;

/// How many live storages the summary lists.
pub(crate) const TOP_N: usize = 20;
/// Levels of `peak.tree` below its root.
pub(crate) const TREE_DEPTH: usize = 6;
/// Children kept per node of `peak.tree` (the biggest; the rest counted as omitted).
pub(crate) const TREE_WIDTH: usize = 5;
/// Windows of one kind listed at each end when a run has more than twice as many (the
/// windows holding the peak are listed too; the rest are counted in `windows_omitted`).
pub const WINDOW_ENDS: usize = 250;

/// How the summary reads frames, and what it measures.
#[derive(Clone, Debug)]
pub struct SummaryOptions {
    /// The tree's levels: user frames (default) or every frame.
    pub tree_frames: TreeFrames,
    /// Measure the run's boundary ([`Summary::bounded`]: one more pass over the storages;
    /// the Markdown report, which does not show it, skips it). Default: yes.
    pub boundary: bool,
    /// Whether each OOM's fix list is replayed ([`FixReplay`]). Default: for histories of at
    /// most [`FIX_REPLAY_ENTRIES`] entries.
    pub fixes: FixReplay,
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions {
            tree_frames: TreeFrames::default(),
            boundary: true,
            fixes: FixReplay::default(),
        }
    }
}

/// The history length above which `summary` leaves an OOM's fix list to `--fixes`: each
/// allocator setting is a replay of the whole history, five of them together costing more
/// than everything else the summary computes (about 90 ns an entry each on this project's
/// machine), and a million entries keeps that under half a second.
pub const FIX_REPLAY_ENTRIES: usize = 1_000_000;

/// When an OOM's fix list is replayed (every allocator setting from the start of the
/// history, [`crate::allocator::OomExplanation::fixes`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FixReplay {
    /// For a history of at most this many entries; a longer one's OOMs are explained from
    /// the state at each OOM alone, their fix list left to be asked for
    /// ([`crate::allocator::OomExplanation::fixes_deferred`] says so).
    UpTo(usize),
    /// Whatever the history's length (`summary --fixes`, the explorer's OOM panel, `check`).
    Always,
}

impl Default for FixReplay {
    fn default() -> Self {
        FixReplay::UpTo(FIX_REPLAY_ENTRIES)
    }
}

impl FixReplay {
    /// As a `--fixes` flag asks: [`FixReplay::Always`] when given, else the default.
    pub fn from_flag(fixes: bool) -> FixReplay {
        match fixes {
            true => FixReplay::Always,
            false => FixReplay::default(),
        }
    }

    /// Whether a history of `entries` entries gets its fix list replayed.
    pub fn replays(self, entries: usize) -> bool {
        match self {
            FixReplay::UpTo(n) => entries <= n,
            FixReplay::Always => true,
        }
    }
}

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
    /// The windows listed (all, or each kind's first and last [`WINDOW_ENDS`] and those
    /// holding the peak).
    pub windows: Vec<WindowReport>,
    /// Windows of the run not in `windows`.
    pub windows_omitted: u64,
    /// Every phase window folded by name (a server's `CompiledFxGraph` calls, each
    /// capture's annotation): one row per phase name, in order of first appearance, with
    /// its count and the window of the highest peak. Counts every phase window of the run,
    /// those left out of `windows` too.
    pub windows_folded: Vec<FoldedWindows>,
    pub bands_source: &'static str,
    pub time_available: bool,
    /// The file's time origin (µs, the file's clock): its earliest event over all its
    /// devices, which relative times count from; None without a clock.
    pub start_time_us: Option<f64>,
    /// The measurement window the peak belongs to (None: the whole run).
    pub window: Option<WindowInfo>,
    pub trend: Trend,
    /// How a merged device log was aligned (None: no `--device-log`).
    pub device_log: Option<DeviceLogInfo>,
    /// How a merged Nsight Systems export was aligned (None: no `--nsys`).
    pub nsys: Option<crate::trace::NsysInfo>,
    /// Whether memory outside the framework is measured (else the external band is
    /// unavailable: `null` in JSON, "unavailable" in text).
    pub external_known: bool,
    /// Per band, whether its bytes are known ([`Summary::band_known`]).
    pub bands_known: [bool; Band::COUNT],
    /// Whether the peak's instant lies between the log's first and last sample (its
    /// external bytes come from the log); None without a log or a peak.
    pub device_log_peak_covered: Option<bool>,
    /// Every OOM explained (`ooms` in JSON; the key is left out when there are none).
    pub ooms: Vec<crate::allocator::OomExplanation>,
    /// Snapshots: the totals of the final `segments` (None for other sources).
    pub allocator_at_end: Option<crate::allocator::AllocatorAtEnd>,
    /// The run's measurement boundary (full update after the optimizer state exists,
    /// forward-only, …); None until [`Summary::bounded`] is called, or when the trace holds
    /// no allocation of the framework (only device samples or external memory): unknowable.
    pub boundary: Option<super::boundary::Boundary>,
    /// Snapshots whose history starts after blocks were live: bounds on the run's peak.
    pub history_bounds: Option<super::bounds::HistoryBounds>,
    /// The serving budget (docs/serving.md); None when nothing in the trace is serving
    /// memory (no stream capture, private pool or KV cache).
    pub budget: Option<super::serving::ServingBudget>,
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
    /// The live set as a stack tree, bounded to `TREE_DEPTH` × `TREE_WIDTH`.
    pub tree: TreeNode,
    /// The persistent band split by category (None: nothing persistent is live).
    pub persistent: Option<Persistent>,
    /// The external band split by source (`nccl`, `cudnn`, `library-internal`, `other`,
    /// `unattributed`, …), biggest first; None when no source of external memory was read
    /// (then the external band is unavailable, not 0).
    pub external_by_source: Option<Vec<(String, u64)>>,
}

/// The peak of one window.
#[derive(Clone, Debug)]
pub struct WindowReport {
    pub kind: &'static str,
    pub name: std::sync::Arc<str>,
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

impl WindowReport {
    /// The report of window `w` of `trace`.
    fn of(trace: &Trace, w: Window) -> WindowReport {
        let peak = w.peak.filter(|p| !p.at_start);
        WindowReport {
            kind: w.kind.name(),
            name: w.name,
            first_index: trace.event_number(w.lo),
            last_index: trace.event_number(w.hi),
            first_source_index: trace.src_index(w.lo),
            last_source_index: trace.src_index(w.hi),
            peak_bytes: w.peak.map(|p| p.bytes.0),
            peak_index: peak.map(|p| trace.event_number(p.at)),
            peak_source_index: peak.map(|p| trace.src_index(p.at)),
            peak_at_start: w.peak.is_some_and(|p| p.at_start),
            peak_time_us: peak.and_then(|p| trace.time_us(p.at)),
        }
    }
}

/// The phase windows of one name as one row: how many there are, and the one whose peak
/// is the highest (the first to reach it).
#[derive(Clone, Debug)]
pub struct FoldedWindows {
    pub count: u64,
    /// The window of the highest peak (its `kind` and `name` are the row's).
    pub highest: WindowReport,
}

/// Phase windows folded by name as they stream past (one entry per name: the marks, which
/// the trace holds whole, bound them).
#[derive(Default)]
struct PhaseFold {
    rows: Vec<(u64, Window)>,
    by_name: rustc_hash::FxHashMap<std::sync::Arc<str>, usize>,
}

impl PhaseFold {
    fn add(&mut self, w: &Window) {
        if w.kind != WindowKind::Phase {
            return;
        }
        let bytes = |w: &Window| w.peak.map(|p| p.bytes.0);
        match self.by_name.get(&w.name) {
            Some(&k) => {
                if let Some((count, best)) = self.rows.get_mut(k) {
                    *count += 1;
                    // Strictly higher: the first window to reach the highest peak stays.
                    if bytes(w) > bytes(best) {
                        *best = w.clone();
                    }
                }
            }
            None => {
                self.by_name.insert(w.name.clone(), self.rows.len());
                self.rows.push((1, w.clone()));
            }
        }
    }

    fn reports(self, trace: &Trace) -> Vec<FoldedWindows> {
        self.rows
            .into_iter()
            .map(|(count, w)| FoldedWindows {
                count,
                highest: WindowReport::of(trace, w),
            })
            .collect()
    }
}

impl Summary {
    /// Whether the peak's bytes in band `b` are known ([`Trace::band_known`]): a band not
    /// known is unavailable, never 0.
    pub fn band_known(&self, b: Band) -> bool {
        self.bands_known[b.idx()]
    }

    /// Builds the report of `trace` (indexed by `index`).
    pub fn build(trace: &Trace, index: &Index) -> Summary {
        Summary::build_in(trace, index, None)
    }

    /// Builds the report with the peak measured inside `window` (None: the whole run),
    /// frames read under the built-in rules.
    pub fn build_in(trace: &Trace, index: &Index, window: Option<&Resolved>) -> Summary {
        let view = FrameView::new(trace, &FrameRules::default());
        Summary::build_with(trace, index, window, &SummaryOptions::default(), &view)
            .explained(trace, index, None, &view)
    }

    /// [`Summary::build_in`] under `opts`, frames read through `view` (a device's own:
    /// [`crate::open::Device::frames`], under the user's rules), its OOMs not yet explained
    /// ([`Summary::explained`], [`Summary::with_ooms`]).
    pub fn build_with(
        trace: &Trace,
        index: &Index,
        window: Option<&Resolved>,
        opts: &SummaryOptions,
        view: &FrameView,
    ) -> Summary {
        let (lo, hi) = match window {
            Some(w) => (w.lo, w.hi),
            None => (
                crate::trace::Seq(0),
                crate::trace::Seq(index.len().saturating_sub(1) as u64),
            ),
        };
        let mut peak_at: Option<(bool, crate::trace::Seq)> = None;
        let peak = (!index.is_empty())
            .then(|| window_peak(trace, index, lo, hi))
            .flatten()
            .map(|p| {
                peak_at = Some((p.at_start, p.at));
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
                        .map(|m| trace.mark_label(m).into_owned()),
                    bands: p.bands.0,
                    live_count,
                    live: live_all
                        .iter()
                        .take(TOP_N)
                        .map(|&id| entry_in(trace, id, p.at, view))
                        .collect(),
                    tree: stack_tree(trace, &live_all, view, opts.tree_frames)
                        .bounded(TREE_DEPTH, TREE_WIDTH),
                    persistent: persistent(trace, &live_all),
                    external_by_source: external_by_source(trace, &live_all),
                }
            });
        let mut fold = PhaseFold::default();
        let (listed, windows_omitted) =
            listed_windows(each_window(trace, index).inspect(|w| fold.add(w)), peak_at);
        let windows = listed
            .into_iter()
            .map(|w| WindowReport::of(trace, w))
            .collect();
        let windows_folded = fold.reports(trace);
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
            windows_omitted,
            windows_folded,
            bands_source: trace.bands_source.name(),
            time_available: trace.clock.has_time(),
            start_time_us: trace.origin_us(),
            window: window.map(|w| WindowInfo {
                spec: w.spec.clone(),
                label: w.label.clone(),
                first_index: trace.event_number(w.lo),
                last_index: trace.event_number(w.hi),
                first_source_index: trace.src_index(w.lo),
                last_source_index: trace.src_index(w.hi),
            }),
            trend: {
                let mut t = trend(trace, index);
                for sv in &mut t.survivors {
                    if let Some(&id) = sv.ids.first() {
                        sv.user_frame = view.of_stack(trace, trace.stack_id(id)).user;
                    }
                }
                t
            },
            device_log: trace.device_log.clone(),
            nsys: trace.nsys.clone(),
            external_known: trace.external_known,
            bands_known: Band::ALL.map(|b| trace.band_known(b)),
            device_log_peak_covered: trace.device_log.as_ref().zip(peak_at).map(
                |(d, (at_start, at))| {
                    let wall_us = trace
                        .wall_offset_ns
                        .map(|w| trace.ts(at).0.saturating_add(w).div_euclid(1000));
                    match (wall_us, d.first_sample_us, d.last_sample_us) {
                        (Some(w), Some(a), Some(b)) => !at_start && a <= w && w <= b,
                        _ => false,
                    }
                },
            ),
            ooms: Vec::new(),
            allocator_at_end: None,
            boundary: None,
            history_bounds: None,
            budget: None,
        }
        .doubting_the_model()
        .doubting_the_reserve(trace, index)
    }

    /// A file whose reserve never reaches what the framework held at the peak contradicts
    /// itself ([`super::peak::reserve_doubt`]): said among the warnings and the doubtful ones.
    fn doubting_the_reserve(mut self, trace: &Trace, index: &Index) -> Summary {
        if let Some(w) = super::peak::reserve_doubt(trace, index) {
            self.warnings.push(w.clone());
            self.doubtful.push(w);
        }
        self
    }

    /// An inferred persistent split at the peak that fits no usual model is doubtful: the
    /// inference likely misread some stacks. Said among the warnings and the doubtful ones.
    fn doubting_the_model(mut self) -> Summary {
        let why = self
            .peak
            .as_ref()
            .and_then(|p| p.persistent.as_ref())
            .and_then(super::persistent::doubt);
        if let Some(w) = why {
            self.warnings.push(w.clone());
            self.doubtful.push(w);
        }
        self
    }

    /// Explains the OOMs with the device's allocator history (a snapshot's segments and
    /// blocks; None: what the timeline alone tells), their fix lists replayed as
    /// [`FixReplay::default`] allows, and, with a history, adds `allocator_at_end`.
    pub fn explained(
        self,
        trace: &Trace,
        index: &Index,
        history: Option<&crate::allocator::History>,
        view: &FrameView,
    ) -> Summary {
        let ooms = super::oom::explain_ooms(
            trace,
            index,
            history,
            &self.trend,
            view,
            FixReplay::default(),
            None,
        );
        self.with_ooms(trace, index, history, ooms)
    }

    /// [`Summary::explained`] with the OOMs already explained (a device keeps its own:
    /// the fix replays run once).
    pub fn with_ooms(
        mut self,
        trace: &Trace,
        index: &Index,
        history: Option<&crate::allocator::History>,
        ooms: Vec<crate::allocator::OomExplanation>,
    ) -> Summary {
        self.ooms = ooms;
        self.allocator_at_end = history.map(|h| crate::allocator::allocator_at_end(&h.segments));
        self.history_bounds = super::bounds::bounds(trace, index, history);
        self.budget = super::serving::serving_budget(trace, index, history);
        self
    }

    /// Adds the run's measurement boundary (the whole run's, whatever the window): None when
    /// the trace holds no allocation to read phases or steps from.
    pub fn bounded(mut self, trace: &Trace, index: &Index) -> Summary {
        // Memory outside the framework (samples, external spans) says nothing of the work.
        let any_block = (0..trace.storage_count()).any(|i| {
            let id = crate::trace::AllocId(i as u32);
            trace.storage_kind(id) == crate::trace::StorageKind::Block
                && trace.category(id).band() != crate::trace::Band::External
        });
        self.boundary =
            any_block.then(|| super::boundary::boundary(&super::work::work(trace, index)));
        self
    }

    /// The `summary --json` object of docs/summary-json.md (extra keys allowed, listed keys
    /// always present): the `SummaryJson` schema as a value (`summary --json` writes it
    /// without a value tree: [`super::write_document`]).
    pub fn to_json(&self, devices: &[String]) -> Value {
        serde_json::to_value(SummaryJson::new(self, devices))
            // Cannot fail: the schema holds only strings, numbers, maps and JSON values.
            .unwrap_or(Value::Null)
    }

    /// This device's entry of `per_device`: [`Summary::to_json`] without `devices`.
    pub fn per_device_json(&self) -> Value {
        let mut j = SummaryJson::new(self, &[]);
        j.devices = None;
        serde_json::to_value(j).unwrap_or(Value::Null)
    }
}

/// Bytes of the external storages in `live`, by source, biggest first (ties by name); None
/// when the trace measures no external memory.
pub fn external_by_source(
    trace: &Trace,
    live: &[crate::trace::AllocId],
) -> Option<Vec<(String, u64)>> {
    if !trace.external_known {
        return None;
    }
    let mut by: Vec<(String, u64)> = Vec::new();
    for &id in live {
        if trace.band(id) != Band::External {
            continue;
        }
        let src = trace.external_source(id);
        let sz = trace.size(id).0;
        match by.iter_mut().find(|(s, _)| s == src) {
            Some((_, b)) => *b = b.saturating_add(sz),
            None => by.push((src.to_string(), sz)),
        }
    }
    by.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    Some(by)
}

/// The rows a readable report (text, Markdown) shows of a long table such as the steps: all
/// of at most 2 × [`WINDOW_ENDS`] rows, else the first and last [`WINDOW_ENDS`] with the
/// number left out between them.
pub fn table_ends<T>(rows: &[T]) -> (&[T], usize, &[T]) {
    if rows.len() <= 2 * WINDOW_ENDS {
        return (rows, 0, &[]);
    }
    let n = rows.len();
    (
        &rows[..WINDOW_ENDS],
        n - 2 * WINDOW_ENDS,
        &rows[n - WINDOW_ENDS..],
    )
}

/// `a, b, c` for at most `max` names, then `and N more`.
pub fn names_text<S: AsRef<str>>(names: &[S], max: usize) -> String {
    let mut out: Vec<&str> = names.iter().take(max).map(AsRef::as_ref).collect();
    let more = names.len().saturating_sub(max);
    let tail = format!("and {} more", grouped(more as u64));
    if more > 0 {
        out.push(&tail);
    }
    out.join(", ")
}

/// The windows a report lists, in their order, and how many it leaves out: every window of a
/// kind with at most 2 × [`WINDOW_ENDS`] windows, else its first and last [`WINDOW_ENDS`]
/// and those holding the peak (`peak_at`: not at the start, its event).
fn listed_windows(
    all: impl Iterator<Item = Window>,
    peak_at: Option<(bool, crate::trace::Seq)>,
) -> (Vec<Window>, u64) {
    let peak = peak_at.filter(|(at_start, _)| !at_start).map(|(_, at)| at);
    let mut out: Vec<Window> = Vec::new();
    let mut omitted = 0u64;
    // Per kind: the first WINDOW_ENDS, those holding the peak, and the last WINDOW_ENDS held
    // back in `tail` until the kind's windows end (only the tail's overflow is left out).
    let mut tail: std::collections::VecDeque<Window> = std::collections::VecDeque::new();
    let mut seen = 0usize;
    let mut kind = None;
    for w in all {
        if kind != Some(w.kind) {
            out.extend(tail.drain(..));
            kind = Some(w.kind);
            seen = 0;
        }
        seen += 1;
        if seen <= WINDOW_ENDS {
            out.push(w);
            continue;
        }
        tail.push_back(w);
        if tail.len() > WINDOW_ENDS {
            if let Some(old) = tail.pop_front() {
                if peak.is_some_and(|at| old.lo <= at && at <= old.hi) {
                    out.push(old);
                } else {
                    omitted += 1;
                }
            }
        }
    }
    out.extend(tail.drain(..));
    (out, omitted)
}

/// The `summary FILE --json` document: `main`'s object, with `per_device` (every device's
/// object, without the `devices` list the top level holds) added when the trace has several
/// devices and none was picked. Its size grows with the devices, never with their square.
pub fn document_json(
    main: &Summary,
    summaries: &[Summary],
    devices: &[String],
    device_picked: bool,
) -> Value {
    let mut v = main.to_json(devices);
    if summaries.len() > 1 && !device_picked {
        if let Some(o) = v.as_object_mut() {
            o.insert(
                "per_device".into(),
                summaries
                    .iter()
                    .map(Summary::per_device_json)
                    .collect::<Vec<_>>()
                    .into(),
            );
        }
    }
    v
}
