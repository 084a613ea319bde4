//! Snapshot load + index throughput (criterion).
//!
//! Always: the real-shaped baseline in tests/data (963 KB) and the committed fixtures. With
//! `MEMTIDE_BENCH_SNAPSHOT=/path/big.pickle` (e.g. from
//! `tools/gen_snapshots.py --big /tmp/big.pickle --entries 1000000`), also that file.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use memtide::formats::{self, LoadOptions, Progress};
use memtide::index::Index;
use std::hint::black_box;
use std::path::{Path, PathBuf};

fn load_and_index(path: &Path) -> usize {
    let loaded = formats::load(path, &LoadOptions::default(), &Progress::new()).expect("load");
    loaded.traces.iter().map(|t| Index::build(t).len()).sum()
}

fn bench(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<(String, PathBuf)> = vec![
        (
            "baseline.pickle".into(),
            root.join("tests/data/snapshot-baseline/baseline.pickle"),
        ),
        (
            "two_devices_p4.pickle".into(),
            root.join("tests/fixtures/snapshot/two_devices_p4.pickle"),
        ),
        (
            "small.json".into(),
            root.join("tests/fixtures/snapshot/small.json"),
        ),
    ];
    let big = std::env::var_os("MEMTIDE_BENCH_SNAPSHOT").map(PathBuf::from);
    if let Some(b) = &big {
        files.push(("big".into(), b.clone()));
    }
    let mut g = c.benchmark_group("snapshot_load_index");
    for (name, path) in files {
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        g.throughput(Throughput::Bytes(meta.len()));
        if meta.len() > 50 << 20 {
            g.sample_size(10);
        }
        g.bench_function(name, |b| b.iter(|| black_box(load_and_index(&path))));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
