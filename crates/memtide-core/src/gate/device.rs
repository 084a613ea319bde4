//! One device's gate: the doubtful inputs that stop it, then the OOM, `--max-growth` and
//! `--max-peak` limits, each with its figure, its evidence and pass or fail.

use super::evidence::{
    biggest_live, oom_evidence, peak_evidence, survivors, LiveItem, OomEvidence, PeakEvidence,
    SurvivorItem, WindowEvidence,
};
use super::{GateError, Outcome};
use crate::analysis::window_spec::WindowSpec;
use crate::index::Index;
use crate::open::Device;
use crate::trace::{Bytes, Seq, Trace};
use serde::Serialize;

/// The limits of one device's gate.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Limits {
    /// Fail when the peak exceeds this (and on any OOM).
    pub max_peak: Option<Bytes>,
    /// Fail when the step baseline grows by more than this fraction after warm-up (0.01: 1%).
    pub max_growth: Option<f64>,
    /// Measure `max_peak` in this window (`steady`, `step:N`, `marks:A..B`, `reset_peak`),
    /// as written: it is read when the peak gate runs, after the input checks.
    pub window: Option<String>,
    /// Gate on figures the reader warned may be wrong.
    pub allow_warnings: bool,
}

/// The OOM part of a verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct OomGate {
    /// True when it fails the gate (under `max_peak`); false: a note only (the growth gate
    /// alone judges a run that stopped mid-step on its complete steps).
    pub gated: bool,
    #[serde(flatten)]
    pub evidence: OomEvidence,
}

/// The `max_growth` part of a verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GrowthGate {
    /// The limit, a fraction.
    pub limit: f64,
    /// The step baseline's growth after warm-up, a fraction of the first steady baseline.
    pub growth: f64,
    /// The same in bytes (negative: it shrank).
    pub growth_bytes: i64,
    pub passed: bool,
    /// The biggest groups of allocations that survive every step (at most three).
    pub survivors: Vec<SurvivorItem>,
}

/// The `max_peak` part of a verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PeakGate {
    pub limit: u64,
    /// The peak measured (in the window, when one was given).
    pub peak: u64,
    pub passed: bool,
    #[serde(rename = "at")]
    pub evidence: PeakEvidence,
    pub window: Option<WindowEvidence>,
    /// On a failure, the biggest storages live at the peak (at most three); None when the
    /// file records no addresses, empty on a pass.
    pub biggest_live: Option<Vec<LiveItem>>,
}

/// One device's verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Verdict {
    pub device: String,
    pub outcome: Outcome,
    pub limits: Limits,
    pub oom: Option<OomGate>,
    pub growth: Option<GrowthGate>,
    pub peak: Option<PeakGate>,
    /// The reader's warnings that the figures may be wrong, gated on anyway
    /// (`allow_warnings`).
    pub allowed_warnings: Vec<String>,
    /// The inferred persistent split fits no usual model, gated on anyway (`allow_warnings`).
    pub allowed_model_doubt: Option<String>,
}

/// Refuses a trace whose reader said its figures may be wrong (unless `allow`): a gate must
/// never pass figures it cannot vouch for. Informational warnings do not count.
pub fn refuse_doubtful(trace: &Trace, allow: bool) -> Result<(), GateError> {
    let reasons: Vec<String> = trace.doubtful_warnings().map(String::from).collect();
    if allow || reasons.is_empty() {
        return Ok(());
    }
    Err(GateError::Doubtful {
        device: trace.device.clone(),
        reasons,
    })
}

/// Why the inferred persistent split at the peak fits no usual model (the bands are then
/// likely misread), or None.
fn model_doubt(trace: &Trace, index: &Index) -> Option<String> {
    if !trace.identities_known() {
        return None;
    }
    let peak = crate::analysis::global_peak(trace, index)?;
    let ids = peak.live(trace, index);
    crate::analysis::persistent::persistent(trace, &ids)
        .as_ref()
        .and_then(crate::analysis::persistent::doubt)
}

/// Gates one device: refuses what it cannot vouch for (no events, doubtful figures, a model
/// that fits nothing, nothing holding memory), then judges the OOM, growth and peak limits.
/// Its evidence names frames under the device's rules ([`Device::frames`]).
pub fn check_device(device: &Device, limits: &Limits) -> Result<Verdict, GateError> {
    let (trace, index) = (&device.trace, &device.index);
    if index.is_empty() {
        return Err(GateError::NoEvents);
    }
    refuse_doubtful(trace, limits.allow_warnings)?;
    if let (Some(why), false) = (
        crate::analysis::peak::reserve_doubt(trace, index),
        limits.allow_warnings,
    ) {
        return Err(GateError::Doubtful {
            device: trace.device.clone(),
            reasons: vec![why],
        });
    }
    let doubt = model_doubt(trace, index);
    if let (Some(why), false) = (&doubt, limits.allow_warnings) {
        return Err(GateError::DoubtfulModel {
            device: trace.device.clone(),
            why: why.clone(),
        });
    }
    if !index.totals().any(|b| b > 0) {
        return Err(GateError::NothingToGate {
            device: trace.device.clone(),
            events: index.len(),
            first_warning: trace.warnings.first().map(ToString::to_string),
        });
    }
    let trend = crate::analysis::trend::trend(trace, index);
    // An OOM fails the peak gate (the run asked for more than the device held); with only
    // the growth gate it is said, not counted.
    let oom = oom_evidence(device).map(|evidence| OomGate {
        gated: limits.max_peak.is_some(),
        evidence,
    });
    let growth = match limits.max_growth {
        None => None,
        Some(limit) => {
            let (Some(growth), Some(d)) = (trend.growth, trend.growth_bytes) else {
                return Err(GateError::NoSteps {
                    marks: trend.steps.len(),
                });
            };
            Some(GrowthGate {
                limit,
                growth,
                growth_bytes: i64::try_from(d).unwrap_or(if d < 0 { i64::MIN } else { i64::MAX }),
                passed: growth <= limit,
                survivors: survivors(trace, &trend, 3, &device.frames),
            })
        }
    };
    let peak = match limits.max_peak {
        None => None,
        Some(limit) => Some(peak_gate(device, limit, limits.window.as_deref())?),
    };
    let failed = oom.as_ref().is_some_and(|o| o.gated)
        || growth.as_ref().is_some_and(|g| !g.passed)
        || peak.as_ref().is_some_and(|p| !p.passed);
    Ok(Verdict {
        device: trace.device.clone(),
        outcome: if failed { Outcome::Fail } else { Outcome::Pass },
        limits: limits.clone(),
        oom,
        growth,
        peak,
        allowed_warnings: if limits.allow_warnings {
            trace.doubtful_warnings().map(String::from).collect()
        } else {
            Vec::new()
        },
        allowed_model_doubt: doubt,
    })
}

/// The peak (in `window`, else over the whole trace) against `limit`.
fn peak_gate(device: &Device, limit: Bytes, window: Option<&str>) -> Result<PeakGate, GateError> {
    let (trace, index) = (&device.trace, &device.index);
    let (lo, hi, window) = match window {
        Some(w) => {
            let r = WindowSpec::parse(w)?.resolve(trace, index)?;
            let ev = WindowEvidence {
                spec: r.spec,
                label: r.label,
            };
            (r.lo, r.hi, Some(ev))
        }
        None => (Seq(0), Seq(index.len() as u64 - 1), None),
    };
    let Some(peak) = crate::analysis::window_peak(trace, index, lo, hi) else {
        return Err(GateError::NoEvents);
    };
    let passed = peak.bytes <= limit;
    Ok(PeakGate {
        limit: limit.0,
        peak: peak.bytes.0,
        passed,
        evidence: peak_evidence(trace, &peak),
        window,
        biggest_live: if passed {
            Some(Vec::new())
        } else {
            biggest_live(trace, index, &peak, 3, &device.frames)
        },
    })
}
