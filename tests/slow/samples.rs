//! The bundled sample traces give the peaks that `sample-traces/README.md` states (computed by
//! hand from the generators' schedules), and the committed files match their generators.

use memtide_core::analysis::{all_windows, global_peak, WindowKind};
use memtide_core::formats::Progress;
use memtide_core::open::{open, OpenOptions};
use memtide_core::trace::{Band, EventKind, MarkKind};
use std::path::Path;

use crate::support::repo::root;

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
        let file = open(&path, &OpenOptions::default(), &Progress::new()).expect("sample loads");
        let (trace, index) = (&file.devices[0].trace, &file.devices[0].index);
        let peak = global_peak(trace, index).expect("events");
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
            memtide_core::analysis::final_bytes(index).0,
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
            .filter(|c| c.at() == peak.at && c.open())
            .collect();
        assert_eq!(opened.len(), 1);
        assert_eq!(trace.name(opened[0].storage()), "grad_input temp");
        assert!(trace.top_frame(opened[0].storage()).contains("layers.3"));
        // The 1 GiB attn.scores is retained by its view at the peak.
        let live = memtide_core::analysis::live_entries(trace, index, peak.at, None);
        let scores = live
            .iter()
            .find(|e| e.name == "attn.scores")
            .expect("scores live");
        assert!(scores.retained_by_view, "{}: retained by view", r.file);
        // By a 64 MiB view (one head of sixteen, the README): the alarm, with its size.
        assert_eq!(
            scores.retained,
            Some(memtide_core::analysis::Retained::SmallView {
                views: 1,
                view_bytes: memtide_core::trace::Bytes(64 << 20),
                storage: memtide_core::trace::Bytes(1 << 30),
            }),
            "{}",
            r.file
        );
        assert_eq!(scores.bytes.0, 1 << 30);
        // Window peaks: each step window's peak lies inside it.
        let steps: Vec<_> = all_windows(trace, index)
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

/// A row of the README's table of PyTorch-format samples.
struct TorchRow {
    file: String,
    format: String,
    peak: u64,
    reserved: u64,
    final_bytes: u64,
    ooms: usize,
    step: String,
    capacity: Option<u64>,
}

fn readme_torch_rows() -> Vec<TorchRow> {
    let text = std::fs::read_to_string(root().join("sample-traces/README.md")).expect("README");
    text.lines()
        .filter(|l| l.starts_with("| cuda-oom"))
        .map(|l| {
            let c: Vec<&str> = l
                .split('|')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            let n = |i: usize| c[i].parse::<u64>().expect("number in README table");
            TorchRow {
                file: c[0].to_string(),
                format: c[1].to_string(),
                peak: n(2),
                reserved: n(3),
                final_bytes: n(4),
                ooms: c[5].parse().expect("OOM count"),
                step: c[6].to_string(),
                capacity: (c[7] != "unknown").then(|| n(7)),
            }
        })
        .collect()
}

#[test]
fn pytorch_samples_read_as_the_readme_states() {
    let rows = readme_torch_rows();
    assert_eq!(
        rows.len(),
        2,
        "a snapshot and a profiler trace in the README table"
    );
    for r in rows {
        let path = root().join("sample-traces").join(&r.file);
        let file = open(&path, &OpenOptions::default(), &Progress::new()).expect("sample loads");
        assert_eq!(file.format.name(), r.format, "{}: format", r.file);
        assert_eq!(file.devices.len(), 1, "{}: one device", r.file);
        let (trace, index) = (&file.devices[0].trace, &file.devices[0].index);
        assert_eq!(trace.device, "cuda:0");
        let peak = global_peak(trace, index).expect("events");
        assert_eq!(peak.bytes.0, r.peak, "{}: peak", r.file);
        let reserved = index.reserved_peak().expect("reserved recorded");
        assert_eq!(reserved.0 .0, r.reserved, "{}: reserved peak", r.file);
        assert_eq!(
            memtide_core::analysis::final_bytes(index).0,
            r.final_bytes,
            "{}: final",
            r.file
        );
        let ooms = trace
            .marks
            .iter()
            .filter(|m| m.kind == MarkKind::Oom)
            .count();
        assert_eq!(ooms, r.ooms, "{}: OOMs", r.file);
        let mark = trace.enclosing_mark(peak.at).expect("inside a step");
        assert_eq!(
            trace.mark_name(mark),
            r.step,
            "{}: step of the peak",
            r.file
        );
        assert_eq!(
            trace.capacity.map(|c| c.0),
            r.capacity,
            "{}: capacity",
            r.file
        );
        let steps = all_windows(trace, index)
            .into_iter()
            .filter(|w| w.kind == WindowKind::Step)
            .count();
        assert_eq!(steps, 3, "{}: three steps", r.file);
    }
    // Both files' inferred bands at the peak (README: persistent = weights, gradients and
    // Adam state; activation = the batch, two 3 GiB activations and the loss). The profiler
    // trace's survivors of step 2 (batch, activations, loss) stay activations: made under
    // forward frames or inside the step, whatever their lifetime.
    for f in ["cuda-oom.pickle", "cuda-oom.pt.trace.json.gz"] {
        let path = root().join("sample-traces").join(f);
        let file = open(&path, &OpenOptions::default(), &Progress::new()).expect("loads");
        let (trace, index) = (&file.devices[0].trace, &file.devices[0].index);
        let peak = global_peak(trace, index).expect("events");
        assert_eq!(peak.bands.get(Band::Persistent), 8_589_934_592, "{f}");
        assert_eq!(peak.bands.get(Band::Activation), 7_247_757_824, "{f}");
    }
}

/// The committed PyTorch-format samples are what `tools/gen_pytorch_samples.py` writes (the
/// trace compared decompressed: gzip bytes may differ between zlib builds).
#[test]
#[ignore = "needs python3: regenerates the PyTorch-format samples (CI runs it with --include-ignored)"]
fn pytorch_samples_match_their_generator() {
    use std::io::Read;
    let dir = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new("python3")
        .arg(root().join("tools/gen_pytorch_samples.py"))
        .arg(dir.path())
        .output()
        .expect("python3 runs (install Python 3 to run this test)");
    assert!(
        out.status.success(),
        "generator failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let gunzip = |p: &Path| {
        let mut v = Vec::new();
        flate2::read::GzDecoder::new(std::fs::File::open(p).expect("open"))
            .read_to_end(&mut v)
            .expect("gunzip");
        v
    };
    let committed = root().join("sample-traces");
    assert!(
        std::fs::read(dir.path().join("cuda-oom.pickle")).expect("generated")
            == std::fs::read(committed.join("cuda-oom.pickle")).expect("committed"),
        "cuda-oom.pickle differs from the generator's output: run tools/gen_pytorch_samples.py sample-traces"
    );
    let name = "cuda-oom.pt.trace.json.gz";
    assert!(
        gunzip(&dir.path().join(name)) == gunzip(&committed.join(name)),
        "{name} differs from the generator's output: run tools/gen_pytorch_samples.py sample-traces"
    );
}
