//! Following growing files: `check -f` against `replay`, truncation/rotation recovery, and
//! the JSONL writer's round trip.

use memtide_core::analysis::{final_bytes, global_peak, windows_of};
use memtide_core::formats::{JsonlWriter, Progress};
use memtide_core::open::{open, OpenOptions};
use memtide_core::trace::MarkKind;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_memtide")
}

use crate::support::repo::sample;

#[test]
fn writer_round_trip_keeps_peaks() {
    for name in [
        "train-3steps.jsonl",
        "train-leak.jsonl",
        "train-checkpointed.jsonl",
    ] {
        let a = open(&sample(name), &OpenOptions::default(), &Progress::new()).expect("load");
        let (ta, ia) = (&a.devices[0].trace, &a.devices[0].index);
        let mut buf = Vec::new();
        JsonlWriter::new(ta).write_all(&mut buf).expect("write");
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("rt.jsonl");
        std::fs::write(&p, &buf).expect("write file");
        let b = open(&p, &OpenOptions::default(), &Progress::new()).expect("reload");
        let (tb, ib) = (&b.devices[0].trace, &b.devices[0].index);
        assert_eq!(
            global_peak(ta, ia).map(|p| p.bytes),
            global_peak(tb, ib).map(|p| p.bytes)
        );
        assert_eq!(
            global_peak(ta, ia).map(|p| p.bands),
            global_peak(tb, ib).map(|p| p.bands)
        );
        assert_eq!(final_bytes(ia), final_bytes(ib));
        assert_eq!(
            ia.reserved_peak().map(|r| r.0),
            ib.reserved_peak().map(|r| r.0)
        );
        let sa: Vec<_> = windows_of(ta, ia, MarkKind::Step)
            .iter()
            .map(|w| w.peak.map(|p| p.bytes))
            .collect();
        let sb: Vec<_> = windows_of(tb, ib, MarkKind::Step)
            .iter()
            .map(|w| w.peak.map(|p| p.bytes))
            .collect();
        assert_eq!(sa, sb, "{name}: step peaks");
    }
}

fn replay_then_check(limit: &str, rate: &str) -> (i32, String) {
    let dir = tempfile::tempdir().expect("tmp");
    let out = dir.path().join("live.jsonl");
    let mut replay = Command::new(bin())
        .args([
            "replay",
            &sample("train-3steps.jsonl").display().to_string(),
        ])
        .arg(&out)
        .args(["--rate", rate])
        .stderr(Stdio::null())
        .spawn()
        .expect("replay");
    // Let the writer create the file first.
    for _ in 0..100 {
        if out.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let check = Command::new(bin())
        .args(["check", "-f"])
        .arg(&out)
        .args(["--max-peak", limit, "--idle-exit", "1"])
        .output()
        .expect("check");
    let _ = replay.wait();
    (
        check.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&check.stdout).into_owned(),
    )
}

#[test]
fn check_follow_fails_the_moment_the_peak_crosses() {
    // 138 events at 400/s: the 9 GiB crossing happens while the file is growing.
    let (code, out) = replay_then_check("9GiB", "400");
    assert_eq!(code, 1, "{out}");
    assert!(out.starts_with("FAIL: peak"), "{out}");
}

#[test]
fn check_follow_exits_zero_when_idle_under_the_limit() {
    let (code, out) = replay_then_check("10GiB", "2000");
    assert_eq!(code, 0, "{out}");
    // The whole run was seen: the final peak is the sample's 9536 MiB.
    assert!(out.contains("9999220736 B"), "{out}");
}

/// The child's exit code once it exits within `tries` × 20 ms; None (and killed) if not.
fn exit_code_within(child: &mut std::process::Child, tries: usize) -> Option<i32> {
    for _ in 0..tries {
        if let Some(s) = child.try_wait().expect("wait") {
            return s.code();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    None
}

#[test]
fn check_follow_recovers_from_truncation_and_rotation() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("run.jsonl");
    let small = "{\"memtide\":1}\n{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":100}\n";
    std::fs::write(&p, small).expect("write");
    let mut child = Command::new(bin())
        .args(["check", "-f"])
        .arg(&p)
        .args(["--max-peak", "1000B", "--poll", "20"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("check");
    std::thread::sleep(Duration::from_millis(300));
    // Truncate and start again (log rotation by truncation): still under the limit.
    std::fs::write(
        &p,
        "{\"memtide\":1}\n{\"t\":1,\"op\":\"alloc\",\"id\":7,\"size\":500}\n",
    )
    .expect("truncate");
    std::thread::sleep(Duration::from_millis(300));
    // Replace by rename with a file whose peak crosses the limit.
    let tmp = dir.path().join("run.jsonl.tmp");
    let mut f = std::fs::File::create(&tmp).expect("tmp");
    writeln!(f, "{{\"memtide\":1}}").expect("w");
    writeln!(f, "{{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":600}}").expect("w");
    writeln!(f, "{{\"t\":2,\"op\":\"alloc\",\"id\":2,\"size\":600}}").expect("w");
    drop(f);
    std::fs::rename(&tmp, &p).expect("rename");
    let code = exit_code_within(&mut child, 100);
    assert_eq!(
        code,
        Some(1),
        "the replaced file's 1200 B peak must fail the check"
    );
}

/// Issue 47 item 7: a restarted job rewrites the followed file in place, past its old
/// length, never shorter at any moment (no truncation to see): a 200 GiB allocation at the
/// new beginning. The old offset falls on a line boundary of valid lines (a free of id 1),
/// so read on as an append it would pass (the bug: exit 0 once idle); read again from the
/// start it fails the limit.
#[test]
fn check_follow_reads_a_file_rewritten_in_place_again() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("run.jsonl");
    let header = "{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\"}\n";
    let big = "{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":214748364800}";
    let small = "{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":100}";
    // The small line padded to the big one's length: the old offset ends where `big` does.
    let old = format!("{header}{small:<width$}\n", width = big.len());
    std::fs::write(&p, &old).expect("write");
    let mut child = Command::new(bin())
        .args(["check", "-f"])
        .arg(&p)
        .args(["--max-peak", "1GiB", "--poll", "20", "--idle-exit", "2"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("check");
    std::thread::sleep(Duration::from_millis(500));
    let new = format!("{header}{big}\n{{\"t\":2,\"op\":\"free\",\"id\":1}}\n");
    assert!(new.len() > old.len() && new[old.len()..].starts_with("{\"t\":2"));
    crate::support::files::overwrite_in_place(&p, new.as_bytes());
    let code = exit_code_within(&mut child, 400);
    let out = child.wait_with_output().expect("output");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("FAIL: peak 200.0 GiB"), "{stdout}");
    assert!(
        stderr.contains("the file was rewritten in place (the bytes already read changed)"),
        "{stderr}"
    );
}

/// Issue 52: `check -f` started before the job made its file waits for it, saying so on
/// standard error (as `tail -F`), then gates it; with `--idle-exit`, a file that never comes
/// is not a pass: exit 2, nothing checked.
#[test]
fn check_follow_waits_for_a_file_that_is_not_there_yet() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("later/run.jsonl");
    let mut child = Command::new(bin())
        .args(["check", "-f"])
        .arg(&p)
        .args(["--max-peak", "1GiB", "--idle-exit", "30"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("check");
    std::thread::sleep(Duration::from_millis(400));
    assert!(
        child.try_wait().expect("wait").is_none(),
        "it must wait, not exit"
    );
    std::fs::create_dir_all(p.parent().expect("dir")).expect("mkdir");
    std::fs::copy(sample("train-3steps.jsonl"), &p).expect("copy");
    let code = exit_code_within(&mut child, 500);
    let out = child.wait_with_output().expect("output");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(code, Some(1), "{stdout}{stderr}");
    assert!(stderr.contains("waiting for"), "{stderr}");
    assert!(stderr.contains("run.jsonl to appear"), "{stderr}");
    assert!(stdout.starts_with("FAIL: peak"), "{stdout}");
}

#[test]
fn check_follow_on_a_file_that_never_comes_is_no_pass() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("never.jsonl");
    let out = Command::new(bin())
        .args(["check", "-f"])
        .arg(&p)
        .args(["--max-peak", "1GiB", "--idle-exit", "0.3"])
        .output()
        .expect("check");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("did not appear within 0.3 s"), "{stderr}");
    assert!(out.stdout.is_empty());
}
