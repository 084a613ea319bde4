//! Terminal setup and teardown: raw mode, alternate screen, mouse capture, restored by an
//! RAII guard on every exit path, by a panic hook, before the out-of-memory exit
//! (`memtide_core::budget::before_exit`) and, on Unix, by the binary's `SIGABRT` handler
//! (`abort_restore`, which reads [`ACTIVE`]): an abort — a stack overflow in any thread —
//! would otherwise leave the shell in the alternate screen with mouse reporting on.

use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::Terminal;
use std::io::{self, Stdout};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the explorer holds the terminal (raw mode, alternate screen, mouse reporting):
/// what an abort handler must undo.
pub static ACTIVE: AtomicBool = AtomicBool::new(false);

pub type Term = Terminal<CrosstermBackend<Stdout>>;

/// Owns the terminal while the explorer runs; dropping it restores the terminal.
pub struct TerminalGuard {
    pub terminal: Term,
}

impl TerminalGuard {
    pub fn new() -> io::Result<TerminalGuard> {
        install_panic_hook();
        memtide_core::budget::before_exit(restore);
        ACTIVE.store(true, Ordering::SeqCst);
        enable_raw_mode()?;
        let mut out = io::stdout();
        if let Err(e) = execute!(out, EnterAlternateScreen, EnableMouseCapture) {
            restore();
            return Err(e);
        }
        match Terminal::new(CrosstermBackend::new(out)) {
            Ok(terminal) => Ok(TerminalGuard { terminal }),
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
        let _ = self.terminal.show_cursor();
    }
}

/// Leaves raw mode and the alternate screen (idempotent, errors ignored: best effort).
pub fn restore() {
    ACTIVE.store(false, Ordering::SeqCst);
    let _ = disable_raw_mode();
    let _ = execute!(io::stdout(), DisableMouseCapture, LeaveAlternateScreen);
}

fn install_panic_hook() {
    let prev = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        prev(info);
    }));
}
