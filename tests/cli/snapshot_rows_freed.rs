//! The replay frees a snapshot's rows block by block as its passes go past them
//! (`formats/snapshot/rows.rs`): on every committed snapshot, with blocks of 2 rows (so a
//! block is freed after nearly every entry) and of 4,096, the traces and allocator histories
//! are those of the replay that frees nothing (`snapshot::build` and `snapshot::histories`
//! on rows that stay), compared as debug text, with the models' facts too. Every block is
//! freed at the end unless a row list is out of row order.

use memtide_core::formats::snapshot::{self, Raw};
use memtide_core::formats::{
    detect, open_input, Format, Histories, LoadOptions, Progress, Threads,
};
use std::path::{Path, PathBuf};

use crate::support::fixtures;

/// A history as the file records it, without the states a headless load replays ahead to
/// its OOMs (checked against a replay from the start by the core's own tests).
fn recorded(h: &memtide_core::allocator::History) -> String {
    let h = memtide_core::allocator::History {
        at_ooms: Default::default(),
        ..h.clone()
    };
    format!("{h:?}")
}

fn snapshots() -> Vec<PathBuf> {
    fixtures::files(|p| snapshot_format(p).is_some())
}

fn snapshot_format(p: &Path) -> Option<Format> {
    let input = open_input(p, &Progress::new()).ok()?;
    match detect(&input.head)? {
        f @ (Format::SnapshotPickle | Format::SnapshotJson) => Some(f),
        _ => None,
    }
}

fn decode(p: &Path, threads: Threads) -> Option<Raw> {
    let format = snapshot_format(p)?;
    let input = open_input(p, &Progress::new()).ok()?;
    snapshot::decode(input, format, false, threads, &Progress::new()).ok()
}

/// Whether every row list is in row order (else the plan keeps every row).
fn ordered(raw: &Raw) -> bool {
    raw.devices
        .iter()
        .chain(std::iter::once(&raw.host_rows))
        .all(|l| l.windows(2).all(|w| w[0] <= w[1]))
}

#[test]
fn freeing_rows_as_they_are_replayed_changes_nothing() {
    let files = snapshots();
    assert!(files.len() >= 20, "only {} snapshots found", files.len());
    let mut freed_files = 0;
    for p in &files {
        for threads in [Threads::One, Threads::Always] {
            let Some(kept) = decode(p, threads) else {
                continue;
            };
            let traces = snapshot::build(&kept, "f");
            let histories: Vec<String> = snapshot::histories(&kept, &traces)
                .iter()
                .map(recorded)
                .collect();
            let expected = format!("{traces:?}\n{histories:?}");
            for bits in [1, 12] {
                let mut raw = decode(p, threads).expect("decodes twice");
                raw.rows.rechunk(bits);
                let opts = LoadOptions {
                    threads,
                    allocator_models: false,
                    ..LoadOptions::default()
                };
                let s = snapshot::replay(&mut raw, "f", &opts);
                let histories: Vec<String> = s.histories.iter().map(recorded).collect();
                let got = format!("{:?}\n{histories:?}", s.traces);
                assert!(
                    got == expected,
                    "{} ({threads:?}, blocks of 2^{bits} rows): the replay that frees rows differs",
                    p.display()
                );
                if ordered(&raw) {
                    assert_eq!(raw.rows.blocks_held(), 0, "{}: rows left", p.display());
                    freed_files += usize::from(raw.rows.len() > 2);
                }
            }
        }
    }
    assert!(freed_files >= 20, "rows were freed in {freed_files} runs");
}

/// The models of histories read beside the freeing replay (the path the explorer takes),
/// held until started, describe the same allocator as models built from histories of rows
/// that stay: replayed on their own thread once started, or by the first ask when never
/// started.
#[test]
fn models_beside_the_freeing_replay_are_unchanged() {
    for p in snapshots() {
        let Some(kept) = decode(&p, Threads::Always) else {
            continue;
        };
        let traces = snapshot::build(&kept, "f");
        let histories = snapshot::histories(&kept, &traces);
        let expected = format!(
            "{:?}",
            memtide_core::allocator::Models::build(histories, false).wait()
        );
        for start in [true, false] {
            let mut raw = decode(&p, Threads::Always).expect("decodes again");
            raw.rows.rechunk(1);
            let opts = LoadOptions {
                threads: Threads::Always,
                allocator_models: true,
                ..LoadOptions::default()
            };
            let mut models = snapshot::replay(&mut raw, "f", &opts).models;
            // Held: the replay has not started (it waits for the caller's indexes).
            assert_eq!(format!("{models:?}"), "Models(held)", "{}", p.display());
            assert!(models.building());
            if start {
                models.start();
                assert_ne!(format!("{models:?}"), "Models(held)", "{}", p.display());
            }
            assert_eq!(
                format!("{:?}", models.wait()),
                expected,
                "{} (started: {start})",
                p.display()
            );
        }
    }
}

/// `Histories::ForOoms` (the headless commands) keeps a history's entries only when the
/// file records an OOM: the same traces, the same final segments, and either the same
/// entries or none; the rows are freed all the same.
#[test]
fn histories_for_ooms_keep_entries_only_with_an_oom() {
    let mut with_oom = 0;
    for p in snapshots() {
        let Some(mut whole) = decode(&p, Threads::One) else {
            continue;
        };
        let any_oom = whole.any_oom;
        let opts = |histories| LoadOptions {
            threads: Threads::One,
            histories,
            ..LoadOptions::default()
        };
        let a = snapshot::replay(&mut whole, "f", &opts(Histories::Whole));
        let mut raw = decode(&p, Threads::One).expect("decodes twice");
        let b = snapshot::replay(&mut raw, "f", &opts(Histories::ForOoms));
        assert_eq!(
            format!("{:?}", a.traces),
            format!("{:?}", b.traces),
            "{}",
            p.display()
        );
        assert_eq!(a.histories.len(), b.histories.len());
        for (ha, hb) in a.histories.iter().zip(&b.histories) {
            assert_eq!(ha.device, hb.device);
            assert_eq!(ha.segments, hb.segments, "{}", p.display());
            if any_oom {
                assert_eq!(format!("{ha:?}"), format!("{hb:?}"), "{}", p.display());
            } else {
                assert!(hb.entries.is_empty(), "{}", p.display());
            }
        }
        with_oom += usize::from(any_oom);
        if ordered(&raw) {
            assert_eq!(raw.rows.blocks_held(), 0, "{}: rows left", p.display());
        }
    }
    assert!(with_oom >= 4, "{with_oom} files with an OOM");
}

/// The door leaves the allocator models replaying when it hands the devices over (the
/// explorer's first screen does not wait for them): on every committed snapshot, each
/// device says it has a model exactly when the headless open kept its history, and the
/// model it gives on the first ask (waiting for the thread) replays that same history.
#[test]
fn models_left_replaying_go_to_the_devices_of_their_histories() {
    use memtide_core::open::{open, OpenOptions};
    let mut with_models = 0;
    for p in snapshots() {
        let opts = |models: bool| {
            let mut o = OpenOptions::default();
            o.read.threads = Threads::Always;
            o.read.allocator_models = models;
            o.read.histories = Histories::Whole;
            o
        };
        let Ok(headless) = open(&p, &opts(false), &Progress::new()) else {
            continue;
        };
        let explorer = open(&p, &opts(true), &Progress::new()).expect("opens twice");
        assert_eq!(headless.devices.len(), explorer.devices.len());
        for (h, e) in headless.devices.iter().zip(&explorer.devices) {
            let want = h.history().map(recorded);
            assert_eq!(e.has_allocator(), want.is_some(), "{}", p.display());
            let got = e.allocator().map(|m| recorded(m.history()));
            assert_eq!(got, want, "{} {}", p.display(), e.name());
            with_models += usize::from(got.is_some());
        }
    }
    assert!(with_models >= 10, "only {with_models} devices with a model");
}
