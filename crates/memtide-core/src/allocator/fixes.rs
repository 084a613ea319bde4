//! The fix list of an OOM, each checked by replay: the allocator settings a user would try,
//! replayed through the what-if simulator from the start of the history under the ceiling
//! the run really had ([`super::sim::ceiling::derive`], the same one `memtide whatif` uses),
//! each with whether it would have fit and the reserved peak it gives.

use super::replay::History;
use super::sim::{ceiling, whatif_under, AllocConf};
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

/// One setting replayed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Fix {
    /// The setting (`expandable_segments:True`).
    pub setting: String,
    /// Whether the whole history replays under the ceiling with it (None: no ceiling known,
    /// or the file's own settings do not reproduce its OOM under it; only reserved peaks
    /// compare then).
    pub would_have_fit: Option<bool>,
    /// The model's reserved peak with it.
    pub reserved_peak: u64,
    /// Where it runs out (`#N` as shown), when it does.
    pub oom_at: Option<u64>,
    /// What that request lacked under the ceiling.
    pub shortfall: Option<u64>,
    /// The ceiling it was replayed under (bytes; None: none known).
    pub ceiling: Option<u64>,
}

impl Fix {
    /// One line: `expandable_segments:True: would have fit (reserved peak 6.311 GiB)`.
    pub fn text(&self) -> String {
        let peak = human_bytes(self.reserved_peak);
        match (self.would_have_fit, self.oom_at) {
            (Some(true), _) => format!(
                "{}: would have fit: yes (reserved peak {peak})",
                self.setting
            ),
            (Some(false), Some(n)) => format!(
                "{}: would have fit: no — OOM at #{n}{} (reserved peak {peak})",
                self.setting,
                self.shortfall
                    .map_or(String::new(), |b| format!(", {} short", human_bytes(b)))
            ),
            (Some(false), None) => format!(
                "{}: would have fit: no (reserved peak {peak})",
                self.setting
            ),
            (None, _) => format!(
                "{}: reserved peak {peak} (not judged: see the ceiling)",
                self.setting
            ),
        }
    }
}

/// The fix list of `trace`: each of [`SETTINGS`] the file does not already use, replayed
/// under the trace's ceiling, and that ceiling in words (None: no ceiling known). Empty when
/// nothing can be replayed.
pub(crate) fn checked(
    trace: &Trace,
    index: &Index,
    history: Option<&History>,
) -> (Vec<Fix>, Option<String>) {
    let own = super::sim::recorded_conf(trace)
        .and_then(Result::ok)
        .unwrap_or_default();
    let confs: Vec<AllocConf> = SETTINGS
        .iter()
        .filter_map(|s| AllocConf::parse(s).ok())
        .filter(|c| c.to_string() != own.to_string())
        .collect();
    let ceiling = ceiling::derive(trace, index, None);
    let Ok(w) = whatif_under(trace, history, &confs, ceiling.as_ref()) else {
        return (Vec::new(), None);
    };
    if w.runs.first().is_none_or(|r| r.ops == 0) {
        return (Vec::new(), None);
    }
    // The verdicts mean something only where the file's own settings reproduce its OOM.
    let judged = ceiling.is_some()
        && w.runs
            .first()
            .and_then(|r| r.model_check.as_ref())
            .is_some_and(|m| m.result == "reproduced");
    let fixes = w
        .runs
        .iter()
        .skip(1)
        .map(|r| Fix {
            setting: r.alloc_conf.clone(),
            would_have_fit: judged.then_some(r.oom.is_none()),
            reserved_peak: r.reserved_peak,
            oom_at: r.oom.as_ref().map(|o| o.index),
            shortfall: r.oom_shortfall,
            ceiling: ceiling.as_ref().map(|c| c.bytes),
        })
        .collect();
    let text = ceiling.map(
        |c| match w.runs.first().and_then(|r| r.model_check.as_ref()) {
            Some(m) if !judged => format!(
                "{}; but {}, so no setting is called fit or not: reserved peaks only",
                c.text, m.text
            ),
            _ => c.text,
        },
    );
    (fixes, text)
}
