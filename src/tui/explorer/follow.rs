//! Follow mode (`memtide -f FILE`): the explorer reducer's side of the live tail. JSONL
//! appends are decoded into the current trace and the index is extended (never rebuilt);
//! truncation, deletion and replacement trigger a background reload that keeps the cursor's
//! place.

use super::nav;
use super::state::{ExplorerState, Screen};
use crate::follow::TailEvent;
use crate::tui::device::{has_device, pick_device, FollowLoad};
use crate::tui::effect::Effect;
use crate::tui::shared::Shared;
use crate::tui::view::Viewport;
use memtide_core::formats::Progress;
use memtide_core::trace::{human_bytes, Seq};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a new-peak notice stays lit.
pub const NEW_PEAK_FLASH: Duration = Duration::from_millis(2500);
/// Quiet time after which the last equal-`t` group is applied too.
const IDLE_FLUSH: Duration = Duration::from_millis(200);

/// The load effect for follow mode (`waiting`: set while the file is not there yet).
pub fn load_effect(
    ex: &ExplorerState,
    gen: u64,
    progress: Progress,
    waiting: Arc<AtomicBool>,
) -> Effect {
    Effect::LoadFollow {
        gen,
        path: ex.path.clone(),
        opts: ex.opts.clone(),
        progress,
        waiting,
    }
}

/// A (re)load finished.
pub fn loaded(
    sh: &mut Shared,
    ex: &mut ExplorerState,
    gen: u64,
    result: Result<FollowLoad, String>,
) -> Vec<Effect> {
    let initial = matches!(&ex.screen, Screen::Loading(l) if l.gen == gen);
    let reload = ex.follow.as_ref().and_then(|f| f.reload_gen) == Some(gen);
    if !initial && !reload {
        return Vec::new();
    }
    let load = match result {
        Ok(l) if !l.devices.is_empty() => l,
        Ok(_) if initial => return nav::fail(sh, ex, "the file holds no device traces".into()),
        Ok(_) => return Vec::new(),
        Err(e) if initial => return nav::fail(sh, ex, e),
        Err(e) => {
            sh.status = Some(format!("reload failed: {e}; waiting for the next change"));
            if let Some(f) = ex.follow.as_mut() {
                f.reload_gen = None;
            }
            // Watch on from the file's current end (the worker reads it: no I/O here).
            return tail_effect(sh, ex, None);
        }
    };
    let offset = load.offset;
    let devices = load.devices;
    // A reload keeps the device on screen (the user may have moved on from the one opened).
    let shown = ex
        .device()
        .filter(|_| reload)
        .map(|d| d.trace.device.clone())
        .filter(|name| has_device(&devices, name));
    ex.current = pick_device(&devices, shown.as_deref().or(ex.device_want.as_deref()));
    ex.devices = devices;
    ex.screen = Screen::Ready;
    let (restore, on) = match ex.follow.as_mut() {
        Some(f) => {
            f.decoder = load.decoder;
            f.appendable = load.appendable;
            f.reload_gen = None;
            f.pending_flush = false;
            f.error = None;
            f.missing = false;
            (f.restore.take(), f.on)
        }
        None => (None, false),
    };
    let mut fx = nav::init_device(sh, ex);
    if let Some(dev) = ex.device().cloned() {
        if let Some(src) = restore {
            // Positions equal source indices up to equal-t reordering: close enough to keep
            // the user's place.
            fx.extend(nav::jump(sh, ex, Seq(src.min(dev.last().0))));
            if reload {
                sh.status = Some("reloaded; the cursor kept its place".into());
            }
        } else if on {
            fx.extend(nav::jump(sh, ex, dev.last()));
        }
    }
    let mut out = tail_effect(sh, ex, Some(offset));
    out.extend(fx);
    out
}

/// Starts a new tail generation from `offset` (None: the file's end when the worker starts).
fn tail_effect(sh: &mut Shared, ex: &mut ExplorerState, offset: Option<u64>) -> Vec<Effect> {
    let gen = sh.gen();
    let Some(f) = ex.follow.as_mut() else {
        return Vec::new();
    };
    f.tail_gen = gen;
    vec![Effect::Tail {
        gen,
        path: ex.path.clone(),
        offset,
        appendable: f.appendable,
        mode: f.mode,
    }]
}

/// The followed file changed.
pub fn tail(
    sh: &mut Shared,
    ex: &mut ExplorerState,
    gen: u64,
    event: TailEvent,
    now: Instant,
) -> Vec<Effect> {
    let Some(f) = ex.follow.as_mut() else {
        return Vec::new();
    };
    if gen != f.tail_gen || f.reload_gen.is_some() {
        return Vec::new();
    }
    match event {
        TailEvent::Appended(bytes) => {
            f.missing = false;
            f.last_write = Some(now);
            if f.error.is_some() {
                return Vec::new();
            }
            append(sh, ex, Some(&bytes), now)
        }
        TailEvent::Missing => {
            f.missing = true;
            sh.status = Some("the followed file is gone; waiting for it to come back".into());
            Vec::new()
        }
        TailEvent::Reload(why) => reload(sh, ex, why),
    }
}

fn reload(sh: &mut Shared, ex: &mut ExplorerState, why: &str) -> Vec<Effect> {
    let gen = sh.gen();
    let cursor_src = ex.device().map(|d| d.trace.src_index(ex.view.cursor));
    let Some(f) = ex.follow.as_mut() else {
        return Vec::new();
    };
    f.reload_gen = Some(gen);
    f.restore = if f.on { None } else { cursor_src };
    f.tail_gen = u64::MAX; // stop the old watcher's messages
    sh.status = Some(format!("{why}; reloading in the background…"));
    vec![load_effect(ex, gen, Progress::new(), Arc::default())]
}

/// Timer: applies the last equal-`t` group after a quiet moment; expires the new-peak
/// notice. Returns whether the screen changed, and the effects asked for.
pub fn tick(sh: &mut Shared, ex: &mut ExplorerState, now: Instant) -> (bool, Vec<Effect>) {
    let Some(f) = ex.follow.as_mut() else {
        return (false, Vec::new());
    };
    let mut changed = f.new_peak_until.is_some_and(|t| now >= t);
    if changed {
        f.new_peak_until = None;
    }
    // "write N s ago" changes once a second: redraw when the shown number changes.
    let shown = |at: Instant| {
        f.last_write
            .map(|w| at.saturating_duration_since(w).as_secs())
    };
    if f.now.map(shown) != Some(shown(now)) {
        changed = true;
    }
    f.now = Some(now);
    let quiet = f
        .last_write
        .is_none_or(|t| now.saturating_duration_since(t) >= IDLE_FLUSH);
    let mut fx = Vec::new();
    if f.pending_flush && quiet && f.error.is_none() {
        fx = append(sh, ex, None, now);
        changed = true;
    }
    // The rate fades out when writes stop.
    if let Some(f) = ex.follow.as_mut() {
        if let Some(since) = f.rate_since {
            if now.saturating_duration_since(since) > Duration::from_secs(3) {
                f.rate = 0.0;
                f.rate_since = None;
                f.rate_events = 0;
                changed = true;
            }
        }
    }
    (changed, fx)
}

/// Decodes `bytes` (or only flushes the pending group) into the current device and extends
/// the index, the per-device facts, the view and the live set.
fn append(
    sh: &mut Shared,
    ex: &mut ExplorerState,
    bytes: Option<&[u8]>,
    now: Instant,
) -> Vec<Effect> {
    let cur = ex.current;
    let whole = ex.devices.get(cur).is_some_and(|d| ex.view.is_whole(d));
    let Some(f) = ex.follow.as_mut() else {
        return Vec::new();
    };
    let Some(dec) = f.decoder.as_mut() else {
        return Vec::new();
    };
    let Some(slot) = ex.devices.get_mut(cur) else {
        return Vec::new();
    };
    // Copy-on-write: a search or live-set worker may still hold the old snapshot.
    let dev = Arc::make_mut(slot);
    let old_peak = dev.peak.map(|p| p.bytes);
    let (added, r) = dev.append(dec, bytes);
    f.pending_flush = bytes.is_some();
    if let Err(e) = r {
        f.error = Some(e.to_string());
        sh.status = Some(format!("follow stopped: {e}"));
    }
    let new_peak = dev.peak.map(|p| p.bytes);
    let last = dev.last();
    f.appended += added as u64;
    let since = *f.rate_since.get_or_insert(now);
    f.rate_events += added as u64;
    let secs = now.saturating_duration_since(since).as_secs_f64();
    if secs >= 0.5 {
        f.rate = f.rate_events as f64 / secs;
        f.rate_since = Some(now);
        f.rate_events = 0;
    }
    if new_peak > old_peak && old_peak.is_some() {
        f.new_peak_until = Some(now + NEW_PEAK_FLASH);
        if let Some(p) = new_peak {
            sh.status = Some(format!("▲ new peak {}", human_bytes(p.0)));
        }
    }
    let on = f.on;
    if added == 0 {
        return Vec::new();
    }
    let Some(dev) = ex.devices.get(cur).cloned() else {
        return Vec::new();
    };
    if whole {
        let cursor = if on { last } else { ex.view.cursor };
        let axis = ex.view.axis;
        let mut v = Viewport::whole(&dev, cursor);
        if axis != v.axis {
            v.toggle_axis(&dev);
        }
        ex.view = v;
    } else {
        let top = dev.peak.map_or(0, |p| p.bytes.0);
        ex.view.ymax = ex.view.ymax.max(top);
        if on {
            ex.view.cursor = last;
            ex.view.ensure_visible(&dev, last);
        }
    }
    nav::refresh_view(sh, ex);
    super::budget::refresh(sh, ex);
    nav::refresh_live(sh, ex)
}

/// `F`: resume or pause following.
pub fn toggle(sh: &mut Shared, ex: &mut ExplorerState) -> Vec<Effect> {
    let Some(f) = ex.follow.as_mut() else {
        sh.status = Some("not following a file: start memtide with -f FILE".into());
        return Vec::new();
    };
    f.on = !f.on;
    let on = f.on;
    sh.status = Some(
        if on {
            "following: newest events in sight"
        } else {
            "follow paused (F resumes)"
        }
        .into(),
    );
    match ex.device().cloned() {
        Some(dev) if on => nav::jump(sh, ex, dev.last()),
        _ => Vec::new(),
    }
}

/// A cursor move by the user pauses following.
pub fn pause_on_move(ex: &mut ExplorerState) {
    if let Some(f) = ex.follow.as_mut() {
        f.on = false;
    }
}
