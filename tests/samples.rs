//! The bundled sample traces give the peaks that `sample-traces/README.md` states (computed by
//! hand from the generator's schedule), and the committed files match the generator.

use memtide::analysis::{all_windows, global_peak, WindowKind};
use memtide::formats::{load, LoadOptions, Progress};
use memtide::index::Index;
use memtide::trace::{Band, EventKind};
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

struct Row {
    file: String,
    peak: u64,
    bands: [u64; 4],
    reserved: u64,
    final_bytes: u64,
    step: String,
}

fn readme_rows() -> Vec<Row> {
    let text = std::fs::read_to_string(root().join("sample-traces/README.md")).expect("README");
    text.lines()
        .filter(|l| l.starts_with("| train"))
        .map(|l| {
            let c: Vec<&str> = l
                .split('|')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            let n = |i: usize| c[i].parse::<u64>().expect("number in README table");
            Row {
                file: c[0].to_string(),
                peak: n(1),
                bands: [n(2), n(3), n(4), n(5)],
                reserved: n(6),
                final_bytes: n(7),
                step: c[8].to_string(),
            }
        })
        .collect()
}

#[test]
fn samples_peak_as_the_readme_states() {
    let rows = readme_rows();
    assert_eq!(rows.len(), 3, "three samples in the README table");
    for r in rows {
        let path = root().join("sample-traces").join(&r.file);
        let loaded = load(&path, &LoadOptions::default(), &Progress::new()).expect("sample loads");
        let trace = &loaded.traces[0];
        let index = Index::build(trace);
        let peak = global_peak(trace, &index).expect("events");
        assert_eq!(peak.bytes.0, r.peak, "{}: peak", r.file);
        for (i, b) in [
            Band::Persistent,
            Band::Activation,
            Band::Workspace,
            Band::External,
        ]
        .into_iter()
        .enumerate()
        {
            assert_eq!(
                peak.bands.get(b),
                r.bands[i],
                "{}: band {}",
                r.file,
                b.name()
            );
        }
        assert_eq!(peak.bands.get(Band::Unknown), 0);
        assert_eq!(
            index.reserved_peak().expect("reserved").0 .0,
            r.reserved,
            "{}: reserved",
            r.file
        );
        assert_eq!(
            memtide::analysis::final_bytes(&index).0,
            r.final_bytes,
            "{}: final",
            r.file
        );
        let mark = trace.enclosing_mark(peak.at).expect("inside a step");
        assert_eq!(
            trace.mark_name(mark),
            r.step,
            "{}: step of the peak",
            r.file
        );
        // The peak event is the allocation of layer 3's backward temp.
        assert_eq!(trace.kind(peak.at), EventKind::Alloc);
        let opened: Vec<_> = trace
            .changes
            .iter()
            .filter(|c| c.at == peak.at && c.open)
            .collect();
        assert_eq!(opened.len(), 1);
        assert_eq!(trace.name(opened[0].storage), "grad_input temp");
        assert!(trace.top_frame(opened[0].storage).contains("layers.3"));
        // The 1 GiB attn.scores is retained by its view at the peak.
        let live = memtide::analysis::live_entries(trace, &index, peak.at, None);
        let scores = live
            .iter()
            .find(|e| e.name == "attn.scores")
            .expect("scores live");
        assert!(scores.retained_by_view, "{}: retained by view", r.file);
        assert_eq!(scores.bytes.0, 1 << 30);
        // Window peaks: each step window's peak lies inside it.
        let steps: Vec<_> = all_windows(trace, &index)
            .into_iter()
            .filter(|w| w.kind == WindowKind::Step)
            .collect();
        assert_eq!(steps.len(), 3);
        for w in &steps {
            let p = w.peak.expect("step peak");
            assert!(w.lo <= p.at && p.at <= w.hi);
        }
    }
}

#[test]
fn checkpointing_saves_what_the_readme_says() {
    let rows = readme_rows();
    let plain = rows
        .iter()
        .find(|r| r.file == "train-3steps.jsonl")
        .expect("plain");
    let ckpt = rows
        .iter()
        .find(|r| r.file == "train-checkpointed.jsonl")
        .expect("ckpt");
    assert_eq!(plain.peak - ckpt.peak, 1024 << 20);
}

#[test]
fn committed_samples_match_the_generator() {
    let dir = tempfile::tempdir().expect("tempdir");
    let status = std::process::Command::new(env!("CARGO"))
        .args(["run", "-q", "--example", "gen_samples", "--"])
        .arg(dir.path())
        .current_dir(root())
        .status()
        .expect("cargo run example");
    assert!(status.success());
    for f in [
        "train-3steps.jsonl",
        "train-leak.jsonl",
        "train-checkpointed.jsonl",
    ] {
        let a = std::fs::read(dir.path().join(f)).expect("generated");
        let b = std::fs::read(root().join("sample-traces").join(f)).expect("committed");
        assert!(a == b, "{f} differs from the generator's output: regenerate with `cargo run --example gen_samples -- sample-traces`");
    }
}
