//! Trend across steps: each step's peak and baseline (bytes live at its start), baseline
//! growth, and the allocations that survive step boundaries when the baseline rises (a probable
//! leak or retained graph).

use super::windows::each_window_of;
use crate::index::Index;
use crate::trace::{AllocId, Bytes, MarkKind, Seq, Trace};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::BTreeMap;
use std::sync::Arc;

/// One row of the per-step table.
#[derive(Clone, Debug, PartialEq)]
pub struct StepRow {
    /// The step mark's name (shared with its window, see [`super::windows::Window::name`]).
    pub name: Arc<str>,
    pub lo: Seq,
    pub hi: Seq,
    /// Bytes live just before the step's first event.
    pub baseline: Bytes,
    pub peak: Bytes,
    pub peak_at: Seq,
}

/// A group of allocations that outlived their step, by allocation site.
#[derive(Clone, Debug, PartialEq)]
pub struct Survivor {
    pub name: String,
    pub frame: String,
    /// The user frame of its first allocation (`file.py:12 fn`; filled by the summary), or empty.
    pub user_frame: String,
    pub bytes: Bytes,
    pub count: usize,
    /// Steps (names) in which they were allocated.
    pub steps: Vec<Arc<str>>,
    pub ids: Vec<AllocId>,
}

/// The trend report.
#[derive(Clone, Debug, PartialEq)]
pub struct Trend {
    pub steps: Vec<StepRow>,
    /// Bytes live at the end of the trace (the boundary after the last step).
    pub final_bytes: Bytes,
    /// Baseline growth after the warm-up step, as a fraction of the first steady baseline; None
    /// when there are too few steps to tell.
    pub growth: Option<f64>,
    pub growth_bytes: Option<i128>,
    /// True when every boundary after the warm-up is higher than the one before.
    pub rising: bool,
    pub survivors: Vec<Survivor>,
    /// The last step is complete, so the end of the trace is a step boundary; false when the
    /// trace stops inside it (an OOM inside it, or a step span never closed): then growth and
    /// survivors are read over the complete steps only.
    pub last_step_complete: bool,
}

impl Trend {
    /// How many step-to-step intervals the growth spans: the boundaries after warm-up (the
    /// start of steps 1.., and the end when the last step is complete) less one.
    pub fn intervals(&self) -> usize {
        (self.steps.len() + usize::from(self.last_step_complete)).saturating_sub(2)
    }

    /// The baseline's growth after warm-up in words, one wording for every report:
    /// `+1.000 GiB (+15.4 %) — rising at every step: a probable leak or retained graph`; None
    /// when there are too few steps to tell.
    pub fn growth_words(&self) -> Option<String> {
        let (g, d) = (self.growth?, self.growth_bytes?);
        let sign = if d < 0 { "−" } else { "+" };
        let bytes = crate::trace::human_bytes(u64::try_from(d.unsigned_abs()).unwrap_or(u64::MAX));
        let rising = if self.rising {
            " — rising at every step: a probable leak or retained graph"
        } else {
            ""
        };
        let open = match self.steps.last() {
            Some(last) if !self.last_step_complete => format!(
                " (over complete steps: the trace ends inside {}, so its end is no step boundary)",
                last.name
            ),
            _ => String::new(),
        };
        Some(format!("{sign}{bytes} ({:+.1} %){rising}{open}", g * 100.0))
    }
}

fn total_before(index: &Index, at: Seq) -> Bytes {
    if at.0 == 0 {
        Bytes(index.baseline().total())
    } else {
        index.total(Seq(at.0 - 1))
    }
}

/// Computes the per-step table and leak analysis.
pub fn trend(trace: &Trace, index: &Index) -> Trend {
    let steps: Vec<StepRow> = each_window_of(trace, index, MarkKind::Step)
        .map(|w| {
            let p = w.peak;
            StepRow {
                name: w.name,
                lo: w.lo,
                hi: w.hi,
                baseline: total_before(index, w.lo),
                peak: p.map_or(Bytes(0), |p| p.bytes),
                peak_at: p.map_or(w.lo, |p| p.at),
            }
        })
        .collect();
    let final_bytes = super::peak::final_bytes(index);
    let last_step_complete = last_step_complete(trace);
    // Boundaries after warm-up: the start of steps 1.., then the end of the trace when the
    // last step ended there (a trace that stops mid-step has no boundary at its end).
    let mut bounds: Vec<u64> = steps.iter().skip(1).map(|s| s.baseline.0).collect();
    if !steps.is_empty() && last_step_complete {
        bounds.push(final_bytes.0);
    }
    let (growth, growth_bytes, rising) = if bounds.len() >= 2 {
        let first = bounds[0];
        let last = bounds[bounds.len() - 1];
        let d = last as i128 - first as i128;
        let g = if first > 0 {
            d as f64 / first as f64
        } else if d > 0 {
            f64::INFINITY
        } else {
            0.0
        };
        let rising = bounds.windows(2).all(|w| w[1] > w[0]);
        (Some(g), Some(d), rising)
    } else {
        (None, None, false)
    };
    let survivors = if rising {
        let complete = if last_step_complete {
            &steps[..]
        } else {
            &steps[..steps.len().saturating_sub(1)]
        };
        survivors(trace, index, complete)
    } else {
        Vec::new()
    };
    Trend {
        steps,
        final_bytes,
        growth,
        growth_bytes,
        rising,
        survivors,
        last_step_complete,
    }
}

/// Whether the trace's last step is complete (its end is a step boundary): not when the run
/// ran out of memory inside it, nor when the source records step ends (spans) and the last
/// one has none. Point step marks without an OOM after them: complete (nothing says
/// otherwise).
pub(crate) fn last_step_complete(trace: &Trace) -> bool {
    let mut steps = trace.marks.iter().filter(|m| m.kind == MarkKind::Step);
    let Some(last) = steps.clone().max_by_key(|m| m.at) else {
        return true;
    };
    let spans = steps.any(|m| m.end.is_some());
    if spans && last.end.is_none() {
        return false;
    }
    let after = last.end.unwrap_or(last.at);
    !trace.marks.iter().any(|m| {
        m.kind == MarkKind::Oom && m.at >= last.at && (last.end.is_none() || m.at <= after)
    })
}

/// Allocations made inside a step after the warm-up and still live at every later boundary,
/// grouped by (name, top frame); the same site's warm-up allocations join when it recurs.
///
/// A site whose only such allocations come from the last step, and whose allocations of
/// earlier steps were freed, is remade every step (a gradient that
/// `zero_grad(set_to_none=True)` frees and backward makes again): its newest allocation has
/// crossed the end alone, no allocation of it survived a step, so it is no survivor.
///
/// One pass over the storages live at the end, O(live × log steps): a lifetime is one interval
/// `[start, end)`, so a storage live at the end that started before a later step's boundary is
/// live at that boundary and every one after it; and, only when a site survives from the last
/// step alone, one pass over the storages made before it.
fn survivors(trace: &Trace, index: &Index, steps: &[StepRow]) -> Vec<Survivor> {
    let n = index.len() as u64;
    let mut groups: BTreeMap<(String, String), Survivor> = BTreeMap::new();
    let last_pos = Seq(n.saturating_sub(1));
    // first_later_boundary[k]: the earliest start (> 0) of steps k.. — a survivor of step k-1
    // must have started before it to be live just before every later step begins.
    let mut first_later_boundary: Vec<Option<Seq>> = vec![None; steps.len() + 1];
    for k in (0..steps.len()).rev() {
        let here = (steps[k].lo.0 > 0).then_some(steps[k].lo);
        first_later_boundary[k] = match (here, first_later_boundary[k + 1]) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
    }
    // (step, storage) pairs in the order the step-by-step definition visits them.
    let mut hits: Vec<(usize, AllocId)> = Vec::new();
    for id in index.live_at(trace, last_pos) {
        let start = trace.start(id);
        if trace.is_from_start(id) {
            continue;
        }
        // Steps whose window holds `start`: those starting at or before it, scanned back while
        // their window still reaches it (one step for consecutive windows).
        let after = steps.partition_point(|s| s.lo <= start);
        for k in (0..after).rev() {
            if steps[k].hi < start {
                break;
            }
            if first_later_boundary[k + 1].is_none_or(|b| start < b) {
                hits.push((k, id));
            }
        }
    }
    // Stable: within a step, the live list's order.
    hits.sort_by_key(|&(k, _)| k);
    // Per group, the steps already listed (a group can span every step of a long run).
    let mut seen: FxHashMap<(String, String), FxHashSet<&str>> = FxHashMap::default();
    // Per group, the positions of the steps its storages were made in.
    let mut made_in: FxHashMap<(String, String), FxHashSet<usize>> = FxHashMap::default();
    for (k, id) in hits {
        let s = &steps[k];
        let name = crate::clip::clip(trace.name(id)).into_owned();
        let key = (name, trace.top_frame(id).into_owned());
        let g = groups.entry(key.clone()).or_insert_with(|| Survivor {
            name: key.0.clone(),
            frame: key.1.clone(),
            user_frame: String::new(),
            bytes: Bytes(0),
            count: 0,
            steps: Vec::new(),
            ids: Vec::new(),
        });
        g.bytes += trace.size(id);
        g.count += 1;
        made_in.entry(key.clone()).or_default().insert(k);
        if seen.entry(key).or_default().insert(&*s.name) {
            g.steps.push(s.name.clone());
        }
        g.ids.push(id);
    }
    // A site counts as leaking when it survives from at least one step after the warm-up:
    // from a step before the last (it outlived a later step's start), or from the last step
    // when it is not remade every step.
    let last = steps.len().saturating_sub(1);
    let survives = |k: &usize| *k != 0;
    let only_last: FxHashSet<&(String, String)> = made_in
        .iter()
        .filter(|(_, ks)| ks.iter().any(survives) && !ks.iter().any(|k| survives(k) && *k != last))
        .map(|(key, _)| key)
        .collect();
    let remade = remade_sites(trace, steps, &only_last);
    let mut v: Vec<Survivor> = groups
        .into_iter()
        .filter(|(key, _)| {
            made_in.get(key).is_some_and(|ks| ks.iter().any(survives)) && !remade.contains(key)
        })
        .map(|(_, g)| g)
        .collect();
    v.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.name.cmp(&b.name)));
    v
}

/// Of `sites` (name, top frame), those that made a storage inside a step before the last of
/// `steps` and freed it: the site makes a new storage each step rather than keeping the old.
fn remade_sites(
    trace: &Trace,
    steps: &[StepRow],
    sites: &FxHashSet<&(String, String)>,
) -> FxHashSet<(String, String)> {
    let mut remade = FxHashSet::default();
    let (Some(first), Some(last)) = (steps.first(), steps.last()) else {
        return remade;
    };
    if sites.is_empty() || steps.len() < 2 {
        return remade;
    }
    let names: FxHashSet<&str> = sites.iter().map(|(n, _)| n.as_str()).collect();
    for i in 0..trace.storage_count() {
        let id = AllocId(i as u32);
        let start = trace.start(id);
        if trace.is_from_start(id)
            || start < first.lo
            || start >= last.lo
            || trace.end(id).is_none()
        {
            continue;
        }
        let name = crate::clip::clip(trace.name(id));
        if !names.contains(&*name) {
            continue;
        }
        let key = (name.into_owned(), trace.top_frame(id).into_owned());
        if sites.contains(&key) {
            remade.insert(key);
        }
    }
    remade
}
