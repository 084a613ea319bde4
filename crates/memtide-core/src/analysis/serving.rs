//! The serving budget (docs/serving.md): what an inference server's card went to — memory
//! live before the trace, weights, KV cache, CUDA-graph and other private pools, the
//! activation peak — and the headroom left, each figure exact or `None` (unknowable), never
//! 0 for unknown; the capture ladder (what each captured size added to the pools).

use super::work::most_live_where;
use crate::allocator::History;
use crate::index::Index;
use crate::trace::external::{DeviceServerLog, LogFigure, Server};
use crate::trace::{AllocId, Band, Category, MarkKind, StorageKind, Trace};
use serde::Serialize;

/// Where a stage's figure comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StageSource {
    /// Measured by the trace (its reserve, its first memory event, its pools).
    Trace,
    /// Measured by the trace, attributed by inferred categories (frames: weight loaders, the
    /// KV cache's allocation, module forwards).
    Inferred,
    /// The server's startup log (`--server-log`), where the trace cannot say.
    ServerLog,
}

/// One figure of the server's log beside the trace's counterpart.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Reconciled {
    /// What the log's figure measures (`weights`, `kv_cache`, `graphs`, `graphs_estimate`,
    /// `activation_peak`, `outside`, `capacity`, `distributed_init`, `free_after_weights`,
    /// `free_after_kv_cache`, `free_after_graphs`).
    pub figure: LogFigure,
    /// The figure as logged, in bytes (printed GiB × 2^30; may be below 0).
    pub logged: i64,
    /// Half the last printed digit: the logged figure stands for `logged ± precision`.
    pub precision: u64,
    /// The budget key it is compared with (`graphs` for the estimate, `headroom` for what
    /// the server left free); None where the trace has no counterpart.
    pub compared_with: Option<&'static str>,
    /// The trace's figure for `compared_with` (None: no counterpart, or the trace cannot say).
    pub trace: Option<u64>,
    /// Whether the trace's figure is within the log's rounding of the logged one; None when
    /// either is missing.
    pub agrees: Option<bool>,
    /// The log line it was read from (1-based) and the rank that printed it.
    pub line: usize,
    pub rank: Option<u32>,
    pub server: Server,
}

/// One stage of a server's start: load weights → profile run → KV cache → graph capture.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Stage {
    pub name: &'static str,
    pub bytes: u64,
    pub source: StageSource,
}

/// One rung of the capture ladder: what one captured size (or one private pool) added.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Capture {
    /// The captured batch size, read from the annotation around the capture
    /// (`capture_8192_PIECEWISE`); None when nothing names it.
    pub size: Option<u64>,
    /// Profiler traces: the reserve's growth while the captures of this size were open.
    /// Snapshots: the pool's segments at the dump (0 for a pool released before it).
    pub bytes_added: u64,
    /// How many captures of this size the trace holds (profiler traces); None for a pool.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub captures: Option<u64>,
    /// The private pool (`(1, 0)`), for a snapshot's pools.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// The pool made segments in the trace but holds none at the dump (released: PyTorch
    /// releases a failed capture's pool).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub released: bool,
    /// A user's `torch.cuda.MemPool()` (id `(0, N)`: PyTorch numbers user-created pools
    /// `{0, uid}` and graph pools `{uid, 0}`): its memory is not counted as graphs.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub mem_pool: bool,
}

/// A device's serving budget. Every figure is bytes, or None where the trace cannot say.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServingBudget {
    /// Allocated bytes live when the trace starts (weights, KV cache and anything else made
    /// before the recording); None when frees of unseen blocks make it unknowable.
    pub before_trace: Option<u64>,
    /// The most bytes inferred (or recorded) as parameters live at once.
    pub weights: Option<u64>,
    /// The most bytes inferred (or recorded) as buffers (the KV cache) live at once.
    pub kv_cache: Option<u64>,
    /// Private-pool memory: profiler traces, the reserve's growth while a stream capture is
    /// open; snapshots, the private pools' segments at the dump.
    pub graphs: Option<u64>,
    /// The most activation-band bytes live at once (the profile run).
    pub activation_peak: Option<u64>,
    /// Memory outside PyTorch at the peak, where a source measures it (`--device-log`, NCCL).
    pub outside: Option<u64>,
    pub capacity: Option<u64>,
    /// `capacity − highest reserve − outside` (outside left out when unmeasured).
    pub headroom: Option<u64>,
    pub stages: Vec<Stage>,
    pub captures: Vec<Capture>,
    /// The server log's figures beside the trace's (`--server-log`; empty without one).
    pub reconcile: Vec<Reconciled>,
    /// The server log read (`--server-log`), None without one.
    #[serde(skip)]
    pub server_log: Option<String>,
    /// The device's rank where the log has no lines of it (the lowest rank's were taken).
    #[serde(skip)]
    pub server_log_missing_rank: Option<u32>,
}

/// The first run of digits in a capture's name (`capture_8192_PIECEWISE` → 8192), where the
/// name says capture.
fn captured_size(name: &str) -> Option<u64> {
    if !name.to_ascii_lowercase().contains("capture") {
        return None;
    }
    let digits: String = name
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

/// The ladder of a profiler trace: per captured size (in order of first capture), the bytes
/// of the segments the reserve opened while one of its captures was open.
fn ladder_from_marks(trace: &Trace) -> Vec<Capture> {
    let mut spans: Vec<(u64, u64, Option<u64>)> = trace
        .marks
        .iter()
        .filter(|m| m.kind == MarkKind::Capture)
        .map(|m| {
            (
                m.at.0,
                m.end.map_or(m.at.0, |e| e.0),
                captured_size(trace.mark_name(m)),
            )
        })
        .collect();
    spans.sort_unstable();
    let mut out: Vec<Capture> = Vec::new();
    for &(_, _, size) in &spans {
        match out.iter_mut().find(|c| c.size == size) {
            Some(c) => c.captures = c.captures.map(|n| n + 1),
            None => out.push(Capture {
                size,
                bytes_added: 0,
                captures: Some(1),
                pool: None,
                released: false,
                mem_pool: false,
            }),
        }
    }
    for i in 0..trace.storage_count() {
        let id = AllocId(i as u32);
        if trace.storage_kind(id) != StorageKind::Segment || trace.is_from_start(id) {
            continue;
        }
        let at = trace.start(id).0;
        // The capture open at `at` (captures do not overlap on one device's stream order;
        // the latest started wins).
        let k = spans.partition_point(|s| s.0 <= at);
        let Some(&(_, end, size)) = k.checked_sub(1).and_then(|k| spans.get(k)) else {
            continue;
        };
        if at <= end {
            if let Some(c) = out.iter_mut().find(|c| c.size == size) {
                c.bytes_added = c.bytes_added.saturating_add(trace.size(id).0);
            }
        }
    }
    out
}

/// The ladder of a snapshot: each private pool its entries or final segments name, with its
/// segments at the dump.
fn ladder_from_pools(history: &History) -> Vec<Capture> {
    let mut ids: Vec<crate::allocator::PoolId> = history
        .pools
        .iter()
        .chain(history.segments.iter().map(|s| &s.pool_id))
        .copied()
        .filter(|p| !p.is_default())
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids.into_iter()
        .map(|p| {
            let held: u64 = history
                .segments
                .iter()
                .filter(|s| s.pool_id == p)
                .map(|s| s.total_size)
                .sum();
            let present = history.segments.iter().any(|s| s.pool_id == p);
            Capture {
                size: None,
                bytes_added: held,
                captures: None,
                pool: Some(format!("({}, {})", p.0, p.1)),
                released: !present,
                mem_pool: p.0 == 0,
            }
        })
        .collect()
}

/// The budget of one device; None when nothing in the trace is serving memory (no stream
/// capture, no private pool, no KV cache).
pub fn serving_budget(
    trace: &Trace,
    index: &Index,
    history: Option<&History>,
) -> Option<ServingBudget> {
    let any_capture = trace.marks.iter().any(|m| m.kind == MarkKind::Capture);
    let pools = history.map(ladder_from_pools).unwrap_or_default();
    let block_of = |id: AllocId, cat: Category| {
        trace.storage_kind(id) == StorageKind::Block && trace.category(id) == cat
    };
    let kv = most_live_where(trace, |id| block_of(id, Category::Buffer));
    let pool_blocks =
        (0..trace.storage_count()).any(|i| block_of(AllocId(i as u32), Category::PrivatePool));
    let log = trace.server_log.as_ref();
    if !any_capture && pools.is_empty() && kv == 0 && !pool_blocks && log.is_none() {
        return None;
    }
    let known = |n: u64| (n > 0).then_some(n);
    let weights = known(most_live_where(trace, |id| block_of(id, Category::Param)));
    let activation_peak = known(most_live_where(trace, |id| {
        trace.storage_kind(id) == StorageKind::Block
            && trace.category(id).band() == Band::Activation
    }));
    let before_trace = (trace.identities_known() && trace.unmatched_frees == 0).then(|| {
        let b = index.baseline();
        b.total().saturating_sub(b.get(Band::External))
    });
    let (captures, graphs) = if any_capture {
        let l = ladder_from_marks(trace);
        let g = l.iter().map(|c| c.bytes_added).sum();
        (l, Some(g))
    } else if !pools.is_empty() {
        let g = pools
            .iter()
            .filter(|c| !c.mem_pool)
            .map(|c| c.bytes_added)
            .sum();
        (pools, Some(g))
    } else {
        (Vec::new(), None)
    };
    let outside = trace
        .external_known
        .then(|| super::peak::global_peak(trace, index).map_or(0, |p| p.bands.get(Band::External)));
    let capacity = trace.capacity.map(|c| c.0);
    let reserve = index.reserved_peak().map(|(b, _)| b.0);
    let headroom = capacity.and_then(|c| {
        let held = reserve.unwrap_or(0).saturating_add(outside.unwrap_or(0));
        c.checked_sub(held)
    });
    let mut stages = Vec::new();
    let mut stage = |name, bytes: Option<u64>, source| {
        if let Some(bytes) = bytes {
            stages.push(Stage {
                name,
                bytes,
                source,
            });
        }
    };
    // Where the trace cannot say, the log's figure (when it is not below 0).
    let logged = |what: LogFigure| {
        log.and_then(|l| l.get(what))
            .and_then(|f| u64::try_from(f.bytes).ok())
    };
    let or_log = |trace: Option<u64>, source, what| match trace {
        Some(b) => (Some(b), source),
        None => (logged(what), StageSource::ServerLog),
    };
    stage("before trace", before_trace, StageSource::Trace);
    let (b, s) = or_log(weights, StageSource::Inferred, LogFigure::Weights);
    stage("load weights", b, s);
    let (b, s) = or_log(
        activation_peak,
        StageSource::Inferred,
        LogFigure::ActivationPeak,
    );
    stage("activation peak", b, s);
    let (b, s) = or_log(known(kv), StageSource::Inferred, LogFigure::KvCache);
    stage("KV cache", b, s);
    let (b, s) = or_log(graphs, StageSource::Trace, LogFigure::Graphs);
    stage("graph capture", b, s);
    let mut budget = ServingBudget {
        before_trace,
        weights,
        kv_cache: known(kv),
        graphs,
        activation_peak,
        outside,
        capacity,
        headroom,
        stages,
        captures,
        reconcile: Vec::new(),
        server_log: log.map(|l| l.name.clone()),
        server_log_missing_rank: log.and_then(|l| l.missing_rank),
    };
    if let Some(l) = log {
        budget.reconcile = reconcile(&budget, l);
    }
    Some(budget)
}

/// The budget key a logged figure is compared with, and the trace's figure for it.
fn counterpart(b: &ServingBudget, what: LogFigure) -> Option<(&'static str, Option<u64>)> {
    Some(match what {
        LogFigure::Weights => ("weights", b.weights),
        LogFigure::ActivationPeak => ("activation_peak", b.activation_peak),
        LogFigure::KvCache => ("kv_cache", b.kv_cache),
        LogFigure::Graphs | LogFigure::GraphsEstimate => ("graphs", b.graphs),
        LogFigure::Outside => ("outside", b.outside),
        LogFigure::Capacity => ("capacity", b.capacity),
        LogFigure::FreeAfterGraphs => ("headroom", b.headroom),
        LogFigure::DistributedInit | LogFigure::FreeAfterWeights | LogFigure::FreeAfterKvCache => {
            return None
        }
    })
}

/// Each figure of the device's log beside the trace's counterpart, in the log's order.
fn reconcile(b: &ServingBudget, log: &DeviceServerLog) -> Vec<Reconciled> {
    log.figures
        .iter()
        .map(|f| {
            let c = counterpart(b, f.figure);
            let trace = c.and_then(|c| c.1);
            Reconciled {
                figure: f.figure,
                logged: f.bytes,
                precision: f.precision,
                compared_with: c.map(|c| c.0),
                trace,
                agrees: trace.map(|t| {
                    (i128::from(t) - i128::from(f.bytes)).unsigned_abs() <= u128::from(f.precision)
                }),
                line: f.line,
                rank: f.rank,
                server: f.server,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_come_from_capture_names_only() {
        assert_eq!(captured_size("capture_8192_PIECEWISE"), Some(8192));
        assert_eq!(captured_size("capture_32_DECODE"), Some(32));
        assert_eq!(captured_size("CUDA graph capture"), None);
        assert_eq!(captured_size("step 3"), None);
    }
}
