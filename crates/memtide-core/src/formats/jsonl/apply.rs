//! The meaning of JSONL events: one equal-`t` group applied to the trace in application order
//! (frees and releases of earlier ids first, then what the group introduces), each event by
//! its op (alloc, view, release, free, reserve, unreserve, sample, mark, oom).

use super::line::Op;
use super::{Applier, MAX_EXAMPLE_WARNINGS};
use crate::formats::error::FormatError;
use crate::trace::{
    AllocId, Bytes, Category, Mark, MarkKind, Seq, StackId, StorageKind, StrId, Trace, Ts, View,
};
use rustc_hash::FxHashSet;

/// A decoded event line, waiting in its equal-`t` group.
#[derive(Clone, Debug)]
pub(super) struct Ev {
    pub(super) line: u64,
    pub(super) src: u64,
    pub(super) t: i64,
    pub(super) op: Op,
    pub(super) id: u64,
    pub(super) size: u64,
    pub(super) of: u64,
    pub(super) used: u64,
    pub(super) free: Option<u64>,
    /// A `view`'s own bytes (`size`), when the line gives them.
    pub(super) view_bytes: Option<u64>,
    pub(super) cat: Option<Category>,
    pub(super) name: StrId,
    pub(super) kind: MarkKind,
    pub(super) stack: StackId,
    pub(super) extra: Option<StrId>,
    /// A `sample`'s parts, interned by the reading half: `(source, storage name, bytes)`,
    /// the named sources then the rest (`unattributed`, bytes [`SAMPLE_REST`]).
    pub(super) parts: Option<Box<SampleParts>>,
}

/// A `sample`'s parts (boxed behind one thin pointer: every event line carries the field).
#[derive(Clone, Debug, Default)]
pub(super) struct SampleParts(pub(super) Vec<(StrId, StrId, u64)>);

/// The bytes of a sample part that is "what the named sources leave".
pub(super) const SAMPLE_REST: u64 = u64::MAX;

/// Opens and closes decided while applying one equal-`t` group, logged when it ends.
#[derive(Debug, Default)]
pub(super) struct GroupFx {
    opened: Vec<AllocId>,
    opened_set: FxHashSet<AllocId>,
    closed_here: FxHashSet<AllocId>,
    changes: Vec<(Seq, AllocId, bool)>,
}

impl GroupFx {
    pub(super) fn clear(&mut self) {
        self.opened.clear();
        self.opened_set.clear();
        self.closed_here.clear();
        self.changes.clear();
    }
    fn open(&mut self, id: AllocId) {
        self.opened.push(id);
        self.opened_set.insert(id);
    }
    fn close(&mut self, trace: &Trace, id: AllocId, at: Seq) {
        if self.opened_set.contains(&id) {
            self.closed_here.insert(id);
        } else if trace.end(id).is_none() {
            self.changes.push((at, id, false));
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) struct TensorRef {
    pub(super) storage: AllocId,
    /// Index into `trace.views` when this tensor is a view.
    pub(super) view: Option<u32>,
}

/// Reusable per-group working sets.
#[derive(Debug, Default)]
pub(super) struct GroupScratch {
    introduced_t: FxHashSet<u64>,
    introduced_s: FxHashSet<u64>,
    first: Vec<usize>,
    second: Vec<usize>,
    fx: GroupFx,
}

impl Applier {
    /// Applies one equal-`t` group: frees first (file order), except an id's own free that
    /// follows its alloc in the group; storages opened and closed inside the group are never
    /// live (zero-length interval).
    pub(super) fn apply_group(
        &mut self,
        trace: &mut Trace,
        group: &[Ev],
    ) -> Result<(), FormatError> {
        if group.is_empty() {
            return Ok(());
        }
        let mut sc = std::mem::take(&mut self.scratch);
        let r = self.apply_group_with(trace, group, &mut sc);
        sc.introduced_t.clear();
        sc.introduced_s.clear();
        sc.first.clear();
        sc.second.clear();
        sc.fx.clear();
        self.scratch = sc;
        r
    }

    fn apply_group_with(
        &mut self,
        trace: &mut Trace,
        group: &[Ev],
        sc: &mut GroupScratch,
    ) -> Result<(), FormatError> {
        // Application order.
        let GroupScratch {
            introduced_t,
            introduced_s,
            first,
            second,
            fx,
        } = sc;
        for (i, e) in group.iter().enumerate() {
            match e.op {
                Op::Alloc | Op::View | Op::External => {
                    introduced_t.insert(e.id);
                    second.push(i);
                }
                Op::Reserve => {
                    introduced_s.insert(e.id);
                    second.push(i);
                }
                Op::Unreserve if !introduced_s.contains(&e.id) => first.push(i),
                Op::Release | Op::Free if !introduced_t.contains(&e.id) => first.push(i),
                _ => second.push(i),
            }
        }
        for &i in first.iter().chain(second.iter()) {
            let e = &group[i];
            let at = trace.push_event_src(Ts(e.t), e.op.kind(), e.src);
            self.apply_event(trace, e, at, fx)?;
        }
        // Storages made in this group: opened at their start; closed at their start too when
        // the group also freed them (never live).
        for &id in &fx.opened {
            let start = trace.start(id);
            fx.changes.push((start, id, true));
            if fx.closed_here.contains(&id) {
                fx.changes.push((start, id, false));
            }
        }
        fx.changes.sort_by_key(|&(at, _, open)| (at, !open));
        for &(at, id, open) in &fx.changes {
            trace.log(id, at, open);
        }
        Ok(())
    }

    fn apply_event(
        &mut self,
        trace: &mut Trace,
        e: &Ev,
        at: Seq,
        fx: &mut GroupFx,
    ) -> Result<(), FormatError> {
        match e.op {
            Op::Alloc | Op::External => self.alloc(trace, e, at, fx),
            Op::View => self.view(trace, e, at, fx),
            Op::Release => self.release(trace, e, at, fx),
            Op::Free => self.free(trace, e, at, fx),
            Op::Reserve => self.reserve(trace, e, at, fx),
            Op::Unreserve => self.unreserve(trace, e, at, fx),
            Op::Sample => self.sample(trace, e, at, fx),
            Op::Mark => self.mark(trace, e, at, fx),
            Op::Oom => self.oom(trace, e, at, fx),
        }
    }

    /// `alloc` / `external`: a new storage with its base tensor.
    fn alloc(
        &mut self,
        trace: &mut Trace,
        e: &Ev,
        at: Seq,
        fx: &mut GroupFx,
    ) -> Result<(), FormatError> {
        if let Some(prev) = self.tensors.get(&e.id) {
            let s = prev.storage;
            return self.reject(
                trace,
                e.line,
                format!(
                    "id {} is already live (allocated at event {}); free or release it first",
                    e.id,
                    trace.event_number(trace.start(s))
                ),
            );
        }
        let cat = if e.op == Op::External {
            // The recorder measured memory outside the framework.
            trace.external_known = true;
            e.cat.unwrap_or(Category::External)
        } else {
            e.cat.unwrap_or(Category::Unknown)
        };
        let id = trace.new_storage(
            at,
            Bytes(e.size),
            cat,
            StorageKind::Block,
            e.name,
            e.stack,
            e.id,
        );
        if let Some(x) = e.extra {
            trace.extra.insert(id, x);
        }
        fx.open(id);
        self.tensors.insert(
            e.id,
            TensorRef {
                storage: id,
                view: None,
            },
        );
        self.refcount.insert(id, 1);
        Ok(())
    }

    /// `view`: another tensor on a live storage (keeps it alive).
    fn view(
        &mut self,
        trace: &mut Trace,
        e: &Ev,
        at: Seq,
        _fx: &mut GroupFx,
    ) -> Result<(), FormatError> {
        if self.tensors.contains_key(&e.id) {
            return self.reject(
                trace,
                e.line,
                format!("view id {} is already a live tensor", e.id),
            );
        }
        let Some(base) = self.tensors.get(&e.of).copied() else {
            return self.reject(
                trace,
                e.line,
                format!(
                    "view {} is \"of\" {}, which is not a live tensor",
                    e.id, e.of
                ),
            );
        };
        let vi = trace.add_view(View {
            storage: base.storage,
            tensor: e.id,
            name: e.name,
            stack: e.stack,
            bytes: e.view_bytes.map(Bytes),
            created: at,
            released: None,
        });
        self.tensors.insert(
            e.id,
            TensorRef {
                storage: base.storage,
                view: Some(vi as u32),
            },
        );
        *self.refcount.entry(base.storage).or_insert(0) += 1;
        self.view_tensors
            .entry(base.storage)
            .or_default()
            .push(e.id);
        Ok(())
    }

    /// `release`: one tensor goes; the storage closes with its last tensor.
    fn release(
        &mut self,
        trace: &mut Trace,
        e: &Ev,
        at: Seq,
        fx: &mut GroupFx,
    ) -> Result<(), FormatError> {
        let Some(r) = self.tensors.remove(&e.id) else {
            self.unmatched(trace, e, "release");
            return Ok(());
        };
        match r.view {
            Some(vi) => {
                if let Some(v) = trace.views.get_mut(vi as usize) {
                    v.released = Some(at);
                }
                if let Some(list) = self.view_tensors.get_mut(&r.storage) {
                    list.retain(|&t| t != e.id);
                }
            }
            None => {
                trace.base_released.insert(r.storage, at);
            }
        }
        let rc = self.refcount.entry(r.storage).or_insert(1);
        *rc = rc.saturating_sub(1);
        if *rc == 0 {
            self.refcount.remove(&r.storage);
            self.view_tensors.remove(&r.storage);
            fx.close(trace, r.storage, at);
        }
        Ok(())
    }

    /// `free`: the storage and every tensor on it go.
    fn free(
        &mut self,
        trace: &mut Trace,
        e: &Ev,
        at: Seq,
        fx: &mut GroupFx,
    ) -> Result<(), FormatError> {
        let Some(r) = self.tensors.get(&e.id).copied() else {
            self.unmatched(trace, e, "free");
            return Ok(());
        };
        let sid = r.storage;
        // Drop every tensor of the storage: the base and any views.
        let base_tensor = trace.src_id(sid);
        if let Some(b) = base_tensor {
            if self
                .tensors
                .get(&b)
                .is_some_and(|t| t.storage == sid && t.view.is_none())
            {
                self.tensors.remove(&b);
            }
        }
        for t in self.view_tensors.remove(&sid).unwrap_or_default() {
            if let Some(tr) = self.tensors.remove(&t) {
                if let Some(vi) = tr.view {
                    if let Some(v) = trace.views.get_mut(vi as usize) {
                        v.released = Some(at);
                    }
                }
            }
        }
        self.tensors.remove(&e.id);
        self.refcount.remove(&sid);
        fx.close(trace, sid, at);
        Ok(())
    }

    /// `reserve`: a segment the allocator reserved.
    fn reserve(
        &mut self,
        trace: &mut Trace,
        e: &Ev,
        at: Seq,
        fx: &mut GroupFx,
    ) -> Result<(), FormatError> {
        if self.segments.contains_key(&e.id) {
            return self.reject(
                trace,
                e.line,
                format!("segment id {} is already reserved", e.id),
            );
        }
        let id = trace.new_storage(
            at,
            Bytes(e.size),
            Category::Unknown,
            StorageKind::Segment,
            e.name,
            e.stack,
            e.id,
        );
        fx.open(id);
        self.segments.insert(e.id, id);
        self.reserved_now += e.size;
        Ok(())
    }

    /// `unreserve`: a segment returned to the device.
    fn unreserve(
        &mut self,
        trace: &mut Trace,
        e: &Ev,
        at: Seq,
        fx: &mut GroupFx,
    ) -> Result<(), FormatError> {
        let Some(id) = self.segments.remove(&e.id) else {
            trace.warn(format!(
                "line {}: unreserve of unknown segment id {}",
                e.line, e.id
            ));
            return Ok(());
        };
        self.reserved_now = self.reserved_now.saturating_sub(trace.size(id).0);
        fx.close(trace, id, at);
        Ok(())
    }

    /// `sample`: device-used memory; external = used − reserved (unless the file has explicit `external` spans).
    fn sample(
        &mut self,
        trace: &mut Trace,
        e: &Ev,
        at: Seq,
        fx: &mut GroupFx,
    ) -> Result<(), FormatError> {
        // A device sample measures external memory (used − reserved) from here on.
        trace.external_known = true;
        if self.external_seen {
            return Ok(());
        }
        for prev in std::mem::take(&mut self.sample_storage) {
            fx.close(trace, prev, at);
        }
        let ext = e.used.saturating_sub(self.reserved_now);
        // The parts a source names (NCCL's memory_stats()), then the rest: unattributed.
        let parts: &[(StrId, StrId, u64)] = e.parts.as_deref().map_or(&[], |p| &p.0);
        let mut rest = ext;
        for &(source, name, bytes) in parts.iter().filter(|p| p.2 != SAMPLE_REST) {
            let part = bytes.min(rest);
            if part < bytes {
                trace.warn(format!(
                    "line {}: a source of the sample names {bytes} B, more than the {rest} B of used − reserved left for it: counted as {part} B",
                    e.line
                ));
            }
            rest -= part;
            self.sample_part(trace, at, part, name, source, fx);
        }
        if let Some(&(source, name, _)) = parts.iter().find(|p| p.2 == SAMPLE_REST) {
            self.sample_part(trace, at, rest, name, source, fx);
        }
        Ok(())
    }

    /// One external storage of a sample, live until the next sample.
    fn sample_part(
        &mut self,
        trace: &mut Trace,
        at: Seq,
        bytes: u64,
        name: StrId,
        source: StrId,
        fx: &mut GroupFx,
    ) {
        let id = trace.new_storage(
            at,
            Bytes(bytes),
            Category::External,
            StorageKind::Block,
            name,
            StackId(0),
            u64::MAX,
        );
        fx.open(id);
        trace.ext_source.insert(id, source);
        self.sample_storage.push(id);
    }

    /// `mark`: a step, phase or user annotation.
    fn mark(
        &mut self,
        trace: &mut Trace,
        e: &Ev,
        at: Seq,
        _fx: &mut GroupFx,
    ) -> Result<(), FormatError> {
        trace.add_mark(Mark {
            at,
            ts: Ts(e.t),
            name: e.name,
            kind: e.kind,
            end: None,
            size: None,
            free: None,
            stack: StackId(0),
        });
        Ok(())
    }

    /// `oom`: an out-of-memory event with its request and the free bytes.
    fn oom(
        &mut self,
        trace: &mut Trace,
        e: &Ev,
        at: Seq,
        _fx: &mut GroupFx,
    ) -> Result<(), FormatError> {
        // Named "OOM" by the reading half when the line has no name.
        trace.add_mark(Mark {
            at,
            ts: Ts(e.t),
            name: e.name,
            kind: MarkKind::Oom,
            end: None,
            size: Some(Bytes(e.size)),
            free: e.free.map(Bytes),
            stack: e.stack,
        });
        Ok(())
    }

    pub(super) fn reject(
        &mut self,
        trace: &mut Trace,
        line: u64,
        reason: String,
    ) -> Result<(), FormatError> {
        if self.opts.lenient {
            self.skip(trace, || format!("line {line}: {reason}"));
            Ok(())
        } else {
            Err(FormatError::line(line, reason))
        }
    }

    /// Counts a skipped bad line (`--lenient`); the first one's text is kept for the warning.
    pub(super) fn skip(&mut self, trace: &mut Trace, text: impl FnOnce() -> String) {
        trace.skipped_lines += 1;
        self.first_skip.get_or_insert_with(text);
    }

    fn unmatched(&mut self, trace: &mut Trace, e: &Ev, what: &str) {
        trace.unmatched_frees += 1;
        if self.unmatched_examples < MAX_EXAMPLE_WARNINGS {
            self.unmatched_examples += 1;
            trace.warn(format!(
                "line {}: {what} of unknown id {} (counted as an unmatched free)",
                e.line, e.id
            ));
        }
    }
}
