//! Fuzzy search (nucleo-matcher) over a trace's unique strings — names and frames are
//! interned, so each distinct string is scored once — mapped back to the storages that
//! carry a matching name or a matching frame in their stack. Runs on a worker.

use memtide_core::index::sort_biggest_first;
use memtide_core::trace::{AllocId, StackId, StorageKind, Trace};
use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};

/// Storages matching `query`, biggest first, and how many unique strings matched.
pub fn search(trace: &Trace, query: &str) -> (Vec<AllocId>, usize) {
    if query.trim().is_empty() {
        return (Vec::new(), 0);
    }
    let pattern = Pattern::parse(query, CaseMatching::Smart, Normalization::Smart);
    let mut matcher = Matcher::new(Config::DEFAULT.match_paths());
    let mut buf = Vec::new();
    let n = trace.strings.string_count();
    let mut hit = vec![false; n];
    let mut strings = 0;
    for (id, s) in trace.strings.strings() {
        if s.is_empty() {
            continue;
        }
        if pattern
            .score(Utf32Str::new(&s, &mut buf), &mut matcher)
            .is_some()
        {
            if let Some(h) = hit.get_mut(id.0 as usize) {
                *h = true;
                strings += 1;
            }
        }
    }
    if strings == 0 {
        return (Vec::new(), 0);
    }
    let is_hit = |i: u32| hit.get(i as usize).copied().unwrap_or(false);
    let stack_hit: Vec<bool> = (0..trace.strings.stack_count())
        .map(|i| {
            trace
                .strings
                .stack(StackId(i as u32))
                .iter()
                .any(|f| is_hit(f.0))
        })
        .collect();
    let st = &trace.storages;
    let sh = |s: StackId| stack_hit.get(s.0 as usize).copied().unwrap_or(false);
    // A view's name or stack also finds the storage it holds.
    let via_view: rustc_hash::FxHashSet<AllocId> = trace
        .views
        .iter()
        .filter(|v| is_hit(v.name.0) || sh(v.stack))
        .map(|v| v.storage)
        .collect();
    let mut out: Vec<AllocId> = (0..st.len())
        .filter(|&i| {
            st.kind[i] == StorageKind::Block as u8
                && (is_hit(st.name[i].0)
                    || sh(st.stack[i])
                    || via_view.contains(&AllocId(i as u32)))
        })
        .map(|i| AllocId(i as u32))
        .collect();
    sort_biggest_first(trace, &mut out);
    (out, strings)
}
