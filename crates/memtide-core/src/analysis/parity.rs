//! Did two runs do the same work? The parity lines (parameters, optimizer state, inputs per
//! step, steps measured, phases present), each same / differs / unknown, and the verdict:
//! same work, different work, or cannot tell with what is missing.

use super::work::{Phase, Work};
use crate::trace::human_bytes;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One line's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LineState {
    Same,
    Differs,
    Unknown,
}

/// The overall verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    SameWork,
    DifferentWork,
    CannotTell,
}

impl Verdict {
    pub fn words(self) -> &'static str {
        match self {
            Verdict::SameWork => "same work",
            Verdict::DifferentWork => "different work",
            Verdict::CannotTell => "cannot tell",
        }
    }
}

/// One parity line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ParityLine {
    /// `parameters`, `optimizer_state`, `inputs`, `steps`, `phases`.
    pub line: &'static str,
    pub state: LineState,
    /// Whether a difference here makes the work different (a precision change of the same
    /// parameters does not).
    pub breaks_parity: bool,
    /// Each side's figures (`null` members where unknowable).
    pub a: Value,
    pub b: Value,
    /// `same: 268,435,456 parameters, 1.000 GiB` / `differs: A … vs B …` / `unknown: …`.
    pub words: String,
}

/// The parity check.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Parity {
    pub verdict: Verdict,
    /// Lines that differ and make the work different.
    pub differs: Vec<&'static str>,
    /// What cannot be known, one phrase each (`inputs: A records none`).
    pub missing: Vec<String>,
    pub lines: Vec<ParityLine>,
    /// `same work` / `different work: inputs, phases` / `cannot tell: …`.
    pub words: String,
}

fn line(
    name: &'static str,
    state: LineState,
    breaks: bool,
    a: Value,
    b: Value,
    words: String,
) -> ParityLine {
    ParityLine {
        line: name,
        state,
        breaks_parity: breaks && state == LineState::Differs,
        a,
        b,
        words,
    }
}

fn opt_bytes(v: Option<u64>) -> String {
    v.map_or("unknown".into(), human_bytes)
}

fn params_words(count: Option<u64>, bytes: Option<u64>) -> String {
    let c = count.map_or("count unknown".into(), |c| {
        format!("{} parameters", crate::trace::units::grouped(c))
    });
    format!("{c}, {}", opt_bytes(bytes))
}

fn parameters(a: &Work, b: &Work) -> ParityLine {
    let va = json!({"count": a.param_count, "bytes": a.param_bytes});
    let vb = json!({"count": b.param_count, "bytes": b.param_bytes});
    let (wa, wb) = (
        params_words(a.param_count, a.param_bytes),
        params_words(b.param_count, b.param_bytes),
    );
    let counts = a.param_count.zip(b.param_count);
    let bytes = a.param_bytes.zip(b.param_bytes);
    let differs = format!("differs: A {wa} vs B {wb}");
    let count_differs = counts.is_some_and(|(x, y)| x != y);
    let bytes_differ = bytes.map(|(x, y)| x != y);
    let (state, breaks, words) = if count_differs {
        (LineState::Differs, true, differs)
    } else if counts.is_some() && bytes_differ == Some(true) {
        (
            LineState::Differs,
            false,
            format!(
                "{differs} — the same count at another width: a precision change, the same model"
            ),
        )
    } else if bytes_differ == Some(true) {
        (LineState::Differs, true, differs)
    } else if counts.is_some() || bytes_differ == Some(false) {
        (LineState::Same, true, format!("same: {wa}"))
    } else {
        (
            LineState::Unknown,
            true,
            format!(
                "unknown: {}",
                who_lacks(
                    a.param_bytes.is_none() && a.param_count.is_none(),
                    b.param_bytes.is_none() && b.param_count.is_none(),
                    "identifies no parameters (no count in its header, no parameter bytes)"
                )
            ),
        )
    };
    line("parameters", state, breaks, va, vb, words)
}

/// Which run's phases are unknown and why (each run's own reason where they differ).
fn phases_unknown(a: &Work, b: &Work) -> String {
    match (a.absence_knowable, b.absence_knowable) {
        (false, false) if a.why_phases_unknown() != b.why_phases_unknown() => {
            format!("A {}; B {}", a.why_phases_unknown(), b.why_phases_unknown())
        }
        (false, _) => who_lacks(true, !b.absence_knowable, a.why_phases_unknown()),
        _ => who_lacks(false, true, b.why_phases_unknown()),
    }
}

fn who_lacks(a: bool, b: bool, what: &str) -> String {
    match (a, b) {
        (true, true) => format!("each file {what}"),
        (true, false) => format!("A {what}"),
        _ => format!("B {what}"),
    }
}

fn optimizer_state(a: &Work, b: &Work) -> ParityLine {
    let va = json!({"bytes": a.optimizer_bytes});
    let vb = json!({"bytes": b.optimizer_bytes});
    let w = |v: Option<u64>| match v {
        Some(0) => "none".to_string(),
        v => opt_bytes(v),
    };
    match (a.optimizer_bytes, b.optimizer_bytes) {
        (Some(x), Some(y)) if x == y => line(
            "optimizer_state",
            LineState::Same,
            true,
            va,
            vb,
            format!("same: {}", w(Some(x))),
        ),
        (Some(x), Some(y)) => line(
            "optimizer_state",
            LineState::Differs,
            true,
            va,
            vb,
            format!("differs: A {} vs B {}", w(Some(x)), w(Some(y))),
        ),
        (x, y) => line(
            "optimizer_state",
            LineState::Unknown,
            true,
            va,
            vb,
            format!(
                "unknown: {}",
                who_lacks(
                    x.is_none(),
                    y.is_none(),
                    "shows no optimizer state (none identified: it may predate the recording)"
                )
            ),
        ),
    }
}

/// Each distinct per-step input signature (sizes ascending) and how many steps had it.
fn signatures(w: &Work) -> BTreeMap<Vec<u64>, usize> {
    let mut m = BTreeMap::new();
    for u in &w.updates {
        *m.entry(u.inputs.clone()).or_insert(0) += 1;
    }
    m
}

/// How many signatures JSON and text list.
const SIGNATURES_SHOWN: usize = 8;

fn inputs_value(w: &Work) -> Value {
    let per_step: Vec<Value> = signatures(w)
        .into_iter()
        .take(SIGNATURES_SHOWN)
        .map(|(sizes, steps)| json!({"count": sizes.len(), "bytes": sizes.iter().sum::<u64>(), "sizes": sizes, "steps": steps}))
        .collect();
    json!({
        "source": w.inputs_source,
        "per_step": w.inputs_source.map(|_| per_step),
    })
}

/// `1 × 64.00 MiB per step`, `2 × 64.00 MiB + 1 × 4.000 KiB per step`, or each signature
/// with its step count when they vary.
pub(crate) fn inputs_words(w: &Work) -> String {
    let sig = signatures(w);
    let one = |sizes: &[u64]| -> String {
        if sizes.is_empty() {
            return "none".into();
        }
        let mut groups: Vec<(u64, usize)> = Vec::new();
        for &s in sizes.iter().rev() {
            match groups.last_mut() {
                Some((x, n)) if *x == s => *n += 1,
                _ => groups.push((s, 1)),
            }
        }
        groups
            .iter()
            .map(|(s, n)| format!("{n} × {}", human_bytes(*s)))
            .collect::<Vec<_>>()
            .join(" + ")
    };
    if sig.len() == 1 {
        let (s, _) = sig
            .iter()
            .next()
            .map(|(s, n)| (s.clone(), *n))
            .unwrap_or_default();
        return format!("{} per step", one(&s));
    }
    let parts: Vec<String> = sig
        .iter()
        .take(SIGNATURES_SHOWN)
        .map(|(s, n)| format!("{} in {n} steps", one(s)))
        .collect();
    format!("varies: {}", parts.join("; "))
}

/// `4.000 MiB, 4.000 MiB, 16.00 MiB`.
fn sizes_words(v: &[u64]) -> String {
    v.iter()
        .map(|&s| human_bytes(s))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The inputs from evidence where no input allocation is seen on a side: what the batch and
/// sequence make the model allocate (the first forward's first allocation and its largest:
/// checkpointing, offloading and the like keep them, they free sooner) and the data made once
/// before the steps. Same when every piece both sides have agrees; None (cannot tell) when
/// one disagrees or the first forward is missing: a difference here may be the method's own.
fn inputs_inferred(a: &Work, b: &Work, va: Value, vb: Value) -> Option<ParityLine> {
    let first = |w: &Work| w.first_forward.first().copied();
    let largest = |w: &Work| w.first_forward.iter().copied().max();
    let (f, l) = (first(a).zip(first(b))?, largest(a).zip(largest(b))?);
    let before = !a.before_steps.is_empty() && !b.before_steps.is_empty();
    if f.0 != f.1 || l.0 != l.1 || (before && a.before_steps != b.before_steps) {
        return None;
    }
    let mut why = format!(
        "the first forward allocates {} first and {} at most in each",
        human_bytes(f.0),
        human_bytes(l.0)
    );
    if before {
        why.push_str(&format!(
            ", and the data made before the steps is the same ({})",
            sizes_words(&a.before_steps)
        ));
    }
    Some(line(
        "inputs",
        LineState::Same,
        true,
        va,
        vb,
        format!("same (inferred: {why})"),
    ))
}

/// What the inputs' evidence says where it cannot settle them (for the `unknown` words).
fn inputs_evidence(a: &Work, b: &Work) -> Option<String> {
    let (fa, fb) = (&a.first_forward, &b.first_forward);
    if fa.is_empty() || fb.is_empty() {
        return None;
    }
    Some(format!(
        "the first forward allocates A {} vs B {}{}",
        sizes_words(fa),
        sizes_words(fb),
        if !a.before_steps.is_empty() || !b.before_steps.is_empty() {
            format!(
                "; made before the steps: A {} vs B {}",
                if a.before_steps.is_empty() {
                    "none".into()
                } else {
                    sizes_words(&a.before_steps)
                },
                if b.before_steps.is_empty() {
                    "none".into()
                } else {
                    sizes_words(&b.before_steps)
                }
            )
        } else {
            String::new()
        }
    ))
}

fn inputs(a: &Work, b: &Work) -> ParityLine {
    let (va, vb) = (inputs_value(a), inputs_value(b));
    if a.inputs_source.is_none() || b.inputs_source.is_none() {
        if let Some(l) = inputs_inferred(a, b, va.clone(), vb.clone()) {
            return l;
        }
        let evidence = inputs_evidence(a, b)
            .map(|e| format!(" — the evidence disagrees: {e}"))
            .unwrap_or_default();
        return line(
            "inputs",
            LineState::Unknown,
            true,
            va,
            vb,
            format!(
                "unknown: {}{evidence}",
                who_lacks(
                    a.inputs_source.is_none(),
                    b.inputs_source.is_none(),
                    "shows no input allocation (no `input` category, none made before a step's forward)"
                )
            ),
        );
    }
    let (wa, wb) = (inputs_words(a), inputs_words(b));
    if signatures(a).keys().eq(signatures(b).keys()) {
        line(
            "inputs",
            LineState::Same,
            true,
            va,
            vb,
            format!("same: {wa}"),
        )
    } else {
        line(
            "inputs",
            LineState::Differs,
            true,
            va,
            vb,
            format!("differs: A {wa} vs B {wb} — a batch or sequence change"),
        )
    }
}

fn steps(a: &Work, b: &Work) -> ParityLine {
    let v = |w: &Work| json!({"count": w.steps(), "by": w.updates_by});
    let unit = |w: &Work| {
        let n = w.steps().unwrap_or(0);
        match w.updates_by {
            super::work::UpdatesBy::OptimizerSteps => format!("optimizer {}", steps_word(n)),
            _ => steps_word(n).to_string(),
        }
    };
    match (a.steps(), b.steps()) {
        (Some(x), Some(y)) if x == y => line(
            "steps",
            LineState::Same,
            true,
            v(a),
            v(b),
            format!("same: {x} {}", unit(a)),
        ),
        (Some(x), Some(y)) => line(
            "steps",
            LineState::Differs,
            true,
            v(a),
            v(b),
            format!("differs: A {x} {} vs B {y} {}", unit(a), unit(b)),
        ),
        (x, y) => line(
            "steps",
            LineState::Unknown,
            true,
            v(a),
            v(b),
            format!(
                "unknown: {}",
                who_lacks(
                    x.is_none(),
                    y.is_none(),
                    "marks no step and no optimizer step"
                )
            ),
        ),
    }
}

/// A phase on one side: seen, not seen where the file would show it, or unknown.
fn phase_state(w: &Work, p: Phase) -> Option<bool> {
    if w.phases.has(p) {
        Some(true)
    } else if w.absence_knowable {
        Some(false)
    } else {
        None
    }
}

fn phases(a: &Work, b: &Work) -> ParityLine {
    let v = |w: &Work| {
        json!({
            "forward": phase_state(w, Phase::Forward),
            "backward": phase_state(w, Phase::Backward),
            "optimizer": phase_state(w, Phase::Optimizer),
        })
    };
    let mut missing_a = Vec::new();
    let mut missing_b = Vec::new();
    let mut unknown = false;
    for p in Phase::ALL {
        match (phase_state(a, p), phase_state(b, p)) {
            (Some(true), Some(false)) => missing_b.push(p.name()),
            (Some(false), Some(true)) => missing_a.push(p.name()),
            (Some(x), Some(y)) if x == y => {}
            _ => unknown = true,
        }
    }
    let (wa, wb) = (a.phases.words(), b.phases.words());
    if !missing_a.is_empty() || !missing_b.is_empty() {
        let mut why = Vec::new();
        if !missing_a.is_empty() {
            why.push(format!("A has no {}", missing_a.join(", ")));
        }
        if !missing_b.is_empty() {
            why.push(format!("B has no {}", missing_b.join(", ")));
        }
        line(
            "phases",
            LineState::Differs,
            true,
            v(a),
            v(b),
            format!("differs: A {wa} vs B {wb} — {}", why.join("; ")),
        )
    } else if unknown {
        line(
            "phases",
            LineState::Unknown,
            true,
            v(a),
            v(b),
            format!("unknown: {}", phases_unknown(a, b)),
        )
    } else {
        line(
            "phases",
            LineState::Same,
            true,
            v(a),
            v(b),
            format!("same: {wa}"),
        )
    }
}

/// Line keys as words (`optimizer_state` → `optimizer state`).
pub(crate) fn line_words(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| k.replace('_', " "))
        .collect::<Vec<_>>()
        .join(", ")
}

fn steps_word(n: usize) -> &'static str {
    if n == 1 {
        "step"
    } else {
        "steps"
    }
}

/// The parity check of two runs.
pub(crate) fn parity(a: &Work, b: &Work) -> Parity {
    let lines = vec![
        parameters(a, b),
        optimizer_state(a, b),
        inputs(a, b),
        steps(a, b),
        phases(a, b),
    ];
    let differs: Vec<&'static str> = lines
        .iter()
        .filter(|l| l.breaks_parity)
        .map(|l| l.line)
        .collect();
    let missing: Vec<String> = lines
        .iter()
        .filter(|l| l.state == LineState::Unknown)
        .map(|l| format!("{}: {}", l.line, l.words.trim_start_matches("unknown: ")))
        .collect();
    let verdict = if !differs.is_empty() {
        Verdict::DifferentWork
    } else if !missing.is_empty() {
        Verdict::CannotTell
    } else {
        Verdict::SameWork
    };
    let inferred: Vec<String> = lines
        .iter()
        .filter_map(|l| {
            l.words
                .strip_prefix("same (inferred: ")
                .and_then(|w| w.strip_suffix(')'))
                .map(|w| format!("{} from evidence: {w}", l.line))
        })
        .collect();
    let words = match verdict {
        Verdict::SameWork if !inferred.is_empty() => {
            format!("same work (inferred: {})", inferred.join("; "))
        }
        Verdict::SameWork => "same work".to_string(),
        Verdict::DifferentWork => format!("different work: {} differ", line_words(&differs)),
        Verdict::CannotTell => format!("cannot tell: {}", missing.join("; ")),
    };
    Parity {
        verdict,
        differs,
        missing,
        lines,
        words,
    }
}
