//! The fix list of an OOM, each checked by replay: the allocator settings a user would try
//! (never the one in use), replayed through the what-if simulator from the start of the
//! history under the ceiling the run surely had and the most it could have had
//! ([`super::sim::ceiling::bounds`]), each `fits` (proven under the sure one), `does not
//! fit` (even under the most) or `depends` (on memory the file does not measure), with the
//! headroom it leaves.

use super::replay::History;
use super::sim::ceiling::{self, Ceiling};
use super::sim::report::{replays, RunsOn};
use super::sim::{input_for, AllocConf};
use crate::index::Index;
use crate::trace::{human_bytes, Trace};
use serde::Serialize;

/// For live tensors: what reducing them would save, an estimate (no replay: the program
/// would change).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Saving {
    /// The change (`activation checkpointing of model.py:31 forward`, `a microbatch halved`).
    pub change: String,
    /// Bytes live at the OOM that it concerns.
    pub live_bytes: u64,
    /// Bytes it would save at most there (an estimate).
    pub saving: u64,
    /// What the request lacked: request − free reserve − driver free (null when unknown).
    pub shortfall: Option<u64>,
    /// Whether that covers what the request lacked (request − free reserve − driver free);
    /// null when that is unknown.
    pub covers_shortfall: Option<bool>,
}

impl Saving {
    /// One line: `estimate: a microbatch halved (…): saves up to 3.375 GiB of 6.750 GiB live;
    /// would cover the 256.0 MiB the request lacked`.
    pub fn text(&self) -> String {
        let lacked = self.shortfall.map_or(String::new(), human_bytes);
        let covers = match self.covers_shortfall {
            Some(true) => format!("; would cover the {lacked} the request lacked"),
            Some(false) => format!("; would not cover the {lacked} the request lacked alone"),
            None => String::new(),
        };
        format!(
            "estimate: {}: saves up to {} of {} live{covers}",
            self.change,
            human_bytes(self.saving),
            human_bytes(self.live_bytes)
        )
    }
}

/// The settings tried, as `PYTORCH_CUDA_ALLOC_CONF` strings.
pub(crate) const SETTINGS: [&str; 4] = [
    "expandable_segments:True",
    "max_split_size_mb:128",
    "garbage_collection_threshold:0.6",
    "roundup_power2_divisions:4",
];

/// What a replay proves of a setting ([`Fix::result`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FixResult {
    /// It replays under the ceiling the run surely had: proven.
    Fits,
    /// It runs out of memory even under the most the run could have had: proven.
    DoesNotFit,
    /// Between the two: it fits only if enough memory was free that the file does not
    /// measure (outside the allocator).
    Depends,
}

impl FixResult {
    pub fn name(self) -> &'static str {
        match self {
            FixResult::Fits => "fits",
            FixResult::DoesNotFit => "does_not_fit",
            FixResult::Depends => "depends",
        }
    }
}

/// The ceiling a fix's result was decided under.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FixCeiling {
    pub bytes: u64,
    /// `oom_figures` (reserved + driver free at the file's OOM), `reserved` (the reserve the
    /// run held), `capacity`, `oom_cap` (the allocator's own cap), `failed_segment` (the
    /// reserve + the segment it failed to get, less 1 B).
    pub source: &'static str,
}

impl FixCeiling {
    fn of(c: &Ceiling) -> FixCeiling {
        FixCeiling {
            bytes: c.bytes,
            source: c.source,
        }
    }
}

/// One setting replayed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Fix {
    /// The setting (`expandable_segments:True`).
    pub setting: String,
    /// What the replays prove (None: not judged: no ceiling known, or the file's own
    /// settings do not reproduce its OOM, so only reserved peaks compare).
    pub result: Option<FixResult>,
    /// `result` is `fits` (kept for older readers of the JSON).
    pub would_have_fit: Option<bool>,
    /// The model's reserved peak with it (under the ceiling of `ceiling`).
    pub reserved_peak: u64,
    /// Where it runs out (`#N` as shown), when it does.
    pub oom_at: Option<u64>,
    /// What that request lacked under the ceiling: the bytes short under this setting.
    pub shortfall: Option<u64>,
    /// The ceiling the result was decided under: the sure one for `fits`, the most for
    /// `does_not_fit` and `depends` (None: none known).
    pub ceiling: Option<FixCeiling>,
    /// For `fits`: the bytes left under that ceiling at its reserved peak (the rest of the
    /// step is not in the file). None otherwise.
    pub headroom_after: Option<u64>,
    /// For `depends`: the reserve the run needs with it (its peak under the most it could
    /// have had).
    pub needs: Option<u64>,
    /// For `depends` with a known capacity: it fits if less than this lay outside the
    /// allocator (capacity − `needs`).
    pub outside_below: Option<u64>,
}

impl Fix {
    /// One line: `expandable_segments:True: fits under 7.500 GiB (reserved peak 6.311 GiB,
    /// 1.189 GiB headroom left)`.
    pub fn text(&self) -> String {
        let peak = human_bytes(self.reserved_peak);
        let under = self.ceiling.as_ref().map_or(String::new(), |c| {
            format!(" under {}", human_bytes(c.bytes))
        });
        match self.result {
            Some(FixResult::Fits) => format!(
                "{}: fits{under} (reserved peak {peak}{})",
                self.setting,
                self.headroom_after.map_or(String::new(), |h| format!(
                    ", {} headroom left after the failed request; the rest of the step is not in the file",
                    human_bytes(h)
                ))
            ),
            Some(FixResult::DoesNotFit) => format!(
                "{}: does not fit{under}: OOM at #{}{} (reserved peak {peak})",
                self.setting,
                self.oom_at.map_or("?".into(), |n| n.to_string()),
                self.shortfall
                    .map_or(String::new(), |b| format!(", {} short under this setting", human_bytes(b)))
            ),
            Some(FixResult::Depends) => {
                let Some(needs) = self.needs.map(human_bytes) else {
                    return format!(
                        "{}: depends: runs out under the {} the run surely had (OOM at #{}); the file does not bound what more it could have had",
                        self.setting,
                        self.ceiling.as_ref().map_or("?".into(), |c| human_bytes(c.bytes)),
                        self.oom_at.map_or("?".into(), |n| n.to_string()),
                    );
                };
                match self.outside_below {
                    Some(o) => format!(
                        "{}: depends: fits only if less than {} lay outside the allocator (it needs a {needs} reserve; the file does not record what the driver had free)",
                        self.setting,
                        human_bytes(o)
                    ),
                    None => format!(
                        "{}: depends: fits only if the allocator could reserve {needs} (the file does not record what the driver had free)",
                        self.setting
                    ),
                }
            }
            None => format!(
                "{}: reserved peak {peak} (not judged: see the ceiling)",
                self.setting
            ),
        }
    }
}

/// The fix list of an OOM: each setting replayed, the ceilings in words, whether they were
/// judged.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Fixes {
    pub fixes: Vec<Fix>,
    /// The ceilings in words (None: none known).
    pub ceiling_text: Option<String>,
    /// The shortfall under the file's own settings: what its replay lacked at the file's
    /// OOM, where the model reproduces it.
    pub own_shortfall: Option<u64>,
}

/// The fix list of `trace`: each of [`SETTINGS`] the file does not already use, replayed
/// under the ceiling the run surely had and, where the file does not prove it, under the
/// most it could have had ([`ceiling::bounds`]). Empty when nothing can be replayed. The
/// replays share one input and run as `on` says (threads, progress): the list is the same
/// for any number of threads.
pub(crate) fn checked(
    trace: &Trace,
    index: &Index,
    history: Option<&History>,
    on: &RunsOn,
) -> Fixes {
    let own = super::sim::recorded_conf(trace)
        .and_then(Result::ok)
        .unwrap_or_default();
    // Each setting the file does not already use, tried on top of the settings in use.
    let (labels, confs): (Vec<&str>, Vec<AllocConf>) = SETTINGS
        .iter()
        .filter_map(|s| AllocConf::parse(s).ok().map(|c| (*s, c)))
        .filter(|(_, c)| !own.includes(c))
        .map(|(s, c)| (s, own.with(&c)))
        .unzip();
    let bounds = ceiling::bounds(trace, index, None);
    let (sure, most) = match &bounds {
        Some(b) => (b.sure.clone(), b.most.clone()),
        None => (None, ceiling::derive(trace, index, None)),
    };
    // The first run (the file's own settings) checks the model against the file's OOM.
    let first = sure.as_ref().or(most.as_ref());
    // The file's own settings first (as `whatif` runs them; what the file recorded beside
    // them is not needed here), then each setting.
    let (own_conf, source) = match super::sim::recorded_conf(trace) {
        Some(Ok(c)) => (c, "recorded"),
        None => (AllocConf::default(), "defaults"),
        Some(Err(_)) => return Fixes::default(),
    };
    let input = input_for(trace, history);
    let runs = replays(
        trace,
        history,
        &input,
        Some((&own_conf, source)),
        &confs,
        first,
        on,
    );
    if runs.first().is_none_or(|r| r.ops == 0) {
        return Fixes::default();
    }
    let model = runs.first().and_then(|r| r.model_check.as_ref());
    let reproduced = model.is_some_and(|m| m.result == "reproduced");
    // The file's own settings' shortfall, where the ceiling is proven (not an upper bound).
    let proven = matches!((&sure, &most), (Some(s), Some(m)) if s.bytes == m.bytes);
    let own_shortfall = runs
        .first()
        .filter(|_| reproduced && proven)
        .and_then(|r| r.oom_shortfall);
    // Under the most, when it differs from the sure ceiling: only the settings that ran out
    // under the sure one (one that fits there fits), and only where the fixes are judged.
    let two = matches!((&sure, &most), (Some(s), Some(m)) if m.bytes > s.bytes);
    let short: Vec<usize> = runs
        .iter()
        .skip(1)
        .enumerate()
        .filter(|(_, r)| r.oom.is_some())
        .map(|(k, _)| k)
        .collect();
    // (Only those settings: the file's own run is not needed again.)
    let wide = match &most {
        Some(m) if two && reproduced && !short.is_empty() => {
            let picked: Vec<AllocConf> = short
                .iter()
                .filter_map(|&k| confs.get(k).cloned())
                .collect();
            Some(replays(trace, history, &input, None, &picked, Some(m), on))
        }
        _ => None,
    };
    let fixes = runs
        .iter()
        .skip(1)
        .enumerate()
        .map(|(k, r)| {
            let under_most = wide.as_ref().and_then(|w| {
                let p = short.iter().position(|&x| x == k)?;
                w.get(p)
            });
            let mut fix = judge(r, under_most, two, sure.as_ref(), most.as_ref(), reproduced);
            fix.setting = labels.get(k).map_or(fix.setting, |l| l.to_string());
            fix.outside_below = fix
                .needs
                .zip(trace.capacity)
                .map(|(n, c)| c.0.saturating_sub(n))
                .filter(|_| fix.result == Some(FixResult::Depends));
            fix
        })
        .collect();
    let ceiling_text = match (&sure, &most) {
        (Some(s), Some(m)) if m.bytes > s.bytes => Some(format!("{}; at most {}", s.text, m.text)),
        (Some(c), _) | (None, Some(c)) => Some(c.text.clone()),
        (None, None) => None,
    }
    .map(|t| match model {
        Some(m) if !reproduced => format!(
            "{t}; but {}, so no setting is called fit or not: reserved peaks only",
            m.text
        ),
        _ => t,
    });
    Fixes {
        fixes,
        ceiling_text,
        own_shortfall,
    }
}

/// One setting's result from its replay under the sure ceiling (`r`) and, where the two
/// ceilings differ (`two`) and it ran out under the sure one, under the most (`wide`).
fn judge(
    r: &super::sim::RunResult,
    wide: Option<&super::sim::RunResult>,
    two: bool,
    sure: Option<&Ceiling>,
    most: Option<&Ceiling>,
    judged: bool,
) -> Fix {
    let mut fix = Fix {
        setting: r.alloc_conf.clone(),
        result: None,
        would_have_fit: None,
        reserved_peak: r.reserved_peak,
        oom_at: r.oom.as_ref().map(|o| o.index),
        shortfall: r.oom_shortfall,
        ceiling: sure.or(most).map(FixCeiling::of),
        headroom_after: None,
        needs: None,
        outside_below: None,
    };
    if !judged {
        return fix;
    }
    let (Some(first), one) = (sure.or(most), !two) else {
        return fix;
    };
    if r.oom.is_none() && sure.is_some() {
        fix.result = Some(FixResult::Fits);
        fix.headroom_after = Some(first.bytes.saturating_sub(r.reserved_peak));
    } else if one {
        // One ceiling: the sure one (proven) or only the most (an upper bound).
        // Running out under the only ceiling proves "does not fit" when that ceiling is the
        // most the run could have had (the two are one, or only the most is known); under
        // the sure ceiling alone more memory might have served it.
        fix.result = Some(match (r.oom.is_some(), most.is_some()) {
            (true, true) => FixResult::DoesNotFit,
            _ => FixResult::Depends,
        });
        if fix.result == Some(FixResult::Depends) && r.oom.is_none() {
            fix.needs = Some(r.reserved_peak);
            fix.outside_below = most
                .and_then(|m| m.capacity)
                .map(|c| c.saturating_sub(r.reserved_peak));
        }
        if r.oom.is_some() && sure.is_none() {
            fix.ceiling = most.map(FixCeiling::of);
        }
    } else if wide.is_none() {
        // Out under the sure ceiling; the replay under the most did not run: more memory
        // might have served it.
        fix.result = Some(FixResult::Depends);
    } else if let Some(w) = wide {
        fix.ceiling = most.map(FixCeiling::of);
        fix.reserved_peak = w.reserved_peak;
        fix.oom_at = w.oom.as_ref().map(|o| o.index);
        fix.shortfall = w.oom_shortfall;
        if w.oom.is_some() {
            fix.result = Some(FixResult::DoesNotFit);
        } else {
            fix.result = Some(FixResult::Depends);
            fix.needs = Some(w.reserved_peak);
            fix.outside_below = most
                .and_then(|m| m.capacity)
                .map(|c| c.saturating_sub(w.reserved_peak));
        }
    }
    fix.would_have_fit = match fix.result {
        Some(FixResult::Fits) => Some(true),
        Some(FixResult::DoesNotFit) => Some(false),
        Some(FixResult::Depends) | None => None,
    };
    fix
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::{open, OpenOptions, Progress};

    /// The fix list is the same whether its replays run on one thread or share several:
    /// every OOM fixture as it is and without the driver's free bytes (then the settings
    /// that run out under the reserve are replayed again under the most the run could have
    /// had), the settings in the same order with the same figures.
    #[test]
    fn the_fix_list_is_the_same_on_one_thread_or_several() {
        let files = crate::test_files::oom_snapshots();
        assert!(files.len() >= 9, "{files:?}");
        let (mut fixes, mut widened) = (0, 0);
        for f in &files {
            for forget_free in [false, true] {
                let mut opened = open(f, &OpenOptions::default(), &Progress::new()).unwrap();
                for d in &mut opened.devices {
                    if forget_free {
                        for m in &mut d.trace.marks {
                            m.free = None;
                        }
                    }
                    let one = checked(&d.trace, &d.index, d.history(), &RunsOn::threads(1));
                    for jobs in [2, 3, 8] {
                        let many = checked(&d.trace, &d.index, d.history(), &RunsOn::threads(jobs));
                        assert_eq!(one, many, "{} with {jobs} threads", f.display());
                    }
                    fixes += one.fixes.len();
                    // Judged by the replay under the most (its peak is what it needs).
                    widened += one.fixes.iter().filter(|x| x.needs.is_some()).count();
                }
            }
        }
        // The fixtures do replay settings, twice for some (else the comparison above
        // proves nothing).
        assert!(fixes >= 40, "{fixes} fixes");
        assert!(widened >= 4, "{widened} settings replayed under the most");
    }
}
