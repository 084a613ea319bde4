//! The bare opcode walk over a snapshot pickle (the floor a decoder is measured against):
//! reads the file and skips every opcode's argument, building nothing; prints file MB,
//! opcode count, ms, MB/s and ns/opcode (best of the runs).
//!
//! `cargo run --release -p memtide-core --example floor_ops -- FILE.pickle [RUNS]`

use memtide_core::formats::walk_opcodes;
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        return Err("usage: floor_ops FILE.pickle [RUNS]".into());
    };
    let runs: u32 = args.next().map_or(Ok(3), |s| s.parse())?;
    let bytes = std::fs::metadata(&path)?.len();
    let mut best = f64::INFINITY;
    let mut ops = 0;
    for _ in 0..runs.max(1) {
        let t = Instant::now();
        ops = walk_opcodes(std::fs::File::open(&path)?)?;
        best = best.min(t.elapsed().as_secs_f64());
    }
    let mb = bytes as f64 / 1e6;
    println!(
        "{path}: {mb:.1} MB, {ops} opcodes, {:.1} ms, {:.0} MB/s, {:.2} ns/opcode (best of {runs})",
        best * 1e3,
        mb / best,
        best * 1e9 / ops.max(1) as f64
    );
    Ok(())
}
