//! Attribution of allocations to the `cpu_op` / `python_function` spans enclosing them on
//! their thread (time containment, innermost first), computed after the pass so span order in
//! the file does not matter.
//!
//! Nesting deeper than 2 × [`KEPT_SPANS`] open spans (no real profile: a hostile file of
//! nested spans, whose stacks would otherwise cost depth × allocations in time and memory)
//! keeps an allocation's innermost [`KEPT_SPANS`] spans and a last frame [`CUT`] saying the
//! outer ones were left out; its op and top-level op are then looked for among the
//! innermost and outermost [`KEPT_SPANS`] open spans only.

use super::parse::{Collected, SpanKind};
use rustc_hash::FxHashMap;

/// Per `[memory]` event (index into `Collected::mem`): the enclosing frames and the op name.
pub(crate) struct Attribution {
    /// Global stack id per memory event (`NONE` when nothing encloses it or it is a free).
    pub stack: Vec<u32>,
    /// Innermost enclosing `cpu_op` name id per memory event (`NONE` when there is none).
    pub op: Vec<u32>,
    /// Stacks as name ids, innermost first.
    pub stacks: Vec<Box<[u32]>>,
    /// End time of the outermost enclosing `cpu_op` (the top-level op) per memory event,
    /// `i64::MIN` when none encloses it or it is a free.
    pub top_end: Vec<i64>,
}

pub(crate) const NONE: u32 = u32::MAX;
/// The outermost frame of a stack whose outer spans were left out (see the module's doc).
pub(crate) const CUT: u32 = u32::MAX - 1;
/// Enclosing spans kept per allocation when its thread nests deeper than twice as many.
pub(crate) const KEPT_SPANS: usize = 256;

/// Finds, for every allocation, the spans on its thread with `start <= ts < end`.
pub(crate) fn attribute(c: &Collected) -> Attribution {
    let n = c.mem.len();
    let mut out = Attribution {
        stack: vec![NONE; n],
        op: vec![NONE; n],
        stacks: Vec::new(),
        top_end: vec![i64::MIN; n],
    };
    let mut spans: Vec<u32> = (0..c.spans.len() as u32)
        .filter(|&i| {
            let s = &c.spans[i as usize];
            matches!(s.kind(), SpanKind::CpuOp | SpanKind::Python)
        })
        .collect();
    // Outer spans first at equal starts, so the stack nests.
    spans.sort_unstable_by_key(|&i| {
        let s = &c.spans[i as usize];
        (s.tid, s.start, std::cmp::Reverse(s.end), i)
    });
    let mut allocs: Vec<u32> = (0..n as u32)
        .filter(|&i| c.mem[i as usize].bytes > 0)
        .collect();
    allocs.sort_unstable_by_key(|&i| {
        let m = &c.mem[i as usize];
        (m.tid, m.ts, i)
    });
    let mut ids: FxHashMap<Box<[u32]>, u32> = FxHashMap::default();
    let mut open: Vec<u32> = Vec::new();
    let mut frames: Vec<u32> = Vec::new();
    let mut si = 0usize;
    let mut cur_tid = u32::MAX;
    for &a in &allocs {
        let m = &c.mem[a as usize];
        if m.tid != cur_tid {
            cur_tid = m.tid;
            open.clear();
            // Skip spans of threads before this one.
            while si < spans.len() && c.spans[spans[si] as usize].tid < cur_tid {
                si += 1;
            }
        }
        while si < spans.len() {
            let s = &c.spans[spans[si] as usize];
            if s.tid != cur_tid || s.start > m.ts {
                break;
            }
            while open
                .last()
                .is_some_and(|&o| c.spans[o as usize].end <= s.start)
            {
                open.pop();
            }
            open.push(spans[si]);
            si += 1;
        }
        while open
            .last()
            .is_some_and(|&o| c.spans[o as usize].end <= m.ts)
        {
            open.pop();
        }
        frames.clear();
        let mut op = NONE;
        let mut top_end = i64::MIN;
        let deep = open.len() > 2 * KEPT_SPANS;
        // A span that overlaps without nesting may sit below the top after it ended.
        let encloses = |s: &super::parse::Span| s.end > m.ts && s.start <= m.ts;
        for (k, &o) in open.iter().rev().enumerate() {
            if deep && (frames.len() == KEPT_SPANS || k == 2 * KEPT_SPANS) {
                frames.push(CUT);
                break;
            }
            let s = &c.spans[o as usize];
            if encloses(s) {
                frames.push(s.name());
                if s.kind() == SpanKind::CpuOp {
                    if op == NONE {
                        op = s.name();
                    }
                    top_end = s.end; // the last one seen is the outermost
                }
            }
        }
        if deep {
            // The outermost spans: the top-level op, and the op when none is inner.
            let outer = open.iter().take(KEPT_SPANS).map(|&o| &c.spans[o as usize]);
            let ops: Vec<&super::parse::Span> = outer
                .filter(|s| encloses(s) && s.kind() == SpanKind::CpuOp)
                .collect();
            if let Some(first) = ops.first() {
                top_end = first.end;
            }
            if let (NONE, Some(last)) = (op, ops.last()) {
                op = last.name();
            }
        }
        out.op[a as usize] = op;
        out.top_end[a as usize] = top_end;
        if frames.is_empty() {
            continue;
        }
        let id = match ids.get(frames.as_slice()) {
            Some(&id) => id,
            None => {
                let id = out.stacks.len() as u32;
                let b: Box<[u32]> = frames.as_slice().into();
                out.stacks.push(b.clone());
                ids.insert(b, id);
                id
            }
        };
        out.stack[a as usize] = id;
    }
    out
}
