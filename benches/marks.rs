//! Many marks: `summary` against `check` on the same JSONL file (the ratio in one run), for
//! 10,000 step marks and 200,000 step / phase / reset_peak marks, each step leaving a storage
//! live (a rising baseline: the survivor analysis runs). `cargo bench --bench marks`.
//! Issue 16's target: summary ≤ 5 × check at 10,000 steps; 200,000 marks in seconds.

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::Instant;

fn write_trace(path: &Path, marks: usize, kind: &str) -> std::io::Result<u64> {
    let mut f = std::io::BufWriter::new(std::fs::File::create(path)?);
    writeln!(
        f,
        "{{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\"}}"
    )?;
    let mut t = 1u64;
    for i in 0..marks as u64 {
        writeln!(
            f,
            "{{\"t\":{t},\"op\":\"mark\",\"name\":\"step {i}\",\"kind\":\"{kind}\"}}"
        )?;
        writeln!(f, "{{\"t\":{},\"op\":\"alloc\",\"id\":{},\"size\":4096,\"cat\":\"activation\",\"stack\":[\"train.py:9 step\"]}}", t + 1, 2 * i + 1)?;
        writeln!(
            f,
            "{{\"t\":{},\"op\":\"alloc\",\"id\":{},\"size\":1048576,\"cat\":\"activation\"}}",
            t + 2,
            2 * i + 2
        )?;
        writeln!(
            f,
            "{{\"t\":{},\"op\":\"free\",\"id\":{}}}",
            t + 3,
            2 * i + 2
        )?;
        t += 4;
    }
    f.flush()?;
    Ok(std::fs::metadata(path)?.len())
}

/// Best of `runs` wall times of `memtide ARGS`, in ms.
fn best_ms(args: &[&str], file: &Path, runs: usize) -> f64 {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            let out = Command::new(env!("CARGO_BIN_EXE_memtide"))
                .args(args)
                .arg(file)
                .output()
                .expect("memtide runs");
            assert!(out.status.code().is_some_and(|c| c <= 1), "{args:?} failed");
            t.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() -> std::io::Result<()> {
    let dir = std::env::temp_dir().join(format!("memtide-marks-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    println!(
        "{:<22} {:>9} {:>12} {:>10} {:>7}",
        "marks", "file MB", "summary ms", "check ms", "ratio"
    );
    for (marks, kind, runs) in [
        (10_000, "step", 5),
        (200_000, "step", 2),
        (200_000, "phase", 2),
        (200_000, "reset_peak", 2),
    ] {
        let file = dir.join(format!("{kind}-{marks}.jsonl"));
        let bytes = write_trace(&file, marks, kind)?;
        let s = best_ms(&["summary"], &file, runs);
        let c = best_ms(&["check", "--max-peak", "1TiB"], &file, runs);
        println!(
            "{:<22} {:>9.1} {:>12.1} {:>10.1} {:>6.1}×",
            format!("{marks} {kind}"),
            bytes as f64 / 1e6,
            s,
            c,
            s / c
        );
    }
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
