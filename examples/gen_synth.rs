//! Writes a large synthetic memtide JSONL trace for load tests and benchmarks.
//! `cargo run --release --example gen_synth -- OUT.jsonl EVENTS`

use std::io::BufWriter;

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let out = args.next().unwrap_or_else(|| "synth.jsonl".into());
    let events: u64 = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000);
    let f = std::fs::File::create(&out)?;
    let mut w = BufWriter::with_capacity(1 << 20, f);
    memtide_core::synth::jsonl(events, 42, &mut w)?;
    println!("wrote {events} events to {out}");
    Ok(())
}
