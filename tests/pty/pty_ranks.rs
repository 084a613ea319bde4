//! The ranks overview end to end in a pseudo-terminal: `memtide DIR` fills its rows, Enter
//! opens the selected rank in the explorer, Esc returns to the overview, q quits with the
//! terminal restored.

#![allow(clippy::unwrap_used)]

use crate::support::pty as support;

use std::path::Path;

use support::timeout;

#[test]
fn open_a_rank_and_return_to_the_overview() {
    let job = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/ranks");
    let bin = Path::new(env!("CARGO_BIN_EXE_memtide"));
    let mut p = support::Pty::spawn(bin, &[job.to_str().unwrap()], 30, 100);
    p.wait_for_all(&["7/8 read", "worst rank 2"], timeout());
    assert!(p.alternate_screen());
    // w: the worst rank; Enter: its explorer.
    p.send(b"w");
    p.wait_for("rank 2 · rank2.pickle · cuda:0", timeout());
    p.send(b"\r");
    p.wait_for_all(
        &[
            "Esc: back to the ranks overview",
            "rank 2 · rank2.pickle",
            "live at",
        ],
        timeout(),
    );
    // Esc: the overview again, the same rank selected.
    p.send(b"\x1b");
    p.wait_for_all(
        &[
            "memtide ranks",
            "rank 2 · rank2.pickle · cuda:0",
            "Enter open  Space mark",
        ],
        timeout(),
    );
    p.send(b"q");
    assert_eq!(p.wait_exit(timeout()), Some(0));
    assert!(!p.alternate_screen(), "alternate screen left on exit");
}
