//! End-to-end runs of the real binary in a pseudo-terminal (portable-pty + vt100): open a
//! trace, jump to the peak, search, quit with the terminal restored; a bad file shows the
//! reader's error and exits non-zero. The PTY is drained on a background thread and the
//! tests wait for screen text (never a fixed sleep), with an env-tunable timeout.

#![allow(clippy::unwrap_used)]

use crate::support::pty as support;

use std::io::Write;
use std::path::Path;

const ROWS: u16 = 30;
const COLS: u16 = 100;

use support::timeout;

use crate::support::repo::tui_fixture as fixture;

/// The memtide binary on a `ROWS` × `COLS` PTY, with the tests' timeout.
struct Pty(support::Pty);

impl Pty {
    fn spawn(args: &[&str]) -> Pty {
        let bin = Path::new(env!("CARGO_BIN_EXE_memtide"));
        Pty(support::Pty::spawn(bin, args, ROWS, COLS))
    }

    fn wait_for(&self, text: &str) -> String {
        self.0.wait_for(text, timeout())
    }

    fn wait_for_all(&self, texts: &[&str]) -> String {
        self.0.wait_for_all(texts, timeout())
    }

    fn send(&mut self, bytes: &[u8]) {
        self.0.send(bytes);
    }

    /// The child's exit code (it must exit within the timeout).
    fn wait_exit(&mut self) -> u32 {
        match self.0.wait_exit(timeout()) {
            Some(code) => code,
            None => panic!("memtide did not exit; screen:\n{}", self.0.screen()),
        }
    }

    fn alternate_screen(&self) -> bool {
        self.0.alternate_screen()
    }
}

#[test]
fn open_peak_search_quit_restores_the_terminal() {
    let path = fixture("train3.jsonl");
    let mut p = Pty::spawn(&[path.to_str().unwrap()]);
    p.wait_for("live at #30");
    assert!(
        p.alternate_screen(),
        "the explorer runs on the alternate screen"
    );
    p.send(b"\x1b[H"); // Home
    p.wait_for("cursor #0 ");
    p.send(b"p");
    p.wait_for("cursor #30 ");
    // A frame can arrive in several reads: wait for its last part too.
    p.wait_for_all(&["view keeps 64.00 MiB", "cursor #30 ", "288.0 MiB"]);
    p.send(b"\x1b[H/adam.py");
    p.wait_for("5 storages match");
    p.send(b"\r");
    p.wait_for_all(&["match 1/5", "cursor #30 "]);
    p.send(b"q");
    assert_eq!(p.wait_exit(), 0);
    assert!(!p.alternate_screen(), "alternate screen left on exit");
}

#[test]
fn inspect_shows_the_holding_view() {
    let path = fixture("train3.jsonl");
    let mut p = Pty::spawn(&[path.to_str().unwrap()]);
    p.wait_for("live at #30");
    p.send(b"\r");
    p.wait_for_all(&["attn_probe", "model.py:31 attention"]);
    p.send(b"\x03"); // Ctrl-C
    assert_eq!(p.wait_exit(), 0);
    assert!(!p.alternate_screen());
}

#[test]
fn bad_file_shows_the_error_and_exits_non_zero() {
    let path = fixture("bad.jsonl");
    let mut p = Pty::spawn(&[path.to_str().unwrap()]);
    p.wait_for("cannot open");
    // The error view wraps long paths, so "line 2" may straddle a line break; and the rest
    // of the frame may still be on its way.
    let start = std::time::Instant::now();
    loop {
        let s = p.0.screen();
        let unwrapped: String = s.split_whitespace().collect();
        if unwrapped.contains("line2:") {
            break;
        }
        assert!(start.elapsed() < timeout(), "no 'line 2:' on screen:\n{s}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    p.send(b"q");
    assert_eq!(p.wait_exit(), 2);
    assert!(!p.alternate_screen());
}

/// A JSONL trace whose single allocation of `mib` MiB makes the peak.
fn one_alloc(mib: u64) -> String {
    format!(
        "{{\"memtide\":1}}\n{{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":{},\"cat\":\"activation\",\"name\":\"first\"}}\n",
        mib << 20
    )
}

#[test]
fn follow_shows_appends_and_survives_truncation_and_rotation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.jsonl");
    std::fs::write(&path, one_alloc(1)).unwrap();
    let mut p = Pty::spawn(&["-f", path.to_str().unwrap()]);
    p.wait_for("FOLLOW");
    p.wait_for("peak 1.000 MiB");
    // Appends: a new peak shows, with the notice.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    for (t, id) in [(2, 2), (3, 3)] {
        writeln!(
            f,
            "{{\"t\":{t},\"op\":\"alloc\",\"id\":{id},\"size\":{},\"cat\":\"param\",\"name\":\"appended {id}\"}}",
            2u64 << 20
        )
        .unwrap();
    }
    f.flush().unwrap();
    // The last equal-t group is applied after a quiet moment.
    p.wait_for("peak 5.000 MiB");
    p.wait_for("new peak");
    // Truncation (log rotation by copy-truncate): reloaded whole.
    std::fs::write(&path, one_alloc(7)).unwrap();
    p.wait_for("peak 7.000 MiB");
    // Replacement by rename (a writer's x.tmp renamed onto x): reloaded whole.
    let tmp = dir.path().join("run.jsonl.tmp");
    std::fs::write(&tmp, one_alloc(9)).unwrap();
    std::fs::rename(&tmp, &path).unwrap();
    p.wait_for("peak 9.000 MiB");
    p.send(b"q");
    assert_eq!(p.wait_exit(), 0);
    assert!(!p.alternate_screen());
}

use crate::support::repo::sample;

#[test]
fn diff_a_b_shows_both_peaks_and_quits_cleanly() {
    let (a, b) = (
        sample("train-3steps.jsonl"),
        sample("train-checkpointed.jsonl"),
    );
    let mut p = Pty::spawn(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    // The README's peaks: 9536 MiB plain, 8512 MiB checkpointed.
    p.wait_for_all(&["peak B 8.312 GiB", "peak A 9.312 GiB"]);
    assert!(
        p.alternate_screen(),
        "the diff screen runs on the alternate screen"
    );
    p.send(b"m");
    p.wait_for("step 1: peaks differ by");
    p.send(b"q");
    assert_eq!(p.wait_exit(), 0);
    assert!(!p.alternate_screen(), "alternate screen left on exit");
}

#[test]
fn two_files_open_the_diff_screen_in_the_explorer() {
    let (a, b) = (sample("train-3steps.jsonl"), sample("train-leak.jsonl"));
    let mut p = Pty::spawn(&[a.to_str().unwrap(), b.to_str().unwrap()]);
    // train-leak peaks at 10560 MiB (README).
    p.wait_for_all(&["peak B 10.31 GiB", "memtide diff"]);
    p.send(b"\x03");
    assert_eq!(p.wait_exit(), 0);
    assert!(!p.alternate_screen());
}

#[test]
fn lab_opens_shows_the_prediction_steps_and_quits() {
    let mut p = Pty::spawn(&["lab", "--capacity", "2", "--stride", "4"]);
    p.wait_for("will miss 16 times");
    p.send(b" ");
    p.wait_for("1 request ·");
    p.send(b"q");
    assert_eq!(p.wait_exit(), 0);
    assert!(!p.alternate_screen());
}
