//! The measurement boundary of one run: whether its window holds a full training update after
//! the optimizer state exists (the lazy first-step allocation named), or is forward-only,
//! warm-up only, or cut mid-step — what a peak measured in it can stand for.

use super::work::{Phase, Phases, UpdatesBy, Work};
use crate::trace::human_bytes;
use serde::Serialize;

/// The kind of window a run measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BoundaryKind {
    /// At least one complete update (forward, backward, optimizer step) after the optimizer
    /// state exists.
    FullUpdate,
    /// The only full update is the one that allocates the optimizer state.
    WarmUpOnly,
    /// Forward passes only.
    ForwardOnly,
    /// Forward and backward, no optimizer step.
    NoOptimizerStep,
    /// The run ends inside its only update.
    CutMidStep,
    CannotTell,
}

impl BoundaryKind {
    pub fn words(self) -> &'static str {
        match self {
            BoundaryKind::FullUpdate => "full update after the optimizer state exists",
            BoundaryKind::WarmUpOnly => "warm-up only",
            BoundaryKind::ForwardOnly => "forward-only",
            BoundaryKind::NoOptimizerStep => "no optimizer step",
            BoundaryKind::CutMidStep => "cut mid-step",
            BoundaryKind::CannotTell => "cannot tell",
        }
    }
}

/// The optimizer state's lazy allocation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LazyState {
    /// The update that allocated it (`step 0`).
    pub step: String,
    pub bytes: u64,
}

/// A last update that stops before the phases the earlier ones had.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cut {
    pub step: String,
    pub missing: Vec<Phase>,
}

/// One run's measurement boundary.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Boundary {
    pub kind: BoundaryKind,
    /// Complete updates holding all three phases after the optimizer state exists.
    pub full_updates: usize,
    /// Updates measured (None: none is marked).
    pub updates: Option<usize>,
    pub updates_by: UpdatesBy,
    pub lazy_state: Option<LazyState>,
    pub cut: Option<Cut>,
    /// The boundary in one line.
    pub words: String,
}

fn all_three(p: Phases) -> bool {
    Phase::ALL.iter().all(|&x| p.has(x))
}

/// The boundary of a run from its facts.
pub(crate) fn boundary(w: &Work) -> Boundary {
    let n = w.updates.len();
    let marked = w.updates_by != UpdatesBy::None;
    // The last update lacks phases the one before it had: the run stops inside it.
    let cut = (marked && n >= 2)
        .then(|| {
            let before = w.effective_phases(n - 2);
            let last = w.effective_phases(n - 1);
            let missing: Vec<Phase> = before
                .list()
                .into_iter()
                .filter(|&p| !last.has(p))
                .collect();
            (!missing.is_empty()).then(|| Cut {
                step: w.updates[n - 1].name.clone(),
                missing,
            })
        })
        .flatten();
    let complete = if cut.is_some() { n - 1 } else { n };
    let lazy_at = w.lazy_state_update();
    let lazy_state = lazy_at.map(|k| LazyState {
        step: w.updates[k].name.clone(),
        bytes: w.updates[k].optimizer_state_made,
    });
    let done: Vec<Phases> = (0..complete).map(|k| w.effective_phases(k)).collect();
    let full_updates = done
        .iter()
        .enumerate()
        .filter(|(k, p)| marked && all_three(**p) && lazy_at.is_none_or(|l| *k > l))
        .count();
    let any_full = marked && done.iter().any(|p| all_three(*p));
    let seen = done.iter().fold(Phases::default(), |a, p| a.union(*p));
    let kind = if full_updates > 0 {
        BoundaryKind::FullUpdate
    } else if any_full {
        BoundaryKind::WarmUpOnly
    } else if !w.absence_knowable || seen.has(Phase::Optimizer) {
        BoundaryKind::CannotTell
    } else if seen.has(Phase::Backward) {
        BoundaryKind::NoOptimizerStep
    } else if seen.has(Phase::Forward) {
        BoundaryKind::ForwardOnly
    } else if cut.is_some() || (complete == 0 && n > 0) {
        BoundaryKind::CutMidStep
    } else {
        BoundaryKind::CannotTell
    };
    let b = Boundary {
        kind,
        full_updates,
        updates: w.steps(),
        updates_by: w.updates_by,
        lazy_state,
        cut,
        words: String::new(),
    };
    Boundary {
        words: words(&b, w),
        ..b
    }
}

/// The boundary in one line.
fn words(b: &Boundary, w: &Work) -> String {
    let unit = match b.updates_by {
        UpdatesBy::OptimizerSteps => "optimizer steps",
        _ => "steps",
    };
    let lazy = match (&b.lazy_state, w.optimizer_bytes) {
        (Some(l), _) => format!(
            "optimizer state {} allocated lazily in {}",
            human_bytes(l.bytes),
            l.step
        ),
        (None, Some(0)) => "no optimizer state allocated".into(),
        (None, Some(_)) => "optimizer state allocated before the first step".into(),
        (None, None) => "optimizer state not identified (it may predate the recording)".into(),
    };
    let mut s = match b.kind {
        BoundaryKind::FullUpdate => format!(
            "{}: {} of {} {unit}; {lazy}",
            b.kind.words(),
            b.full_updates,
            w.updates.len()
        ),
        BoundaryKind::WarmUpOnly => format!(
            "{}: the only full update is the first ({lazy}); no update after the state exists is measured",
            b.kind.words()
        ),
        BoundaryKind::ForwardOnly => format!(
            "{}: no backward or optimizer step in {}",
            b.kind.words(),
            region_words(b, unit)
        ),
        BoundaryKind::NoOptimizerStep => format!(
            "{}: only forward and backward ran in {}",
            b.kind.words(),
            region_words(b, unit)
        ),
        BoundaryKind::CutMidStep => format!("{}: the run ends inside its only step", b.kind.words()),
        BoundaryKind::CannotTell => format!(
            "{}: {}",
            b.kind.words(),
            if !w.absence_knowable {
                let why = w.why_phases_unknown();
                if w.allocations_recorded {
                    format!("the file {why} to show which phases ran")
                } else {
                    format!("the file {why}: which phases ran is unknown")
                }
            } else if w.updates_by == UpdatesBy::None {
                "no step marks: which update each allocation belongs to is unknown".to_string()
            } else {
                format!(
                    "no step shows forward, backward and optimizer step together (seen: {})",
                    w.phases.words()
                )
            }
        ),
    };
    if let Some(c) = &b.cut {
        let missing: Vec<&str> = c.missing.iter().map(|p| p.name()).collect();
        s.push_str(&format!(
            "; the last step ({}) is cut mid-step: no {}",
            c.step,
            missing.join(", ")
        ));
    }
    s
}

/// Where the phases were looked for: `3 steps`, `its one step`, or `the whole run (no step marks)` when
/// nothing divides it (it read "in no step marks and no optimizer steps").
fn region_words(b: &Boundary, unit: &str) -> String {
    match b.updates {
        Some(1) => format!("its one {}", unit.trim_end_matches('s')),
        Some(n) => format!("{n} {unit}"),
        None => "the whole run (no step marks)".into(),
    }
}

/// A warning when two runs' boundaries differ (None when they agree).
pub(crate) fn boundary_warning(a: &Boundary, b: &Boundary) -> Option<String> {
    let label = |x: &Boundary| match &x.cut {
        Some(c) => format!(
            "{} (the last step, {}, cut mid-step)",
            x.kind.words(),
            c.step
        ),
        None => x.kind.words().to_string(),
    };
    (a.kind != b.kind || a.cut.is_some() != b.cut.is_some()).then(|| {
        format!(
            "the runs measured different windows: A {} vs B {} — their peaks do not stand for the same thing",
            label(a),
            label(b)
        )
    })
}
