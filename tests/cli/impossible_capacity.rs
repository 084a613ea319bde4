//! Issue 47 item 8: a capacity below what the file shows the device held (its reserved peak,
//! reserved + driver free at an OOM) decides no verdict. The bundled sample's figures, by hand
//! in sample-traces/README.md: 15362 MiB reserved at the OOM (16,108,224,512 B) and 510 MiB
//! driver free (534,773,760 B), so the device held 15872 MiB (16,642,998,272 B) there; its
//! OOM is live tensors.

#![allow(clippy::unwrap_used)]

use crate::support::repo::{memtide, sample};
use std::path::Path;

/// Runs memtide; returns (exit code, stdout, stderr).
fn run(args: &[&str]) -> (i32, String, String) {
    let out = memtide().args(args).output().expect("run memtide");
    (
        out.status.code().expect("an exit code"),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const FLOOR: &str = "below the 15.50 GiB that cuda:0 shows it held (reserved 15.00 GiB + driver free 510.0 MiB at the OOM (event #80))";

#[test]
fn a_capacity_below_what_the_file_held_is_refused_by_every_command() {
    let oom = sample("cuda-oom.pickle");
    let f = oom.to_str().unwrap();
    let svg = tempfile::tempdir().unwrap();
    let svg = svg.path().join("p.svg");
    for args in [
        vec!["summary", f, "--capacity", "16MiB"],
        vec!["summary", "--json", f, "--capacity", "16MiB"],
        // Was exit 1 with a confident request_too_large.
        vec!["check", f, "--max-peak", "100GiB", "--capacity", "16MiB"],
        vec!["whatif", f, "--capacity", "16MiB"],
        vec![
            "plot",
            f,
            "--capacity",
            "16MiB",
            "-o",
            svg.to_str().unwrap(),
        ],
    ] {
        let (code, out, err) = run(&args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(
            err.contains(&format!("--capacity 16.00 MiB is impossible: {FLOOR}")),
            "{args:?}: {err}"
        );
        assert!(!out.contains("request_too_large"), "{args:?}: {out}");
    }
    // The exact figure the device held is possible; one byte less is not.
    let (code, _, err) = run(&["summary", f, "--capacity", "16642998271B"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(FLOOR), "{err}");
    let (code, out, err) = run(&["summary", "--json", f, "--capacity", "15872MiB"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let x = &v["ooms"][0];
    assert_eq!(x["verdict"], "live_tensors");
    assert_eq!(x["capacity"], 16_642_998_272u64);
    assert_eq!(x["outside_allocator"], 0);
}

/// A JSON summary's first OOM.
fn first_oom(out: &str) -> serde_json::Value {
    let v: serde_json::Value = serde_json::from_str(out).unwrap();
    v["ooms"][0].clone()
}

fn message(dir: &Path, capacity: &str) -> std::path::PathBuf {
    let p = dir.join(format!("oom-{}.txt", capacity.replace(' ', "")));
    std::fs::write(
        &p,
        format!("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of {capacity} of which 510.00 MiB is free. Of the allocated memory 14.75 GiB is allocated by PyTorch, and 258.00 MiB is reserved by PyTorch but unallocated.\n"),
    )
    .unwrap();
    p
}

#[test]
fn an_impossible_capacity_in_a_message_is_ignored_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let oom = sample("cuda-oom.pickle");
    let f = oom.to_str().unwrap();
    for cap in ["1 bytes", "0 bytes", "15.00 GiB"] {
        let m = message(dir.path(), cap);
        let m = m.to_str().unwrap();
        let (code, out, err) = run(&["summary", "--json", f, "--oom-message", m]);
        assert_eq!(code, 0, "{cap}: {err}");
        let x = first_oom(&out);
        assert_eq!(x["verdict"], "live_tensors", "{cap}");
        assert!(
            x["capacity"].is_null() && x["outside_allocator"].is_null(),
            "{cap}: {x}"
        );
        assert!(
            err.contains(&format!("(\"total capacity of {cap}\"")) && err.contains(FLOOR),
            "{cap}: {err}"
        );
        assert!(err.contains("ignored, no capacity is used"), "{cap}: {err}");
        // The gate fails on the OOM with its real verdict, not on an impossible capacity.
        let (code, out, _) = run(&["check", f, "--max-peak", "100GiB", "--oom-message", m]);
        assert_eq!(code, 1, "{cap}: {out}");
        assert!(
            out.contains("live_tensors") && !out.contains("request_too_large"),
            "{out}"
        );
    }
    // Within the message's printed precision of the floor (15.50 GiB ± 5.120 MiB): kept.
    let m = message(dir.path(), "15.50 GiB");
    let (code, out, err) = run(&["summary", "--json", f, "--oom-message", m.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(first_oom(&out)["capacity"], 16_642_998_272u64, "{err}");
    assert!(!err.contains("impossible"), "{err}");
}

/// A file without reserved memory or OOMs: the message's own figures (14.75 GiB allocated +
/// 258 MiB reserved unallocated + 510 MiB free) still rule out its 1 byte.
#[test]
fn a_message_contradicting_itself_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let m = message(dir.path(), "1 bytes");
    let run3 = sample("train-3steps.jsonl");
    let (code, out, err) = run(&[
        "summary",
        "--json",
        run3.to_str().unwrap(),
        "--oom-message",
        m.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v["capacity"].is_null(), "{}", v["capacity"]);
    assert!(
        err.contains("the message's own reserved 15.00 GiB + free 510.0 MiB"),
        "{err}"
    );
}

/// The file's own capacity (a JSONL header's) below its reserve: dropped with a note, and
/// the OOM that needs a capacity to decide says so instead of `request_too_large`.
#[test]
fn a_file_capacity_below_its_reserve_is_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("run.jsonl");
    std::fs::write(
        &p,
        concat!(
            "{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\",\"capacity\":1048576}\n",
            "{\"t\":1,\"op\":\"reserve\",\"id\":100,\"size\":20971520}\n",
            "{\"t\":2,\"op\":\"alloc\",\"id\":1,\"size\":16777216}\n",
            "{\"t\":3,\"op\":\"oom\",\"size\":1073741824,\"free\":52428800}\n",
        ),
    )
    .unwrap();
    let (code, out, err) = run(&["summary", "--json", p.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let x = first_oom(&out);
    assert_eq!(x["verdict"], "unknown", "{x}");
    assert!(x["capacity"].is_null());
    assert!(
        err.contains("the capacity 1.000 MiB from the JSONL header's capacity is impossible, below the 70.00 MiB that cuda:0 shows it held (reserved 20.00 MiB + driver free 50.00 MiB at the OOM (event #2))"),
        "{err}"
    );
}
