//! The explorer at 80×24, as over SSH (issue 52): the OOM panel's advice and the fixes checked
//! by replay are reached by keys on the bundled OOM snapshot; `/adam` on the bundled training
//! sample lands on the optimizer state at the peak and `n` steps on without leaving it; `-f`
//! on a file that is not there yet waits for it and opens it once written. The real binary
//! in a pseudo-terminal; waits for screen text, never a fixed sleep.

#![allow(clippy::unwrap_used)]

use crate::support::pty::{timeout, Pty};
use crate::support::repo::sample;
use std::path::Path;

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_memtide"))
}

/// The status row (the screen's last line).
fn status(screen: &str) -> &str {
    screen.trim_end().lines().last().unwrap_or("")
}

/// The rows the OOM panel's title says it shows (`J/K scroll 10–19/36`).
fn scroll_rows(screen: &str) -> String {
    screen
        .split("J/K scroll ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or("")
        .to_string()
}

/// Waits until the OOM panel's title names other rows than `before`.
fn wait_rows_change(p: &Pty, before: &str) -> String {
    let start = std::time::Instant::now();
    loop {
        let s = p.screen();
        if scroll_rows(&s) != before {
            return s;
        }
        assert!(
            start.elapsed() < timeout(),
            "J did not scroll past {before}:\n{s}"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn the_oom_panels_fixes_are_reached_by_keys_at_80x24() {
    let file = sample("cuda-oom.pickle");
    let mut p = Pty::spawn(bin(), &[file.to_str().unwrap()], 24, 80);
    p.wait_for("cursor #79 ", timeout());
    p.send(b"o");
    // The OOM (#80, sample-traces/README.md): the panel opens with its verdict; at 80×24 the
    // fixes are below its last row.
    let s = p.wait_for_all(
        &["cursor #80 ", "verdict           live_tensors"],
        timeout(),
    );
    assert!(!s.contains("expandable_segments"), "{s}");
    assert!(
        s.contains("J/K scroll 1–"),
        "the title says the panel scrolls:\n{s}"
    );
    // Page down until the replayed fixes show (four pages at most for this sample); each
    // J moves the rows the title names.
    let mut reached = false;
    let mut rows = scroll_rows(&s);
    for _ in 0..4 {
        p.send(b"J");
        let s = wait_rows_change(&p, &rows);
        rows = scroll_rows(&s);
        if s.contains("fix               expandable_segments:True: does not fit") {
            reached = true;
            break;
        }
    }
    assert!(reached, "the fixes never showed:\n{}", p.screen());
    // The last page ends on the savings; J there says so, K goes back up.
    for _ in 0..4 {
        p.send(b"J");
    }
    let s = p.wait_for("the end of the OOM panel (K: up)", timeout());
    assert!(
        s.contains("saving            estimate: a microbatch halved"),
        "{s}"
    );
    p.send(b"KKKKKK");
    let s = p.wait_for("the top of the OOM panel (J: down)", timeout());
    assert!(s.contains("requested         1.000 GiB"), "{s}");
    // Still on the OOM: the panel scrolled, the cursor did not move.
    assert!(s.contains("cursor #80 "), "{s}");
    p.send(b"q");
    assert_eq!(p.wait_exit(timeout()), Some(0));
}

/// Opens the bundled `sample` at 80×24, waits for `opened` (the cursor on the peak), types
/// `/adam` and Enter; the running explorer and the screen on the first match.
fn search_adam(sample_name: &str, opened: &str) -> (Pty, String) {
    let file = sample(sample_name);
    let mut p = Pty::spawn(bin(), &[file.to_str().unwrap()], 24, 80);
    p.wait_for(opened, timeout());
    p.send(b"/adam");
    p.wait_for("storages match", timeout());
    p.send(b"\r");
    let s = p.wait_for("match 1/", timeout());
    (p, s)
}

#[test]
fn search_for_adam_lands_on_optimizer_state_and_keeps_the_peak() {
    // The peak: #77 (sample-traces/README.md).
    let (mut p, s) = search_adam("train-3steps.jsonl", " #77 t=");
    // Adam's state (exp_avg, exp_avg_sq: category optimizer) is live at the peak; the
    // `adam foreach temp` buffers of step 0 are not, and come after.
    let st = status(&s);
    assert!(st.contains("exp_avg"), "status: {st}\n{s}");
    assert!(!st.contains("back to the peak"), "{st}");
    assert!(s.contains(" #77 t="), "the cursor left the peak:\n{s}");
    let selected = s.lines().find(|l| l.starts_with('▸')).unwrap_or("");
    assert!(
        selected.contains("persistent exp_avg"),
        "selected: {selected}\n{s}"
    );
    // `n` steps through the other optimizer-state matches, still at the peak.
    p.send(b"n");
    let s = p.wait_for("match 2/", timeout());
    assert!(status(&s).contains("exp_avg"), "{s}");
    assert!(s.contains(" #77 t="), "{s}");
    p.send(b"q");
    assert_eq!(p.wait_exit(timeout()), Some(0));
}

#[test]
fn search_on_the_oom_snapshot_ranks_optimizer_state_before_scattered_letters() {
    let (mut p, s) = search_adam("cuda-oom.pickle", "cursor #79 ");
    // AdamW's state (torch/optim/adamw.py … _init_group), not a relu activation whose
    // frames only scatter the letters a…d…a…m.
    let st = status(&s);
    assert!(st.contains("optimizer state"), "{st}\n{s}");
    assert!(!st.contains("relu"), "{st}");
    assert!(s.contains("cursor #79 "), "{s}");
    p.send(b"q");
    assert_eq!(p.wait_exit(timeout()), Some(0));
}

#[test]
fn follow_waits_for_a_file_that_is_not_there_yet() {
    let dir = tempfile::tempdir().unwrap();
    let run = dir.path().join("run.jsonl");
    let mut p = Pty::spawn(bin(), &["-f", run.to_str().unwrap()], 24, 80);
    p.wait_for("waiting for", timeout());
    p.wait_for("to appear", timeout());
    assert!(p.alternate_screen(), "the screen is up while it waits");
    // The recorder creates the file (empty first), then writes it.
    std::fs::write(&run, b"").unwrap();
    std::fs::write(&run, std::fs::read(sample("train-3steps.jsonl")).unwrap()).unwrap();
    // Following keeps the newest events in sight: the header shows the peak.
    p.wait_for("peak 9.312 GiB", timeout());
    p.send(b"q");
    assert_eq!(p.wait_exit(timeout()), Some(0));
}
