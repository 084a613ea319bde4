//! memtide JSONL v1 (docs/formats.md): an incremental decoder that turns appended bytes into trace
//! events. Torn last lines wait for their newline; events sharing one `t` are buffered so that
//! frees apply before allocs, then written to the trace in application order.

//!
//! Five parts: `scan` reads a line of the common shape fast, `line` decodes any line (serde,
//! the reference), `lines` frames bytes into lines and decodes each into an item (needing
//! only the string interner), this file gathers equal-`t` groups and applies the items in
//! order, `apply` gives each event its meaning. `pipeline` runs the two halves on two
//! threads for a whole file, with the same result.

mod apply;
mod line;
mod lines;
mod pipeline;
mod scan;
pub mod write;

use super::error::FormatError;
use crate::trace::{AllocId, Trace};
use apply::{Ev, GroupScratch, TensorRef};
pub use lines::ExternalProbe;
use lines::{Item, Lines, Sink};
use rustc_hash::FxHashMap;

pub use pipeline::feed_two_threads;

/// Options of the JSONL reader.
#[derive(Clone, Copy, Debug, Default)]
pub struct JsonlOptions {
    /// Skip and count bad lines instead of failing.
    pub lenient: bool,
    /// Whether the whole input is known to hold explicit `external` spans (then `sample`
    /// lines do not synthesise external memory). None: decide as lines arrive.
    pub has_external_spans: Option<bool>,
}

/// Incremental JSONL v1 decoder. Feed it bytes as they arrive; call [`JsonlDecoder::finish`]
/// at the end of a complete file.
#[derive(Debug)]
pub struct JsonlDecoder {
    lines: Lines,
    apply: Applier,
}

/// The applying half: equal-`t` groups and what the events mean for the trace.
#[derive(Debug)]
struct Applier {
    opts: JsonlOptions,
    last_t: Option<i64>,
    group: Vec<Ev>,
    tensors: FxHashMap<u64, TensorRef>,
    refcount: FxHashMap<AllocId, u32>,
    view_tensors: FxHashMap<AllocId, Vec<u64>>,
    segments: FxHashMap<u64, AllocId>,
    reserved_now: u64,
    /// The storages the last `sample` line stands for (its named sources, then the rest).
    sample_storage: Vec<AllocId>,
    external_seen: bool,
    first_skip: Option<String>,
    unmatched_examples: u32,
    // Scratch buffers reused across groups (no allocation per event).
    spare_group: Vec<Ev>,
    scratch: GroupScratch,
}

const MAX_EXAMPLE_WARNINGS: u32 = 5;

impl JsonlDecoder {
    pub fn new(opts: JsonlOptions) -> Self {
        JsonlDecoder {
            lines: Lines::new(),
            apply: Applier {
                opts,
                last_t: None,
                group: Vec::new(),
                tensors: FxHashMap::default(),
                refcount: FxHashMap::default(),
                view_tensors: FxHashMap::default(),
                segments: FxHashMap::default(),
                reserved_now: 0,
                sample_storage: Vec::new(),
                external_seen: opts.has_external_spans.unwrap_or(false),
                first_skip: None,
                unmatched_examples: 0,
                spare_group: Vec::new(),
                scratch: GroupScratch::default(),
            },
        }
    }

    /// Asks `probe`, at the first `sample` event, whether the file holds explicit `external`
    /// spans (as `JsonlOptions::has_external_spans` tells it up front): a file without
    /// samples is never scanned for them.
    pub fn set_external_probe(&mut self, probe: ExternalProbe) {
        self.lines.probe = Some(probe);
    }

    /// Whether the header line has been read.
    pub fn header_seen(&self) -> bool {
        self.lines.header_seen()
    }

    /// Decodes every complete line in `bytes` (appended to any earlier torn line). Events whose
    /// `t` group may still grow stay buffered until a later `t` arrives or `finish`.
    pub fn feed(&mut self, trace: &mut Trace, bytes: &[u8]) -> Result<(), FormatError> {
        self.read(trace, |lines, strings, sink| {
            lines.feed(strings, bytes, sink)
        })
    }

    /// Ends the input: a last line without a newline is decoded, and the pending group is
    /// applied. A last line without a newline that is not yet a whole JSON object is a line
    /// still being written (not an error: docs/formats.md): it is left out, with a warning.
    pub fn finish(&mut self, trace: &mut Trace) -> Result<(), FormatError> {
        self.read(trace, |lines, strings, sink| lines.finish(strings, sink))?;
        self.flush(trace)?;
        if trace.skipped_lines > 0 {
            let first = self.apply.first_skip.clone().unwrap_or_default();
            // What those lines held is missing from every figure.
            trace.warn_doubtful(format!(
                "--lenient: skipped {} bad line(s); first: {first}",
                trace.skipped_lines
            ));
        }
        Ok(())
    }

    /// Runs the reading half `f` on this thread, each item applied as it is read. The
    /// trace's string interner is lent to the reading half meanwhile: it interns, the
    /// applying half never does.
    fn read<R>(
        &mut self,
        trace: &mut Trace,
        f: impl FnOnce(&mut Lines, &mut crate::trace::Interner, &mut Applying<'_>) -> R,
    ) -> R {
        let mut strings = std::mem::take(&mut trace.strings);
        let mut sink = Applying {
            apply: &mut self.apply,
            trace,
        };
        let r = f(&mut self.lines, &mut strings, &mut sink);
        trace.strings = strings;
        r
    }

    /// Applies the pending equal-`t` group now (used by followers after an idle period is not
    /// safe in general; exposed for tests and for `finish`).
    pub fn flush(&mut self, trace: &mut Trace) -> Result<(), FormatError> {
        self.apply.apply_pending(trace)
    }
}

/// The applying half as the reading half's sink, on one thread.
struct Applying<'a> {
    apply: &'a mut Applier,
    trace: &'a mut Trace,
}

impl Sink for Applying<'_> {
    type Error = FormatError;
    fn take(&mut self, item: Item) -> Result<(), FormatError> {
        self.apply.take(self.trace, item)
    }
}

impl Applier {
    /// One line's item, in file order.
    fn take(&mut self, trace: &mut Trace, item: Item) -> Result<(), FormatError> {
        match item {
            Item::Ev(ev) => self.event(trace, ev),
            Item::Header(h) => {
                h.apply_to(trace);
                Ok(())
            }
            // A bad header is never skipped: nothing after it could be read right.
            Item::Bad {
                line,
                reason,
                header_seen: false,
            } => Err(FormatError::line(line, reason)),
            Item::Bad { line, reason, .. } => self.reject(trace, line, reason),
            Item::Warn(w) => {
                trace.warn(w);
                Ok(())
            }
            // Known before any sample is applied, as if known from the start: only samples
            // read it.
            Item::ExternalSpans(has) => {
                self.external_seen |= has?;
                Ok(())
            }
        }
    }

    /// An event: a new `t` applies the pending group first. An error of that group belongs
    /// to the group's own line, not to this one, and is skipped under `--lenient` too.
    fn event(&mut self, trace: &mut Trace, ev: Ev) -> Result<(), FormatError> {
        if ev.op == line::Op::External {
            self.external_seen = true;
        }
        let mut group_error = None;
        if self.last_t != Some(ev.t) {
            group_error = self.apply_pending(trace).err();
        }
        self.last_t = Some(ev.t);
        self.group.push(ev);
        match group_error {
            None => Ok(()),
            Some(e) if self.opts.lenient => {
                self.skip(trace, || e.to_string());
                Ok(())
            }
            Some(e) => Err(e),
        }
    }

    /// Applies the buffered group, recycling its buffer.
    fn apply_pending(&mut self, trace: &mut Trace) -> Result<(), FormatError> {
        let mut group = std::mem::replace(&mut self.group, std::mem::take(&mut self.spare_group));
        let r = self.apply_group(trace, &group);
        group.clear();
        self.spare_group = group;
        r
    }
}
