//! The terminal interface driven through its test harness, keys to frames (`cargo test --test tui`).
//! One module per suite (add one with a `mod` line); `support` holds the shared helpers.

#[path = "../support/mod.rs"]
mod support;

mod tui_allocator;
mod tui_budget;
mod tui_cli;
mod tui_diff;
mod tui_export;
mod tui_follow;
mod tui_keys;
mod tui_lab;
mod tui_owners;
mod tui_ranks;
mod tui_reducer;
mod tui_search;
mod tui_snapshots;
mod tui_whatif;
