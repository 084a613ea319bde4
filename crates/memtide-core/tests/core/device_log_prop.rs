//! Property test of the device-log merge: on random traces (allocations, segments) and random
//! logs (any times, duplicates, used below reserved), the external band at an event the log
//! covers is max(0, used − reserved) of the last sample at or before it (reserved at that
//! sample's instant), 0 elsewhere, and the total at every event equals allocated + external.
//! The expectation is a brute-force replay here.

use memtide_core::device_merge::merge;
use memtide_core::formats::{
    DeviceLog, DeviceLogOptions, JsonlDecoder, JsonlOptions, LogFormat, LogSample,
};
use memtide_core::index::Index;
use memtide_core::trace::{Band, Seq, Trace};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Alloc(u64),
    Free(usize),
    Reserve(u64),
    Unreserve(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (1u64..1000).prop_map(Op::Alloc),
        any::<usize>().prop_map(Op::Free),
        (1u64..3000).prop_map(Op::Reserve),
        any::<usize>().prop_map(Op::Unreserve),
    ]
}

/// The JSONL text of `ops` (event i at t = 10·(i+1) µs) and, per event, the brute-force
/// allocated and reserved bytes after it.
fn build(ops: &[Op]) -> (String, Vec<u64>, Vec<u64>) {
    let mut text = String::from("{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\"}\n");
    let mut live: Vec<(usize, u64)> = vec![];
    let mut segs: Vec<(usize, u64)> = vec![];
    let (mut alloc, mut res) = (vec![], vec![]);
    for (i, op) in ops.iter().enumerate() {
        let t = 10 * (i as u64 + 1);
        let line = match op {
            Op::Alloc(s) => {
                live.push((i, *s));
                format!("{{\"t\":{t},\"op\":\"alloc\",\"id\":{i},\"size\":{s},\"cat\":\"param\"}}")
            }
            Op::Reserve(s) => {
                segs.push((i, *s));
                format!("{{\"t\":{t},\"op\":\"reserve\",\"id\":{i},\"size\":{s}}}")
            }
            Op::Free(k) if !live.is_empty() => {
                let (id, _) = live.remove(k % live.len());
                format!("{{\"t\":{t},\"op\":\"free\",\"id\":{id}}}")
            }
            Op::Unreserve(k) if !segs.is_empty() => {
                let (id, _) = segs.remove(k % segs.len());
                format!("{{\"t\":{t},\"op\":\"unreserve\",\"id\":{id}}}")
            }
            _ => format!("{{\"t\":{t},\"op\":\"mark\",\"name\":\"m\",\"kind\":\"note\"}}"),
        };
        text.push_str(&line);
        text.push('\n');
        alloc.push(live.iter().map(|x| x.1).sum());
        res.push(segs.iter().map(|x| x.1).sum());
    }
    (text, alloc, res)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn external_is_used_minus_reserved_where_covered(
        ops in prop::collection::vec(op(), 1..60),
        samples in prop::collection::vec((0i64..700, 0u64..6000), 1..30),
        offset in -100i64..100,
    ) {
        let (text, alloc, res) = build(&ops);
        let mut trace = Trace::new("cuda:0", "prop", "jsonl");
        let mut dec = JsonlDecoder::new(JsonlOptions::default());
        dec.feed(&mut trace, text.as_bytes()).expect("valid jsonl");
        dec.finish(&mut trace).expect("finishes");
        trace.wall_offset_ns = Some(0);
        let log = DeviceLog {
            path: "p.csv".into(),
            format: LogFormat::Plain,
            samples: samples
                .iter()
                .map(|&(t_us, used)| LogSample { t_us, device: 0, used, total: None })
                .collect(),
            skipped_lines: 0,
        };
        let opts = DeviceLogOptions { offset_us: offset, ..Default::default() };
        merge(&mut trace, 0, &log, &opts);
        let index = Index::build(&trace);
        prop_assert_eq!(index.len(), ops.len());
        let times: Vec<i64> = samples.iter().map(|s| s.0 + offset).collect();
        let (first, last) = (*times.iter().min().expect("one"), *times.iter().max().expect("one"));
        // A trace without reserved memory takes no external bytes (used − 0 would count the
        // allocated bytes twice).
        let has_reserved = ops.iter().any(|o| matches!(o, Op::Reserve(_)));
        let mut covered = 0u64;
        for p in 0..ops.len() {
            let t = 10 * (p as i64 + 1);
            // The last sample (file order breaks ties) at or before t.
            let mut used: Option<(i64, u64)> = None;
            for (&st, &(_, u)) in times.iter().zip(&samples) {
                if st <= t && used.is_none_or(|(bt, _)| st >= bt) {
                    used = Some((st, u));
                }
            }
            // Reserved at the sample's instant: after the last event at or before it.
            let res_then = |st: i64| {
                (0..ops.len())
                    .rev()
                    .find(|&q| 10 * (q as i64 + 1) <= st)
                    .map_or(0, |q| res[q])
            };
            let expect = if !has_reserved {
                0
            } else if (first..=last).contains(&t) {
                covered += 1;
                used.map_or(0, |(st, u)| u.saturating_sub(res_then(st)))
            } else {
                0
            };
            let bands = index.bands_at(&trace, Seq(p as u64));
            prop_assert_eq!(bands.get(Band::External), expect, "event {}", p);
            prop_assert_eq!(index.total(Seq(p as u64)).0, alloc[p] + expect, "event {}", p);
            prop_assert_eq!(index.reserved_at(&trace, Seq(p as u64)).0, res[p]);
        }
        let info = trace.device_log.as_ref().expect("report");
        prop_assert_eq!(info.covered_events, covered);
        prop_assert_eq!(
            !has_reserved,
            info.warnings.iter().any(|w| w.contains("records no reserved memory"))
        );
        prop_assert!(trace.check_byte_sums().is_ok());
    }
}
