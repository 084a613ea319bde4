//! The OOM panel and the allocator view end to end: the real binary in a pseudo-terminal
//! (portable-pty + vt100) on an OOM snapshot made by tools/gen_oom_snapshots.py. The tests
//! wait for screen text (never a fixed sleep), with an env-tunable timeout.

#![allow(clippy::unwrap_used)]

use crate::support::pty as support;

use std::path::Path;

use support::timeout;

#[test]
fn o_lands_on_the_oom_with_its_verdict_and_s_shows_the_segments() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let file = root.join("tests/fixtures/oom/oom_fragmented.pickle");
    let bin = Path::new(env!("CARGO_BIN_EXE_memtide"));
    let mut p = support::Pty::spawn(
        bin,
        &[file.to_str().unwrap(), "--capacity", "8GiB"],
        30,
        120,
    );
    // The cursor opens on the peak (#14: all fourteen blocks allocated, README).
    p.wait_for("cursor #14 ", timeout());
    p.send(b"o");
    // The OOM is entry #29 (truth.json); 3.5 GiB free but no 1 GiB block: fragmentation.
    // The figures sit above the verdict row, so they are on screen once it is.
    p.wait_for_all(
        &[
            "verdict           fragmentation",
            "cursor #29 ",
            "largest free      512.0 MiB",
            "capacity          8.000 GiB",
        ],
        timeout(),
    );
    p.send(b"s");
    // One 7 GiB segment at the generator's base address 0x7E00_0000_0000.
    // (Waiting for the end of the row: a frame can arrive in several reads.)
    p.wait_for_all(
        &[
            "7.000 GiB  3.500 GiB  default",
            "allocator at #29",
            "0x7e0000000000",
        ],
        timeout(),
    );
    p.send(b"q");
    assert_eq!(p.wait_exit(timeout()), Some(0));
}
