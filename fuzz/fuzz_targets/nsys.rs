//! cargo-fuzz target: Nsight Systems SQLite exports (`--nsys`), the bytes written to a file and loaded beside a snapshot, through the same entry the `fuzz_readers` driver uses.
#![no_main]

#[path = "../../examples/fuzz_readers/engine.rs"]
mod engine;

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = engine::run_reader(engine::NSYS, data);
});
