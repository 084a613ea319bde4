//! Follow mode (`memtide -f FILE`): the reducer side of the live tail. JSONL appends are
//! decoded into the current trace and the index is extended (never rebuilt); truncation,
//! deletion and replacement trigger a background reload that keeps the cursor's place.

use super::app::{App, Device, Screen};
use super::effect::Effect;
use crate::follow::{TailEvent, WatchMode};
use memtide_core::formats::jsonl::JsonlDecoder;
use memtide_core::formats::Progress;
use memtide_core::trace::{human_bytes, Seq};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What the follow loader hands back: the devices, and for JSONL the decoder to continue.
#[derive(Debug)]
pub struct FollowLoad {
    pub devices: Vec<Arc<Device>>,
    pub decoder: Option<Box<JsonlDecoder>>,
    /// Bytes of the file already read.
    pub offset: u64,
    /// JSONL grows by appends; other formats are reloaded whole on change.
    pub appendable: bool,
}

/// How long a new-peak notice stays lit.
pub const NEW_PEAK_FLASH: Duration = Duration::from_millis(2500);
/// Quiet time after which the last equal-`t` group is applied too.
const IDLE_FLUSH: Duration = Duration::from_millis(200);

/// Follow-mode state.
#[derive(Debug)]
pub struct FollowState {
    pub mode: WatchMode,
    /// Keeping the newest events in sight (moving the cursor pauses; `F` resumes).
    pub on: bool,
    pub decoder: Option<Box<JsonlDecoder>>,
    pub appendable: bool,
    pub tail_gen: u64,
    /// A background reload in flight (its load generation).
    pub reload_gen: Option<u64>,
    /// Source index the cursor had before a reload.
    pub restore: Option<u64>,
    pub last_write: Option<Instant>,
    /// Events per second over the recent appends.
    pub rate: f64,
    rate_since: Option<Instant>,
    rate_events: u64,
    pub appended: u64,
    pub new_peak_until: Option<Instant>,
    pending_flush: bool,
    /// Why following stopped (a bad appended line), if it did.
    pub error: Option<String>,
    pub missing: bool,
    /// Clock reading of the last tick (draw is pure: it reads time from here).
    pub now: Option<Instant>,
}

impl FollowState {
    pub fn new(mode: WatchMode) -> FollowState {
        FollowState {
            mode,
            on: true,
            decoder: None,
            appendable: false,
            tail_gen: 0,
            reload_gen: None,
            restore: None,
            last_write: None,
            rate: 0.0,
            rate_since: None,
            rate_events: 0,
            appended: 0,
            new_peak_until: None,
            pending_flush: false,
            error: None,
            missing: false,
            now: None,
        }
    }

    /// Whether the new-peak notice was lit at the last tick (for drawing).
    pub fn flashing_at_last_tick(&self) -> bool {
        match self.now {
            Some(now) => self.flashing(now),
            None => self.new_peak_until.is_some(),
        }
    }

    /// Whether the new-peak notice is lit at `now`.
    pub fn flashing(&self, now: Instant) -> bool {
        self.new_peak_until.is_some_and(|t| now < t)
    }
}

/// The load effect for follow mode.
pub fn load_effect(app: &mut App, gen: u64, progress: Progress) -> Effect {
    Effect::LoadFollow {
        gen,
        path: app.path.clone(),
        opts: app.opts.clone(),
        progress,
    }
}

/// A (re)load finished.
pub fn loaded(app: &mut App, gen: u64, result: Result<FollowLoad, String>) -> Vec<Effect> {
    let initial = matches!(&app.screen, Screen::Loading(l) if l.gen == gen);
    let reload = app.follow.as_ref().and_then(|f| f.reload_gen) == Some(gen);
    if !initial && !reload {
        return Vec::new();
    }
    let load = match result {
        Ok(l) if !l.devices.is_empty() => l,
        Ok(_) => {
            if initial {
                super::update::fail(app, "the file holds no device traces".into());
            }
            return Vec::new();
        }
        Err(e) => {
            if initial {
                super::update::fail(app, e);
            } else {
                app.status = Some(format!("reload failed: {e}; waiting for the next change"));
                if let Some(f) = app.follow.as_mut() {
                    f.reload_gen = None;
                }
                // Watch on from the file's current end (the worker reads it: no I/O here).
                return tail_effect(app, None);
            }
            return Vec::new();
        }
    };
    let offset = load.offset;
    app.current = super::update::pick_device(&load.devices, app.device_want.as_deref());
    app.devices = load.devices;
    app.screen = Screen::Ready;
    let (restore, on) = match app.follow.as_mut() {
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
    super::update::init_device(app);
    if let Some(dev) = app.device().cloned() {
        if let Some(src) = restore {
            // Positions equal source indices up to equal-t reordering: close enough to keep
            // the user's place.
            super::update::jump(app, Seq(src.min(dev.last().0)));
            if reload {
                app.status = Some("reloaded; the cursor kept its place".into());
            }
        } else if on {
            super::update::jump(app, dev.last());
        }
    }
    tail_effect(app, Some(offset))
}

/// Starts a new tail generation from `offset` (None: the file's end when the worker starts).
fn tail_effect(app: &mut App, offset: Option<u64>) -> Vec<Effect> {
    let gen = app.gen();
    let Some(f) = app.follow.as_mut() else {
        return Vec::new();
    };
    f.tail_gen = gen;
    vec![Effect::Tail {
        gen,
        path: app.path.clone(),
        offset,
        appendable: f.appendable,
        mode: f.mode,
    }]
}

/// The followed file changed.
pub fn tail(app: &mut App, gen: u64, event: TailEvent, now: Instant) -> Vec<Effect> {
    let Some(f) = app.follow.as_mut() else {
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
            append(app, Some(&bytes), now);
            Vec::new()
        }
        TailEvent::Missing => {
            f.missing = true;
            app.status = Some("the followed file is gone; waiting for it to come back".into());
            Vec::new()
        }
        TailEvent::Reload(why) => reload(app, why),
    }
}

fn reload(app: &mut App, why: &str) -> Vec<Effect> {
    let gen = app.gen();
    let cursor_src = app.device().map(|d| d.trace.src_index(app.view.cursor));
    let Some(f) = app.follow.as_mut() else {
        return Vec::new();
    };
    f.reload_gen = Some(gen);
    f.restore = if f.on { None } else { cursor_src };
    f.tail_gen = u64::MAX; // stop the old watcher's messages
    app.status = Some(format!("{why}; reloading in the background…"));
    let progress = Progress::new();
    vec![load_effect(app, gen, progress)]
}

/// Timer: applies the last equal-`t` group after a quiet moment; expires the new-peak notice.
pub fn tick(app: &mut App, now: Instant) -> bool {
    let Some(f) = app.follow.as_mut() else {
        return false;
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
    if f.pending_flush && quiet && f.error.is_none() {
        append(app, None, now);
        changed = true;
    }
    // The status line shows "last write N s ago": redraw about once a second while following.
    if let Some(f) = app.follow.as_mut() {
        if let Some(since) = f.rate_since {
            if now.saturating_duration_since(since) > Duration::from_secs(3) {
                f.rate = 0.0;
                f.rate_since = None;
                f.rate_events = 0;
                changed = true;
            }
        }
    }
    changed
}

/// Decodes `bytes` (or only flushes the pending group) into the current device and extends
/// the index, the per-device facts, the view and the live set.
fn append(app: &mut App, bytes: Option<&[u8]>, now: Instant) {
    let cur = app.current;
    let whole = app.devices.get(cur).is_some_and(|d| app.view.is_whole(d));
    let Some(f) = app.follow.as_mut() else { return };
    let Some(dec) = f.decoder.as_mut() else {
        return;
    };
    let Some(slot) = app.devices.get_mut(cur) else {
        return;
    };
    // Copy-on-write: a search or live-set worker may still hold the old snapshot.
    let dev = Arc::make_mut(slot);
    let before = dev.index.len();
    let old_peak = dev.peak.map(|p| p.bytes);
    let r = match bytes {
        Some(b) => dec.feed(&mut dev.trace, b),
        None => dec.flush(&mut dev.trace),
    };
    f.pending_flush = bytes.is_some();
    if let Err(e) = r {
        f.error = Some(e.to_string());
        app.status = Some(format!("follow stopped: {e}"));
    }
    dev.index.extend(&dev.trace);
    let added = dev.index.len() - before;
    if added > 0 {
        refresh_facts(dev, before);
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
            app.status = Some(format!("▲ new peak {}", human_bytes(p.0)));
        }
    }
    let on = f.on;
    if added == 0 {
        return;
    }
    let Some(dev) = app.devices.get(cur).cloned() else {
        return;
    };
    if whole {
        let cursor = if on { last } else { app.view.cursor };
        let axis = app.view.axis;
        let mut v = super::view::Viewport::whole(&dev, cursor);
        if axis != v.axis {
            v.toggle_axis(&dev);
        }
        app.view = v;
    } else {
        let top = dev.peak.map_or(0, |p| p.bytes.0);
        app.view.ymax = app.view.ymax.max(top);
        if on {
            app.view.cursor = last;
            app.view.ensure_visible(&dev, last);
        }
    }
    super::update::refresh_view(app);
    super::update::refresh_live(app);
}

/// Recomputes the per-device facts after events were appended from position `from`.
fn refresh_facts(dev: &mut Device, from: usize) {
    let last = Seq(dev.index.len() as u64 - 1);
    if let Some(p) =
        memtide_core::analysis::window_peak(&dev.trace, &dev.index, Seq(from as u64), last)
    {
        if dev.peak.is_none_or(|old| p.bytes > old.bytes) {
            dev.peak = Some(p);
        }
    }
    dev.refresh_marks();
}

/// The status-row text of follow mode (right-aligned by the caller).
pub fn status_text(f: &FollowState) -> String {
    let state = if f.error.is_some() {
        "✖ follow stopped".to_string()
    } else if f.reload_gen.is_some() {
        "↻ reloading".to_string()
    } else if f.on {
        "● FOLLOW".to_string()
    } else {
        "‖ paused (F)".to_string()
    };
    let rate = if f.rate > 0.0 {
        format!(" · {:.0} ev/s", f.rate)
    } else {
        String::new()
    };
    let ago = match (f.last_write, f.now) {
        (Some(w), Some(n)) => format!(" · write {}s ago", n.saturating_duration_since(w).as_secs()),
        _ => " · no writes yet".to_string(),
    };
    format!("{state}{rate}{ago} ")
}

/// `F`: resume or pause following.
pub fn toggle(app: &mut App) {
    let Some(f) = app.follow.as_mut() else {
        app.status = Some("not following a file: start memtide with -f FILE".into());
        return;
    };
    f.on = !f.on;
    let on = f.on;
    app.status = Some(
        if on {
            "following: newest events in sight"
        } else {
            "follow paused (F resumes)"
        }
        .into(),
    );
    if on {
        if let Some(dev) = app.device().cloned() {
            super::update::jump(app, dev.last());
        }
    }
}

/// A cursor move by the user pauses following.
pub fn pause_on_move(app: &mut App) {
    if let Some(f) = app.follow.as_mut() {
        if f.on {
            f.on = false;
        }
    }
}
