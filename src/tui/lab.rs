//! The cache lab screen (`memtide lab`): its state, button geometry and reducer. The model is
//! the terminal-free [`memtide_core::lab`]; playback is driven by the runtime's ticks (an injected
//! clock), so tests never sleep.

use super::action::LabAction as A;
use super::effect::Effect;
use super::fmt;
use super::msg::Msg;
use super::shared::Shared;
use memtide_core::lab::{Lab, Player, ADDRESSES, MAX_REQUESTS};
use ratatui::layout::Rect;
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

/// The lab's reducer for messages that are not input (only ticks concern it); `None`:
/// nothing changed (no redraw).
pub fn update(sh: &mut Shared, st: &mut LabState, msg: Msg) -> Option<Vec<Effect>> {
    match msg {
        Msg::Tick { now } => (tick(sh, st, now) > 0).then(Vec::new),
        Msg::Resize { .. } => Some(Vec::new()),
        _ => None,
    }
}

/// Advances the clock to `now` and issues the requests playback owes; returns how many.
fn tick(sh: &mut Shared, st: &mut LabState, now: Instant) -> u64 {
    let origin = *st.origin.get_or_insert(now);
    st.now_ms = now.saturating_duration_since(origin).as_millis() as u64;
    let was_playing = st.player.playing();
    let n = st.player.tick(&mut st.lab, st.now_ms);
    if was_playing && !st.player.playing() && st.lab.finished() {
        sh.status = Some(finished_msg());
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
        fmt::thousands(MAX_REQUESTS)
    )
}

/// Applies one of the lab's actions (`Quit` and the help overlay are `tui::update`'s).
pub fn action(sh: &mut Shared, st: &mut LabState, a: A) -> Vec<Effect> {
    sh.status = None;
    let (c, s) = (st.lab.capacity(), st.lab.stride());
    match a {
        A::Help => sh.help = true,
        A::Step => {
            if st.lab.step().is_none() {
                sh.status = Some(finished_msg());
            }
        }
        A::Play => {
            if st.lab.finished() {
                sh.status = Some(finished_msg());
            } else {
                st.player.toggle(st.now_ms);
            }
        }
        A::Reset => {
            st.player.pause();
            st.lab.reset();
        }
        A::CapacityLess => set_capacity(st, c.saturating_sub(1)),
        A::CapacityMore => set_capacity(st, c + 1),
        A::StrideLess => set_stride(st, s.saturating_sub(1)),
        A::StrideMore => set_stride(st, s + 1),
        A::Focus => {
            st.focus = match st.focus {
                Focus::Capacity => Focus::Stride,
                Focus::Stride => Focus::Capacity,
            }
        }
        A::Decrease | A::Increase => match (st.focus, a == A::Increase) {
            (Focus::Capacity, true) => set_capacity(st, c + 1),
            (Focus::Capacity, false) => set_capacity(st, c.saturating_sub(1)),
            (Focus::Stride, true) => set_stride(st, s + 1),
            (Focus::Stride, false) => set_stride(st, s.saturating_sub(1)),
        },
        A::ClickAt { col, row } => return click(sh, st, col, row),
    }
    Vec::new()
}

/// A click presses the button under it, or focuses the control whose row it is on.
fn click(sh: &mut Shared, st: &mut LabState, col: u16, row: u16) -> Vec<Effect> {
    let l = LabLayout::new(sh.width, sh.height);
    let hit = |r: Rect| row == r.y && col >= r.x && col < r.x + r.width;
    let clicked = [
        (l.cap_minus, A::CapacityLess),
        (l.cap_plus, A::CapacityMore),
        (l.stride_minus, A::StrideLess),
        (l.stride_plus, A::StrideMore),
        (l.step, A::Step),
        (l.play, A::Play),
        (l.reset, A::Reset),
    ]
    .into_iter()
    .find(|(r, _)| hit(*r));
    if let Some((_, a)) = clicked {
        return action(sh, st, a);
    }
    if row == l.capacity {
        st.focus = Focus::Capacity;
    } else if row == l.stride {
        st.focus = Focus::Stride;
    }
    Vec::new()
}
