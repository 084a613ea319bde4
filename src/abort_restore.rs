//! On Unix, a `SIGABRT` handler that gives the terminal back when the explorer aborts (a
//! stack overflow in any thread ends in `abort`, which no panic hook sees): the terminal's
//! settings saved at start are set again and mouse reporting and the alternate screen are
//! turned off, when the explorer held the terminal
//! (`memtide::tui::runtime::terminal::ACTIVE`). The process then ends as the abort it was.

#[cfg(unix)]
mod unix {
    use std::sync::atomic::Ordering;
    use std::sync::OnceLock;

    /// The terminal's settings at start (stdin's, when it is a terminal).
    static SAVED: OnceLock<libc::termios> = OnceLock::new();

    /// What the explorer's `restore` sends: mouse reporting off (the modes crossterm turns
    /// on, in its order), leave the alternate screen, show the cursor.
    const RESET: &[u8] =
        b"\x1b[?1006l\x1b[?1015l\x1b[?1003l\x1b[?1002l\x1b[?1000l\x1b[?1049l\x1b[?25h";

    /// Saves the terminal's settings and installs the handler.
    pub fn install() {
        // SAFETY: `isatty` and `tcgetattr` only read the terminal's state into `t`, a
        // zeroed plain C struct they fill.
        let saved = unsafe {
            let mut t: libc::termios = std::mem::zeroed();
            let ok = libc::isatty(libc::STDIN_FILENO) == 1
                && libc::tcgetattr(libc::STDIN_FILENO, &mut t) == 0;
            ok.then_some(t)
        };
        if let Some(t) = saved {
            let _ = SAVED.set(t);
        }
        let handler: extern "C" fn(libc::c_int) = on_abort;
        // SAFETY: installs a handler that makes only async-signal-safe calls; a refusal
        // leaves the default action.
        unsafe {
            libc::signal(libc::SIGABRT, handler as libc::sighandler_t);
        }
    }

    extern "C" fn on_abort(_: libc::c_int) {
        // SAFETY: `tcsetattr`, `write`, `signal` and `raise` are async-signal-safe; `SAVED` is
        // only read (an atomic load once set) and `RESET` is a static buffer.
        unsafe {
            if memtide::tui::runtime::terminal::ACTIVE.load(Ordering::SeqCst) {
                if let Some(t) = SAVED.get() {
                    libc::tcsetattr(libc::STDIN_FILENO, libc::TCSANOW, t);
                }
                libc::write(libc::STDOUT_FILENO, RESET.as_ptr().cast(), RESET.len());
            }
            // The abort goes on as if no handler had run (also for a SIGABRT sent by kill).
            libc::signal(libc::SIGABRT, libc::SIG_DFL);
            libc::raise(libc::SIGABRT);
        }
    }
}

/// Installs the handler (nothing to do off Unix).
pub fn install() {
    #[cfg(unix)]
    unix::install();
}
