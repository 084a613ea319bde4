//! `Trace::seq_at_times` (one galloping walk) gives exactly what `seq_at_time` (a binary
//! search each) gives, for rising times and for anything else.

use memtide_core::trace::{EventKind, Trace, Ts};
use proptest::prelude::*;

fn trace(ts: &[i64]) -> Trace {
    let mut t = Trace::new("cuda:0", "test", "jsonl");
    for &x in ts {
        t.push_event(Ts(x), EventKind::Other);
    }
    t
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]
    #[test]
    fn the_walk_matches_a_binary_search_each(
        mut ts in proptest::collection::vec(-50i64..50, 0..200),
        mut times in proptest::collection::vec(-60i64..60, 0..40),
        sort_ts in any::<bool>(),
        sort_times in any::<bool>(),
    ) {
        if sort_ts { ts.sort_unstable(); }
        if sort_times { times.sort_unstable(); }
        let t = trace(&ts);
        let times: Vec<Ts> = times.into_iter().map(Ts).collect();
        let one_by_one: Vec<_> = times.iter().map(|&x| t.seq_at_time(x)).collect();
        prop_assert_eq!(t.seq_at_times(&times), one_by_one);
    }
}
