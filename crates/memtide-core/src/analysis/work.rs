//! What one run did, as a fair comparison needs it: its updates (steps, or optimizer steps
//! when no step is marked), the phases seen in each (forward, backward, optimizer step), the
//! input allocations of each, the parameters and the optimizer state — each figure `None`
//! when the file cannot say, never guessed.

use super::windows::each_window_of;
use crate::trace::{AllocId, Category, MarkKind, Seq, StorageKind, Trace, FLAG_INFERRED};
use serde::Serialize;

/// A phase of a training update.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    Forward,
    Backward,
    Optimizer,
}

impl Phase {
    pub const ALL: [Phase; 3] = [Phase::Forward, Phase::Backward, Phase::Optimizer];

    /// The word reports use (`forward`, `backward`, `optimizer step`).
    pub fn name(self) -> &'static str {
        match self {
            Phase::Forward => "forward",
            Phase::Backward => "backward",
            Phase::Optimizer => "optimizer step",
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A set of phases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Phases(u8);

impl Phases {
    pub fn has(self, p: Phase) -> bool {
        self.0 & p.bit() != 0
    }
    pub fn add(&mut self, p: Phase) {
        self.0 |= p.bit();
    }
    pub fn union(self, o: Phases) -> Phases {
        Phases(self.0 | o.0)
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    pub fn bits(self) -> u8 {
        self.0
    }
    pub fn from_bits(b: u8) -> Phases {
        Phases(b & 0b111)
    }
    pub fn list(self) -> Vec<Phase> {
        Phase::ALL.into_iter().filter(|&p| self.has(p)).collect()
    }
    /// `forward, backward, optimizer step`, or `none`.
    pub fn words(self) -> String {
        let v: Vec<&str> = self.list().into_iter().map(Phase::name).collect();
        if v.is_empty() {
            "none".into()
        } else {
            v.join(", ")
        }
    }
}

/// What delimits a run's updates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum UpdatesBy {
    /// Step marks (JSONL `step`, `ProfilerStep#N`).
    StepMarks,
    /// No step is marked: each optimizer-step phase (`Optimizer.step#Adam.step`) ends one.
    OptimizerSteps,
    /// Neither: the whole run is one region.
    None,
}

impl UpdatesBy {
    pub fn words(self) -> &'static str {
        match self {
            UpdatesBy::StepMarks => "step marks",
            UpdatesBy::OptimizerSteps => "optimizer steps (no step marks)",
            UpdatesBy::None => "no step marks and no optimizer steps",
        }
    }
}

/// One update (a step) of the run.
#[derive(Clone, Debug, PartialEq)]
pub struct Update {
    pub name: String,
    pub lo: Seq,
    pub hi: Seq,
    /// Phases seen in it.
    pub phases: Phases,
    /// Sizes of its input allocations, ascending.
    pub inputs: Vec<u64>,
    /// Bytes of optimizer state allocated in it (the lazy first-step allocation).
    pub optimizer_state_made: u64,
}

/// How the input allocations were found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum InputsSource {
    /// The file labels them (`cat: input`, PyTorch's INPUT category).
    Recorded,
    /// Allocations made in a step before its first forward allocation, by no forward,
    /// backward, optimizer or parameter code.
    Inferred,
}

/// The facts of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Work {
    pub updates_by: UpdatesBy,
    /// The updates (one whole-run region when `updates_by` is `None`).
    pub updates: Vec<Update>,
    /// Phases seen anywhere in the run's updates.
    pub phases: Phases,
    /// Phases the file shows in every update that runs them (through marks or frames); a
    /// phase seen only through categories (optimizer state made once, in the first step) is
    /// not expected in every update.
    pub per_update: Phases,
    /// Whether a phase not seen can be said to be absent: the file has stacks on most
    /// allocations, phase marks, or recorded categories. False: a phase not seen is unknown.
    pub absence_knowable: bool,
    /// What makes `absence_knowable` true (`stacks`, `phase marks`, `recorded categories`).
    pub evidence: Vec<&'static str>,
    /// Whether any block was allocated while the file recorded (false: a snapshot without
    /// history, one instant whose every block predates it).
    pub allocations_recorded: bool,
    /// `param_count` from the header.
    pub param_count: Option<u64>,
    /// Most parameter bytes live at once; None when the file does not split the persistent
    /// band or no parameter was identified in inferred categories.
    pub param_bytes: Option<u64>,
    /// Most optimizer-state bytes live at once (0: none); None when unknowable.
    pub optimizer_bytes: Option<u64>,
    /// How inputs were found; None: no input allocation was found or none can be.
    pub inputs_source: Option<InputsSource>,
    /// The sizes of the first forward's first allocations (in order; at most
    /// [`FIRST_FORWARD`]): what the batch and sequence make a model allocate first, the
    /// evidence of the inputs where no input allocation is seen.
    pub first_forward: Vec<u64>,
    /// The sizes (ascending) of the allocations with a stack made before the first update,
    /// outside every step and not persistent: data made once before the loop.
    pub before_steps: Vec<u64>,
}

/// How many of the first forward's allocations [`Work::first_forward`] keeps.
pub const FIRST_FORWARD: usize = 8;

impl Work {
    /// Why a phase not seen is unknown (where `absence_knowable` is false), after "the
    /// file": an instant without history shows no phase at all; else it lacks the evidence.
    pub fn why_phases_unknown(&self) -> &'static str {
        if self.allocations_recorded {
            "records no stacks, phase marks or categories"
        } else {
            "is one instant (no allocation made while it recorded)"
        }
    }

    /// Number of updates measured; None when the run marks none (no steps, no optimizer step).
    pub fn steps(&self) -> Option<usize> {
        (self.updates_by != UpdatesBy::None).then_some(self.updates.len())
    }

    /// The phases update `k` shows, with those the file cannot show per update assumed
    /// present wherever the run shows any phase.
    pub fn effective_phases(&self, k: usize) -> Phases {
        let u = self.updates[k].phases;
        if u.is_empty() {
            return u;
        }
        let hidden = Phases::from_bits(self.phases.bits() & !self.per_update.bits());
        u.union(hidden)
    }

    /// Index of the update in which optimizer state was first allocated.
    pub fn lazy_state_update(&self) -> Option<usize> {
        self.updates.iter().position(|u| u.optimizer_state_made > 0)
    }
}

/// A phase named by a phase mark (`forward`, `backward`, `Optimizer.step#Adam.step`).
pub(crate) fn phase_of_mark(name: &str) -> Option<Phase> {
    let l = name.to_ascii_lowercase();
    if drives_both(&l) {
        None
    } else if l.contains("backward") || l.contains("bwd") {
        Some(Phase::Backward)
    } else if l.contains("zero_grad") {
        None
    } else if l.contains("optim") {
        Some(Phase::Optimizer)
    } else if l.contains("forward") || l.contains("fwd") {
        Some(Phase::Forward)
    } else {
        None
    }
}

/// Op names that make or move a tensor without computing (a batch's `randn`, `.to(device)`).
const FACTORY_OPS: [&str; 16] = [
    "aten::empty",
    "aten::empty_strided",
    "aten::empty_like",
    "aten::randn",
    "aten::rand",
    "aten::randint",
    "aten::randperm",
    "aten::zeros",
    "aten::ones",
    "aten::full",
    "aten::to",
    "aten::_to_copy",
    "aten::copy_",
    "aten::pin_memory",
    "aten::_pin_memory",
    "aten::lift_fresh",
];

/// What one frame says of its phase (see [`phase_of_frames`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct FramePhase {
    backward: bool,
    optim: bool,
    forward: bool,
}

/// A name that drives both passes (torchtitan's `forward_backward_step`, Megatron's
/// `forward_backward_no_pipelining`, `fwd_bwd`): it says nothing of which one runs.
fn drives_both(l: &str) -> bool {
    [
        "forward_backward",
        "forward-backward",
        "forward_and_backward",
        "fwd_bwd",
        "fwdbwd",
    ]
    .iter()
    .any(|w| l.contains(w))
}

/// The phase words of one frame's text (none from a frame that drives both passes).
pub(crate) fn frame_phase(f: &str) -> FramePhase {
    let l = f.to_ascii_lowercase();
    if drives_both(&l) {
        return FramePhase::default();
    }
    FramePhase {
        backward: l.contains("backward") || l.contains("accumulategrad"),
        optim: l.contains("/optim/") || l.contains("optimizer.") || l.contains("_init_group"),
        forward: l.contains("forward")
            || l.contains("_call_impl")
            || l.starts_with("nn.module: ")
            || (l.starts_with("aten::") && !FACTORY_OPS.contains(&l.as_str())),
    }
}

/// The phase of a stack from its frames' words: backward first (a recomputed forward under
/// `backward` is backward work), then optimizer, then forward. None: none of them (setup,
/// data, or a frame-less allocation).
pub(crate) fn phase_of(frames: impl Iterator<Item = FramePhase>) -> Option<Phase> {
    let mut any = FramePhase::default();
    for f in frames {
        if f.backward {
            return Some(Phase::Backward);
        }
        any.optim |= f.optim;
        any.forward |= f.forward;
    }
    if any.optim {
        Some(Phase::Optimizer)
    } else if any.forward {
        Some(Phase::Forward)
    } else {
        None
    }
}

/// The phase one stack's frames say (innermost first): [`phase_of`] their words.
#[cfg(test)]
fn phase_of_frames<'a>(frames: impl Iterator<Item = &'a str>) -> Option<Phase> {
    phase_of(frames.map(frame_phase))
}

/// The phase a recorded category implies.
fn phase_of_category(c: Category) -> Option<Phase> {
    match c {
        Category::Grad | Category::AutogradDetail => Some(Phase::Backward),
        Category::Optimizer => Some(Phase::Optimizer),
        Category::Activation => Some(Phase::Forward),
        _ => None,
    }
}

/// Phase windows of the run: `[lo, hi]` and the phase their mark names.
fn phase_windows(trace: &Trace, index: &crate::index::Index) -> Vec<(Seq, Seq, Phase)> {
    let mut v: Vec<(Seq, Seq, Phase)> = each_window_of(trace, index, MarkKind::Phase)
        .filter_map(|w| phase_of_mark(&w.name).map(|p| (w.lo, w.hi, p)))
        .collect();
    v.sort_by_key(|w| w.0);
    v
}

/// The update regions: step windows, else the spans ending with each optimizer-step phase.
fn regions(
    trace: &Trace,
    index: &crate::index::Index,
    phases: &[(Seq, Seq, Phase)],
) -> (UpdatesBy, Vec<(String, Seq, Seq)>) {
    let steps: Vec<(String, Seq, Seq)> = each_window_of(trace, index, MarkKind::Step)
        .map(|w| (w.name.to_string(), w.lo, w.hi))
        .collect();
    if !steps.is_empty() {
        return (UpdatesBy::StepMarks, steps);
    }
    let n = index.len() as u64;
    let mut out = Vec::new();
    let mut lo = 0u64;
    for &(plo, phi, p) in phases {
        if p != Phase::Optimizer || phi.0 < lo {
            continue;
        }
        out.push((
            format!(
                "update {} (optimizer step #{}–#{})",
                out.len() + 1,
                trace.event_number(plo),
                trace.event_number(phi)
            ),
            Seq(lo),
            phi,
        ));
        lo = phi.0 + 1;
    }
    if out.is_empty() {
        let whole = vec![("whole run".to_string(), Seq(0), Seq(n.saturating_sub(1)))];
        return (UpdatesBy::None, whole);
    }
    (UpdatesBy::OptimizerSteps, out)
}

/// Most bytes of storages of category `cat` live at once.
fn most_live(trace: &Trace, cat: Category) -> u64 {
    most_live_where(trace, |id| {
        trace.storage_kind(id) == StorageKind::Block && trace.category(id) == cat
    })
}

/// The most bytes of the storages `keep` picks live at once (a sweep over their starts and
/// ends: storages from the start count from position 0).
pub(crate) fn most_live_where(trace: &Trace, keep: impl Fn(AllocId) -> bool) -> u64 {
    let mut ev: Vec<(u64, i128)> = Vec::new();
    for i in 0..trace.storage_count() {
        let id = AllocId(i as u32);
        if !keep(id) {
            continue;
        }
        let size = trace.size(id).0 as i128;
        let start = if trace.is_from_start(id) {
            0
        } else {
            trace.start(id).0
        };
        ev.push((start, size));
        if let Some(e) = trace.end(id) {
            ev.push((e.0, -size));
        }
    }
    // At one position, frees before allocations (a storage is live on [start, end)).
    ev.sort_by_key(|&(at, d)| (at, d > 0));
    let (mut cur, mut best) = (0i128, 0i128);
    for (_, d) in ev {
        cur += d;
        best = best.max(cur);
    }
    u64::try_from(best).unwrap_or(0)
}

/// The phase named by the innermost phase window holding `at` (windows sorted by start;
/// nested spans are looked through, a few deep).
fn marked_phase(windows: &[(Seq, Seq, Phase)], at: Seq) -> Option<Phase> {
    let after = windows.partition_point(|w| w.0 <= at);
    windows[..after]
        .iter()
        .rev()
        .take(8)
        .find(|w| at <= w.1)
        .map(|w| w.2)
}

/// What one allocation of the run is, for the scan (computed afresh on each pass by
/// [`Scan::seen`]: held for every allocation it cost 12 bytes each at `summary`'s peak).
struct Seen {
    id: AllocId,
    update: u32,
    phase: Option<Phase>,
    /// `SHOWN`, `INFERRED`, `HAS_STACK`, `SURVIVES_UPDATE`.
    bits: u8,
}

/// The phase comes from a mark or frames (visible in every update that runs it), not only
/// from a category (visible only where the phase allocates something new).
const SHOWN: u8 = 1;
const INFERRED: u8 = 2;
const HAS_STACK: u8 = 4;
const SURVIVES_UPDATE: u8 = 8;

impl Seen {
    fn update(&self) -> usize {
        self.update as usize
    }
    fn is(&self, bit: u8) -> bool {
        self.bits & bit != 0
    }
}

/// The passes over the run's allocations: what each is, from the trace, the update regions
/// and the phase marks, with the phase of each stack judged once.
struct Scan<'a> {
    trace: &'a Trace,
    regions: &'a [(String, Seq, Seq)],
    phase_marks: &'a [(Seq, Seq, Phase)],
    /// The phase each stack's frames show, by stack id (None: not judged yet).
    cache: Vec<Option<Option<Phase>>>,
    judged: super::frames::JudgedFrames<FramePhase>,
    /// Whether most allocations have frames (the snapshot's frame-less rule applies only
    /// then); set after the first pass.
    stacks_known: bool,
}

impl Scan<'_> {
    /// The update `id` was made in, for a block of the run (None: from the start, a
    /// segment, or outside every update).
    fn update_of(&self, id: AllocId) -> Option<usize> {
        let t = self.trace;
        if t.storage_kind(id) != StorageKind::Block || t.is_from_start(id) {
            return None;
        }
        let start = t.start(id);
        let update = self.regions.partition_point(|r| r.1 <= start);
        update
            .checked_sub(1)
            .filter(|&u| self.regions[u].2 >= start)
    }

    /// What allocation `id` is, if it is one of the run's.
    fn seen(&mut self, id: AllocId) -> Option<Seen> {
        let update = self.update_of(id)?;
        let t = self.trace;
        let sid = t.stack_id(id);
        let has_stack = !t.strings.stack(sid).is_empty();
        let start = t.start(id);
        let cat = t.category(id);
        let inferred = t.flags(id) & FLAG_INFERRED != 0;
        let marked = marked_phase(self.phase_marks, start);
        let slot = sid.0 as usize;
        if self.cache.len() <= slot {
            self.cache.resize(slot + 1, None);
        }
        let framed = match self.cache.get(slot).copied().flatten() {
            Some(framed) => framed,
            None => {
                let framed = phase_of(self.judged.stack(t, sid, frame_phase).into_iter());
                if let Some(c) = self.cache.get_mut(slot) {
                    *c = Some(framed);
                }
                framed
            }
        };
        // A snapshot's allocations without Python frames come from a thread that runs no
        // Python: on a GPU, the autograd engine's (the backward pass), where most
        // allocations have frames.
        let threadless = !has_stack && t.format == "snapshot";
        let shown = marked.or(framed).or(threadless.then_some(Phase::Backward));
        let mut phase = shown.or((!inferred).then(|| phase_of_category(cat)).flatten());
        if phase == Some(Phase::Backward) && !has_stack && !self.stacks_known && inferred {
            phase = None;
        }
        let survives_update = t.end(id).is_none_or(|e| e > self.regions[update].2);
        let bit = |on: bool, b: u8| if on { b } else { 0 };
        Some(Seen {
            id,
            update: update as u32,
            phase,
            bits: bit(shown.is_some(), SHOWN)
                | bit(inferred, INFERRED)
                | bit(has_stack, HAS_STACK)
                | bit(survives_update, SURVIVES_UPDATE),
        })
    }

    /// Calls `f` with each of the run's allocations, in id order.
    fn each(&mut self, mut f: impl FnMut(&Seen)) {
        for i in 0..self.trace.storage_count() {
            if let Some(s) = self.seen(AllocId(i as u32)) {
                f(&s);
            }
        }
    }
}

/// The facts of one run.
pub(crate) fn work(trace: &Trace, index: &crate::index::Index) -> Work {
    let phase_marks = phase_windows(trace, index);
    let (updates_by, regions) = regions(trace, index, &phase_marks);
    // Categories the file states (not inferred, not `unknown`).
    let recorded = (0..trace.storage_count()).any(|i| {
        let id = AllocId(i as u32);
        trace.storage_kind(id) == StorageKind::Block
            && trace.category(id) != Category::Unknown
            && trace.flags(id) & FLAG_INFERRED == 0
    });
    let mut scan = Scan {
        trace,
        regions: &regions,
        phase_marks: &phase_marks,
        cache: Default::default(),
        judged: super::frames::JudgedFrames::new(),
        stacks_known: false,
    };
    // First pass: how many blocks have frames, and whether the file states its inputs.
    let (mut blocks, mut with_stack) = (0u64, 0u64);
    let mut recorded_inputs = false;
    for i in 0..trace.storage_count() {
        let id = AllocId(i as u32);
        if trace.storage_kind(id) != StorageKind::Block || trace.is_from_start(id) {
            continue;
        }
        blocks += 1;
        with_stack += u64::from(!trace.strings.stack(trace.stack_id(id)).is_empty());
        if scan.update_of(id).is_some() {
            recorded_inputs |=
                trace.category(id) == Category::Input && trace.flags(id) & FLAG_INFERRED == 0;
        }
    }
    // An instant without history shows the state at the dump: its stacks say what was made,
    // not what ran (a backward whose memory was freed leaves nothing).
    let stacks_known = !trace.one_instant && blocks > 0 && with_stack * 2 >= blocks;
    scan.stacks_known = stacks_known;
    let mut evidence = Vec::new();
    if stacks_known {
        evidence.push("stacks");
    }
    if !phase_marks.is_empty() {
        evidence.push("phase marks");
    }
    if recorded {
        evidence.push("recorded categories");
    }
    let mut updates: Vec<Update> = regions
        .iter()
        .map(|(name, lo, hi)| Update {
            name: name.clone(),
            lo: *lo,
            hi: *hi,
            phases: Phases::default(),
            inputs: Vec::new(),
            optimizer_state_made: 0,
        })
        .collect();
    // Second pass: where each update's forward begins, the phases seen, and the first
    // update with a forward.
    let mut first_forward: Vec<Option<Seq>> = vec![None; updates.len()];
    let mut per_update = Phases::default();
    let mut first: Option<u32> = None;
    scan.each(|s| {
        if s.phase == Some(Phase::Forward) {
            let start = trace.start(s.id);
            let f = &mut first_forward[s.update()];
            *f = Some(f.map_or(start, |f| f.min(start)));
            first = Some(first.map_or(s.update, |u| u.min(s.update)));
        }
        if let (true, Some(p)) = (s.is(SHOWN), s.phase) {
            per_update.add(p);
        }
    });
    // Third pass: each update's phases, the optimizer state it made ((tensor size, block
    // size)), its inputs; the first forward's allocations.
    let mut state_made: Vec<Vec<(u64, u64)>> = vec![Vec::new(); updates.len()];
    let mut first_forward_allocs: Vec<(Seq, u64)> = Vec::new();
    scan.each(|s| {
        let (u, cat, start) = (s.update(), trace.category(s.id), trace.start(s.id));
        if let Some(p) = s.phase {
            updates[u].phases.add(p);
        }
        if s.phase == Some(Phase::Forward) && Some(s.update) == first {
            first_forward_allocs.push((start, trace.tensor_size(s.id).0));
        }
        // State made in the update (not in the setup before its first forward: an optimizer
        // that makes its state in its own `__init__` made it before any step).
        if cat == Category::Optimizer
            && s.is(SURVIVES_UPDATE)
            && first_forward[u].is_none_or(|f| start > f)
        {
            if let Some(m) = state_made.get_mut(u) {
                m.push((trace.tensor_size(s.id).0, trace.size(s.id).0));
            }
        }
        let input = if recorded_inputs {
            cat == Category::Input && !s.is(INFERRED)
        } else {
            s.is(HAS_STACK)
                && s.phase.is_none()
                && cat.band() != crate::trace::Band::Persistent
                && first_forward[u].is_some_and(|f| start < f)
        };
        if input {
            updates[u].inputs.push(trace.size(s.id).0);
        }
    });
    for u in &mut updates {
        u.inputs.sort_unstable();
    }
    replaced_state(trace, &regions, &state_made, &mut updates);
    let phases = updates
        .iter()
        .fold(Phases::default(), |acc, u| acc.union(u.phases));
    let split = (0..trace.storage_count()).any(|i| {
        matches!(
            trace.category(AllocId(i as u32)),
            Category::Param | Category::Grad | Category::Optimizer | Category::Buffer
        )
    });
    let params = most_live(trace, Category::Param);
    let param_bytes = (split && (recorded || params > 0)).then_some(params);
    // Inferred categories that found no optimizer state in a run that steps an optimizer:
    // the state may predate the recording (unknown, not 0).
    let state = most_live(trace, Category::Optimizer);
    let optimizer_bytes = if recorded || state > 0 {
        Some(state)
    } else if stacks_known && !phases.has(Phase::Optimizer) {
        Some(0)
    } else {
        None
    };
    let first_forward = first_forward_sizes(first_forward_allocs);
    let before_steps = made_before_steps(trace, &regions);
    let any_inputs = updates.iter().any(|u| !u.inputs.is_empty());
    let inputs_source = match (recorded_inputs, any_inputs) {
        (true, _) => Some(InputsSource::Recorded),
        (false, true) => Some(InputsSource::Inferred),
        (false, false) => None,
    };
    Work {
        updates_by,
        updates,
        phases,
        per_update,
        absence_knowable: !evidence.is_empty(),
        evidence,
        allocations_recorded: blocks > 0 && !trace.one_instant,
        param_count: super::persistent::param_count(trace),
        param_bytes,
        optimizer_bytes,
        inputs_source,
        first_forward,
        before_steps,
    }
}

/// The sizes of the first [`FIRST_FORWARD`] allocations of the first update that has a
/// forward, in order (`allocs`: that update's forward allocations, (start, tensor size)).
fn first_forward_sizes(mut allocs: Vec<(Seq, u64)>) -> Vec<u64> {
    allocs.sort_unstable();
    allocs
        .into_iter()
        .take(FIRST_FORWARD)
        .map(|(_, t)| t)
        .collect()
}

/// The sizes (ascending) of allocations with a stack made before the first update's region,
/// not persistent.
fn made_before_steps(trace: &Trace, regions: &[(String, Seq, Seq)]) -> Vec<u64> {
    let Some(first) = regions.first().map(|r| r.1) else {
        return Vec::new();
    };
    let mut v: Vec<u64> = (0..trace.storage_count())
        .map(|i| AllocId(i as u32))
        .filter(|&id| {
            trace.storage_kind(id) == StorageKind::Block
                && !trace.is_from_start(id)
                && trace.start(id) < first
                && trace.category(id).band() != crate::trace::Band::Persistent
                && !trace.strings.stack(trace.stack_id(id)).is_empty()
        })
        .map(|id| trace.tensor_size(id).0)
        .collect();
    v.sort_unstable();
    v
}

/// Optimizer state an update freed is state it replaced, not state it added (an optimizer
/// that rebinds `state["m"] = new_m` makes and frees its state every step): each update's
/// state made (`made`: tensor and block sizes) counts only what no state of the same tensor
/// size freed in that update was replaced by.
fn replaced_state(
    trace: &Trace,
    regions: &[(String, Seq, Seq)],
    made: &[Vec<(u64, u64)>],
    updates: &mut [Update],
) {
    let mut freed: Vec<rustc_hash::FxHashMap<u64, usize>> = vec![Default::default(); updates.len()];
    for i in 0..trace.storage_count() {
        let id = AllocId(i as u32);
        if trace.storage_kind(id) != StorageKind::Block || trace.category(id) != Category::Optimizer
        {
            continue;
        }
        let Some(end) = trace.end(id) else {
            continue;
        };
        let k = regions.partition_point(|r| r.1 <= end);
        let Some(f) = k
            .checked_sub(1)
            .filter(|&k| regions.get(k).is_some_and(|r| r.2 >= end))
            .and_then(|k| freed.get_mut(k))
        else {
            continue;
        };
        *f.entry(trace.tensor_size(id).0).or_default() += 1;
    }
    for ((u, made), freed) in updates.iter_mut().zip(made).zip(&mut freed) {
        for &(tensor, block) in made {
            match freed.get_mut(&tensor).filter(|n| **n > 0) {
                Some(n) => *n -= 1,
                None => u.optimizer_state_made += block,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(frames: &[&str]) -> Option<Phase> {
        phase_of_frames(frames.iter().copied())
    }

    /// torchtitan's `forward_backward_step` and Megatron's `forward_backward_no_pipelining`
    /// drive both passes: a forward's allocation under them is forward work, and a mark of
    /// that name is no phase.
    #[test]
    fn a_frame_that_drives_both_passes_names_neither() {
        assert_eq!(
            phase(&[
                "/x/torch/nn/functional.py:3104:cross_entropy",
                "/x/torchtitan/models/llama3/model.py:410:forward",
                "/x/torchtitan/train.py:377:forward_backward_step",
                "/x/torchtitan/train.py:520:train_step"
            ]),
            Some(Phase::Forward)
        );
        assert_eq!(
            phase(&[
                "/x/megatron/core/pipeline_parallel/schedules.py:420:forward_backward_no_pipelining",
                "/x/pretrain_gpt.py:210:train_step"
            ]),
            None
        );
        assert_eq!(
            phase(&[
                "/x/torch/autograd/graph.py:829:_engine_run_backward",
                "/x/torchtitan/train.py:377:forward_backward_step"
            ]),
            Some(Phase::Backward)
        );
        assert_eq!(phase_of_mark("forward_backward_step"), None);
        assert_eq!(phase_of_mark("## backward ##"), Some(Phase::Backward));
    }

    #[test]
    fn frames_of_each_source_name_their_phase() {
        // Snapshot frames (file:line:name).
        assert_eq!(
            phase(&[
                "/x/torch/nn/modules/linear.py:134:forward",
                "run.py:80:train_steps"
            ]),
            Some(Phase::Forward)
        );
        assert_eq!(
            phase(&[
                "/x/torch/optim/adam.py:178:_init_group",
                "run.py:82:train_steps"
            ]),
            Some(Phase::Optimizer)
        );
        // A recomputed forward under backward is backward work.
        assert_eq!(
            phase(&[
                "model.py:20 forward",
                "torch/utils/checkpoint.py:320 recompute_fn",
                "autograd: layers.1 backward"
            ]),
            Some(Phase::Backward)
        );
        // Kineto op spans: compute ops are forward, factory ops (the batch) are nothing.
        assert_eq!(
            phase(&["aten::addmm", "aten::linear"]),
            Some(Phase::Forward)
        );
        assert_eq!(phase(&["aten::empty", "aten::randn"]), None);
        assert_eq!(
            phase(&[
                "aten::mm",
                "AddmmBackward0",
                "autograd::engine::evaluate_function: AddmmBackward0"
            ]),
            Some(Phase::Backward)
        );
        assert_eq!(
            phase(&["data.py:10 __next__", "train.py:50 train_step"]),
            None
        );
    }

    #[test]
    fn phase_marks_name_phases() {
        assert_eq!(
            phase_of_mark("Optimizer.step#Adam.step"),
            Some(Phase::Optimizer)
        );
        assert_eq!(phase_of_mark("Optimizer.zero_grad#Adam.zero_grad"), None);
        assert_eq!(phase_of_mark("forward"), Some(Phase::Forward));
        assert_eq!(phase_of_mark("loss.backward"), Some(Phase::Backward));
        assert_eq!(phase_of_mark("setup"), None);
    }
}
