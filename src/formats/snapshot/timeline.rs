//! Replays one device's trace entries into a [`Trace`] the way MemoryViz builds its Active
//! Memory Timeline: every entry is one event; a block lives from `alloc` to
//! `free_completed`; frees whose alloc the ring buffer dropped, and blocks still allocated in
//! the final `segments` that the trace never allocated, are live from the start. Reserved
//! memory comes from segment events, seeded so that it ends at the final segments' total.

use super::raw::{Action, Annotation, Raw};
use crate::trace::{
    AllocId, Bytes, Category, Clock, EventKind, Mark, MarkKind, Seq, StackId, StorageKind, StrId,
    Trace, Ts,
};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

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
                let l = t.strings.intern(raw.strings.str(g));
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

/// Open reserved ranges by base address: (storage, size).
type Segs = BTreeMap<u64, (AllocId, u64)>;

/// Builds the trace of device `d`.
pub fn build(raw: &Raw, d: usize, source: &str) -> Trace {
    let mut t = Trace::new(format!("cuda:{d}"), source, "snapshot");
    let empty = Vec::new();
    let rows = raw.devices.get(d).unwrap_or(&empty);
    let mut loc = Localize::new(raw);
    let has_time = rows
        .iter()
        .any(|&r| raw.rows.get(r as usize).is_some_and(|x| x.has_time));
    t.clock = if has_time { Clock::Us } else { Clock::Seq };

    // One event per entry; about one storage per alloc (half the entries): no regrowth.
    t.reserve(rows.len(), rows.len() / 2);
    let mut live: FxHashMap<u64, AllocId> = FxHashMap::default();
    let mut segs: Segs = BTreeMap::new();
    let mut last_ts = 0i64;
    let (mut unmatched_req, mut overwritten, mut unknown, mut ooms) = (0u64, 0u64, 0u64, 0u64);

    for (i, &r) in rows.iter().enumerate() {
        let Some(row) = raw.rows.get(r as usize).copied() else {
            continue;
        };
        let ts = if !has_time {
            i as i64
        } else if row.has_time {
            row.time_us.saturating_mul(1000)
        } else {
            last_ts
        };
        last_ts = ts;
        let ts = Ts(ts);
        match row.action {
            Action::Alloc => {
                t.push_event(ts, EventKind::Alloc);
                let stack = loc.stack(raw, &mut t, row.stack);
                let name = loc.str(raw, &mut t, row.name);
                let id = t.open(
                    Bytes(row.size),
                    Category::Unknown,
                    StorageKind::Block,
                    name,
                    stack,
                    row.addr,
                );
                // MemoryViz keeps an element whose address is re-allocated without a free.
                if live.insert(row.addr, id).is_some() {
                    overwritten += 1;
                }
            }
            Action::FreeRequested => {
                let at = t.push_event(ts, EventKind::FreeRequested);
                match live.get(&row.addr) {
                    Some(&id) => {
                        t.free_requested.insert(id, at);
                    }
                    None => unmatched_req += 1,
                }
            }
            Action::FreeCompleted => {
                t.push_event(ts, EventKind::Free);
                match live.remove(&row.addr) {
                    Some(id) => t.close(id),
                    None => {
                        // The ring buffer dropped the alloc: live from the start until here,
                        // with the free site as its only stack.
                        let stack = loc.stack(raw, &mut t, row.stack);
                        let name = loc.str(raw, &mut t, row.name);
                        let id = t.open_from_start(
                            Bytes(row.size),
                            Category::Unknown,
                            StorageKind::Block,
                            name,
                            stack,
                            row.addr,
                        );
                        t.close(id);
                        t.unmatched_frees += 1;
                    }
                }
            }
            Action::SegmentAlloc | Action::SegmentMap => {
                t.push_event(ts, EventKind::Reserve);
                let stack = loc.stack(raw, &mut t, row.stack);
                let id = t.open(
                    Bytes(row.size),
                    Category::Unknown,
                    StorageKind::Segment,
                    StrId(0),
                    stack,
                    row.addr,
                );
                segs.insert(row.addr, (id, row.size));
            }
            Action::SegmentFree | Action::SegmentUnmap => {
                t.push_event(ts, EventKind::Unreserve);
                seg_close(&mut t, &mut segs, row.addr, row.size);
            }
            Action::Oom => {
                let at = t.push_event(ts, EventKind::Oom);
                let name = t.strings.intern("OOM");
                t.add_mark(Mark {
                    at,
                    ts,
                    name,
                    kind: MarkKind::Oom,
                    end: None,
                    size: Some(Bytes(row.size)),
                    free: raw.device_free.get(&r).map(|&f| Bytes(f)),
                });
                ooms += 1;
            }
            Action::Annotate => {
                t.push_event(ts, EventKind::Other);
                if let Some(&id) = live.get(&row.addr) {
                    let name = loc.str(raw, &mut t, row.name);
                    if let Some(n) = t.storages.name.get_mut(id.idx()) {
                        *n = name;
                    }
                }
            }
            Action::Snapshot => {
                t.push_event(ts, EventKind::Other);
            }
            Action::Unknown => {
                t.push_event(ts, EventKind::Other);
                unknown += 1;
            }
        }
    }

    // Blocks allocated at dump time that the trace never allocated ("ghosts"): live for the
    // whole trace, with the block's own stack. Addresses are running sums, as MemoryViz does.
    let mut ghosts = (0u64, 0u64);
    let mut final_reserved = 0u64;
    let mut any_segment = false;
    for s in raw.segments.iter().filter(|s| s.device == d as u64) {
        any_segment = true;
        final_reserved = final_reserved.saturating_add(s.total_size);
        let mut addr = s.address;
        for b in &s.blocks {
            if b.state == super::raw::BlockState::Allocated && !live.contains_key(&addr) {
                let stack = loc.stack(raw, &mut t, b.stack);
                t.open_from_start(
                    Bytes(b.requested),
                    Category::Unknown,
                    StorageKind::Block,
                    StrId(0),
                    stack,
                    addr,
                );
                ghosts.0 += 1;
                ghosts.1 += b.requested;
            }
            addr = addr.wrapping_add(b.size);
        }
    }

    // Reserved before the first event: whatever makes the replay end at the final total.
    if any_segment || t.has_reserved {
        let open_now: u64 = segs.values().map(|&(_, s)| s).sum::<u64>()
            + (0..t.storage_count())
                .map(|i| AllocId(i as u32))
                .filter(|&id| {
                    t.storage_kind(id) == StorageKind::Segment
                        && t.is_from_start(id)
                        && t.end(id).is_none()
                })
                .map(|id| t.size(id).0)
                .sum::<u64>();
        if final_reserved > open_now {
            t.open_from_start(
                Bytes(final_reserved - open_now),
                Category::Unknown,
                StorageKind::Segment,
                StrId(0),
                StackId(0),
                0,
            );
        } else if final_reserved < open_now && any_segment {
            t.warn(format!(
                "the final segments total {final_reserved} B but replaying segment events leaves {open_now} B reserved; reserved figures may be off"
            ));
        }
    }

    add_annotations(&mut t, &raw.annotations, d as u64);

    if t.unmatched_frees > 0 {
        t.warn(format!(
            "{} frees have no alloc in the trace (the ring buffer dropped it): counted live from the start until their free",
            t.unmatched_frees
        ));
    }
    if ghosts.0 > 0 {
        t.warn(format!(
            "{} blocks ({} B) allocated at dump time have no alloc in the trace: counted live for the whole trace",
            ghosts.0, ghosts.1
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
    if unknown > 0 {
        let names: Vec<String> = raw
            .unknown_actions
            .iter()
            .map(|(k, v)| format!("{k} ×{v}"))
            .collect();
        t.warn(format!(
            "{unknown} trace entries with unknown actions were ignored (file-wide: {})",
            names.join(", ")
        ));
    }
    if ooms > 0 {
        t.warn(format!("{ooms} out-of-memory events (marked)"));
    }
    t
}

/// Closes reserved bytes at `addr`: the segment that starts there, or the part of one that
/// contains the range (expandable segments unmap pieces); else reserved from the start.
fn seg_close(t: &mut Trace, segs: &mut Segs, addr: u64, size: u64) {
    if let Some(&(id, s)) = segs.get(&addr) {
        if s == size {
            segs.remove(&addr);
            t.close(id);
            return;
        }
    }
    let containing = segs
        .range(..=addr)
        .next_back()
        .map(|(&a, &(id, s))| (a, id, s))
        .filter(|&(a, _, s)| a.saturating_add(s) >= addr.saturating_add(size));
    if let Some((a, id, s)) = containing {
        segs.remove(&a);
        t.close(id);
        let left = addr - a;
        let right = (a + s) - (addr + size);
        for (base, n) in [(a, left), (addr + size, right)] {
            if n > 0 {
                let stack = t.storages.stack.get(id.idx()).copied().unwrap_or_default();
                let nid = t.open(
                    Bytes(n),
                    Category::Unknown,
                    StorageKind::Segment,
                    StrId(0),
                    stack,
                    base,
                );
                segs.insert(base, (nid, n));
            }
        }
        return;
    }
    let id = t.open_from_start(
        Bytes(size),
        Category::Unknown,
        StorageKind::Segment,
        StrId(0),
        StackId(0),
        addr,
    );
    t.close(id);
}

/// `external_annotations` START/END pairs → marks (steps, phases, other annotations).
fn add_annotations(t: &mut Trace, anns: &[Annotation], d: u64) {
    if t.is_empty() {
        return;
    }
    let mut open: Vec<(String, usize)> = Vec::new();
    let mut marks: Vec<Mark> = Vec::new();
    for a in anns.iter().filter(|a| a.device.is_none_or(|x| x == d)) {
        let ts = Ts(a.time_us.saturating_mul(1000));
        let at = if t.clock.has_time() {
            t.seq_at_time(ts).unwrap_or(Seq(0))
        } else {
            Seq(0)
        };
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
    if l.starts_with("profilerstep") || stepnum {
        MarkKind::Step
    } else if ["forward", "backward", "optimizer", "zero_grad"]
        .iter()
        .any(|k| l.contains(k))
    {
        MarkKind::Phase
    } else {
        MarkKind::Annotation
    }
}
