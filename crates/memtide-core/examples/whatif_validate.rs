//! Validates the allocator simulator on snapshot files by hand: replays each file's own
//! allocs and frees under its recorded `allocator_settings` and prints how the simulated
//! reserved timeline and segment events compare with the recorded ones.
//!
//! `cargo run --release -p memtide-core --example whatif_validate -- FILE...`

use memtide_core::allocator::sim::{validate, AllocConf};
use memtide_core::formats::Progress;
use memtide_core::open::{open, OpenOptions};
use std::path::Path;

fn main() {
    for arg in std::env::args().skip(1) {
        let opened = match open(Path::new(&arg), &OpenOptions::default(), &Progress::new()) {
            Ok(l) => l,
            Err(e) => {
                eprintln!("{arg}: {e}");
                continue;
            }
        };
        let settings = opened
            .devices
            .first()
            .and_then(|d| d.trace.meta.iter().find(|(k, _)| k == "allocator_settings"))
            .and_then(|(_, v)| serde_json::from_str(v).ok());
        let conf = match settings.as_ref().map(AllocConf::from_settings) {
            Some(Ok(c)) => c,
            Some(Err(e)) => {
                eprintln!("{arg}: {e}");
                continue;
            }
            None => AllocConf::default(),
        };
        for h in opened.devices.iter().filter_map(|d| d.history()) {
            let v = validate(h, &conf);
            println!(
                "{arg} {}: conf [{conf}] compared {} equal {} ({:.1}%) reserved peak recorded {} simulated {} error {:+.3}% segment events recorded {} simulated {} matching prefix {} segments max recorded {} simulated {} prologue blocks {}",
                h.device,
                v.compared,
                v.equal,
                100.0 * v.share_equal,
                v.recorded_reserved_peak,
                v.simulated_reserved_peak,
                100.0 * v.reserved_peak_error,
                v.recorded_segment_events,
                v.simulated_segment_events,
                v.segment_events_matching_prefix,
                v.recorded_segments_max,
                v.simulated_segments_max,
                v.prologue_blocks
            );
        }
    }
}
