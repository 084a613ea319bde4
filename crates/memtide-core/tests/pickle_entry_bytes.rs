//! Trace entries read straight from the pickle's bytes (`snapshot/entry_bytes.rs`) decode to
//! exactly what the opcode-by-opcode interpreter gives: the same `Raw` (rows, strings,
//! stacks, kept fields, in the same order) or the same error, on every committed pickle and
//! on mutations of them (bytes changed, values retyped, files cut short). The building half
//! (`snapshot/pickle_build.rs`) gives the same on a second thread, whatever its batches.
#![allow(clippy::unwrap_used)]

use memtide_core::formats::snapshot::from_pickle;
use memtide_core::formats::Threads;
use proptest::prelude::*;
use std::path::Path;

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn pickle(rel: &str) -> Vec<u8> {
    let bytes = std::fs::read(repo().join(rel)).expect("fixture");
    if rel.ends_with(".gz") {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut gunzip(&bytes), &mut out).unwrap();
        return out;
    }
    bytes
}

/// The committed `.pickle.gz`, inflated by the crate's own reader (no extra dependency).
fn gunzip(bytes: &[u8]) -> impl std::io::Read {
    let input = memtide_core::formats::source::from_reader(std::io::Cursor::new(bytes.to_vec()), 0)
        .expect("gzip");
    input.into_reader()
}

fn show(
    r: Result<memtide_core::formats::snapshot::raw::Raw, memtide_core::formats::FormatError>,
) -> String {
    match r {
        Ok(raw) => format!("{raw:?}"),
        Err(e) => format!("error: {e}"),
    }
}

fn both(bytes: &[u8]) -> (String, String) {
    (
        show(from_pickle::read_threads(bytes, false, Threads::One)),
        show(from_pickle::read_opcode_by_opcode(bytes, false)),
    )
}

/// The building half on a second thread, fed batches of 1, 3 and 4096 ops, and on this
/// thread with batches of 3: each as the one-thread reader.
const WAYS: [(Threads, usize); 4] = [
    (Threads::Always, 1),
    (Threads::Always, 3),
    (Threads::Always, 4096),
    (Threads::One, 3),
];

/// [`WAYS`] for the mutations (each case decodes fewer times): one op per batch, and whole
/// batches.
const SOME_WAYS: [(Threads, usize); 2] = [(Threads::Always, 1), (Threads::Always, 4096)];

fn threaded(bytes: &[u8], ways: &[(Threads, usize)]) -> Vec<(String, String)> {
    ways.iter()
        .map(|&(t, n)| {
            (
                format!("{t:?}, batches of {n}"),
                show(from_pickle::read_in_batches(bytes, false, t, n)),
            )
        })
        .collect()
}

const FIXTURES: [&str; 20] = [
    "sample-traces/cuda-oom.pickle",
    "tests/data/snapshot-baseline/baseline.pickle",
    "tests/fixtures/oom/oom_fragmented.pickle",
    "tests/fixtures/oom/oom_live.pickle",
    "tests/fixtures/oom/oom_outside.pickle",
    "tests/fixtures/oom/oom_too_large.pickle",
    "tests/fixtures/ranks/rank0.pickle",
    "tests/fixtures/ranks/rank1.pickle",
    "tests/fixtures/ranks/rank2.pickle",
    "tests/fixtures/ranks/rank3.pickle",
    "tests/fixtures/ranks/rank4.pickle",
    "tests/fixtures/ranks/rank5.pickle",
    "tests/fixtures/ranks/rank7.pickle",
    "tests/fixtures/snapshot/expandable.pickle",
    "tests/fixtures/snapshot/fields.pickle",
    "tests/fixtures/snapshot/late_start.pickle",
    "tests/fixtures/snapshot/no_history.pickle",
    "tests/fixtures/snapshot/ring_p2.pickle",
    "tests/fixtures/snapshot/ring_p5.pickle.gz",
    "tests/fixtures/snapshot/two_devices_p4.pickle",
];

#[test]
fn every_committed_pickle_decodes_the_same_both_ways() {
    let mut decoded = 0;
    for f in FIXTURES {
        let (fast, reference) = both(&pickle(f));
        assert!(
            fast == reference,
            "{f}: the byte reader differs from the interpreter"
        );
        for (way, got) in threaded(&pickle(f), &WAYS) {
            assert!(got == fast, "{f}: {way} differs from one thread");
        }
        decoded += usize::from(!fast.starts_with("error: "));
    }
    // rank7 is cut short on purpose (the ranks overview's unreadable file).
    assert_eq!(decoded, FIXTURES.len() - 1);
}

fn mutate(mut b: Vec<u8>, edits: &[(usize, u8)], cut: Option<usize>) -> Vec<u8> {
    // Edits land in the second half, where the trace entries are.
    let n = b.len();
    for &(pos, val) in edits {
        let i = n / 2 + pos % (n - n / 2);
        b[i] = val;
    }
    if let Some(c) = cut {
        b.truncate(n / 2 + c % (n - n / 2));
    }
    b
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn mutated_pickles_decode_the_same_both_ways(
        file in prop::sample::select(vec![
            "tests/fixtures/snapshot/ring_p2.pickle",
            "tests/fixtures/snapshot/late_start.pickle",
            "tests/fixtures/snapshot/fields.pickle",
            "tests/fixtures/oom/oom_fragmented.pickle",
            "tests/fixtures/ranks/rank7.pickle",
            "sample-traces/cuda-oom.pickle",
        ]),
        edits in prop::collection::vec((any::<usize>(), any::<u8>()), 1..4),
        cut in prop::option::weighted(0.2, any::<usize>()),
    ) {
        let (fast, reference) = both(&mutate(pickle(file), &edits, cut));
        prop_assert!(fast == reference, "{}: {}\n----\n{}", file, fast.chars().take(400).collect::<String>(), reference.chars().take(400).collect::<String>());
        for (way, got) in threaded(&mutate(pickle(file), &edits, cut), &SOME_WAYS) {
            prop_assert!(got == fast, "{}: {} differs from one thread", file, way);
        }
    }
}
