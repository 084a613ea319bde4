//! Kineto ingest throughput: `open::load` (the door's reading step alone) on a synthetic trace of the real shape
//! (pretty-printed `python_function` / `cpu_op` spans with args, `[memory]` instants).
//! Set `MEMTIDE_KINETO_BENCH=/path/trace.json` to measure a file of your own (e.g. the 1 GB one
//! from `cargo run --release --example gen_kineto -- /tmp/kbig.json 1100`). Before criterion's
//! samples it prints one load's MB/s and the peak RSS (VmHWM) as a share of the file:
//! `MEMTIDE_KINETO_BENCH=/tmp/k1g.json cargo bench --bench kineto` (append `-- none` to stop
//! after that line). The binary's own figures: `/usr/bin/time -f "%e s %M KB"
//! target/release/memtide summary --timings /tmp/k1g.json` (read MB/s on stderr, peak RSS last).
//! Goals on the 1 GB trace: >= 800 MB/s, peak RSS <= 15 % of the file. The line also gives the
//! floor measured in the same run: reading the file in 8 MiB chunks and counting its `{` bytes
//! (what any JSON reader must at least do), and the load's ratio to it.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use memtide_core::formats::{LoadOptions, Progress};
use memtide_core::open::load;
use std::io::Write;
use std::path::PathBuf;

/// About `mb` MB of trace: per op a Python frame, a leaf Python call, a cpu_op and one
/// allocation, frees of older allocations keeping ~300 live.
fn synthetic(mb: usize) -> PathBuf {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("target/bench-kineto-{mb}mb.json"));
    if path.exists() {
        return path;
    }
    let mut spans = String::new();
    let mut mem: Vec<(u64, i64, u64)> = Vec::new();
    let mut live: Vec<(u64, i64)> = Vec::new();
    let (mut t, mut i, mut total) = (5_077_464_335_096_375u64, 0u64, 0i64);
    while spans.len() + mem.len() * 330 < mb * 1_000_000 {
        let ev = |cat: &str, name: &str, ts: u64, dur: u64, args: &str| {
            format!(
                "\n  {{\n    \"ph\": \"X\",\n    \"cat\": \"{cat}\",\n    \"name\": \"{name}\",\n    \"pid\": 1,\n    \"tid\": 1,\n    \"ts\": {}.{:03},\n    \"dur\": {}.{:03}\n    ,\n    \"args\": {{\n      {args}\n    }}\n  }},",
                ts / 1000, ts % 1000, dur / 1000, dur % 1000
            )
        };
        spans += &ev(
            "python_function",
            "torch/nn/modules/linear.py(134): forward",
            t,
            30_000,
            &format!(
                "\"Python parent id\": {i}, \"Python id\": {}, \"Ev Idx\": {i}",
                i + 1
            ),
        );
        spans += &ev(
            "python_function",
            "<built-in function isinstance>",
            t + 200,
            412,
            "\"CallFrom\": \"torch/nn/modules/module.py:1963\", \"Ev Idx\": 2",
        );
        spans += &ev("cpu_op", "aten::mm", t + 1000, 28_000, "\"External id\": 3,\"Sequence number\": 1, \"Fwd thread id\": 0, \"Record function id\": 0, \"Concrete Inputs\": [\"\", \"\"], \"Input type\": [\"float\", \"float\"], \"Input Strides\": [[64, 1], [64, 1]], \"Input Dims\": [[32, 64], [64, 64]], \"Ev Idx\": 4");
        let bytes = 4096 + (i as i64 % 97) * 512;
        mem.push((t + 1500, bytes, i));
        live.push((i, bytes));
        if live.len() > 300 {
            let (a, b) = live.remove((i as usize * 7) % 300);
            mem.push((t + 28_000, -b, a));
        }
        t += 31_000;
        i += 1;
    }
    mem.sort_by_key(|m| m.0);
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).expect("create bench file"));
    write!(f, "{{\n  \"schemaVersion\": 1,\n  \"baseTimeNanoseconds\": 1790857026000000000,\n  \"traceEvents\": [{spans}").expect("write");
    for (k, (ts, b, a)) in mem.iter().enumerate() {
        total += b;
        let comma = if k + 1 == mem.len() { "" } else { "," };
        write!(f, "\n  {{\n    \"ph\": \"i\",\n    \"cat\": \"cpu_instant_event\",\n    \"s\": \"t\",\n    \"name\": \"[memory]\",\n    \"pid\": 1,\n    \"tid\": 1,\n    \"ts\": {}.{:03}\n    ,\n    \"args\": {{\n      \"Total Reserved\": 0, \"Total Allocated\": {total}, \"Bytes\": {b}, \"Device Id\": -1, \"Device Type\": 0, \"Addr\": {}, \"Ev Idx\": {k}\n    }}\n  }}{comma}", ts / 1000, ts % 1000, 0x7f00_0000_0000u64 + a * 4096).expect("write");
    }
    write!(f, "\n  ],\"traceName\": \"bench.json\" }}\n").expect("write");
    f.flush().expect("flush");
    path
}

/// The floor: the file read in 8 MiB chunks (as the reader thread does) and its `{` bytes
/// counted with `memchr`, in MB/s.
fn floor_mb_s(path: &std::path::Path, size: u64) -> f64 {
    use std::io::Read;
    let t0 = std::time::Instant::now();
    let mut f = std::fs::File::open(path).expect("bench file");
    let mut buf = vec![0u8; 8 << 20];
    let mut braces = 0usize;
    loop {
        let n = f.read(&mut buf).expect("reads");
        if n == 0 {
            break;
        }
        braces += memchr::memchr_iter(b'{', &buf[..n]).count();
    }
    std::hint::black_box(braces);
    size as f64 / 1e6 / t0.elapsed().as_secs_f64().max(1e-9)
}

/// One load before criterion's: MB/s and the process's peak RSS so far (VmHWM: startup plus
/// this one load), against the acceptance figures (>= 800 MB/s, RSS <= 15 % of the file).
fn one_load(path: &std::path::Path, size: u64) {
    let t0 = std::time::Instant::now();
    let l = load(path, &LoadOptions::default(), &Progress::new()).expect("loads");
    let s = t0.elapsed().as_secs_f64();
    let events: usize = l.traces.iter().map(|t| t.len()).sum();
    drop(l);
    let hwm_kb: u64 = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|st| {
            st.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        })
        .unwrap_or(0);
    let mb_s = size as f64 / 1e6 / s.max(1e-9);
    let floor = floor_mb_s(path, size);
    println!(
        "kineto one load: {} ({:.1} MB, {events} events) in {s:.3} s = {mb_s:.0} MB/s; floor (read + count braces) {floor:.0} MB/s, the load at {:.2}x the floor's time; peak RSS (VmHWM) {hwm_kb} KB = {:.1} % of the file",
        path.display(),
        size as f64 / 1e6,
        floor / mb_s.max(1e-9),
        hwm_kb as f64 * 1024.0 * 100.0 / size.max(1) as f64,
    );
}

fn bench(c: &mut Criterion) {
    let path = std::env::var_os("MEMTIDE_KINETO_BENCH")
        .map(PathBuf::from)
        .unwrap_or_else(|| synthetic(64));
    let size = std::fs::metadata(&path).expect("bench file").len();
    one_load(&path, size);
    let mut g = c.benchmark_group("kineto");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(size));
    g.bench_function("load", |b| {
        b.iter(|| {
            let l = load(&path, &LoadOptions::default(), &Progress::new()).expect("loads");
            assert!(!l.traces[0].is_empty());
            l
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
