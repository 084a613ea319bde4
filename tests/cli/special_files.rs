//! Every file memtide reads goes through one regular-file open (issue 47, item 5): a FIFO
//! (which would block forever with no writer), `/dev/zero` (which never ends) or a directory
//! given to any input flag is refused at once with exit 2, naming the flag's file and what it
//! is. Each run has a time limit: a hang fails the test instead of stalling it.

#![allow(clippy::unwrap_used)]

use crate::support::repo::memtide;
use std::time::Duration;

fn run(args: &[&str]) -> (Option<i32>, String) {
    let out = memtide()
        .args(args)
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn special_files_are_refused_at_once_for_every_input() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    let mut specials = vec![("/dev/zero", "a character device")];
    if made.is_ok_and(|s| s.success()) {
        specials.push((fifo.to_str().unwrap(), "a FIFO (named pipe)"));
    }
    let d = dir.path().to_str().unwrap();
    specials.push((d, "a directory"));
    let snap = "sample-traces/cuda-oom.pickle";
    let kineto = "sample-traces/cuda-oom.pt.trace.json.gz";
    for (special, kind) in specials {
        let cases: Vec<Vec<&str>> = vec![
            vec!["summary", snap, "--oom-message", special],
            vec!["summary", snap, "--nsys", special],
            vec!["summary", snap, "--rules", special],
            vec!["summary", snap, "--device-log", special],
            vec!["summary", kineto, "--categories", special],
            vec![
                "check",
                snap,
                "--max-peak",
                "1GiB",
                "--oom-message",
                special,
            ],
            vec!["plot", snap, "-o", "-", "--theme", special],
        ];
        for args in cases {
            let (code, err) = run(&args);
            assert_eq!(code, Some(2), "{args:?}: {err}");
            assert!(err.contains(special), "{args:?}: the file is named: {err}");
            assert!(
                err.contains(kind)
                    || err.contains("not a regular file")
                    || err.contains("directory"),
                "{args:?}: says what it is: {err}"
            );
        }
        // The trace itself too (a directory is a job, not an error).
        if special != d {
            let (code, err) = run(&["summary", special]);
            assert_eq!(code, Some(2), "{err}");
            assert!(err.contains(kind), "{err}");
        }
    }
}
