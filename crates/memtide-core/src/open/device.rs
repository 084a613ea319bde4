//! One opened device: its trace, index, allocator history or model, and the facts every
//! consumer asks for (peak, reserved peak, steps, marks, OOM explanations, doubts), computed
//! once here instead of by each command or screen.

use super::model_slot::ModelSlot;
use super::pick::Holds;
use crate::allocator::{History, Model, OomExplanation};
use crate::analysis::external_split::ExternalSplit;
use crate::analysis::frames::{FrameRules, FrameView};
use crate::analysis::summary::{FixReplay, Summary, SummaryOptions};
use crate::analysis::window_spec::Resolved;
use crate::analysis::{
    global_peak, serving_budget, window_peak, windows_of, Peak, ServingBudget, Window,
};
use crate::formats::jsonl::JsonlDecoder;
use crate::formats::{FormatError, Progress};
use crate::index::Index;
use crate::trace::{Bytes, MarkKind, Seq, Trace};
use std::sync::{Arc, OnceLock};

/// One device's trace, indexed, with the facts every page and command needs. The dearer
/// facts (OOM explanations, doubts, the external split) are computed on first ask and kept;
/// [`Device::warm`] computes them all at once (the explorer does, off its UI thread).
#[derive(Debug, Clone)]
pub struct Device {
    pub trace: Trace,
    pub index: Index,
    /// The highest allocated figure of the whole run (None: no events).
    pub peak: Option<Peak>,
    /// Step windows with their own peaks.
    pub steps: Vec<Window>,
    /// Positions of step/phase marks, sorted.
    pub mark_at: Vec<Seq>,
    /// Positions of OOM marks.
    pub oom_at: Vec<Seq>,
    /// Highest reserved bytes, if the source records reserved memory.
    pub reserved_peak: Option<Bytes>,
    /// Snapshots: the allocator's segments and blocks over time, replayed (see
    /// [`Device::allocator`]).
    allocator: ModelSlot,
    /// How this trace's frames are printed (user frame, project root stripped).
    pub frames: FrameView,
    /// The allocator history when it was kept unreplayed (the headless commands).
    history: Option<History>,
    ooms: OnceLock<Vec<OomExplanation>>,
    /// The OOMs explained without replaying their fix list ([`Device::ooms_for`]).
    ooms_unreplayed: OnceLock<Vec<OomExplanation>>,
    /// The fix lists' replays, in ops ([`Device::oom_progress`]).
    oom_progress: Progress,
    doubtful: OnceLock<Vec<String>>,
    ext_split: OnceLock<Option<ExternalSplit>>,
    budget: OnceLock<Option<ServingBudget>>,
}

impl Device {
    /// A device without allocator history, frames read with no user patterns.
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
        let mut d = Device::bare(trace, index, rules);
        d.allocator = ModelSlot::ready(model);
        d
    }

    /// A device keeping its allocator history as read, unreplayed (what the headless
    /// commands ask of a history: an OOM's explanation, the segments at the end).
    pub fn with_history(
        trace: Trace,
        index: Index,
        history: Option<History>,
        rules: &FrameRules,
    ) -> Device {
        let mut d = Device::bare(trace, index, rules);
        d.history = history;
        d
    }

    fn bare(trace: Trace, index: Index, rules: &FrameRules) -> Device {
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
            allocator: ModelSlot::default(),
            frames,
            history: None,
            ooms: OnceLock::new(),
            ooms_unreplayed: OnceLock::new(),
            oom_progress: Progress::new(),
            doubtful: OnceLock::new(),
            ext_split: OnceLock::new(),
            budget: OnceLock::new(),
        };
        d.refresh_marks();
        d
    }

    /// The allocator history: the replayed model's, else the one kept as read.
    pub fn history(&self) -> Option<&History> {
        self.allocator()
            .map(|m| m.history())
            .or(self.history.as_ref())
    }

    /// The allocator's segments and blocks over time, replayed (None: the source records no
    /// segments, or the model was not asked for: see [`Device::history`]). A model the load
    /// left replaying on its own thread is waited for here, on the first ask.
    pub fn allocator(&self) -> Option<&Arc<Model>> {
        self.allocator.get()
    }

    /// Whether [`Device::allocator`] has a model to give, without waiting for one still
    /// replaying (a replay that fails after all gives none).
    pub fn has_allocator(&self) -> bool {
        self.allocator.expected()
    }

    /// Whether [`Device::allocator`] would answer now, without waiting for a model still
    /// replaying (a UI asks this first, and waits on a thread of its own if not).
    pub fn allocator_settled(&self) -> bool {
        self.allocator.settled()
    }

    /// Gives the device its slot of the load's models (replayed or still replaying).
    pub(crate) fn set_model_slot(&mut self, slot: ModelSlot) {
        self.allocator = slot;
        self.history = None;
        self.ooms = OnceLock::new();
        self.ooms_unreplayed = OnceLock::new();
        self.oom_progress = Progress::new();
        self.budget = OnceLock::new();
    }

    /// Sets the device's capacity (`--capacity`: the user's figure wins over the file's);
    /// the OOMs are explained again with it.
    pub fn set_capacity(&mut self, capacity: Bytes) {
        self.trace.capacity = Some(capacity);
        self.trace.capacity_source = Some("--capacity".into());
        self.ooms = OnceLock::new();
        self.ooms_unreplayed = OnceLock::new();
        self.oom_progress = Progress::new();
        self.budget = OnceLock::new();
    }

    /// Forgets the device's capacity (one its file contradicts); the OOMs are explained
    /// again without it.
    pub(crate) fn drop_capacity(&mut self) {
        self.trace.capacity = None;
        self.trace.capacity_source = None;
        self.ooms = OnceLock::new();
        self.ooms_unreplayed = OnceLock::new();
        self.oom_progress = Progress::new();
        self.budget = OnceLock::new();
    }

    /// [`Device::ooms`] when they are there to give without computing them (or waiting for a
    /// thread that is): None while they are still to come (a UI draws a placeholder, and
    /// waits for them on a thread of its own).
    pub fn ooms_if_ready(&self) -> Option<&[OomExplanation]> {
        if self.oom_at.is_empty() {
            return Some(self.ooms());
        }
        self.ooms.get().map(Vec::as_slice)
    }

    /// Every OOM explained, in event order (`oom_at[k]` is `ooms()[k]`'s event): the core's
    /// explanation with its fix list replayed, as `summary --fixes` prints it.
    pub fn ooms(&self) -> &[OomExplanation] {
        self.ooms
            .get_or_init(|| self.explain_ooms(FixReplay::Always))
    }

    /// The OOMs as `replay` asks for them: [`Device::ooms`] where it replays this device's
    /// fix list, else each explained from the state at the OOM alone (its
    /// `fixes_deferred` says why), kept apart from the replayed ones.
    pub fn ooms_for(&self, replay: FixReplay) -> &[OomExplanation] {
        let length = crate::analysis::oom::replay_length(&self.trace, self.history());
        if replay.replays(length) {
            return self.ooms();
        }
        self.ooms_unreplayed
            .get_or_init(|| self.explain_ooms(replay))
    }

    fn explain_ooms(&self, replay: FixReplay) -> Vec<OomExplanation> {
        if self.oom_at.is_empty() {
            return Vec::new();
        }
        let trend = crate::analysis::trend::trend(&self.trace, &self.index);
        crate::analysis::oom::explain_ooms(
            &self.trace,
            &self.index,
            self.history(),
            &trend,
            &self.frames,
            replay,
            Some(&self.oom_progress),
        )
    }

    /// How far [`Device::ooms`] has got with its fix lists' replays: ops replayed (`done`) of
    /// the ops every replay started so far holds (`total`; 0 before they start, and when
    /// nothing is replayed). A screen that waits for the explanations shows it.
    pub fn oom_progress(&self) -> &Progress {
        &self.oom_progress
    }

    /// The explanation of the OOM at `at`, if an OOM is there.
    pub fn oom_explained(&self, at: Seq) -> Option<&OomExplanation> {
        let k = self.oom_at.iter().position(|&m| m == at)?;
        self.ooms().get(k)
    }

    /// Why the figures may be wrong, as `summary`'s `doubtful_warnings`.
    pub fn doubtful(&self) -> &[String] {
        self.doubtful
            .get_or_init(|| crate::analysis::persistent::run_doubts(&self.trace, &self.index))
    }

    /// The external band by source at every event (None: external memory unavailable, or
    /// none in the trace).
    pub fn ext_split(&self) -> Option<&ExternalSplit> {
        self.ext_split
            .get_or_init(|| ExternalSplit::of(&self.trace))
            .as_ref()
    }

    /// The serving budget (docs/serving.md), as `summary` reports it; None when nothing in
    /// the trace is serving memory (no stream capture, private pool or KV cache).
    pub fn budget(&self) -> Option<&ServingBudget> {
        self.budget
            .get_or_init(|| serving_budget(&self.trace, &self.index, self.history()))
            .as_ref()
    }

    /// Computes every fact now (a consumer that must not wait later, such as a UI thread),
    /// the allocator model first (waited for when it is still replaying).
    pub fn warm(&self) {
        let _ = (
            self.allocator(),
            self.ooms(),
            self.doubtful(),
            self.ext_split(),
            self.budget(),
        );
    }

    /// Recomputes step windows, mark and OOM positions and the reserved peak (after
    /// appends); the dearer facts are computed again on next ask.
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
        self.doubtful = OnceLock::new();
        self.ext_split = OnceLock::new();
        self.budget = OnceLock::new();
        // Explanations of another set of OOMs are explained again on next ask.
        let n = self.oom_at.len();
        let stale = |o: &OnceLock<Vec<OomExplanation>>| o.get().is_some_and(|o| o.len() != n);
        if stale(&self.ooms) {
            self.ooms = OnceLock::new();
            self.oom_progress = Progress::new();
        }
        if stale(&self.ooms_unreplayed) {
            self.ooms_unreplayed = OnceLock::new();
        }
    }

    /// Feeds bytes appended to a followed file through its decoder (None: apply the last
    /// group it holds back) and brings the index and the facts up to date. Returns the events
    /// added and the decoder's verdict (the events before a bad line are kept).
    pub fn append(
        &mut self,
        decoder: &mut JsonlDecoder,
        bytes: Option<&[u8]>,
    ) -> (usize, Result<(), FormatError>) {
        let before = self.index.len();
        let r = match bytes {
            Some(b) => decoder.feed(&mut self.trace, b),
            None => decoder.flush(&mut self.trace),
        };
        self.index.extend(&self.trace);
        let added = self.index.len() - before;
        if added > 0 {
            self.appended_from(before);
        }
        (added, r)
    }

    /// Brings the peak and the facts up to date after events were added from position `from`.
    fn appended_from(&mut self, from: usize) {
        let last = self.last();
        if let Some(p) = window_peak(&self.trace, &self.index, Seq(from as u64), last) {
            if self.peak.is_none_or(|old| p.bytes > old.bytes) {
                self.peak = Some(p);
            }
        }
        self.refresh_marks();
    }

    /// Everything `summary` reports of this device, in `window` when given: the one summary
    /// every command, report and API builds.
    pub fn summary(&self, opts: &SummaryOptions, window: Option<&Resolved>) -> Summary {
        let s = Summary::build_with(&self.trace, &self.index, window, opts, &self.frames)
            .with_ooms(
                &self.trace,
                &self.index,
                self.history(),
                self.ooms_for(opts.fixes).to_vec(),
            );
        if opts.boundary {
            s.bounded(&self.trace, &self.index)
        } else {
            s
        }
    }

    pub fn len(&self) -> usize {
        self.index.len()
    }

    pub fn is_empty(&self) -> bool {
        self.index.is_empty()
    }

    /// What the device holds, as the device rule weighs it ([`super::pick_device`]).
    pub fn holds(&self) -> Holds {
        if !self.oom_at.is_empty() {
            Holds::Oom
        } else if self.is_empty() {
            Holds::Nothing
        } else if self.peak.is_some_and(|p| p.bytes.0 > 0) {
            Holds::Memory
        } else {
            Holds::Events
        }
    }

    /// The last event's position (0 when there is none).
    pub fn last(&self) -> Seq {
        Seq(self.len().saturating_sub(1) as u64)
    }

    /// The device's name (`cuda:0`).
    pub fn name(&self) -> &str {
        &self.trace.device
    }
}
