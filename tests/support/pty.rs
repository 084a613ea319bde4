//! The PTY harness shared by the `pty` tests (as `support::pty`) and
//! `examples/follow_bench.rs` (with `#[path]`): spawn a binary in a pseudo-terminal
//! (portable-pty), drain its output on a background thread into a vt100 screen (or the child
//! blocks on a full PTY buffer),
//! send keys, wait for the exit with backoff. Each user takes what it needs of it.

#![allow(dead_code, clippy::unwrap_used)]

use portable_pty::{native_pty_system, Child, CommandBuilder, MasterPty, PtySize};
use std::io::{Read, Write};
use std::num::NonZeroU16;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Called on the reader thread after each chunk is parsed: the screen, and the chunk's size.
pub type OnOutput = Box<dyn FnMut(&vt100::Screen, usize) + Send>;

/// A binary running in a pseudo-terminal; killed when dropped.
pub struct Pty {
    parser: Arc<Mutex<vt100::Parser>>,
    writer: Box<dyn Write + Send>,
    child: Box<dyn Child + Send + Sync>,
    _master: Box<dyn MasterPty + Send>,
}

impl Pty {
    /// Runs `bin args…` on a `rows` × `cols` terminal (`TERM=xterm-256color`, colours on).
    pub fn spawn(bin: &Path, args: &[&str], rows: u16, cols: u16) -> Pty {
        Pty::spawn_watched(bin, args, rows, cols, Box::new(|_, _| {}))
    }

    /// [`Pty::spawn`], calling `on_output` as each chunk of output is parsed.
    pub fn spawn_watched(
        bin: &Path,
        args: &[&str],
        rows: u16,
        cols: u16,
        mut on_output: OnOutput,
    ) -> Pty {
        let pty = native_pty_system()
            .openpty(PtySize {
                rows,
                cols,
                pixel_width: 0,
                pixel_height: 0,
            })
            .expect("openpty");
        let mut cmd = CommandBuilder::new(bin);
        cmd.args(args);
        cmd.env("TERM", "xterm-256color");
        cmd.env_remove("NO_COLOR");
        let child = pty.slave.spawn_command(cmd).expect("spawn memtide");
        drop(pty.slave);
        let parser = Arc::new(Mutex::new(vt100::Parser::new(
            NonZeroU16::new(rows).unwrap(),
            NonZeroU16::new(cols).unwrap(),
            0,
        )));
        let mut rd = pty.master.try_clone_reader().expect("reader");
        let p2 = parser.clone();
        // Drain continuously, or the child blocks on a full PTY buffer; the thread ends at
        // EOF once the master is dropped.
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 1 << 16];
            loop {
                match rd.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let mut p = p2.lock().unwrap();
                        p.process(&buf[..n]);
                        on_output(p.screen(), n);
                    }
                }
            }
        });
        let writer = pty.master.take_writer().expect("writer");
        Pty {
            parser,
            writer,
            child,
            _master: pty.master,
        }
    }

    /// The screen's text now.
    pub fn screen(&self) -> String {
        self.parser.lock().unwrap().screen().contents()
    }

    /// Whether the alternate screen is active (the TUI is up).
    pub fn alternate_screen(&self) -> bool {
        self.parser.lock().unwrap().screen().alternate_screen()
    }

    /// Waits until the screen shows `text`, polling every 10 ms; panics after `limit`.
    pub fn wait_for(&self, text: &str, limit: Duration) -> String {
        self.wait_for_all(&[text], limit)
    }

    /// Waits until the screen shows every one of `texts` at once (a frame can arrive in
    /// several reads, and a row drawn later may still be the previous frame's); panics after
    /// `limit` with the screen.
    pub fn wait_for_all(&self, texts: &[&str], limit: Duration) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if texts.iter().all(|t| s.contains(t)) {
                return s;
            }
            if start.elapsed() > limit {
                panic!("timed out waiting for {texts:?}; screen:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Types `bytes`.
    pub fn send(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).unwrap();
        self.writer.flush().unwrap();
    }

    pub fn pid(&self) -> u32 {
        self.child.process_id().expect("child pid")
    }

    /// Waits (backing off) up to `limit` for the child to exit: its exit code, or None (then
    /// it is killed).
    pub fn wait_exit(&mut self, limit: Duration) -> Option<u32> {
        let start = Instant::now();
        let mut pause = Duration::from_millis(5);
        loop {
            if let Ok(Some(st)) = self.child.try_wait() {
                return Some(st.exit_code());
            }
            if start.elapsed() > limit {
                let _ = self.child.kill();
                return None;
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(Duration::from_millis(100));
        }
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

/// How long a PTY test waits for screen text: `MEMTIDE_PTY_TIMEOUT_S` seconds, default 20.
pub fn timeout() -> Duration {
    let s = std::env::var("MEMTIDE_PTY_TIMEOUT_S")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    Duration::from_secs(s)
}
