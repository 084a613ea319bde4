//! The allocator simulator (criterion): `whatif` on a synthetic 2 M-entry snapshot history —
//! a training-like mix of small (≤ 1 MiB), 1–10 MiB and large requests, freed mostly in
//! reverse order (activations) with some long-lived ones, each free recorded as
//! `free_requested` + `free_completed` — replayed under the defaults, expandable segments
//! and max_split_size / power-of-two rounding. Throughput is trace entries per second on
//! one core; building the replay input from the history is measured apart.
//!
//! ```sh
//! CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
//!   cargo bench -p memtide-core --bench whatif -- --quick
//! ```

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use memtide_core::allocator::sim::{run, AllocConf, RunOptions, SimInput};
use memtide_core::allocator::{Entry, History, Op, PoolId};
use std::hint::black_box;

const ENTRIES: usize = 2_000_000;

fn synthetic(entries: usize) -> History {
    let mut h = History {
        device: "cuda:0".into(),
        pools: vec![PoolId(0, 0)],
        ..History::default()
    };
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut live: Vec<u64> = Vec::new();
    let mut next_addr = 0x7f00_0000_0000u64;
    let e = |op, addr, size| Entry {
        op,
        addr,
        size,
        place: 0,
    };
    while h.entries.len() < entries {
        let r = rnd();
        // Keep about 2,000 tensors live: allocate below, free above.
        let alloc = live.len() < 200 || (live.len() < 4000 && r % 2 == 0);
        if alloc {
            let size = match r % 10 {
                0..=5 => 512 + (rnd() % (1 << 20)),
                6..=8 => (1 << 20) + rnd() % (9 << 20),
                _ => (10 << 20) + rnd() % (90 << 20),
            };
            // Addresses only identify the allocation (the simulator places blocks itself).
            next_addr += 4096;
            h.entries.push(e(Op::Alloc, next_addr, size));
            live.push(next_addr);
        } else {
            // Mostly the newest (activations), sometimes an older one.
            let k = if r % 8 == 0 {
                (rnd() as usize) % live.len()
            } else {
                live.len() - 1
            };
            let a = live.swap_remove(k);
            h.entries.push(e(Op::FreeRequested, a, 0));
            h.entries.push(e(Op::FreeCompleted, a, 0));
        }
    }
    h.entries.truncate(entries);
    h
}

fn bench(c: &mut Criterion) {
    let h = synthetic(ENTRIES);
    let mut g = c.benchmark_group("whatif");
    g.sample_size(10);
    g.throughput(Throughput::Elements(ENTRIES as u64));
    g.bench_function("input_from_history_2M", |b| {
        b.iter(|| black_box(SimInput::from_history(&h)).ops.len())
    });
    let input = SimInput::from_history(&h);
    for (name, conf) in [
        ("defaults", ""),
        ("expandable_segments", "expandable_segments:True"),
        (
            "max_split_roundup",
            "max_split_size_mb:128,roundup_power2_divisions:4",
        ),
    ] {
        let conf = AllocConf::parse(conf).expect("a valid setting");
        g.bench_function(format!("run_2M_{name}"), |b| {
            b.iter(|| black_box(run(&input, &conf, &RunOptions::default())).reserved_peak)
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
