//! What a change bought and what it cost: peak allocated and peak reserved of both runs and
//! their difference, and time per step from each file's own clock — said to be trace time
//! (not synchronized) unless the file records synchronized step times.

use super::work::{phase_of_mark, Phase};
use crate::index::Index;
use crate::trace::{human_bytes, MarkKind, Trace};
use serde::Serialize;

/// Which clock a step time was read from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StepClock {
    /// The trace's timestamps of its step marks: host time when the step was entered, which
    /// leads the device by whatever work is queued (not synchronized).
    Trace,
    /// The file says its step marks were written after `torch.cuda.synchronize()`
    /// (`"step_clock": "synchronized"` in the header, as the recorder writes with
    /// `sync_steps=True`).
    Synchronized,
}

impl StepClock {
    pub fn words(self) -> &'static str {
        match self {
            StepClock::Trace => "trace time, not synchronized",
            StepClock::Synchronized => "synchronized",
        }
    }
}

/// Time per step of one run.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StepTime {
    /// Median time between consecutive step starts, µs.
    pub median_us: f64,
    /// Step durations the median is taken over.
    pub steps_timed: usize,
    /// Whether the first (warm-up) step was left out.
    pub warm_up_excluded: bool,
    pub clock: StepClock,
}

/// One run's side.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Side {
    pub peak_allocated: Option<u64>,
    /// None: the file records no reserved memory (unavailable, not 0).
    pub reserved_peak: Option<u64>,
    /// None: no clock, or fewer than two step starts.
    pub step_time: Option<StepTime>,
}

/// B against A.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cost {
    pub a: Side,
    pub b: Side,
    pub peak_delta: Option<i64>,
    /// B − A as a share of A (−0.107 = −10.7 %).
    pub peak_change: Option<f64>,
    pub reserved_delta: Option<i64>,
    pub reserved_change: Option<f64>,
    pub step_time_change: Option<f64>,
    /// `B saves 1.000 GiB of peak allocated (−10.7 %) and 0 B reserved (0.0 %) at +23.0 %
    /// step time (trace time, not synchronized)`.
    pub words: String,
}

fn step_clock(trace: &Trace) -> StepClock {
    let says = |v: &str| v.trim().trim_matches('"') == "synchronized";
    for (k, v) in &trace.meta {
        if k == "step_clock" && says(v) {
            return StepClock::Synchronized;
        }
        if k == "meta" {
            let parsed: Option<serde_json::Value> = serde_json::from_str(v).ok();
            if parsed
                .as_ref()
                .and_then(|m| m.get("step_clock"))
                .and_then(|x| x.as_str())
                == Some("synchronized")
            {
                return StepClock::Synchronized;
            }
        }
    }
    StepClock::Trace
}

/// Time per step from the step marks' times (else the optimizer-step phases').
pub(crate) fn step_time(trace: &Trace) -> Option<StepTime> {
    if !trace.clock.has_time() {
        return None;
    }
    let mut starts: Vec<i64> = trace
        .marks
        .iter()
        .filter(|m| m.kind == MarkKind::Step)
        .map(|m| m.ts.0)
        .collect();
    if starts.is_empty() {
        starts = trace
            .marks
            .iter()
            .filter(|m| {
                m.kind == MarkKind::Phase
                    && phase_of_mark(trace.strings.text(m.name)) == Some(Phase::Optimizer)
            })
            .map(|m| m.ts.0)
            .collect();
    }
    starts.sort_unstable();
    starts.dedup();
    let mut d: Vec<i64> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    if d.is_empty() {
        return None;
    }
    let warm_up_excluded = d.len() >= 2;
    if warm_up_excluded {
        d.remove(0);
    }
    d.sort_unstable();
    let mid = d.len() / 2;
    let median_ns = if d.len() % 2 == 1 {
        d[mid] as f64
    } else {
        (d[mid - 1] as f64 + d[mid] as f64) / 2.0
    };
    Some(StepTime {
        median_us: median_ns / 1000.0,
        steps_timed: d.len(),
        warm_up_excluded,
        clock: step_clock(trace),
    })
}

fn change(a: Option<u64>, b: Option<u64>) -> (Option<i64>, Option<f64>) {
    match (a, b) {
        (Some(x), Some(y)) => {
            let d = y as i128 - x as i128;
            let d = i64::try_from(d).ok();
            (d, (x > 0).then(|| (y as f64 - x as f64) / x as f64))
        }
        _ => (None, None),
    }
}

fn side(trace: &Trace, index: &Index, peak: Option<u64>) -> Side {
    Side {
        peak_allocated: peak,
        reserved_peak: index.reserved_peak().map(|(b, _)| b.0),
        step_time: step_time(trace),
    }
}

fn pct(x: f64) -> String {
    let s = format!("{:+.1} %", x * 100.0);
    s.replacen('-', "−", 1)
}

/// `saves 1.000 GiB` / `costs 512.0 MiB more` / `changes nothing in`.
fn saving(d: i64, what: &str) -> String {
    let b = human_bytes(d.unsigned_abs());
    match d {
        d if d < 0 => format!("saves {b} of {what}"),
        d if d > 0 => format!("costs {b} more {what}"),
        _ => format!("leaves {what} unchanged"),
    }
}

/// The figures and the sentence.
pub(crate) fn cost(
    ta: &Trace,
    ia: &Index,
    peak_a: Option<u64>,
    tb: &Trace,
    ib: &Index,
    peak_b: Option<u64>,
) -> Cost {
    let (a, b) = (side(ta, ia, peak_a), side(tb, ib, peak_b));
    let (peak_delta, peak_change) = change(a.peak_allocated, b.peak_allocated);
    let (reserved_delta, reserved_change) = change(a.reserved_peak, b.reserved_peak);
    let step_time_change = match (&a.step_time, &b.step_time) {
        (Some(x), Some(y)) if x.median_us > 0.0 => Some(y.median_us / x.median_us - 1.0),
        _ => None,
    };
    let mut parts = Vec::new();
    let shown = |d: i64, c: Option<f64>| match c {
        Some(c) if d != 0 => format!(" ({})", pct(c)),
        _ => String::new(),
    };
    if let Some(d) = peak_delta {
        parts.push(format!(
            "{}{}",
            saving(d, "peak allocated"),
            shown(d, peak_change)
        ));
    } else {
        parts.push("peak allocated: unavailable".into());
    }
    match reserved_delta {
        Some(d) => parts.push(format!(
            "{}{}",
            saving(d, "peak reserved"),
            shown(d, reserved_change)
        )),
        None => parts.push("peak reserved: unavailable (a file records no reserved memory)".into()),
    }
    let time = match (step_time_change, &a.step_time, &b.step_time) {
        (Some(c), Some(x), Some(y)) => {
            let clock = if x.clock == y.clock {
                x.clock.words().to_string()
            } else {
                format!("A {}, B {}", x.clock.words(), y.clock.words())
            };
            format!("at {} step time ({clock})", pct(c))
        }
        _ => "step time: unavailable (a file has no clock or fewer than two steps)".into(),
    };
    let words = format!("B {}; {time}", parts.join(" and "));
    Cost {
        a,
        b,
        peak_delta,
        peak_change,
        reserved_delta,
        reserved_change,
        step_time_change,
        words,
    }
}
