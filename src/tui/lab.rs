//! The cache lab screen (`memtide lab`): its state, button geometry and reducer. The model is
//! the terminal-free [`memtide_core::lab`]; playback is driven by the runtime's ticks (an injected
//! clock), so tests never sleep.

use super::action::Action;
use super::app::{App, Screen};
use super::effect::Effect;
use super::keymap::{self, Mode};
use super::msg::Msg;
use super::theme::Theme;
use memtide_core::lab::{Lab, Player, ADDRESSES, MAX_REQUESTS};
use ratatui::layout::Rect;
use std::path::PathBuf;
use std::time::Instant;

/// Which control the arrow keys change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    Capacity,
    Stride,
}

/// The lab screen's state.
#[derive(Debug)]
pub struct LabState {
    pub lab: Lab,
    pub player: Player,
    pub focus: Focus,
    /// The first tick's instant: the clock's zero.
    pub origin: Option<Instant>,
    /// The latest clock reading, ms since `origin` (play starts from it).
    pub now_ms: u64,
}

impl LabState {
    pub fn new(capacity: usize, stride: u64) -> LabState {
        LabState {
            lab: Lab::new(capacity, stride),
            player: Player::default(),
            focus: Focus::Capacity,
            origin: None,
            now_ms: 0,
        }
    }

    /// Misses among the first 16 requests, once 16 have been issued (the check of the
    /// prediction).
    pub fn first16_misses(&self) -> Option<u64> {
        let h = self.lab.history();
        (h.len() >= 16).then(|| h[..16].iter().filter(|r| !r.hit).count() as u64)
    }
}

/// An app showing the lab (no file, no load).
pub fn app(capacity: usize, stride: u64, theme: Theme, ascii: bool) -> App {
    let mut app = App::new(PathBuf::from("lab"), Default::default(), theme, ascii);
    app.screen = Screen::Ready;
    app.lab = Some(Box::new(LabState::new(capacity, stride)));
    app
}

/// Where the lab's rows and buttons are, shared by the reducer (mouse) and the drawing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LabLayout {
    pub title: u16,
    pub note: u16,
    pub capacity: u16,
    pub stride: u16,
    pub buttons: u16,
    pub prediction: u16,
    pub cache: u16,
    pub totals: u16,
    /// The check of the prediction, once 16 requests are issued.
    pub check: u16,
    pub history: u16,
    pub status: u16,
    pub cap_minus: Rect,
    pub cap_plus: Rect,
    pub stride_minus: Rect,
    pub stride_plus: Rect,
    pub step: Rect,
    pub play: Rect,
    pub reset: Rect,
}

/// Width of the control labels ("  capacity C ").
pub const LABEL_W: u16 = 13;

impl LabLayout {
    pub fn new(width: u16, height: u16) -> LabLayout {
        // Blank separator rows only when the terminal is tall enough.
        let gap = u16::from(height >= 20);
        let mut y = 0;
        let mut next = |extra: u16| {
            let r = y;
            y += 1 + extra;
            r
        };
        let title = next(0);
        let note = next(gap);
        let capacity = next(0);
        let stride = next(0);
        let buttons = next(gap);
        let prediction = next(2 + gap); // three lines
        let cache = next(0);
        let totals = next(0);
        let check = next(gap);
        let history = next(0);
        let btn = |x: u16, w: u16, row: u16| Rect::new(x, row, w.min(width.saturating_sub(x)), 1);
        LabLayout {
            title,
            note,
            capacity,
            stride,
            buttons,
            prediction,
            cache,
            totals,
            check,
            history,
            status: height.saturating_sub(1),
            cap_minus: btn(LABEL_W, 3, capacity),
            cap_plus: btn(LABEL_W + 7, 3, capacity),
            stride_minus: btn(LABEL_W, 3, stride),
            stride_plus: btn(LABEL_W + 7, 3, stride),
            step: btn(2, 8, buttons),
            play: btn(12, 9, buttons),
            reset: btn(23, 9, buttons),
        }
    }
}

fn mode(app: &App) -> Mode {
    if app.help {
        Mode::Help
    } else {
        Mode::Lab
    }
}

/// The lab's reducer (called by `update::update` while the lab is shown).
pub fn update(app: &mut App, msg: Msg) -> Vec<Effect> {
    let was_dirty = app.dirty;
    app.dirty = true;
    let a = match msg {
        Msg::Key(k) => keymap::map_key(mode(app), k),
        Msg::Mouse(m) => keymap::map_mouse(m).filter(|a| matches!(a, Action::ClickAt { .. })),
        Msg::Action(a) => Some(a),
        Msg::Resize { width, height } => {
            app.width = width;
            app.height = height;
            return Vec::new();
        }
        Msg::Tick { now } => {
            if tick(app, now) == 0 {
                app.dirty = was_dirty;
            }
            return Vec::new();
        }
        _ => None,
    };
    match a {
        Some(a) => action(app, a),
        None => {
            app.dirty = was_dirty;
            Vec::new()
        }
    }
}

/// Advances the clock to `now` and issues the requests playback owes; returns how many.
fn tick(app: &mut App, now: Instant) -> u64 {
    let Some(st) = app.lab.as_deref_mut() else {
        return 0;
    };
    let origin = *st.origin.get_or_insert(now);
    st.now_ms = now.saturating_duration_since(origin).as_millis() as u64;
    let was_playing = st.player.playing();
    let n = st.player.tick(&mut st.lab, st.now_ms);
    if was_playing && !st.player.playing() && st.lab.finished() {
        app.status = Some(finished_msg());
        return n.max(1);
    }
    n
}

/// Changing a control pauses playback and resets (totals always describe one setting).
fn set_capacity(st: &mut LabState, c: usize) {
    st.player.pause();
    st.lab.set_capacity(c.clamp(1, ADDRESSES as usize));
}

fn set_stride(st: &mut LabState, s: u64) {
    st.player.pause();
    st.lab.set_stride(s.min(ADDRESSES));
}

fn finished_msg() -> String {
    format!(
        "stopped at {} requests (the cap): r resets",
        crate::tui::fmt::thousands(MAX_REQUESTS)
    )
}

fn action(app: &mut App, a: Action) -> Vec<Effect> {
    if a == Action::Quit {
        app.quit = true;
        return vec![Effect::Quit];
    }
    if app.help {
        app.help = false;
        return Vec::new();
    }
    app.status = None;
    let (w, h) = (app.width, app.height);
    let Some(st) = app.lab.as_deref_mut() else {
        return Vec::new();
    };
    let (c, s) = (st.lab.capacity(), st.lab.stride());
    let mut status = None;
    match a {
        Action::Help => app.help = true,
        Action::LabStep if st.lab.step().is_none() => status = Some(finished_msg()),
        Action::LabPlay => {
            if st.lab.finished() {
                status = Some(finished_msg());
            } else {
                st.player.toggle(st.now_ms);
            }
        }
        Action::LabReset => {
            st.player.pause();
            st.lab.reset();
        }
        Action::LabCapacityLess => set_capacity(st, c.saturating_sub(1)),
        Action::LabCapacityMore => set_capacity(st, c + 1),
        Action::LabStrideLess => set_stride(st, s.saturating_sub(1)),
        Action::LabStrideMore => set_stride(st, s + 1),
        Action::LabFocus => {
            st.focus = match st.focus {
                Focus::Capacity => Focus::Stride,
                Focus::Stride => Focus::Capacity,
            }
        }
        Action::LabDecrease | Action::LabIncrease => {
            let up = a == Action::LabIncrease;
            match (st.focus, up) {
                (Focus::Capacity, true) => set_capacity(st, c + 1),
                (Focus::Capacity, false) => set_capacity(st, c.saturating_sub(1)),
                (Focus::Stride, true) => set_stride(st, s + 1),
                (Focus::Stride, false) => set_stride(st, s.saturating_sub(1)),
            }
        }
        Action::ClickAt { col, row } => {
            let l = LabLayout::new(w, h);
            let hit = |r: Rect| row == r.y && col >= r.x && col < r.x + r.width;
            let clicked = [
                (l.cap_minus, Action::LabCapacityLess),
                (l.cap_plus, Action::LabCapacityMore),
                (l.stride_minus, Action::LabStrideLess),
                (l.stride_plus, Action::LabStrideMore),
                (l.step, Action::LabStep),
                (l.play, Action::LabPlay),
                (l.reset, Action::LabReset),
            ]
            .into_iter()
            .find(|(r, _)| hit(*r));
            if let Some((_, a)) = clicked {
                return action(app, a);
            }
            // A click on a control's row focuses it.
            if row == l.capacity {
                st.focus = Focus::Capacity;
            } else if row == l.stride {
                st.focus = Focus::Stride;
            }
        }
        _ => {}
    }
    if status.is_some() {
        app.status = status;
    }
    Vec::new()
}
