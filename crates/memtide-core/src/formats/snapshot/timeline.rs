//! Replays one device's trace entries into a [`Trace`] the way MemoryViz builds its Active
//! Memory Timeline: every entry is one event; a block lives from `alloc` to
//! `free_completed`; frees whose alloc the ring buffer dropped, and blocks still allocated in
//! the final `segments` that the trace never allocated, are live from the start. Reserved
//! memory is the union of mapped address ranges (segment alloc/map add a range, free/unmap
//! remove what they overlap), seeded by undoing the trace's segment events from the final
//! segments. A device without history is one instant: the dump, event #0.

use super::block_sizes::{self, SegEvent};
use super::raw::{Action, Annotation, Raw, Row, Segment};
use super::rows::Reader;
use crate::trace::ranges::RangeSet;
use crate::trace::{
    AllocId, Bytes, Category, Clock, EventKind, Mark, MarkKind, Seq, StackId, StorageKind, StrId,
    Trace, Ts,
};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::{BTreeMap, BTreeSet};

/// Maps global (file-wide) interned ids into one trace's interner.
struct Localize {
    strs: Vec<u32>,
    stacks: Vec<u32>,
    tmp: Vec<StrId>,
}

const NONE: u32 = u32::MAX;

impl Localize {
    fn new(raw: &Raw) -> Localize {
        Localize {
            strs: vec![NONE; raw.strings.string_count()],
            stacks: vec![NONE; raw.strings.stack_count()],
            tmp: Vec::new(),
        }
    }

    fn str(&mut self, raw: &Raw, t: &mut Trace, g: StrId) -> StrId {
        if g.0 == 0 {
            return StrId(0);
        }
        match self.strs.get(g.0 as usize) {
            Some(&l) if l != NONE => StrId(l),
            Some(_) => {
                let l = match raw.strings.frame_ids(g) {
                    // A frame kept as parts: its file and name go through this cache too.
                    Some((file, line, name)) => {
                        let (file, name) = (self.str(raw, t, file), self.str(raw, t, name));
                        t.strings.intern_frame_ids(file, line, name)
                    }
                    None => t.strings.intern_from(&raw.strings, g),
                };
                self.strs[g.0 as usize] = l.0;
                l
            }
            None => StrId(0),
        }
    }

    fn stack(&mut self, raw: &Raw, t: &mut Trace, g: StackId) -> StackId {
        if g.0 == 0 {
            return StackId(0);
        }
        match self.stacks.get(g.0 as usize) {
            Some(&l) if l != NONE => StackId(l),
            Some(_) => {
                let mut tmp = std::mem::take(&mut self.tmp);
                tmp.clear();
                for &f in raw.strings.stack(g) {
                    let l = self.str(raw, t, f);
                    tmp.push(l);
                }
                let l = t.strings.intern_stack(&tmp);
                self.tmp = tmp;
                self.stacks[g.0 as usize] = l.0;
                l
            }
            None => StackId(0),
        }
    }
}

/// Reserved memory as mapped address ranges: disjoint pieces, each one segment storage.
/// `segment_alloc`/`segment_map` add a range, `segment_free`/`segment_unmap` remove whatever
/// they overlap (a piece, several, or part of one), so reserved is the measure of the union.
#[derive(Default)]
struct Mapped {
    /// start → (end, storage).
    pieces: BTreeMap<u64, (u64, AllocId)>,
    /// The union of the pieces, merged: where a new mapping's unmapped parts are found
    /// without walking every piece inside it (ranges mapped again and again, each shifted
    /// by a byte, made that quadratic).
    union: RangeSet,
    /// Bytes mapped again while already mapped (not counted twice).
    double_mapped: u64,
    /// Bytes unmapped that were not mapped.
    unmatched_unmap: u64,
}

impl Mapped {
    fn open_piece(&mut self, t: &mut Trace, a: u64, b: u64, stack: StackId, from_start: bool) {
        let id = if from_start {
            t.open_from_start(
                Bytes(b - a),
                Category::Unknown,
                StorageKind::Segment,
                StrId(0),
                stack,
                a,
            )
        } else {
            t.open(
                Bytes(b - a),
                Category::Unknown,
                StorageKind::Segment,
                StrId(0),
                stack,
                a,
            )
        };
        self.pieces.insert(a, (b, id));
        self.union.add(a, b);
    }

    fn overlapping(&self, a: u64, b: u64) -> Vec<(u64, u64, AllocId)> {
        let mut v: Vec<(u64, u64, AllocId)> = self
            .pieces
            .range(..b)
            .rev()
            .take_while(|&(_, &(e, _))| e > a)
            .map(|(&s, &(e, id))| (s, e, id))
            .collect();
        v.reverse();
        v
    }

    /// Maps `[a, b)`: only the parts not already mapped become new pieces.
    fn map(&mut self, t: &mut Trace, a: u64, b: u64, stack: StackId) {
        let gaps = self.union.gaps(a, b);
        let fresh: u64 = gaps.iter().map(|&(s, e)| e - s).sum();
        for (s, e) in gaps {
            self.open_piece(t, s, e, stack, false);
        }
        self.double_mapped += (b - a) - fresh;
    }

    /// Unmaps `[a, b)`: closes every piece it overlaps; the parts outside stay mapped.
    fn unmap(&mut self, t: &mut Trace, a: u64, b: u64) {
        let mut covered = 0u64;
        for (s, e, id) in self.overlapping(a, b) {
            self.pieces.remove(&s);
            t.close(id);
            covered += e.min(b) - s.max(a);
            let stack = t.storages.stack.get(id.idx()).copied().unwrap_or_default();
            if s < a {
                self.open_piece(t, s, a, stack, false);
            }
            if e > b {
                self.open_piece(t, b, e, stack, false);
            }
        }
        self.unmatched_unmap += (b - a) - covered;
        self.union.remove(a, b);
    }

    fn total(&self) -> u64 {
        self.pieces
            .iter()
            .fold(0u64, |acc, (&s, &(e, _))| acc.saturating_add(e - s))
    }
}

/// `[addr, addr + size)`, clamped at the top of the address space.
fn range(addr: u64, size: u64) -> (u64, u64) {
    (addr, addr.saturating_add(size))
}

/// `[a, b)` cut at every edge inside it.
fn split_at_edges(a: u64, b: u64, edges: &BTreeSet<u64>) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut cur = a;
    if a < b {
        for &e in edges.range((std::ops::Bound::Excluded(a), std::ops::Bound::Excluded(b))) {
            out.push((cur, e));
            cur = e;
        }
    }
    if cur < b {
        out.push((cur, b));
    }
    out
}

/// Builds the trace of CUDA device `d`.
pub fn build(raw: &Raw, d: usize, source: &str) -> Trace {
    let empty = Vec::new();
    let rows = raw.devices.get(d).unwrap_or(&empty);
    let segs: Vec<&Segment> = raw
        .segments
        .iter()
        .filter(|s| s.device == d as u64)
        .collect();
    build_one(
        raw,
        rows,
        &segs,
        format!("cuda:{d}"),
        Some(d as u64),
        source,
        Sizes::Blocks,
    )
}

/// What a device's replay counts for a block.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sizes {
    /// The block the caching allocator held (CUDA devices: what `memory_allocated()` counts).
    Blocks,
    /// What the caller asked for (pinned host memory, whose allocator rounds differently).
    Requested,
}

/// Builds the trace of pinned host memory (`host_traces` / `host_segments`).
pub(crate) fn build_host(raw: &Raw, source: &str) -> Trace {
    let segs: Vec<&Segment> = raw.host_segments.iter().collect();
    let mut t = build_one(
        raw,
        &raw.host_rows,
        &segs,
        "host:pinned".into(),
        None,
        source,
        Sizes::Requested,
    );
    t.meta.push((
        "note".into(),
        "pinned host memory (host_segments / host_traces), shown as its own device".into(),
    ));
    t
}

/// Merges two kept-field JSON objects (either may be `StrId(0)`).
fn merge_extra(raw: &Raw, a: StrId, b: StrId) -> Option<String> {
    let parse = |x: StrId| -> serde_json::Map<String, serde_json::Value> {
        if x.0 == 0 {
            return serde_json::Map::new();
        }
        match serde_json::from_str(raw.strings.text(x)) {
            Ok(serde_json::Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        }
    };
    let mut m = parse(a);
    m.extend(parse(b));
    (!m.is_empty()).then(|| serde_json::Value::Object(m).to_string())
}

/// Replays `rows` (one device's trace, in order) with that device's final `segs`.
fn build_one(
    raw: &Raw,
    rows: &[u32],
    segs: &[&Segment],
    device: String,
    ann_device: Option<u64>,
    source: &str,
    sizes: Sizes,
) -> Trace {
    let mut r = Replay::new(raw, rows, device, source);
    r.open_initial_reserve(segs, rows);
    for (i, &row) in rows.iter().enumerate() {
        r.entry(i, row);
    }
    r.rows.end_pass();
    if sizes == Sizes::Blocks && !r.history_less && (raw.has_segments_key || !segs.is_empty()) {
        r.check_live_against_dump(segs);
    }
    let dump = r.open_dump_blocks(segs, sizes);
    r.check_reserve(segs, dump.final_reserved);
    if sizes == Sizes::Blocks && !r.history_less {
        block_sizes::apply(&mut r.t, raw, segs, &r.seg_events);
    }
    if let Some(d) = ann_device {
        add_annotations(&mut r.t, &raw.annotations, d);
    }
    r.finish(dump)
}

/// Counts of entries the replay could not use as they are, for the warnings.
#[derive(Default)]
struct Oddities {
    unmatched_req: u64,
    overwritten: u64,
    unknown: u64,
    ooms: u64,
    annotated: u64,
    annotate_missed: u64,
    user_marks: u64,
}

/// Blocks allocated at dump time that the trace never allocated ("ghosts").
#[derive(Default)]
struct DumpBlocks {
    count: u64,
    requested: u64,
    rounded: u64,
    final_reserved: u64,
}

/// One device's replay, as MemoryViz does it: allocations by address, reserved ranges
/// mapped and unmapped, marks for OOMs and user annotations.
struct Replay<'r> {
    raw: &'r Raw,
    /// The device's rows: read back for the initial reserve, then passed in order.
    rows: Reader<'r>,
    t: Trace,
    loc: Localize,
    live: FxHashMap<u64, AllocId>,
    mapped: Mapped,
    /// The segment entries in order, for the block sizes' replay.
    seg_events: Vec<SegEvent>,
    has_time: bool,
    history_less: bool,
    last_ts: i64,
    n: Oddities,
}

impl<'r> Replay<'r> {
    fn new(raw: &'r Raw, rows: &[u32], device: String, source: &str) -> Self {
        let mut t = Trace::new(device, source, "snapshot");
        let mut reader = raw.rows.reader();
        let has_time = rows
            .iter()
            .any(|&r| reader.get(r).is_some_and(|x| x.has_time));
        t.clock = if has_time { Clock::Us } else { Clock::Seq };
        // `time_us` is UTC µs since the epoch.
        t.wall_offset_ns = has_time.then_some(0);
        if let Some(a) = &raw.allocator_settings {
            t.meta.push(("allocator_settings".into(), a.clone()));
            settings_warnings(&mut t, a);
        }
        // One event per entry; about one storage per alloc (half the entries): no regrowth.
        t.reserve(rows.len().max(1), rows.len() / 2);
        let history_less = rows.is_empty();
        if history_less {
            // No history: one instant, the dump itself (event #0), where everything opens.
            t.push_event(Ts(0), EventKind::Other);
            t.clock = Clock::Seq;
        }
        Replay {
            raw,
            rows: reader,
            t,
            loc: Localize::new(raw),
            live: FxHashMap::default(),
            mapped: Mapped::default(),
            seg_events: Vec::new(),
            has_time,
            history_less,
            last_ts: 0,
            n: Oddities::default(),
        }
    }

    /// Reserved before the first event: the final mapped ranges with the trace's segment
    /// events undone, newest first (an unmap puts its range back, a map takes it away); each
    /// range opens with the stack of the segment it lies in.
    fn open_initial_reserve(&mut self, segs: &[&Segment], rows: &[u32]) {
        let raw = self.raw;
        let mut initial = RangeSet::default();
        // Where one segment ends and another begins: the merged set joins segments the
        // driver placed side by side, and each is opened as its own piece (an Nsight export
        // matches PyTorch's segments by address and size).
        let mut edges: BTreeSet<u64> = BTreeSet::new();
        for s in segs {
            let (a, b) = range(s.address, s.total_size);
            initial.add(a, b);
            edges.extend([a, b]);
        }
        if !self.history_less {
            // Only segment events matter here: the bits say which rows are, without reading
            // every row of a long trace.
            for &r in rows.iter().rev().filter(|&&r| raw.is_segment_row(r)) {
                let Some(row) = self.rows.get(r) else {
                    continue;
                };
                let (a, b) = range(row.addr, row.size);
                match row.action {
                    Action::SegmentAlloc | Action::SegmentMap => initial.remove(a, b),
                    Action::SegmentFree | Action::SegmentUnmap => {
                        initial.add(a, b);
                        edges.extend([a, b]);
                    }
                    _ => {}
                }
            }
        }
        // Segment stacks by base address, for ranges live from the start.
        let seg_at: BTreeMap<u64, (u64, StackId)> = segs
            .iter()
            .map(|s| (s.address, (s.address.saturating_add(s.total_size), s.stack)))
            .collect();
        let pieces: Vec<(u64, u64)> = initial
            .iter()
            .flat_map(|(a, b)| split_at_edges(a, b, &edges))
            .collect();
        for (a, b) in pieces {
            let stack = seg_at
                .range(..=a)
                .next_back()
                .filter(|&(_, &(e, _))| e > a)
                .map_or(StackId(0), |(_, &(_, st))| st);
            let stack = self.loc.stack(raw, &mut self.t, stack);
            self.mapped
                .open_piece(&mut self.t, a, b, stack, !self.history_less);
        }
        if !segs.is_empty() {
            self.t.has_reserved = true;
        }
    }

    /// The time of entry `i`: its own, else the last one seen (entries without time keep
    /// their order); without any time, the entry number.
    fn time_of(&mut self, i: usize, row: &Row) -> Ts {
        let ts = if !self.has_time {
            i as i64
        } else if row.has_time {
            row.time_us.saturating_mul(1000)
        } else {
            self.last_ts
        };
        self.last_ts = ts;
        Ts(ts)
    }

    /// Entry `i` of the device's trace (`r`: its row in the file).
    fn entry(&mut self, i: usize, r: u32) {
        let Some(row) = self.rows.pass(r) else {
            return;
        };
        let ts = self.time_of(i, &row);
        match row.action {
            Action::Alloc => self.alloc(ts, r, &row),
            Action::FreeRequested => self.free_requested(ts, &row),
            Action::FreeCompleted => self.free_completed(ts, r, &row),
            Action::SegmentAlloc | Action::SegmentMap => {
                let at = self.t.push_event(ts, EventKind::Reserve);
                self.note_segment(at, &row);
                let stack = self.loc.stack(self.raw, &mut self.t, row.stack);
                let (a, b) = range(row.addr, row.size);
                self.mapped.map(&mut self.t, a, b, stack);
            }
            Action::SegmentFree | Action::SegmentUnmap => {
                let at = self.t.push_event(ts, EventKind::Unreserve);
                self.note_segment(at, &row);
                let (a, b) = range(row.addr, row.size);
                self.mapped.unmap(&mut self.t, a, b);
            }
            Action::Oom => self.oom(ts, r, &row),
            Action::Annotate => self.annotate(ts, r, &row),
            Action::UserDefined => self.user_mark(ts, r),
            Action::Snapshot => {
                self.t.push_event(ts, EventKind::Other);
            }
            Action::Unknown => {
                self.t.push_event(ts, EventKind::Other);
                self.n.unknown += 1;
            }
        }
    }

    /// Keeps a segment entry for the block sizes' replay.
    fn note_segment(&mut self, at: Seq, row: &Row) {
        self.seg_events.push(SegEvent {
            at,
            action: row.action,
            addr: row.addr,
            size: row.size,
        });
    }

    /// Keeps the fields of row `r` the reader kept (`extra`) with storage `id`.
    fn keep_extra(&mut self, r: u32, id: AllocId) {
        if let Some(&x) = self.raw.row_extra.get(&r) {
            let x = self.loc.str(self.raw, &mut self.t, x);
            self.t.extra.insert(id, x);
        }
    }

    /// Opens the block of row `r` (its stack, name and kept fields) now, or live from the
    /// start when `from_start`.
    fn open_row(&mut self, r: u32, row: &Row, from_start: bool) -> AllocId {
        let stack = self.loc.stack(self.raw, &mut self.t, row.stack);
        let name = self.loc.str(self.raw, &mut self.t, self.raw.name_of(r));
        // PyTorch's own category when the entry carries one (its memory profiler's, written by
        // `_profile_to_snapshot`): recorded, never inferred over.
        let cat = row.category.unwrap_or(Category::Unknown);
        let (size, kind) = (Bytes(row.size), StorageKind::Block);
        let id = if from_start {
            self.t
                .open_from_start(size, cat, kind, name, stack, row.addr)
        } else {
            self.t.open(size, cat, kind, name, stack, row.addr)
        };
        self.keep_extra(r, id);
        id
    }

    /// `alloc`: a block opens at its address.
    fn alloc(&mut self, ts: Ts, r: u32, row: &Row) {
        self.t.push_event(ts, EventKind::Alloc);
        let id = self.open_row(r, row, false);
        // MemoryViz keeps an element whose address is re-allocated without a free.
        if self.live.insert(row.addr, id).is_some() {
            self.n.overwritten += 1;
        }
    }

    /// `free_requested`: the tensor is gone; the block waits for its stream's events (the
    /// event itself marks where; the block stays live until `free_completed`).
    fn free_requested(&mut self, ts: Ts, row: &Row) {
        self.t.push_event(ts, EventKind::FreeRequested);
        if !self.live.contains_key(&row.addr) {
            self.n.unmatched_req += 1;
        }
    }

    /// `free_completed`: the block closes (one the ring buffer dropped the alloc of was live
    /// from the start until here, with the free site as its only stack).
    fn free_completed(&mut self, ts: Ts, r: u32, row: &Row) {
        self.t.push_event(ts, EventKind::Free);
        if let Some(id) = self.live.remove(&row.addr) {
            self.t.close(id);
            return;
        }
        let id = self.open_row(r, row, true);
        self.t.close(id);
        self.t.unmatched_frees += 1;
    }

    /// `oom`: a mark with the request and the device's free bytes.
    fn oom(&mut self, ts: Ts, r: u32, row: &Row) {
        let at = self.t.push_event(ts, EventKind::Oom);
        let name = self.t.strings.intern("OOM");
        // The failed request's own stack (PyTorch records the frames of the OOM entry).
        let stack = self.loc.stack(self.raw, &mut self.t, row.stack);
        self.t.add_mark(Mark {
            at,
            ts,
            name,
            kind: MarkKind::Oom,
            end: None,
            size: Some(Bytes(row.size)),
            free: self.raw.device_free.get(&r).map(|&f| Bytes(f)),
            stack,
        });
        self.n.ooms += 1;
    }

    /// `annotate`: adds to the live allocation's user_metadata (never replaces it).
    fn annotate(&mut self, ts: Ts, r: u32, row: &Row) {
        self.t.push_event(ts, EventKind::Other);
        let added = self.raw.name_of(r);
        match self.live.get(&row.addr) {
            Some(&id) if added.0 != 0 => {
                let add = self.raw.strings.str(added);
                let old = self.t.name(id);
                let text = if old.is_empty() {
                    add.to_string()
                } else if old.split("; ").any(|p| p == add) {
                    old.to_string()
                } else {
                    format!("{old}; {add}")
                };
                let name = self.t.strings.intern(&text);
                self.t.storages.name.set(id.idx(), name);
                self.n.annotated += 1;
            }
            Some(_) => {}
            None => self.n.annotate_missed += 1,
        }
    }

    /// `user_defined`: a note mark.
    fn user_mark(&mut self, ts: Ts, r: u32) {
        let at = self.t.push_event(ts, EventKind::Mark);
        let name = self.raw.name_of(r);
        let text = if name.0 == 0 {
            "user_defined"
        } else {
            self.raw.strings.text(name)
        };
        let name = self.t.strings.intern(text);
        self.t.add_mark(Mark {
            at,
            ts,
            name,
            kind: MarkKind::Note,
            end: None,
            size: None,
            free: None,
            stack: StackId(0),
        });
        self.n.user_marks += 1;
    }

    /// Blocks allocated at dump time that the trace never allocated ("ghosts"): live for the
    /// whole trace, with the block's own stack. Addresses are running sums, as MemoryViz
    /// does. Without history they open at the dump (event #0) instead. A CUDA device counts
    /// each at its block size (the request is kept beside it), pinned host memory at its
    /// request.
    fn open_dump_blocks(&mut self, segs: &[&Segment], sizes: Sizes) -> DumpBlocks {
        let raw = self.raw;
        let mut d = DumpBlocks {
            final_reserved: segs
                .iter()
                .fold(0u64, |acc, s| acc.saturating_add(s.total_size)),
            ..DumpBlocks::default()
        };
        for s in segs {
            let mut addr = s.address;
            for b in &s.blocks {
                if b.state == super::raw::BlockState::Allocated && !self.live.contains_key(&addr) {
                    let stack = self.loc.stack(raw, &mut self.t, b.stack);
                    let text = merge_extra(raw, s.extra, b.extra);
                    let name = text
                        .as_deref()
                        .and_then(|x| serde_json::from_str::<serde_json::Value>(x).ok())
                        .and_then(|v| {
                            v.get("user_metadata")
                                .and_then(|m| m.as_str().map(String::from))
                        })
                        .map_or(StrId(0), |n| self.t.strings.intern(&n));
                    let counted = match sizes {
                        Sizes::Blocks => b.size,
                        Sizes::Requested => b.requested,
                    };
                    let (size, kind, flag) =
                        (Bytes(counted), Category::Unknown, StorageKind::Block);
                    let id = if self.history_less {
                        self.t.open(size, kind, flag, name, stack, addr)
                    } else {
                        self.t.open_from_start(size, kind, flag, name, stack, addr)
                    };
                    self.t.requested.set(id, b.requested, counted);
                    if let Some(x) = text {
                        let x = self.t.strings.intern(&x);
                        self.t.extra.insert(id, x);
                    }
                    d.count += 1;
                    d.requested = d.requested.saturating_add(b.requested);
                    d.rounded = d.rounded.saturating_add(b.size);
                }
                addr = addr.wrapping_add(b.size);
            }
        }
        d
    }

    /// The history must end with the blocks the dump holds: a block it holds live at its end
    /// whose address the final segments show free (an inactive block, or no segment at all)
    /// means the history and the dump disagree — recording stopped before the dump, or the
    /// history missed frees — and the end of the history is not the dump's state. Said with
    /// the count and the bytes, and both totals (before the dump's own blocks, the ghosts,
    /// are opened). A segment listed without its blocks tells nothing about its addresses.
    fn check_live_against_dump(&mut self, segs: &[&Segment]) {
        let mut held: FxHashSet<u64> = FxHashSet::default();
        let mut unknown: Vec<(u64, u64)> = Vec::new();
        let mut dump_allocated = 0u64;
        for s in segs {
            if s.blocks.is_empty() {
                unknown.push((s.address, s.address.saturating_add(s.total_size)));
                continue;
            }
            let mut addr = s.address;
            for b in &s.blocks {
                match b.state {
                    super::raw::BlockState::Inactive => {}
                    super::raw::BlockState::Allocated => {
                        dump_allocated = dump_allocated.saturating_add(b.size);
                        held.insert(addr);
                    }
                    _ => {
                        held.insert(addr);
                    }
                }
                addr = addr.wrapping_add(b.size);
            }
        }
        unknown.sort_unstable();
        let (mut count, mut bytes, mut live) = (0u64, 0u64, 0u64);
        for (&addr, &id) in &self.live {
            let size = self.t.size(id).0;
            live = live.saturating_add(size);
            let in_unknown = match unknown.partition_point(|&(a, _)| a <= addr) {
                0 => false,
                i => addr < unknown[i - 1].1,
            };
            if !held.contains(&addr) && !in_unknown {
                count += 1;
                bytes = bytes.saturating_add(size);
            }
        }
        if count > 0 {
            self.t.warn(format!(
                "the history disagrees with its own dump: it ends with {count} block{} ({bytes} B, {}) live that the dump's segments show free; {live} B live at the end of the history, {dump_allocated} B allocated in the dump (recording may have stopped before the dump, or the history missed their frees): the final figures are the history's, not the dump's",
                if count == 1 { "" } else { "s" },
                crate::trace::human_bytes(bytes)
            ));
        }
    }

    /// The replayed reserve must end where the final segments say.
    fn check_reserve(&mut self, segs: &[&Segment], final_reserved: u64) {
        let end_reserved = self.mapped.total();
        let t = &mut self.t;
        if !segs.is_empty() && end_reserved != final_reserved {
            t.warn_doubtful(format!(
                "replaying segment events leaves {end_reserved} B reserved but the final segments total {final_reserved} B; reserved figures may be off"
            ));
        }
        if self.mapped.double_mapped > 0 {
            t.warn(format!(
                "{} B were mapped again while already mapped (counted once)",
                self.mapped.double_mapped
            ));
        }
        if self.mapped.unmatched_unmap > 0 {
            t.warn(format!(
                "{} B were unmapped or freed without being mapped (ignored)",
                self.mapped.unmatched_unmap
            ));
        }
    }

    /// The note or warnings about what the replay met, and the trace.
    fn finish(self, dump: DumpBlocks) -> Trace {
        let Replay {
            raw,
            mut t,
            history_less,
            n,
            ..
        } = self;
        let Oddities {
            unmatched_req,
            overwritten,
            unknown,
            ooms,
            annotated,
            annotate_missed,
            user_marks,
        } = n;
        if history_less {
            t.one_instant = true;
            // A fact about the file, not a doubt about the figures: a note, not a warning.
            let note = format!(
                "the snapshot has no trace history (device_traces is empty or absent: memory history was not recorded): one instant, the state at the dump, shown as event #0; {} blocks, {} B requested ({} B rounded, as memory_allocated() counts), {} B reserved",
                dump.count, dump.requested, dump.rounded, dump.final_reserved
            );
            t.meta.push(("note".into(), note));
        } else if dump.count > 0 {
            t.warn(format!(
                "{} blocks ({} B requested, {} B in blocks) allocated at dump time have no alloc in the trace: counted live for the whole trace",
                dump.count, dump.requested, dump.rounded
            ));
        }
        if t.unmatched_frees > 0 {
            t.warn(format!(
                "{} frees have no alloc in the trace (the ring buffer dropped it): counted live from the start until their free",
                t.unmatched_frees
            ));
        }
        if unmatched_req > 0 {
            t.warn(format!(
                "{unmatched_req} free_requested entries name an address with no live alloc (ignored)"
            ));
        }
        if overwritten > 0 {
            t.warn(format!(
                "{overwritten} allocs reuse an address that was never freed; the earlier block stays live (as MemoryViz shows it)"
            ));
        }
        if annotate_missed > 0 {
            t.warn(format!(
                "{annotate_missed} annotate entries name an address with no live allocation (ignored)"
            ));
        }
        if annotated > 0 || user_marks > 0 {
            t.meta.push((
                "annotations".into(),
                serde_json::json!({"annotate": annotated, "user_defined": user_marks}).to_string(),
            ));
        }
        if unknown > 0 {
            // Doubtful: an action this reader does not know may have allocated or freed
            // memory (a newer PyTorch), so the figures may miss it; `check` will not vouch.
            t.warn_doubtful(format!(
                "{unknown} trace entries with unknown actions were ignored (file-wide: {}); if they allocated or freed memory the figures miss it",
                super::raw::unknown_actions_text(&raw.unknown_actions)
            ));
        }
        if ooms > 0 {
            t.warn(format!("{ooms} out-of-memory events (marked)"));
        }
        t
    }
}

/// Warnings from `allocator_settings`: a history cut by the ring buffer.
fn settings_warnings(t: &mut Trace, text: &str) {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(text) else {
        return;
    };
    if v.get("trace_alloc_overflowed").and_then(|x| x.as_bool()) == Some(true) {
        let max = v
            .get("trace_alloc_max_entries")
            .and_then(|x| x.as_u64())
            .map_or("unknown".to_string(), |m| m.to_string());
        t.warn_doubtful(format!(
            "history was cut: allocator_settings.trace_alloc_overflowed is true (the ring buffer of trace_alloc_max_entries = {max} entries dropped the oldest ones). Memory allocated and freed before the first kept entry is invisible, so the real peak may be higher than the peak shown (a lower bound); frees without allocs and blocks live at dump time are counted from the start"
        ));
    }
}

/// `external_annotations` START/END pairs → marks (steps, phases, other annotations).
fn add_annotations(t: &mut Trace, anns: &[Annotation], d: u64) {
    if t.is_empty() {
        return;
    }
    let mut open: Vec<(String, usize)> = Vec::new();
    let mut marks: Vec<Mark> = Vec::new();
    let mine: Vec<&Annotation> = anns
        .iter()
        .filter(|a| a.device.is_none_or(|x| x == d))
        .collect();
    let times: Vec<Ts> = mine
        .iter()
        .map(|a| Ts(a.time_us.saturating_mul(1000)))
        .collect();
    let ats = if t.clock.has_time() {
        t.seq_at_times(&times)
    } else {
        Vec::new()
    };
    for (i, a) in mine.into_iter().enumerate() {
        let ts = times[i];
        let at = ats.get(i).copied().flatten().unwrap_or(Seq(0));
        if a.start {
            let name = t.strings.intern(&a.name);
            open.push((a.name.clone(), marks.len()));
            marks.push(Mark {
                at,
                ts,
                name,
                kind: mark_kind(&a.name),
                end: None,
                size: None,
                free: None,
                stack: StackId(0),
            });
        } else if let Some(p) = open.iter().rposition(|(n, _)| *n == a.name) {
            let (_, i) = open.remove(p);
            if let Some(m) = marks.get_mut(i) {
                m.end = Some(at);
            }
        }
    }
    marks.append(&mut t.marks);
    marks.sort_by_key(|m| m.at);
    for m in marks {
        t.add_mark(m);
    }
}

/// Step-like names (`ProfilerStep#3`, `step1`, `step0_warmup`) are steps; forward /
/// backward / optimizer scopes are phases; anything else is a plain annotation.
fn mark_kind(name: &str) -> MarkKind {
    let l = name.to_ascii_lowercase();
    let stepnum = l
        .strip_prefix("step")
        .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()));
    let both = ["forward_backward", "fwd_bwd"]
        .iter()
        .any(|w| l.contains(w));
    if l.starts_with("profilerstep") || stepnum {
        MarkKind::Step
    } else if both {
        // `forward_backward_step` drives both passes: no one phase.
        MarkKind::Annotation
    } else if ["forward", "backward", "optimizer", "zero_grad"]
        .iter()
        .any(|k| l.contains(k))
    {
        MarkKind::Phase
    } else {
        MarkKind::Annotation
    }
}
