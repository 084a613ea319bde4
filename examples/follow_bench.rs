//! Live-tail acceptance benchmark (issue 5): runs the real release binary (`memtide -f`) in a
//! pseudo-terminal and measures (1) append-to-screen latency at 20,000 events/s, (2) the CPU
//! use of an idle follower (inotify and `--poll 250`), (3) key-response time while 1 M events
//! are appended. Build the binary first:
//! `cargo build --release && cargo run --release --example follow_bench`
//! Environment: `MEMTIDE_BIN` (the binary), `FOLLOW_BENCH_SECS` (streaming time, default 10),
//! `FOLLOW_BENCH_PRELOAD` (events already in the file for the second latency run, default
//! 1 M, 0 skips), `FOLLOW_BENCH_ONLY=13` (run only parts 1 and 3), `FOLLOW_BENCH_PERF=OUT`
//! (perf record the follower during part 3).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../tests/support/pty.rs"]
mod pty;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

const ROWS: u16 = 40;
/// Wide enough that the header's `peak X @ #N` is never cut off.
const COLS: u16 = 200;
/// Streaming rate of part 1.
const RATE: u64 = 20_000;
/// Lines per write in part 1: 49 alloc/free pairs, then one peak-raising alloc (≈5 ms apart).
const BATCH: u64 = 99;
/// Part 3's append.
const BIG: u64 = 1_000_000;

/// What the PTY reader saw on the screen, with the instant it first saw it.
#[derive(Default)]
struct Obs {
    /// Every change of the header's `@ #N` (the peak's source index), in screen order.
    peak_hist: Vec<(Instant, u64)>,
    help: bool,
    help_changes: u64,
    help_changed_at: Option<Instant>,
    follow_seen: bool,
    status_row: String,
    /// The status row's `N ev/s`, each time it changes.
    rates: Vec<(Instant, f64)>,
    bytes: u64,
}

struct Shared {
    obs: Mutex<Obs>,
    cv: Condvar,
}

/// memtide on a PTY, with the screen facts its output showed, timestamped.
struct Pty {
    shared: Arc<Shared>,
    pty: pty::Pty,
}

/// `@ #N` in the header row.
fn parse_peak_index(row: &str) -> Option<u64> {
    let i = row.find("@ #")?;
    let digits: String = row[i + 3..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

/// `N ev/s` in the status row.
fn parse_rate(row: &str) -> Option<f64> {
    let i = row.find(" ev/s")?;
    let head = &row[..i];
    let j = head
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |j| j + 1);
    head[j..].parse().ok()
}

impl Pty {
    fn spawn(bin: &Path, args: &[&str]) -> Pty {
        let shared = Arc::new(Shared {
            obs: Mutex::new(Obs::default()),
            cv: Condvar::new(),
        });
        let s2 = shared.clone();
        // Timestamp every change of the watched screen facts as soon as the bytes are parsed.
        let watch = move |scr: &vt100::Screen, n: usize| {
            let row0 = scr.rows(0, COLS).next().unwrap_or_default();
            let help = scr.contents().contains("any key closes");
            let status = scr.rows(0, COLS).last().unwrap_or_default();
            let now = Instant::now();
            let mut o = s2.obs.lock().unwrap();
            o.bytes += n as u64;
            if let Some(idx) = parse_peak_index(&row0) {
                if o.peak_hist.last().is_none_or(|&(_, last)| last != idx) {
                    o.peak_hist.push((now, idx));
                }
            }
            if help != o.help {
                o.help = help;
                o.help_changes += 1;
                o.help_changed_at = Some(now);
            }
            if status.contains("FOLLOW") {
                o.follow_seen = true;
                o.status_row = status.trim().to_string();
                if let Some(r) = parse_rate(&status) {
                    if o.rates.last().is_none_or(|&(_, last)| last != r) {
                        o.rates.push((now, r));
                    }
                }
            }
            drop(o);
            s2.cv.notify_all();
        };
        let pty = pty::Pty::spawn_watched(bin, args, ROWS, COLS, Box::new(watch));
        Pty { shared, pty }
    }

    fn pid(&self) -> u32 {
        self.pty.pid()
    }

    fn screen(&self) -> String {
        self.pty.screen()
    }

    /// Waits (up to `limit`) until `pred` holds for the observations.
    fn wait(&self, limit: Duration, pred: impl Fn(&Obs) -> bool) -> bool {
        let end = Instant::now() + limit;
        let mut o = self.shared.obs.lock().unwrap();
        loop {
            if pred(&o) {
                return true;
            }
            let now = Instant::now();
            if now >= end {
                return false;
            }
            o = self.shared.cv.wait_timeout(o, end - now).unwrap().0;
        }
    }

    fn send(&mut self, bytes: &[u8]) {
        self.pty.send(bytes);
    }

    fn last_peak(&self) -> Option<u64> {
        self.shared
            .obs
            .lock()
            .unwrap()
            .peak_hist
            .last()
            .map(|p| p.1)
    }

    fn quit(mut self) {
        self.send(b"q");
        let _ = self.pty.wait_exit(Duration::from_secs(5));
    }
}

/// Writes JSONL v1 event lines with distinct, increasing `t`. Each batch is `pairs` alloc/free
/// pairs of a 1 KiB temporary, then one 4 KiB alloc that is never freed: it raises the peak,
/// so the header's `@ #N` becomes that line's index.
struct Gen {
    /// Index of the next event line (header not counted; the initial file holds event 0).
    next: u64,
    t: u64,
    id: u64,
}

impl Gen {
    fn new() -> Gen {
        Gen {
            next: 1,
            t: 1,
            id: 1,
        }
    }

    fn initial_file() -> String {
        "{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\",\"source\":\"follow_bench\"}\n\
         {\"t\":0,\"op\":\"alloc\",\"id\":0,\"size\":1048576,\"cat\":\"param\",\"name\":\"base\",\"stack\":[\"bench.py:1 setup\"]}\n"
            .to_string()
    }

    /// Appends one batch to `out`; returns the peak-raising line's index (the batch's last).
    fn batch(&mut self, out: &mut Vec<u8>, pairs: u64) -> u64 {
        for _ in 0..pairs {
            self.id += 1;
            self.t += 1;
            let _ = writeln!(
                out,
                "{{\"t\":{},\"op\":\"alloc\",\"id\":{},\"size\":1024,\"cat\":\"activation\",\"name\":\"tmp\",\"stack\":[\"model.py:42 forward\"]}}",
                self.t, self.id
            );
            self.t += 1;
            let _ = writeln!(
                out,
                "{{\"t\":{},\"op\":\"free\",\"id\":{}}}",
                self.t, self.id
            );
            self.next += 2;
        }
        self.id += 1;
        self.t += 1;
        let _ = writeln!(
            out,
            "{{\"t\":{},\"op\":\"alloc\",\"id\":{},\"size\":4096,\"cat\":\"activation\",\"name\":\"keep\",\"stack\":[\"model.py:50 forward\"]}}",
            self.t, self.id
        );
        self.next += 1;
        self.next - 1
    }
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// utime + stime of a process, in clock ticks.
fn cpu_ticks(pid: u32) -> u64 {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the `(comm)`: state is field 3, utime 14, stime 15.
    let rest = s.rsplit_once(')').map_or("", |r| r.1);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let get = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    get(11) + get(12)
}

fn clk_tck() -> u64 {
    std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(100)
}

fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "?".into());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    format!(
        "{cpus} cores available ({model}), shared; load average {}",
        load.join(" ")
    )
}

fn binary() -> PathBuf {
    if let Some(b) = std::env::var_os("MEMTIDE_BIN") {
        return PathBuf::from(b);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin = root.join("target/release/memtide");
    assert!(
        bin.exists(),
        "{} is missing: run `cargo build --release` first",
        bin.display()
    );
    // Warn when a source file is newer than the binary (cargo run --example does not rebuild
    // the binary target).
    let built = std::fs::metadata(&bin).and_then(|m| m.modified()).ok();
    let newest = newest_mtime(&root.join("src"));
    if let (Some(b), Some(n)) = (built, newest) {
        if n > b {
            eprintln!(
                "warning: {} is older than src/: run `cargo build --release` first",
                bin.display()
            );
        }
    }
    bin
}

fn newest_mtime(dir: &Path) -> Option<std::time::SystemTime> {
    let mut best = None;
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        let t = if p.is_dir() {
            newest_mtime(&p)
        } else {
            e.metadata().and_then(|m| m.modified()).ok()
        };
        if t > best {
            best = t;
        }
    }
    best
}

/// Part 1: append-to-screen latency while appending at `RATE` events/s.
fn latency(bin: &Path, dir: &Path, secs: u64, preload: u64) {
    println!(
        "\n== 1. append-to-screen latency at {RATE} events/s (file starts with {} events) ==",
        preload + 1
    );
    let path = dir.join("stream.jsonl");
    let mut gen = Gen::new();
    let mut body = Gen::initial_file().into_bytes();
    while gen.next - 1 < preload {
        gen.batch(&mut body, (BATCH - 1) / 2);
    }
    let preload_idx = gen.next - 1;
    std::fs::write(&path, &body).unwrap();
    drop(body);
    let p = Pty::spawn(bin, &["-f", path.to_str().unwrap()]);
    assert!(
        p.wait(Duration::from_secs(60), |o| o.follow_seen
            && o.peak_hist.last().is_some_and(|&(_, i)| i >= preload_idx)),
        "memtide did not show the followed file; screen:\n{}",
        p.screen()
    );
    std::thread::sleep(Duration::from_millis(300));
    let mut f = OpenOptions::new().append(true).open(&path).unwrap();
    let initial_size = f.metadata().map_or(0, |m| m.len());
    let interval = Duration::from_secs_f64(BATCH as f64 / RATE as f64);
    let pairs = (BATCH - 1) / 2;
    let mut sent: Vec<(Instant, u64)> = Vec::new();
    let mut buf = Vec::with_capacity(16 << 10);
    let cpu0 = cpu_ticks(p.pid());
    let start = Instant::now();
    let mut k = 0u32;
    let mut late = 0u32;
    while start.elapsed() < Duration::from_secs(secs) {
        let due = start + interval * k;
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        } else if now - due > interval {
            late += 1;
        }
        buf.clear();
        let last = gen.batch(&mut buf, pairs);
        let at = Instant::now();
        f.write_all(&buf).unwrap();
        f.flush().unwrap();
        sent.push((at, last));
        k += 1;
    }
    let wrote = start.elapsed();
    let cpu1 = cpu_ticks(p.pid());
    let final_idx = gen.next - 1;
    // The very last line is held until ~200 ms of quiet (the decoder's equal-t rule).
    let caught_up = p.wait(Duration::from_secs(10), |o| {
        o.peak_hist.last().is_some_and(|&(_, i)| i >= final_idx)
    });
    let hist = p.shared.obs.lock().unwrap().peak_hist.clone();
    let mut shown: Vec<f64> = p
        .shared
        .obs
        .lock()
        .unwrap()
        .rates
        .iter()
        .filter(|(t, _)| *t > start + Duration::from_secs(1) && *t < start + wrote)
        .map(|r| r.1)
        .collect();
    shown.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let screen_bytes = p.shared.obs.lock().unwrap().bytes;
    p.quit();
    // Latency of each batch's last line; the final batch waits for the quiet flush, so it is
    // reported separately.
    let mut lat: Vec<f64> = Vec::new();
    let mut missing = 0;
    for &(at, idx) in &sent[..sent.len() - 1] {
        let j = hist.partition_point(|&(_, i)| i < idx);
        match hist.get(j) {
            Some(&(seen, _)) => lat.push(ms(seen.saturating_duration_since(at))),
            None => missing += 1,
        }
    }
    let last_lat = {
        let &(at, idx) = sent.last().unwrap();
        let j = hist.partition_point(|&(_, i)| i < idx);
        hist.get(j)
            .map(|&(seen, _)| ms(seen.saturating_duration_since(at)))
    };
    lat.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let size = std::fs::metadata(&path).map_or(0, |m| m.len());
    let events = gen.next - 1 - preload_idx;
    let tck = clk_tck() as f64;
    println!(
        "wrote {events} events ({} batches of {BATCH} lines, one write each) in {:.2} s = {:.0} events/s; {late} batches more than one interval late",
        sent.len(),
        wrote.as_secs_f64(),
        events as f64 / wrote.as_secs_f64()
    );
    println!(
        "file {} -> {} bytes ({:.1} MB); screen output parsed: {:.1} MB; caught up: {caught_up}",
        initial_size,
        size,
        size as f64 / 1e6,
        screen_bytes as f64 / 1e6
    );
    println!(
        "latency (write() of a batch's last line -> screen header shows `@ #N` with N >= its index), n={}: p50 {:.1} ms, p95 {:.1} ms, p99 {:.1} ms, max {:.1} ms; unseen {missing}  [target p95 <= 250 ms: {}]",
        lat.len(),
        pct(&lat, 50.0),
        pct(&lat, 95.0),
        pct(&lat, 99.0),
        lat.last().copied().unwrap_or(f64::NAN),
        if pct(&lat, 95.0) <= 250.0 { "MET" } else { "MISSED" }
    );
    println!(
        "the final line (held until ~200 ms of quiet by the equal-t rule): {}",
        last_lat.map_or("not seen".into(), |v| format!("{v:.1} ms"))
    );
    println!(
        "memtide CPU while streaming: {:.1} % of one core; status row's ev/s while streaming: median {:.0}, range {:.0}..{:.0} (n={})",
        (cpu1 - cpu0) as f64 / tck / wrote.as_secs_f64() * 100.0,
        pct(&shown, 50.0),
        shown.first().copied().unwrap_or(f64::NAN),
        shown.last().copied().unwrap_or(f64::NAN),
        shown.len()
    );
}

/// Part 2: CPU of an idle follower, with inotify and with `--poll 250`, side by side.
fn idle(bin: &Path, dir: &Path) {
    println!("\n== 2. idle follower CPU ==");
    let path = dir.join("idle.jsonl");
    let mut body = Gen::initial_file().into_bytes();
    let mut gen = Gen::new();
    for _ in 0..100 {
        gen.batch(&mut body, 49);
    }
    std::fs::write(&path, &body).unwrap();
    let a = Pty::spawn(bin, &["-f", path.to_str().unwrap()]);
    let b = Pty::spawn(bin, &["-f", "--poll", "250", path.to_str().unwrap()]);
    for p in [&a, &b] {
        assert!(
            p.wait(Duration::from_secs(20), |o| o.follow_seen),
            "no FOLLOW on screen:\n{}",
            p.screen()
        );
    }
    std::thread::sleep(Duration::from_secs(2));
    let tck = clk_tck();
    let (a0, b0) = (cpu_ticks(a.pid()), cpu_ticks(b.pid()));
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs(10));
    let (a1, b1) = (cpu_ticks(a.pid()), cpu_ticks(b.pid()));
    let secs = t0.elapsed().as_secs_f64();
    let bytes_a = a.shared.obs.lock().unwrap().bytes;
    println!(
        "file {} bytes, {} events, not written during the test; CLK_TCK {tck}; window {secs:.1} s",
        body.len(),
        gen.next
    );
    for (name, d) in [("-f (inotify)", a1 - a0), ("-f --poll 250", b1 - b0)] {
        let pct = d as f64 / tck as f64 / secs * 100.0;
        println!(
            "{name:<14} {d} ticks = {pct:.2} % of one core  [target < 2 %: {}]",
            if pct < 2.0 { "MET" } else { "MISSED" }
        );
    }
    println!("(screen output of the inotify follower so far: {bytes_a} bytes)");
    a.quit();
    b.quit();
}

/// Part 3: key response while 1 M events are appended as fast as possible.
fn freeze(bin: &Path, dir: &Path) {
    println!("\n== 3. UI response while {BIG} events are appended ==");
    let path = dir.join("big.jsonl");
    std::fs::write(&path, Gen::initial_file()).unwrap();
    let mut gen = Gen::new();
    // 1 M events (10101 batches of 99 lines, then one more peak-raising line), prepared before
    // the clock starts and written in 10 writes split at line boundaries.
    let mut all = Vec::with_capacity(110 << 20);
    while gen.next - 1 + BATCH <= BIG {
        gen.batch(&mut all, (BATCH - 1) / 2);
    }
    while gen.next - 1 < BIG {
        gen.batch(&mut all, 0);
    }
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    let mut from = 0;
    for q in 1..=10 {
        let mut to = all.len() * q / 10;
        while to < all.len() && all[to - 1] != b'\n' {
            to += 1;
        }
        chunks.push(all[from..to].to_vec());
        from = to;
    }
    drop(all);
    let final_idx = gen.next - 1;
    let total: usize = chunks.iter().map(Vec::len).sum();
    let mut p = Pty::spawn(bin, &["-f", path.to_str().unwrap()]);
    assert!(
        p.wait(Duration::from_secs(20), |o| o.follow_seen
            && !o.peak_hist.is_empty()),
        "memtide did not start; screen:\n{}",
        p.screen()
    );
    std::thread::sleep(Duration::from_millis(300));
    // FOLLOW_BENCH_PERF=OUT.data: profile the follower during the append (perf record -g).
    let perf = std::env::var("FOLLOW_BENCH_PERF").ok().map(|out| {
        let c = std::process::Command::new("perf")
            .args([
                "record",
                "--call-graph",
                "dwarf,16384",
                "-F",
                "999",
                "-o",
                &out,
                "-p",
            ])
            .arg(p.pid().to_string())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("perf");
        std::thread::sleep(Duration::from_millis(500));
        c
    });
    let cpu0 = cpu_ticks(p.pid());
    let t_start = Instant::now();
    let write_at = t_start + Duration::from_millis(500);
    let writer = {
        let path = path.clone();
        std::thread::spawn(move || {
            let now = Instant::now();
            if write_at > now {
                std::thread::sleep(write_at - now);
            }
            let mut f = OpenOptions::new().append(true).open(&path).unwrap();
            let s = Instant::now();
            for c in &chunks {
                f.write_all(c).unwrap();
            }
            f.flush().unwrap();
            (s, Instant::now())
        })
    };
    // Keys: `?` toggles the help overlay. One key in flight at a time: the next goes 20 ms
    // after the previous one, or as soon as the previous is answered if that took longer.
    let mut keys: Vec<(Instant, f64)> = Vec::new();
    let mut unanswered = 0;
    let mut done_at: Option<Instant> = None;
    let mut next_send = Instant::now();
    let hard_end = t_start + Duration::from_secs(60);
    loop {
        let now = Instant::now();
        if now < next_send {
            std::thread::sleep(next_send - now);
        }
        let before = p.shared.obs.lock().unwrap().help_changes;
        let sent = Instant::now();
        p.send(b"?");
        next_send = sent + Duration::from_millis(20);
        let ok = p.wait(Duration::from_secs(5), |o| o.help_changes > before);
        if ok {
            let at = p.shared.obs.lock().unwrap().help_changed_at.unwrap();
            keys.push((sent, ms(at.saturating_duration_since(sent))));
        } else {
            unanswered += 1;
        }
        if done_at.is_none() && p.last_peak().is_some_and(|i| i >= final_idx) {
            done_at = Some(Instant::now());
        }
        if done_at.is_some_and(|d| d.elapsed() > Duration::from_millis(500))
            || Instant::now() > hard_end
        {
            break;
        }
    }
    let (ws, we) = writer.join().unwrap();
    let cpu1 = cpu_ticks(p.pid());
    let hist = p.shared.obs.lock().unwrap().peak_hist.clone();
    let elapsed = t_start.elapsed();
    if let Some(mut c) = perf {
        let _ = std::process::Command::new("kill")
            .args(["-INT", &c.id().to_string()])
            .status();
        let _ = c.wait();
    }
    p.quit();
    let done = done_at.unwrap_or(Instant::now());
    let during: Vec<f64> = {
        let mut v: Vec<f64> = keys
            .iter()
            .filter(|(s, _)| *s >= ws && *s <= done)
            .map(|k| k.1)
            .collect();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v
    };
    let before: Vec<f64> = {
        let mut v: Vec<f64> = keys.iter().filter(|(s, _)| *s < ws).map(|k| k.1).collect();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v
    };
    // Screen-visible ingest progress: when did the peak index pass each 10 %?
    let mut marks = Vec::new();
    for q in 1..=10u64 {
        let target = final_idx * q / 10;
        let j = hist.partition_point(|&(_, i)| i < target);
        if let Some(&(t, _)) = hist.get(j) {
            marks.push(format!(
                "{}%:{:.0}ms",
                q * 10,
                ms(t.saturating_duration_since(ws))
            ));
        }
    }
    let tck = clk_tck() as f64;
    println!(
        "appended {} events = {} bytes ({:.1} MB) in {} writes, {:.0} ms of write() calls ({:.1} M events/s)",
        final_idx,
        total,
        total as f64 / 1e6,
        10,
        ms(we - ws),
        final_idx as f64 / (we - ws).as_secs_f64() / 1e6
    );
    match done_at {
        Some(d) => println!(
            "all {final_idx} events on screen {:.0} ms after the first write ({:.0} events/s ingested)",
            ms(d - ws),
            final_idx as f64 / (d - ws).as_secs_f64()
        ),
        None => println!("NOT all events reached the screen within 60 s"),
    }
    println!(
        "screen ingest progress (time after first write): {}",
        marks.join(" ")
    );
    println!(
        "keys before the append: n={}, p50 {:.1} ms, max {:.1} ms",
        before.len(),
        pct(&before, 50.0),
        before.last().copied().unwrap_or(f64::NAN)
    );
    let max = during.last().copied().unwrap_or(f64::NAN);
    println!(
        "key -> screen during the append: n={}, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms, unanswered (>5 s) {unanswered}  [target max <= 100 ms: {}]",
        during.len(),
        pct(&during, 50.0),
        pct(&during, 99.0),
        max,
        if max <= 100.0 && unanswered == 0 { "MET" } else { "MISSED" }
    );
    // The five slowest answers, with when each key was sent (after the first write).
    let mut slow: Vec<&(Instant, f64)> = keys.iter().collect();
    slow.sort_by(|a, b| b.1.partial_cmp(&a.1).unwrap());
    let slow: Vec<String> = slow
        .iter()
        .take(5)
        .map(|k| {
            format!(
                "{:.0}ms@+{:.0}ms",
                k.1,
                ms(k.0.saturating_duration_since(ws))
            )
        })
        .collect();
    println!(
        "slowest keys (response @ sent after first write): {}",
        slow.join(" ")
    );
    println!(
        "memtide CPU over the run: {:.1} s in {:.1} s",
        (cpu1 - cpu0) as f64 / tck,
        elapsed.as_secs_f64()
    );
}

fn main() {
    let bin = binary();
    let secs: u64 = std::env::var("FOLLOW_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let dir = tempfile::tempdir().expect("tempdir");
    println!("memtide follow benchmark (issue 5)");
    println!("binary: {}", bin.display());
    println!("machine: {}", machine());
    println!("terminal: {COLS}x{ROWS} PTY, parsed by vt100");
    let t = Instant::now();
    let only = std::env::var("FOLLOW_BENCH_ONLY").unwrap_or_default();
    if only.is_empty() || only.contains('1') {
        latency(&bin, dir.path(), secs, 0);
        // Again on a file that already holds 1 M events (a long run);
        // FOLLOW_BENCH_PRELOAD=N changes N, 0 skips.
        let n: u64 = std::env::var("FOLLOW_BENCH_PRELOAD")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(1_000_000);
        if n > 0 {
            latency(&bin, dir.path(), secs, n);
        }
    }
    if only.is_empty() || only.contains('2') {
        idle(&bin, dir.path());
    }
    if only.is_empty() || only.contains('3') {
        freeze(&bin, dir.path());
    }
    println!("\ntotal {:.1} s", t.elapsed().as_secs_f64());
    let _ = File::open(dir.path()); // keep the tempdir alive until here
}
