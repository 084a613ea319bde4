//! The live set at one instant as the panel needs it — count, total, the biggest rows and
//! the groupings — as a pure function, run inline by `update` or, for huge live sets, on a
//! worker (the reply carries a generation id).

use memtide_core::analysis::live::{entry, Group, LiveEntry};
use memtide_core::index::Index;
use memtide_core::trace::{AllocId, Band, Bytes, Seq, StackId, StrId, Trace};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// How the live panel lists storages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupMode {
    List,
    ByBand,
    ByFrame,
}

/// Rows kept for the live list (the panel scrolls within them); totals cover all.
pub const LIVE_ROWS: usize = 1000;

/// Above this many live storages the live set is computed on a worker.
pub const HUGE_LIVE: usize = 100_000;

/// The live panel's content at `at`.
#[derive(Debug, Clone, Default)]
pub struct LiveResult {
    pub at: Seq,
    pub count: usize,
    pub total: Bytes,
    /// The biggest `LIVE_ROWS` storages, biggest first (ties: earlier alloc, then id).
    pub rows: Vec<LiveEntry>,
    pub groups: Vec<Group>,
}

/// Computes the live panel's content at `at`.
pub fn compute(tr: &Trace, ix: &Index, at: Seq, group: GroupMode) -> LiveResult {
    let mut ids = ix.live_at_unsorted(tr, at);
    let count = ids.len();
    // Without identities no storage carries the bytes: the index's total does.
    let total = if tr.identities_known() {
        ids.iter().map(|&id| tr.size(id)).sum()
    } else {
        ix.total(at)
    };
    let groups = match group {
        GroupMode::List => Vec::new(),
        g => groups(tr, &ids, g == GroupMode::ByBand),
    };
    // Only the rows shown need ordering: select the top LIVE_ROWS in O(n), sort those.
    let cmp = |a: &AllocId, b: &AllocId| {
        tr.size(*b)
            .cmp(&tr.size(*a))
            .then(tr.start(*a).cmp(&tr.start(*b)))
            .then(a.cmp(b))
    };
    if ids.len() > LIVE_ROWS {
        ids.select_nth_unstable_by(LIVE_ROWS, cmp);
        ids.truncate(LIVE_ROWS);
    }
    ids.sort_unstable_by(cmp);
    LiveResult {
        at,
        count,
        total,
        rows: ids.iter().map(|&id| entry(tr, id, at)).collect(),
        groups,
    }
}

/// Live storages grouped by band or by top frame (the keys of
/// `analysis::live::{group_by_band, group_by_frame}`), aggregated on interned ids first so
/// huge live sets cost no per-storage strings.
fn groups(tr: &Trace, ids: &[AllocId], by_band: bool) -> Vec<Group> {
    let mut m: FxHashMap<(u32, u32), (u64, usize)> = FxHashMap::default();
    for &id in ids {
        let key = if by_band {
            (tr.band(id).idx() as u32, 0)
        } else {
            let st = &tr.storages;
            (
                st.stack.get(id.idx()).map_or(0, |s| s.0),
                st.name.get(id.idx()).map_or(0, |s| s.0),
            )
        };
        let g = m.entry(key).or_insert((0, 0));
        g.0 += tr.size(id).0;
        g.1 += 1;
    }
    let mut named: BTreeMap<String, (u64, usize)> = BTreeMap::new();
    for ((a, b), (bytes, count)) in m {
        let key = if by_band {
            Band::from_idx(a as usize).name().to_string()
        } else {
            let frame = top_frame_of(tr, StackId(a));
            let name = tr.strings.str(StrId(b));
            match (frame.is_empty(), name.is_empty()) {
                (false, _) => frame.to_string(),
                (true, false) => name.to_string(),
                (true, true) => "(no frame)".to_string(),
            }
        };
        let g = named.entry(key).or_insert((0, 0));
        g.0 += bytes;
        g.1 += count;
    }
    let mut v: Vec<Group> = named
        .into_iter()
        .map(|(key, (b, count))| Group {
            key,
            bytes: Bytes(b),
            count,
        })
        .collect();
    v.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.key.cmp(&b.key)));
    v
}

/// `Trace::top_frame` for a stack id: the first frame that is not a C++ `??` frame.
fn top_frame_of(tr: &Trace, sid: StackId) -> std::borrow::Cow<'_, str> {
    let frames = tr.strings.stack(sid);
    frames
        .iter()
        .map(|&f| tr.strings.str(f))
        .find(|s| !s.starts_with("??"))
        .or_else(|| frames.first().map(|&f| tr.strings.str(f)))
        .unwrap_or(std::borrow::Cow::Borrowed(""))
}
