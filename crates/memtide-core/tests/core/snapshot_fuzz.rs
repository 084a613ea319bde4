//! Mutated and truncated snapshot pickles (and JSON) never panic the reader: every input
//! either decodes (and replays) or gives an error.
#![allow(clippy::unwrap_used)]

use memtide_core::analysis::Rules;
use memtide_core::formats::snapshot::{read_json, read_pickle, Raw};
use memtide_core::trace::Trace;
use proptest::prelude::*;

fn fixture(p: &str) -> Vec<u8> {
    std::fs::read(
        std::path::Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/snapshot/"
        ))
        .join(p),
    )
    .expect("fixture")
}

/// Replays and infers, as loading a file does.
fn build(raw: &Raw) -> Vec<Trace> {
    let mut traces = memtide_core::formats::snapshot::build(raw, "fuzz");
    memtide_core::open::infer_missing(&mut traces, &Rules::default());
    traces
}

fn run_pickle(bytes: &[u8]) {
    if let Ok(raw) = read_pickle(bytes, false) {
        for t in build(&raw) {
            let ix = memtide_core::index::Index::build(&t);
            let _ = memtide_core::analysis::Summary::build(&t, &ix);
        }
    }
}

fn mutate(mut b: Vec<u8>, edits: &[(usize, u8)], cut: Option<usize>) -> Vec<u8> {
    for &(pos, val) in edits {
        if !b.is_empty() {
            let i = pos % b.len();
            b[i] = val;
        }
    }
    if let Some(c) = cut {
        if !b.is_empty() {
            b.truncate(c % b.len());
        }
    }
    b
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn mutated_p2_pickles_never_panic(
        edits in prop::collection::vec((any::<usize>(), any::<u8>()), 0..8),
        cut in prop::option::of(any::<usize>()),
    ) {
        run_pickle(&mutate(fixture("ring_p2.pickle"), &edits, cut));
    }

    #[test]
    fn mutated_p4_pickles_never_panic(
        edits in prop::collection::vec((any::<usize>(), any::<u8>()), 0..8),
        cut in prop::option::of(any::<usize>()),
    ) {
        run_pickle(&mutate(fixture("two_devices_p4.pickle"), &edits, cut));
    }

    #[test]
    fn mutated_json_never_panics(
        edits in prop::collection::vec((any::<usize>(), any::<u8>()), 0..8),
        cut in prop::option::of(any::<usize>()),
    ) {
        let b = mutate(fixture("small.json"), &edits, cut);
        if let Ok(raw) = read_json(&b[..], false) {
            let _ = build(&raw);
        }
    }

    /// The newer shapes: expandable segments, PyTorch 2.x fields and host memory, a cut
    /// history, a history-less dump, the bare segment list.
    #[test]
    fn mutated_new_shapes_never_panic(
        which in 0usize..5,
        edits in prop::collection::vec((any::<usize>(), any::<u8>()), 0..8),
        cut in prop::option::of(any::<usize>()),
    ) {
        let f = ["expandable.pickle", "fields.pickle", "late_start.pickle", "no_history.pickle",
                 "segments_list.pickle"][which];
        run_pickle(&mutate(fixture(f), &edits, cut));
    }

    #[test]
    fn mutated_fields_json_never_panics(
        edits in prop::collection::vec((any::<usize>(), any::<u8>()), 0..8),
        cut in prop::option::of(any::<usize>()),
    ) {
        for f in ["fields.json", "segments_list.json"] {
            let b = mutate(fixture(f), &edits, cut);
            if let Ok(raw) = read_json(&b[..], false) {
                for t in build(&raw) {
                    let ix = memtide_core::index::Index::build(&t);
                    let _ = memtide_core::analysis::Summary::build(&t, &ix);
                }
            }
        }
    }

    #[test]
    fn random_bytes_after_proto_never_panic(body in prop::collection::vec(any::<u8>(), 0..512)) {
        let mut b = vec![0x80, 0x04];
        b.extend(body);
        run_pickle(&b);
    }
}

#[test]
fn every_truncation_of_a_small_pickle_errors_cleanly() {
    let full = fixture("ring_p2.pickle");
    // every prefix up to 300 bytes (header, first containers), then a stride through the rest
    let mut cuts: Vec<usize> = (0..300.min(full.len())).collect();
    cuts.extend((300..full.len()).step_by(1499));
    for c in cuts {
        let e = read_pickle(&full[..c], false).expect_err("a prefix cannot be complete");
        assert!(e.to_string().contains("byte offset"), "{e}");
    }
}
