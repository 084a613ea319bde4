//! The whole `summary --json` document of each sample and of one fixture per reader, pinned by
//! insta: any change to a key, its order, a figure or a null is a visible snapshot diff (the
//! schema is serde-derived in `memtide_core::analysis::summary_json`; docs/summary-json.md lists
//! the keys, `tests/cli/cli.rs` checks they are all present).

use assert_cmd::Command;

/// `memtide summary --json FILE` run from the package root with a relative path, so the
/// `source` key is the same on every machine.
fn summary_json(rel: &str) -> String {
    let out = Command::cargo_bin("memtide")
        .expect("memtide binary")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["summary", "--json", rel])
        .output()
        .expect("run memtide");
    assert!(
        out.status.success(),
        "{rel}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 JSON")
}

macro_rules! pinned {
    ($name:ident, $path:literal) => {
        #[test]
        fn $name() {
            insta::assert_snapshot!(summary_json($path));
        }
    };
}

pinned!(jsonl_three_steps, "sample-traces/train-3steps.jsonl");
pinned!(jsonl_checkpointed, "sample-traces/train-checkpointed.jsonl");
pinned!(jsonl_leak, "sample-traces/train-leak.jsonl");
pinned!(snapshot_oom_pickle, "sample-traces/cuda-oom.pickle");
pinned!(kineto_oom_trace, "sample-traces/cuda-oom.pt.trace.json.gz");
pinned!(
    snapshot_without_history,
    "tests/fixtures/snapshot/no_history.pickle"
);
pinned!(
    snapshot_two_devices,
    "tests/fixtures/snapshot/two_devices_p4.pickle"
);
pinned!(snapshot_json, "tests/fixtures/snapshot/small.json");
