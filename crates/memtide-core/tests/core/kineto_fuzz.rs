//! The Kineto and memory-timeline readers never panic: mutated and truncated versions of the
//! hand-made fixtures load or fail with a clear error.

use memtide_core::formats::Progress;
use memtide_core::open::{open, OpenOptions};
use proptest::prelude::*;

const FIXTURES: [&str; 5] = [
    "relative.json",
    "absolute.json",
    "cuda.json",
    "timeline.json",
    "timeline.raw.json",
];

fn fixture(name: &str) -> Vec<u8> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/kineto")
        .join(name);
    std::fs::read(p).expect("fixture")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 150, .. ProptestConfig::default() })]

    #[test]
    fn mutated_kineto_never_panics(which in 0usize..FIXTURES.len(),
                                   flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..12),
                                   cut in any::<prop::sample::Index>()) {
        let mut b = fixture(FIXTURES[which]);
        for (i, v) in flips {
            let k = i.index(b.len());
            b[k] = v;
        }
        let n = cut.index(b.len() + 1).max(1);
        let dir = tempfile::tempdir().expect("tmp");
        let p = dir.path().join("t.json");
        std::fs::write(&p, &b[..n]).expect("write");
        match open(&p, &OpenOptions::default(), &Progress::new()) {
            Ok(o) => {
                for d in &o.devices {
                    let _ = memtide_core::analysis::global_peak(&d.trace, &d.index);
                }
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}
