//! Core benchmarks: JSONL ingest (MB/s, on one thread and on two), index build, `live_at`, `argmax`, timeline columns, on
//! generated traces (1 M events for ingest throughput, 10 M events for the index; generated at
//! bench time, never committed). Run: `cargo bench --bench core`.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use memtide_core::analysis::event_columns;
use memtide_core::formats::{JsonlDecoder, JsonlOptions};
use memtide_core::index::Index;
use memtide_core::trace::{Seq, Trace};
use std::hint::black_box;
use std::time::Duration;

fn parse(bytes: &[u8]) -> Trace {
    let mut trace = Trace::new("cuda:0", "bench", "jsonl");
    let mut dec = JsonlDecoder::new(JsonlOptions {
        has_external_spans: Some(false),
        ..JsonlOptions::default()
    });
    for chunk in bytes.chunks(4 << 20) {
        dec.feed(&mut trace, chunk).expect("valid synthetic trace");
    }
    dec.finish(&mut trace).expect("valid synthetic trace");
    trace
}

/// As `parse`, with the lines read and decoded on a second thread (`--single-thread` off,
/// files from 4 MiB).
fn parse_two_threads(bytes: &[u8]) -> Trace {
    let mut trace = Trace::new("cuda:0", "bench", "jsonl");
    let mut dec = JsonlDecoder::new(JsonlOptions {
        has_external_spans: Some(false),
        ..JsonlOptions::default()
    });
    memtide_core::formats::feed_two_threads(&mut dec, &mut trace, bytes)
        .expect("valid synthetic trace");
    dec.finish(&mut trace).expect("valid synthetic trace");
    trace
}

fn gen(events: u64) -> Vec<u8> {
    let mut v = Vec::new();
    memtide_core::synth::jsonl(events, 42, &mut v).expect("in-memory write");
    v
}

fn ingest(c: &mut Criterion) {
    let bytes = gen(1_000_000);
    let mut g = c.benchmark_group("ingest");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.sample_size(10).measurement_time(Duration::from_secs(15));
    g.bench_function("jsonl_1M_events", |b| b.iter(|| black_box(parse(&bytes))));
    g.bench_function("jsonl_1M_events_two_threads", |b| {
        b.iter(|| black_box(parse_two_threads(&bytes)))
    });
    g.finish();
}

fn index_10m(c: &mut Criterion) {
    let n = std::env::var("MEMTIDE_BENCH_EVENTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000_000u64);
    let bytes = gen(n);
    let trace = parse(&bytes);
    drop(bytes);
    let index = Index::build(&trace);
    eprintln!(
        "{n} events: index {:.1} B/event, trace columns {:.1} B/event, {} storages",
        index.heap_bytes() as f64 / n as f64,
        trace.heap_bytes() as f64 / n as f64,
        trace.storage_count()
    );
    let mut g = c.benchmark_group("index_10M");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.bench_function("build", |b| b.iter(|| black_box(Index::build(&trace))));
    g.finish();

    let mut g = c.benchmark_group("query_10M");
    let mut rng = 7u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    g.bench_function("live_at", |b| {
        b.iter_batched(
            || Seq(next() % n),
            |at| black_box(index.live_at(&trace, at)),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("argmax_random_range", |b| {
        b.iter_batched(
            || {
                let (a, c) = (next() % n, next() % n);
                (Seq(a.min(c)), Seq(a.max(c)))
            },
            |(lo, hi)| black_box(index.argmax(lo, hi)),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("bands_at", |b| {
        b.iter_batched(
            || Seq(next() % n),
            |at| black_box(index.bands_at(&trace, at)),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("columns_200_whole_trace", |b| {
        b.iter(|| black_box(event_columns(&trace, &index, Seq(0), Seq(n - 1), 200)))
    });
    g.finish();
}

criterion_group!(benches, ingest, index_10m);
criterion_main!(benches);
