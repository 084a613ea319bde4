//! A file's gate: every device of the file that has events, each judged by the device gate
//! ([`super::check_device`]). A one-process multi-GPU run (`device_map="auto"`, pipeline
//! stages, `DataParallel`) snapshots every device it touched, and the device that ran out of
//! memory need not be the first: a pass needs every device checked.

use super::device::{check_device, Limits, Verdict};
use super::{GateError, Outcome};
use crate::open::Device;
use serde::Serialize;

/// A device that has events but could not be gated (its figures doubted, no steps for
/// `max_growth`, a window it does not have): it keeps a pass from being a pass.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UncheckedDevice {
    pub device: String,
    /// Why, as `check` says it for a file of one device.
    pub error: String,
}

/// Why a device was left out of the gate without blocking it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SkipReason {
    /// The file records no event on it.
    NoEvents,
    /// It has events, but none holds any memory, while another device of the file does.
    HoldsNoMemory,
}

/// A device left out of the gate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SkippedDevice {
    pub device: String,
    pub reason: SkipReason,
}

/// The verdict on a file of several devices with events.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DevicesVerdict {
    /// `fail` when a device fails; else `incomplete` when a device could not be gated; else
    /// `pass`.
    pub outcome: Outcome,
    pub limits: Limits,
    /// Each gated device's verdict, in file order.
    pub devices: Vec<Verdict>,
    /// Devices with events that could not be gated.
    pub unchecked: Vec<UncheckedDevice>,
    /// Devices left out: no events, or nothing held while another device holds memory.
    pub skipped: Vec<SkippedDevice>,
}

/// What gating a file found: one device's verdict (the file has one device with events) or
/// the verdict on several.
#[derive(Clone, Debug, PartialEq)]
pub enum FileVerdict {
    One(Box<Verdict>),
    Several(DevicesVerdict),
}

impl FileVerdict {
    pub fn outcome(&self) -> Outcome {
        match self {
            FileVerdict::One(v) => v.outcome,
            FileVerdict::Several(v) => v.outcome,
        }
    }
}

/// Gates every device of `devices` that has events. A file with one such device gets that
/// device's verdict (or its error, as [`check_device`] gives it); with several, each is gated
/// and an error on one makes the file's outcome [`Outcome::Incomplete`] unless another fails;
/// only when no device could be gated at all is the first error returned.
pub fn check_file(devices: &[Device], limits: &Limits) -> Result<FileVerdict, GateError> {
    let busy: Vec<&Device> = devices.iter().filter(|d| !d.index.is_empty()).collect();
    let gate = |d: &Device| check_device(d, limits);
    match busy.as_slice() {
        [] => return Err(GateError::NoEvents),
        [one] => return gate(one).map(|v| FileVerdict::One(Box::new(v))),
        _ => {}
    }
    let mut skipped: Vec<SkippedDevice> = devices
        .iter()
        .filter(|d| d.index.is_empty())
        .map(|d| SkippedDevice {
            device: d.name().to_string(),
            reason: SkipReason::NoEvents,
        })
        .collect();
    let mut verdicts = Vec::new();
    let mut unchecked = Vec::new();
    let mut first_error = None;
    let mut empty = None;
    for d in busy {
        match gate(d) {
            Ok(v) => verdicts.push(v),
            Err(e @ GateError::NothingToGate { .. }) => {
                skipped.push(SkippedDevice {
                    device: d.name().to_string(),
                    reason: SkipReason::HoldsNoMemory,
                });
                empty.get_or_insert(e);
            }
            Err(e) => {
                unchecked.push(UncheckedDevice {
                    device: d.name().to_string(),
                    error: e.to_string(),
                });
                first_error.get_or_insert(e);
            }
        }
    }
    if verdicts.is_empty() {
        // Nothing was gated: the first reason, as for a file of one device.
        return Err(first_error.or(empty).unwrap_or(GateError::NoEvents));
    }
    let outcome = if verdicts.iter().any(|v| v.outcome == Outcome::Fail) {
        Outcome::Fail
    } else if unchecked.is_empty() {
        Outcome::Pass
    } else {
        Outcome::Incomplete
    };
    Ok(FileVerdict::Several(DevicesVerdict {
        outcome,
        limits: limits.clone(),
        devices: verdicts,
        unchecked,
        skipped,
    }))
}
