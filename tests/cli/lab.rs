//! `memtide lab --json`: the headless trace and totals of the cache lab.

use assert_cmd::Command;

fn lab_json(c: u64, s: u64, n: u64) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_memtide"))
        .args([
            "lab",
            "--capacity",
            &c.to_string(),
            "--stride",
            &s.to_string(),
        ])
        .args(["--requests", &n.to_string(), "--json"])
        .output()
        .expect("runs");
    assert!(out.status.success());
    serde_json::from_slice(&out.stdout).expect("json")
}

#[test]
fn worked_checks_headless() {
    let v = lab_json(4, 4, 16);
    assert_eq!(v["totals"]["misses"], 4);
    assert_eq!(v["totals"]["hits"], 12);
    assert_eq!(v["prediction"]["misses_first_16"], 4);
    let trace = v["trace"].as_array().expect("trace");
    assert_eq!(trace.len(), 16);
    // Addresses (i × 4) mod 16: 0, 4, 8, 12, 0, ...
    let addrs: Vec<u64> = trace
        .iter()
        .map(|r| r["addr"].as_u64().expect("addr"))
        .collect();
    assert_eq!(&addrs[..6], &[0, 4, 8, 12, 0, 4]);
    let v = lab_json(2, 4, 16);
    assert_eq!(v["totals"]["misses"], 16);
}

#[test]
fn requests_are_capped_at_4096() {
    let v = lab_json(3, 5, 10_000);
    assert_eq!(v["requests"], 4096);
    assert_eq!(v["trace"].as_array().expect("trace").len(), 4096);
}

#[test]
fn out_of_range_settings_are_refused() {
    Command::new(env!("CARGO_BIN_EXE_memtide"))
        .args(["lab", "--capacity", "0", "--json"])
        .assert()
        .failure();
    Command::new(env!("CARGO_BIN_EXE_memtide"))
        .args(["lab", "--stride", "17", "--json"])
        .assert()
        .failure();
}
