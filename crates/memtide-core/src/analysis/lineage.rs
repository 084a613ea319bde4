//! Parameters and optimizer state by what the tensors are, not by who made them: the
//! storages made before the first optimizer update that stay alive across every update
//! (directly, or through the same-sized storage an update made to replace them) are the
//! run's persistent lines; their sizes paired with the gradients' say which lines are
//! parameters (one per gradient of that size) and which are the optimizer's state (one or
//! two more per gradient: momentum, Adam's pairs). A course's own modules and own Adam leave
//! no torch frame that says "parameter" or "optimizer state"; their tensors still are.

use crate::trace::{AllocId, Category, MarkKind, Trace};
use rustc_hash::FxHashMap;

/// One storage the frames left undecided (or decided as parameter or optimizer code).
#[derive(Clone, Copy)]
pub(crate) struct Candidate {
    pub(crate) id: AllocId,
    /// The tensor's size (requested; its block may be larger).
    pub(crate) size: u64,
    pub(crate) start: u64,
    /// The event that frees it (`u64::MAX`: alive at the end).
    pub(crate) end: u64,
}

/// The optimizer updates' spans `[start, end)` (PyTorch's `Optimizer.step#…` annotations and
/// the like; not `zero_grad`).
fn updates(trace: &Trace) -> Vec<(u64, u64)> {
    let v: Vec<(u64, u64)> = trace
        .marks
        .iter()
        .filter(|m| m.kind == MarkKind::Phase)
        .filter(|m| {
            let n = trace.strings.str(m.name).to_ascii_lowercase();
            n.contains("optim") && n.contains("step") && !n.contains("zero_grad")
        })
        .map(|m| (m.at.0, m.end.map_or(m.at.0, |e| e.0.saturating_add(1))))
        .collect();
    // Nested or repeated marks: each end the largest so far, so that one search answers.
    crate::analysis::infer::prefix_max_ends(v)
}

/// Names the persistent lines among `candidates` (see the module's text); `grads`: every
/// gradient as (size, start, end). Sizes are the tensors' own (requested), not their blocks'.
///
/// `setup_end`: where the setup ends (the first step, forward or backward seen): a line's
/// first tensor is made before it, as a model's parameters and an optimizer's eager state
/// are. A survivor made inside a step (its batch, a loss kept) is that step's data.
pub(crate) fn name_lines(
    trace: &mut Trace,
    candidates: &[Candidate],
    grads: &[(u64, u64, u64)],
    setup_end: u64,
) {
    let ups = updates(trace);
    let (Some(&(first, _)), Some(&(last, _))) = (ups.first(), ups.last()) else {
        return;
    };
    // The start of the update `at` lies in.
    let update_at = |at: u64| {
        let n = ups.partition_point(|&(s, _)| s <= at);
        n.checked_sub(1)
            .and_then(|k| ups.get(k))
            .filter(|&&(_, e)| at < e)
            .map(|&(s, _)| s)
    };
    // Each line, from its root (made before the first update), through its replacements: a
    // member freed inside an update is replaced by the latest same-sized candidate the update
    // made before that free and alive after it (`p.data = p.data - lr * u` makes the new
    // tensor, then frees the old one; its temporaries die first). The parameters' lines are
    // followed first (made first): an optimizer that rebinds its state frees the old state
    // later (when the loop moves on), and takes what the parameters left.
    let mut by_size: FxHashMap<u64, Vec<usize>> = FxHashMap::default();
    for (k, c) in candidates.iter().enumerate() {
        by_size.entry(c.size).or_default().push(k);
    }
    for v in by_size.values_mut() {
        v.sort_by_key(|&k| candidates.get(k).map_or(0, |c| c.start));
    }
    let mut claimed = vec![false; candidates.len()];
    // The update's mark sits after the event it is placed at: that event came before it.
    let setup_end = setup_end.min(first.saturating_add(1));
    let mut roots: Vec<usize> = (0..candidates.len())
        .filter(|&k| candidates.get(k).is_some_and(|c| c.start < setup_end))
        .collect();
    roots.sort_by_key(|&k| candidates.get(k).map_or(0, |c| c.start));
    let mut lines: FxHashMap<u64, Vec<Vec<AllocId>>> = FxHashMap::default();
    for root in roots {
        let Some(&c) = candidates.get(root) else {
            continue;
        };
        if claimed.get(root).copied().unwrap_or(true) {
            continue;
        }
        let mut members = vec![c.id];
        let mut cur = c;
        while let Some(from) = update_at(cur.end).filter(|_| cur.end != u64::MAX) {
            let Some(same) = by_size.get(&cur.size) else {
                break;
            };
            let start_of = |j: &usize| candidates.get(*j).map_or(0, |c| c.start);
            let lo = same.partition_point(|j| start_of(j) < from);
            let hi = same.partition_point(|j| start_of(j) <= cur.end);
            let pick = same.get(lo..hi).and_then(|r| {
                r.iter().rev().copied().find(|&j| {
                    !claimed.get(j).copied().unwrap_or(true)
                        && candidates
                            .get(j)
                            .is_some_and(|n| n.end > cur.end && n.start > cur.start)
                })
            });
            let Some(j) = pick else {
                break;
            };
            let Some(&n) = candidates.get(j) else {
                break;
            };
            if let Some(f) = claimed.get_mut(j) {
                *f = true;
            }
            members.push(n.id);
            cur = n;
        }
        if cur.end > last {
            lines.entry(c.size).or_default().push(members);
        }
    }
    let most_grads = crate::analysis::infer::max_live_by_size(grads);
    let mut sizes: Vec<u64> = lines.keys().copied().collect();
    sizes.sort_unstable();
    for size in sizes {
        let Some(mut ls) = lines.remove(&size) else {
            continue;
        };
        ls.sort_by_key(|l| l.first().map_or(0, |&id| trace.start(id).0));
        let a = ls.len();
        let g = most_grads.get(&size).copied().unwrap_or(0);
        let shown = crate::trace::human_bytes(size);
        // One parameter per gradient of the size (the model is made before its optimizer:
        // the first lines made are the parameters); the rest are the optimizer's state when
        // they come one or two per parameter.
        let params = a.min(g);
        let rest = a - params;
        let states = if g > 0 && (rest == g || rest == 2 * g) {
            rest
        } else {
            0
        };
        for (k, line) in ls.iter().enumerate() {
            let replaced = if line.len() > 1 {
                format!(", replaced {} times by the updates", line.len() - 1)
            } else {
                String::new()
            };
            let (cat, why) = if k < params {
                (
                    Category::Param,
                    format!(
                        "made before the first step and alive across every optimizer update{replaced}; its size ({shown}) pairs with a gradient of that size ({a} such tensors, {g} gradients of this size live at once)"
                    ),
                )
            } else if k < params + states {
                (
                    Category::Optimizer,
                    format!(
                        "made before the first step and alive across every optimizer update{replaced}; {} more tensors of its size ({shown}) per gradient of that size than parameters: the optimizer's state",
                        states / g.max(1)
                    ),
                )
            } else {
                (
                    Category::InferredPersistent,
                    format!(
                        "made before the first step and alive across every optimizer update{replaced}; no gradient pairs with its size ({shown}): state of another kind"
                    ),
                )
            };
            for &id in line {
                trace.set_category(id, cat, true);
                trace.evidence.insert(id, why.clone());
            }
        }
    }
}
