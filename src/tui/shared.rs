//! The state every page shares: theme, terminal size, status line, help overlay, how the
//! session ends, the redraw flag and request generations. Mutated only by the reducers.

use super::theme::{Glyphs, Theme};

/// How a screen session ended (the command line maps it to an exit status).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Outcome {
    /// The user quit.
    #[default]
    Done,
    /// An input could not be read or compared (the error screen was shown).
    InputFailed,
}

/// What every page reads and the reducers write besides the page's own state.
#[derive(Debug)]
pub struct Shared {
    pub theme: Theme,
    pub glyphs: Glyphs,
    pub width: u16,
    pub height: u16,
    pub status: Option<String>,
    /// The `?` overlay is shown (any key but the scrolling ones closes it).
    pub help: bool,
    /// The first row the `?` overlay shows when it is taller than the screen.
    pub help_scroll: usize,
    pub quit: bool,
    /// How the session ended: an input that could not be read is a failure.
    pub outcome: Outcome,
    pub dirty: bool,
    pub next_gen: u64,
}

impl Shared {
    pub fn new(theme: Theme, ascii: bool) -> Shared {
        let glyphs = Glyphs::pick(&theme, ascii);
        Shared {
            theme,
            glyphs,
            width: 80,
            height: 24,
            status: None,
            help: false,
            help_scroll: 0,
            quit: false,
            outcome: Outcome::Done,
            dirty: true,
            next_gen: 1,
        }
    }

    /// A fresh generation id for a request (replies carry it; stale ones are dropped).
    pub fn gen(&mut self) -> u64 {
        let g = self.next_gen;
        self.next_gen += 1;
        g
    }
}
