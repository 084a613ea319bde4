//! cargo-fuzz target: the memtide JSONL decoder (`formats::JsonlDecoder`, fed in pieces), through the same entry the `fuzz_readers` driver uses.
#![no_main]

#[path = "../../examples/fuzz_readers/engine.rs"]
mod engine;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = engine::run_reader(3, data);
});
