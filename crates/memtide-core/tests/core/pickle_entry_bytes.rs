//! Trace entries read straight from the pickle's bytes (`snapshot/entry_bytes.rs`) decode to
//! exactly what the opcode-by-opcode interpreter gives: the same `Raw` (rows, strings,
//! stacks, kept fields, in the same order) or the same error, on every committed pickle and
//! on mutations of them (bytes changed, values retyped, files cut short). The building half
//! (`snapshot/pickle_build.rs`) gives the same on a second thread, whatever its batches.
#![allow(clippy::unwrap_used)]

use memtide_core::formats::snapshot::{
    read_pickle_in_batches, read_pickle_opcode_by_opcode, read_pickle_threads,
};
use memtide_core::formats::Threads;
use proptest::prelude::*;
use std::path::Path;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
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
    let input =
        memtide_core::formats::from_reader(std::io::Cursor::new(bytes.to_vec()), 0).expect("gzip");
    input.into_reader()
}

fn show(
    r: Result<memtide_core::formats::snapshot::Raw, memtide_core::formats::FormatError>,
) -> String {
    match r {
        Ok(raw) => format!("{raw:?}"),
        Err(e) => format!("error: {e}"),
    }
}

fn both(bytes: &[u8]) -> (String, String) {
    (
        show(read_pickle_threads(bytes, false, Threads::One)),
        show(read_pickle_opcode_by_opcode(bytes, false)),
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
                show(read_pickle_in_batches(bytes, false, t, n)),
            )
        })
        .collect()
}

const FIXTURES: [&str; 20] = [
    "tests/fixtures/samples/cuda-oom.pickle",
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

/// An entry field that fetches an earlier trace entry from the memo (one byte of a fetch's
/// index changed, found by the proptest below): the entry the byte reader read and the one
/// the interpreter sealed both stand as their conversion once read, so the field is refused
/// with the same words both ways.
#[test]
fn a_field_fetching_an_earlier_entry_is_refused_the_same_both_ways() {
    let bytes = mutate(
        pickle("tests/fixtures/ranks/rank7.pickle"),
        &[(9451531984641454506, 178)],
        None,
    );
    let (fast, reference) = both(&bytes);
    assert_eq!(fast, reference);
    assert!(
        fast.starts_with("error: ")
            && fast.contains("'action' must be a str, found converted object"),
        "{fast}"
    );
    for (way, got) in threaded(&bytes, &WAYS) {
        assert_eq!(got, fast, "{way}");
    }
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
            "tests/fixtures/samples/cuda-oom.pickle",
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

/// A protocol-4 pickle written opcode by opcode: strs memoized on first use and fetched
/// after, as Python's pickler does.
#[derive(Default)]
struct Pickle {
    b: Vec<u8>,
    memo: u32,
    strs: std::collections::HashMap<String, u32>,
}

impl Pickle {
    fn op(&mut self, bytes: &[u8]) -> &mut Self {
        self.b.extend_from_slice(bytes);
        self
    }

    /// MEMOIZE: the index it stores at.
    fn memoize(&mut self) -> u32 {
        self.b.push(0x94);
        self.memo += 1;
        self.memo - 1
    }

    fn get(&mut self, idx: u32) -> &mut Self {
        assert!(idx < 256);
        self.op(&[b'h', idx as u8])
    }

    fn s(&mut self, text: &str) -> &mut Self {
        if let Some(&i) = self.strs.get(text) {
            return self.get(i);
        }
        self.b.push(0x8c);
        self.b.push(text.len() as u8);
        self.b.extend_from_slice(text.as_bytes());
        let i = self.memoize();
        self.strs.insert(text.into(), i);
        self
    }

    /// A frame dict `{filename, line, name}`: its memo index.
    fn frame(&mut self, file: &str, line: u8) -> u32 {
        self.op(b"}");
        let i = self.memoize();
        self.op(b"(").s("filename").s(file).s("line");
        self.op(&[b'K', line]).s("name").s("f").op(b"u");
        i
    }

    /// A trace entry `{action, addr, size, frames}` opened up to its frames list's MARK.
    fn entry_start(&mut self, addr: u8) -> &mut Self {
        self.op(b"}");
        self.memoize();
        self.op(b"(").s("action").s("alloc").s("addr");
        self.op(&[b'K', addr])
            .s("size")
            .op(&[b'K', 64])
            .s("frames")
            .op(b"]");
        self.memoize();
        self.op(b"(")
    }
}

/// Two entries whose frames lists have the same bytes have the same frames only while no
/// memo slot was stored over: between them, a third entry stores a new frame over the first
/// one's slot (BINPUT to an index in use). The byte reader, which takes a stack it has seen
/// by the bytes of its frames list, must give the last entry the new frame, as the
/// interpreter does.
#[test]
fn a_memo_slot_stored_over_changes_the_stack_of_the_same_bytes() {
    let mut p = Pickle::default();
    p.op(&[0x80, 4, b'}']);
    p.memoize();
    p.op(b"(").s("device_traces").op(b"]");
    p.memoize();
    p.op(b"(]");
    p.memoize();
    p.op(b"(");
    // Entry 0 defines frames a and b; entries 1 and 2 fetch both (the same bytes).
    p.entry_start(1);
    let a = p.frame("a.py", 1);
    let b = p.frame("b.py", 2);
    p.op(b"eu");
    for addr in [2, 3] {
        p.entry_start(addr).get(a).get(b).op(b"eu");
    }
    // Entry 3 stores a new frame c over a's slot.
    p.entry_start(4);
    p.frame("c.py", 3);
    p.op(&[b'q', a as u8]).op(b"eu");
    // Entry 4: the bytes of entry 1's frames list, which now mean c then b.
    p.entry_start(5).get(a).get(b).op(b"eu");
    p.op(b"ee").s("segments").op(b"]");
    p.memoize();
    p.op(b"u.");

    let (fast, reference) = both(&p.b);
    assert!(!fast.starts_with("error: "), "{fast}");
    assert!(
        fast == reference,
        "the byte reader differs from the interpreter"
    );
    let raw = read_pickle_threads(&p.b[..], false, Threads::One).expect("decodes");
    let stack = |r: u32| raw.rows.get(r).expect("row").stack;
    assert_eq!(raw.rows.len(), 5);
    assert_eq!(stack(1), stack(2), "the same frames fetched: one stack");
    assert_ne!(stack(1), stack(4), "a's slot now holds c: another stack");
    let files = |r: u32| -> Vec<String> {
        let st = stack(r);
        raw.strings
            .stack(st)
            .iter()
            .map(|&f| raw.strings.str(f).into_owned())
            .collect()
    };
    assert!(files(4)[0].contains("c.py"), "{:?}", files(4));
    assert!(files(2)[0].contains("a.py"), "{:?}", files(2));
}
