//! Stable-Rust mutation fuzzer for every memtide reader: mutated fixtures fed in-process, panics
//! caught, a per-case time limit, a per-reader report and reproducer files.
//!
//! `cargo run --release --example fuzz_readers -- --cases 1000000 [--reader NAME] [--seed N]
//! [--timeout-ms 2000] [--out DIR]`; `--replay FILE --reader NAME` runs one file.

mod engine;

use clap::Parser;
use engine::{Config, Outcome, Stats, READERS};
use std::path::PathBuf;
use std::time::{Duration, Instant};

#[derive(Parser)]
#[command(about = "Feeds mutated fixtures to every memtide reader; exits 1 on a panic or hang")]
struct Args {
    /// Cases per reader.
    #[arg(long, default_value_t = 100_000)]
    cases: u64,
    /// The first case index (cases are reproducible from seed and index alone).
    #[arg(long, default_value_t = 0)]
    first: u64,
    /// Only this reader (pickle, snapshot, kineto, jsonl, timeline, theme, rules, device_log,
    /// nsys); repeatable.
    #[arg(long)]
    reader: Vec<String>,
    /// The run seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Per-case time limit; a longer case is a hang.
    #[arg(long, default_value_t = 2000)]
    timeout_ms: u64,
    /// Where reproducers go.
    #[arg(long, default_value = "target/fuzz-readers")]
    out: PathBuf,
    /// Seeds larger than this (decompressed) are left out.
    #[arg(long, default_value_t = engine::MAX_SEED)]
    max_seed: usize,
    /// Stop after this many seconds, reporting the cases run so far.
    #[arg(long)]
    max_seconds: Option<u64>,
    /// Run one file through `--reader` (panics are shown, not caught).
    #[arg(long)]
    replay: Option<PathBuf>,
    /// Write cases `--first` … `--first + --cases − 1` of each `--reader` to `--out` without
    /// running them (a case that aborted the process: `--out`'s `in-flight` file names it).
    #[arg(long)]
    write_cases: bool,
}

fn reader_index(name: &str) -> usize {
    READERS.iter().position(|r| *r == name).unwrap_or_else(|| {
        eprintln!("unknown reader {name:?}: one of {}", READERS.join(", "));
        std::process::exit(2)
    })
}

fn report(stats: &[Stats], readers: &[usize]) {
    println!(
        "{:<9} {:>10} {:>10} {:>10} {:>10} {:>7} {:>6} {:>9}",
        "reader", "cases", "cases/s", "ok", "errors", "panics", "hangs", "MB fed"
    );
    for &r in readers {
        let s = &stats[r];
        let rate = s.cases as f64 / s.time.as_secs_f64().max(1e-9);
        println!(
            "{:<9} {:>10} {:>10.0} {:>10} {:>10} {:>7} {:>6} {:>9.1}",
            READERS[r],
            s.cases,
            rate,
            s.ok,
            s.err,
            s.panics,
            s.hangs,
            s.bytes as f64 / 1e6
        );
    }
}

fn main() {
    let args = Args::parse();
    let readers: Vec<usize> = if args.reader.is_empty() {
        (0..READERS.len()).collect()
    } else {
        args.reader.iter().map(|n| reader_index(n)).collect()
    };
    if let Some(file) = &args.replay {
        let bytes = std::fs::read(file).expect("read the replay file");
        for &r in &readers {
            let t0 = Instant::now();
            let ok = engine::run_reader(r, &bytes);
            println!(
                "{}: {} in {:.3} s",
                READERS[r],
                if ok { "ok" } else { "error" },
                t0.elapsed().as_secs_f64()
            );
        }
        return;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let seeds = engine::load_seeds(&root, args.max_seed);
    for &r in &readers {
        eprintln!("{}: {} seeds", READERS[r], seeds.per_reader[r].len());
    }
    if args.write_cases {
        std::fs::create_dir_all(&args.out).expect("create --out");
        for &r in &readers {
            for i in args.first..args.first + args.cases {
                let p = args.out.join(format!("{}-case{i}.bin", READERS[r]));
                std::fs::write(&p, engine::make_case(&seeds, r, args.seed, i)).expect("write");
                println!("{}", p.display());
            }
        }
        return;
    }
    let shown = readers.clone();
    let cfg = Config {
        readers: readers.clone(),
        cases: vec![args.cases; READERS.len()],
        first: args.first,
        seed: args.seed,
        limit: Duration::from_millis(args.timeout_ms),
        out: Some(args.out.clone()),
        max_hangs: 8,
        deadline: args
            .max_seconds
            .map(|s| Instant::now() + Duration::from_secs(s)),
        progress: Some(Box::new(move |stats: &[Stats], el: Duration| {
            let done: Vec<String> = shown
                .iter()
                .map(|&r| format!("{} {}", READERS[r], stats[r].cases))
                .collect();
            let bad: u64 = stats.iter().map(|s| s.panics + s.hangs).sum();
            eprintln!(
                "[{:>6.0} s] {} | failures {bad}",
                el.as_secs_f64(),
                done.join(", ")
            );
        })),
    };
    let t0 = Instant::now();
    let (stats, failures) = engine::run(&seeds, cfg);
    println!(
        "seed {} · from case {} · {:.1} s wall · timeout {} ms",
        args.seed,
        args.first,
        t0.elapsed().as_secs_f64(),
        args.timeout_ms
    );
    report(&stats, &readers);
    for f in &failures {
        let what = match &f.outcome {
            Outcome::Panic(m) => format!("panic: {m}"),
            Outcome::Hang => format!("hang: over {} ms", args.timeout_ms),
            _ => continue,
        };
        println!("{} case {}: {what}", READERS[f.reader], f.index);
        if let Some(p) = &f.file {
            println!(
                "  replay: cargo run --release --example fuzz_readers -- --replay {} --reader {}",
                p.display(),
                READERS[f.reader]
            );
        }
    }
    if !failures.is_empty() {
        std::process::exit(1);
    }
}
