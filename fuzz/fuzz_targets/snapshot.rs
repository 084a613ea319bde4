//! cargo-fuzz target: the snapshot reader (`formats::snapshot::read`, pickle or JSON) and the index and summary built on it, through the same entry the `fuzz_readers` driver uses.
#![no_main]

#[path = "../../examples/fuzz_readers/engine.rs"]
mod engine;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = engine::run_reader(1, data);
});
