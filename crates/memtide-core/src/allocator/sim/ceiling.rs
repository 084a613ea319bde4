//! The ceiling a what-if replay runs under: the most the allocator could really reserve.
//!
//! At an out-of-memory event PyTorch's allocator had its reserve and what the driver reported
//! free (`device_free`, from `cudaMemGetInfo`): `reserved + device_free` is all it could ever
//! have held there, whatever the device's size and whatever lay outside it. That figure — the
//! file's own — is the ceiling when the file records an OOM; otherwise a known capacity less
//! the memory outside the allocator (when known) is. Without either there is no ceiling: no
//! setting can be said to fit or not.

use crate::allocator::rounding::{allocation_size, round_size};
use crate::index::Index;
use crate::trace::{human_bytes, MarkKind, Seq, Trace};
use serde::Serialize;

/// Bytes the allocator may reserve in a replay, and where that figure came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Ceiling {
    pub bytes: u64,
    /// `oom_figures` (reserved + driver free at the file's OOM), `oom_cap` (the driver had room
    /// for the segment refused there: the allocator's own cap, below reserved + that segment),
    /// `capacity` (a capacity less the memory outside the allocator), or `given` (a figure
    /// passed in by code).
    pub source: &'static str,
    /// The OOM (`#N` as shown) whose figures gave it.
    pub oom_event: Option<u64>,
    pub reserved_at_oom: Option<u64>,
    pub device_free_at_oom: Option<u64>,
    pub capacity: Option<u64>,
    /// Where the capacity came from (`--capacity`, a device log, …).
    pub capacity_source: Option<String>,
    /// Memory outside the allocator subtracted from the capacity (None: unknown, nothing
    /// subtracted).
    pub outside: Option<u64>,
    /// One line in words: the figure and where it came from.
    pub text: String,
}

impl Ceiling {
    /// Whether the run surely had this much: the file's own figures at its OOM (the reserve
    /// plus the driver's free bytes), the reserve it held, a capacity less the memory outside
    /// the allocator as measured, or a figure given by code. A capacity with the outside
    /// unknown, or a bound from a refused segment or the allocator's cap, is an upper bound.
    pub fn proven(&self) -> bool {
        match self.source {
            "oom_figures" | "reserved" | "given" => true,
            "capacity" => self.outside.is_some(),
            _ => false,
        }
    }

    /// What a replay that ran through under this ceiling, reserving at most `reserved_peak`,
    /// proves: `would have fit` under a proven ceiling; else what it depends on.
    pub fn fit_words(&self, reserved_peak: u64) -> String {
        if self.proven() {
            "would have fit".into()
        } else if self.source == "capacity" {
            format!(
                "depends: fits only if less than {} lay outside the allocator",
                human_bytes(self.bytes.saturating_sub(reserved_peak))
            )
        } else {
            format!(
                "depends: fits only if the allocator could reserve {}",
                human_bytes(reserved_peak)
            )
        }
    }

    /// A bare figure (`whatif(…, Some(bytes))` from code, tests).
    pub fn given(bytes: u64) -> Ceiling {
        Ceiling {
            bytes,
            source: "given",
            oom_event: None,
            reserved_at_oom: None,
            device_free_at_oom: None,
            capacity: None,
            capacity_source: None,
            outside: None,
            text: format!("{} (given)", human_bytes(bytes)),
        }
    }
}

/// The reserve and driver-free bytes at the first OOM that records both: (position, shown
/// event number, reserved, driver free).
pub(crate) fn oom_figures(trace: &Trace, index: &Index) -> Option<(u64, u64, u64, u64)> {
    if !trace.has_reserved {
        return None;
    }
    trace
        .marks
        .iter()
        .filter(|m| m.kind == MarkKind::Oom)
        .find_map(|m| {
            let free = m.free?.0;
            let reserved = index.reserved_at(trace, m.at).0;
            Some((m.at.0, trace.event_number(m.at), reserved, free))
        })
}

/// The segment (`get_allocation_size` of the rounded request) the file's first OOM with the
/// driver's free bytes needed.
fn segment_needed(trace: &Trace) -> Option<u64> {
    let m = trace
        .marks
        .iter()
        .find(|m| m.kind == MarkKind::Oom && m.free.is_some())?;
    round_size(m.size?.0).and_then(allocation_size)
}

/// The ceiling of `trace`, with `given` the capacity a user passed for this run
/// (`--capacity`; None: the file's own capacity, if any, is used).
///
/// - The file records an OOM with the driver's free bytes: the memory outside the allocator
///   is the file's capacity − reserved − driver free there (when the file knows its
///   capacity), and the ceiling is `given` − that when a capacity is given, else
///   `reserved + device_free`. A given capacity with the file's own unknown is taken as this
///   device's: the ceiling stays `reserved + device_free` (and the outside memory follows).
/// - No such OOM: the capacity (given, else the file's), nothing subtracted (outside unknown).
/// - Neither: None.
pub fn derive(trace: &Trace, index: &Index, given: Option<u64>) -> Option<Ceiling> {
    let file_cap = trace.capacity.map(|c| c.0);
    let file_source = trace
        .capacity_source
        .clone()
        .unwrap_or_else(|| "the file".to_string());
    let figures = oom_figures(trace, index);
    let Some((_, event, reserved, free)) = figures else {
        let (c, src) = match given {
            Some(g) => (g, "--capacity".to_string()),
            None => (file_cap?, file_source),
        };
        return Some(Ceiling {
            bytes: c,
            source: "capacity",
            oom_event: None,
            reserved_at_oom: None,
            device_free_at_oom: None,
            capacity: Some(c),
            text: format!(
                "{} = the capacity from {src}; memory outside the allocator (CUDA context, NCCL, other processes) is unknown and not subtracted, so the ceiling may be too high",
                human_bytes(c)
            ),
            capacity_source: Some(src),
            outside: None,
        });
    };
    let held = reserved.checked_add(free)?;
    let at_oom = format!(
        "reserved {} + driver free {} at the file's OOM (#{event})",
        human_bytes(reserved),
        human_bytes(free)
    );
    let mut c = Ceiling {
        bytes: held,
        source: "oom_figures",
        oom_event: Some(event),
        reserved_at_oom: Some(reserved),
        device_free_at_oom: Some(free),
        capacity: None,
        capacity_source: None,
        outside: None,
        text: format!(
            "{} = {at_oom}: all the allocator could have held there",
            human_bytes(held)
        ),
    };
    // The driver had room for the whole segment the request needed, yet the allocator
    // refused it: its own cap (a memory fraction) was below reserved + that segment.
    if let Some(need) = segment_needed(trace).filter(|&n| free >= n) {
        let cap = reserved.saturating_add(need - 1);
        c.bytes = cap;
        c.source = "oom_cap";
        c.text = format!(
            "{} = reserved {} + the {} segment the request needed − 1 B at the file's OOM (#{event}): the driver had {} free, room for it, so the allocator's own cap (a memory fraction) refused it; the cap lies below this",
            human_bytes(cap),
            human_bytes(reserved),
            human_bytes(need),
            human_bytes(free)
        );
        return Some(c);
    }
    // The outside memory, from the file's own capacity when it has one.
    let file_outside = file_cap.and_then(|fc| fc.checked_sub(held));
    match (given, file_cap, file_outside) {
        (Some(g), Some(fc), Some(o)) if g != fc => {
            c.bytes = g.saturating_sub(o);
            c.source = "capacity";
            c.capacity = Some(g);
            c.capacity_source = Some("--capacity".into());
            c.outside = Some(o);
            c.text = format!(
                "{} = --capacity {} − {} outside the allocator (the file's capacity {} from {file_source} − {at_oom})",
                human_bytes(c.bytes),
                human_bytes(g),
                human_bytes(o),
                human_bytes(fc)
            );
        }
        (given, _, _) => {
            let (cap, src) = match given {
                Some(g) => (Some(g), "--capacity".to_string()),
                None => (file_cap, file_source),
            };
            c.capacity = cap;
            if let Some(cap) = cap {
                match cap.checked_sub(held) {
                    Some(o) => {
                        c.outside = Some(o);
                        c.text.push_str(&format!(
                            " (capacity {} from {src} − {} outside the allocator)",
                            human_bytes(cap),
                            human_bytes(o)
                        ));
                    }
                    None => c.text.push_str(&format!(
                        "; the capacity {} from {src} is below it, so it cannot be this device's and is not used",
                        human_bytes(cap)
                    )),
                }
                c.capacity_source = Some(src);
            }
        }
    }
    Some(c)
}

/// The two ceilings an OOM's fixes are judged under: the most the allocator surely had, and
/// the most it could have had. A setting `fits` only when it replays under `sure`; it `does
/// not fit` when it runs out even under `most`; between the two it `depends` on memory the
/// file does not measure. Where the file records the driver's free bytes at its OOM, both
/// are reserved + driver free there: the file proves the figure, and nothing depends.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Bounds {
    /// The most the run surely had (None: the file records no reserve).
    pub sure: Option<Ceiling>,
    /// The most it could have had (None: nothing bounds it: no capacity, no failed segment).
    pub most: Option<Ceiling>,
}

/// The reserve the run held before its first OOM (its highest), and that OOM's position:
/// what it surely had.
fn held_before_oom(trace: &Trace, index: &Index) -> Option<(Seq, u64)> {
    if !trace.has_reserved {
        return None;
    }
    let m = trace.marks.iter().find(|m| m.kind == MarkKind::Oom)?;
    let at_oom = index.reserved_at(trace, m.at).0;
    // The run's highest reserve, when it was reached before the OOM (a run stops there).
    let before = index
        .reserved_peak()
        .filter(|&(_, p)| p <= m.at)
        .map_or(0, |(b, _)| b.0);
    Some((m.at, at_oom.max(before)))
}

/// The ceilings of `trace`'s first OOM ([`Bounds`]), `given` a capacity passed for this run.
/// None when the file records no OOM.
pub fn bounds(trace: &Trace, index: &Index, given: Option<u64>) -> Option<Bounds> {
    let first = trace.marks.iter().find(|m| m.kind == MarkKind::Oom)?;
    let event = trace.event_number(first.at);
    let one = derive(trace, index, given);
    if let Some(c) = one.as_ref().filter(|c| c.source == "oom_figures") {
        // The file's own figures at the OOM: proven, both ways.
        return Some(Bounds {
            sure: Some(c.clone()),
            most: Some(c.clone()),
        });
    }
    let held = held_before_oom(trace, index).map(|(_, h)| h);
    let sure = held.map(|h| Ceiling {
        bytes: h,
        source: "reserved",
        oom_event: Some(event),
        reserved_at_oom: None,
        device_free_at_oom: first.free.map(|f| f.0),
        capacity: None,
        capacity_source: None,
        outside: None,
        text: format!(
            "{} = the reserve the run held before its OOM (#{event}): the least it surely had",
            human_bytes(h)
        ),
    });
    // The most: the allocator's own cap where the driver had room; else the capacity; else
    // the reserve plus the segment it failed to get (it did not get it: less than that).
    let failed = segment_needed_any(trace);
    let below_failed = held
        .zip(failed)
        .map(|(h, seg)| h.saturating_add(seg).saturating_sub(1));
    let most = match one {
        Some(c) if c.source == "oom_cap" => Some(c),
        Some(c) if c.source == "capacity" => match below_failed.filter(|&b| b < c.bytes) {
            Some(b) => Some(failed_segment_ceiling(b, event)),
            None => Some(c),
        },
        _ => below_failed.map(|b| failed_segment_ceiling(b, event)),
    };
    Some(Bounds { sure, most })
}

fn failed_segment_ceiling(bytes: u64, event: u64) -> Ceiling {
    Ceiling {
        bytes,
        source: "failed_segment",
        oom_event: Some(event),
        reserved_at_oom: None,
        device_free_at_oom: None,
        capacity: None,
        capacity_source: None,
        outside: None,
        text: format!(
            "{} = the reserve + the segment the allocator failed to get at its OOM (#{event}) − 1 B: the most it could have had",
            human_bytes(bytes)
        ),
    }
}

/// The segment the file's first OOM needed (its rounded request's allocation size), with or
/// without the driver's free bytes.
fn segment_needed_any(trace: &Trace) -> Option<u64> {
    let m = trace.marks.iter().find(|m| m.kind == MarkKind::Oom)?;
    round_size(m.size?.0).and_then(allocation_size)
}

/// What a report says when there is no ceiling.
pub const NO_CEILING: &str = "no ceiling: the file records no out-of-memory event with the driver's free bytes and no capacity is known (--capacity SIZE, a device log, a Kineto trace's device properties), so no setting can be said to run out of memory; the table compares reserved peaks only";
