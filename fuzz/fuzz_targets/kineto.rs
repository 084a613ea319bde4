//! cargo-fuzz target: the Kineto trace reader (`formats::read_kineto`) and the index built on it, through the same entry the `fuzz_readers` driver uses.
#![no_main]

#[path = "../../examples/fuzz_readers/engine.rs"]
mod engine;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = engine::run_reader(2, data);
});
