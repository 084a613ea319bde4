//! Hostile inputs of issue 34, the reader side, each generated here: a damaged gzip stream
//! (trailer cut or wrong, trailing garbage) refused by every reader with the file's offset;
//! side files (category sidecar, rank summaries, device log, rules) streamed within the
//! memory budget and refused past their limits; `summary --json` linear in the devices;
//! unknown values of any size skipped without holding them.

use memtide_core::formats::{FormatError, LoadOptions, Progress};
use memtide_core::open::{open, OpenError, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::support::repo::memtide_unlimited as memtide;

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).expect("gzip");
    e.finish().expect("gzip")
}

/// The events of `path` opened through the door, summed over its devices.
fn load(path: &Path, opts: &LoadOptions) -> Result<usize, OpenError> {
    open(path, &OpenOptions::from(opts.clone()), &Progress::new())
        .map(|o| o.devices.iter().map(|d| d.trace.len()).sum())
}

/// One `[memory]` instant of device `dev` (allocating `bytes` at `addr`).
fn mem_event(ts: u64, dev: u64, addr: u64, bytes: i64, total: i64) -> String {
    format!(
        r#"{{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 7, "tid": 1, "ts": {ts}.5, "args": {{"Total Reserved": 1073741824, "Total Allocated": {total}, "Bytes": {bytes}, "Device Id": {dev}, "Device Type": 1, "Addr": {addr}}}}}"#
    )
}

/// A Kineto trace of `n` allocations and frees on one device.
fn kineto(n: u64) -> String {
    let mut ev = Vec::new();
    for i in 0..n {
        ev.push(mem_event(2 * i, 0, 4096 * (i + 1), 512, 512));
        ev.push(mem_event(2 * i + 1, 0, 4096 * (i + 1), -512, 0));
    }
    format!(
        "{{\"schemaVersion\": 1, \"traceEvents\": [\n{}\n]}}",
        ev.join(",\n")
    )
}

/// The readers' inputs, each over 64 KiB once decompressed (beyond the first part read for
/// format detection, so only the end of the stream can tell the damage).
fn inputs() -> Vec<(&'static str, Vec<u8>)> {
    let n = 5000;
    let mut jsonl = String::from("{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\"}\n");
    let mut entries = Vec::new();
    let mut raw = Vec::new();
    let (mut times, mut rows) = (Vec::new(), Vec::new());
    for i in 0..n {
        jsonl += &format!("{{\"t\":{i},\"op\":\"alloc\",\"id\":{i},\"size\":512}}\n");
        entries.push(format!(
            r#"{{"action": "alloc", "addr": {}, "size": 512, "stream": 0, "time_us": {i}, "frames": [{{"filename": "train.py", "line": 3, "name": "f"}}]}}"#,
            4096 * (i + 1)
        ));
        raw.push(format!("[{}, 2, 512, {}]", i * 1000, i % 8));
        times.push(i.to_string());
        rows.push(format!("[0, {}, 0, 0, 0, 0, 0, 0, 0]", i * 512));
    }
    let pickle = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/snapshot-baseline/baseline.pickle"),
    )
    .expect("baseline pickle");
    vec![
        ("jsonl", jsonl.into_bytes()),
        (
            "snapshot.json",
            format!(
                "{{\"segments\": [], \"device_traces\": [[{}]]}}",
                entries.join(", ")
            )
            .into_bytes(),
        ),
        ("pickle", pickle),
        ("kineto.json", kineto(n).into_bytes()),
        (
            "timeline.raw.json",
            format!("[{}]", raw.join(", ")).into_bytes(),
        ),
        (
            "timeline.json",
            format!("[[{}], [{}]]", times.join(", "), rows.join(", ")).into_bytes(),
        ),
    ]
}

/// The offset a gzip error names, or why it is not one.
fn gzip_offset(r: Result<usize, OpenError>) -> Result<u64, String> {
    match &r {
        Err(e) => match e.format_error() {
            Some(FormatError::Gzip(d)) => Ok(d.offset),
            _ => Err(format!("{r:?}")),
        },
        Ok(_) => Err(format!("{r:?}")),
    }
}

#[test]
fn every_reader_refuses_a_damaged_gzip_at_its_offset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let opts = LoadOptions::default();
    for (name, data) in inputs() {
        assert!(data.len() > 64 * 1024, "{name}: past the detection head");
        let good = gz(&data);
        let n = good.len() as u64;
        let write = |what: &str, bytes: &[u8]| -> PathBuf {
            let p = dir.path().join(format!("{what}.{name}.gz"));
            std::fs::write(&p, bytes).expect("write");
            p
        };
        let events = load(&write("good", &good), &opts)
            .unwrap_or_else(|e| panic!("{name}: a whole .gz reads: {e}"));
        assert!(events > 0, "{name}");
        // Valid concatenated members read as one stream.
        let half = data.len() / 2;
        let multi = [gz(&data[..half]), gz(&data[half..])].concat();
        assert_eq!(
            load(&write("multi", &multi), &opts).expect("two members read"),
            events,
            "{name}: two members"
        );
        for cut in 1..=8u64 {
            let p = write(&format!("cut{cut}"), &good[..(n - cut) as usize]);
            assert_eq!(
                gzip_offset(load(&p, &opts)),
                Ok(n - 8),
                "{name}: trailer cut by {cut} bytes"
            );
        }
        let mut crc = good.clone();
        crc[(n - 7) as usize] ^= 0x40;
        assert_eq!(
            gzip_offset(load(&write("crc", &crc), &opts)),
            Ok(n - 8),
            "{name}: wrong CRC32"
        );
        for tail in [&b"garbage"[..], b"\n", b"\0\0\0\0"] {
            let p = write("tail", &[&good[..], tail].concat());
            assert_eq!(
                gzip_offset(load(&p, &opts)),
                Ok(n),
                "{name}: {tail:?} after the stream"
            );
        }
    }
}

#[test]
fn check_never_passes_a_damaged_gzip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = gz(kineto(3000).as_bytes());
    let n = good.len();
    for (what, bytes) in [
        ("cut", good[..n - 4].to_vec()),
        ("garbage", [&good[..], b"trailing"].concat()),
    ] {
        let p = dir.path().join(format!("{what}.pt.trace.json.gz"));
        std::fs::write(&p, &bytes).expect("write");
        let out = memtide()
            .args(["check", "--max-peak", "1TiB"])
            .arg(&p)
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {err}");
        let at = if what == "cut" { n - 8 } else { n };
        assert!(
            err.contains(&p.display().to_string()),
            "names the file: {err}"
        );
        assert!(
            err.contains(&format!("gzip stream at byte {at} of the file")),
            "names the offset: {err}"
        );
    }
}

/// A gzip stream cut inside its data: a Kineto trace still opens with what came before the
/// cut (the profiler may have died while writing), and `check` fails it.
#[test]
fn a_kineto_gz_cut_inside_its_data_opens_truncated_and_fails_check() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = kineto(3000);
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none());
    e.write_all(text.as_bytes()).expect("gzip");
    let good = e.finish().expect("gzip");
    let p = dir.path().join("cut.json.gz");
    std::fs::write(&p, &good[..good.len() * 2 / 3]).expect("write");
    let l = open(&p, &OpenOptions::default(), &Progress::new()).expect("opens truncated");
    let warnings = &l.devices[0].trace.warnings;
    assert!(
        warnings.iter().any(|w| w.contains("truncated")),
        "{warnings:?}"
    );
    let out = memtide()
        .args(["check", "--max-peak", "1TiB"])
        .arg(&p)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn side_files_with_a_damaged_gzip_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("trace.json");
    std::fs::write(&trace, kineto(10)).expect("write");
    // The category sidecar.
    let raw: Vec<String> = (0..5000).map(|i| format!("[{i}, 2, 512, 3]")).collect();
    let side = gz(format!("[{}]", raw.join(", ")).as_bytes());
    let cut = dir.path().join("cut.raw.json.gz");
    std::fs::write(&cut, &side[..side.len() - 3]).expect("write");
    let opts = LoadOptions {
        categories: Some(cut.clone()),
        ..Default::default()
    };
    let e = load(&trace, &opts)
        .expect_err("refused")
        .format_error()
        .expect("the reader's error")
        .to_string();
    assert!(
        e.contains("categories file") && e.contains("cut.raw.json.gz"),
        "{e}"
    );
    assert!(
        e.contains(&format!("byte {} of the file", side.len() - 8)),
        "{e}"
    );
    // A rank's summary.
    let out = memtide()
        .args(["summary", "--json"])
        .arg(&trace)
        .output()
        .expect("runs");
    assert!(out.status.success());
    let mut summary = out.stdout.clone();
    summary.extend(std::iter::repeat_n(b' ', 70_000));
    let sgz = gz(&summary);
    let ranks = dir.path().join("ranks");
    std::fs::create_dir(&ranks).expect("mkdir");
    let rank = ranks.join("rank0.json.gz");
    std::fs::write(&rank, &sgz[..sgz.len() - 5]).expect("write");
    let file = memtide_core::ranks::RankFile {
        path: rank,
        order: 0,
        name_rank: Some(0),
    };
    let opts = memtide_core::ranks::RankOptions::default();
    match memtide_core::ranks::load_one(&file, &opts, &Progress::new()) {
        memtide_core::ranks::FileOutcome::Failed(why) => assert!(
            why.contains(&format!("gzip stream at byte {}", sgz.len() - 8)),
            "{why}"
        ),
        other => panic!("{other:?}"),
    }
}

/// A small `.gz` whose content is mostly whitespace: before, the side readers held the whole
/// decompressed content (and a tree of JSON values); now they stream it, so a budget below
/// the content is enough.
#[test]
fn side_files_are_streamed_within_the_memory_budget() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("trace.json");
    std::fs::write(&trace, kineto(10)).expect("write");
    // The category sidecar: 12 MiB of content under an 8 MiB budget.
    let side = dir.path().join("side.raw.json.gz");
    let pad = vec![b' '; 12 << 20];
    std::fs::write(
        &side,
        gz(&[&b"[[-1, 1, 512, 0], [5, 2, 512, 3]"[..], &pad, b"]"].concat()),
    )
    .expect("write");
    let out = memtide()
        .env("MEMTIDE_MAX_MEMORY", "8M")
        .arg("summary")
        .arg("--categories")
        .arg(&side)
        .arg(&trace)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A rank's summary padded the same way (20 MiB under 12 MiB), beside a trace.
    let out = memtide()
        .args(["summary", "--json"])
        .arg(&trace)
        .output()
        .expect("runs");
    let summary = out.stdout;
    // After the first key (`source`, by which a summary is told from a trace).
    let comma = summary
        .iter()
        .position(|&c| c == b',')
        .expect("a second key");
    let pad = vec![b' '; 20 << 20];
    let padded = [&summary[..=comma], &pad, &summary[comma + 1..]].concat();
    let ranks = dir.path().join("ranks");
    std::fs::create_dir(&ranks).expect("mkdir");
    std::fs::write(ranks.join("rank0.json.gz"), gz(&padded)).expect("write");
    std::fs::copy(&trace, ranks.join("rank1.json")).expect("copy");
    let out = memtide()
        .env("MEMTIDE_MAX_MEMORY", "12M")
        .arg("summary")
        .arg(&ranks)
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!text.contains("unreadable"), "{text}");
    assert!(
        text.contains("rank0.json.gz") && text.contains("rank1.json"),
        "{text}"
    );
}

/// Rows past the memory budget: the reader's own error (what, how much, the budget) with the
/// offset where it stopped, not an abort nor a "not a timeline" message.
#[test]
fn timeline_rows_past_the_budget_are_a_located_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rows: Vec<String> = (0..500_000).map(|i| format!("[{i},2,8,1]")).collect();
    let p = dir.path().join("tl.raw.json.gz");
    std::fs::write(&p, gz(format!("[{}]", rows.join(",")).as_bytes())).expect("write");
    let out = memtide()
        .env("MEMTIDE_MAX_MEMORY", "8M")
        .arg("summary")
        .arg(&p)
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("byte offset") && err.contains("export_memory_timeline rows"),
        "{err}"
    );
    assert!(err.contains("exceeds the memory budget"), "{err}");
    assert!(!err.contains("not an export_memory_timeline file"), "{err}");
}

/// Side files past their limit: refused before they are read, with the file and the limit
/// named (sparse files: no disk is used).
#[test]
fn side_files_over_their_limit_are_refused_naming_the_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("trace.json");
    std::fs::write(&trace, kineto(10)).expect("write");
    let sparse = |name: &str, len: u64| -> PathBuf {
        let p = dir.path().join(name);
        std::fs::File::create(&p)
            .and_then(|f| f.set_len(len))
            .expect("sparse file");
        p
    };
    let log = sparse("smi.csv", (2 << 30) + 1);
    let rules = sparse("rules.toml", (16 << 20) + 1);
    let side = sparse("side.raw.json", (512 << 20) + 1);
    for (flag, file, limit) in [
        ("--device-log", &log, "2 GiB"),
        ("--rules", &rules, "16 MiB"),
        ("--categories", &side, "512 MiB"),
    ] {
        let out = memtide()
            .arg("summary")
            .arg(flag)
            .arg(file)
            .arg(&trace)
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {err}");
        assert!(err.contains(&file.display().to_string()), "{flag}: {err}");
        assert!(err.contains(&format!("more than {limit}")), "{flag}: {err}");
    }
}

/// A Kineto trace of `n` devices, one allocation and free each.
fn devices(n: u64) -> String {
    let ev: Vec<String> = (0..n)
        .flat_map(|d| {
            [
                mem_event(10 * d, d, 4096, 1024, 1024),
                mem_event(10 * d + 1, d, 4096, -1024, 0),
            ]
        })
        .collect();
    format!("{{\"traceEvents\": [{}]}}", ev.join(","))
}

#[test]
fn summary_json_grows_with_the_devices_not_their_square() {
    let dir = tempfile::tempdir().expect("tempdir");
    let size = |n: u64| -> (usize, serde_json::Value) {
        let p = dir.path().join(format!("dev{n}.json"));
        std::fs::write(&p, devices(n)).expect("write");
        let out = memtide()
            .args(["summary", "--json"])
            .arg(&p)
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        (out.stdout.len(), v)
    };
    let (small, _) = size(100);
    let (big, v) = size(400);
    // Four times the devices: four times the output (the device list itself is a few
    // percent of it), not sixteen.
    assert!(
        (big as f64) < 4.5 * small as f64,
        "100 devices: {small} B, 400: {big} B"
    );
    assert_eq!(v["devices"].as_array().map(Vec::len), Some(400));
    let per = v["per_device"].as_array().expect("per_device");
    assert_eq!(per.len(), 400);
    assert!(per.iter().all(|d| d.get("devices").is_none()));
    let names: Vec<&str> = per.iter().filter_map(|d| d["device"].as_str()).collect();
    let listed: Vec<&str> = v["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .filter_map(|d| d.as_str())
        .collect();
    assert_eq!(names, listed, "per_device follows the device list");
}

/// An unknown top-level key whose value is larger than the memory budget: skipped as it is
/// read (before, the whole value was held in the parser's window).
#[test]
fn an_unknown_value_larger_than_the_budget_is_skipped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let big = format!("\"{}\\\"{}\"", "a".repeat(24 << 20), "b".repeat(24 << 20));
    // After the keys by which the format is detected.
    let snap = format!(
        r#"{{"segments": [], "zzz": {big}, "device_traces": [[{{"action": "alloc", "addr": 4096, "size": 512, "stream": 0, "time_us": 1, "frames": []}}]]}}"#
    );
    let kin = format!(
        "{{\"traceEvents\": [{}], \"zzz\": [{big}, {{\"k\": {big}}}]}}",
        mem_event(1, 0, 4096, 512, 512)
    );
    for (name, text) in [("snap.json", snap), ("trace.json", kin)] {
        let p = dir.path().join(name);
        std::fs::write(&p, text).expect("write");
        let out = memtide()
            .env("MEMTIDE_MAX_MEMORY", "32M")
            .args(["summary", "--json"])
            .arg(&p)
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(v["peak"]["bytes"], 512, "{name}");
    }
}
