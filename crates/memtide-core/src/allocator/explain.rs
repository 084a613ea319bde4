//! The OOM explanation: from the figures at an out-of-memory event — what was requested, what
//! the driver had free, what was allocated and reserved, the free blocks of the pool the
//! request needed, the device's capacity — a verdict and the next step that fits it. A figure
//! the source does not record is `None` (`null` in JSON, "unavailable" in text), never a
//! guess; a verdict that needs it is `unknown`, naming what is missing.

use super::rounding::{allocation_size, pool_for, round_size};
use super::state::{PoolKey, State};
use crate::trace::human_bytes;
use serde::Serialize;

/// Why the request failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The device is full of live tensors.
    LiveTensors,
    /// The pool the request needs holds enough free bytes, but no block large enough.
    Fragmentation,
    /// Memory outside PyTorch's allocator (other processes, NCCL, the CUDA context) took
    /// what the request needed.
    OutsideAllocator,
    /// The single request exceeds the device.
    RequestTooLarge,
    /// The source lacks a figure the verdict needs.
    Unknown,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::LiveTensors => "live_tensors",
            Verdict::Fragmentation => "fragmentation",
            Verdict::OutsideAllocator => "outside_allocator",
            Verdict::RequestTooLarge => "request_too_large",
            Verdict::Unknown => "unknown",
        }
    }
}

/// The allocator's state where the request failed (snapshots only).
#[derive(Clone, Debug, PartialEq)]
pub struct PoolFacts {
    /// The pool the request needed (pool id, small/large, stream).
    pub key: PoolKey,
    /// Free bytes in that pool.
    pub pool_free: u64,
    /// Its largest free block.
    pub largest_free_block: u64,
    /// Free bytes in the whole reserve.
    pub free_in_reserve: u64,
}

impl PoolFacts {
    /// The facts of a request of `rounded` bytes on `stream` of pool `pool_id`, in `st`.
    pub fn from_state(
        st: &State,
        rounded: u64,
        stream: u64,
        pool_id: super::state::PoolId,
    ) -> PoolFacts {
        let key = PoolKey {
            pool_id,
            kind: pool_for(rounded),
            stream,
        };
        let (mut pool_free, mut largest, mut free) = (0u64, 0u64, 0u64);
        for (k, b) in st.free_blocks() {
            free += b.size;
            if k == key {
                pool_free += b.size;
                largest = largest.max(b.size);
            }
        }
        PoolFacts {
            key,
            pool_free,
            largest_free_block: largest,
            free_in_reserve: free,
        }
    }
}

/// What is known at one OOM event.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct OomFacts {
    pub index: u64,
    pub time_us: Option<f64>,
    pub device: String,
    /// Bytes requested (a snapshot's `oom` entry records the size already rounded).
    pub requested: Option<u64>,
    pub device_free: Option<u64>,
    /// The timeline's total at the OOM (the figure the explorer shows there).
    pub allocated: Option<u64>,
    pub reserved: Option<u64>,
    pub capacity: Option<u64>,
    /// The allocator state (None: the source records no segments and blocks).
    pub pool: Option<PoolFacts>,
    /// The biggest live allocations ("1.000 GiB name  file:line func"), for the advice.
    pub biggest_live: Vec<String>,
    /// A rising step baseline ("+1.0 GiB over 3 steps"), for the advice.
    pub rising_baseline: Option<String>,
}

/// One OOM explained: the `ooms[]` object of `summary --json`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OomExplanation {
    pub index: u64,
    #[serde(serialize_with = "micros")]
    pub time_us: Option<f64>,
    pub device: String,
    pub requested_bytes: Option<u64>,
    pub rounded_bytes: Option<u64>,
    /// `small` / `large`, with ` private (a, b)` and ` stream N` when not the defaults.
    pub pool: Option<String>,
    pub device_free: Option<u64>,
    pub allocated: Option<u64>,
    pub reserved: Option<u64>,
    pub free_in_reserve: Option<u64>,
    pub largest_free_block: Option<u64>,
    pub capacity: Option<u64>,
    pub outside_allocator: Option<u64>,
    /// The memory outside the allocator the trace's sources name at the OOM, by source
    /// (`{"nccl": …, "cudnn": …}`, biggest first: `--nsys`, a device log, the recorder);
    /// null when the trace has no source of external memory.
    #[serde(serialize_with = "by_source")]
    pub outside_by_source: Option<Vec<(String, u64)>>,
    pub verdict: Verdict,
    pub advice: String,
}

/// A time in µs: an integer when whole, null when unknown (as the summary's other times).
fn micros<S: serde::Serializer>(t: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) if t.fract() == 0.0 && t.abs() < 9.0e15 => s.serialize_i64(*t as i64),
        Some(t) if t.is_finite() => s.serialize_f64(*t),
        _ => s.serialize_none(),
    }
}

/// `[(name, bytes)]` as a JSON object in its order, or null.
fn by_source<S: serde::Serializer>(
    v: &Option<Vec<(String, u64)>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    match v {
        None => s.serialize_none(),
        Some(v) => {
            let mut m = s.serialize_map(Some(v.len()))?;
            for (k, b) in v {
                m.serialize_entry(k, b)?;
            }
            m.end()
        }
    }
}

/// "1.000 GiB" or "unavailable".
pub fn shown(b: Option<u64>) -> String {
    b.map_or("unavailable".to_string(), human_bytes)
}

impl OomExplanation {
    /// The figures, labelled, in the order every report prints them (unknown ones
    /// "unavailable"); the verdict and the advice follow them.
    pub fn figures(&self) -> [(&'static str, String); 10] {
        [
            ("requested", shown(self.requested_bytes)),
            ("rounded", shown(self.rounded_bytes)),
            (
                "pool",
                self.pool.clone().unwrap_or_else(|| "unavailable".into()),
            ),
            ("driver free", shown(self.device_free)),
            ("allocated", shown(self.allocated)),
            ("reserved", shown(self.reserved)),
            ("free in reserve", shown(self.free_in_reserve)),
            ("largest free", shown(self.largest_free_block)),
            ("capacity", shown(self.capacity)),
            ("outside allocator", self.outside_text()),
        ]
    }

    /// The outside-allocator figure, followed by what the trace's sources name at the OOM
    /// (`1.500 GiB (sources: nccl 1.000 GiB, cudnn 256.0 MiB)`).
    fn outside_text(&self) -> String {
        let base = shown(self.outside_allocator);
        match self.outside_by_source.as_deref() {
            Some(v) if !v.is_empty() => {
                let named: Vec<String> = v
                    .iter()
                    .map(|(k, b)| format!("{k} {}", human_bytes(*b)))
                    .collect();
                format!("{base} (sources: {})", named.join(", "))
            }
            _ => base,
        }
    }
}

/// Memory outside the allocator counts as the cause when it alone would have covered what
/// the driver lacked and it is at least this fraction of the device.
const OUTSIDE_SHARE: u64 = 10;

/// Explains one OOM.
///
/// The verdict, in order: `request_too_large` when the rounded request exceeds the capacity;
/// `fragmentation` when the pool the request needs (pool id, small/large, stream) holds at
/// least the rounded request in free bytes but no free block that large; `outside_allocator`
/// when capacity − reserved − driver-free covers what the driver lacked for the new segment
/// (`get_allocation_size` of the request, minus driver-free) and is at least a tenth of the
/// device; otherwise `live_tensors`. Whatever a step needs that the source lacks makes it
/// `unknown`, naming the missing figure.
pub fn explain(f: &OomFacts) -> OomExplanation {
    let rounded = f.requested.and_then(round_size);
    let pool = match (&f.pool, rounded) {
        (Some(p), _) => Some(p.key.label()),
        (None, Some(r)) => Some(pool_for(r).name().to_string()),
        (None, None) => None,
    };
    let free_in_reserve = match &f.pool {
        Some(p) => Some(p.free_in_reserve),
        // Without blocks: the reserve minus the live bytes (rounding waste included).
        None => f
            .reserved
            .zip(f.allocated)
            .map(|(r, a)| r.saturating_sub(a)),
    };
    let outside = match (f.capacity, f.reserved, f.device_free) {
        (Some(c), Some(r), Some(d)) => Some(c.saturating_sub(r.saturating_add(d))),
        _ => None,
    };
    let mut missing: Vec<&str> = Vec::new();
    let (verdict, advice) = decide(f, rounded, free_in_reserve, outside, &mut missing);
    let advice = if verdict == Verdict::Unknown {
        format!(
            "cannot tell the cause: missing {}. {advice}",
            missing.join("; ")
        )
    } else {
        advice
    };
    OomExplanation {
        index: f.index,
        time_us: f.time_us,
        device: f.device.clone(),
        requested_bytes: f.requested,
        rounded_bytes: rounded,
        pool,
        device_free: f.device_free,
        allocated: f.allocated,
        reserved: f.reserved,
        free_in_reserve,
        largest_free_block: f.pool.as_ref().map(|p| p.largest_free_block),
        capacity: f.capacity,
        outside_allocator: outside,
        outside_by_source: None,
        verdict,
        advice,
    }
}

/// The advice for a request whose block or segment size does not fit 64 bits.
pub fn unservable(requested: u64) -> String {
    format!(
        "one request of {requested} B cannot be rounded up to a block or segment size within 64 bits: no allocator can ever serve it (a size this large usually means a corrupt or miscounted size in the file)"
    )
}

fn decide(
    f: &OomFacts,
    rounded: Option<u64>,
    free_in_reserve: Option<u64>,
    outside: Option<u64>,
    missing: &mut Vec<&'static str>,
) -> (Verdict, String) {
    let Some(rounded) = rounded else {
        if let Some(r) = f.requested {
            return (Verdict::RequestTooLarge, unservable(r));
        }
        missing.push("the requested size (the OOM event records none)");
        return (Verdict::Unknown, String::new());
    };
    let req = human_bytes(rounded);
    if let Some(c) = f.capacity {
        if rounded > c {
            return (
                Verdict::RequestTooLarge,
                format!(
                    "one request of {req} exceeds the whole device ({}): no setting makes it fit; split the tensor (a smaller batch or sequence, sharding, chunked ops)",
                    human_bytes(c)
                ),
            );
        }
    }
    let Some(new_segment) = allocation_size(rounded) else {
        return (Verdict::RequestTooLarge, unservable(rounded));
    };
    match &f.pool {
        Some(p) if p.pool_free >= rounded && p.largest_free_block < rounded => {
            return (
                Verdict::Fragmentation,
                format!(
                    "the {} pool had {} free but its largest free block was {} (< {req}): the free memory is split into pieces no request this size fits. Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (segments grow instead of splitting), or max_split_size_mb to stop large cached blocks from being split; {} would have been free in that pool",
                    p.key.label(),
                    human_bytes(p.pool_free),
                    human_bytes(p.largest_free_block),
                    human_bytes(p.pool_free)
                ),
            );
        }
        Some(_) => {}
        None => {
            if let Some(free) = free_in_reserve.filter(|&x| x >= rounded) {
                missing.push("the free blocks of each pool (this file records no allocator segments), so fragmentation cannot be ruled out");
                return (
                    Verdict::Unknown,
                    format!(
                        "the reserve held up to {} not used by live tensors, more than the {req} requested",
                        human_bytes(free)
                    ),
                );
            }
            if free_in_reserve.is_none() {
                missing.push("reserved memory (the file records none)");
                return (Verdict::Unknown, String::new());
            }
        }
    }
    let (Some(cap), Some(reserved), Some(dfree), Some(outside)) =
        (f.capacity, f.reserved, f.device_free, outside)
    else {
        if f.capacity.is_none() {
            missing.push("the device capacity (pass --capacity SIZE), to tell live tensors from memory outside the allocator");
        }
        if f.device_free.is_none() {
            missing.push("the driver's free bytes at the OOM (device_free)");
        }
        if f.reserved.is_none() {
            missing.push("reserved memory");
        }
        return (
            Verdict::Unknown,
            format!(
                "allocated {}, reserved {}, driver free {}; the request needed a new {} segment",
                shown(f.allocated),
                shown(f.reserved),
                shown(f.device_free),
                human_bytes(new_segment)
            ),
        );
    };
    let shortfall = new_segment.saturating_sub(dfree);
    if shortfall > 0 && outside >= shortfall && outside >= cap / OUTSIDE_SHARE {
        return (
            Verdict::OutsideAllocator,
            format!(
                "{} of the {} device is outside PyTorch's allocator (capacity − reserved {} − driver free {}): other processes, NCCL buffers, the CUDA context and libraries. PyTorch's counters cannot see it; without it the new {} segment would have fit. Check nvidia-smi for other processes, NCCL_BUFFSIZE / NCCL buffers, and library workspaces",
                human_bytes(outside),
                human_bytes(cap),
                human_bytes(reserved),
                human_bytes(dfree),
                human_bytes(new_segment)
            ),
        );
    }
    let Some(allocated) = f.allocated else {
        missing.push("the bytes allocated at the OOM");
        return (Verdict::Unknown, String::new());
    };
    let mut s = format!(
        "the device is full of live tensors: {} allocated of {} reserved ({} free in the reserve, none of it usable for {req}); the request needed a new {} segment and the driver had {} free",
        human_bytes(allocated),
        human_bytes(reserved),
        shown(free_in_reserve),
        human_bytes(new_segment),
        human_bytes(dfree)
    );
    if !f.biggest_live.is_empty() {
        s.push_str(&format!(". Biggest live: {}", f.biggest_live.join("; ")));
    }
    if let Some(r) = &f.rising_baseline {
        s.push_str(&format!(
            ". The step baseline rises ({r}): a leak or a retained graph"
        ));
    }
    s.push_str(". Reduce what is live: activation checkpointing, a smaller microbatch; empty_cache() will not help");
    (Verdict::LiveTensors, s)
}
