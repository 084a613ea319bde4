//! A fair comparison of two runs: did they do the same work (parity), what each one's window
//! measured (boundary), what the change bought and cost, and which methods each shows.

use super::boundary::{boundary, boundary_warning, Boundary};
use super::cost::{cost, Cost};
use super::methods::{compare_methods, MethodFinding};
use super::parity::{parity, Parity, Verdict};
use super::work::{work, Work};
use crate::index::Index;
use crate::trace::Trace;
use serde::Serialize;

/// Everything the comparison says about fairness.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Fair {
    #[serde(skip)]
    pub work_a: Work,
    #[serde(skip)]
    pub work_b: Work,
    pub parity: Parity,
    pub boundary_a: Boundary,
    pub boundary_b: Boundary,
    /// Set when the two boundaries differ.
    pub boundary_warning: Option<String>,
    pub cost: Cost,
    pub methods: Vec<MethodFinding>,
    /// The comparison in one sentence: the saving and its cost when the work is the same,
    /// else why the difference is not a saving.
    pub headline: String,
}

/// The fair comparison of run A (`ta`, peak `peak_a` bytes) and run B.
pub fn fair(
    ta: &Trace,
    ia: &Index,
    peak_a: Option<u64>,
    tb: &Trace,
    ib: &Index,
    peak_b: Option<u64>,
) -> Fair {
    let (work_a, work_b) = (work(ta, ia), work(tb, ib));
    let parity = parity(&work_a, &work_b);
    let (boundary_a, boundary_b) = (boundary(&work_a), boundary(&work_b));
    let boundary_warning = boundary_warning(&boundary_a, &boundary_b);
    let cost = cost(ta, ia, peak_a, tb, ib, peak_b);
    let methods = compare_methods(ta, tb, &parity);
    let headline = headline(&parity, &cost, boundary_warning.as_deref(), &methods);
    Fair {
        work_a,
        work_b,
        parity,
        boundary_a,
        boundary_b,
        boundary_warning,
        cost,
        methods,
        headline,
    }
}

fn headline(p: &Parity, c: &Cost, warning: Option<&str>, methods: &[MethodFinding]) -> String {
    let by = methods
        .iter()
        .filter(|m| m.a.is_none() != m.b.is_none())
        .map(|m| m.method.name())
        .collect::<Vec<_>>();
    let by = if by.is_empty() {
        String::new()
    } else {
        format!(
            " (B {} {})",
            if methods.iter().any(|m| m.b.is_some() && m.a.is_none()) {
                "adds"
            } else {
                "changes"
            },
            by.join(", ")
        )
    };
    match p.verdict {
        Verdict::SameWork if warning.is_none() => format!("same work{by}: {}", c.words),
        Verdict::SameWork => format!(
            "same work, but {}: {}",
            warning.unwrap_or_default(),
            c.words
        ),
        Verdict::DifferentWork => format!(
            "not a like-for-like saving: the runs did different work ({} differ); {}",
            super::parity::line_words(&p.differs),
            c.words
        ),
        Verdict::CannotTell => format!(
            "parity cannot be checked ({}); {}",
            p.missing.join("; "),
            c.words
        ),
    }
}
