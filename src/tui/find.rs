//! Search (nucleo-matcher) over a trace's unique strings — names and frames are interned, so
//! each distinct string is scored once — and the category names (matched by whole words
//! only), mapped back to the storages that carry a matching name, category or frame in their
//! stack. Runs on a worker.
//!
//! The matches are ranked so that the first is the one meant: a match that holds every word
//! of the query whole (`adam` in `torch/optim/adam.py`) before one whose letters are only
//! scattered through a string (`a…d…a…m`); then those live at the cursor (stepping through
//! them with `n`/`N` keeps the cursor, on the peak when it opened there); then those matched
//! by their name, module path or category before those matched by a user frame, and those
//! before the ones matched only by a library frame (PyTorch's, an installed package's);
//! then the biggest first.

use memtide_core::index::sort_biggest_first;
use memtide_core::open::Device;
use memtide_core::trace::{AllocId, Category, Seq, StackId, StorageKind, StrId};
use nucleo_matcher::pattern::{CaseMatching, Normalization, Pattern};
use nucleo_matcher::{Config, Matcher, Utf32Str};
use std::borrow::Cow;

/// How a string matched the query (lower is better).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Fit {
    /// Every word of the query is in it whole (case ignored).
    Whole,
    /// Only as scattered letters.
    Fuzzy,
}

/// Where a storage matched (lower ranks first).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Place {
    /// Its name, a view's name, its module path (`nn.Module: …` frames) or its category.
    Name,
    /// A frame of the user's code in its stack.
    UserFrame,
    /// Only a library frame (PyTorch, an installed package, the standard library).
    LibraryFrame,
}

/// The query's matcher: nucleo's fuzzy pattern, and its words for [`Fit::Whole`].
struct Query {
    pattern: Pattern,
    matcher: Matcher,
    words: Vec<String>,
    buf: Vec<char>,
}

impl Query {
    fn new(query: &str) -> Query {
        Query {
            pattern: Pattern::parse(query, CaseMatching::Smart, Normalization::Smart),
            matcher: Matcher::new(Config::DEFAULT.match_paths()),
            words: query.split_whitespace().map(str::to_lowercase).collect(),
            buf: Vec::new(),
        }
    }

    /// How `s` matches, or None.
    fn fit(&mut self, s: &str) -> Option<Fit> {
        self.pattern
            .score(Utf32Str::new(s, &mut self.buf), &mut self.matcher)?;
        let lower = s.to_lowercase();
        Some(if self.words.iter().all(|w| lower.contains(w.as_str())) {
            Fit::Whole
        } else {
            Fit::Fuzzy
        })
    }
}

/// Storages matching `query`, best first (see the module notes; `at` is the cursor), and how
/// many unique strings matched.
pub fn search(dev: &Device, query: &str, at: Seq) -> (Vec<AllocId>, usize) {
    let ranked = ranked(dev, query, at);
    let strings = ranked.1;
    (ranked.0.into_iter().map(|(id, _)| id).collect(), strings)
}

/// A match's rank: how it matched, whether it is live at the cursor, where.
pub type Rank = (Fit, bool, Place);

/// [`search`] with each match's rank: how it matched, whether it is live at `at`, where.
pub fn ranked(dev: &Device, query: &str, at: Seq) -> (Vec<(AllocId, Rank)>, usize) {
    if query.trim().is_empty() {
        return (Vec::new(), 0);
    }
    let trace = &dev.trace;
    let mut q = Query::new(query);
    let n = trace.strings.string_count();
    let mut fit: Vec<Option<Fit>> = vec![None; n];
    let mut strings = 0;
    for (id, s) in trace.strings.strings() {
        if s.is_empty() {
            continue;
        }
        if let Some(f) = q.fit(&s) {
            if let Some(slot) = fit.get_mut(id.0 as usize) {
                *slot = Some(f);
                strings += 1;
            }
        }
    }
    // A category is a keyword: only the query's words whole find it (`attn` must not find
    // every `activation`).
    let cats: Vec<Option<Fit>> = Category::ALL
        .iter()
        .map(|c| q.fit(c.name()).filter(|&f| f == Fit::Whole))
        .collect();
    let cat_fit = |c: Category| cats.get(c as usize).copied().flatten();
    if strings == 0 && cats.iter().all(Option::is_none) {
        return (Vec::new(), 0);
    }
    let string_fit = |i: StrId| fit.get(i.0 as usize).copied().flatten();
    // Each matching frame judged once: a module's name, the user's code or a library's.
    let mut places: Vec<Option<Place>> = vec![None; n];
    let mut place_of = |id: StrId| -> Place {
        if let Some(Some(p)) = places.get(id.0 as usize) {
            return *p;
        }
        let text = trace.strings.str(id);
        let p = if text.starts_with("nn.Module: ") {
            Place::Name
        } else if dev
            .frames
            .of_frames([Cow::Borrowed(&*text)])
            .user
            .is_empty()
        {
            Place::LibraryFrame
        } else {
            Place::UserFrame
        };
        if let Some(slot) = places.get_mut(id.0 as usize) {
            *slot = Some(p);
        }
        p
    };
    // The best (fit, place) of each stack's frames.
    let stack_best: Vec<Option<(Fit, Place)>> = (0..trace.strings.stack_count())
        .map(|i| {
            trace
                .strings
                .stack(StackId(i as u32))
                .iter()
                .filter_map(|&f| string_fit(f).map(|x| (x, place_of(f))))
                .min()
        })
        .collect();
    let stack_fit = |s: StackId| stack_best.get(s.0 as usize).copied().flatten();
    let st = &trace.storages;
    // A view's name or stack also finds the storage it holds.
    let mut via_view: rustc_hash::FxHashMap<AllocId, (Fit, Place)> = Default::default();
    for v in &trace.views {
        let best = [
            string_fit(v.name).map(|f| (f, Place::Name)),
            stack_fit(v.stack),
        ]
        .into_iter()
        .flatten()
        .min();
        if let Some(b) = best {
            let e = via_view.entry(v.storage).or_insert(b);
            *e = (*e).min(b);
        }
    }
    let mut out: Vec<AllocId> = Vec::new();
    let mut rank: rustc_hash::FxHashMap<AllocId, (Fit, Place)> = Default::default();
    for i in 0..st.len() {
        if st.kind[i] != StorageKind::Block as u8 {
            continue;
        }
        let id = AllocId(i as u32);
        let best = [
            string_fit(trace.name_id(id)).map(|f| (f, Place::Name)),
            cat_fit(trace.category(id)).map(|f| (f, Place::Name)),
            stack_fit(st.stack[i]),
            via_view.get(&id).copied(),
        ]
        .into_iter()
        .flatten()
        .min();
        if let Some(b) = best {
            out.push(id);
            rank.insert(id, b);
        }
    }
    sort_biggest_first(trace, &mut out);
    // Stable: the biggest first within a rank; `false` (live at `at`) sorts first.
    let mut ranked: Vec<(AllocId, Rank)> = out
        .into_iter()
        .filter_map(|id| {
            let (f, p) = rank.get(&id).copied()?;
            Some((id, (f, !trace.is_live_at(id, at), p)))
        })
        .collect();
    ranked.sort_by_key(|&(_, r)| r);
    for (_, (_, away, _)) in &mut ranked {
        *away = !*away;
    }
    (
        ranked,
        strings + cats.iter().filter(|c| c.is_some()).count(),
    )
}
