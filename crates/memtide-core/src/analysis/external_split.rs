//! The external band split by source (`nccl`, `cudnn`, `library-internal`, …) at any event:
//! one step function per source, built once from the trace's external storages, so the
//! explorer can stack one sub-band per source in every column of its timeline.

use crate::trace::{AllocId, Band, Seq, StorageKind, Trace};

/// Bytes of each source of external memory after each event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExternalSplit {
    /// The sources, in stacking order (the biggest at its own peak first, ties by name).
    pub sources: Vec<String>,
    /// Per source: `(position, bytes live after it)` at each position where they change,
    /// ascending; before the first entry, 0 B.
    steps: Vec<Vec<(u64, u64)>>,
    /// Bytes of each source live before the first event (the initial state).
    initial: Vec<u64>,
}

impl ExternalSplit {
    /// The split of `trace`'s external storages; None when the trace measures no external
    /// memory or has none to split (one storage kind without sources is not a split).
    pub fn of(trace: &Trace) -> Option<ExternalSplit> {
        if !trace.external_known {
            return None;
        }
        let mut names: Vec<String> = Vec::new();
        let mut deltas: Vec<Vec<(u64, i128)>> = Vec::new();
        let mut initial: Vec<u64> = Vec::new();
        for i in 0..trace.storage_count() {
            let id = AllocId(i as u32);
            if trace.band(id) != Band::External || trace.storage_kind(id) != StorageKind::Block {
                continue;
            }
            let src = trace.external_source(id);
            let k = match names.iter().position(|n| n == src) {
                Some(k) => k,
                None => {
                    names.push(src.to_string());
                    deltas.push(Vec::new());
                    initial.push(0);
                    names.len() - 1
                }
            };
            let size = trace.size(id).0 as i128;
            let from = if trace.is_from_start(id) {
                initial[k] = initial[k].saturating_add(size as u64);
                0
            } else {
                trace.start(id).0
            };
            deltas[k].push((from, size));
            if let Some(e) = trace.end(id) {
                deltas[k].push((e.0, -size));
            }
        }
        if names.is_empty() {
            return None;
        }
        let steps: Vec<Vec<(u64, u64)>> = deltas.into_iter().map(step_function).collect();
        // Stacking order: the biggest source at its own peak first (it sits lowest).
        let peak =
            |s: &Vec<(u64, u64)>, init: u64| s.iter().map(|x| x.1).max().unwrap_or(0).max(init);
        let mut order: Vec<usize> = (0..names.len()).collect();
        order.sort_by(|&a, &b| {
            peak(&steps[b], initial[b])
                .cmp(&peak(&steps[a], initial[a]))
                .then(names[a].cmp(&names[b]))
        });
        Some(ExternalSplit {
            sources: order.iter().map(|&k| names[k].clone()).collect(),
            steps: order.iter().map(|&k| steps[k].clone()).collect(),
            initial: order.iter().map(|&k| initial[k]).collect(),
        })
    }

    /// Bytes of each source (in [`ExternalSplit::sources`] order) live after event `at`.
    pub fn at(&self, at: Seq) -> Vec<u64> {
        self.steps
            .iter()
            .map(|s| {
                let i = s.partition_point(|&(p, _)| p <= at.0);
                i.checked_sub(1).and_then(|i| s.get(i)).map_or(0, |x| x.1)
            })
            .collect()
    }

    /// Bytes of each source live before the first event.
    pub fn initial(&self) -> &[u64] {
        &self.initial
    }
}

/// `(position, +/- bytes)` changes → `(position, bytes live after it)`, one entry per
/// position (frees and allocations at one position together).
fn step_function(mut d: Vec<(u64, i128)>) -> Vec<(u64, u64)> {
    d.sort_by_key(|&(p, _)| p);
    let mut out: Vec<(u64, u64)> = Vec::new();
    let mut cur: i128 = 0;
    let mut i = 0;
    while i < d.len() {
        let p = d[i].0;
        while i < d.len() && d[i].0 == p {
            cur += d[i].1;
            i += 1;
        }
        out.push((p, cur.clamp(0, u64::MAX as i128) as u64));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_hold_until_the_next_change() {
        let s = step_function(vec![(2, 10), (5, -10), (3, 4), (5, 1)]);
        assert_eq!(s, vec![(2, 10), (3, 14), (5, 5)]);
        let split = ExternalSplit {
            sources: vec!["a".into()],
            steps: vec![s],
            initial: vec![0],
        };
        assert_eq!(split.at(Seq(0)), vec![0]);
        assert_eq!(split.at(Seq(2)), vec![10]);
        assert_eq!(split.at(Seq(4)), vec![14]);
        assert_eq!(split.at(Seq(9)), vec![5]);
    }
}
