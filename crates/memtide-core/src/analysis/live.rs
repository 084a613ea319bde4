//! The live set at an instant, as rows for the inspector and the summary, and its groupings.

use super::frames::{FrameView, StackFrames};
use super::retained::{retained, Retained};
use crate::index::Index;
use crate::trace::{AllocId, Band, Bytes, Seq, Trace, FLAG_INFERRED};
use std::collections::BTreeMap;

/// One live storage at an instant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveEntry {
    pub id: AllocId,
    pub bytes: Bytes,
    /// What the caller asked for, when `bytes` is a larger allocator block (a CUDA snapshot's
    /// rounded or unsplit block); None when `bytes` is what was asked for.
    pub requested: Option<Bytes>,
    pub band: Band,
    pub category: &'static str,
    /// The source's name for the storage (`user_metadata`, JSONL `name`), or empty.
    pub name: String,
    /// What to call the row: `name`, else the module path the stack shows, else the op or
    /// innermost function (empty only when the source knows nothing).
    pub label: String,
    /// The top frame as the source gave it (see `Trace::top_frame`).
    pub frame: String,
    /// The user frame, `file.py:123 function` (see [`super::FrameView`]), or empty.
    pub user_frame: String,
    /// The user frame's full text (full path), for an inspector, or empty.
    pub user_frame_full: String,
    /// The innermost frame's function or op (`relu`, `aten::addmm`), or empty.
    pub innermost: String,
    /// torch.compile: the compiled region (`compile_context`, e.g. `Torch-Compiled Region:
    /// 0/1`) and the FX node the user frame was read from (`addmm`), or empty.
    pub compiled: String,
    /// A backward allocation's forward line (the user frame of its `forward_frames`), or
    /// empty.
    pub forward_frame: String,
    /// Views of the storage ever made (`peak.live[].views`: docs/summary-json.md).
    pub views: usize,
    /// Views still holding the storage at this instant.
    pub live_views: usize,
    /// The base tensor is gone and only views keep the storage alive, in a way worth a flag
    /// (see [`super::retained`]): views much smaller than the storage, or of unknown size.
    pub retained_by_view: bool,
    /// How, when `retained_by_view`: the views' bytes (when recorded) against the storage's.
    pub retained: Option<Retained>,
    pub inferred: bool,
}

/// One owner of live memory: the storages of one band, category, label, user frame and
/// innermost op, together (three 1 GiB activations of one line are one owner of 3 GiB).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    /// The row of its biggest storage.
    pub entry: LiveEntry,
    /// All of its storages' bytes.
    pub bytes: u64,
    /// How many storages it holds.
    pub count: u64,
}

/// The owners of the storages `ids`, live at `at`, biggest total first (ties by label and
/// top frame). Storages of one stack, name, extra fields and category are described alike:
/// each such group is read once (a million live storages are a few thousand groups).
pub fn owners(
    trace: &Trace,
    ids: impl IntoIterator<Item = AllocId>,
    at: Seq,
    view: &FrameView,
) -> Vec<Owner> {
    type Group = (AllocId, u64, u64);
    let mut groups: rustc_hash::FxHashMap<_, Group> = Default::default();
    for id in ids {
        let key = (
            trace.stack_id(id),
            trace.name_id(id),
            trace.extra.get(&id).copied(),
            trace.category(id),
        );
        let g = groups.entry(key).or_insert((id, 0, 0));
        if trace.size(id).0 > trace.size(g.0).0 {
            g.0 = id;
        }
        g.1 += trace.size(id).0;
        g.2 += 1;
    }
    // Biggest storage first: an owner's row is its biggest storage's.
    let mut groups: Vec<Group> = groups.into_values().collect();
    groups.sort_by_key(|&(id, _, _)| (std::cmp::Reverse(trace.size(id).0), id.0));
    let mut owners: Vec<Owner> = Vec::new();
    let mut place: rustc_hash::FxHashMap<(Band, &'static str, String, String, String), usize> =
        Default::default();
    for (id, bytes, count) in groups {
        let entry = entry_in(trace, id, at, view);
        let key = (
            entry.band,
            entry.category,
            entry.label.clone(),
            entry.user_frame.clone(),
            entry.innermost.clone(),
        );
        if let Some(o) = place.get(&key).and_then(|&i| owners.get_mut(i)) {
            o.bytes += bytes;
            o.count += count;
            continue;
        }
        place.insert(key, owners.len());
        owners.push(Owner {
            entry,
            bytes,
            count,
        });
    }
    owners.sort_by(|a, b| {
        b.bytes
            .cmp(&a.bytes)
            .then_with(|| (&a.entry.label, &a.entry.frame).cmp(&(&b.entry.label, &b.entry.frame)))
    });
    owners
}

/// The label of a storage live before the recording began, without a stack.
pub(crate) const BEFORE_RECORDING: &str = "before recording";

/// The live set at `at`, biggest first; `limit` rows at most (None: all); frames under the
/// built-in rules.
pub fn live_entries(trace: &Trace, index: &Index, at: Seq, limit: Option<usize>) -> Vec<LiveEntry> {
    let view = FrameView::new(trace, &Default::default());
    live_entries_in(trace, index, at, limit, &view)
}

/// [`live_entries`] with frames read through `view`.
pub(crate) fn live_entries_in(
    trace: &Trace,
    index: &Index,
    at: Seq,
    limit: Option<usize>,
    view: &FrameView,
) -> Vec<LiveEntry> {
    let ids = index.live_at(trace, at);
    ids.into_iter()
        .take(limit.unwrap_or(usize::MAX))
        .map(|id| entry_in(trace, id, at, view))
        .collect()
}

/// One row for storage `id` as seen at `at`, frames read through `view`.
pub fn entry_in(trace: &Trace, id: AllocId, at: Seq, view: &FrameView) -> LiveEntry {
    entry_with(
        trace,
        id,
        at,
        view,
        view.of_stack(trace, trace.stack_id(id)),
    )
}

/// [`entry_in`] with the readable frames of the storage's stack already read
/// (`view.of_stack(trace, trace.stack_id(id))`): rows that share a stack share that work,
/// which grows with the stack's depth.
pub fn entry_with(
    trace: &Trace,
    id: AllocId,
    at: Seq,
    view: &FrameView,
    sf: StackFrames,
) -> LiveEntry {
    let cat = trace.category(id);
    let name = crate::clip::clip(trace.name(id)).into_owned();
    let label = if !name.is_empty() {
        name.clone()
    } else if !sf.module.is_empty() {
        sf.module.clone()
    } else if !sf.plain.is_empty() {
        sf.plain.clone()
    } else if sf.innermost.is_empty() && trace.is_from_start(id) && sf.user.is_empty() {
        // No stack and live from the start: allocated before the recording began.
        BEFORE_RECORDING.to_string()
    } else {
        sf.innermost.clone()
    };
    let forward_frame = forward_frame(trace, id, view);
    let retained = retained(trace, id, at);
    // A backward allocation's user frame: the forward line that caused it, when the file
    // links them (`forward_frames`).
    let user_frame = if sf.user == "autograd backward" && !forward_frame.is_empty() {
        forward_frame.clone()
    } else {
        sf.user
    };
    LiveEntry {
        id,
        bytes: trace.size(id),
        requested: trace.requested_size(id),
        band: cat.band(),
        category: cat.name(),
        name,
        label,
        frame: trace.top_frame(id).to_string(),
        user_frame,
        user_frame_full: sf.user_full,
        innermost: sf.innermost,
        compiled: compiled(trace, id, &sf.fx_node),
        forward_frame,
        views: trace.view_count(id),
        live_views: trace.live_views_at(id, at),
        retained_by_view: retained.is_some(),
        retained,
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

/// The storage's kept source fields (`compile_context`, `forward_frames`, …) as JSON.
fn extra(trace: &Trace, id: AllocId) -> Option<serde_json::Value> {
    let sid = trace.extra.get(&id)?;
    serde_json::from_str(&trace.strings.str(*sid)).ok()
}

/// `Torch-Compiled Region: 0/1 · addmm`, from `compile_context` (its placeholders `N/A`
/// and empty say nothing) and the FX node.
fn compiled(trace: &Trace, id: AllocId, fx_node: &str) -> String {
    let region = extra(trace, id).and_then(|x| {
        x.get("compile_context")
            .and_then(|c| c.as_str().map(str::to_string))
            .filter(|c| !c.is_empty() && c != "N/A")
    });
    match (region, fx_node.is_empty()) {
        (Some(r), true) => r,
        (Some(r), false) => format!("{r} · {fx_node}"),
        (None, false) => fx_node.to_string(),
        (None, true) => String::new(),
    }
}

/// The user frame of `forward_frames` (traceback lines `File "…", line N, in f`, innermost
/// last as Python prints them, or frame texts).
fn forward_frame(trace: &Trace, id: AllocId, view: &FrameView) -> String {
    use super::frames::{parse_frame, traceback_line, Frame};
    let Some(x) = extra(trace, id) else {
        return String::new();
    };
    let Some(list) = x.get("forward_frames").and_then(|v| v.as_array()) else {
        return String::new();
    };
    let texts: Vec<&str> = list.iter().filter_map(|v| v.as_str()).collect();
    // A traceback lists the outermost call first: read it innermost first.
    for t in texts.iter().rev() {
        let fr = match traceback_line(t) {
            Some((file, line, name)) => Frame {
                file,
                line: Some(line),
                name,
            },
            None => parse_frame(t),
        };
        if !view.rules.is_internal(&fr) {
            return view.show(&fr);
        }
    }
    String::new()
}
