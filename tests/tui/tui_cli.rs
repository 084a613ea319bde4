//! The explorer's command-line edges without a terminal: no file, no TTY, a bad theme —
//! each a clear message and the error exit code, never a garbled screen.

#![allow(clippy::unwrap_used)]

use assert_cmd::cargo::cargo_bin_cmd;
use predicates::str::contains;

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/tui/train3.jsonl"
);

#[test]
fn without_a_terminal_the_explorer_points_to_summary() {
    cargo_bin_cmd!("memtide")
        .arg(FIXTURE)
        .assert()
        .code(2)
        .stderr(contains("needs a terminal"))
        .stderr(contains("memtide summary"));
}

#[test]
fn unknown_theme_is_an_error_naming_the_builtins() {
    cargo_bin_cmd!("memtide")
        .args(["--theme", "no-such-theme", FIXTURE])
        .assert()
        .code(2)
        .stderr(contains("default, light, mono"));
}

#[test]
fn without_a_terminal_diff_prints_text_and_two_files_need_a_terminal() {
    let a = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/sample-traces/train-3steps.jsonl"
    );
    let b = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/sample-traces/train-checkpointed.jsonl"
    );
    // `memtide diff A B` piped: the text report (README: 9536 vs 8512 MiB).
    cargo_bin_cmd!("memtide")
        .args(["diff", a, b])
        .assert()
        .success()
        .stdout(contains("peak A  9.312 GiB"))
        .stdout(contains("delta   -1.000 GiB"));
    // `memtide A B` is the diff screen, which needs a terminal.
    cargo_bin_cmd!("memtide")
        .args([a, b])
        .assert()
        .code(2)
        .stderr(contains("diff screen needs a terminal"));
    // `memtide lab` piped prints the text table instead of the screen.
    cargo_bin_cmd!("memtide")
        .args(["lab", "--capacity", "4", "--stride", "4"])
        .assert()
        .success()
        .stdout(contains("totals: 12 hits, 4 misses"));
}

#[test]
fn a_bad_capacity_is_an_error_before_the_screen_opens() {
    cargo_bin_cmd!("memtide")
        .args(["--capacity", "lots", FIXTURE])
        .assert()
        .code(2)
        .stderr(contains("--capacity"));
}
