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
    Unknown,
}

impl Action {
    pub const KNOWN: [(&'static str, Action); 10] = [
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
    ];

    pub fn parse(s: &str) -> Action {
        Action::KNOWN
            .iter()
            .find(|(n, _)| *n == s)
            .map_or(Action::Unknown, |&(_, a)| a)
    }
}

/// One trace entry, columnar-ready (40 bytes).
#[derive(Clone, Copy, Debug)]
pub struct Row {
    pub addr: u64,
    pub size: u64,
    /// `time_us` (µs since the epoch); meaningful only when `has_time`.
    pub time_us: i64,
    /// Stack in [`Raw::strings`] (global ids).
    pub stack: StackId,
    /// `user_metadata` when not empty (global id), else `StrId(0)`.
    pub name: StrId,
    pub action: Action,
    pub has_time: bool,
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
}

#[derive(Clone, Debug)]
pub struct Segment {
    pub device: u64,
    pub address: u64,
    pub total_size: u64,
    pub blocks: Vec<Block>,
}

#[derive(Clone, Debug)]
pub struct Annotation {
    /// None: applies to every device.
    pub device: Option<u64>,
    pub name: String,
    pub start: bool,
    pub time_us: i64,
}

/// The whole decoded snapshot.
#[derive(Debug, Default)]
pub struct Raw {
    /// Frames ("file:line:name") and stacks, shared by every device.
    pub strings: Interner,
    pub rows: Vec<Row>,
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
}

impl Raw {
    pub fn new() -> Raw {
        Raw {
            strings: Interner::new(),
            ..Raw::default()
        }
    }
}

/// Turns frames into interned strings and stacks, hiding C++ frames unless asked.
#[derive(Debug, Default)]
pub struct Frames {
    pub cpp: bool,
    buf: String,
    tmp: Vec<StrId>,
    tail: Vec<StrId>,
}

/// Bit set on a packed frame id when the frame is a C++ one.
pub const CPP_BIT: u32 = 1 << 31;

impl Frames {
    pub fn new(cpp: bool) -> Frames {
        Frames {
            cpp,
            ..Frames::default()
        }
    }

    /// Interns `filename:line:name`; returns the id with [`CPP_BIT`] set for C++ frames.
    pub fn frame(&mut self, strings: &mut Interner, filename: &str, line: i64, name: &str) -> u32 {
        use std::fmt::Write as _;
        self.buf.clear();
        let _ = write!(self.buf, "{filename}:{line}:{name}");
        let id = strings.intern(&self.buf).0 & !CPP_BIT;
        if is_cpp(filename) {
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

/// C++ frames: unsymbolised (`??`), C/C++ sources, or PyTorch's `csrc` tree.
pub fn is_cpp(filename: &str) -> bool {
    filename == "??"
        || filename.is_empty()
        || [".cpp", ".h", ".cc", ".cu", ".hpp", ".cuh", ".c"]
            .iter()
            .any(|e| filename.ends_with(e))
        || filename.contains("/csrc/")
}
