//! The decoded snapshot before timeline replay: compact trace-entry rows per device, the
//! final segments and the annotations, with frames interned once for the whole file.
//! Both the pickle and the JSON decoder produce this.

use crate::trace::{Interner, StackId, StrId};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// A trace entry's `action`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Action {
    Alloc,
    FreeRequested,
    FreeCompleted,
    SegmentAlloc,
    SegmentFree,
    SegmentMap,
    SegmentUnmap,
    Snapshot,
    Oom,
    Annotate,
    /// `user_defined`: a user's mark in the trace (its text in `user_metadata`).
    UserDefined,
    Unknown,
}

impl Action {
    pub const KNOWN: [(&'static str, Action); 11] = [
        ("alloc", Action::Alloc),
        ("free_requested", Action::FreeRequested),
        ("free_completed", Action::FreeCompleted),
        ("segment_alloc", Action::SegmentAlloc),
        ("segment_free", Action::SegmentFree),
        ("segment_map", Action::SegmentMap),
        ("segment_unmap", Action::SegmentUnmap),
        ("snapshot", Action::Snapshot),
        ("oom", Action::Oom),
        ("annotate", Action::Annotate),
        ("user_defined", Action::UserDefined),
    ];

    /// Whether the entry maps or unmaps reserved memory.
    pub fn is_segment_event(self) -> bool {
        matches!(
            self,
            Action::SegmentAlloc | Action::SegmentFree | Action::SegmentMap | Action::SegmentUnmap
        )
    }

    pub fn parse(s: &str) -> Action {
        Action::KNOWN
            .iter()
            .find(|(n, _)| *n == s)
            .map_or(Action::Unknown, |&(_, a)| a)
    }
}

/// One trace entry, columnar-ready (its `user_metadata`, which few entries have, is in
/// [`Raw::row_names`]; kept packed in [`super::rows::Rows`]).
#[derive(Clone, Copy, Debug)]
pub struct Row {
    pub addr: u64,
    pub size: u64,
    /// `time_us` (µs since the epoch); meaningful only when `has_time`.
    pub time_us: i64,
    /// Stack in [`Raw::strings`] (global ids).
    pub stack: StackId,
    pub action: Action,
    pub has_time: bool,
    /// The entry's `category` (PyTorch's `_profile_to_snapshot` writes its memory
    /// profiler's category on each alloc: `parameter`, `gradient`, `optimizer_state`, …), when
    /// it names one memtide knows; `unknown` and absent are None.
    pub category: Option<crate::trace::Category>,
}

// Every entry of a big snapshot is held until the replay passes it, packed in 20 bytes
// (`rows.rs`); a `Row` is what a reader gets back.
const _: () = assert!(std::mem::size_of::<Row>() == 32);

/// An entry's `category` value as a category (None: absent, `unknown`, or a name memtide
/// does not know, which inference then decides).
pub(crate) fn entry_category(text: &str) -> Option<crate::trace::Category> {
    crate::trace::Category::parse(text).filter(|c| *c != crate::trace::Category::Unknown)
}

/// State of a block in the final `segments`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockState {
    Allocated,
    PendingFree,
    Inactive,
    Other,
}

impl BlockState {
    pub fn parse(s: &str) -> BlockState {
        match s {
            "active_allocated" => BlockState::Allocated,
            "active_pending_free" | "active_awaiting_free" => BlockState::PendingFree,
            "inactive" => BlockState::Inactive,
            _ => BlockState::Other,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Block {
    /// Rounded size: blocks tile the segment, so addresses are running sums of it.
    pub size: u64,
    /// Bytes the caller asked for (`size` when the file lacks it).
    pub requested: u64,
    pub state: BlockState,
    pub stack: StackId,
    /// Kept fields of the block (`user_metadata`, `forward_frames`) as JSON object text.
    pub extra: StrId,
}

#[derive(Clone, Debug)]
pub struct Segment {
    pub device: u64,
    pub address: u64,
    pub total_size: u64,
    pub blocks: Vec<Block>,
    /// The segment's stack (global ids), `StackId(0)` when not recorded.
    pub stack: StackId,
    /// Kept fields (`stream`, `segment_type`, `segment_pool_id`, `is_expandable`) as JSON
    /// object text.
    pub extra: StrId,
}

#[derive(Clone, Debug)]
pub struct Annotation {
    /// None: applies to every device.
    pub device: Option<u64>,
    pub name: String,
    pub start: bool,
    pub time_us: i64,
}

/// Counts one entry of the unknown action `action` in `table`, keyed by its text within
/// [`UNKNOWN_ACTION_CAP`] bytes (a longer one its head and `… (N bytes)`, see
/// [`crate::clip`]): a long action shared by many entries is never copied whole and costs
/// one key, and the warning naming ten of them stays within one field's cap.
pub(crate) fn count_unknown_action(table: &mut BTreeMap<String, u64>, action: &str) {
    let key = crate::clip::clip_to(action, UNKNOWN_ACTION_CAP);
    match table.get_mut(key.as_ref()) {
        Some(n) => *n += 1,
        None => {
            table.insert(key.into_owned(), 1);
        }
    }
}

/// The most bytes of an unknown action's name the table keeps.
pub(crate) const UNKNOWN_ACTION_CAP: usize = 80;

/// Unknown actions a warning names, at most (the rest are counted).
pub(crate) const UNKNOWN_ACTIONS_NAMED: usize = 10;

/// `a ×3, b ×1` for the first [`UNKNOWN_ACTIONS_NAMED`] actions of `table`, then
/// `and N other actions` when there are more.
pub(crate) fn unknown_actions_text(table: &BTreeMap<String, u64>) -> String {
    let mut names: Vec<String> = table
        .iter()
        .take(UNKNOWN_ACTIONS_NAMED)
        .map(|(k, v)| format!("{k} ×{v}"))
        .collect();
    if table.len() > UNKNOWN_ACTIONS_NAMED {
        names.push(format!(
            "and {} other actions",
            table.len() - UNKNOWN_ACTIONS_NAMED
        ));
    }
    names.join(", ")
}

/// The whole decoded snapshot.
#[derive(Debug, Default)]
pub struct Raw {
    /// Frames ("file:line:name", long ones as parts) and stacks, shared by every device.
    pub strings: Interner,
    pub rows: super::rows::Rows,
    /// `device_free` of `oom` rows, by row index.
    pub device_free: FxHashMap<u32, u64>,
    /// Row indices of each device, in trace order.
    pub devices: Vec<Vec<u32>>,
    pub segments: Vec<Segment>,
    pub annotations: Vec<Annotation>,
    /// Unknown actions and how often each occurred.
    pub unknown_actions: BTreeMap<String, u64>,
    /// Items of a device trace that were not trace-entry dicts.
    pub skipped_items: u64,
    /// Kept fields of a row (`stream`, `pool_id`, `compile_context`, `forward_frames`, a
    /// non-string `user_metadata`) as JSON object text, only for rows that have any.
    pub row_extra: FxHashMap<u32, StrId>,
    /// `user_metadata` of the rows whose text is not empty, by row index.
    pub row_names: FxHashMap<u32, StrId>,
    /// `allocator_settings` as JSON text (None: the file has none).
    pub allocator_settings: Option<String>,
    /// `host_traces` rows (pinned host memory), when the file has host data.
    pub host_rows: Vec<u32>,
    pub host_segments: Vec<Segment>,
    /// Whether the file has `host_segments` or `host_traces` at all.
    pub has_host: bool,
    /// Whether the file has a `device_traces` key (else: a bare segment list, or a dict with
    /// segments only: a snapshot without history).
    pub has_traces_key: bool,
    /// Whether the file gives the dump's segments (a `segments` key, even an empty list, or a
    /// bare segment list): then a device without segments held nothing at the dump.
    pub has_segments_key: bool,
    /// One bit per row: a segment event (alloc, free, map, unmap). Rows are few of these,
    /// and the replay's backward pass over a long trace reads only them.
    segment_rows: Vec<u64>,
    /// Whether any row's size is negative in the file (the check scans rows only then).
    pub any_negative_size: bool,
    /// Whether any row is an `oom`.
    pub any_oom: bool,
}

impl Raw {
    pub fn new() -> Raw {
        Raw {
            strings: Interner::new(),
            ..Raw::default()
        }
    }

    /// Appends a row (the only way rows are added, so the notes above stay true); its
    /// index.
    pub fn push_row(&mut self, row: Row) -> Result<u32, String> {
        let r = self.rows.push(row, "the trace entries")?;
        self.note_row(r, &row);
        Ok(r)
    }

    /// Notes what later passes look for in row `r`, just pushed.
    fn note_row(&mut self, r: u32, row: &Row) {
        if row.action.is_segment_event() {
            let (w, bit) = (r as usize / 64, r % 64);
            if self.segment_rows.len() <= w {
                self.segment_rows.resize(w + 1, 0);
            }
            self.segment_rows[w] |= 1 << bit;
        }
        self.any_negative_size |= row.size > i64::MAX as u64;
        self.any_oom |= row.action == Action::Oom;
    }

    /// The `user_metadata` of row `r` (`StrId(0)`: none).
    pub fn name_of(&self, r: u32) -> StrId {
        self.row_names.get(&r).copied().unwrap_or(StrId(0))
    }

    /// Whether row `r` is a segment event (false for a row that does not exist).
    pub fn is_segment_row(&self, r: u32) -> bool {
        self.segment_rows
            .get(r as usize / 64)
            .is_some_and(|w| w >> (r % 64) & 1 == 1)
    }
}

/// Builds the JSON-object text of kept fields; empty objects intern nothing.
#[derive(Debug, Default)]
pub(crate) struct Extra(serde_json::Map<String, serde_json::Value>);

impl Extra {
    pub fn put(&mut self, k: &str, v: serde_json::Value) {
        self.0.insert(k.to_string(), v);
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    /// Interns the object's text (None-like `StrId(0)` when empty).
    pub fn intern(self, strings: &mut Interner) -> StrId {
        if self.0.is_empty() {
            return StrId(0);
        }
        let text = serde_json::Value::Object(self.0).to_string();
        strings.intern(&text)
    }
}

/// A frame name with its FX fields (`augment_with_fx_traces=True`): op, node name and
/// target, and the innermost line of the original trace.
pub(crate) fn fx_name(name: &str, fx: [&str; 4]) -> String {
    use std::fmt::Write as _;
    let mut s = name.to_string();
    s.push_str(" [fx");
    for (label, v) in [("op", fx[0]), ("node", fx[1]), ("target", fx[2])] {
        if !v.is_empty() {
            let _ = write!(s, " {label}={v}");
        }
    }
    // The innermost user location of the original trace and its code line.
    let mut lines = fx[3].lines().map(str::trim).filter(|l| !l.is_empty());
    let code = lines.clone().next_back();
    if let Some(loc) = lines.rfind(|l| l.starts_with("File ")) {
        let _ = write!(s, " from: {loc}");
        if let Some(c) = code.filter(|c| *c != loc) {
            let _ = write!(s, ": {c}");
        }
    } else if let Some(c) = code {
        let _ = write!(s, " from: {c}");
    }
    s.push(']');
    s
}

/// `compile_context` placeholders that carry no information.
pub(crate) fn is_placeholder_context(s: &str) -> bool {
    s.is_empty() || s == "N/A"
}

/// Turns frames into interned strings and stacks, hiding C++ frames unless asked.
#[derive(Debug, Default)]
pub(crate) struct Frames {
    pub cpp: bool,
    buf: String,
    tmp: Vec<StrId>,
    tail: Vec<StrId>,
}

/// Bit set on a packed frame id when the frame is a C++ one.
pub(crate) const CPP_BIT: u32 = 1 << 31;

impl Frames {
    pub fn new(cpp: bool) -> Frames {
        Frames {
            cpp,
            ..Frames::default()
        }
    }

    /// Interns `filename:line:name`; returns the id with [`CPP_BIT`] set for C++ frames.
    pub fn frame(&mut self, strings: &mut Interner, filename: &str, line: i64, name: &str) -> u32 {
        // Long file names stay shared: the frame keeps ids, not a copy of the text.
        let cpp = is_cpp(filename) && !is_autograd_marker(name);
        if filename.len() + name.len() > crate::trace::intern::LONG_FRAME {
            let id = strings.intern_frame(filename, line, name).0 & !CPP_BIT;
            return if cpp { id | CPP_BIT } else { id };
        }
        use std::fmt::Write as _;
        self.buf.clear();
        let _ = write!(self.buf, "{filename}:{line}:{name}");
        let id = strings.intern(&self.buf).0 & !CPP_BIT;
        if cpp {
            id | CPP_BIT
        } else {
            id
        }
    }

    /// Interns a frame given as a plain string (some writers put those in frame lists), as is.
    pub fn frame_text(&mut self, strings: &mut Interner, text: &str) -> u32 {
        let id = strings.intern(text).0 & !CPP_BIT;
        if is_cpp(text) {
            id | CPP_BIT
        } else {
            id
        }
    }

    /// Interns a stack from packed frame ids (innermost first). Python frames come first;
    /// C++ frames follow (in their order) only when asked for.
    pub fn stack(&mut self, strings: &mut Interner, packed: &[u32]) -> StackId {
        self.tmp.clear();
        self.tail.clear();
        for &p in packed {
            if p & CPP_BIT == 0 {
                self.tmp.push(StrId(p));
            } else if self.cpp {
                self.tail.push(StrId(p & !CPP_BIT));
            }
        }
        self.tmp.extend_from_slice(&self.tail);
        strings.intern_stack(&self.tmp)
    }
}

/// The C++ frames of the autograd engine that say what an allocation is (a gradient made by
/// `AccumulateGrad`, an autograd node's backward, the engine's thread): kept in the stack even
/// when C++ frames are not, since a CUDA backward runs on the engine's own thread and has no
/// Python frame to tell (docs/inference.md).
pub(crate) fn is_autograd_marker(name: &str) -> bool {
    name.contains("torch::autograd::AccumulateGrad::")
        || name.contains("torch::autograd::generated::")
        || name.contains("torch::autograd::Engine::thread_main")
}

/// C++ frames: unsymbolised (`??`), C/C++ sources, or PyTorch's `csrc` tree.
pub(crate) fn is_cpp(filename: &str) -> bool {
    filename == "??"
        || filename.is_empty()
        || [".cpp", ".h", ".cc", ".cu", ".hpp", ".cuh", ".c"]
            .iter()
            .any(|e| filename.ends_with(e))
        || filename.contains("/csrc/")
}
