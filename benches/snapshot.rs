//! Snapshot load + index throughput (criterion).
//!
//! Always: the real-shaped baseline in tests/data (963 KB) and the committed fixtures. With
//! `MEMTIDE_BENCH_SNAPSHOT=/path/big.pickle` (e.g. from
//! `tools/gen_snapshots.py --big /tmp/big.pickle --entries 1000000`), also that file.
//!
//! `snapshot_json_decode`: JSON → raw model only (the scanner reader and the serde reference
//! reader), from memory; with `MEMTIDE_BENCH_SNAPSHOT_JSON=/path/big.json` (e.g. from
//! `tools/gen_snapshots.py --big /tmp/big.json --entries 12000`, 59 MB), also that file.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use memtide_core::formats::snapshot::{read_json, read_json_serde};
use memtide_core::formats::{LoadOptions, Progress};
use memtide_core::index::Index;
use std::hint::black_box;
use std::path::{Path, PathBuf};

fn load_and_index(path: &Path) -> usize {
    let loaded =
        memtide_core::open::load(path, &LoadOptions::default(), &Progress::new()).expect("load");
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

fn bench_json(c: &mut Criterion) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<(String, PathBuf)> = vec![(
        "small.json".into(),
        root.join("tests/fixtures/snapshot/small.json"),
    )];
    if let Some(b) = std::env::var_os("MEMTIDE_BENCH_SNAPSHOT_JSON") {
        files.push(("big.json".into(), PathBuf::from(b)));
    }
    let mut g = c.benchmark_group("snapshot_json_decode");
    for (name, path) in files {
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        if bytes.len() > 10 << 20 {
            g.sample_size(10);
        }
        g.bench_function(format!("scanner/{name}"), |b| {
            b.iter(|| black_box(read_json(&bytes[..], false).expect("read").rows.len()))
        });
        g.bench_function(format!("serde/{name}"), |b| {
            b.iter(|| black_box(read_json_serde(&bytes[..], false).expect("read").rows.len()))
        });
    }
    g.finish();
}

criterion_group!(benches, bench, bench_json);
criterion_main!(benches);
