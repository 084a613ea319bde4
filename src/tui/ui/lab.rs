//! The cache lab screen: what the toy is (and is not), the C and s controls with +/- buttons,
//! Step/Play/Reset, the prediction (shown before any step), the slots in recency order,
//! totals and hit rate, and the request history with hits, misses and evictions.

use super::put;
use crate::tui::fmt;
use crate::tui::lab::{Focus, LabLayout, LabState, LABEL_W};
use crate::tui::shared::Shared;
use memtide_core::lab::{MAX_REQUESTS, PLAY_RATE_PER_SEC};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::Modifier;

/// Width of one history entry ("   3  12  miss, evicts 0").
const ENTRY_W: u16 = 26;

pub fn draw(buf: &mut Buffer, area: Rect, sh: &Shared, st: &LabState) {
    let p = Painter {
        l: LabLayout::new(area.width, area.height),
        w: area.width,
        sh,
        st,
        sep: format!(" {} ", sh.glyphs.sep()),
    };
    p.title(buf);
    p.controls(buf);
    p.buttons(buf);
    p.prediction(buf);
    p.cache(buf);
    p.totals(buf);
    p.check(buf);
    p.history(buf);
    p.status(buf);
}

/// What every part of the screen reads.
struct Painter<'a> {
    l: LabLayout,
    w: u16,
    sh: &'a Shared,
    st: &'a LabState,
    /// The field separator (" · ").
    sep: String,
}

impl Painter<'_> {
    /// Rows below the status row are never drawn; every row is checked against it.
    fn row(&self, y: u16) -> bool {
        y < self.l.status
    }

    /// The title and what the toy is not.
    fn title(&self, buf: &mut Buffer) {
        let (th, l, w, sep) = (&self.sh.theme, &self.l, self.w, &self.sep);
        let x = put(buf, 0, l.title, " memtide lab", w, th.header_title);
        put(
            buf,
            x,
            l.title,
            &format!("{sep}a teaching toy, deliberately unlike GPU memory"),
            w.saturating_sub(x),
            th.header_text,
        );
        if self.row(l.note) {
            put(
                buf,
                1,
                l.note,
                "An LRU cache of C entries: not bytes, aliases, lifetimes or an allocator.",
                w.saturating_sub(1),
                th.dim,
            );
        }
    }

    /// The C and s controls with their [-] [+] buttons.
    fn controls(&self, buf: &mut Buffer) {
        let (sh, st, th, l, w, lab) = (
            self.sh,
            self.st,
            &self.sh.theme,
            &self.l,
            self.w,
            &self.st.lab,
        );
        // Controls.
        let controls = [
            (
                l.capacity,
                Focus::Capacity,
                "capacity C",
                lab.capacity() as u64,
                "entries (1–16)",
            ),
            (
                l.stride,
                Focus::Stride,
                "stride   s",
                lab.stride(),
                "request i asks for (i × s) mod 16",
            ),
        ];
        for (y, focus, name, value, what) in controls {
            if !self.row(y) {
                continue;
            }
            let focused = st.focus == focus;
            let marker = if focused { sh.glyphs.selected() } else { " " };
            let style = if focused { th.status_key } else { th.text };
            put(buf, 1, y, marker, w.saturating_sub(1), th.cursor);
            put(buf, 2, y, name, LABEL_W.saturating_sub(2).min(w), style);
            put(
                buf,
                LABEL_W,
                y,
                &format!("[-] {value:>2} [+]  {what}"),
                w.saturating_sub(LABEL_W),
                th.text,
            );
            put(
                buf,
                LABEL_W,
                y,
                "[-]",
                w.saturating_sub(LABEL_W),
                th.status_key,
            );
            put(
                buf,
                LABEL_W + 7,
                y,
                "[+]",
                w.saturating_sub(LABEL_W + 7),
                th.status_key,
            );
        }
    }

    /// Step / Play / Reset and the playback state.
    fn buttons(&self, buf: &mut Buffer) {
        let (st, th, l, w, lab) = (self.st, &self.sh.theme, &self.l, self.w, &self.st.lab);
        if self.row(l.buttons) {
            let play = if st.player.playing() {
                "[ Pause ]"
            } else {
                "[ Play  ]"
            };
            for (r, label) in [(l.step, "[ Step ]"), (l.play, play), (l.reset, "[ Reset ]")] {
                put(buf, r.x, r.y, label, r.width, th.status_key);
            }
            let state = if st.player.playing() {
                format!("playing, {PLAY_RATE_PER_SEC} requests/s")
            } else if lab.finished() {
                format!("stopped at {} requests", fmt::thousands(MAX_REQUESTS))
            } else {
                "paused".to_string()
            };
            let x = l.reset.x + l.reset.width + 2;
            put(buf, x, l.buttons, &state, w.saturating_sub(x), th.dim);
        }
    }

    /// The prediction, read before any step.
    fn prediction(&self, buf: &mut Buffer) {
        let (th, l, w, lab) = (&self.sh.theme, &self.l, self.w, &self.st.lab);
        // The prediction, from the cycle length alone: readable before any step.
        let p = lab.prediction();
        let lines = [
            format!(
                "the stride visits {} distinct address{} per cycle;",
                p.cycle,
                if p.cycle == 1 { "" } else { "es" }
            ),
            format!(
                "with C = {} entr{} the first 16 requests will miss {} times",
                p.capacity,
                if p.capacity == 1 { "y" } else { "ies" },
                p.misses_first16
            ),
            if p.cycle as usize <= p.capacity {
                format!(
                    "({} ≤ {}: the cycle fits, only its first pass misses)",
                    p.cycle, p.capacity
                )
            } else {
                format!(
                    "({} > {}: LRU always evicts the entry needed next)",
                    p.cycle, p.capacity
                )
            },
        ];
        for (i, text) in lines.iter().enumerate() {
            let y = l.prediction + i as u16;
            if !self.row(y) {
                break;
            }
            if i == 0 {
                put(
                    buf,
                    1,
                    y,
                    "prediction:",
                    w.saturating_sub(1),
                    th.live_header,
                );
            }
            let style = if i == 2 { th.dim } else { th.text };
            put(buf, 13, y, text, w.saturating_sub(13), style);
        }
    }

    /// The cache slots.
    fn cache(&self, buf: &mut Buffer) {
        let (th, l, w, lab) = (&self.sh.theme, &self.l, self.w, &self.st.lab);
        // Slots, most recently used first; empty slots as dots.
        if self.row(l.cache) {
            let x = put(
                buf,
                1,
                l.cache,
                "cache, MRU → LRU:",
                w.saturating_sub(1),
                th.live_header,
            );
            let mut x = x + 1;
            for i in 0..lab.capacity() {
                let (s, style) = match lab.slots().get(i) {
                    Some(a) => (format!("{a:>3}"), th.header_title),
                    None => ("  ·".to_string(), th.dim),
                };
                x = put(buf, x, l.cache, &s, w.saturating_sub(x), style);
            }
        }
    }

    /// Requests, hits, misses and the hit rate.
    fn totals(&self, buf: &mut Buffer) {
        let (th, l, w, lab, sep) = (&self.sh.theme, &self.l, self.w, &self.st.lab, &self.sep);
        // Totals and the check of the prediction.
        if self.row(l.totals) {
            let rate = lab
                .hit_rate()
                .map_or("–".to_string(), |r| format!("{:.1}%", r * 100.0));
            let s = format!(
                "{} request{}{sep}{} hits{sep}{} misses{sep}hit rate {rate}",
                fmt::thousands(lab.issued()),
                if lab.issued() == 1 { "" } else { "s" },
                fmt::thousands(lab.hits()),
                fmt::thousands(lab.misses()),
            );
            put(buf, 1, l.totals, &s, w.saturating_sub(1), th.text);
        }
    }

    /// The check of the prediction.
    fn check(&self, buf: &mut Buffer) {
        let (st, th, l, w, lab) = (self.st, &self.sh.theme, &self.l, self.w, &self.st.lab);
        let p = lab.prediction();
        if self.row(l.check) {
            let s = match st.first16_misses() {
                Some(m) if m == p.misses_first16 => {
                    format!("check: the first 16 requests missed {m} times, as predicted")
                }
                Some(m) => format!(
                    "check: the first 16 requests missed {m} times, NOT the predicted {}",
                    p.misses_first16
                ),
                None => format!(
                    "check: {} of the first 16 requests issued",
                    lab.issued().min(16)
                ),
            };
            put(buf, 1, l.check, &s, w.saturating_sub(1), th.dim);
        }
    }

    /// The request history.
    fn history(&self, buf: &mut Buffer) {
        let (th, l, w, lab) = (&self.sh.theme, &self.l, self.w, &self.st.lab);
        // History, newest first, flowing down then across.
        if self.row(l.history) {
            put(
                buf,
                1,
                l.history,
                "history, newest first:    #  addr  result",
                w.saturating_sub(1),
                th.live_header,
            );
        }
        let top = l.history + 1;
        let rows = l.status.saturating_sub(top) as usize;
        let cols = (w.saturating_sub(1) / ENTRY_W).max(1) as usize;
        if rows > 0 {
            for (k, r) in lab.history().iter().rev().take(rows * cols).enumerate() {
                let (c, rr) = (k / rows, k % rows);
                let x = 1 + c as u16 * ENTRY_W;
                let y = top + rr as u16;
                let x = put(
                    buf,
                    x,
                    y,
                    &format!("{:>5}  {:>2}  ", r.i, r.addr),
                    w.saturating_sub(x),
                    th.text,
                );
                let (text, style) = match (r.hit, r.evicted) {
                    (true, _) => ("hit".to_string(), th.text),
                    (false, None) => ("miss".to_string(), th.error),
                    (false, Some(e)) => (format!("miss, evicts {e}"), th.error),
                };
                let style = if r.hit {
                    style
                } else {
                    style.add_modifier(Modifier::BOLD)
                };
                put(buf, x, y, &text, w.saturating_sub(x), style);
            }
        }
    }

    /// The status row.
    fn status(&self, buf: &mut Buffer) {
        let (sh, th, l, w) = (self.sh, &self.sh.theme, &self.l, self.w);
        // Status row: a message, or the key hints.
        let y = l.status;
        if let Some(msg) = &sh.status {
            put(buf, 1, y, msg, w.saturating_sub(1), th.status_bar);
            return;
        }
        let mut x = 0;
        for (k, what) in [
            ("Space", "step"),
            ("p", "play"),
            ("r", "reset"),
            ("c/C", "capacity"),
            ("s/S", "stride"),
            ("?", "help"),
            ("q", "quit"),
        ] {
            if x >= w {
                break;
            }
            x = put(buf, x, y, &format!(" {k}"), w - x, th.status_key);
            x = put(
                buf,
                x,
                y,
                &format!(" {what} "),
                w.saturating_sub(x),
                th.status_bar,
            );
        }
    }
}
