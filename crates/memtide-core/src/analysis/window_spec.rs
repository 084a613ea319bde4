//! Choosing a measurement window (docs/concepts.md, fact 7): `steady` (the last full step after the
//! warm-up step), `step:N`, `marks:A..B`, `reset_peak` (since the last reset), or the whole run.

use super::windows::windows_of;
use crate::index::Index;
use crate::trace::{MarkKind, Seq, Trace};

/// A window request as written on the command line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WindowSpec {
    Whole,
    Steady,
    Step(String),
    Marks(String, String),
    ResetPeak,
}

/// A resolved window: inclusive positions and a label every figure carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    pub spec: String,
    pub label: String,
    pub lo: Seq,
    pub hi: Seq,
}

/// Errors resolving a window.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WindowError {
    #[error("invalid --window {0:?}: expected steady, step:N, marks:A..B, reset_peak or all")]
    Syntax(String),
    #[error("window {spec}: {reason}")]
    Unavailable { spec: String, reason: String },
}

impl WindowSpec {
    pub fn parse(s: &str) -> Result<WindowSpec, WindowError> {
        let s = s.trim();
        Ok(match s {
            "all" | "whole" => WindowSpec::Whole,
            "steady" => WindowSpec::Steady,
            "reset_peak" | "reset" => WindowSpec::ResetPeak,
            _ => {
                if let Some(n) = s.strip_prefix("step:") {
                    if n.is_empty() {
                        return Err(WindowError::Syntax(s.into()));
                    }
                    WindowSpec::Step(n.to_string())
                } else if let Some(r) = s.strip_prefix("marks:") {
                    let (a, b) = r
                        .split_once("..")
                        .ok_or_else(|| WindowError::Syntax(s.into()))?;
                    if a.is_empty() || b.is_empty() {
                        return Err(WindowError::Syntax(s.into()));
                    }
                    WindowSpec::Marks(a.to_string(), b.to_string())
                } else {
                    return Err(WindowError::Syntax(s.into()));
                }
            }
        })
    }

    pub fn text(&self) -> String {
        match self {
            WindowSpec::Whole => "all".into(),
            WindowSpec::Steady => "steady".into(),
            WindowSpec::Step(n) => format!("step:{n}"),
            WindowSpec::Marks(a, b) => format!("marks:{a}..{b}"),
            WindowSpec::ResetPeak => "reset_peak".into(),
        }
    }

    /// Resolves the window on a trace.
    pub fn resolve(&self, trace: &Trace, index: &Index) -> Result<Resolved, WindowError> {
        let spec = self.text();
        let unavailable = |reason: &str| WindowError::Unavailable {
            spec: spec.clone(),
            reason: reason.to_string(),
        };
        let n = index.len() as u64;
        if n == 0 {
            return Err(unavailable("the trace has no events"));
        }
        let last = Seq(n - 1);
        match self {
            WindowSpec::Whole => Ok(Resolved {
                spec,
                label: "whole run".into(),
                lo: Seq(0),
                hi: last,
            }),
            WindowSpec::Steady => {
                let steps = windows_of(trace, index, MarkKind::Step);
                if steps.len() < 2 {
                    return Err(unavailable(&format!(
                        "needs at least two step marks (a warm-up step and a full step after it); the trace has {}",
                        steps.len()
                    )));
                }
                let w = &steps[steps.len() - 1];
                Ok(Resolved {
                    spec,
                    label: w.name.to_string(),
                    lo: w.lo,
                    hi: w.hi,
                })
            }
            WindowSpec::Step(want) => {
                let steps = windows_of(trace, index, MarkKind::Step);
                let found = steps
                    .iter()
                    .find(|w| {
                        *w.name == **want || step_number(&w.name).as_deref() == Some(want.as_str())
                    })
                    .or_else(|| want.parse::<usize>().ok().and_then(|i| steps.get(i)));
                let w = found.ok_or_else(|| {
                    let names: Vec<&str> = steps.iter().map(|w| &*w.name).collect();
                    unavailable(&format!("no step {want:?}; steps: {}", names.join(", ")))
                })?;
                Ok(Resolved {
                    spec,
                    label: w.name.to_string(),
                    lo: w.lo,
                    hi: w.hi,
                })
            }
            WindowSpec::Marks(a, b) => {
                let find = |name: &str| trace.marks.iter().find(|m| trace.mark_name(m) == name);
                let ma = find(a).ok_or_else(|| unavailable(&format!("no mark named {a:?}")))?;
                let mb = find(b).ok_or_else(|| unavailable(&format!("no mark named {b:?}")))?;
                if mb.at < ma.at {
                    return Err(unavailable(&format!("mark {b:?} comes before {a:?}")));
                }
                Ok(Resolved {
                    spec,
                    label: format!("{a} .. {b}"),
                    lo: ma.at,
                    hi: mb.at,
                })
            }
            WindowSpec::ResetPeak => {
                let m = trace
                    .marks
                    .iter()
                    .rev()
                    .find(|m| m.kind == MarkKind::ResetPeak)
                    .ok_or_else(|| unavailable("the trace has no reset_peak mark"))?;
                Ok(Resolved {
                    spec,
                    label: format!("since {}", trace.mark_label(m)),
                    lo: m.at,
                    hi: last,
                })
            }
        }
    }
}

/// "step 3" / "step3" / "ProfilerStep#3" → "3".
fn step_number(name: &str) -> Option<String> {
    let digits: String = name
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    (!digits.is_empty()).then_some(digits)
}
