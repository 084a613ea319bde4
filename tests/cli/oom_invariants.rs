//! Invariants of the OOM answers over every OOM file in the repository (issue 49): the
//! verdict agrees with the replayed fixes, no advice names a setting in use or one the replay
//! shows failing, and each `fits` holds under the ceiling it names in `tools/cca_model.py`,
//! an allocator model that shares no code with memtide's simulator.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;
use std::process::Command;

use crate::support::repo::{memtide, root, trace_files};

/// Each file of the repository that `summary` reads and whose report holds an OOM, with its
/// `summary --json` document.
fn oom_files() -> Vec<(PathBuf, serde_json::Value)> {
    trace_files()
        .into_iter()
        .filter_map(|p| {
            let o = memtide()
                .arg("summary")
                .arg(&p)
                .arg("--json")
                .output()
                .ok()?;
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).ok()?;
            let has = v["ooms"].as_array().is_some_and(|a| !a.is_empty());
            has.then_some((p, v))
        })
        .collect()
}

fn results(o: &serde_json::Value) -> Vec<(&str, &str)> {
    o["fixes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| Some((f["setting"].as_str()?, f["result"].as_str()?)))
        .collect()
}

/// The setting names memtide replays (`expandable_segments`, …), as the advice would name
/// them.
fn key(setting: &str) -> &str {
    setting.split(':').next().unwrap_or(setting)
}

/// The verdict agrees with the replay, and the advice names no failing setting and no setting
/// in use, on every OOM of every file.
#[test]
fn every_oom_verdict_agrees_with_its_replayed_fixes() {
    let files = oom_files();
    assert!(
        files.len() >= 10,
        "the repository's OOM files were not found: {}",
        files.len()
    );
    let mut judged = 0;
    for (p, v) in &files {
        let name = p.strip_prefix(root()).unwrap().display().to_string();
        for o in v["ooms"].as_array().unwrap() {
            let r = results(o);
            let verdict = o["verdict"].as_str().unwrap();
            let advice = o["advice"].as_str().unwrap();
            if r.is_empty() {
                continue;
            }
            judged += 1;
            let served = r.iter().any(|(_, x)| *x == "fits" || *x == "depends");
            if verdict == "fragmentation" {
                assert!(
                    served,
                    "{name}: fragmentation while every replayed setting runs out: {r:?}"
                );
            }
            for (s, x) in &r {
                if *x == "does_not_fit" {
                    assert!(
                        !advice.contains(&format!("set PYTORCH_CUDA_ALLOC_CONF={s}"))
                            && !advice.contains(&format!("{s} would too")),
                        "{name}: the advice recommends {s}, which the replay shows failing: {advice}"
                    );
                }
            }
            // A setting the file already uses is not among the fixes, and never advised.
            let listed: Vec<&str> = r.iter().map(|(s, _)| key(s)).collect();
            for s in ["expandable_segments", "max_split_size_mb"] {
                if !listed.contains(&s) {
                    assert!(
                        !advice.contains(&format!("set PYTORCH_CUDA_ALLOC_CONF={s}")),
                        "{name}: {s} is in use, yet advised: {advice}"
                    );
                }
            }
            // `fits` carries a proven ceiling and the headroom under it.
            for f in o["fixes"].as_array().unwrap() {
                if f["result"] == "fits" {
                    let src = f["ceiling"]["source"].as_str().unwrap();
                    assert!(
                        src == "oom_figures" || src == "reserved",
                        "{name}: fits under an unproven ceiling ({src})"
                    );
                    assert!(f["headroom_after"].is_u64(), "{name}: {f}");
                }
            }
        }
    }
    assert!(judged >= 8, "too few OOMs with judged fixes: {judged}");
}

/// The ceiling bytes and settings of each `fits`, and the device index of its OOM.
fn fits_of(o: &serde_json::Value) -> Vec<(String, u64)> {
    o["fixes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["result"] == "fits")
        .map(|f| {
            (
                f["setting"].as_str().unwrap().to_string(),
                f["ceiling"]["bytes"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Each `fits` holds under the ceiling it names in the independent allocator model, replayed
/// on top of the settings the file uses, as memtide replays it.
#[test]
fn every_fits_replays_in_the_independent_allocator_model() {
    let mut checked = Vec::new();
    for (p, v) in oom_files() {
        let name = p.strip_prefix(root()).unwrap().display().to_string();
        let snapshot = name.ends_with(".pickle") || name.ends_with(".json");
        for o in v["ooms"].as_array().unwrap() {
            for (setting, ceiling) in fits_of(o) {
                assert!(
                    snapshot,
                    "{name}: `fits` for {setting} in a format tools/cca_model.py cannot replay: add it to the model"
                );
                let device = o["device"]
                    .as_str()
                    .and_then(|d| d.strip_prefix("cuda:"))
                    .unwrap_or("0");
                let out = Command::new("python3")
                    .arg(root().join("tools/cca_model.py"))
                    .arg(&p)
                    .arg(ceiling.to_string())
                    .arg(&setting)
                    .arg(format!("--device={device}"))
                    .arg("--on-file-settings")
                    .output()
                    .expect("python3 runs tools/cca_model.py");
                let text = String::from_utf8_lossy(&out.stdout);
                assert!(
                    out.status.success(),
                    "{name}: the model cannot replay {setting}: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
                let line = text
                    .lines()
                    .find(|l| l.starts_with(&format!("{setting}:")))
                    .unwrap_or_default();
                assert!(
                    line.contains("would have fit"),
                    "{name}: memtide says {setting} fits under {ceiling} B; the model says: {text}"
                );
                checked.push(format!("{name} {setting}"));
            }
        }
    }
    // The fixtures made for it (expandable segments and max_split_size_mb:128 on
    // oom_expandable_saves and oom_horizon, expandable segments on top of the setting in use
    // on oom_split_in_use) and the real H200 file's max_split_size_mb:128.
    assert!(checked.len() >= 6, "{checked:?}");
}
