//! The explorer's reducer: its messages (loads, worker replies, ticks, follow) and its
//! actions, each kind in a named step. Called by `tui::update`, the only mutator; no I/O.

use super::follow;
use super::nav::{self, fix_scroll, jump, refresh_live, refresh_view};
use super::state::{ExplorerState, InspectState, Screen};
use super::whatif;
use crate::picture;
use crate::tui::action::ExplorerAction as A;
use crate::tui::details;
use crate::tui::device::{has_device, pick_device, Device, LoadState};
use crate::tui::effect::{Behind, Effect};
use crate::tui::fmt;
use crate::tui::liveset::GroupMode;
use crate::tui::msg::Msg;
use crate::tui::shared::Shared;
use memtide_core::analysis::Axis;
use memtide_core::formats::Progress;
use memtide_core::trace::{AllocId, Band, Seq, Trace};
use std::sync::Arc;
use std::time::Instant;

/// The first effects: load the file.
pub fn start(sh: &mut Shared, ex: &mut ExplorerState) -> Vec<Effect> {
    let gen = sh.gen();
    let progress = Progress::new();
    let load = LoadState::new(gen, progress.clone());
    let waiting = load.waiting.clone();
    ex.screen = Screen::Loading(load);
    if ex.follow.is_some() {
        return vec![follow::load_effect(ex, gen, progress, waiting)];
    }
    vec![Effect::Load {
        gen,
        path: ex.path.clone(),
        opts: ex.opts.clone(),
        progress,
    }]
}

/// Applies one message that is not input; `None`: nothing changed (no redraw).
pub fn update(sh: &mut Shared, ex: &mut ExplorerState, msg: Msg) -> Option<Vec<Effect>> {
    Some(match msg {
        Msg::LiveDone { gen, result } => {
            if gen == ex.live.gen && result.at == ex.live.at {
                if let Some(dev) = ex.device().cloned() {
                    nav::apply_live(sh, ex, &dev, *result);
                }
            }
            Vec::new()
        }
        Msg::Resize { .. } => {
            refresh_view(sh, ex);
            fix_scroll(sh, ex);
            Vec::new()
        }
        Msg::Tick { now } => return tick(sh, ex, now),
        Msg::FollowLoaded { gen, result } => follow::loaded(sh, ex, gen, result),
        Msg::Tail { gen, event, now } => follow::tail(sh, ex, gen, event, now),
        Msg::Loaded { gen, result } => loaded(sh, ex, gen, result),
        Msg::Wrote { path, result } => {
            sh.status = Some(match result {
                Ok(()) => format!("wrote {}", path.display()),
                Err(e) => format!("export failed: {e}"),
            });
            Vec::new()
        }
        Msg::SearchDone {
            gen,
            matches,
            strings,
        } => search_done(sh, ex, gen, matches, strings),
        // Nothing to change: the next frame draws the panel from the explanations.
        Msg::Ready(Behind::Ooms) => Vec::new(),
        Msg::Ready(Behind::Model) => return model_ready(sh, ex),
        Msg::WhatifDone { gen, result } => {
            whatif::done(sh, ex, gen, result.map(|b| *b));
            Vec::new()
        }
        // Input arrives as actions (`tui::update` maps it through the key table).
        Msg::Key(_) | Msg::Mouse(_) | Msg::Action(_) => return None,
        // The ranks overview's (routed to it by `tui::update`).
        Msg::RankStarted { .. } | Msg::RankLoaded { .. } => return None,
    })
}

/// Timer: samples the load's progress, or drives follow mode.
fn tick(sh: &mut Shared, ex: &mut ExplorerState, now: Instant) -> Option<Vec<Effect>> {
    if let Screen::Loading(l) = &mut ex.screen {
        l.sample(now);
        return Some(Vec::new());
    }
    let sampled = sample_oom_replays(ex);
    // The model's reply went to another page (the ranks overview) while this one waited.
    let settled = ex.device().is_some_and(|d| d.allocator_settled());
    if settled && ex.alloc.as_ref().is_some_and(|v| v.waiting.is_some()) {
        return model_ready(sh, ex).or(sampled.then(Vec::new));
    }
    let (changed, fx) = follow::tick(sh, ex, now);
    (changed || sampled).then_some(fx)
}

/// While the OOM panel waits for its explanations, samples the fix lists' replays as they
/// go; whether the sample changed (the panel is drawn again).
fn sample_oom_replays(ex: &mut ExplorerState) -> bool {
    let now = ex.device().and_then(|dev| {
        let waiting = ex.panel_oom().is_some() && ex.ooms(dev).is_none();
        waiting.then(|| {
            let p = dev.oom_progress();
            (p.done(), p.total())
        })
    });
    let changed = now != ex.oom_replayed;
    ex.oom_replayed = now;
    changed
}

/// The allocator view waiting for a model fills in now that it is there (or waits for the
/// device now shown); None when no view waits.
fn model_ready(sh: &mut Shared, ex: &mut ExplorerState) -> Option<Vec<Effect>> {
    let dev = ex.device().cloned()?;
    let v = ex.alloc.as_mut().filter(|v| v.waiting.is_some())?;
    let again = super::alloc::refresh(v, &dev, ex.view.cursor);
    nav::fix_alloc_scroll(sh, ex);
    Some(match again {
        true => vec![Effect::Wait {
            device: dev,
            fact: Behind::Model,
        }],
        false => Vec::new(),
    })
}

/// The file was read: pick the device, say what changes the figures' meaning, show it.
fn loaded(
    sh: &mut Shared,
    ex: &mut ExplorerState,
    gen: u64,
    result: Result<Vec<Arc<Device>>, String>,
) -> Vec<Effect> {
    if !matches!(&ex.screen, Screen::Loading(l) if l.gen == gen) {
        return Vec::new(); // stale
    }
    let devs = match result {
        Ok(devs) if !devs.is_empty() => devs,
        Ok(_) => return nav::fail(sh, ex, "the file holds no device traces".into()),
        Err(e) => return nav::fail(sh, ex, e),
    };
    ex.current = pick_device(&devs, ex.device_want.as_deref());
    let note = ex
        .device_want
        .as_deref()
        .filter(|w| !has_device(&devs, w))
        .map(|w| {
            let names: Vec<&str> = devs.iter().map(|d| d.trace.device.as_str()).collect();
            format!(
                "no device {w:?} in this file (it has {}); showing {}",
                names.join(", "),
                devs[ex.current].trace.device
            )
        });
    let caveat = devs.get(ex.current).and_then(|d| {
        opening_caveat(&d.trace)
            .map(|c| format!("{c} (see `memtide summary` for details)"))
            .or_else(|| doubt_caveat(d))
    });
    ex.devices = devs;
    ex.screen = Screen::Ready;
    let mut fx = nav::init_device(sh, ex);
    // OOM explanations still on their way (the warm thread replays their fix lists): the
    // panel draws a placeholder until a worker's reply brings the redraw.
    fx.extend(
        ex.devices
            .iter()
            .filter(|d| d.ooms_if_ready().is_none())
            .map(|d| Effect::Wait {
                device: d.clone(),
                fact: Behind::Ooms,
            }),
    );
    if note.is_some() {
        sh.status = note;
    } else if caveat.is_some() {
        sh.status = caveat;
    }
    fx
}

/// The device's first doubt (`summary`'s `doubtful_warnings`), said on opening; the header
/// keeps "! doubtful" and the inspector lists every doubt.
fn doubt_caveat(dev: &Device) -> Option<String> {
    let first = dev.doubtful().first()?;
    let more = match dev.doubtful().len() {
        1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    Some(format!(
        "doubtful figures (Enter on a row lists why): {first}{more}"
    ))
}

/// A warning that changes what the figures mean, said on opening.
fn opening_caveat(trace: &Trace) -> Option<&'static str> {
    let notes = trace.meta.iter().filter(|(k, _)| k == "note");
    trace
        .warnings
        .iter()
        .chain(notes.map(|(_, v)| v))
        .find_map(|w| {
            if w.starts_with("history was cut") {
                Some("history was cut (trace_alloc_overflowed): the peak shown is a lower bound")
            } else if w.starts_with("the snapshot has no trace history") {
                Some("no trace history: one instant, the dump (event #0)")
            } else {
                None
            }
        })
}

const SEARCH_WAIT: &str = "searching…";

fn search_done(
    sh: &mut Shared,
    ex: &mut ExplorerState,
    gen: u64,
    matches: Vec<AllocId>,
    strings: usize,
) -> Vec<Effect> {
    if gen != ex.search.gen {
        return Vec::new(); // a stale reply for an older query
    }
    ex.search.pending = false;
    ex.search.set = matches.iter().copied().collect();
    ex.search.matches = matches;
    ex.search.strings = strings;
    ex.search.current = None;
    let jump = sh.status.as_deref() == Some(SEARCH_WAIT);
    refresh_view(sh, ex);
    if jump {
        sh.status = None;
        return goto_match(sh, ex, 0);
    }
    Vec::new()
}

/// Whether `a` moves the cursor by hand (which pauses following; End keeps it: it is the
/// newest event).
fn moves_cursor(a: A) -> bool {
    matches!(
        a,
        A::CursorLeft
            | A::CursorRight
            | A::PageLeft
            | A::PageRight
            | A::Home
            | A::JumpPeak
            | A::PrevMark
            | A::NextMark
            | A::PrevStepPeak
            | A::NextStepPeak
            | A::JumpAlloc
            | A::JumpFree
            | A::NextMatch
            | A::PrevMatch
            | A::SearchSubmit
            | A::NextOom
            | A::PrevOom
            | A::AllocEnter
            | A::ClickAt { .. }
    )
}

/// Applies one of the explorer's actions (`Quit` and the help overlay are `tui::update`'s).
pub fn action(sh: &mut Shared, ex: &mut ExplorerState, a: A) -> Vec<Effect> {
    match &ex.screen {
        Screen::Loading(_) => return Vec::new(),
        // The error screen: Esc/Enter leave like q.
        Screen::Error(_) if matches!(a, A::Back | A::Inspect) => {
            sh.quit = true;
            return vec![Effect::Quit];
        }
        Screen::Error(_) => return Vec::new(),
        Screen::Ready => {}
    }
    let Some(dev) = ex.device().cloned() else {
        return Vec::new();
    };
    if a == A::ToggleFollow {
        return follow::toggle(sh, ex);
    }
    if moves_cursor(a) {
        follow::pause_on_move(ex);
    }
    sh.status = None;
    match a {
        A::CursorLeft
        | A::CursorRight
        | A::PageLeft
        | A::PageRight
        | A::ZoomIn
        | A::ZoomOut
        | A::Home
        | A::End
        | A::ClickAt { .. } => navigate(sh, ex, &dev, a),
        A::JumpPeak | A::PrevMark | A::NextMark | A::PrevStepPeak | A::NextStepPeak => {
            landmark(sh, ex, &dev, a)
        }
        A::SelectUp | A::SelectDown | A::Inspect | A::Back | A::JumpAlloc | A::JumpFree => {
            live_and_inspector(sh, ex, &dev, a)
        }
        A::ToggleGroup => {
            ex.live.group = ex.live.group.next();
            ex.live.selected = 0;
            ex.live.offset = 0;
            ex.live.at = Seq(u64::MAX);
            let fx = refresh_live(sh, ex);
            if ex.live.group == GroupMode::Tree && !dev.trace.identities_known() {
                sh.status = Some(format!(
                    "no stack tree: {}",
                    memtide_core::trace::NO_IDENTITIES
                ));
            }
            fx
        }
        A::NextOom | A::PrevOom => oom_jump(sh, ex, &dev, a),
        A::OomDown | A::OomUp => super::oom::scroll(sh, ex, &dev, a == A::OomDown),
        A::ToggleOomPanel => {
            if dev.oom_at.is_empty() {
                return say(sh, "no out-of-memory event in this trace");
            }
            ex.oom_pinned = !ex.oom_pinned;
            fix_scroll(sh, ex);
            say(
                sh,
                if ex.oom_pinned {
                    "OOM panel pinned (x: unpin)"
                } else {
                    "OOM panel unpinned: it opens when the cursor is on an OOM"
                },
            )
        }
        A::ToggleAllocator | A::AllocUp | A::AllocDown | A::AllocEnter | A::AllocSort => {
            allocator(sh, ex, &dev, a)
        }
        A::ToggleAbsoluteTime => {
            if !dev.trace.clock.has_time() {
                return say(sh, "no times: the trace has no clock");
            }
            ex.absolute_time = !ex.absolute_time;
            if let Some(id) = ex.inspect.as_ref().map(|i| i.id) {
                let scroll = ex.inspect.as_ref().map_or(0, |i| i.scroll);
                open_inspect(sh, ex, &dev, id);
                if let Some(i) = ex.inspect.as_mut() {
                    i.scroll = scroll;
                }
            }
            say(
                sh,
                if ex.absolute_time {
                    "times as the file records them (T: relative)"
                } else {
                    "times relative to the trace's first event (T: absolute)"
                },
            )
        }
        A::SearchStart
        | A::SearchChar(_)
        | A::SearchBackspace
        | A::SearchSubmit
        | A::SearchCancel
        | A::NextMatch
        | A::PrevMatch => search(sh, ex, &dev, a),
        A::ToggleBands | A::ToggleAxis | A::NextDevice | A::Help => display(sh, ex, &dev, a),
        A::Copy => {
            let text = copy_text(ex, &dev);
            sh.status = Some("copied to the clipboard (OSC 52)".into());
            vec![Effect::Copy(text)]
        }
        A::Export => export_view(sh, ex, &dev),
        A::ToggleBudget => super::budget::toggle(sh, ex, &dev),
        A::ToggleWhatif => {
            let conf = ex.whatif_conf.clone();
            whatif::toggle(sh, ex, &dev, conf)
        }
        A::ToggleFollow => Vec::new(), // handled above: it must not pause itself
    }
}

/// Cursor moves, paging, zoom, clicks on the plot, the minimap and the live list.
fn navigate(sh: &mut Shared, ex: &mut ExplorerState, dev: &Device, a: A) -> Vec<Effect> {
    let width = ex.view.columns.len().max(1);
    match a {
        A::CursorLeft => nav::move_cols(sh, ex, -1),
        A::CursorRight => nav::move_cols(sh, ex, 1),
        A::PageLeft | A::PageRight => {
            let d = if a == A::PageLeft { -1 } else { 1 };
            let col = ex.view.cursor_col.unwrap_or(0);
            ex.view.pan(dev, d * width as i64, width);
            refresh_view(sh, ex);
            if let Some(c) = ex.view.columns.get(col).filter(|c| !c.empty) {
                ex.view.cursor = c.at;
                ex.view.cursor_col = Some(col);
            }
            refresh_live(sh, ex)
        }
        A::ZoomIn | A::ZoomOut => {
            let f = if a == A::ZoomIn { 0.5 } else { 2.0 };
            ex.view.zoom(dev, f);
            refresh_view(sh, ex);
            refresh_live(sh, ex)
        }
        A::Home => jump(sh, ex, Seq(0)),
        A::End => jump(sh, ex, dev.last()),
        A::ClickAt { col, row } => click(sh, ex, col, row),
        _ => Vec::new(),
    }
}

/// Jumps to the global peak, the previous/next mark, the previous/next step's own peak.
fn landmark(sh: &mut Shared, ex: &mut ExplorerState, dev: &Device, a: A) -> Vec<Effect> {
    let c = ex.view.cursor;
    match a {
        A::JumpPeak => match dev.peak {
            Some(p) if p.at_start => {
                let fx = jump(sh, ex, p.at);
                sh.status = Some(
                    "the peak is the initial state, at start (before event #0): memory live before the trace began"
                        .into(),
                );
                fx
            }
            Some(p) => jump(sh, ex, p.at),
            None => say(sh, "no peak: the trace is empty"),
        },
        A::PrevMark | A::NextMark => {
            let m = if a == A::NextMark {
                dev.mark_at.iter().find(|&&m| m > c)
            } else {
                dev.mark_at.iter().rev().find(|&&m| m < c)
            };
            match m {
                Some(&m) => jump(sh, ex, m),
                None => say(sh, "no further mark"),
            }
        }
        A::PrevStepPeak | A::NextStepPeak => {
            let peaks = dev.steps.iter().filter_map(|w| w.peak.map(|p| (p.at, w)));
            let found = if a == A::NextStepPeak {
                peaks.filter(|(p, _)| *p > c).min_by_key(|(p, _)| *p)
            } else {
                peaks.filter(|(p, _)| *p < c).max_by_key(|(p, _)| *p)
            };
            match found {
                Some((p, w)) => {
                    let name = w.name.clone();
                    let fx = jump(sh, ex, p);
                    sh.status = Some(format!("peak of {name}"));
                    fx
                }
                None if dev.steps.is_empty() => say(sh, "no step marks in this trace"),
                None => say(sh, "no further step"),
            }
        }
        _ => Vec::new(),
    }
}

/// Sets the status line; no effects.
fn say(sh: &mut Shared, text: &str) -> Vec<Effect> {
    sh.status = Some(text.into());
    Vec::new()
}

/// The live list's selection, the inspector (open, scroll, close, jump to its ends).
fn live_and_inspector(sh: &mut Shared, ex: &mut ExplorerState, dev: &Device, a: A) -> Vec<Effect> {
    match a {
        A::SelectUp | A::SelectDown => {
            let up = a == A::SelectUp;
            if let Some(i) = &mut ex.inspect {
                i.scroll = if up {
                    i.scroll.saturating_sub(1)
                } else {
                    (i.scroll + 1).min(i.lines.len().saturating_sub(1))
                };
            } else {
                let l = &mut ex.live;
                l.selected = if up {
                    l.selected.saturating_sub(1)
                } else {
                    (l.selected + 1).min(l.len().saturating_sub(1))
                };
                fix_scroll(sh, ex);
            }
            Vec::new()
        }
        A::Inspect if ex.live.group == GroupMode::Tree => {
            let Some(row) = ex.live.tree_rows.get(ex.live.selected) else {
                return say(sh, "nothing live at the cursor");
            };
            if row.children == 0 {
                return say(sh, "a leaf: no frames below it (g: back to the list)");
            }
            let path = row.path;
            if !ex.live.expanded.remove(&path) {
                ex.live.expanded.insert(path);
            }
            nav::flatten_tree(ex);
            fix_scroll(sh, ex);
            Vec::new()
        }
        A::Inspect => match ex.live.selected_entry().map(|e| e.id) {
            Some(id) => {
                open_inspect(sh, ex, dev, id);
                Vec::new()
            }
            None if ex.live.group != GroupMode::List => say(
                sh,
                "g cycles list → by band → by frame → tree: back to the list, then Enter",
            ),
            None if !dev.trace.identities_known() => {
                let why = memtide_core::trace::NO_IDENTITIES;
                say(sh, &format!("nothing to inspect: {why}"))
            }
            None => say(sh, "nothing live at the cursor"),
        },
        A::Back => {
            if ex.inspect.take().is_some() {
                refresh_view(sh, ex);
                fix_scroll(sh, ex);
                nav::fix_alloc_scroll(sh, ex);
            } else if ex.alloc.take().is_some() || ex.budget.take().is_some() {
                fix_scroll(sh, ex);
            } else if !ex.search.query.is_empty() {
                ex.search = Default::default();
                nav::flatten_tree(ex);
                refresh_view(sh, ex);
            }
            Vec::new()
        }
        A::JumpAlloc | A::JumpFree => {
            let Some(id) = ex.inspect.as_ref().map(|i| i.id) else {
                return say(sh, "open the inspector (Enter) first");
            };
            let tr = &dev.trace;
            if a == A::JumpAlloc {
                let from_start = tr.is_from_start(id);
                let fx = jump(sh, ex, tr.start(id));
                if from_start {
                    sh.status = Some("allocated before the trace began".into());
                }
                fx
            } else {
                match tr.end(id) {
                    Some(e) => jump(sh, ex, e),
                    None => say(sh, "never freed within the trace"),
                }
            }
        }
        _ => Vec::new(),
    }
}

/// The search prompt and jumping between its matches.
fn search(sh: &mut Shared, ex: &mut ExplorerState, dev: &Arc<Device>, a: A) -> Vec<Effect> {
    match a {
        A::SearchStart => {
            ex.searching = true;
            ex.search = Default::default();
            refresh_view(sh, ex);
            Vec::new()
        }
        A::SearchChar(_) | A::SearchBackspace if ex.live.group == GroupMode::Tree => {
            match a {
                A::SearchChar(c) => ex.search.query.push(c),
                _ => {
                    ex.search.query.pop();
                }
            }
            ex.live.selected = 0;
            ex.live.offset = 0;
            nav::flatten_tree(ex);
            Vec::new()
        }
        A::SearchSubmit if ex.live.group == GroupMode::Tree => {
            ex.searching = false;
            let n = ex.live.tree_rows.iter().filter(|r| r.matched).count();
            let q = ex.search.query.clone();
            say(
                sh,
                &format!("tree filtered by {q:?}: {n} matching frames (Esc clears)"),
            )
        }
        A::SearchChar(c) => {
            ex.search.query.push(c);
            search_effect(sh, ex, dev)
        }
        A::SearchBackspace => {
            ex.search.query.pop();
            search_effect(sh, ex, dev)
        }
        A::SearchSubmit => {
            ex.searching = false;
            if ex.search.pending {
                say(sh, SEARCH_WAIT)
            } else {
                goto_match(sh, ex, 0)
            }
        }
        A::SearchCancel => {
            ex.searching = false;
            ex.search = Default::default();
            nav::flatten_tree(ex);
            refresh_view(sh, ex);
            Vec::new()
        }
        A::NextMatch | A::PrevMatch => {
            let n = ex.search.matches.len();
            if n == 0 {
                return say(sh, "no matches (/ to search)");
            }
            let i = match (ex.search.current, a == A::NextMatch) {
                (None, _) => 0,
                (Some(i), true) => (i + 1) % n,
                (Some(i), false) => (i + n - 1) % n,
            };
            goto_match(sh, ex, i)
        }
        _ => Vec::new(),
    }
}

/// What is drawn: bands, axis, device, the help overlay.
fn display(sh: &mut Shared, ex: &mut ExplorerState, dev: &Device, a: A) -> Vec<Effect> {
    match a {
        A::ToggleBands => {
            ex.bands_cycle = (ex.bands_cycle + 1) % (Band::COUNT + 1);
            ex.bands_shown = [ex.bands_cycle == 0; Band::COUNT];
            if ex.bands_cycle > 0 {
                ex.bands_shown[ex.bands_cycle - 1] = true;
                let b = Band::from_idx(ex.bands_cycle - 1);
                say(
                    sh,
                    &format!("showing only {}, scaled to it (b: next)", b.name()),
                )
            } else {
                say(sh, "showing all bands")
            }
        }
        A::ToggleAxis => {
            if dev.trace.clock.has_time() {
                ex.view.toggle_axis(dev);
                refresh_view(sh, ex);
                jump(sh, ex, ex.view.cursor)
            } else {
                say(sh, "time axis unavailable: the trace has no clock")
            }
        }
        A::NextDevice => {
            if ex.devices.len() > 1 {
                ex.current = (ex.current + 1) % ex.devices.len();
                let fx = nav::init_device(sh, ex);
                let name = &ex.devices[ex.current].trace.device;
                sh.status = Some(format!("device {name}"));
                fx
            } else {
                say(sh, "only one device in this file")
            }
        }
        A::Help => {
            sh.help = true;
            Vec::new()
        }
        _ => Vec::new(),
    }
}

fn search_effect(sh: &mut Shared, ex: &mut ExplorerState, dev: &Arc<Device>) -> Vec<Effect> {
    let gen = sh.gen();
    ex.search.gen = gen;
    ex.search.current = None;
    if ex.search.query.is_empty() {
        ex.search.pending = false;
        ex.search.matches.clear();
        ex.search.set.clear();
        refresh_view(sh, ex);
        return Vec::new();
    }
    ex.search.pending = true;
    vec![Effect::Search {
        gen,
        query: ex.search.query.clone(),
        device: dev.clone(),
        at: ex.view.cursor,
    }]
}

/// Jumps to match `i`: the instant inside its lifetime where the total is highest.
fn goto_match(sh: &mut Shared, ex: &mut ExplorerState, i: usize) -> Vec<Effect> {
    let Some(dev) = ex.device().cloned() else {
        return Vec::new();
    };
    let Some(&id) = ex.search.matches.get(i) else {
        return say(sh, &format!("no match for {:?}", ex.search.query));
    };
    ex.search.current = Some(i);
    let tr = &dev.trace;
    // A match live at the cursor is selected where it is: stepping through the matches live
    // at the peak keeps the peak. Another goes to its highest instant.
    let here = tr.is_live_at(id, ex.view.cursor);
    let fx = if here {
        Vec::new()
    } else {
        let lo = tr.start(id);
        let hi = tr
            .end(id)
            .map_or(dev.last(), |e| Seq(e.0.saturating_sub(1)).max(lo));
        let at = dev.index.argmax(lo, hi).map_or(lo, |(s, _)| s);
        jump(sh, ex, at)
    };
    if let Some(p) = ex.live.rows.iter().position(|e| e.id == id) {
        ex.live.selected = p;
        fix_scroll(sh, ex);
    }
    let away = match dev.peak {
        Some(p) if !here && p.at != ex.view.cursor => " (p: back to the peak)",
        _ => "",
    };
    sh.status = Some(format!(
        "match {}/{}{away}: {} {}",
        i + 1,
        ex.search.matches.len(),
        fmt::bytes(tr.size(id).0),
        name_or_frame(&dev, id)
    ));
    fx
}

/// What to call storage `id` in a message: its label (name, module path or op) and its user
/// frame (`model.py:31 attention`), else the top frame as the file gives it.
fn name_or_frame(dev: &Device, id: AllocId) -> String {
    let tr = &dev.trace;
    let e = memtide_core::analysis::entry_in(tr, id, tr.start(id), &dev.frames);
    match (e.label.is_empty(), e.user_frame.is_empty()) {
        (false, false) if e.user_frame != e.label => format!("{}  {}", e.label, e.user_frame),
        (false, _) => e.label,
        (true, false) => e.user_frame,
        (true, true) => e.frame,
    }
}

/// `o` / `O`: the cursor to the next / previous OOM; the panel opens there.
fn oom_jump(sh: &mut Shared, ex: &mut ExplorerState, dev: &Device, a: A) -> Vec<Effect> {
    let c = ex.view.cursor;
    let found = if a == A::NextOom {
        dev.oom_at.iter().position(|&m| m > c)
    } else {
        dev.oom_at.iter().rposition(|&m| m < c)
    };
    let Some(k) = found else {
        return if dev.oom_at.is_empty() {
            say(sh, "no out-of-memory event in this trace")
        } else {
            say(sh, "no further OOM")
        };
    };
    let fx = jump(sh, ex, dev.oom_at[k]);
    fix_scroll(sh, ex);
    let verdict = match ex.ooms(dev) {
        Some(o) => format!(
            "verdict {}",
            o.get(k).map_or("unknown", |x| x.verdict.name())
        ),
        None => "being explained (its fix list is replayed behind)".to_string(),
    };
    sh.status = Some(format!("OOM {}/{}: {verdict}", k + 1, dev.oom_at.len()));
    fx
}

/// The allocator view: open / close, move the selection, sort, expand a segment, inspect a
/// block's allocation (and move the cursor to its alloc).
fn allocator(sh: &mut Shared, ex: &mut ExplorerState, dev: &Arc<Device>, a: A) -> Vec<Effect> {
    use super::alloc::{refresh, AllocView};
    use memtide_core::allocator::BlockState;
    if a == A::ToggleAllocator {
        if ex.alloc.take().is_some() {
            fix_scroll(sh, ex);
            return Vec::new();
        }
        ex.budget = None;
        if ex.inspect.take().is_some() {
            refresh_view(sh, ex);
        }
        let mut v = AllocView::new(dev.has_allocator());
        let wait = refresh(&mut v, dev, ex.view.cursor);
        ex.alloc = Some(v);
        nav::fix_alloc_scroll(sh, ex);
        if wait {
            return vec![Effect::Wait {
                device: dev.clone(),
                fact: Behind::Model,
            }];
        }
        if dev.allocator().is_none() {
            return say(sh, "this file records no segments: only totals are known");
        }
        return Vec::new();
    }
    let Some(v) = ex.alloc.as_mut() else {
        return Vec::new();
    };
    match a {
        A::AllocUp | A::AllocDown => {
            v.select(if a == A::AllocUp { -1 } else { 1 });
            nav::fix_alloc_scroll(sh, ex);
            Vec::new()
        }
        A::AllocSort => {
            v.cycle_sort();
            let name = v.sort.name();
            nav::fix_alloc_scroll(sh, ex);
            say(sh, &format!("segments sorted by {name} (S: next order)"))
        }
        A::AllocEnter => match v.selected_block() {
            None if v.rows.is_empty() => say(sh, "no segment at the cursor"),
            None => {
                v.toggle_expand(dev);
                nav::fix_alloc_scroll(sh, ex);
                Vec::new()
            }
            Some((addr, BlockState::Free)) => say(
                sh,
                &format!(
                    "{}: a free block, cached in the reserve (no allocation)",
                    fmt::addr(addr)
                ),
            ),
            Some((addr, _)) => match v.owners.get(&addr).copied() {
                Some(id) => {
                    let fx = jump(sh, ex, dev.trace.start(id));
                    open_inspect(sh, ex, dev, id);
                    sh.status = Some(format!(
                        "block {}: cursor at its alloc (Esc: back to the allocator view)",
                        fmt::addr(addr)
                    ));
                    fx
                }
                None => say(
                    sh,
                    &format!(
                        "{}: no allocation of the timeline holds this block at the cursor",
                        fmt::addr(addr)
                    ),
                ),
            },
        },
        _ => Vec::new(),
    }
}

fn open_inspect(sh: &Shared, ex: &mut ExplorerState, dev: &Device, id: AllocId) {
    ex.inspect = Some(InspectState {
        id,
        lines: details::with_doubts(
            details::lines_in(
                &dev.trace,
                id,
                ex.view.cursor,
                &dev.frames,
                ex.absolute_time,
                dev.has_allocator(),
            ),
            dev.doubtful(),
        ),
        scroll: 0,
    });
    refresh_view(sh, ex);
    fix_scroll(sh, ex);
}

fn click(sh: &mut Shared, ex: &mut ExplorerState, col: u16, row: u16) -> Vec<Effect> {
    let l = ex.layout(sh.width, sh.height);
    let inside = |r: ratatui::layout::Rect| {
        col >= r.x && col < r.x + r.width && row >= r.y && row < r.y + r.height
    };
    if inside(l.plot) || inside(l.axis) {
        let i = (col - l.plot.x) as usize;
        if let Some(c) = ex.view.columns.get(i).filter(|c| !c.empty) {
            ex.view.cursor = c.at;
            ex.view.cursor_col = Some(i);
            return refresh_live(sh, ex);
        }
    } else if inside(l.minimap) {
        let i = (col - l.minimap.x) as usize;
        if let Some(at) = ex.view.minimap.get(i).map(|c| c.at) {
            return jump(sh, ex, at);
        }
    } else if inside(l.live) && row > l.live.y {
        let i = ex.live.offset + (row - l.live.y - 1) as usize;
        if i < ex.live.len() {
            ex.live.selected = i;
        }
    }
    Vec::new()
}

/// `e`: the visible event range drawn as SVG, to be written next to the trace file as
/// `NAME.view-LO-HI.svg` (the runtime writes it and says where).
/// Every file the explorer read for this trace: the trace, its side files (device log,
/// Nsight export, categories, rules, OOM message) and the theme TOML; an export never
/// overwrites one.
fn export_inputs(ex: &ExplorerState, theme: &crate::tui::theme::Theme) -> Vec<std::path::PathBuf> {
    let mut v = vec![ex.path.clone()];
    v.extend(ex.opts.side_files().into_iter().map(|p| p.to_path_buf()));
    v.extend(theme.file.clone());
    v
}

fn export_view(sh: &mut Shared, ex: &ExplorerState, dev: &Device) -> Vec<Effect> {
    let n = dev.index.len() as u64;
    if n == 0 {
        return say(sh, "nothing to export: the trace has no events");
    }
    let (lo, hi) = match ex.view.axis {
        Axis::Event => (ex.view.lo.min(n - 1), ex.view.hi.min(n - 1)),
        Axis::Time => {
            let (a, b) = (ex.view.columns.first(), ex.view.columns.last());
            (
                a.map_or(0, |c| c.lo.0.min(n - 1)),
                b.map_or(n - 1, |c| c.hi.0.min(n - 1)),
            )
        }
    };
    let name = ex
        .path
        .file_name()
        .map_or_else(|| "trace".to_string(), |f| f.to_string_lossy().into_owned());
    let whole = lo == 0 && hi == n - 1;
    let palette = sh.theme.palette();
    let picture = picture::Picture {
        trace: &dev.trace,
        index: &dev.index,
        theme: &palette,
        name: &name,
        lo: Seq(lo),
        hi: Seq(hi),
        range_label: if whole {
            String::new()
        } else {
            format!(
                "events #{}–#{}",
                dev.trace.event_number(Seq(lo)),
                dev.trace.event_number(Seq(hi))
            )
        },
        width: 1200,
        height: 480,
    };
    match picture::svg(&picture) {
        Ok(svg) => {
            let file = format!("{name}.view-{lo}-{hi}.svg");
            let path = ex.path.with_file_name(file);
            sh.status = Some(format!("writing {}…", path.display()));
            vec![Effect::WriteFile {
                path,
                bytes: svg.into_bytes(),
                inputs: export_inputs(ex, &sh.theme),
            }]
        }
        Err(e) => say(sh, &format!("export failed: {e}")),
    }
}

/// A plain-text summary of the selection for the clipboard.
fn copy_text(ex: &ExplorerState, dev: &Device) -> String {
    let tr = &dev.trace;
    let at = ex.view.cursor;
    let id = ex
        .inspect
        .as_ref()
        .map(|i| i.id)
        .or_else(|| ex.live.selected_entry().map(|e| e.id));
    let storages = if tr.identities_known() {
        format!("in {} storages", ex.live.count)
    } else {
        "(storages unavailable: the file records no addresses)".to_string()
    };
    let mut s = format!(
        "memtide {} {} at {}: {} live {storages}\n",
        tr.source,
        tr.device,
        fmt::at(tr, at),
        fmt::bytes(ex.live.total.0),
    );
    if let Some(id) = id {
        s.push_str(&format!(
            "{} {} {} — {}\n",
            fmt::bytes(tr.size(id).0),
            tr.band(id).name(),
            name_or_frame(dev, id),
            details::why_live(tr, id, at)
        ));
        for f in tr.stack(id) {
            s.push_str(&format!("  {f}\n"));
        }
    }
    s
}

/// Whether the time axis is active.
pub fn time_axis(ex: &ExplorerState) -> bool {
    ex.view.axis == Axis::Time
}
