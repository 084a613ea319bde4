//! The simulated reserved bytes after each event of a trace (the explorer's what-if overlay):
//! one run under the given settings (else the file's own, else PyTorch's defaults), its
//! reserved timeline stepped onto the trace's event positions.

use super::config::{AllocConf, ConfError};
use super::report::{input_for, recorded_conf};
use super::run::{run, RunOptions, RunResult};
use crate::allocator::replay::History;
use crate::trace::Trace;

/// One run and its reserved bytes per event.
#[derive(Clone, Debug)]
pub struct ReservedSeries {
    /// The run (settings, peaks, the OOM where it stopped).
    pub run: RunResult,
    /// Reserved bytes after event `i` (index = the event's position on the trace's axis).
    /// Shorter than the trace when the run stopped at an OOM: it ends at the OOM's event;
    /// what would follow is unknown.
    pub reserved: Vec<u64>,
}

impl ReservedSeries {
    /// The highest simulated reserve (0 for an empty series).
    pub fn peak(&self) -> u64 {
        self.reserved.iter().copied().max().unwrap_or(0)
    }
}

/// Steps a run's reserved timeline (change points `(event, bytes)`, in event order) onto
/// events `0..len`: each event gets the reserve after the last change at or before it.
pub fn stepped(timeline: &[(u64, u64)], len: usize) -> Vec<u64> {
    let mut out = Vec::with_capacity(len);
    let (mut k, mut cur) = (0usize, 0u64);
    for i in 0..len as u64 {
        while let Some(&(at, bytes)) = timeline.get(k) {
            if at > i {
                break;
            }
            cur = bytes;
            k += 1;
        }
        out.push(cur);
    }
    out
}

/// Replays `trace` (from its allocator `history` when it has one, else its allocations: an
/// estimate) under `conf` — `None`: the file's own `allocator_settings`, else PyTorch's
/// defaults, as `whatif`'s first run — on a device of `capacity` bytes, and returns the
/// reserved bytes after each event.
pub fn reserved_series(
    trace: &Trace,
    history: Option<&History>,
    conf: Option<&AllocConf>,
    capacity: Option<u64>,
) -> Result<ReservedSeries, ConfError> {
    let input = input_for(trace, history);
    let (conf, source) = match conf {
        Some(c) => (c.clone(), "--alloc-conf"),
        None => match recorded_conf(trace).transpose()? {
            Some(c) => (c, "recorded"),
            None => (AllocConf::default(), "defaults"),
        },
    };
    let opts = RunOptions {
        capacity,
        timeline: true,
        device: trace.device.clone(),
        recorded_layout: source != "--alloc-conf",
        ..RunOptions::default()
    };
    let mut r = run(&input, &conf, &opts);
    r.settings_source = source.into();
    let len = match &r.oom {
        Some(o) => (o.index as usize).saturating_add(1).min(trace.len()),
        None => trace.len(),
    };
    let reserved = stepped(&r.timeline, len);
    Ok(ReservedSeries { run: r, reserved })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn stepping_holds_each_change_until_the_next() {
        // Changes after events 0 (twice: the prologue, then the first op), 3 and 4.
        let t = [(0, 0), (0, 20), (3, 40), (4, 22)];
        assert_eq!(stepped(&t, 6), vec![20, 20, 20, 40, 22, 22]);
        assert_eq!(stepped(&t, 2), vec![20, 20]);
        assert!(stepped(&t, 0).is_empty());
        // Nothing reserved before the first change.
        assert_eq!(stepped(&[(2, 7)], 4), vec![0, 0, 7, 7]);
    }
}
