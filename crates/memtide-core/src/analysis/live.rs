//! The live set at an instant, as rows for the inspector and the summary, and its groupings.

use crate::index::Index;
use crate::trace::{AllocId, Band, Bytes, Seq, Trace, FLAG_INFERRED};
use std::collections::BTreeMap;

/// One live storage at an instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveEntry {
    pub id: AllocId,
    pub bytes: Bytes,
    pub band: Band,
    pub category: &'static str,
    pub name: String,
    pub frame: String,
    /// Views of the storage ever made (DESIGN §7 `views`).
    pub views: usize,
    /// Views still holding the storage at this instant.
    pub live_views: usize,
    /// The base tensor is gone; only views keep the storage alive.
    pub retained_by_view: bool,
    pub inferred: bool,
}

/// The live set at `at`, biggest first; `limit` rows at most (None: all).
pub fn live_entries(trace: &Trace, index: &Index, at: Seq, limit: Option<usize>) -> Vec<LiveEntry> {
    let ids = index.live_at(trace, at);
    ids.into_iter()
        .take(limit.unwrap_or(usize::MAX))
        .map(|id| entry(trace, id, at))
        .collect()
}

/// One row for storage `id` as seen at `at`.
pub fn entry(trace: &Trace, id: AllocId, at: Seq) -> LiveEntry {
    let cat = trace.category(id);
    LiveEntry {
        id,
        bytes: trace.size(id),
        band: cat.band(),
        category: cat.name(),
        name: trace.name(id).to_string(),
        frame: trace.top_frame(id).to_string(),
        views: trace.view_count(id),
        live_views: trace.live_views_at(id, at),
        retained_by_view: trace.retained_by_view(id, at),
        inferred: trace.flags(id) & FLAG_INFERRED != 0,
    }
}

/// A group of live storages sharing a key, with its total.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub key: String,
    pub bytes: Bytes,
    pub count: usize,
}

/// Groups live storages by band.
pub fn group_by_band(entries: &[LiveEntry]) -> Vec<Group> {
    group(entries, |e| e.band.name().to_string())
}

/// Groups live storages by top frame (or name when there is no frame).
pub fn group_by_frame(entries: &[LiveEntry]) -> Vec<Group> {
    group(entries, |e| {
        if e.frame.is_empty() {
            if e.name.is_empty() {
                "(no frame)".to_string()
            } else {
                e.name.clone()
            }
        } else {
            e.frame.clone()
        }
    })
}

fn group(entries: &[LiveEntry], key: impl Fn(&LiveEntry) -> String) -> Vec<Group> {
    let mut m: BTreeMap<String, (u64, usize)> = BTreeMap::new();
    for e in entries {
        let g = m.entry(key(e)).or_insert((0, 0));
        g.0 += e.bytes.0;
        g.1 += 1;
    }
    let mut v: Vec<Group> = m
        .into_iter()
        .map(|(key, (b, c))| Group {
            key,
            bytes: Bytes(b),
            count: c,
        })
        .collect();
    v.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.key.cmp(&b.key)));
    v
}
