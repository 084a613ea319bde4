//! A PyTorch OOM message alone (`memtide oom MESSAGE`): where no trace was kept, the figures
//! the message prints explained by the same rules as a trace's OOM, each with its precision.

use anyhow::Result;
use memtide_core::allocator::{explain, OomExplanation, OomFacts, Verdict};
use memtide_core::open::{read_oom_message, OpenError};
use memtide_core::trace::human_bytes;
use serde::Serialize;
use std::path::Path;

/// The message's answer: its figures as printed and their verdict.
#[derive(Clone, Debug, Serialize)]
pub struct MessageAnswer {
    /// The file read.
    pub file: String,
    /// Which PyTorch wording it matched (`2.0`, `2.1`, `2.2+`).
    pub wording: &'static str,
    /// The largest rounding of a printed figure (half its last digit): a verdict decided by
    /// less than this says so.
    pub precision: u64,
    /// The OOM explained: `ooms[]`'s object of `summary --json`, with what the message does
    /// not print (blocks, stack, history) `null`.
    pub oom: OomExplanation,
}

/// Reads and explains the first OOM message in `path` (a whole job log is fine).
pub fn explain_message(path: &Path) -> Result<MessageAnswer> {
    // The message named as the command's own argument, not as `--oom-message`'s.
    let f = read_oom_message(path).map_err(|e| match e {
        OpenError::OomMessage { name, reason } => anyhow::anyhow!("cannot read {name}: {reason}"),
        e => anyhow::Error::new(e).context(format!("cannot read {}", path.display())),
    })?;
    let m = &f.message;
    let (reserved, reserved_precision) = m.reserved_bytes();
    let precision = [
        m.tried.precision,
        m.free.precision,
        m.capacity.precision,
        reserved_precision,
    ]
    .into_iter()
    .max()
    .unwrap_or(0);
    let facts = OomFacts {
        index: 0,
        time_us: None,
        device: format!("cuda:{}", m.gpu),
        requested: Some(m.tried.bytes),
        device_free: Some(m.free.bytes),
        allocated: Some(m.allocated.bytes),
        reserved: Some(reserved),
        capacity: Some(m.capacity.bytes),
        capacity_source: Some(format!(
            "the message (\"total capacity of {}\", ± {})",
            m.capacity.text,
            human_bytes(m.capacity.precision)
        )),
        pool: None,
        biggest_live: Vec::new(),
        rising_baseline: None,
    };
    let mut oom = explain(&facts);
    oom.shortfall = oom.lacked();
    pieces_after_release(&mut oom, precision);
    // The 2.0 (and 1.x) and 2.2+ wordings print `allowed` when a memory fraction is set;
    // 2.1's does not.
    if m.wording != "2.1" && m.allowed.is_none() {
        refused_by_the_driver(&mut oom);
    }
    Ok(MessageAnswer {
        file: f.name.clone(),
        wording: m.wording,
        precision,
        oom,
    })
}

impl MessageAnswer {
    /// The answer in text: the figures, the verdict and what follows it, as `summary` prints
    /// a trace's OOM.
    pub fn text(&self) -> String {
        let x = &self.oom;
        let mut s = format!(
            "out of memory on {} · from PyTorch's message ({} wording; figures as printed, ± {})\n",
            x.device,
            self.wording,
            human_bytes(self.precision)
        );
        let verdict = [("verdict", x.verdict.name().to_string())];
        for (k, v) in x.figures().into_iter().chain(verdict).chain(x.details()) {
            s += &format!("  {k:<17} {v}\n");
        }
        s += "  not in a message  the blocks, the stack and the history: record a memory snapshot (docs/recording.md) for pinners, fixes checked by replay and the failed request's stack\n";
        s
    }
}

/// PyTorch writes its message only after releasing every cached segment it could and
/// retrying, and its "reserved but unallocated" counts whole free blocks: where the request
/// fits in those free bytes plus the driver's (by more than the message's rounding) and the
/// driver could not hold the new segment itself, the free bytes were in pieces pinned by live
/// blocks. A trace without blocks cannot say that (its free reserve may be rounding inside
/// live tensors); a message can. Nothing is replayed: a message holds no history.
fn pieces_after_release(x: &mut OomExplanation, precision: u64) {
    let (Some(r), Some(free), Some(d)) = (x.rounded_bytes, x.free_in_reserve, x.device_free) else {
        return;
    };
    let room = free.saturating_add(d);
    if x.verdict != Verdict::Unknown || d >= r || r > room || room - r <= precision {
        return;
    }
    x.verdict = Verdict::Fragmentation;
    x.reasoning = format!(
        "{} requested ≤ {} free in the reserve + {} driver free = {}, yet PyTorch writes this message only after releasing every cached segment it could: the free bytes left are in pieces pinned by live blocks (or held for another stream or pool)",
        human_bytes(r),
        human_bytes(free),
        human_bytes(d),
        human_bytes(room)
    );
    x.advice = "the free memory was in pieces: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True may serve it (unless the run already used it); a message cannot be replayed, so no setting is called fit: record a memory snapshot to check it by replay".into();
}

/// A 2.0 or 2.2+ message prints `… allowed;` when a memory fraction caps the process. Without it, a
/// driver that reported room for the whole new segment and still refused it did so itself
/// (Windows' WDDM, ROCm, an APU carve-out): no cap of PyTorch's explains it, and the figures
/// cannot say which tensors to blame.
fn refused_by_the_driver(x: &mut OomExplanation) {
    let (Some(r), Some(d)) = (x.rounded_bytes, x.device_free) else {
        return;
    };
    if d < r {
        return;
    }
    x.verdict = Verdict::Unknown;
    x.reasoning = format!(
        "the driver reported {} free, room for the {} requested, and the message names no memory fraction (PyTorch prints \"allowed\" when one caps the process): the driver refused the allocation itself — the figures do not explain it",
        human_bytes(d),
        human_bytes(r)
    );
    x.advice = "cannot tell the cause from the message: on Windows the WDDM driver, on ROCm or an APU the driver's own limits, refuse allocations the free figure would allow; check the driver's own limits, and record a memory snapshot to see the allocator's blocks".into();
    x.shortfall = None;
}
