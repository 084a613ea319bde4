//! The one-pass step-survivor analysis against its definition, computed the slow way: for each
//! step after which the baseline rises, the storages made inside it that are live at every
//! later step boundary and at the end (quadratic, written from the definition); a site counts
//! when it survives from a step after the warm-up, except a site that survives from the last
//! step alone and freed what it made in an earlier step (remade every step, like a gradient
//! `zero_grad(set_to_none=True)` frees).

use memtide_core::analysis::trend;
use memtide_core::formats::Progress;
use memtide_core::index::Index;
use memtide_core::open::open;
use memtide_core::trace::{Seq, Trace};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// (name, frame) → (bytes, count, steps, storage ids).
type Groups = BTreeMap<(String, String), (u64, usize, Vec<String>, Vec<u32>)>;

/// Oracle: (name, frame) → (bytes, count, steps, ids), visiting steps in order and, in each,
/// the storages live at the end in the index's order; the sites the definition keeps.
fn oracle(trace: &Trace, index: &Index, steps: &[(String, Seq, Seq)]) -> Groups {
    let last = Seq(index.len() as u64 - 1);
    let mut groups: Groups = BTreeMap::new();
    // The positions of the steps each site's survivors were made in.
    let mut made_in: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for (k, (name, lo, hi)) in steps.iter().enumerate() {
        for id in index.live_at(trace, last) {
            let start = trace.start(id);
            if trace.is_from_start(id) || start < *lo || start > *hi {
                continue;
            }
            let ok = steps[k + 1..]
                .iter()
                .all(|(_, l, _)| l.0 == 0 || trace.is_live_at(id, Seq(l.0 - 1)));
            if !ok {
                continue;
            }
            let key = (trace.name(id).to_string(), trace.top_frame(id).to_string());
            made_in.entry(key.clone()).or_default().push(k);
            let g = groups.entry(key).or_default();
            g.0 += trace.size(id).0;
            g.1 += 1;
            if !g.2.contains(name) {
                g.2.push(name.clone());
            }
            g.3.push(id.0);
        }
    }
    let last_step = steps.len().saturating_sub(1);
    // Whether the site freed a storage it made inside a step before the last.
    let freed_before_last = |key: &(String, String)| {
        (0..trace.storage_count() as u32).any(|i| {
            let id = memtide_core::trace::AllocId(i);
            let start = trace.start(id);
            !trace.is_from_start(id)
                && steps.len() >= 2
                && start >= steps[0].1
                && start < steps[last_step].1
                && trace.end(id).is_some()
                && (trace.name(id).to_string(), trace.top_frame(id).to_string()) == *key
        })
    };
    groups
        .into_iter()
        .filter(|(key, _)| {
            let ks = &made_in[key];
            let after_warm_up = ks.iter().any(|&k| k != 0);
            let before_last = ks.iter().any(|&k| k != 0 && k != last_step);
            after_warm_up && (before_last || !freed_before_last(key))
        })
        .collect()
}

/// A run of `steps` steps; each allocates `per_step` storages from a few sites, each freed
/// after `life` steps (0: in its own step; 9: never).
fn jsonl(plan: &[Vec<(u8, u8)>]) -> String {
    let mut s = String::from("{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\"}\n");
    let mut t = 1u64;
    let mut id = 0u64;
    let mut frees: BTreeMap<usize, Vec<u64>> = BTreeMap::new();
    for (k, allocs) in plan.iter().enumerate() {
        s += &format!("{{\"t\":{t},\"op\":\"mark\",\"name\":\"step {k}\",\"kind\":\"step\"}}\n");
        t += 1;
        for &(site, life) in allocs {
            id += 1;
            s += &format!(
                "{{\"t\":{t},\"op\":\"alloc\",\"id\":{id},\"size\":{},\"cat\":\"activation\",\"name\":\"site{site}\",\"stack\":[\"train.py:{site} f\"]}}\n",
                1024 * (1 + u64::from(site))
            );
            t += 1;
            if life < 9 {
                frees.entry(k + usize::from(life)).or_default().push(id);
            }
        }
        for f in frees.remove(&k).unwrap_or_default() {
            s += &format!("{{\"t\":{t},\"op\":\"free\",\"id\":{f}}}\n");
            t += 1;
        }
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn survivors_match_their_definition(
        plan in prop::collection::vec(prop::collection::vec((0u8..4, prop_oneof![0u8..4, Just(9u8)]), 0..6), 1..14)
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("t.jsonl");
        std::fs::write(&p, jsonl(&plan)).expect("write");
        let opened = open(&p, &Default::default(), &Progress::new()).expect("loads");
        let (trace, index) = (&opened.devices[0].trace, &opened.devices[0].index);
        let tr = trend(trace, index);
        let steps: Vec<(String, Seq, Seq)> =
            tr.steps.iter().map(|s| (s.name.to_string(), s.lo, s.hi)).collect();
        let want = if tr.rising { oracle(trace, index, &steps) } else { BTreeMap::new() };
        let got: Groups = tr
            .survivors
            .iter()
            .map(|g| {
                (
                    (g.name.clone(), g.frame.clone()),
                    (
                        g.bytes.0,
                        g.count,
                        g.steps.iter().map(|s| s.to_string()).collect(),
                        g.ids.iter().map(|i| i.0).collect(),
                    ),
                )
            })
            .collect();
        prop_assert_eq!(got, want);
    }
}

#[test]
fn a_leak_in_every_step_is_found_as_the_definition_says() {
    let plan: Vec<Vec<(u8, u8)>> = (0..30).map(|_| vec![(1, 9), (2, 0), (3, 1)]).collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("t.jsonl");
    std::fs::write(&p, jsonl(&plan)).expect("write");
    let opened = open(&p, &Default::default(), &Progress::new()).expect("loads");
    let (trace, index) = (&opened.devices[0].trace, &opened.devices[0].index);
    let tr = trend(trace, index);
    assert!(
        tr.rising,
        "one never-freed storage per step raises every boundary"
    );
    let steps: Vec<(String, Seq, Seq)> = tr
        .steps
        .iter()
        .map(|s| (s.name.to_string(), s.lo, s.hi))
        .collect();
    let want = oracle(trace, index, &steps);
    // Site 1 leaks in every step; the last step's site-3 storage also outlives it (its free
    // would come in a step that never starts), but site 3 freed each earlier step's storage:
    // remade every step, no survivor.
    assert_eq!(want.len(), 1);
    assert_eq!(tr.survivors.len(), want.len());
    for g in &tr.survivors {
        let w = &want[&(g.name.clone(), g.frame.clone())];
        let steps: Vec<String> = g.steps.iter().map(|s| s.to_string()).collect();
        assert_eq!((g.bytes.0, g.count, &steps), (w.0, w.1, &w.2));
    }
    let site1 = tr
        .survivors
        .iter()
        .find(|g| g.name == "site1")
        .expect("site 1 leaks");
    assert_eq!(site1.count, 30, "site 1 leaks once per step");
}
