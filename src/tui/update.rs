//! The reducer: `update(&mut App, Msg) -> Vec<Effect>` is the only mutator of the app state.
//! It does no I/O; slow work is asked for as effects and comes back as messages.

use super::action::Action;
use super::app::{App, Device, GroupMode, InspectState, LoadState, Outcome, Screen};
use super::details;
use super::effect::Effect;
use super::fmt;
use super::keymap::{self, Mode};
use super::liveset::{self, LiveResult, HUGE_LIVE};
use super::msg::Msg;
use super::view::{Highlights, Viewport};
use memtide_core::analysis::columns::Axis;
use memtide_core::formats::Progress;
use memtide_core::trace::{AllocId, Band, Seq};
use std::sync::Arc;

/// The first effects: load the file.
pub fn start(app: &mut App) -> Vec<Effect> {
    if app.lab.is_some() {
        return Vec::new();
    }
    if app.diff.is_some() {
        return super::diffview::start(app);
    }
    let gen = app.gen();
    let progress = Progress::new();
    app.screen = Screen::Loading(LoadState {
        gen,
        progress: progress.clone(),
        done: 0,
        total: 0,
        started: None,
        elapsed: Default::default(),
    });
    if app.follow.is_some() {
        return vec![super::follow::load_effect(app, gen, progress)];
    }
    vec![Effect::Load {
        gen,
        path: app.path.clone(),
        opts: app.opts.clone(),
        progress,
    }]
}

/// Applies one message.
pub fn update(app: &mut App, msg: Msg) -> Vec<Effect> {
    let mut fx = apply(app, msg);
    fx.append(&mut app.outbox);
    fx
}

fn apply(app: &mut App, msg: Msg) -> Vec<Effect> {
    // The lab and diff screens have their own reducers.
    if app.lab.is_some() {
        return super::lab::update(app, msg);
    }
    if app.diff.is_some() {
        return super::diffview::update(app, msg);
    }
    // A no-op message must not clear a redraw that is still pending (frame cap).
    let was_dirty = app.dirty;
    app.dirty = true;
    match msg {
        Msg::LiveDone { gen, result } => {
            if gen == app.live.gen && result.at == app.live.at {
                if let Some(dev) = app.device().cloned() {
                    apply_live(app, &dev, result);
                }
            }
            Vec::new()
        }
        Msg::Key(k) => match keymap::map_key(app.mode(), k) {
            Some(a) => action(app, a),
            None => {
                app.dirty = was_dirty;
                Vec::new()
            }
        },
        Msg::Mouse(m) => match keymap::map_mouse(m) {
            Some(a) => action(app, a),
            None => {
                app.dirty = was_dirty;
                Vec::new()
            }
        },
        Msg::Action(a) => action(app, a),
        Msg::Resize { width, height } => {
            app.width = width;
            app.height = height;
            refresh_view(app);
            fix_scroll(app);
            Vec::new()
        }
        Msg::Tick { now } => {
            if let Screen::Loading(l) = &mut app.screen {
                l.done = l.progress.done();
                l.total = l.progress.total();
                let s = *l.started.get_or_insert(now);
                l.elapsed = now.saturating_duration_since(s);
            } else if !super::follow::tick(app, now) {
                app.dirty = was_dirty;
            }
            Vec::new()
        }
        Msg::FollowLoaded { gen, result } => super::follow::loaded(app, gen, result),
        Msg::Tail { gen, event, now } => super::follow::tail(app, gen, event, now),
        Msg::Loaded { gen, result } => {
            let current = matches!(&app.screen, Screen::Loading(l) if l.gen == gen);
            if !current {
                return Vec::new();
            }
            match result {
                Ok(devs) if !devs.is_empty() => {
                    app.current = pick_device(&devs, app.device_want.as_deref());
                    let missing = app.device_want.as_deref().filter(|w| !has_device(&devs, w));
                    let note = missing.map(|w| {
                        let names: Vec<&str> =
                            devs.iter().map(|d| d.trace.device.as_str()).collect();
                        format!(
                            "no device {w:?} in this file (it has {}); showing {}",
                            names.join(", "),
                            devs[app.current].trace.device
                        )
                    });
                    // Warnings that change what the figures mean are said on opening.
                    let caveat = devs.get(app.current).and_then(|d| {
                        let notes = d.trace.meta.iter().filter(|(k, _)| k == "note");
                        d.trace
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
                    });
                    app.devices = devs;
                    app.screen = Screen::Ready;
                    init_device(app);
                    if note.is_some() {
                        app.status = note;
                    } else if let Some(c) = caveat {
                        app.status = Some(format!("{c} (see `memtide summary` for details)"));
                    }
                }
                Ok(_) => fail(app, "the file holds no device traces".into()),
                Err(e) => fail(app, e),
            }
            Vec::new()
        }
        Msg::Wrote { path, result } => {
            app.status = Some(match result {
                Ok(()) => format!("wrote {}", path.display()),
                Err(e) => format!("export failed: {e}"),
            });
            Vec::new()
        }
        Msg::SearchDone {
            gen,
            matches,
            strings,
        } => {
            if gen != app.search.gen {
                return Vec::new(); // a stale reply for an older query
            }
            app.search.pending = false;
            app.search.set = matches.iter().copied().collect();
            app.search.matches = matches;
            app.search.strings = strings;
            app.search.current = None;
            let jump = app.status.as_deref() == Some(SEARCH_WAIT);
            refresh_view(app);
            if jump {
                app.status = None;
                goto_match(app, 0);
            }
            Vec::new()
        }
    }
}

const SEARCH_WAIT: &str = "searching…";

pub(super) fn fail(app: &mut App, e: String) {
    app.screen = Screen::Error(e);
    app.outcome = Outcome::InputFailed;
}

/// Whether `want` (a name or an ordinal) names one of `devs`.
fn has_device(devs: &[Arc<Device>], want: &str) -> bool {
    let ord = |d: &Device| d.trace.device.rsplit(':').next()?.parse::<usize>().ok();
    devs.iter().any(|d| d.trace.device == want)
        || want
            .parse::<usize>()
            .is_ok_and(|n| n < devs.len() || devs.iter().any(|d| ord(d) == Some(n)))
}

/// The device the user asked for (ordinal or name), else the first with events.
pub fn pick_device(devs: &[Arc<Device>], want: Option<&str>) -> usize {
    if let Some(w) = want {
        if let Some(i) = devs.iter().position(|d| d.trace.device == w) {
            return i;
        }
        if let Ok(n) = w.parse::<usize>() {
            let ord = |d: &Device| d.trace.device.rsplit(':').next()?.parse::<usize>().ok();
            if let Some(i) = devs.iter().position(|d| ord(d) == Some(n)) {
                return i;
            }
            if n < devs.len() {
                return n;
            }
        }
    }
    devs.iter().position(|d| !d.is_empty()).unwrap_or(0)
}

/// Resets the view for the current device: whole trace, cursor at the global peak.
pub(super) fn init_device(app: &mut App) {
    let Some(dev) = app.devices.get(app.current).cloned() else {
        return;
    };
    let cursor = dev.peak.map_or(Seq(0), |p| p.at);
    app.view = Viewport::whole(&dev, cursor);
    app.inspect = None;
    app.search = Default::default();
    app.live = Default::default();
    app.live.at = Seq(u64::MAX);
    refresh_view(app);
    refresh_live(app);
}

/// Recomputes the cached columns for the current range and size.
pub(super) fn refresh_view(app: &mut App) {
    let Some(dev) = app.device().cloned() else {
        return;
    };
    let width = app.layout().plot.width as usize;
    let hl = Highlights {
        match_list: &app.search.matches,
        lifetime: app.inspect.as_ref().map(|i| i.id),
    };
    app.view.recompute(&dev, width, &hl);
}

/// Recomputes the live set (and the inspector, which depends on the cursor) at the cursor;
/// inline, or on a worker when the last live set was huge.
pub(super) fn refresh_live(app: &mut App) {
    let Some(dev) = app.device().cloned() else {
        return;
    };
    let at = app.view.cursor;
    if app.live.at != at {
        app.live.at = at;
        app.live.bands = dev.index.bands_at(&dev.trace, at);
        if app.live.count > HUGE_LIVE {
            let gen = app.gen();
            app.live.gen = gen;
            app.live.pending = true;
            app.outbox.push(Effect::Live {
                gen,
                at,
                group: app.live.group,
                device: dev.clone(),
            });
        } else {
            let r = liveset::compute(&dev.trace, &dev.index, at, app.live.group);
            apply_live(app, &dev, r);
        }
    }
    app.live.selected = app.live.selected.min(app.live.len().saturating_sub(1));
    fix_scroll(app);
}

/// Installs a computed live set, keeping the selected storage selected when still live.
fn apply_live(app: &mut App, dev: &Device, r: LiveResult) {
    let prev = app.live.selected_entry().map(|e| e.id);
    app.live.pending = false;
    app.live.count = r.count;
    app.live.total = r.total;
    app.live.rows = r.rows;
    app.live.groups = r.groups;
    app.live.selected = prev
        .and_then(|p| app.live.rows.iter().position(|e| e.id == p))
        .unwrap_or(0);
    if let Some(i) = &app.inspect {
        let (id, scroll) = (i.id, i.scroll);
        app.inspect = Some(InspectState {
            id,
            lines: details::lines(&dev.trace, id, app.live.at),
            scroll,
        });
    }
    app.live.selected = app.live.selected.min(app.live.len().saturating_sub(1));
    fix_scroll(app);
}

fn fix_scroll(app: &mut App) {
    let rows = app.layout().live_rows().max(1);
    let l = &mut app.live;
    if l.selected < l.offset {
        l.offset = l.selected;
    } else if l.selected >= l.offset + rows {
        l.offset = l.selected + 1 - rows;
    }
    l.offset = l.offset.min(l.len().saturating_sub(1));
}

/// Moves the cursor to `at`, scrolling the view if needed.
pub(super) fn jump(app: &mut App, at: Seq) {
    let Some(dev) = app.device().cloned() else {
        return;
    };
    let at = Seq(at.0.min(dev.last().0));
    app.view.cursor = at;
    let visible = app.view.col_of(at).is_some() && !app.view.columns.is_empty();
    if !visible {
        app.view.ensure_visible(&dev, at);
        refresh_view(app);
    } else {
        app.view.cursor_col = app.view.col_of(at);
    }
    refresh_live(app);
}

/// Moves the cursor by `d` columns to the next column showing a different instant, panning
/// at the edges.
fn move_cols(app: &mut App, d: i64) {
    let Some(dev) = app.device().cloned() else {
        return;
    };
    let width = app.view.columns.len();
    if width == 0 {
        return;
    }
    let cur = app.view.cursor;
    let mut col = app.view.cursor_col.unwrap_or(0) as i64;
    for _ in 0..(2 * width) {
        col += d;
        if col < 0 || col >= width as i64 {
            let before = (app.view.lo, app.view.hi, app.view.t0, app.view.t1);
            app.view.pan(&dev, d, width);
            if before == (app.view.lo, app.view.hi, app.view.t0, app.view.t1) {
                break; // at the end of the trace
            }
            refresh_view(app);
            col = col.clamp(0, width as i64 - 1);
        }
        if let Some(c) = app.view.columns.get(col as usize) {
            if !c.empty && c.at != cur {
                app.view.cursor = c.at;
                app.view.cursor_col = Some(col as usize);
                break;
            }
        }
    }
    refresh_live(app);
}

fn action(app: &mut App, a: Action) -> Vec<Effect> {
    if a == Action::Quit {
        if let Screen::Loading(l) = &app.screen {
            l.progress.cancel();
        }
        app.quit = true;
        return vec![Effect::Quit];
    }
    match &app.screen {
        Screen::Loading(_) => return Vec::new(),
        Screen::Error(_) => {
            if matches!(a, Action::Back | Action::Inspect) {
                app.quit = true;
                return vec![Effect::Quit];
            }
            return Vec::new();
        }
        Screen::Ready => {}
    }
    let Some(dev) = app.device().cloned() else {
        return Vec::new();
    };
    if app.mode() == Mode::Help {
        app.help = false;
        return Vec::new();
    }
    match a {
        Action::ToggleFollow => {
            super::follow::toggle(app);
            return Vec::new();
        }
        // Moving the cursor by hand pauses following (End keeps it: it is the newest event).
        Action::CursorLeft
        | Action::CursorRight
        | Action::PageLeft
        | Action::PageRight
        | Action::Home
        | Action::JumpPeak
        | Action::PrevMark
        | Action::NextMark
        | Action::PrevStepPeak
        | Action::NextStepPeak
        | Action::JumpAlloc
        | Action::JumpFree
        | Action::NextMatch
        | Action::PrevMatch
        | Action::SearchSubmit
        | Action::ClickAt { .. } => super::follow::pause_on_move(app),
        _ => {}
    }
    app.status = None;
    let width = app.view.columns.len().max(1);
    match a {
        Action::CursorLeft => move_cols(app, -1),
        Action::CursorRight => move_cols(app, 1),
        Action::PageLeft | Action::PageRight => {
            let d = if a == Action::PageLeft { -1 } else { 1 };
            let col = app.view.cursor_col.unwrap_or(0);
            app.view.pan(&dev, d * width as i64, width);
            refresh_view(app);
            if let Some(c) = app.view.columns.get(col).filter(|c| !c.empty) {
                app.view.cursor = c.at;
                app.view.cursor_col = Some(col);
            }
            refresh_live(app);
        }
        Action::ZoomIn | Action::ZoomOut => {
            let f = if a == Action::ZoomIn { 0.5 } else { 2.0 };
            app.view.zoom(&dev, f);
            refresh_view(app);
            refresh_live(app);
        }
        Action::Home => jump(app, Seq(0)),
        Action::End => jump(app, dev.last()),
        Action::JumpPeak => match dev.peak {
            Some(p) if p.at_start => {
                jump(app, p.at);
                app.status = Some(
                    "the peak is the initial state, at start (before event #0): memory live before the trace began"
                        .into(),
                );
            }
            Some(p) => jump(app, p.at),
            None => app.status = Some("no peak: the trace is empty".into()),
        },
        Action::PrevMark | Action::NextMark => {
            let c = app.view.cursor;
            let m = if a == Action::NextMark {
                dev.mark_at.iter().find(|&&m| m > c)
            } else {
                dev.mark_at.iter().rev().find(|&&m| m < c)
            };
            match m {
                Some(&m) => jump(app, m),
                None => app.status = Some("no further mark".into()),
            }
        }
        Action::PrevStepPeak | Action::NextStepPeak => {
            let c = app.view.cursor;
            let peaks = dev.steps.iter().filter_map(|w| w.peak.map(|p| (p.at, w)));
            let found = if a == Action::NextStepPeak {
                peaks.filter(|(p, _)| *p > c).min_by_key(|(p, _)| *p)
            } else {
                peaks.filter(|(p, _)| *p < c).max_by_key(|(p, _)| *p)
            };
            match found {
                Some((p, w)) => {
                    let name = w.name.clone();
                    jump(app, p);
                    app.status = Some(format!("peak of {name}"));
                }
                None if dev.steps.is_empty() => {
                    app.status = Some("no step marks in this trace".into())
                }
                None => app.status = Some("no further step".into()),
            }
        }
        Action::SelectUp | Action::SelectDown => {
            let up = a == Action::SelectUp;
            if let Some(i) = &mut app.inspect {
                i.scroll = if up {
                    i.scroll.saturating_sub(1)
                } else {
                    (i.scroll + 1).min(i.lines.len().saturating_sub(1))
                };
            } else {
                let l = &mut app.live;
                l.selected = if up {
                    l.selected.saturating_sub(1)
                } else {
                    (l.selected + 1).min(l.len().saturating_sub(1))
                };
                fix_scroll(app);
            }
        }
        Action::Inspect => match app.live.selected_entry().map(|e| e.id) {
            Some(id) => open_inspect(app, id),
            None if app.live.group != GroupMode::List => {
                app.status = Some("press g to return to the list, then Enter".into())
            }
            None if app.device().is_some_and(|d| !d.trace.identities_known()) => {
                app.status = Some(format!(
                    "nothing to inspect: {}",
                    memtide_core::trace::NO_IDENTITIES
                ))
            }
            None => app.status = Some("nothing live at the cursor".into()),
        },
        Action::Back => {
            if app.inspect.take().is_some() {
                refresh_view(app);
                fix_scroll(app);
            } else if !app.search.query.is_empty() {
                app.search = Default::default();
                refresh_view(app);
            }
        }
        Action::JumpAlloc | Action::JumpFree => {
            let Some(id) = app.inspect.as_ref().map(|i| i.id) else {
                app.status = Some("open the inspector (Enter) first".into());
                return Vec::new();
            };
            let tr = &dev.trace;
            if a == Action::JumpAlloc {
                if tr.is_from_start(id) {
                    app.status = Some("allocated before the trace began".into());
                }
                jump(app, tr.start(id));
            } else {
                match tr.end(id) {
                    Some(e) => jump(app, e),
                    None => app.status = Some("never freed within the trace".into()),
                }
            }
        }
        Action::ToggleGroup => {
            app.live.group = match app.live.group {
                GroupMode::List => GroupMode::ByBand,
                GroupMode::ByBand => GroupMode::ByFrame,
                GroupMode::ByFrame => GroupMode::List,
            };
            app.live.selected = 0;
            app.live.offset = 0;
            app.live.at = Seq(u64::MAX);
            refresh_live(app);
        }
        Action::SearchStart => {
            app.searching = true;
            app.search = Default::default();
            refresh_view(app);
        }
        Action::SearchChar(c) => {
            app.search.query.push(c);
            return search_effect(app, &dev);
        }
        Action::SearchBackspace => {
            app.search.query.pop();
            return search_effect(app, &dev);
        }
        Action::SearchSubmit => {
            app.searching = false;
            if app.search.pending {
                app.status = Some(SEARCH_WAIT.into());
            } else {
                goto_match(app, 0);
            }
        }
        Action::SearchCancel => {
            app.searching = false;
            app.search = Default::default();
            refresh_view(app);
        }
        Action::NextMatch | Action::PrevMatch => {
            let n = app.search.matches.len();
            if n == 0 {
                app.status = Some("no matches (/ to search)".into());
            } else {
                let i = match (app.search.current, a == Action::NextMatch) {
                    (None, _) => 0,
                    (Some(i), true) => (i + 1) % n,
                    (Some(i), false) => (i + n - 1) % n,
                };
                goto_match(app, i);
            }
        }
        Action::ToggleBands => {
            app.bands_cycle = (app.bands_cycle + 1) % (Band::COUNT + 1);
            app.bands_shown = [app.bands_cycle == 0; Band::COUNT];
            if app.bands_cycle > 0 {
                app.bands_shown[app.bands_cycle - 1] = true;
                let b = Band::from_idx(app.bands_cycle - 1);
                app.status = Some(format!("showing only {} (b: next)", b.name()));
            } else {
                app.status = Some("showing all bands".into());
            }
        }
        Action::ToggleAxis => {
            if dev.trace.clock.has_time() {
                app.view.toggle_axis(&dev);
                refresh_view(app);
                jump(app, app.view.cursor);
            } else {
                app.status = Some("time axis unavailable: the trace has no clock".into());
            }
        }
        Action::Help => app.help = true,
        Action::Copy => {
            let text = copy_text(app, &dev);
            app.status = Some("copied to the clipboard (OSC 52)".into());
            return vec![Effect::Copy(text)];
        }
        Action::Export => return export_view(app, &dev),
        Action::ToggleFollow => {}
        Action::NextDevice => {
            if app.devices.len() > 1 {
                app.current = (app.current + 1) % app.devices.len();
                init_device(app);
                app.status = Some(format!("device {}", app.devices[app.current].trace.device));
            } else {
                app.status = Some("only one device in this file".into());
            }
        }
        Action::ClickAt { col, row } => click(app, col, row),
        // The lab's and the diff screen's own actions (handled by their reducers).
        Action::LabStep
        | Action::LabPlay
        | Action::LabReset
        | Action::LabCapacityLess
        | Action::LabCapacityMore
        | Action::LabStrideLess
        | Action::LabStrideMore
        | Action::LabFocus
        | Action::LabDecrease
        | Action::LabIncrease
        | Action::LabClick
        | Action::DiffPrevStep
        | Action::DiffNextStep
        | Action::DiffPeakA
        | Action::DiffPeakB
        | Action::DiffMostDifferent => {}
        Action::Quit => {}
    }
    Vec::new()
}

fn search_effect(app: &mut App, dev: &Arc<Device>) -> Vec<Effect> {
    let gen = app.gen();
    app.search.gen = gen;
    app.search.current = None;
    if app.search.query.is_empty() {
        app.search.pending = false;
        app.search.matches.clear();
        app.search.set.clear();
        refresh_view(app);
        return Vec::new();
    }
    app.search.pending = true;
    vec![Effect::Search {
        gen,
        query: app.search.query.clone(),
        device: dev.clone(),
    }]
}

/// Jumps to match `i`: the instant inside its lifetime where the total is highest.
fn goto_match(app: &mut App, i: usize) {
    let Some(dev) = app.device().cloned() else {
        return;
    };
    let Some(&id) = app.search.matches.get(i) else {
        app.status = Some(format!("no match for {:?}", app.search.query));
        return;
    };
    app.search.current = Some(i);
    let tr = &dev.trace;
    let lo = tr.start(id);
    let hi = tr
        .end(id)
        .map_or(dev.last(), |e| Seq(e.0.saturating_sub(1)).max(lo));
    let at = dev.index.argmax(lo, hi).map_or(lo, |(s, _)| s);
    jump(app, at);
    if let Some(p) = app.live.rows.iter().position(|e| e.id == id) {
        app.live.selected = p;
        fix_scroll(app);
    }
    app.status = Some(format!(
        "match {}/{}: {} {}",
        i + 1,
        app.search.matches.len(),
        fmt::bytes(tr.size(id).0),
        name_or_frame(tr, id)
    ));
}

fn name_or_frame(tr: &memtide_core::trace::Trace, id: AllocId) -> String {
    let n = tr.name(id);
    if n.is_empty() {
        tr.top_frame(id).to_string()
    } else {
        n.to_string()
    }
}

fn open_inspect(app: &mut App, id: AllocId) {
    let Some(dev) = app.device().cloned() else {
        return;
    };
    app.inspect = Some(InspectState {
        id,
        lines: details::lines(&dev.trace, id, app.view.cursor),
        scroll: 0,
    });
    refresh_view(app);
    fix_scroll(app);
}

fn click(app: &mut App, col: u16, row: u16) {
    let l = app.layout();
    let inside = |r: ratatui::layout::Rect| {
        col >= r.x && col < r.x + r.width && row >= r.y && row < r.y + r.height
    };
    if inside(l.plot) || inside(l.axis) {
        let i = (col - l.plot.x) as usize;
        if let Some(c) = app.view.columns.get(i).filter(|c| !c.empty) {
            let at = c.at;
            app.view.cursor = at;
            app.view.cursor_col = Some(i);
            refresh_live(app);
        }
    } else if inside(l.minimap) {
        let i = (col - l.minimap.x) as usize;
        if let Some(at) = app.view.minimap.get(i).map(|c| c.at) {
            jump(app, at);
        }
    } else if inside(l.live) && row > l.live.y {
        let i = app.live.offset + (row - l.live.y - 1) as usize;
        if i < app.live.len() {
            app.live.selected = i;
        }
    }
}

/// A plain-text summary of the selection for the clipboard.
/// `e`: the visible event range drawn as SVG, to be written next to the trace file as
/// `NAME.view-LO-HI.svg` (the runtime writes it and says where).
fn export_view(app: &mut App, dev: &Device) -> Vec<Effect> {
    let n = dev.index.len() as u64;
    if n == 0 {
        app.status = Some("nothing to export: the trace has no events".into());
        return Vec::new();
    }
    let (lo, hi) = match app.view.axis {
        memtide_core::analysis::Axis::Event => (app.view.lo.min(n - 1), app.view.hi.min(n - 1)),
        memtide_core::analysis::Axis::Time => {
            let (a, b) = (app.view.columns.first(), app.view.columns.last());
            (
                a.map_or(0, |c| c.lo.0.min(n - 1)),
                b.map_or(n - 1, |c| c.hi.0.min(n - 1)),
            )
        }
    };
    let name = app
        .path
        .file_name()
        .map_or_else(|| "trace".to_string(), |f| f.to_string_lossy().into_owned());
    let whole = lo == 0 && hi == n - 1;
    let picture = super::picture::Picture {
        trace: &dev.trace,
        index: &dev.index,
        theme: &app.theme,
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
    match super::picture::svg(&picture) {
        Ok(svg) => {
            let file = format!("{name}.view-{lo}-{hi}.svg");
            let path = app.path.with_file_name(file);
            app.status = Some(format!("writing {}…", path.display()));
            vec![Effect::WriteFile {
                path,
                bytes: svg.into_bytes(),
                input: app.path.clone(),
            }]
        }
        Err(e) => {
            app.status = Some(format!("export failed: {e}"));
            Vec::new()
        }
    }
}

fn copy_text(app: &App, dev: &Device) -> String {
    let tr = &dev.trace;
    let at = app.view.cursor;
    let id = app
        .inspect
        .as_ref()
        .map(|i| i.id)
        .or_else(|| app.live.selected_entry().map(|e| e.id));
    let storages = if tr.identities_known() {
        format!("in {} storages", app.live.count)
    } else {
        "(storages unavailable: the file records no addresses)".to_string()
    };
    let mut s = format!(
        "memtide {} {} at {}: {} live {storages}\n",
        tr.source,
        tr.device,
        fmt::at(tr, at),
        fmt::bytes(app.live.total.0),
    );
    if let Some(id) = id {
        s.push_str(&format!(
            "{} {} {} — {}\n",
            fmt::bytes(tr.size(id).0),
            tr.band(id).name(),
            name_or_frame(tr, id),
            details::why_live(tr, id, at)
        ));
        for f in tr.stack(id) {
            s.push_str(&format!("  {f}\n"));
        }
    }
    s
}

/// Whether the time axis is active.
pub fn time_axis(app: &App) -> bool {
    app.view.axis == Axis::Time
}
