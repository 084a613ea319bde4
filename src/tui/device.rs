//! One loaded device: its trace, index and the facts every page needs (computed once, off
//! the UI thread), what the loaders hand back, and which device of a file to show.

use memtide_core::allocator::{History, Model, OomExplanation};
use memtide_core::analysis::external_split::ExternalSplit;
use memtide_core::analysis::frames::{FrameRules, FrameView};
use memtide_core::analysis::{global_peak, windows_of, Peak, Window};
use memtide_core::formats::jsonl::JsonlDecoder;
use memtide_core::formats::Progress;
use memtide_core::index::Index;
use memtide_core::trace::{Bytes, MarkKind, Seq, Trace};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One device's trace, indexed, with the facts every screen needs. Clone only happens when
/// a followed file grows while a worker holds it.
#[derive(Debug, Clone)]
pub struct Device {
    pub trace: Trace,
    pub index: Index,
    pub peak: Option<Peak>,
    /// Step windows with their own peaks (for `{`/`}`).
    pub steps: Vec<Window>,
    /// Positions of step/phase marks (for `[`/`]`), sorted.
    pub mark_at: Vec<Seq>,
    /// Positions of OOM marks.
    pub oom_at: Vec<Seq>,
    /// Highest reserved bytes, if the source records reserved memory.
    pub reserved_peak: Option<Bytes>,
    /// Snapshots: the allocator's segments and blocks over time (None: the source records
    /// no segments).
    pub allocator: Option<Arc<Model>>,
    /// How this trace's frames are printed (user frame, project root stripped).
    pub frames: FrameView,
    /// Every OOM explained, in event order (`oom_at[k]` is `ooms[k]`'s event).
    pub ooms: Vec<OomExplanation>,
    /// The external band by source at every event (None: external memory unavailable, or
    /// none in the trace), for the timeline's sub-bands.
    pub ext_split: Option<ExternalSplit>,
}

impl Device {
    pub fn new(trace: Trace, index: Index) -> Device {
        Device::with_model(trace, index, None, &FrameRules::default())
    }

    /// A device with its allocator history (snapshots) replayed into a model, frames read
    /// under `rules`.
    pub fn with_model(
        trace: Trace,
        index: Index,
        history: Option<History>,
        rules: &FrameRules,
    ) -> Device {
        Device::with_built_model(trace, index, history.map(Model::build), rules)
    }

    /// [`Device::with_model`] with the model already replayed (the loader builds it on a
    /// second thread while it indexes).
    pub fn with_built_model(
        trace: Trace,
        index: Index,
        model: Option<Model>,
        rules: &FrameRules,
    ) -> Device {
        let peak = global_peak(&trace, &index);
        let frames = FrameView::new(&trace, rules);
        let mut d = Device {
            trace,
            index,
            peak,
            steps: Vec::new(),
            mark_at: Vec::new(),
            oom_at: Vec::new(),
            reserved_peak: None,
            allocator: model.map(Arc::new),
            frames,
            ooms: Vec::new(),
            ext_split: None,
        };
        d.refresh_marks();
        d
    }

    /// Attaches the allocator model replayed apart (the loader builds the device while the
    /// model replays) and explains the OOMs again with its history.
    pub fn attach_model(&mut self, model: Model) {
        self.allocator = Some(Arc::new(model));
        if !self.oom_at.is_empty() {
            self.refresh_ooms();
        }
    }

    /// Sets the device's capacity (`--capacity`: the user's figure wins over the file's) and
    /// explains the OOMs again with it.
    pub fn set_capacity(&mut self, capacity: Bytes) {
        self.trace.capacity = Some(capacity);
        self.trace.capacity_source = Some("--capacity".into());
        self.refresh_ooms();
    }

    /// Explains every OOM (the core's explanation, as `summary` prints it).
    pub fn refresh_ooms(&mut self) {
        if self.oom_at.is_empty() {
            self.ooms.clear();
            return;
        }
        let trend = memtide_core::analysis::trend::trend(&self.trace, &self.index);
        let history = self.allocator.as_ref().map(|m| m.history());
        self.ooms =
            memtide_core::analysis::oom::explain_ooms(&self.trace, &self.index, history, &trend);
    }

    /// The explanation of the OOM at `at`, if an OOM is there.
    pub fn oom_explained(&self, at: Seq) -> Option<&OomExplanation> {
        let k = self.oom_at.iter().position(|&m| m == at)?;
        self.ooms.get(k)
    }

    /// Recomputes step windows, mark and OOM positions and the reserved peak (after appends).
    pub fn refresh_marks(&mut self) {
        let (trace, index) = (&self.trace, &self.index);
        self.steps = windows_of(trace, index, MarkKind::Step);
        let mut mark_at: Vec<Seq> = trace
            .marks
            .iter()
            .filter(|m| matches!(m.kind, MarkKind::Step | MarkKind::Phase))
            .map(|m| m.at)
            .collect();
        mark_at.dedup();
        self.mark_at = mark_at;
        self.oom_at = trace
            .marks
            .iter()
            .filter(|m| m.kind == MarkKind::Oom)
            .map(|m| m.at)
            .collect();
        self.reserved_peak = index.reserved_peak().map(|(b, _)| b);
        self.ext_split = ExternalSplit::of(trace);
        if self.ooms.len() != self.oom_at.len() {
            self.refresh_ooms();
        }
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    pub fn last(&self) -> Seq {
        Seq(self.len().saturating_sub(1) as u64)
    }
}

/// A load in progress, sampled on ticks.
#[derive(Debug, Clone)]
pub struct LoadState {
    pub gen: u64,
    pub progress: Progress,
    pub done: u64,
    pub total: u64,
    pub started: Option<Instant>,
    pub elapsed: Duration,
}

impl LoadState {
    /// A load of generation `gen` that has not started reading yet.
    pub fn new(gen: u64, progress: Progress) -> LoadState {
        LoadState {
            gen,
            progress,
            done: 0,
            total: 0,
            started: None,
            elapsed: Duration::ZERO,
        }
    }

    /// Samples the progress counters at `now` (a timer tick).
    pub fn sample(&mut self, now: Instant) {
        self.done = self.progress.done();
        self.total = self.progress.total();
        let s = *self.started.get_or_insert(now);
        self.elapsed = now.saturating_duration_since(s);
    }
}

/// What the follow loader hands back: the devices, and for JSONL the decoder to continue.
#[derive(Debug)]
pub struct FollowLoad {
    pub devices: Vec<Arc<Device>>,
    pub decoder: Option<Box<JsonlDecoder>>,
    /// Bytes of the file already read.
    pub offset: u64,
    /// JSONL grows by appends; other formats are reloaded whole on change.
    pub appendable: bool,
}

/// Whether `want` (a name or an ordinal) names one of `devs`.
pub fn has_device(devs: &[Arc<Device>], want: &str) -> bool {
    memtide_core::load::pick_device(names(devs), Some(want)).is_ok()
}

/// The device the user asked for (name or ordinal: the core's rule), else the first with
/// events.
pub fn pick_device(devs: &[Arc<Device>], want: Option<&str>) -> usize {
    memtide_core::load::pick_device(names(devs), want)
        .or_else(|_| memtide_core::load::pick_device(names(devs), None))
        .unwrap_or(0)
}

/// Each device's name and whether it has events, as the core's device rule takes them.
fn names(devs: &[Arc<Device>]) -> impl Iterator<Item = (&str, bool)> {
    devs.iter()
        .map(|d| (d.trace.device.as_str(), !d.is_empty()))
}
