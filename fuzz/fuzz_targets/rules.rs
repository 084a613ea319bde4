//! cargo-fuzz target: category rules TOML (`analysis::Rules::parse`), through the same entry the `fuzz_readers` driver uses.
#![no_main]

#[path = "../../examples/fuzz_readers/engine.rs"]
mod engine;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = engine::run_reader(6, data);
});
