//! `summary` of a history too long to replay its OOM's fix list by default (issue 51): the
//! list is left to `--fixes` and says so, everything else is what `--fixes` prints, and
//! `--fixes` replays every setting.

#![allow(clippy::unwrap_used)]

use crate::support::pickle_writer::snapshot;
use crate::support::repo::{memtide, root};

/// Entries in the generated history: just over the million `summary` replays by default.
const ENTRIES: usize = 1_000_010;

/// A snapshot whose history is one 64 MiB segment, 2 MiB blocks allocated and freed in turn
/// at 16 places in it, then a 1 GiB request that runs out with no driver memory free.
fn long_history_with_an_oom() -> Vec<u8> {
    const BASE: i32 = 0x1000_0000;
    const MIB2: i32 = 2 << 20;
    snapshot(ENTRIES, |p, i| {
        if i == 0 {
            p.s("action").s("segment_alloc").s("addr").i(BASE);
            p.s("size").i(64 << 20);
        } else if i == ENTRIES - 1 {
            p.s("action").s("oom").s("addr").i(0).s("size").i(1 << 30);
            p.s("device_free").i(0);
        } else {
            let slot = ((i - 1) / 2 % 16) as i32;
            let action = if i % 2 == 1 {
                "alloc"
            } else {
                "free_completed"
            };
            p.s("action").s(action).s("addr").i(BASE + slot * MIB2);
            p.s("size").i(MIB2);
        }
    })
}

fn summary_json(path: &std::path::Path, fixes: bool) -> serde_json::Value {
    summary_json_of(&[path], fixes)
}

fn summary_json_of(paths: &[&std::path::Path], fixes: bool) -> serde_json::Value {
    let mut cmd = memtide();
    cmd.arg("summary").args(paths).arg("--json");
    if fixes {
        cmd.arg("--fixes");
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_long_history_leaves_its_fix_list_to_the_fixes_flag() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.pickle");
    std::fs::write(&path, long_history_with_an_oom()).unwrap();
    let mut plain = summary_json(&path, false);
    let mut full = summary_json(&path, true);
    let (p, f) = (&plain["ooms"][0], &full["ooms"][0]);
    // Deferred: an empty list, no ceiling, and why.
    assert_eq!(p["fixes"], serde_json::json!([]), "{p}");
    assert!(p["fixes_ceiling"].is_null(), "{p}");
    let why = p["fixes_deferred"].as_str().unwrap();
    assert!(
        why.starts_with("not replayed") && why.contains("--fixes") && why.contains("1,000,000"),
        "{why}"
    );
    // Replayed with --fixes: every setting judged, and no deferral.
    assert!(f.get("fixes_deferred").is_none(), "{f}");
    let fixes = f["fixes"].as_array().unwrap();
    assert_eq!(fixes.len(), 4, "{f}");
    assert!(fixes.iter().all(|x| x["result"].is_string()), "{f}");
    // The state's figures are the same either way.
    for k in crate::oom::FIGURE_KEYS {
        assert_eq!(p[k], f[k], "{k}");
    }
    // Everything outside the OOMs is the same document.
    plain.as_object_mut().unwrap().remove("ooms");
    full.as_object_mut().unwrap().remove("ooms");
    assert_eq!(plain, full);
}

/// A job (several files) passes `--fixes` to each rank: the long rank's OOM is deferred
/// without it and replayed with it.
#[test]
fn a_job_passes_the_fixes_flag_to_its_ranks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.pickle");
    std::fs::write(&path, long_history_with_an_oom()).unwrap();
    let other = root().join("sample-traces/cuda-oom.pickle");
    let long_rank = |fixes: bool| {
        let v = summary_json_of(&[&path, &other], fixes);
        let ranks = v["ranks"].as_array().unwrap().clone();
        assert_eq!(ranks.len(), 2, "{v}");
        let short = ranks
            .iter()
            .find(|r| r["file"].as_str().unwrap().ends_with("cuda-oom.pickle"));
        // The short history's list is replayed either way.
        assert!(short.unwrap()["summary"]["ooms"][0]
            .get("fixes_deferred")
            .is_none());
        ranks
            .into_iter()
            .find(|r| r["file"].as_str().unwrap().ends_with("long.pickle"))
            .unwrap()["summary"]["ooms"][0]
            .clone()
    };
    let plain = long_rank(false);
    assert!(plain["fixes_deferred"].is_string(), "{plain}");
    let full = long_rank(true);
    assert!(full.get("fixes_deferred").is_none(), "{full}");
    assert_eq!(full["fixes"].as_array().unwrap().len(), 4, "{full}");
}
