//! `--device-log`: a snapshot written here from a hand-made event list, and nvidia-smi / plain
//! logs generated from the same list (used = reserved + 1.5 GiB, local time two hours ahead
//! of UTC, 100 ms samples). Every expected figure comes from that list, not from memtide.

use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;
/// External memory the logs hold above reserved: 1.5 GiB.
const ABOVE: u64 = 3 * GIB / 2;
/// nvidia-smi memory.total of an 80 GB card, MiB.
const TOTAL_MIB: u64 = 81559;
/// 2026-11-29 00:00:00 UTC (`date -u +%s -d '2026-11-29 00:00:00'` = 1795910400).
const DAY0_US: i64 = 1_795_910_400_000_000;
/// The trace starts at 10:00:00 UTC that day.
const T0_US: i64 = DAY0_US + 10 * 3_600_000_000;

use crate::support::repo::memtide;

/// One snapshot trace entry: (ms after T0, action, address, size).
type Entry = (i64, &'static str, u64, u64);

const SEG_A: u64 = 0x7f00_0000_0000;
const SEG_B: u64 = 0x7f10_0000_0000;
const SEG_C: u64 = 0x7f20_0000_0000;

/// The run: segment A (1 GiB) from 0 ms, segment B (2 GiB) from 500 ms to 2500 ms, blocks
/// of 512 MiB, 1 GiB, 512 MiB and 256 MiB, the last one at 2050 ms making the peak
/// (2.25 GiB allocated); everything freed by 2200 ms. Segment C (1 GiB, 2030–2500 ms) is
/// reserved between two samples: the 2000 ms sample's external (used − reserved at 2000 ms)
/// still holds at the peak, where reserved is 4 GiB.
fn entries() -> Vec<Entry> {
    vec![
        (0, "segment_alloc", SEG_A, GIB),
        (100, "alloc", SEG_A, 512 * MIB),
        (500, "segment_alloc", SEG_B, 2 * GIB),
        (600, "alloc", SEG_B, GIB),
        (1000, "alloc", SEG_B + GIB, 512 * MIB),
        (2030, "segment_alloc", SEG_C, GIB),
        (2050, "alloc", SEG_A + 512 * MIB, 256 * MIB),
        (2200, "free_completed", SEG_A + 512 * MIB, 256 * MIB),
        (2200, "free_completed", SEG_B + GIB, 512 * MIB),
        (2200, "free_completed", SEG_B, GIB),
        (2200, "free_completed", SEG_A, 512 * MIB),
        (2500, "segment_free", SEG_B, 2 * GIB),
        (2500, "segment_free", SEG_C, GIB),
        (3000, "alloc", SEG_A, 128 * MIB),
    ]
}

/// Reserved bytes after every entry at or before `ms` (a replay of [`entries`]).
fn reserved_at(ms: i64) -> u64 {
    let mut r = 0u64;
    for (t, action, _, size) in entries() {
        if t > ms {
            break;
        }
        match action {
            "segment_alloc" => r += size,
            "segment_free" => r -= size,
            _ => {}
        }
    }
    r
}

fn snapshot_json() -> Value {
    let frames = json!([{"filename": "train.py", "line": 10, "name": "step"}]);
    let traces: Vec<Value> = entries()
        .into_iter()
        .map(|(ms, action, addr, size)| {
            json!({"action": action, "addr": addr, "size": size, "stream": 0,
                   "time_us": T0_US + ms * 1000, "frames": frames})
        })
        .collect();
    // At the dump: segment A with the last 128 MiB block active.
    let segments = json!([{
        "device": 0, "address": SEG_A, "total_size": GIB, "allocated_size": 128 * MIB,
        "active_size": 128 * MIB, "requested_size": 128 * MIB, "stream": 0,
        "segment_type": "large", "frames": frames,
        "blocks": [
            {"address": SEG_A, "size": 128 * MIB, "requested_size": 128 * MIB,
             "state": "active_allocated", "frames": frames},
            {"address": SEG_A + 128 * MIB, "size": GIB - 128 * MIB, "requested_size": 0,
             "state": "inactive", "frames": []}
        ]
    }]);
    json!({"segments": segments, "device_traces": [traces]})
}

/// `HH:MM:SS.mmm` local time (UTC + 2 h) of `ms` after T0 (10:00 UTC → 12:00 local).
fn local_clock(ms: i64) -> String {
    let day_ms = 12 * 3_600_000 + ms;
    format!(
        "2026/11/29 {:02}:{:02}:{:02}.{:03}",
        day_ms / 3_600_000,
        day_ms / 60_000 % 60,
        day_ms / 1000 % 60,
        day_ms % 1000
    )
}

/// Sample times: every 100 ms from 300 ms before the first entry to 300 ms after the last.
fn sample_ms() -> impl Iterator<Item = i64> {
    (-3..=33).map(|i| i * 100)
}

/// The nvidia-smi log (`--format=csv`, units on every value, columns in query order).
fn nvidia_smi_log() -> String {
    let mut s = String::from("timestamp, index, memory.used [MiB], memory.total [MiB]\n");
    for ms in sample_ms() {
        let used = (reserved_at(ms) + ABOVE) / MIB;
        s.push_str(&format!(
            "{}, 0, {used} MiB, {TOTAL_MIB} MiB\n",
            local_clock(ms)
        ));
    }
    s
}

/// The same samples as `time_us,device,used_bytes,total_bytes` (UTC).
fn plain_log() -> String {
    let mut s = String::from("time_us,device,used_bytes,total_bytes\n");
    for ms in sample_ms() {
        let used = reserved_at(ms) + ABOVE;
        s.push_str(&format!(
            "{},0,{used},{}\n",
            T0_US + ms * 1000,
            TOTAL_MIB * MIB
        ));
    }
    s
}

struct Files {
    _dir: tempfile::TempDir,
    snapshot: PathBuf,
    dir: PathBuf,
}

fn files() -> Files {
    let dir = tempfile::tempdir().expect("tempdir");
    let snapshot = dir.path().join("run.json");
    std::fs::write(&snapshot, snapshot_json().to_string()).expect("write snapshot");
    let p = dir.path().to_path_buf();
    Files {
        _dir: dir,
        snapshot,
        dir: p,
    }
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write log");
    p.display().to_string()
}

fn summary_json(args: &[&str]) -> Value {
    let out = memtide()
        .arg("summary")
        .args(args)
        .arg("--json")
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "summary failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

/// Allocated bytes at the peak, from the event list: 512 MiB + 1 GiB + 512 MiB + 256 MiB.
const PEAK_ALLOCATED: u64 = 512 * MIB + GIB + 512 * MIB + 256 * MIB;

#[test]
fn nvidia_smi_log_with_zone_gives_exact_external_and_capacity() {
    let f = files();
    let log = write(&f.dir, "gpu.csv", &nvidia_smi_log());
    let snap = f.snapshot.display().to_string();
    let v = summary_json(&[&snap, "--device-log", &log, "--device-log-tz", "+02:00"]);
    let p = &v["peak"];
    assert_eq!(p["bands"]["external"], ABOVE, "{v:#}");
    assert_eq!(p["bytes"], PEAK_ALLOCATED + ABOVE);
    assert_eq!(p["index"], 6, "the 256 MiB alloc at 2050 ms");
    assert_eq!(v["capacity"], TOTAL_MIB * MIB);
    let d = &v["device_log"];
    assert_eq!(d["path"], log);
    assert_eq!(d["format"], "nvidia-smi");
    assert_eq!(d["device"], 0);
    assert_eq!(d["timezone"], "+02:00");
    assert_eq!(d["shift_us"], -7_200_000_000i64);
    assert_eq!(d["sample_interval_us"], 100_000);
    assert_eq!(d["samples"], 37);
    assert_eq!(d["coverage"], 1.0);
    assert_eq!(d["covered_events"], 14);
    assert_eq!(d["used_below_reserved"], 0);
    assert_eq!(d["peak_covered"], true);
    assert_eq!(d["first_sample_us"], T0_US - 300_000);
    assert_eq!(d["warnings"], json!([]));
    assert_eq!(v["doubtful_warnings"], json!([]));
    // The live list names the log as the source of the external bytes.
    let live = p["live"].as_array().expect("live");
    assert!(live.iter().any(|e| e["band"] == "external"
        && e["bytes"] == ABOVE
        && e["name"]
            .as_str()
            .is_some_and(|n| n.contains("device log gpu.csv"))));
}

#[test]
fn without_the_zone_the_misalignment_is_warned_and_nothing_is_invented() {
    let f = files();
    let log = write(&f.dir, "gpu.csv", &nvidia_smi_log());
    let snap = f.snapshot.display().to_string();
    let v = summary_json(&[&snap, "--device-log", &log]);
    assert_eq!(
        v["peak"]["bands"]["external"],
        Value::Null,
        "a log that covers nothing measures nothing"
    );
    assert_eq!(v["peak"]["bytes"], PEAK_ALLOCATED);
    let d = &v["device_log"];
    assert_eq!(d["covered_events"], 0);
    assert_eq!(d["coverage"], 0.0);
    assert!(d["time_basis"]
        .as_str()
        .is_some_and(|b| b.starts_with("assumed UTC")));
    let w = v["doubtful_warnings"].to_string();
    assert!(w.contains("misaligned"), "{w}");
    assert!(w.contains("--device-log-tz +02:00"), "{w}");
    // check refuses to vouch for figures with a misaligned log.
    let out = memtide()
        .args(["check", &snap, "--max-peak", "80GiB", "--device-log", &log])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(said.contains("misaligned"), "{said}");
}

#[test]
fn an_offset_alone_aligns_too_and_check_counts_the_external_bytes() {
    let f = files();
    let log = write(&f.dir, "gpu.csv", &nvidia_smi_log());
    let snap = f.snapshot.display().to_string();
    let v = summary_json(&[&snap, "--device-log", &log, "--device-log-offset", "-2h"]);
    assert_eq!(v["peak"]["bands"]["external"], ABOVE);
    assert!(v["device_log"]["time_basis"]
        .as_str()
        .is_some_and(|b| b.contains("--device-log-offset")));
    // 3.75 GiB with the log: over a 3.5 GiB limit, within 4 GiB.
    let args = ["--device-log", &log, "--device-log-tz", "+02:00"];
    memtide()
        .args(["check", &snap, "--max-peak", "3.5GiB"])
        .args(args)
        .assert()
        .code(1);
    memtide()
        .args(["check", &snap, "--max-peak", "4GiB"])
        .args(args)
        .assert()
        .code(0);
    // Without the log the same trace passes 3.5 GiB: the external bytes made the difference.
    memtide()
        .args(["check", &snap, "--max-peak", "3.5GiB"])
        .assert()
        .code(0);
}

#[test]
fn plain_csv_log_is_utc() {
    let f = files();
    let log = write(&f.dir, "samples.csv", &plain_log());
    let snap = f.snapshot.display().to_string();
    let v = summary_json(&[&snap, "--device-log", &log]);
    assert_eq!(v["peak"]["bands"]["external"], ABOVE);
    assert_eq!(v["capacity"], TOTAL_MIB * MIB);
    assert_eq!(v["device_log"]["format"], "plain");
    assert_eq!(v["device_log"]["shift_us"], 0);
}

#[test]
fn nounits_and_another_column_order() {
    let f = files();
    let mut s = String::from("index, memory.total [MiB], memory.used [MiB], timestamp\n");
    for ms in sample_ms() {
        let used = (reserved_at(ms) + ABOVE) / MIB;
        s.push_str(&format!("0, {TOTAL_MIB}, {used}, {}\n", local_clock(ms)));
    }
    let log = write(&f.dir, "gpu.csv", &s);
    let snap = f.snapshot.display().to_string();
    let v = summary_json(&[&snap, "--device-log", &log, "--device-log-tz", "+02:00"]);
    assert_eq!(v["peak"]["bands"]["external"], ABOVE);
    assert_eq!(v["capacity"], TOTAL_MIB * MIB);
}

#[test]
fn a_log_cut_short_covers_part_of_the_trace_and_says_so() {
    let f = files();
    // Samples up to 1500 ms only.
    let text: String = nvidia_smi_log()
        .lines()
        .take(1 + 19)
        .map(|l| format!("{l}\n"))
        .collect();
    let log = write(&f.dir, "gpu.csv", &text);
    let snap = f.snapshot.display().to_string();
    let v = summary_json(&[&snap, "--device-log", &log, "--device-log-tz", "+02:00"]);
    let d = &v["device_log"];
    assert_eq!(d["last_sample_us"], T0_US + 1_500_000);
    assert_eq!(d["coverage"], 0.5, "1500 of 3000 ms");
    assert_eq!(
        d["covered_events"], 5,
        "entries at 0, 100, 500, 600, 1000 ms"
    );
    assert!(v["warnings"].to_string().contains("covers only 50%"));
    // The 2050 ms entry (2.25 GiB allocated) has no log: the peak is the 1000 ms one,
    // 2 GiB allocated + 1.5 GiB external.
    assert_eq!(v["peak"]["index"], 4);
    assert_eq!(v["peak"]["bytes"], 2 * GIB + ABOVE);
    assert_eq!(d["peak_covered"], true);
    // Not extrapolated beyond the last sample: the last entry (3000 ms) has no external.
    assert_eq!(v["final_bytes"], 128 * MIB);
    let full = write(&f.dir, "full.csv", &nvidia_smi_log());
    let v = summary_json(&[&snap, "--device-log", &full, "--device-log-tz", "+02:00"]);
    assert_eq!(v["final_bytes"], 128 * MIB + ABOVE);
    // Nor before the first: a log starting at 1500 ms leaves the 1000 ms entry without.
    let late: String = std::iter::once("timestamp, index, memory.used [MiB], memory.total [MiB]")
        .chain(nvidia_smi_log().lines().skip(1 + 18))
        .map(|l| format!("{l}\n"))
        .collect();
    let log = write(&f.dir, "late.csv", &late);
    let v = summary_json(&[&snap, "--device-log", &log, "--device-log-tz", "+02:00"]);
    assert_eq!(v["device_log"]["first_sample_us"], T0_US + 1_500_000);
    assert_eq!(v["peak"]["index"], 6);
    assert_eq!(v["peak"]["bytes"], PEAK_ALLOCATED + ABOVE);
    assert_eq!(
        v["device_log"]["covered_events"], 9,
        "2030, 2050, 4 × 2200, 2 × 2500, 3000 ms"
    );
}

#[test]
fn used_below_reserved_and_device_mismatch_are_warned() {
    let f = files();
    let snap = f.snapshot.display().to_string();
    // A constant 2 GiB used: below the 3 GiB reserved while segment B exists.
    let mut s = String::from("time_us,device,used_bytes\n");
    for ms in sample_ms() {
        s.push_str(&format!("{},0,{}\n", T0_US + ms * 1000, 2 * GIB));
    }
    let log = write(&f.dir, "low.csv", &s);
    let v = summary_json(&[&snap, "--device-log", &log]);
    let d = &v["device_log"];
    // The samples applied: 0, 100, 500, 600, 1000 ms, 2000 ms (for the 2030 and 2050 ms
    // entries), 2200, 2500, 3000 ms; reserved is 3 GiB at 500, 600, 1000 and 2000 ms, and
    // 4 GiB at 2200 ms.
    assert_eq!(d["applied_samples"], 9);
    assert_eq!(d["used_below_reserved"], 5);
    assert_eq!(d["max_shortfall"], 2 * GIB);
    assert!(v["doubtful_warnings"]
        .to_string()
        .contains("below the trace's reserved memory"));
    // External is never negative: 0 where used < reserved.
    assert_eq!(v["peak"]["bands"]["external"], 0);

    let other = plain_log().replace(",0,", ",1,");
    let log = write(&f.dir, "gpu1.csv", &other);
    let v = summary_json(&[&snap, "--device-log", &log]);
    assert_eq!(v["device_log"]["device"], Value::Null);
    assert!(v["doubtful_warnings"]
        .to_string()
        .contains("no samples for device 0"));
}

#[test]
fn bad_lines_fail_with_the_line_number_or_are_skipped_with_lenient() {
    let f = files();
    let snap = f.snapshot.display().to_string();
    let mut text = nvidia_smi_log();
    // Line 4 of the file: a sample nvidia-smi could not read.
    let mut lines: Vec<&str> = text.lines().collect();
    let bad = format!("{}, 0, [N/A], {TOTAL_MIB} MiB", local_clock(-100));
    lines[3] = &bad;
    text = lines.join("\n") + "\n";
    let log = write(&f.dir, "bad.csv", &text);
    memtide()
        .args(["summary", &snap, "--device-log", &log])
        .assert()
        .code(2)
        .stderr(predicates::str::starts_with(format!(
            "memtide: error: device log {log}: line 4: memory.used"
        )));
    let v = summary_json(&[
        &snap,
        "--device-log",
        &log,
        "--device-log-tz",
        "+02:00",
        "--lenient",
    ]);
    assert_eq!(v["device_log"]["skipped_lines"], 1);
    assert_eq!(v["device_log"]["samples"], 36);
    assert_eq!(v["peak"]["bands"]["external"], ABOVE);
    assert!(v["warnings"].to_string().contains("skipped 1 bad lines"));
    // A file that is no log at all.
    let junk = write(&f.dir, "junk.csv", "hello, world\n");
    memtide()
        .args(["summary", &snap, "--device-log", &junk])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "line 1: unrecognised device log header",
        ));
    // A missing file, a bad zone.
    memtide()
        .args(["summary", &snap, "--device-log", "/nonexistent/gpu.csv"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("cannot read device log"));
    memtide()
        .args([
            "summary",
            &snap,
            "--device-log",
            &log,
            "--device-log-tz",
            "two",
        ])
        .assert()
        .code(2);
}

#[test]
fn jsonl_refuses_a_device_log_and_no_log_changes_nothing() {
    let f = files();
    let log = write(&f.dir, "gpu.csv", &plain_log());
    let jsonl = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/train-3steps.jsonl");
    memtide()
        .arg("summary")
        .arg(&jsonl)
        .args(["--device-log", &log])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "merges with a PyTorch snapshot or Kineto trace",
        ));
    // Following a JSONL file refuses it too.
    let opts = memtide_core::formats::LoadOptions {
        device_log: Some(memtide_core::formats::DeviceLogOptions {
            path: log.clone().into(),
            ..Default::default()
        }),
        ..Default::default()
    };
    let e = memtide_core::open::open_followed(&jsonl, &opts.into(), &Default::default())
        .expect_err("refused");
    let e = std::error::Error::source(&e).map_or_else(|| e.to_string(), |s| s.to_string());
    assert!(
        e.contains("merges with a PyTorch snapshot or Kineto trace"),
        "{e}"
    );
    let snap = f.snapshot.display().to_string();
    let v = summary_json(&[&snap]);
    assert!(v.get("device_log").is_none());
    // The text says external is not measured, never just 0.
    let out = memtide().args(["summary", &snap]).output().expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("  external      unavailable  no source of memory outside the framework"),
        "{text}"
    );
    let out = memtide().arg("summary").arg(&jsonl).output().expect("runs");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("no source of memory outside"));
    assert_eq!(v["peak"]["bands"]["external"], Value::Null);
    assert_eq!(v["capacity"], Value::Null);
}

#[test]
fn text_summary_says_how_the_log_was_aligned() {
    let f = files();
    let log = write(&f.dir, "gpu.csv", &nvidia_smi_log());
    let snap = f.snapshot.display().to_string();
    let out = memtide()
        .args([
            "summary",
            &snap,
            "--device-log",
            &log,
            "--device-log-tz",
            "+02:00",
        ])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("device log       ") && text.contains("37 samples every 100 ms"),
        "{text}"
    );
    assert!(
        text.contains("local time +02:00 (--device-log-tz) · shift -7200.000 s"),
        "{text}"
    );
    assert!(
        text.contains("coverage       100.0% of the trace (14 of 14 events)"),
        "{text}"
    );
}

/// A Kineto trace (`baseTimeNanoseconds` + relative `ts`, UTC) of one CUDA device: 512 MiB
/// at 0 ms (1 GiB reserved), 1 GiB more at 500 ms (3 GiB reserved), freed at 1000 ms.
fn kineto_json() -> Value {
    let ev = |ts_ms: i64, addr: u64, bytes: i64, alloc: u64, reserved: u64| {
        json!({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1,
               "tid": 1, "ts": (ts_ms * 1000) as f64,
               "args": {"Total Reserved": reserved, "Total Allocated": alloc, "Bytes": bytes,
                        "Device Id": 0, "Device Type": 1, "Addr": addr}})
    };
    json!({"schemaVersion": 1, "deviceProperties": [], "baseTimeNanoseconds": T0_US * 1000,
    "traceEvents": [
        ev(0, 1, (512 * MIB) as i64, 512 * MIB, GIB),
        ev(500, 2, GIB as i64, 512 * MIB + GIB, 3 * GIB),
        ev(1000, 2, -(GIB as i64), 512 * MIB, 3 * GIB),
    ]})
}

#[test]
fn kineto_trace_aligns_by_base_time_plus_ts() {
    let f = files();
    let trace = f.dir.join("trace.json");
    std::fs::write(&trace, kineto_json().to_string()).expect("write trace");
    let mut s = String::from("time_us,device,used_bytes\n");
    for ms in -3..=13 {
        let ms = ms * 100;
        let reserved = if ms < 500 { GIB } else { 3 * GIB };
        s.push_str(&format!("{},0,{}\n", T0_US + ms * 1000, reserved + ABOVE));
    }
    let log = write(&f.dir, "k.csv", &s);
    let t = trace.display().to_string();
    let v = summary_json(&[&t, "--device-log", &log]);
    assert_eq!(v["format"], "kineto");
    assert_eq!(v["device_log"]["covered_events"], 3, "{v:#}");
    assert_eq!(v["device_log"]["used_below_reserved"], 0);
    assert_eq!(v["peak"]["index"], 1);
    assert_eq!(v["peak"]["bands"]["external"], ABOVE);
    assert_eq!(v["peak"]["bytes"], 512 * MIB + GIB + ABOVE);
}

#[test]
fn explorer_header_says_where_external_came_from() {
    use memtide::tui::{app::App, testing::Harness, theme::Theme};
    use memtide_core::formats::{DeviceLogOptions, LoadOptions};
    let f = files();
    let log = write(&f.dir, "gpu.csv", &nvidia_smi_log());
    let opts = LoadOptions {
        device_log: Some(DeviceLogOptions {
            path: log.into(),
            tz_east_us: Some(7_200_000_000),
            offset_us: 0,
        }),
        ..LoadOptions::default()
    };
    let app = App::new(f.snapshot.clone(), opts.into(), Theme::default(), false);
    let h = Harness::with_app(app, 240, 30);
    let screen = h.screen();
    assert!(
        screen.contains(
            "external from gpu.csv (device 0) · shift -7200.000 s · every 100 ms · covers 100%"
        ),
        "{screen}"
    );
    assert!(screen.contains("capacity 79.65 GiB"), "{screen}");
}

#[test]
fn markdown_report_names_the_log() {
    let f = files();
    let log = write(&f.dir, "gpu.csv", &nvidia_smi_log());
    let snap = f.snapshot.display().to_string();
    let out = memtide()
        .args([
            "summary",
            &snap,
            "--markdown",
            "--device-log",
            &log,
            "--device-log-tz",
            "+02:00",
        ])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("| device log | external from gpu.csv (device 0) · shift -7200.000 s · every 100 ms · covers 100% (local time +02:00 (--device-log-tz)) |"),
        "{text}"
    );
}

/// `summary --markdown` has the device-log section: the file, 37 samples every 100 ms, the
/// shift of the +02:00 zone, full coverage and the peak inside the log (from the event list).
#[test]
fn markdown_report_has_the_device_log_section() {
    let f = files();
    let log = write(&f.dir, "gpu.csv", &nvidia_smi_log());
    let snap = f.snapshot.display().to_string();
    let out = memtide()
        .args(["summary", "--markdown", &snap, "--device-log", &log])
        .args(["--device-log-tz", "+02:00"])
        .output()
        .expect("runs");
    assert!(out.status.success());
    let md = String::from_utf8(out.stdout).expect("utf-8");
    let at = md.find("**Device log**").expect("a device-log section");
    let section = &md[at..md[at..].find("\n\n**").map_or(md.len(), |e| at + e)];
    assert!(section.contains("| samples | 37 every 100"), "{section}");
    assert!(
        section.contains("| coverage | 100.0 % of the trace (14 of 14 events) |"),
        "{section}"
    );
    assert!(section.contains("| the peak | inside the log"), "{section}");
    assert!(section.contains("· shift -7200.000 s |"), "{section}");
    assert!(section.contains("gpu.csv (nvidia-smi)"), "{section}");
}
