//! A distributed job's gate: every readable rank against `max_peak` (and its OOMs) and
//! `max_growth`, the job against `max_imbalance`; ranks that could not be gated (doubted,
//! without a peak or steps, unreadable) keep a pass from being a pass.

use super::{first_names, plural, GateError, Outcome};
use crate::ranks::{worst_of, PeakOf, RankRow, Ranks, Spread};
use crate::trace::Bytes;
use serde::Serialize;
use std::fmt;

/// The limits of a job's gate.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct JobLimits {
    /// Fail when a rank's peak exceeds this (and on any rank's OOM).
    pub max_peak: Option<Bytes>,
    /// Fail when the highest rank peak exceeds the lowest by more than this fraction.
    pub max_imbalance: Option<f64>,
    /// Fail when a rank's step baseline grows by more than this fraction after warm-up.
    pub max_growth: Option<f64>,
    /// Gate on ranks whose reader warned that the figures may be wrong.
    pub allow_warnings: bool,
}

/// A rank: its number and its file's name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RankRef {
    pub rank: u64,
    pub file: String,
}

impl RankRef {
    fn of(r: &RankRow) -> RankRef {
        RankRef {
            rank: r.rank,
            file: r.file_name(),
        }
    }
}

impl fmt::Display for RankRef {
    /// `rank 2 (rank2.pickle)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "rank {} ({})", self.rank, self.file)
    }
}

/// A rank that ran out of memory, and how many times.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankOoms {
    #[serde(flatten)]
    pub rank: RankRef,
    pub ooms: usize,
}

/// A rank's peak: its highest device's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankPeak {
    #[serde(flatten)]
    pub rank: RankRef,
    pub peak: u64,
    /// The device of the peak, when the rank's file holds several devices with events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
}

/// A rank's step baseline growth (a fraction): its highest device's.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankGrowth {
    #[serde(flatten)]
    pub rank: RankRef,
    pub growth: f64,
    /// The device of that growth, when the rank's file holds several devices with events.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
}

/// What the gates judge of one rank: every device of its file with events folded (the
/// highest peak and growth with their devices, the OOMs and doubts of all).
struct Judged<'a> {
    row: &'a RankRow,
    /// Whether the file holds several devices with events (the figures then name theirs).
    several: bool,
    peak: Option<(u64, String)>,
    growth: Option<(f64, String)>,
    ooms: usize,
    doubtful: bool,
}

impl<'a> Judged<'a> {
    fn of(row: &'a RankRow) -> Judged<'a> {
        let devices = row.gated_devices();
        let peak = devices
            .iter()
            .filter_map(|d| d.peak.map(|p| (p, d.device.clone())))
            .max_by_key(|(p, _)| *p);
        let growth = devices
            .iter()
            .filter_map(|d| d.growth.map(|g| (g, d.device.clone())))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        Judged {
            row,
            several: devices.len() > 1,
            peak,
            growth,
            ooms: devices.iter().map(|d| d.ooms).sum(),
            doubtful: devices.iter().any(|d| !d.doubtful.is_empty()),
        }
    }

    fn rank(&self) -> RankRef {
        RankRef::of(self.row)
    }

    fn device(&self, name: &str) -> Option<String> {
        self.several.then(|| name.to_string())
    }

    /// The rank's peak with its claim to be the worst.
    fn peak_of(&self) -> Option<(PeakOf, RankPeak)> {
        self.peak.as_ref().map(|(p, d)| {
            (
                PeakOf {
                    peak: *p,
                    rank: self.row.rank,
                    order: self.row.order,
                },
                RankPeak {
                    rank: self.rank(),
                    peak: *p,
                    device: self.device(d),
                },
            )
        })
    }
}

/// The ranks that ran out of memory.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobOomGate {
    /// True when they fail the gate (under `max_peak`); false: a note only.
    pub gated: bool,
    pub ranks: Vec<RankOoms>,
}

/// Every rank's peak against `max_peak`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobPeakGate {
    pub limit: u64,
    pub passed: bool,
    /// The ranks over the limit, highest first.
    pub over: Vec<RankPeak>,
    /// The highest peak of the ranks checked.
    pub highest: Option<RankPeak>,
}

/// The spread of the rank peaks against `max_imbalance`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ImbalanceGate {
    pub limit: f64,
    /// max/min − 1; None when the lowest peak is 0 (an infinite imbalance, a failure).
    pub imbalance: Option<f64>,
    /// max/min; None when the lowest peak is 0.
    pub ratio: Option<f64>,
    pub passed: bool,
    pub max_rank: u64,
    pub max_peak: u64,
    pub min_rank: u64,
    pub min_peak: u64,
}

/// Every rank's step baseline growth against `max_growth`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobGrowthGate {
    pub limit: f64,
    pub passed: bool,
    /// The ranks over the limit, in rank order.
    pub over: Vec<RankGrowth>,
    /// Ranks with a growth figure (steps after the warm-up).
    pub checked: usize,
}

/// A file that could not be read.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct UnreadableFile {
    pub file: String,
    pub error: String,
}

/// A file of the job left out without blocking the gate: certainly not a trace (no format
/// memtide reads, or a whole file of one whose content is no trace), a subdirectory, or a
/// name `--exclude` matched.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SkippedFile {
    pub file: String,
    pub reason: String,
}

/// Part of a job that was not gated.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Unchecked {
    /// Ranks without a peak, not checked for `max_peak`.
    NoPeak { ranks: Vec<RankRef> },
    /// Ranks without steps after warm-up, not checked for `max_growth`.
    NoSteps { count: usize },
    /// Ranks whose reader warned that the figures may be wrong.
    Doubted { ranks: Vec<RankRef> },
    /// Files that could not be read.
    Unreadable { files: Vec<UnreadableFile> },
}

impl fmt::Display for Unchecked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |v: &[RankRef]| first_names(v.iter().map(ToString::to_string).collect(), 10);
        match self {
            Unchecked::NoPeak { ranks } => write!(
                f,
                "{} rank{} without a peak not checked for --max-peak: {}",
                ranks.len(),
                plural(ranks.len()),
                names(ranks)
            ),
            Unchecked::NoSteps { count } => write!(
                f,
                "{count} rank{} without steps after warm-up not checked for growth",
                plural(*count)
            ),
            Unchecked::Doubted { ranks } => write!(
                f,
                "not checked, the reader warned that the figures may be wrong (--allow-warnings checks them): {}",
                names(ranks)
            ),
            Unchecked::Unreadable { files } => write!(
                f,
                "{} unreadable file{} not checked: {}",
                files.len(),
                plural(files.len()),
                first_names(
                    files.iter().map(|e| format!("{}: {}", e.file, e.error)).collect(),
                    10
                )
            ),
        }
    }
}

/// A job's verdict.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobVerdict {
    pub outcome: Outcome,
    pub limits: JobLimits,
    /// Ranks read, and of those gated.
    pub ranks: usize,
    pub ranks_checked: usize,
    pub oom: Option<JobOomGate>,
    pub peak: Option<JobPeakGate>,
    pub imbalance: Option<ImbalanceGate>,
    pub growth: Option<JobGrowthGate>,
    /// What was not gated, in the order the gates found it.
    pub unchecked: Vec<Unchecked>,
    /// Files left out that are not ranks (they do not block a pass), in the order listed.
    pub skipped: Vec<SkippedFile>,
}

/// Gates a job: fails (exit 1) when a rank is over a limit or ran out of memory under
/// `max_peak`, or the peaks differ more than `max_imbalance`; a pass with anything unchecked
/// is [`Outcome::Incomplete`].
pub fn check_job(r: &Ranks, limits: &JobLimits) -> Result<JobVerdict, GateError> {
    let mut unchecked = Vec::new();
    let judged: Vec<Judged> = r.rows.iter().map(Judged::of).collect();
    let (gated, doubted): (Vec<&Judged>, Vec<&Judged>) = judged
        .iter()
        .partition(|x| limits.allow_warnings || !x.doubtful);
    let oom_ranks: Vec<RankOoms> = gated
        .iter()
        .filter(|x| x.ooms > 0)
        .map(|x| RankOoms {
            rank: x.rank(),
            ooms: x.ooms,
        })
        .collect();
    let oom = (!oom_ranks.is_empty()).then(|| JobOomGate {
        gated: limits.max_peak.is_some(),
        ranks: oom_ranks,
    });
    let peak = match limits.max_peak {
        None => None,
        Some(limit) => {
            let without: Vec<RankRef> = gated
                .iter()
                .filter(|x| x.peak.is_none())
                .map(|x| x.rank())
                .collect();
            if without.len() == gated.len() {
                return Err(GateError::NoRankPeak { without });
            }
            if !without.is_empty() {
                unchecked.push(Unchecked::NoPeak { ranks: without });
            }
            // Ranks named in the order every answer names them (ties: the lowest rank).
            let mut over: Vec<(PeakOf, RankPeak)> = gated
                .iter()
                .filter_map(|x| x.peak_of())
                .filter(|(_, p)| p.peak > limit.0)
                .collect();
            over.sort_by(|a, b| a.0.worst_first(&b.0));
            let highest = worst_of(gated.iter().filter_map(|x| x.peak_of()), |(k, _)| *k);
            Some(JobPeakGate {
                limit: limit.0,
                passed: over.is_empty(),
                over: over.into_iter().map(|(_, p)| p).collect(),
                highest: highest.map(|(_, p)| p),
            })
        }
    };
    let imbalance = match limits.max_imbalance {
        None => None,
        Some(limit) => {
            let Some(s) = Spread::of(gated.iter().map(|x| x.row)) else {
                return Err(GateError::NoRankPeaks);
            };
            let imb = s.imbalance();
            Some(ImbalanceGate {
                limit,
                imbalance: imb,
                ratio: s.ratio,
                passed: !imb.is_none_or(|i| i > limit),
                max_rank: s.worst_rank,
                max_peak: s.max,
                min_rank: s.best_rank,
                min_peak: s.min,
            })
        }
    };
    let growth = match limits.max_growth {
        None => None,
        Some(limit) => {
            let with: Vec<&&Judged> = gated.iter().filter(|x| x.growth.is_some()).collect();
            if with.is_empty() {
                return Err(GateError::NoRankSteps);
            }
            let over: Vec<RankGrowth> = with
                .iter()
                .filter_map(|x| {
                    let (g, d) = x.growth.as_ref().filter(|(v, _)| *v > limit)?;
                    Some(RankGrowth {
                        rank: x.rank(),
                        growth: *g,
                        device: x.device(d),
                    })
                })
                .collect();
            let without = gated.len() - with.len();
            if without > 0 {
                unchecked.push(Unchecked::NoSteps { count: without });
            }
            Some(JobGrowthGate {
                limit,
                passed: over.is_empty(),
                over,
                checked: with.len(),
            })
        }
    };
    if !doubted.is_empty() {
        unchecked.push(Unchecked::Doubted {
            ranks: doubted.iter().map(|x| x.rank()).collect(),
        });
    }
    if !r.errors.is_empty() {
        unchecked.push(Unchecked::Unreadable {
            files: r
                .errors
                .iter()
                .map(|e| UnreadableFile {
                    file: file_name(&e.path),
                    error: e.error.clone(),
                })
                .collect(),
        });
    }
    if gated.is_empty() {
        return Err(GateError::NoRankCheckable { unchecked });
    }
    let failed = oom.as_ref().is_some_and(|o| o.gated)
        || peak.as_ref().is_some_and(|p| !p.passed)
        || imbalance.as_ref().is_some_and(|i| !i.passed)
        || growth.as_ref().is_some_and(|g| !g.passed);
    let outcome = match (failed, unchecked.is_empty()) {
        (true, _) => Outcome::Fail,
        (false, true) => Outcome::Pass,
        (false, false) => Outcome::Incomplete,
    };
    Ok(JobVerdict {
        outcome,
        limits: limits.clone(),
        ranks: r.rows.len(),
        ranks_checked: gated.len(),
        oom,
        peak,
        imbalance,
        growth,
        unchecked,
        skipped: r
            .skipped
            .iter()
            .map(|s| SkippedFile {
                file: file_name(&s.path),
                reason: s.reason.clone(),
            })
            .collect(),
    })
}

/// A path's last component, as the verdict names files.
fn file_name(p: &std::path::Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |f| f.to_string_lossy().into_owned(),
    )
}
