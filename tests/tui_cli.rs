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
