//! The CI gate behind `memtide check`: limits in, a structured verdict out — each limit given,
//! the figure measured, pass or fail, the evidence (peak and event, window, biggest live
//! allocations, survivors, the OOM, the ranks over), the doubtful inputs that stopped the gate
//! or were allowed, and the overall outcome — for one device ([`check_device`]), every device
//! of a file ([`check_file`]) or a job's ranks ([`check_job`]). Renderers (text, Markdown,
//! JSON) sit on top.
//!
//! ```
//! use memtide_core::formats::{JsonlDecoder, JsonlOptions};
//! use memtide_core::gate::{self, Limits, Outcome};
//! use memtide_core::index::Index;
//! use memtide_core::trace::{Bytes, Trace};
//!
//! let text = br#"{"memtide":1,"device":"cuda:0","clock":"us"}
//! {"t":1,"op":"alloc","id":1,"size":4096,"cat":"param","name":"w"}
//! {"t":2,"op":"alloc","id":2,"size":1024,"cat":"activation"}
//! {"t":3,"op":"free","id":2}
//! "#;
//! let mut trace = Trace::new("cuda:0", "example", "jsonl");
//! let mut dec = JsonlDecoder::new(JsonlOptions::default());
//! dec.feed(&mut trace, text).unwrap();
//! dec.finish(&mut trace).unwrap();
//! let index = Index::build(&trace);
//! let device = memtide_core::open::Device::new(trace, index);
//! let limits = Limits { max_peak: Some(Bytes(5000)), ..Limits::default() };
//! let v = gate::check_device(&device, &limits).unwrap();
//! assert_eq!(v.outcome, Outcome::Fail);
//! assert_eq!(v.peak.as_ref().map(|p| p.peak), Some(5120));
//! ```

mod device;
mod evidence;
mod file;
mod job;
#[cfg(test)]
mod tests;

pub use device::{check_device, refuse_doubtful, GrowthGate, Limits, OomGate, PeakGate, Verdict};
pub use evidence::{
    biggest_live, oom_evidence, peak_evidence, LiveItem, OomEvidence, PeakEvidence, SurvivorItem,
    WindowEvidence,
};
pub use file::{
    check_file, DevicesVerdict, FileVerdict, SkipReason, SkippedDevice, UncheckedDevice,
};
pub use job::{
    check_job, ImbalanceGate, JobGrowthGate, JobLimits, JobOomGate, JobPeakGate, JobVerdict,
    RankGrowth, RankOoms, RankPeak, RankRef, SkippedFile, Unchecked, UnreadableFile,
};

/// How a gate ended: the exit code `memtide check` gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Every limit held (exit 0).
    Pass,
    /// A limit was exceeded, or the run ran out of memory under a peak limit (exit 1).
    Fail,
    /// Nothing failed, but part of the input could not be gated (a job's rank without a
    /// peak, doubted or unreadable; a device of a file whose figures were doubted): a pass
    /// needs all of it (exit 2).
    Incomplete,
}

impl Outcome {
    /// 0 pass, 1 fail, 2 incomplete.
    pub fn exit_code(self) -> u8 {
        match self {
            Outcome::Pass => 0,
            Outcome::Fail => 1,
            Outcome::Incomplete => 2,
        }
    }
}

/// Why a gate could not be run at all (the CLI's exit 2). The messages about one file leave
/// its name out ([`GateError::about_file`] says which): the caller knows it.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum GateError {
    #[error("the trace has no events")]
    NoEvents,
    #[error(
        "cannot vouch for the figures of {device}: the reader reported that they may be wrong: {} (pass --allow-warnings to check it anyway)",
        reasons.join("; ")
    )]
    Doubtful {
        device: String,
        reasons: Vec<String>,
    },
    #[error("cannot vouch for the figures of {device}: {why} (pass --allow-warnings to check it anyway)")]
    DoubtfulModel { device: String, why: String },
    #[error(
        "nothing to check on {device}: none of its {events} events holds any memory, so every limit would pass on a peak of 0 B{}",
        first_warning.as_ref().map_or(String::new(), |w| format!(" (the reader: {w})"))
    )]
    NothingToGate {
        device: String,
        events: usize,
        first_warning: Option<String>,
    },
    #[error("--max-growth needs step marks: at least one step after the warm-up step (the trace has {marks} step marks)")]
    NoSteps { marks: usize },
    #[error(transparent)]
    Window(#[from] crate::analysis::window_spec::WindowError),
    #[error("--max-peak checked nothing: no rank has a peak ({})", first_names(without.iter().map(ToString::to_string).collect(), 10))]
    NoRankPeak { without: Vec<RankRef> },
    #[error("--max-imbalance needs peaks: no checked rank has one")]
    NoRankPeaks,
    #[error("--max-growth needs step marks: no checked rank has a step after the warm-up step")]
    NoRankSteps,
    #[error("no rank can be checked: {}", unchecked.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    NoRankCheckable { unchecked: Vec<Unchecked> },
}

impl GateError {
    /// Whether the message is about the one file checked (the CLI puts its name first).
    pub fn about_file(&self) -> bool {
        matches!(
            self,
            GateError::NoEvents
                | GateError::Doubtful { .. }
                | GateError::DoubtfulModel { .. }
                | GateError::NothingToGate { .. }
        )
    }
}

/// Up to `n` names, then `and K more`, comma-separated.
pub fn first_names(names: Vec<String>, n: usize) -> String {
    let k = names.len();
    let mut v: Vec<String> = names.into_iter().take(n).collect();
    if k > n {
        v.push(format!("and {} more", k - n));
    }
    v.join(", ")
}

/// `s` unless `n` is 1.
pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
