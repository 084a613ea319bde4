//! Property tests: the JSONL reader + interval index against a brute-force oracle written
//! straight from the JSONL spec in docs/formats.md (equal-`t` ordering, views, release/free,
//! zero-length intervals, unmatched frees, zero-size allocations), and chunking invariance of
//! the decoder.

use memtide_core::analysis::global_peak;
use memtide_core::formats::{JsonlDecoder, JsonlOptions};
use memtide_core::index::Index;
use memtide_core::trace::{Band, Seq, Trace};
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug)]
enum Op {
    Alloc { id: u64, size: u64, cat: u8 },
    View { id: u64, of: u64 },
    Release { id: u64 },
    Free { id: u64 },
    Mark,
}

const CATS: [(&str, Band); 6] = [
    ("param", Band::Persistent),
    ("activation", Band::Activation),
    ("temp", Band::Workspace),
    ("external", Band::External),
    ("optimizer", Band::Persistent),
    ("", Band::Unknown),
];

fn op_strategy() -> impl Strategy<Value = (u64, Op)> {
    let dt = prop_oneof![3 => Just(0u64), 2 => 1u64..4];
    let id = 1u64..12;
    let op = prop_oneof![
        4 => (id.clone(), prop_oneof![1 => Just(0u64), 6 => 1u64..5000], 0u8..6)
            .prop_map(|(id, size, cat)| Op::Alloc { id, size, cat }),
        2 => (id.clone(), id.clone()).prop_map(|(id, of)| Op::View { id, of }),
        3 => id.clone().prop_map(|id| Op::Release { id }),
        2 => id.prop_map(|id| Op::Free { id }),
        1 => Just(Op::Mark),
    ];
    (dt, op)
}

/// Renders ops as JSONL. Ops that strict mode rejects (alloc of a live id, view of a dead
/// tensor) are read in lenient mode, where they stay on the axis but do nothing; the oracle
/// does the same.
fn render(ops: &[(u64, Op)]) -> (String, Vec<(u64, Op)>) {
    let mut out = String::from("{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\"}\n");
    let mut kept = Vec::new();
    let mut t = 0u64;
    for (dt, op) in ops {
        t += dt;
        let line = match op {
            Op::Alloc { id, size, cat } => {
                let c = CATS[*cat as usize].0;
                if c.is_empty() {
                    format!("{{\"t\":{t},\"op\":\"alloc\",\"id\":{id},\"size\":{size}}}")
                } else {
                    format!("{{\"t\":{t},\"op\":\"alloc\",\"id\":{id},\"size\":{size},\"cat\":\"{c}\"}}")
                }
            }
            Op::View { id, of } => format!("{{\"t\":{t},\"op\":\"view\",\"id\":{id},\"of\":{of}}}"),
            Op::Release { id } => format!("{{\"t\":{t},\"op\":\"release\",\"id\":{id}}}"),
            Op::Free { id } => format!("{{\"t\":{t},\"op\":\"free\",\"id\":{id}}}"),
            Op::Mark => format!("{{\"t\":{t},\"op\":\"mark\",\"name\":\"m\",\"kind\":\"step\"}}"),
        };
        out.push_str(&line);
        out.push('\n');
        kept.push((t, op.clone()));
    }
    (out, kept)
}

/// Brute force: per position (application order), the set of live storages.
struct Oracle {
    /// (source index) per position.
    src: Vec<u64>,
    /// live storage keys per position, with (size, band).
    live: Vec<BTreeMap<u64, (u64, Band)>>,
    valid: bool,
}

fn oracle(ops: &[(u64, Op)]) -> Oracle {
    // Application order within equal-t groups: frees/releases first (file order) unless their
    // id was introduced earlier in the same group; then the rest in file order.
    let mut order: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < ops.len() {
        let t = ops[i].0;
        let mut j = i;
        while j < ops.len() && ops[j].0 == t {
            j += 1;
        }
        let mut introduced = BTreeSet::new();
        let mut first = Vec::new();
        let mut second = Vec::new();
        for (k, (_, op)) in ops.iter().enumerate().take(j).skip(i) {
            match op {
                Op::Alloc { id, .. } | Op::View { id, .. } => {
                    introduced.insert(*id);
                    second.push(k);
                }
                Op::Release { id } | Op::Free { id } if !introduced.contains(id) => first.push(k),
                _ => second.push(k),
            }
        }
        order.extend(first);
        order.extend(second);
        i = j;
    }
    // Simulate: storage key = position of its alloc.
    let mut tensors: BTreeMap<u64, u64> = BTreeMap::new(); // tensor id -> storage key
    let mut refs: BTreeMap<u64, BTreeSet<u64>> = BTreeMap::new(); // storage -> tensor ids
    let mut info: BTreeMap<u64, (u64, Band, u64, u64)> = BTreeMap::new(); // key -> size, band, t_alloc, end pos
    let mut closed_t: BTreeMap<u64, u64> = BTreeMap::new();
    let valid = true;
    let mut ends: BTreeMap<u64, u64> = BTreeMap::new();
    for (p, &k) in order.iter().enumerate() {
        let (t, op) = &ops[k];
        let p = p as u64;
        match op {
            Op::Alloc { id, size, cat } => {
                if tensors.contains_key(id) {
                    // Rejected (lenient mode skips it): the event stays on the axis, inert.
                    continue;
                }
                tensors.insert(*id, p);
                refs.entry(p).or_default().insert(*id);
                info.insert(p, (*size, CATS[*cat as usize].1, *t, u64::MAX));
            }
            Op::View { id, of } => {
                if tensors.contains_key(id) || !tensors.contains_key(of) {
                    continue;
                }
                let s = tensors[of];
                tensors.insert(*id, s);
                refs.entry(s).or_default().insert(*id);
            }
            Op::Release { id } => {
                if let Some(s) = tensors.remove(id) {
                    let r = refs.entry(s).or_default();
                    r.remove(id);
                    if r.is_empty() {
                        ends.insert(s, p);
                        closed_t.insert(s, *t);
                    }
                }
            }
            Op::Free { id } => {
                if let Some(s) = tensors.get(id).copied() {
                    for tid in refs.remove(&s).unwrap_or_default() {
                        tensors.remove(&tid);
                    }
                    ends.insert(s, p);
                    closed_t.insert(s, *t);
                }
            }
            Op::Mark => {}
        }
    }
    let n = order.len();
    let mut live = vec![BTreeMap::new(); n];
    for (&key, &(size, band, t_alloc, _)) in &info {
        let end = ends.get(&key).copied().unwrap_or(u64::MAX);
        // Freed at the same t as allocated: a zero-length interval, never live.
        if closed_t.get(&key) == Some(&t_alloc) {
            continue;
        }
        for (p, l) in live.iter_mut().enumerate() {
            let p = p as u64;
            if key <= p && p < end {
                l.insert(key, (size, band));
            }
        }
    }
    let src = order.iter().map(|&k| k as u64).collect();
    Oracle { src, live, valid }
}

fn parse(text: &str) -> Trace {
    let mut trace = Trace::new("cuda:0", "prop", "jsonl");
    let mut dec = JsonlDecoder::new(JsonlOptions {
        lenient: true,
        ..JsonlOptions::default()
    });
    dec.feed(&mut trace, text.as_bytes())
        .expect("valid by construction");
    dec.finish(&mut trace).expect("valid by construction");
    trace
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, .. ProptestConfig::default() })]

    #[test]
    fn index_matches_brute_force(ops in prop::collection::vec(op_strategy(), 1..120),
                                 ranges in prop::collection::vec((0usize..200, 0usize..200), 8)) {
        let (text, kept) = render(&ops);
        let o = oracle(&kept);
        prop_assume!(o.valid);
        let trace = parse(&text);
        let index = Index::build(&trace);
        prop_assert_eq!(index.len(), o.live.len());
        for (p, live) in o.live.iter().enumerate() {
            let at = Seq(p as u64);
            prop_assert_eq!(trace.src_index(at), o.src[p], "source index at {}", p);
            let total: u64 = live.values().map(|v| v.0).sum();
            prop_assert_eq!(index.total(at).0, total, "total at {}", p);
            let bands = index.bands_at(&trace, at);
            for b in Band::ALL {
                let want: u64 = live.values().filter(|v| v.1 == b).map(|v| v.0).sum();
                prop_assert_eq!(bands.get(b), want, "band {:?} at {}", b, p);
            }
            let got: BTreeSet<u64> = index.live_at(&trace, at).iter().map(|&id| trace.start(id).0).collect();
            let want: BTreeSet<u64> = live.keys().copied().collect();
            prop_assert_eq!(got, want, "live set at {}", p);
        }
        let n = o.live.len();
        let totals: Vec<u64> = o.live.iter().map(|l| l.values().map(|v| v.0).sum()).collect();
        for (a, b) in ranges {
            let (lo, hi) = (a % n, b % n);
            let (lo, hi) = (lo.min(hi), lo.max(hi));
            let mut best = lo;
            for p in lo..=hi {
                if totals[p] > totals[best] { best = p; }
            }
            let got = index.argmax(Seq(lo as u64), Seq(hi as u64)).expect("non-empty range");
            prop_assert_eq!(got.0, Seq(best as u64), "argmax [{}, {}]", lo, hi);
            prop_assert_eq!(got.1.0, totals[best]);
            // overlapping: live anywhere in [lo, hi]
            let want: BTreeSet<u64> = o.live[lo..=hi].iter().flat_map(|l| l.keys().copied()).collect();
            let got: BTreeSet<u64> = index.overlapping(&trace, Seq(lo as u64), Seq(hi as u64))
                .iter().map(|&id| trace.start(id).0).collect();
            prop_assert_eq!(got, want, "overlapping [{}, {}]", lo, hi);
        }
        let peak = global_peak(&trace, &index).expect("events");
        let max = *totals.iter().max().expect("events");
        prop_assert_eq!(peak.bytes.0, max);
        prop_assert_eq!(peak.at.0 as usize, totals.iter().position(|&x| x == max).expect("max"));
    }

    #[test]
    fn any_chunking_gives_the_same_trace(ops in prop::collection::vec(op_strategy(), 1..80),
                                         cuts in prop::collection::vec(0usize..4000, 0..12)) {
        let (text, kept) = render(&ops);
        prop_assume!(oracle(&kept).valid);
        let whole = parse(&text);
        let bytes = text.as_bytes();
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c % (bytes.len() + 1)).collect();
        cuts.sort_unstable();
        let mut trace = Trace::new("cuda:0", "prop", "jsonl");
        let mut dec = JsonlDecoder::new(JsonlOptions { lenient: true, ..JsonlOptions::default() });
        let mut last = 0;
        let mut index = Index::build(&trace);
        for c in cuts.into_iter().chain(std::iter::once(bytes.len())) {
            dec.feed(&mut trace, &bytes[last..c]).expect("valid");
            index.extend(&trace); // appending must extend, not rebuild
            last = c;
        }
        dec.finish(&mut trace).expect("valid");
        index.extend(&trace);
        prop_assert_eq!(trace.len(), whole.len());
        prop_assert_eq!(trace.timestamps().collect::<Vec<_>>(), whole.timestamps().collect::<Vec<_>>());
        prop_assert_eq!(&trace.changes, &whole.changes);
        prop_assert_eq!(
            (0..trace.storage_count()).map(|i| trace.size(memtide_core::trace::AllocId(i as u32))).collect::<Vec<_>>(),
            (0..whole.storage_count()).map(|i| whole.size(memtide_core::trace::AllocId(i as u32))).collect::<Vec<_>>()
        );
        let full = Index::build(&whole);
        prop_assert_eq!(index.totals().collect::<Vec<_>>(), full.totals().collect::<Vec<_>>());
        for p in 0..trace.len() {
            let at = Seq(p as u64);
            prop_assert_eq!(trace.src_index(at), whole.src_index(at));
            prop_assert_eq!(index.bands_at(&trace, at), full.bands_at(&whole, at));
        }
    }
}

#[test]
fn big_random_trace_argmax_and_live_cross_blocks() {
    // Many blocks (BLOCK = 1024) so the sparse table and checkpoints are exercised.
    let mut text = String::from("{\"memtide\":1,\"clock\":\"seq\"}\n");
    let mut state: u64 = 0x9e3779b97f4a7c15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut live: Vec<u64> = Vec::new();
    let mut id = 0u64;
    for t in 0..20_000u64 {
        if live.len() < 50 && (live.is_empty() || next() % 3 != 0) {
            id += 1;
            let size = next() % 100_000;
            text.push_str(&format!("{{\"t\":{t},\"op\":\"alloc\",\"id\":{id},\"size\":{size},\"cat\":\"activation\"}}\n"));
            live.push(id);
        } else {
            let k = (next() % live.len() as u64) as usize;
            let victim = live.swap_remove(k);
            text.push_str(&format!("{{\"t\":{t},\"op\":\"free\",\"id\":{victim}}}\n"));
        }
    }
    let trace = parse(&text);
    let index = Index::build(&trace);
    // brute-force totals by replaying storages
    let n = trace.len();
    let mut totals = vec![0u64; n];
    for s in 0..trace.storage_count() {
        let id = memtide_core::trace::AllocId(s as u32);
        let st = trace.start(id).0 as usize;
        let en = trace.end(id).map_or(n, |e| e.0 as usize);
        for x in totals.iter_mut().take(en).skip(st) {
            *x += trace.size(id).0;
        }
    }
    assert_eq!(index.totals().collect::<Vec<_>>(), totals);
    for k in 0..200u64 {
        let a = (next() % n as u64) as usize;
        let b = (next() % n as u64) as usize;
        let (lo, hi) = (a.min(b), a.max(b));
        let mut best = lo;
        for p in lo..=hi {
            if totals[p] > totals[best] {
                best = p;
            }
        }
        let got = index.argmax(Seq(lo as u64), Seq(hi as u64)).expect("range");
        assert_eq!(got.0 .0 as usize, best, "query {k}: [{lo},{hi}]");
        if k % 20 == 0 {
            let want: BTreeSet<u32> = (0..trace.storage_count() as u32)
                .filter(|&s| trace.is_live_at(memtide_core::trace::AllocId(s), Seq(lo as u64)))
                .collect();
            let got: BTreeSet<u32> = index
                .live_at(&trace, Seq(lo as u64))
                .iter()
                .map(|a| a.0)
                .collect();
            assert_eq!(got, want);
        }
    }
}
