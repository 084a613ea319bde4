//! A device's capacity checked against what its file shows: a device holds at least what its
//! allocator reserved, and at an OOM what it reserved plus what the driver still had free. A
//! capacity below that (`--capacity 16MiB` for a 16 GiB card, a message's `total capacity
//! of 1 bytes`, a capacity of 0) is impossible: `--capacity` is refused, any other source's
//! figure is dropped with a note, so no OOM verdict is ever drawn from it.

use super::{Device, OpenError};
use crate::formats::oom_message::OomMessage;
use crate::trace::{human_bytes, MarkKind};

/// The least memory a device must have, and what in the file shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CapacityFloor {
    pub bytes: u64,
    /// `the reserved peak at event #12`, `reserved 14.00 GiB + driver free 1.500 GiB at the
    /// OOM (event #40)`, `the message's own reserved … + free …`.
    pub shown_by: String,
}

impl CapacityFloor {
    fn higher(self, other: Option<CapacityFloor>) -> CapacityFloor {
        match other {
            Some(o) if o.bytes > self.bytes => o,
            _ => self,
        }
    }
}

/// The least memory `d`'s device must have, as its file shows it: its reserved peak, and at
/// each OOM that records the driver's free bytes, the reserved bytes there plus those. None:
/// the file shows neither (no reserved memory, no such OOM).
pub fn capacity_floor(d: &Device) -> Option<CapacityFloor> {
    let (trace, index) = (&d.trace, &d.index);
    let mut floor: Option<CapacityFloor> = None;
    let mut take = |bytes: u64, shown_by: String| {
        if bytes > 0 {
            let new = CapacityFloor { bytes, shown_by };
            floor = Some(match floor.take() {
                Some(f) => f.higher(Some(new)),
                None => new,
            });
        }
    };
    if trace.has_reserved {
        if let Some((b, at)) = index.reserved_peak_at() {
            let when = match at {
                Some(at) => format!("at event #{}", trace.event_number(at)),
                None => "at start".to_string(),
            };
            take(b.0, format!("the reserved peak {when}"));
        }
    }
    for m in trace.marks.iter().filter(|m| m.kind == MarkKind::Oom) {
        let Some(free) = m.free.map(|f| f.0) else {
            continue;
        };
        let n = trace.event_number(m.at);
        if trace.has_reserved {
            let reserved = index.reserved_at(trace, m.at).0;
            take(
                reserved.saturating_add(free),
                format!(
                    "reserved {} + driver free {} at the OOM (event #{n})",
                    human_bytes(reserved),
                    human_bytes(free)
                ),
            );
        } else {
            take(
                free,
                format!("driver free {} at the OOM (event #{n})", human_bytes(free)),
            );
        }
    }
    floor
}

/// The least capacity PyTorch's message itself allows: its reserved bytes plus its free
/// bytes, less what their printed precision leaves open.
fn message_floor(m: &OomMessage) -> CapacityFloor {
    let (reserved, reserved_precision) = m.reserved_bytes();
    CapacityFloor {
        bytes: reserved
            .saturating_add(m.free.bytes)
            .saturating_sub(reserved_precision.saturating_add(m.free.precision)),
        shown_by: format!(
            "the message's own reserved {} + free {}",
            human_bytes(reserved),
            human_bytes(m.free.bytes)
        ),
    }
}

/// Why `capacity` is impossible for `d`'s device: below [`capacity_floor`] (and below the
/// floor of PyTorch's `message`, within its printed precision, where the capacity is the
/// message's), or 0. None: possible.
fn impossible(d: &Device, capacity: u64, message: Option<&OomMessage>) -> Option<String> {
    let slack = message.map_or(0, |m| m.capacity.precision);
    let mut floor = capacity_floor(d);
    if let Some(m) = message {
        let own = message_floor(m);
        floor = Some(match floor {
            Some(f) => f.higher(Some(own)),
            None => own,
        });
    }
    match floor.filter(|f| capacity.saturating_add(slack) < f.bytes) {
        Some(f) => Some(format!(
            "below the {} that {} shows it held ({})",
            human_bytes(f.bytes),
            d.name(),
            f.shown_by
        )),
        None if capacity == 0 => Some("a device holds more than 0 B".to_string()),
        None => None,
    }
}

/// `--capacity` checked against what `d`'s file shows ([`capacity_floor`]): an error where
/// it is below, a device holding at least that.
pub fn check_capacity(d: &Device, capacity: u64) -> Result<(), OpenError> {
    match impossible(d, capacity, None) {
        Some(why) => Err(OpenError::Capacity {
            given: human_bytes(capacity),
            why,
        }),
        None => Ok(()),
    }
}

/// Checks device `d`'s capacity: `--capacity` (`given`) below what its file shows is an
/// error ([`check_capacity`]); a capacity from PyTorch's message (`message`, when it is this
/// device's) or from the file is dropped, returning the note that says so.
pub(super) fn settle(
    d: &mut Device,
    given: bool,
    message: Option<&OomMessage>,
) -> Result<Option<String>, OpenError> {
    let Some(capacity) = d.trace.capacity.map(|c| c.0) else {
        return Ok(None);
    };
    if given {
        return check_capacity(d, capacity).map(|()| None);
    }
    let Some(why) = impossible(d, capacity, message) else {
        return Ok(None);
    };
    let source = d
        .trace
        .capacity_source
        .clone()
        .unwrap_or_else(|| "the file".to_string());
    d.drop_capacity();
    Ok(Some(format!(
        "the capacity {} from {source} is impossible, {why}: ignored, no capacity is used (a device holds at least what its allocator reserved and the driver had free)",
        human_bytes(capacity)
    )))
}
