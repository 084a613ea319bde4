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
    /// Where `capacity` came from (`--capacity`, a device log, a Kineto trace's device
    /// properties, PyTorch's OOM message).
    pub capacity_source: Option<String>,
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
    /// Where `capacity` came from (null: no capacity known).
    pub capacity_source: Option<String>,
    pub outside_allocator: Option<u64>,
    /// The memory outside the allocator the trace's sources name at the OOM, by source
    /// (`{"nccl": …, "cudnn": …}`, biggest first: `--nsys`, a device log, the recorder);
    /// null when the trace has no source of external memory.
    #[serde(serialize_with = "by_source")]
    pub outside_by_source: Option<Vec<(String, u64)>>,
    pub verdict: Verdict,
    /// Why that verdict, in one line of numbers.
    pub reasoning: String,
    pub advice: String,
    /// For `fragmentation`: the live blocks that split the needed pool's free space.
    pub pinners: Vec<super::pinners::Pinner>,
    /// The allocator settings replayed from the start of the history under the ceiling the
    /// run had, each with whether it would have fit.
    pub fixes: Vec<super::fixes::Fix>,
    /// For `live_tensors`: the largest owners at the OOM and what reducing them would save
    /// (estimates).
    pub savings: Vec<super::fixes::Saving>,
    /// The ceiling the fixes were replayed under, in words (null: none known; the fixes
    /// then compare reserved peaks only).
    pub fixes_ceiling: Option<String>,
    /// Why `fixes` is empty when the settings were not replayed (`summary` of a long history
    /// without `--fixes`): in JSON only then. The verdict is then the state's at the OOM,
    /// not checked against the replays.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fixes_deferred: Option<String>,
    /// The one shortfall to aim at: the bytes the request lacked under the file's own
    /// settings (the replay's figure where it reproduces the OOM; else the request less the
    /// free reserve and the driver's free bytes). Null when unknowable.
    pub shortfall: Option<u64>,
    /// The failed request's own stack, innermost first (empty, null in JSON: the source
    /// records none).
    #[serde(serialize_with = "empty_as_null")]
    pub stack: Vec<String>,
    /// Its user frame (`loss.py:21 compute_loss`), or empty (null in JSON).
    #[serde(serialize_with = "empty_as_null")]
    pub user_frame: String,
    /// The module path its stack shows (`layers.3.mlp`), or empty (null in JSON).
    #[serde(serialize_with = "empty_as_null")]
    pub module: String,
    /// Where a fix serves the request but leaves less room than an earlier step needed at
    /// the same point: why it will likely fail again (null otherwise).
    pub horizon: Option<String>,
}

/// A time in µs: an integer when whole, null when unknown (as the summary's other times).
fn micros<S: serde::Serializer>(t: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) if t.fract() == 0.0 && t.abs() < 9.0e15 => s.serialize_i64(*t as i64),
        Some(t) if t.is_finite() => s.serialize_f64(*t),
        _ => s.serialize_none(),
    }
}

/// A string or list as itself, or null when empty: the file does not record it.
fn empty_as_null<T, S>(v: &T, s: S) -> Result<S::Ok, S::Error>
where
    T: serde::Serialize + IsEmpty,
    S: serde::Serializer,
{
    if v.is_empty() {
        s.serialize_none()
    } else {
        v.serialize(s)
    }
}

/// What `empty_as_null` asks of a field.
trait IsEmpty {
    fn is_empty(&self) -> bool;
}

impl IsEmpty for String {
    fn is_empty(&self) -> bool {
        String::is_empty(self)
    }
}

impl<T> IsEmpty for Vec<T> {
    fn is_empty(&self) -> bool {
        Vec::is_empty(self)
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

impl OomExplanation {
    /// What the driver lacked for the request under the file's own settings, from the
    /// figures alone: the new segment it needed less the driver's free bytes (where no free
    /// block held it); None when unknown.
    pub fn lacked(&self) -> Option<u64> {
        let r = self.rounded_bytes?;
        let d = self.device_free?;
        if self.largest_free_block.is_some_and(|b| b >= r) {
            return None;
        }
        // The driver had room for the segment, yet the request failed: a cap the file does
        // not record (a memory fraction) refused it, so the bytes to save are unknown.
        Some(allocation_size(r)?.saturating_sub(d)).filter(|&b| b > 0)
    }

    /// Whether the driver's free bytes would have held the new segment the request needed
    /// (then something else — a cap — refused it).
    fn driver_had_room(&self) -> bool {
        match (
            self.rounded_bytes.and_then(allocation_size),
            self.device_free,
        ) {
            (Some(seg), Some(d)) => d >= seg,
            _ => false,
        }
    }

    /// What follows the verdict in every report, labelled, in order: where the failed
    /// request came from (its user frame, module and stack), the reasoning, the advice, the
    /// shortfall to aim at, where the capacity came from, the pinners, the fixes checked by
    /// replay (and their ceiling), why a fix may not last, the estimated savings of
    /// reducing live tensors.
    pub fn details(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if !self.user_frame.is_empty() {
            v.push(("requested at", self.user_frame.clone()));
        }
        if !self.module.is_empty() {
            v.push(("in module", self.module.clone()));
        }
        for f in self.stack.iter().take(STACK_SHOWN) {
            v.push(("stack", f.clone()));
        }
        if self.stack.len() > STACK_SHOWN {
            v.push((
                "stack",
                format!("… {} more frames", self.stack.len() - STACK_SHOWN),
            ));
        }
        v.push(("reasoning", self.reasoning.clone()));
        v.push(("advice", self.advice.clone()));
        v.push((
            "shortfall",
            match self.shortfall {
                Some(b) => format!(
                    "{} under the file's own settings: the bytes to save for this request",
                    human_bytes(b)
                ),
                None if self.device_free.is_none() => {
                    "unavailable: the file does not record what the driver had free".into()
                }
                None if self.driver_had_room() => "unavailable: the driver reported room for the segment, so something other than the bytes refused it (a memory fraction, or the driver itself)"
                    .into(),
                None => "unavailable".into(),
            },
        ));
        if let (Some(c), Some(src)) = (self.capacity, &self.capacity_source) {
            v.push(("capacity from", format!("{} from {src}", human_bytes(c))));
        }
        for p in &self.pinners {
            v.push(("pinner", p.text()));
        }
        if !self.fixes.is_empty() {
            v.push((
                "fixes replayed",
                match &self.fixes_ceiling {
                    Some(c) => format!("from the start of the history under the ceiling {c}"),
                    None => {
                        "from the start of the history with no ceiling known: reserved peaks only"
                            .into()
                    }
                },
            ));
        }
        for f in &self.fixes {
            v.push(("fix", f.text()));
        }
        if let Some(d) = &self.fixes_deferred {
            v.push(("fixes", d.clone()));
        }
        if let Some(h) = &self.horizon {
            v.push(("horizon", h.clone()));
        }
        for x in &self.savings {
            v.push(("saving", x.text()));
        }
        v
    }
}

/// The frames of the failed request's stack a report prints (innermost first; the JSON keeps
/// more).
const STACK_SHOWN: usize = 8;

/// Memory outside the allocator counts as the cause when it alone would have covered what
/// the driver lacked and it is at least this fraction of the device.
const OUTSIDE_SHARE: u64 = 10;

/// Explains one OOM.
///
/// The verdict, in order (docs/oom-verdicts.md):
/// 1. `request_too_large`: the rounded request exceeds the capacity (or 64 bits).
/// 2. `fragmentation`: the pool the request needs (pool id, small/large, stream) holds at
///    least the request in free bytes but no free block that large.
/// 3. The request fits in free reserve + driver free together: the bytes were there but in
///    pieces — `fragmentation` when the file records the free blocks (what PyTorch could
///    release it did, before giving up), else `unknown` between fragmentation and live
///    tensors (the free blocks decide).
/// 4. It fits in no combination of them: `outside_allocator` when capacity − reserved −
///    driver free covers what the driver lacked for the new segment and is at least a tenth
///    of the device; else `live_tensors`. Without a capacity: `live_tensors` (outside memory
///    unknown, never the reason), unless the request exceeds reserved + driver free — then
///    `unknown` between `request_too_large` and `outside_allocator` (the capacity decides).
///
/// A figure a step needs that the source lacks makes it `unknown`, naming what is missing.
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
    let d = decide(f, rounded, free_in_reserve, outside, &mut missing);
    let advice = if d.verdict == Verdict::Unknown && !missing.is_empty() {
        format!(
            "cannot tell the cause: missing {}. {}",
            missing.join("; "),
            d.advice
        )
    } else {
        d.advice
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
        capacity_source: f.capacity.and(f.capacity_source.clone()),
        outside_allocator: outside,
        outside_by_source: None,
        verdict: d.verdict,
        reasoning: d.reasoning,
        advice,
        pinners: Vec::new(),
        fixes: Vec::new(),
        fixes_deferred: None,
        savings: Vec::new(),
        fixes_ceiling: None,
        shortfall: None,
        stack: Vec::new(),
        user_frame: String::new(),
        module: String::new(),
        horizon: None,
    }
}

/// The advice for a request whose block or segment size does not fit 64 bits.
pub(crate) fn unservable(requested: u64) -> String {
    format!(
        "one request of {requested} B cannot be rounded up to a block or segment size within 64 bits: no allocator can ever serve it (a size this large usually means a corrupt or miscounted size in the file)"
    )
}

/// A verdict with its one line of numbers and its advice.
struct Decision {
    verdict: Verdict,
    reasoning: String,
    advice: String,
}

fn decision(verdict: Verdict, reasoning: String, advice: String) -> Decision {
    Decision {
        verdict,
        reasoning,
        advice,
    }
}

fn decide(
    f: &OomFacts,
    rounded: Option<u64>,
    free_in_reserve: Option<u64>,
    outside: Option<u64>,
    missing: &mut Vec<&'static str>,
) -> Decision {
    let Some(rounded) = rounded else {
        if let Some(r) = f.requested {
            return decision(
                Verdict::RequestTooLarge,
                format!("{r} B requested: no block or segment size of 64 bits holds it"),
                unservable(r),
            );
        }
        missing.push("the requested size (the OOM event records none)");
        return decision(
            Verdict::Unknown,
            "the OOM event records no requested size".into(),
            String::new(),
        );
    };
    let req = human_bytes(rounded);
    if let Some(c) = f.capacity {
        if rounded > c {
            return decision(
                Verdict::RequestTooLarge,
                format!(
                    "{req} requested > the device's {} capacity",
                    human_bytes(c)
                ),
                format!(
                    "one request of {req} exceeds the whole device ({}): no setting makes it fit; split the tensor (a smaller batch or sequence, sharding, chunked ops)",
                    human_bytes(c)
                ),
            );
        }
    }
    let Some(new_segment) = allocation_size(rounded) else {
        return decision(
            Verdict::RequestTooLarge,
            format!("{req} requested: no segment size of 64 bits holds it"),
            unservable(rounded),
        );
    };
    if let Some(p) = &f.pool {
        if p.pool_free >= rounded && p.largest_free_block < rounded {
            return decision(
                Verdict::Fragmentation,
                format!(
                    "{req} requested ≤ {} free in the {} pool, but its largest free block is {}: no block large enough",
                    human_bytes(p.pool_free),
                    p.key.label(),
                    human_bytes(p.largest_free_block)
                ),
                fragmentation_advice(&p.key.label(), p.pool_free, p.largest_free_block, &req),
            );
        }
    }
    let (Some(reserved), Some(dfree), Some(free)) = (f.reserved, f.device_free, free_in_reserve)
    else {
        return lacking(f, new_segment, missing);
    };
    let avail = free.saturating_add(dfree);
    let sum = format!(
        "{} free in the reserve + {} driver free = {}",
        human_bytes(free),
        human_bytes(dfree),
        human_bytes(avail)
    );
    if let Some(p) = f.pool.as_ref().filter(|p| p.largest_free_block >= rounded) {
        return decision(
            Verdict::Unknown,
            format!(
                "a free block of {} in the {} pool could hold the {req} requested: the allocator would have used it, so the file's figures do not explain this OOM",
                human_bytes(p.largest_free_block),
                p.key.label()
            ),
            "the recorded blocks contradict a plain OOM: the block may have been waiting on another stream's work (record_stream), barred by max_split_size_mb, or the snapshot's blocks are out of step with its trace; any verdict would be a guess".into(),
        );
    }
    if dfree >= new_segment {
        return capped(f, &req, reserved, free, dfree, new_segment, missing);
    }
    if avail >= rounded {
        return stranded(f, &req, &sum, free, missing);
    }
    let none_fits =
        format!("{req} requested > {sum}: no release or rearrangement of the cache could serve it");
    let live = format!(
        "{} live of {} reserved",
        shown(f.allocated),
        human_bytes(reserved)
    );
    match (f.capacity, outside) {
        (Some(cap), Some(outside)) => {
            let lacked = new_segment.saturating_sub(dfree);
            if lacked > 0 && outside >= lacked && outside >= cap / OUTSIDE_SHARE {
                return decision(
                    Verdict::OutsideAllocator,
                    format!(
                        "{none_fits}; outside the allocator {} (capacity {} − reserved {} − driver free {}) ≥ the {} the new {} segment lacked",
                        human_bytes(outside),
                        human_bytes(cap),
                        human_bytes(reserved),
                        human_bytes(dfree),
                        human_bytes(lacked),
                        human_bytes(new_segment)
                    ),
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
            let reasoning = format!(
                "{none_fits}; {live}; outside the allocator {} (capacity {} from {}), less than would have saved it",
                human_bytes(outside),
                human_bytes(cap),
                f.capacity_source.as_deref().unwrap_or("the file")
            );
            live_tensors(
                f,
                reasoning,
                &req,
                reserved,
                free,
                new_segment,
                dfree,
                missing,
            )
        }
        _ if rounded > reserved.saturating_add(dfree) => {
            missing.push("the device capacity (--capacity SIZE, --oom-message FILE, a device log)");
            decision(
                Verdict::Unknown,
                format!(
                    "{req} requested > reserved {} + driver free {}: even with no live tensor it would not fit, so either the request exceeds the device (request_too_large) or memory outside the allocator took the rest (outside_allocator); the capacity decides",
                    human_bytes(reserved),
                    human_bytes(dfree)
                ),
                "two verdicts remain: request_too_large or outside_allocator".into(),
            )
        }
        _ => {
            let reasoning = format!(
                "{none_fits}; {live}; outside the allocator unknown (no capacity), not needed for this verdict"
            );
            live_tensors(
                f,
                reasoning,
                &req,
                reserved,
                free,
                new_segment,
                dfree,
                missing,
            )
        }
    }
}

fn fragmentation_advice(pool: &str, pool_free: u64, largest: u64, req: &str) -> String {
    format!(
        "the {pool} pool had {} free but its largest free block was {} (< {req}): the free memory is split into pieces no request this size fits. Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (segments grow instead of splitting), or max_split_size_mb to stop large cached blocks from being split; {} would have been free in that pool",
        human_bytes(pool_free),
        human_bytes(largest),
        human_bytes(pool_free)
    )
}

/// The request fits in the free reserve and driver free together, but in no one block.
fn stranded(
    f: &OomFacts,
    req: &str,
    sum: &str,
    free: u64,
    missing: &mut Vec<&'static str>,
) -> Decision {
    let reasoning = format!(
        "{req} requested ≤ {sum}, but no free block holds it and the driver cannot: the free bytes are in pieces"
    );
    match &f.pool {
        Some(p) => decision(
            Verdict::Fragmentation,
            format!("{reasoning} (every cached segment PyTorch could release it had released; the rest are pinned by live blocks)"),
            format!(
                "the free memory is split between blocks of the reserve pinned by live tensors ({} free, the largest in the {} pool {}) and the driver's free memory: set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, so a free block at a segment's end grows into driver memory instead of needing a whole new segment",
                human_bytes(free),
                p.key.label(),
                human_bytes(p.largest_free_block)
            ),
        ),
        None => {
            missing.push("the free blocks of each pool (this file records no allocator segments)");
            decision(
                Verdict::Unknown,
                format!("{reasoning} — or rounding inside live blocks: without the free blocks the free reserve is reserved − allocated"),
                format!(
                    "two verdicts remain: fragmentation (the {} not used by live tensors is free but in pieces) or live_tensors (it is rounding inside live blocks); the free blocks of each pool decide — record a memory snapshot (torch.cuda.memory._record_memory_history)",
                    human_bytes(free)
                ),
            )
        }
    }
}

/// The driver had room for the whole new segment, yet the allocator refused it: its own
/// limit (`set_per_process_memory_fraction`) was reached, somewhere in [reserved, reserved +
/// the segment). Only the free reserve could have served the request.
fn capped(
    f: &OomFacts,
    req: &str,
    reserved: u64,
    free: u64,
    dfree: u64,
    new_segment: u64,
    missing: &mut Vec<&'static str>,
) -> Decision {
    let cap = format!(
        "the driver had {} free, room for the new {} segment, so the allocator's own limit (a memory fraction: set_per_process_memory_fraction) refused it, a cap between {} and {}",
        human_bytes(dfree),
        human_bytes(new_segment),
        human_bytes(reserved),
        human_bytes(reserved.saturating_add(new_segment))
    );
    if free >= rounded_of(f) {
        let sum = format!("{} free in the reserve", human_bytes(free));
        let mut d = stranded(f, req, &sum, free, missing);
        d.reasoning = format!("{cap}; {}", d.reasoning);
        return d;
    }
    let reasoning = format!(
        "{cap}; {req} requested > {} free in the reserve: under that cap no release could serve it; {} live of {} reserved",
        human_bytes(free),
        shown(f.allocated),
        human_bytes(reserved)
    );
    let mut d = live_tensors(
        f,
        reasoning,
        req,
        reserved,
        free,
        new_segment,
        dfree,
        missing,
    );
    if d.verdict == Verdict::LiveTensors {
        d.advice = d.advice.replacen(
            "the device is full of live tensors",
            "the memory this process may use (its cap) is full of live tensors",
            1,
        );
    }
    d
}

/// The rounded request of `f` (0 when unknown: only called once it is known).
fn rounded_of(f: &OomFacts) -> u64 {
    f.requested.and_then(round_size).unwrap_or(0)
}

#[allow(clippy::too_many_arguments)]
fn live_tensors(
    f: &OomFacts,
    reasoning: String,
    req: &str,
    reserved: u64,
    free: u64,
    new_segment: u64,
    dfree: u64,
    missing: &mut Vec<&'static str>,
) -> Decision {
    let Some(allocated) = f.allocated else {
        missing.push("the bytes allocated at the OOM");
        return decision(Verdict::Unknown, reasoning, String::new());
    };
    let mut s = format!(
        "the device is full of live tensors: {} allocated of {} reserved ({} free in the reserve, none of it usable for {req}); the request needed a new {} segment and the driver had {} free",
        human_bytes(allocated),
        human_bytes(reserved),
        human_bytes(free),
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
    decision(Verdict::LiveTensors, reasoning, s)
}

/// A figure the verdict needs is missing (no reserve or driver-free figures).
fn lacking(f: &OomFacts, new_segment: u64, missing: &mut Vec<&'static str>) -> Decision {
    if f.device_free.is_none() {
        missing.push("the driver's free bytes at the OOM (device_free)");
    }
    if f.reserved.is_none() {
        missing.push("reserved memory (the file records none)");
    }
    if f.allocated.is_none() && f.pool.is_none() {
        missing.push("the bytes allocated at the OOM");
    }
    decision(
        Verdict::Unknown,
        format!(
            "allocated {}, reserved {}, driver free {}: without the reserve and the driver's free bytes live tensors, fragmentation and outside memory cannot be told apart",
            shown(f.allocated),
            shown(f.reserved),
            shown(f.device_free)
        ),
        format!(
            "the request needed a new {} segment",
            human_bytes(new_segment)
        ),
    )
}
