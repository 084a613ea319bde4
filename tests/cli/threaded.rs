//! The threaded load and the single-thread load agree on every committed trace: the whole
//! opened structure (format, devices with their traces, indexes, allocator histories and
//! warnings, notes) or the same error, compared as its debug text. `Threads::Always` takes the second-thread paths (reading ahead, the
//! parse split) even on files too small for `Auto` to choose them.

use memtide_core::formats::{LoadOptions, Progress, Threads};
use memtide_core::open::{open, OpenOptions};
use std::path::{Path, PathBuf};

use crate::support::fixtures;

/// Every trace-like file under the repository's fixtures, data and samples.
fn traces() -> Vec<PathBuf> {
    fixtures::files(|p| {
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let trace_like = [".pickle", ".json", ".jsonl", ".gz"]
            .iter()
            .any(|x| name.ends_with(x));
        let not_a_trace = name.ends_with(".truth.json") || name == "meta.json";
        trace_like && !not_a_trace
    })
}

fn load_with(path: &Path, threads: Threads) -> String {
    let opts = LoadOptions {
        threads,
        ..LoadOptions::default()
    };
    // Everything opened but the timings.
    match open(path, &OpenOptions::from(opts), &Progress::new()) {
        Ok(o) => format!("{:?} {:?} {:?}", o.format, o.devices, o.notes),
        Err(e) => format!("error: {e:?}"),
    }
}

#[test]
fn threaded_and_single_thread_loads_agree_on_every_fixture() {
    let files = traces();
    assert!(files.len() >= 40, "fixtures found: {}", files.len());
    let mut loaded = 0;
    for f in &files {
        let one = load_with(f, Threads::One);
        let two = load_with(f, Threads::Always);
        assert!(
            one == two,
            "{}: the threaded load differs from the single-thread one",
            f.display()
        );
        loaded += usize::from(!one.starts_with("error: "));
    }
    // Most are traces that load (a few are category files or sidecars that are refused).
    assert!(
        loaded * 4 >= files.len() * 3,
        "{loaded} of {} loaded",
        files.len()
    );
}

#[test]
fn a_big_gzip_file_is_read_ahead_and_gives_the_same_trace() {
    // Over the 1 MiB from which `Auto` inflates on a second thread: a generated JSONL file,
    // gzipped with low compression so the compressed file stays big.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut raw = Vec::new();
    memtide_core::synth::jsonl(60_000, 7, &mut raw).expect("synth");
    let path = dir.path().join("big.jsonl.gz");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::none());
    std::io::Write::write_all(&mut gz, &raw).expect("gzip");
    let bytes = gz.finish().expect("gzip");
    assert!(bytes.len() > 1 << 20, "{} B compressed", bytes.len());
    std::fs::write(&path, bytes).expect("write");
    let auto = load_with(&path, Threads::Auto);
    assert!(!auto.starts_with("error: "), "{auto}");
    assert_eq!(auto, load_with(&path, Threads::One));
}

#[test]
fn the_explorer_s_devices_are_the_same_on_one_thread_and_two() {
    // The explorer's loader also replays each allocator model on a second thread while it
    // indexes: the devices (trace, index, model, OOM explanations) must not differ.
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut checked = 0;
    for f in traces()
        .iter()
        .filter(|f| f.extension().is_some_and(|x| x == "pickle"))
    {
        let devices = |threads| {
            let opts = memtide_core::open::OpenOptions {
                read: LoadOptions {
                    threads,
                    ..LoadOptions::default()
                },
                ..Default::default()
            };
            // The dearer facts are computed behind the first screen: asked for here, each
            // is the thread's answer once it is done.
            memtide::tui::runtime::workers::load(f, &opts, &Progress::new()).map(|d| {
                d.iter().for_each(|x| x.warm());
                format!("{d:?}")
            })
        };
        let one = devices(Threads::One);
        assert!(
            one == devices(Threads::Always),
            "{}: the explorer's devices differ",
            f.strip_prefix(root).unwrap_or(f).display()
        );
        checked += usize::from(one.is_ok_and(|d| d.contains("allocator: Some")));
    }
    assert!(checked >= 10, "{checked} snapshots with an allocator model");
}
