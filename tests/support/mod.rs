//! The root's test helpers, one `support` module shared by every test binary (each `main.rs`
//! includes it with `#[path = "../support/mod.rs"] mod support;`); a binary uses only some.
#![allow(dead_code)]

pub mod files;
pub mod fixtures;
pub mod pickle_writer;
pub mod pty;
pub mod python_env;
pub mod repo;
