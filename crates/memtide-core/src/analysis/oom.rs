//! Every OOM of a trace explained ([`crate::allocator::explain()`]): the figures at the event
//! from the timeline (allocated, reserved, the driver's free bytes, capacity) and, for
//! snapshots, from the allocator state replayed to that event (the free blocks of the pool
//! the request needed, and for fragmentation the live blocks that pin it); and the fix list,
//! each setting checked by replay under the ceiling the run had.

use super::frames::{parse_frame, FrameView};
use super::live::entry_in;
use super::summary::external_by_source;
use super::summary::FixReplay;
use super::trend::Trend;
use crate::allocator::fixes::Saving;
use crate::allocator::fixes::{Fix, FixResult};
use crate::allocator::pinners::{pinners, Pinner};
use crate::allocator::rounding::block_extent;
use crate::allocator::sim::report::RunsOn;
use crate::allocator::sim::AllocConf;
use crate::allocator::{explain, fixes, History, OomExplanation, OomFacts, Op, PoolFacts, Verdict};
use crate::index::Index;
use crate::trace::units::grouped;
use crate::trace::{human_bytes, AllocId, Band, MarkKind, Seq, Trace, FLAG_FROM_START};
use crate::worker::Progress;

/// How many owners of live memory (allocations grouped by name and frame) the advice names.
const ADVICE_LIVE: usize = 3;

/// The explanation of each OOM of `trace`, in event order. `history` is the device's
/// allocator history (snapshots), None for sources without segments and blocks.
pub(crate) fn explain_ooms(
    trace: &Trace,
    index: &Index,
    history: Option<&History>,
    trend: &Trend,
    view: &FrameView,
    replay: FixReplay,
    progress: Option<&Progress>,
) -> Vec<OomExplanation> {
    let marks: Vec<_> = trace
        .marks
        .iter()
        .filter(|m| m.kind == MarkKind::Oom)
        .collect();
    if marks.is_empty() {
        return Vec::new();
    }
    let replayed = replay_length(trace, history);
    let deferred =
        (!replay.replays(replayed)).then(|| deferred_words(replayed, history.is_some(), replay));
    let states_before = || {
        history.map(|h| {
            let at: Vec<usize> = marks.iter().map(|m| m.at.idx()).collect();
            h.states_before(&at)
        })
    };
    // One replay for all OOMs: the state before each OOM entry, on a thread of its own
    // while the fix list's replays run (they do not depend on each other).
    let (states, fx) = match deferred {
        Some(_) => (states_before(), fixes::Fixes::default()),
        None => crate::worker::both(
            "memtide-oom-state",
            crate::worker::default_jobs(),
            states_before,
            || {
                let on = RunsOn {
                    jobs: crate::worker::jobs_for_runs(fixes::SETTINGS.len() + 1),
                    progress: progress.cloned(),
                };
                fixes::checked(trace, index, history, &on)
            },
        ),
    };
    let rising = trend.rising.then(|| match trend.growth_bytes {
        Some(g) => format!(
            "{}{} after warm-up",
            if g >= 0 { "+" } else { "-" },
            human_bytes(g.unsigned_abs().min(u64::MAX as u128) as u64)
        ),
        None => "at every step".to_string(),
    });
    let own = crate::allocator::sim::recorded_conf(trace)
        .and_then(Result::ok)
        .unwrap_or_default();
    marks
        .iter()
        .enumerate()
        .map(|(k, m)| {
            let at = m.at;
            let requested = m.size.map(|b| b.0);
            let state = states.as_ref().and_then(|st| st.get(k));
            let pool = match (history, state) {
                (Some(h), Some(s)) => {
                    let e = h.entries.get(at.idx()).filter(|e| e.op == Op::Oom);
                    match (e, requested) {
                        (Some(e), Some(r)) => Some(PoolFacts::from_state(
                            s,
                            block_extent(r),
                            h.stream_of(&e),
                            h.pool_of(&e),
                        )),
                        _ => None,
                    }
                }
                _ => None,
            };
            let facts = OomFacts {
                index: trace.event_number(at),
                time_us: trace.time_us(at),
                device: trace.device.clone(),
                requested,
                device_free: m.free.map(|b| b.0),
                // The allocator's bytes: the total less memory outside it (external).
                allocated: (!index.is_empty()).then(|| {
                    let external = index.bands_at(trace, at).get(Band::External);
                    index.total(at).0.saturating_sub(external)
                }),
                reserved: trace.has_reserved.then(|| index.reserved_at(trace, at).0),
                capacity: trace.capacity.map(|c| c.0),
                capacity_source: trace.capacity_source.clone(),
                pool,
                biggest_live: biggest_live(trace, index, at, view),
                rising_baseline: rising.clone(),
            };
            let mut x = explain(&facts);
            x.outside_by_source = external_by_source(trace, &index.live_at_unsorted(trace, at));
            let frames = view.of_stack(trace, m.stack);
            x.stack = shown_stack(trace, view, m.stack);
            x.user_frame = frames.user;
            x.module = frames.module;
            // The replays stop at the first OOM: its fixes and the shortfall under the file's
            // own settings are the first OOM's; a later one keeps what its figures lacked.
            x.shortfall = match k {
                0 => fx.own_shortfall.filter(|&b| b > 0).or(x.lacked()),
                _ => x.lacked(),
            };
            if k == 0 {
                x.fixes = fx.fixes.clone();
                x.fixes_ceiling = fx.ceiling_text.clone();
                reconcile(&mut x, &own, trend);
                if let Some(d) = &deferred {
                    left_unchecked(&mut x, d);
                }
            }
            if let (Verdict::Fragmentation, Some(s), Some(p)) = (x.verdict, state, &facts.pool) {
                x.pinners = named(trace, index, at, pinners(s, &p.key), view);
            }
            // What reducing the live tensors would save, whatever the verdict: a fix that
            // serves the request may leave too little for the rest of the step.
            x.savings = savings(trace, index, at, &x, view);
            if let Some(w) = horizon(trace, at, &x) {
                x.advice.push_str(
                    "; but it will likely run out again later in this step (see the horizon): reduce what is live too",
                );
                x.horizon = Some(w);
            }
            x
        })
        .collect()
}

/// The frames of a failed request's stack a report keeps (innermost first).
const STACK_ROWS: usize = 64;

/// The failed request's stack as the reports show frames (library paths short, the project
/// root left out), innermost first; a run of one frame (a recursion) once; past
/// [`STACK_ROWS`] the rest counted.
fn shown_stack(trace: &Trace, view: &FrameView, sid: crate::trace::StackId) -> Vec<String> {
    let frames = trace.strings.stack(sid);
    let mut out: Vec<String> = Vec::new();
    for (i, &f) in frames.iter().enumerate() {
        if i > 0 && frames[i - 1] == f {
            continue;
        }
        if out.len() == STACK_ROWS {
            out.push(format!("… {} more frames", frames.len() - i));
            break;
        }
        let text = match trace.strings.frame_parts(f) {
            Some((file, line, name)) => view.show(&super::frames::Frame {
                file,
                line: u64::try_from(line).ok(),
                name,
            }),
            None => view.show(&parse_frame(trace.strings.text(f))),
        };
        out.push(text);
    }
    out
}

/// Makes the verdict agree with the replays and the advice name only settings that help:
/// `fragmentation` where no allocator setting replayed under the ceiling serves the request
/// becomes `live_tensors` (the free memory was in pieces, but the live tensors leave too
/// little of it); a `live_tensors` or `unknown` verdict where a setting provably serves it
/// becomes `fragmentation`. A setting in use is never offered (the fix list leaves it out),
/// nor one the replay shows failing. A rising step baseline is named as the leak it is.
fn reconcile(x: &mut OomExplanation, own: &AllocConf, trend: &Trend) {
    let judged: Vec<&Fix> = x.fixes.iter().filter(|f| f.result.is_some()).collect();
    let fits: Vec<&Fix> = judged
        .iter()
        .copied()
        .filter(|f| f.result == Some(FixResult::Fits))
        .collect();
    let depends: Vec<&Fix> = judged
        .iter()
        .copied()
        .filter(|f| f.result == Some(FixResult::Depends))
        .collect();
    if !judged.is_empty() {
        match x.verdict {
            Verdict::Fragmentation if fits.is_empty() && depends.is_empty() => {
                let best = judged
                    .iter()
                    .filter_map(|f| f.shortfall.map(|b| (b, f.setting.as_str())))
                    .min();
                x.verdict = Verdict::LiveTensors;
                x.reasoning = format!(
                    "{}; but no allocator setting replayed from the start under the ceiling serves the request{}: the free memory was in pieces, yet the live tensors leave too little of it",
                    x.reasoning,
                    best.map_or(String::new(), |(b, s)| format!(
                        " (the closest, {s}, is {} short)",
                        human_bytes(b)
                    ))
                );
                x.advice = live_advice(x);
            }
            Verdict::LiveTensors | Verdict::Unknown if !fits.is_empty() => {
                x.verdict = Verdict::Fragmentation;
                x.reasoning = format!(
                    "{}; but replayed from the start under the ceiling the run surely had, {} serves it: the memory was there, in pieces",
                    x.reasoning,
                    names(&fits)
                );
            }
            _ => {}
        }
    }
    if x.verdict == Verdict::Fragmentation && !judged.is_empty() {
        x.advice = fragmentation_advice(x, &fits, &depends);
    } else if judged.is_empty() {
        x.advice = without_settings_in_use(&x.advice, own);
    }
    if x.verdict == Verdict::LiveTensors && trend.rising {
        if let Some(leak) = leak_words(trend, x.shortfall) {
            x.advice = format!("{leak}. {}", x.advice);
        }
    }
}

/// What the fix list's settings each replay: the history's entries, else the trace's events
/// (a source without an allocator history replays its allocations).
pub(crate) fn replay_length(trace: &Trace, history: Option<&History>) -> usize {
    history.map_or(trace.len(), |h| h.entries.len())
}

/// Why the settings were not replayed: the history's length (or, without one, the trace's)
/// against what `replay` allows.
fn deferred_words(length: usize, history: bool, replay: FixReplay) -> String {
    let limit = match replay {
        FixReplay::UpTo(n) => format!(" (summary replays up to {} by default)", grouped(n as u64)),
        FixReplay::Always => String::new(),
    };
    let (what, unit) = match history {
        true => ("the whole history, and this one has", "entries"),
        false => ("the trace's allocations, and this trace has", "events"),
    };
    format!(
        "not replayed: each allocator setting is a replay of {what} {} {unit}{limit}; --fixes replays them",
        grouped(length as u64)
    )
}

/// An explanation whose settings were not replayed says so: the fix list's line, and for a
/// verdict the replays may turn (`fragmentation`, `live_tensors`, `unknown`), that it is the
/// state's alone and which settings serve the request is not proven.
fn left_unchecked(x: &mut OomExplanation, why: &str) {
    x.fixes_deferred = Some(why.to_string());
    if x.verdict == Verdict::Fragmentation {
        x.advice.push_str(
            "; which setting serves this request is not proven here: --fixes replays them",
        );
    }
    if matches!(
        x.verdict,
        Verdict::Fragmentation | Verdict::LiveTensors | Verdict::Unknown
    ) {
        x.reasoning
            .push_str("; the allocator settings were not replayed (--fixes), so this is the state's verdict at the OOM, not checked against them");
    }
}

/// `a, b` of the fixes' settings.
fn names(fixes: &[&Fix]) -> String {
    fixes
        .iter()
        .map(|f| f.setting.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The advice for fragmentation from what the replays prove: the settings that serve the
/// request (with the headroom they leave), else those that would under a condition.
fn fragmentation_advice(x: &OomExplanation, fits: &[&Fix], depends: &[&Fix]) -> String {
    if let Some(best) = fits.iter().max_by_key(|f| f.headroom_after) {
        let rest: Vec<&Fix> = fits
            .iter()
            .copied()
            .filter(|f| f.setting != best.setting)
            .collect();
        return format!(
            "the free memory was in pieces: set PYTORCH_CUDA_ALLOC_CONF={} — replayed from the start under the ceiling the run surely had, it serves the request{}{}",
            best.setting,
            best.headroom_after.map_or(String::new(), |h| format!(
                " with {} left (the rest of the step is not in the file)",
                human_bytes(h)
            )),
            if rest.is_empty() {
                String::new()
            } else {
                format!("; {} would too", names(&rest))
            }
        );
    }
    let cond: Vec<String> = depends.iter().map(|f| f.text()).collect();
    format!(
        "the free memory was in pieces, but no allocator setting provably serves the request: {}; {}",
        cond.join("; "),
        live_advice(x)
    )
}

/// The advice for live tensors (what to reduce), from the explanation's biggest live.
fn live_advice(x: &OomExplanation) -> String {
    let base = x
        .advice
        .split(". Reduce what is live")
        .next()
        .filter(|s| s.starts_with("the device is full") || s.starts_with("the memory this"))
        .map(|s| format!("{s}. "))
        .unwrap_or_default();
    format!("{base}Reduce what is live: activation checkpointing, a smaller microbatch; empty_cache() will not help")
}

/// Advice text with every allocator setting already in use left out of it (the generic
/// advice, where no replay judged the settings).
fn without_settings_in_use(advice: &str, own: &AllocConf) -> String {
    let d = AllocConf::default();
    let mut a = advice.to_string();
    if own.expandable_segments {
        a = a.replace(
            "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (segments grow instead of splitting), or max_split_size_mb",
            "Set max_split_size_mb (expandable_segments:True is already in use)",
        );
        a = a.replace(
            "set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, so a free block at a segment's end grows into driver memory instead of needing a whole new segment",
            "expandable_segments:True is already in use, so the pieces are what the live tensors leave: reduce what is live",
        );
    }
    if own.max_split_size != d.max_split_size {
        a = a.replace(
            ", or max_split_size_mb to stop large cached blocks from being split",
            " (max_split_size_mb is already in use)",
        );
    }
    a
}

/// `a leak of 1.000 GiB per step (+3.000 GiB after warm-up) filled the card: what survives
/// every step is …`, from a rising step baseline.
fn leak_words(trend: &Trend, shortfall: Option<u64>) -> Option<String> {
    let g = trend.growth_bytes.filter(|&g| g > 0)?;
    let steps = trend.intervals().max(1) as i128;
    let per = u64::try_from(g / steps).unwrap_or(u64::MAX);
    let whole = u64::try_from(g).unwrap_or(u64::MAX);
    let who: Vec<String> = trend
        .survivors
        .iter()
        .take(3)
        .map(|s| {
            let at = if s.user_frame.is_empty() {
                String::new()
            } else {
                format!(" at {}", s.user_frame)
            };
            let name = [&s.name, &s.frame]
                .into_iter()
                .find(|n| !n.is_empty())
                .map_or("unnamed", String::as_str);
            format!("{} × {name}{at} ({})", s.count, human_bytes(s.bytes.0))
        })
        .collect();
    // The leak filled the card only where it grew past what the request lacked.
    let role = match shortfall {
        Some(b) if whole >= b => "filled the card".to_string(),
        Some(b) => format!(
            "took part, but alone it is less than the {} this request lacked",
            human_bytes(b)
        ),
        None => "took part (how much the request lacked is unknown)".to_string(),
    };
    Some(format!(
        "a leak of {} per step (+{} after warm-up) {role}{}",
        human_bytes(per),
        human_bytes(whole),
        if who.is_empty() {
            String::new()
        } else {
            format!(": what survives every step is {}", who.join(", "))
        }
    ))
}

/// Where a fix serves the failed request but leaves less room than the run already needed
/// at the same point of an earlier step: it will likely fail again there.
fn horizon(trace: &Trace, at: Seq, x: &OomExplanation) -> Option<String> {
    let headroom = x
        .fixes
        .iter()
        .filter(|f| f.result == Some(FixResult::Fits))
        .filter_map(|f| f.headroom_after)
        .max()?;
    let (largest, phase) = largest_earlier(trace, at)?;
    if headroom >= largest {
        return None;
    }
    Some(format!(
        "the best fix leaves {} after the failed request, less than the largest allocation of {} in {phase} of an earlier step: it will likely run out again later in this step; reduce what is live too (the savings below)",
        human_bytes(headroom),
        human_bytes(largest),
    ))
}

/// The largest allocation made in the same phase (else anywhere) of the steps before the
/// one holding `at`, with where: None when `at` is in the first step or there are none.
fn largest_earlier(trace: &Trace, at: Seq) -> Option<(u64, String)> {
    let steps: Vec<Seq> = trace
        .marks
        .iter()
        .filter(|m| m.kind == MarkKind::Step)
        .map(|m| m.at)
        .collect();
    let k = steps.iter().rposition(|&s| s <= at)?;
    if k == 0 {
        return None;
    }
    let phase = trace
        .marks
        .iter()
        .rfind(|m| m.kind == MarkKind::Phase && m.at <= at && m.end.is_none_or(|e| at <= e))
        .map(|m| trace.strings.text(m.name).to_string());
    let in_phase = |p: Seq| match &phase {
        None => true,
        Some(name) => trace.marks.iter().any(|m| {
            m.kind == MarkKind::Phase
                && trace.strings.text(m.name) == name
                && m.at <= p
                && m.end.is_none_or(|e| p <= e)
        }),
    };
    let before = steps[k];
    let largest = trace
        .changes
        .iter()
        .filter(|c| c.open() && c.at() >= steps[0] && c.at() < before && in_phase(c.at()))
        .map(|c| trace.size(c.storage()).0)
        .max()?;
    Some((
        largest,
        phase.map_or("the whole".into(), |p| format!("phase {p}")),
    ))
}

/// How many owners the savings name.
const SAVINGS_OWNERS: usize = 3;

/// For live tensors: activation checkpointing of each of the largest activation owners at
/// the OOM (grouped by what they are, those allocated in a `forward`), and a microbatch halved (half the activations), each
/// against what the request lacked (request − free reserve − driver free). Estimates: the
/// program would change, so nothing is replayed.
fn savings(
    trace: &Trace,
    index: &Index,
    at: Seq,
    x: &OomExplanation,
    view: &FrameView,
) -> Vec<Saving> {
    if !trace.identities_known() {
        return Vec::new();
    }
    let lacked = x.shortfall;
    let mut owners: Vec<(String, u64)> = Vec::new();
    let mut activations = 0u64;
    for id in index.live_at(trace, at) {
        if trace.band(id) != Band::Activation {
            continue;
        }
        let b = trace.size(id).0;
        activations = activations.saturating_add(b);
        let what = describe(trace, id, at, view);
        match owners.iter_mut().find(|(w, _)| *w == what) {
            Some((_, sum)) => *sum = sum.saturating_add(b),
            None => owners.push((what, b)),
        }
    }
    // A module's saved tensors: allocated in a forward; at least 1 MiB to be worth naming.
    owners.retain(|(what, b)| what.ends_with(" forward") && *b >= 1 << 20);
    owners.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let covers = |s: u64| lacked.map(|l| s >= l);
    let mut out: Vec<Saving> = owners
        .into_iter()
        .take(SAVINGS_OWNERS)
        .map(|(what, b)| Saving {
            change: format!("activation checkpointing of the tensors saved at {what}"),
            live_bytes: b,
            saving: b,
            shortfall: lacked,
            covers_shortfall: covers(b),
        })
        .collect();
    if activations > 0 {
        out.push(Saving {
            change: "a microbatch halved (activations scale with it)".into(),
            live_bytes: activations,
            saving: activations / 2,
            shortfall: lacked,
            covers_shortfall: covers(activations / 2),
        });
    }
    // A loss over the whole vocabulary at once: computed in chunks, its buffers shrink.
    if let Some(r) = x.rounded_bytes.filter(|_| in_a_loss(x)) {
        let chunks = 8u64;
        let saving = r - r / chunks;
        out.push(Saving {
            change: format!(
                "a chunked loss ({chunks} chunks) at {}: the {} request becomes {}",
                if x.user_frame.is_empty() {
                    x.stack.first().cloned().unwrap_or_default()
                } else {
                    x.user_frame.clone()
                },
                human_bytes(r),
                human_bytes(r / chunks)
            ),
            live_bytes: r,
            saving,
            shortfall: lacked,
            covers_shortfall: covers(saving),
        });
    }
    out
}

/// Functions whose buffers scale with logits × vocabulary: a request made inside one is a
/// loss's, which a chunked loss shrinks.
const LOSS_FUNCTIONS: [&str; 7] = [
    "cross_entropy",
    "nll_loss",
    "log_softmax",
    "kl_div",
    "binary_cross_entropy",
    "CrossEntropyLoss",
    "compute_loss",
];

/// Whether the failed request's stack runs through a loss function.
fn in_a_loss(x: &OomExplanation) -> bool {
    x.stack
        .iter()
        .chain(std::iter::once(&x.user_frame))
        .any(|f| LOSS_FUNCTIONS.iter().any(|l| f.contains(l)))
}

/// The pinners with what they are and when they were allocated: the live storage at the
/// block's address.
fn named(
    trace: &Trace,
    index: &Index,
    at: Seq,
    mut ps: Vec<Pinner>,
    view: &FrameView,
) -> Vec<Pinner> {
    let live = index.live_at(trace, at);
    for p in &mut ps {
        let src = |id: &AllocId| trace.src_id(*id);
        let Some(&id) = live.iter().find(|id| src(id) == Some(p.address)) else {
            continue;
        };
        p.what = describe(trace, id, at, view);
        if trace.flags(id) & FLAG_FROM_START == 0 {
            let start = trace.start(id);
            p.allocated_at = Some(trace.event_number(start));
            p.allocated_time_us = trace.time_us(start);
        }
    }
    ps
}

/// The biggest owners of the memory live at `at`: its storages grouped by how they are
/// described (name at the user's frame), biggest total first (ties by description), each as
/// `10.32 GiB (27 allocations) dit.py:125 forward` (`384.0 MiB dit.py:241 forward` for
/// one). Listing storages one by one named one line three times where it held them all.
fn biggest_live(trace: &Trace, index: &Index, at: Seq, view: &FrameView) -> Vec<String> {
    if !trace.identities_known() {
        return Vec::new();
    }
    // Owners that read alike (one name at one frame, of two categories) are one line.
    let mut owners: rustc_hash::FxHashMap<String, (u64, u64)> = Default::default();
    for o in super::live::owners(trace, index.live_at_unsorted(trace, at), at, view) {
        let w = owners.entry(describe_entry(&o.entry, view)).or_default();
        w.0 += o.bytes;
        w.1 += o.count;
    }
    let mut owners: Vec<(String, (u64, u64))> = owners.into_iter().collect();
    owners.sort_by(|(a, (x, _)), (b, (y, _))| y.cmp(x).then_with(|| a.cmp(b)));
    owners
        .into_iter()
        .take(ADVICE_LIVE)
        .map(|(what, (bytes, n))| match n {
            1 => format!("{} {what}", human_bytes(bytes)),
            n => format!("{} ({n} allocations) {what}", human_bytes(bytes)),
        })
        .collect()
}

/// A live storage in words: its name at the user's frame (else the innermost frame).
fn describe(trace: &Trace, id: AllocId, at: Seq, view: &FrameView) -> String {
    describe_entry(&entry_in(trace, id, at, view), view)
}

/// [`describe`] of a row already read.
fn describe_entry(e: &super::live::LiveEntry, view: &FrameView) -> String {
    // The user's frame, else the innermost frame printed short.
    let frame = if e.user_frame.is_empty() && !e.frame.is_empty() {
        view.show(&parse_frame(&e.frame))
    } else {
        e.user_frame.clone()
    };
    match (e.name.is_empty(), frame.is_empty()) {
        (false, false) => format!("{} at {frame}", e.name),
        (false, true) => e.name.clone(),
        (true, false) => frame,
        (true, true) => "unnamed".to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::{open, OpenOptions, Progress};

    /// The reasoning a replay adds when it turns the verdict ([`reconcile`]).
    fn turned_by_replay(x: &OomExplanation) -> bool {
        x.reasoning.contains("; but no allocator setting replayed")
            || x.reasoning
                .contains("; but replayed from the start under the ceiling")
    }

    /// An OOM whose fix list is not replayed keeps every figure of the replayed explanation,
    /// says why its list is empty, and keeps the state's verdict (the one the replayed
    /// explanation turned, or the same): every OOM fixture and the sample, each OOM, under a
    /// limit of 0 entries (deferred) and of the history's own length (replayed: the very
    /// explanations `Device::ooms` keeps).
    #[test]
    fn an_unreplayed_fix_list_keeps_the_figures_and_says_why() {
        let mut files = crate::test_files::oom_snapshots();
        // A profiler trace: no history, its allocations replayed.
        files.push(crate::test_files::repo_root().join("sample-traces/cuda-oom.pt.trace.json.gz"));
        let (mut deferred, mut turned, mut checked, mut counted) = (0, 0, 0, 0);
        for f in &files {
            let opened = open(f, &OpenOptions::default(), &Progress::new()).unwrap();
            for d in &opened.devices {
                let length = replay_length(&d.trace, d.history());
                let short = d.ooms_for(FixReplay::UpTo(length.saturating_sub(1)));
                let progress = d.oom_progress();
                assert_eq!(progress.total(), 0, "{}: nothing replayed", f.display());
                let full = d.ooms();
                // Every run's ops counted, those after a run's refusal too.
                assert_eq!(progress.done(), progress.total(), "{}", f.display());
                if full.first().is_some_and(|x| !x.fixes.is_empty()) {
                    assert!(progress.total() > 0, "{}", f.display());
                    counted += 1;
                }
                let same = d.ooms_for(FixReplay::UpTo(length));
                assert!(
                    std::ptr::eq(full, same),
                    "{}: replayed at its length",
                    f.display()
                );
                assert!(full.iter().all(|x| x.fixes_deferred.is_none()));
                assert_eq!(short.len(), full.len(), "{}", f.display());
                for (k, (s, x)) in short.iter().zip(full).enumerate() {
                    let at = format!("{} OOM {k}", f.display());
                    assert_eq!(s.figures(), x.figures(), "{at}");
                    assert_eq!(s.savings, x.savings, "{at}");
                    assert!(s.fixes.is_empty() && s.fixes_ceiling.is_none(), "{at}");
                    assert_eq!(s.horizon, None, "{at}");
                    if k > 0 {
                        // Only the first OOM's list is ever replayed.
                        assert_eq!(s, x, "{at}");
                        continue;
                    }
                    let why = s.fixes_deferred.as_deref().unwrap();
                    let unit = if d.history().is_some() {
                        "entries"
                    } else {
                        "events"
                    };
                    assert!(
                        why.contains(&format!("{} {unit}", grouped(length as u64)))
                            && why.contains("--fixes"),
                        "{at}: {why}"
                    );
                    assert!(s.details().iter().any(|(k, v)| *k == "fixes" && v == why));
                    deferred += 1;
                    if turned_by_replay(x) {
                        turned += 1;
                        assert_ne!(s.verdict, x.verdict, "{at}");
                    } else {
                        assert_eq!(s.verdict, x.verdict, "{at}");
                    }
                    assert!(!turned_by_replay(s), "{at}");
                    if matches!(
                        s.verdict,
                        Verdict::Fragmentation | Verdict::LiveTensors | Verdict::Unknown
                    ) {
                        assert!(s.reasoning.contains("not checked against them"), "{at}");
                        checked += 1;
                    }
                    if s.verdict == Verdict::Fragmentation {
                        assert!(s.advice.ends_with("not proven here: --fixes replays them"));
                    }
                }
            }
        }
        // Every fixture's first OOM was deferred, with verdicts the replays could turn
        // (none of these files' replays turns one: `turned` counts them if one ever does).
        assert!(deferred >= 10, "{deferred} deferred");
        assert!(counted >= 9, "{counted} fix lists' replays counted");
        assert!(
            checked >= 10,
            "{checked} verdicts said unchecked ({turned} turned)"
        );
    }
}
