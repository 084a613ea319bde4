//! The allocator model (criterion): building the checkpointed model of a synthetic 2 M-entry
//! history, the query at a random instant (the state there, with its totals and segment
//! list), and — with `MEMTIDE_BENCH_SNAPSHOT=/path/big.pickle` (e.g. from
//! `tools/gen_snapshots.py --big /tmp/big.pickle --entries 2000000`) — a file's load alone
//! against load + allocator model (the overhead the model adds).
//!
//! Measured (2 shared cores, other builds running): build 623 ms, query 0.67 ms; a 169 MB,
//! 1.17 M-entry pickle loads in 3.07 s, 3.20 s with the model.
//!
//! ```sh
//! cargo bench -p memtide-core --bench allocator -- --quick
//! MEMTIDE_BENCH_SNAPSHOT=/tmp/big.pickle cargo bench -p memtide-core --bench allocator -- --quick
//! ```

use criterion::{criterion_group, criterion_main, Criterion};
use memtide_core::allocator::{Entry, History, Model, Op, PoolId};
use memtide_core::formats::{LoadOptions, Progress};
use std::hint::black_box;

/// A training-like history: 64 large segments of 64 MiB, 64 slots each; each entry allocates
/// a free slot or frees a used one (`free_requested` then `free_completed`), with a segment
/// freed and re-made now and then.
fn synthetic(entries: usize) -> History {
    const SEGS: u64 = 64;
    const SLOTS: u64 = 64;
    const SLOT: u64 = 1 << 20;
    let base = 0x7f00_0000_0000u64;
    let mut used = vec![false; (SEGS * SLOTS) as usize];
    let mut h = History {
        device: "cuda:0".into(),
        pools: vec![PoolId(0, 0)],
        ..History::default()
    };
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let e = |op, addr, size| Entry {
        op,
        addr,
        size,
        place: 0,
    };
    for s in 0..SEGS {
        h.entries
            .push(e(Op::SegmentAlloc, base + s * SLOTS * SLOT, SLOTS * SLOT));
    }
    while h.entries.len() < entries {
        let i = (rnd() % (SEGS * SLOTS)) as usize;
        let addr = base + i as u64 * SLOT;
        if used[i] {
            h.entries.push(e(Op::FreeRequested, addr, SLOT));
            h.entries.push(e(Op::FreeCompleted, addr, SLOT));
            used[i] = false;
        } else {
            h.entries.push(e(Op::Alloc, addr, SLOT - (rnd() % 4096)));
            used[i] = true;
        }
    }
    h.entries.truncate(entries);
    h
}

fn bench(c: &mut Criterion) {
    let h = synthetic(2_000_000);
    let mut g = c.benchmark_group("allocator");
    g.sample_size(10);
    g.bench_function("build_2M", |b| {
        b.iter(|| black_box(Model::build(h.clone()).len()))
    });
    let m = Model::build(h.clone());
    let mut k = 1u64;
    g.bench_function("query_random_2M", |b| {
        b.iter(|| {
            k = k
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let at = (k >> 33) as usize % m.len();
            let st = m.after(at);
            black_box((st.totals().reserved, st.segments().len()))
        })
    });
    g.finish();

    if let Some(path) = std::env::var_os("MEMTIDE_BENCH_SNAPSHOT") {
        let path = std::path::PathBuf::from(path);
        let mut g = c.benchmark_group("allocator_load_overhead");
        g.sample_size(10);
        let load = || {
            memtide_core::open::load(&path, &LoadOptions::default(), &Progress::new())
                .expect("load")
        };
        g.bench_function("load", |b| b.iter(|| black_box(load().traces.len())));
        g.bench_function("load_and_model", |b| {
            b.iter(|| {
                let l = load();
                let n: usize = l
                    .allocators
                    .into_iter()
                    .map(|h| Model::build(h).len())
                    .sum();
                black_box(n)
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
