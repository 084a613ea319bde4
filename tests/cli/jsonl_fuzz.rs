//! The JSONL reader never panics: mutated and truncated versions of a real sample, and random
//! bytes after a valid header, give a trace or a clear error — never a crash.

use memtide_core::formats::{JsonlDecoder, JsonlOptions};
use memtide_core::index::Index;
use memtide_core::trace::Trace;
use proptest::prelude::*;

fn sample() -> Vec<u8> {
    std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/sample-traces/train-leak.jsonl"
    ))
    .expect("sample")
}

fn run(bytes: &[u8], lenient: bool) {
    let mut t = Trace::new("cuda:0", "fuzz", "jsonl");
    let mut d = JsonlDecoder::new(JsonlOptions {
        lenient,
        ..JsonlOptions::default()
    });
    let ok = d.feed(&mut t, bytes).and_then(|_| d.finish(&mut t));
    if let Err(e) = ok {
        // Errors name a line.
        assert!(e.to_string().starts_with("line "), "{e}");
    }
    // Whatever was read indexes and answers queries.
    let ix = Index::build(&t);
    if !ix.is_empty() {
        let _ = memtide_core::analysis::global_peak(&t, &ix);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    #[test]
    fn mutated_samples_never_panic(flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..20),
                                   cut in any::<prop::sample::Index>(),
                                   lenient in any::<bool>()) {
        let mut b = sample();
        for (i, v) in flips {
            let k = i.index(b.len());
            b[k] = v;
        }
        let n = cut.index(b.len() + 1);
        run(&b[..n], lenient);
    }

    #[test]
    fn random_bytes_after_a_header_never_panic(tail in prop::collection::vec(any::<u8>(), 0..400),
                                               lenient in any::<bool>()) {
        let mut b = b"{\"memtide\":1}\n".to_vec();
        b.extend_from_slice(&tail);
        run(&b, lenient);
    }
}
