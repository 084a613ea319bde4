//! Snapshot pickle decode against the floor (the bare opcode walk,
//! `memtide_core::formats::walk_opcodes`, also `examples/floor_ops.rs`), in one run on
//! one file: floor, decode only (`snapshot::read_pickle`) and load + index (as benches/snapshot.rs),
//! each best of N with MB/s and the ratio to the floor.
//!
//! `MEMTIDE_BENCH_SNAPSHOT=/tmp/b.pickle cargo bench -p memtide-core --bench snapshot_floor` (e.g. from
//! `tools/gen_snapshots.py --big /tmp/b.pickle --entries 1300000`, 220 MB); without it the
//! committed baseline (tests/data, 963 KB). `MEMTIDE_BENCH_RUNS` sets N (default 3 on a big file, more on a
//! small one).

use memtide_core::formats::snapshot::{read_pickle, read_pickle_threads};
use memtide_core::formats::{walk_opcodes, LoadOptions, Progress, Threads};
use memtide_core::index::Index;
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

fn best(runs: u32, mut f: impl FnMut() -> u64) -> (f64, u64) {
    let mut best = f64::INFINITY;
    let mut out = 0;
    for _ in 0..runs {
        let t = Instant::now();
        out = black_box(f());
        best = best.min(t.elapsed().as_secs_f64());
    }
    (best, out)
}

fn main() {
    let path = std::env::var_os("MEMTIDE_BENCH_SNAPSHOT").map_or_else(
        || {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/data/snapshot-baseline/baseline.pickle")
        },
        PathBuf::from,
    );
    let bytes = std::fs::metadata(&path).expect("snapshot file").len();
    let runs = std::env::var("MEMTIDE_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(((200e6 / bytes.max(1) as f64) as u32).clamp(3, 50));
    let open = || std::fs::File::open(&path).expect("open");
    let cpp = LoadOptions::default().cpp_frames;
    let mb = bytes as f64 / 1e6;
    println!("{}: {mb:.1} MB, best of {runs}", path.display());

    let (floor, ops) = best(runs, || walk_opcodes(open()).expect("walk"));
    println!(
        "  floor (opcode walk)  {:8.1} ms  {:6.0} MB/s  {ops} opcodes, {:.2} ns/opcode",
        floor * 1e3,
        mb / floor,
        floor * 1e9 / ops.max(1) as f64
    );
    let row = |name: &str, s: f64| {
        println!(
            "  {name:<20} {:8.1} ms  {:6.0} MB/s  {:.2}x the floor, {:.2} ns/opcode",
            s * 1e3,
            mb / s,
            s / floor,
            s * 1e9 / ops.max(1) as f64
        )
    };
    let (decode, _) = best(runs, || {
        read_pickle(open(), cpp).expect("decode").rows.len() as u64
    });
    row("decode (read)", decode);
    let (one, _) = best(runs, || {
        read_pickle_threads(open(), cpp, Threads::One)
            .expect("decode")
            .rows
            .len() as u64
    });
    row("decode, one thread", one);
    let (load, _) = best(runs, || {
        let loaded = memtide_core::open::load(&path, &LoadOptions::default(), &Progress::new())
            .expect("load");
        loaded
            .traces
            .iter()
            .map(|t| Index::build(t).len() as u64)
            .sum()
    });
    row("load + index", load);
    phases(&path, cpp);
}

/// One load split into its steps (one run each, after the best-of runs above warmed the
/// page cache): where the time after the decode goes.
fn phases(path: &Path, cpp: bool) {
    use memtide_core::formats::snapshot;
    let t = Instant::now();
    let raw = read_pickle(std::fs::File::open(path).expect("open"), cpp).expect("decode");
    let decode = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut traces = snapshot::build(&raw, "bench");
    let build = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let histories = snapshot::histories(&raw, &traces);
    let hist = t.elapsed().as_secs_f64();
    let t = Instant::now();
    memtide_core::open::infer_missing(&mut traces, &Default::default());
    let infer = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let n: usize = traces.iter().map(|t| Index::build(t).len()).sum();
    let index = t.elapsed().as_secs_f64();
    black_box((n, histories.len()));
    println!(
        "  one load, by step    decode {:.0} ms · timeline {:.0} ms · allocator history {:.0} ms · infer {:.0} ms · index {:.0} ms",
        decode * 1e3,
        build * 1e3,
        hist * 1e3,
        infer * 1e3,
        index * 1e3
    );
}
