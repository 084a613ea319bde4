//! The real binary in a pseudo-terminal: keys in, screens out (`cargo test --test pty`).
//! One module per suite (add one with a `mod` line); `support` holds the shared helpers.

#[path = "../support/mod.rs"]
mod support;

mod hostile_depth;
mod pty;
mod pty_80x24;
mod pty_oom;
mod pty_ranks;
