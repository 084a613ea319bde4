//! Suites whose ignored tests run Python, PyTorch or maturin (`cargo test --test slow --
//! --include-ignored`): a binary of their own, so those runs never compete with timed tests.
//! One module per suite (add one with a `mod` line); `support` holds the shared helpers.

#[path = "../support/mod.rs"]
mod support;

mod conformance;
mod infer_truth;
mod pytest_marker;
mod python_api;
mod recorder;
mod samples;
mod wheel;
