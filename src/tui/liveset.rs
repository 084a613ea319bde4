//! The live set at one instant as the panel needs it — count, total, the biggest rows and
//! the groupings — as a pure function, run inline by `update` or, for huge live sets, on a
//! worker (the reply carries a generation id).

use memtide_core::analysis::{
    entry_in, persistent, stack_tree, FrameView, Group, LiveEntry, Persistent, TreeFrames, TreeNode,
};
use memtide_core::index::Index;
use memtide_core::trace::{AllocId, Band, Bytes, Seq, StackId, StrId, Trace};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// How the live panel lists storages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GroupMode {
    List,
    ByBand,
    /// By user frame (`file.py:123 function`; the innermost op when the stack has none).
    ByFrame,
    /// The stack tree (root = outermost frame), user frames only.
    Tree,
}

impl GroupMode {
    /// The next grouping (`g`): list → by band → by frame → tree → list.
    pub fn next(self) -> GroupMode {
        match self {
            GroupMode::List => GroupMode::ByBand,
            GroupMode::ByBand => GroupMode::ByFrame,
            GroupMode::ByFrame => GroupMode::Tree,
            GroupMode::Tree => GroupMode::List,
        }
    }
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
    /// The persistent breakdown at `at` (None: nothing persistent, or no identities).
    pub persistent: Option<Persistent>,
    /// The stack tree (tree grouping only).
    pub tree: Option<TreeNode>,
}

/// Computes the live panel's content at `at`, frames under the built-in rules without a
/// project root (the explorer uses [`compute_in`] with its device's view).
pub fn compute(tr: &Trace, ix: &Index, at: Seq, group: GroupMode) -> LiveResult {
    compute_in(tr, ix, &FrameView::default(), at, group)
}

/// Computes the live panel's content at `at`, frames read through `view`.
pub fn compute_in(
    tr: &Trace,
    ix: &Index,
    view: &FrameView,
    at: Seq,
    group: GroupMode,
) -> LiveResult {
    let mut ids = ix.live_at_unsorted(tr, at);
    let count = ids.len();
    // Without identities no storage carries the bytes: the index's total does.
    let total = if tr.identities_known() {
        ids.iter().map(|&id| tr.size(id)).sum()
    } else {
        ix.total(at)
    };
    let groups = match group {
        GroupMode::List | GroupMode::Tree => Vec::new(),
        g => groups(tr, view, &ids, g == GroupMode::ByBand),
    };
    let tree = (group == GroupMode::Tree && tr.identities_known())
        .then(|| stack_tree(tr, &ids, view, TreeFrames::User));
    let persistent = if tr.identities_known() {
        persistent(tr, &ids)
    } else {
        None
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
        rows: ids.iter().map(|&id| entry_in(tr, id, at, view)).collect(),
        groups,
        persistent,
        tree,
    }
}

/// Live storages grouped by band or by user frame (`file.py:123 function`, else the
/// innermost op, else the name), aggregated on interned ids first so huge live sets cost no
/// per-storage strings.
fn groups(tr: &Trace, view: &FrameView, ids: &[AllocId], by_band: bool) -> Vec<Group> {
    let mut m: FxHashMap<(u32, u32), (u64, usize)> = FxHashMap::default();
    for &id in ids {
        let key = if by_band {
            (tr.band(id).idx() as u32, 0)
        } else {
            let st = &tr.storages;
            (st.stack.get(id.idx()).map_or(0, |s| s.0), tr.name_id(id).0)
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
            let sf = view.of_stack(tr, StackId(a));
            let name = tr.strings.shown(StrId(b));
            if !sf.user.is_empty() {
                sf.user
            } else if !sf.innermost.is_empty() {
                sf.innermost
            } else if !name.is_empty() {
                name.to_string()
            } else {
                let frame = top_frame_of(tr, StackId(a));
                if frame.is_empty() {
                    "(no frame)".to_string()
                } else {
                    frame.to_string()
                }
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
        .map(|&f| tr.strings.shown(f))
        .find(|s| !s.starts_with("??"))
        .or_else(|| frames.first().map(|&f| tr.strings.shown(f)))
        .unwrap_or(std::borrow::Cow::Borrowed(""))
}
