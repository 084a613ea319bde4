//! Unit tests of the gate on hand-built traces (memtide JSONL), every figure worked out by
//! hand from the lines of each trace.

#![allow(clippy::unwrap_used)]

use super::*;
use crate::formats::jsonl::{JsonlDecoder, JsonlOptions};
use crate::index::Index;
use crate::ranks::{Failed, RankRow, Ranks};
use crate::trace::{Bytes, Trace};

fn trace(lines: &str) -> crate::open::Device {
    let text = format!("{{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\"}}\n{lines}");
    let mut t = Trace::new("cuda:0", "test", "jsonl");
    let mut dec = JsonlDecoder::new(JsonlOptions::default());
    dec.feed(&mut t, text.as_bytes()).unwrap();
    dec.finish(&mut t).unwrap();
    let i = Index::build(&t);
    crate::open::Device::new(t, i)
}

/// 4096 B of weights, then 1024 B of activation freed: the peak is 5120 B after the second
/// line (event #1), with both live.
const SMALL: &str = r#"{"t":1,"op":"alloc","id":1,"size":4096,"cat":"param","name":"w"}
{"t":2,"op":"alloc","id":2,"size":1024,"cat":"activation","name":"a"}
{"t":3,"op":"free","id":2}
"#;

fn peak_limit(b: u64) -> Limits {
    Limits {
        max_peak: Some(Bytes(b)),
        ..Limits::default()
    }
}

#[test]
fn a_peak_at_the_limit_passes_and_one_byte_over_fails() {
    let d = trace(SMALL);
    let v = check_device(&d, &peak_limit(5120)).unwrap();
    assert_eq!(v.outcome, Outcome::Pass);
    assert_eq!(v.outcome.exit_code(), 0);
    let p = v.peak.unwrap();
    assert_eq!((p.peak, p.limit, p.passed), (5120, 5120, true));
    assert_eq!(p.evidence.event, Some(1));
    assert!(!p.evidence.at_start);

    let v = check_device(&d, &peak_limit(5119)).unwrap();
    assert_eq!(v.outcome, Outcome::Fail);
    assert_eq!(v.outcome.exit_code(), 1);
    let p = v.peak.unwrap();
    assert!(!p.passed);
    let live = p.biggest_live.unwrap();
    let got: Vec<(u64, &str, &str)> = live
        .iter()
        .map(|l| (l.bytes, l.band, l.label.as_str()))
        .collect();
    assert_eq!(got, [(4096, "persistent", "w"), (1024, "activation", "a")]);
    assert!(v.oom.is_none() && v.growth.is_none());
}

/// Three 1000 B activations named `x` are one owner of 3000 B (3 storages), bigger than the
/// 2500 B weight `w` and the 100 B activation `y`: a failure names the owners, not the
/// storages one by one (it named `w`, then `x` twice).
#[test]
fn a_failure_names_the_biggest_owners_of_live_memory() {
    let d = trace(
        r#"{"t":1,"op":"alloc","id":1,"size":2500,"cat":"param","name":"w"}
{"t":2,"op":"alloc","id":2,"size":1000,"cat":"activation","name":"x"}
{"t":3,"op":"alloc","id":3,"size":1000,"cat":"activation","name":"x"}
{"t":4,"op":"alloc","id":4,"size":1000,"cat":"activation","name":"x"}
{"t":5,"op":"alloc","id":5,"size":100,"cat":"activation","name":"y"}
"#,
    );
    let v = check_device(&d, &peak_limit(1)).unwrap();
    let live = v.peak.unwrap().biggest_live.unwrap();
    let got: Vec<(u64, u64, &str)> = live
        .iter()
        .map(|l| (l.bytes, l.count, l.label.as_str()))
        .collect();
    assert_eq!(got, [(3000, 3, "x"), (2500, 1, "w"), (100, 1, "y")]);
}

/// Step 0 (warm-up) keeps 1000 B; steps 1 and 2 each leak 100 B named `leak`. Boundaries
/// after warm-up: 1000 (step 1 starts), 1100 (step 2), 1200 (the end): growth 200 / 1000.
const LEAK: &str = r#"{"t":1,"op":"mark","name":"step 0","kind":"step"}
{"t":2,"op":"alloc","id":1,"size":1000,"cat":"param","name":"w"}
{"t":3,"op":"mark","name":"step 1","kind":"step"}
{"t":4,"op":"alloc","id":2,"size":100,"cat":"activation","name":"leak"}
{"t":5,"op":"mark","name":"step 2","kind":"step"}
{"t":6,"op":"alloc","id":3,"size":100,"cat":"activation","name":"leak"}
"#;

#[test]
fn growth_over_the_limit_fails_with_the_survivors() {
    let d = trace(LEAK);
    let limits = Limits {
        max_growth: Some(0.01),
        ..Limits::default()
    };
    let v = check_device(&d, &limits).unwrap();
    assert_eq!(v.outcome, Outcome::Fail);
    let g = v.growth.unwrap();
    assert!((g.growth - 0.2).abs() < 1e-12, "{}", g.growth);
    assert_eq!(g.growth_bytes, 200);
    assert!(!g.passed);
    let s: Vec<(usize, &str, u64)> = g
        .survivors
        .iter()
        .map(|s| (s.count, s.name.as_str(), s.bytes))
        .collect();
    assert_eq!(s, [(2, "leak", 200)]);
    assert!(v.peak.is_none(), "no --max-peak: no peak gate");

    let limits = Limits {
        max_growth: Some(0.25),
        ..Limits::default()
    };
    let v = check_device(&d, &limits).unwrap();
    assert_eq!(v.outcome, Outcome::Pass);
    assert!(v.growth.unwrap().passed);
}

#[test]
fn growth_without_steps_cannot_be_gated() {
    let d = trace(SMALL);
    let limits = Limits {
        max_growth: Some(0.01),
        ..Limits::default()
    };
    assert_eq!(
        check_device(&d, &limits),
        Err(GateError::NoSteps { marks: 0 })
    );
}

/// A 1 GiB request the driver could not serve (50 MiB free) after 4096 B were allocated.
const OOM: &str = r#"{"t":1,"op":"mark","name":"step 0","kind":"step"}
{"t":2,"op":"alloc","id":1,"size":4096,"cat":"param","name":"w"}
{"t":3,"op":"mark","name":"step 1","kind":"step"}
{"t":4,"op":"mark","name":"step 2","kind":"step"}
{"t":5,"op":"oom","size":1073741824,"free":52428800}
"#;

#[test]
fn an_oom_fails_the_peak_gate_and_is_only_a_note_under_the_growth_gate() {
    let d = trace(OOM);
    let v = check_device(&d, &peak_limit(1 << 40)).unwrap();
    assert_eq!(v.outcome, Outcome::Fail, "an OOM fails --max-peak");
    let o = v.oom.unwrap();
    assert!(o.gated);
    assert_eq!(o.evidence.requested, Some(1 << 30));
    assert_eq!(o.evidence.device_free, Some(52_428_800));
    assert_eq!(o.evidence.more, 0);
    assert!(v.peak.unwrap().passed, "4096 B is under 1 TiB");

    // Growth: boundaries 4096 (step 1), 4096 (step 2); the OOM inside step 2 leaves no
    // boundary at the end: growth 0.
    let limits = Limits {
        max_growth: Some(0.01),
        ..Limits::default()
    };
    let v = check_device(&d, &limits).unwrap();
    assert_eq!(v.outcome, Outcome::Pass);
    assert!(!v.oom.unwrap().gated);
    assert_eq!(v.growth.unwrap().growth, 0.0);
}

#[test]
fn doubtful_figures_stop_the_gate_unless_allowed() {
    let mut d = trace(SMALL);
    d.trace.warn_doubtful("trace is truncated");
    assert_eq!(
        check_device(&d, &peak_limit(1 << 30)),
        Err(GateError::Doubtful {
            device: "cuda:0".into(),
            reasons: vec!["trace is truncated".into()]
        })
    );
    let limits = Limits {
        allow_warnings: true,
        ..peak_limit(1 << 30)
    };
    let v = check_device(&d, &limits).unwrap();
    assert_eq!(v.outcome, Outcome::Pass);
    assert_eq!(v.allowed_warnings, ["trace is truncated"]);
}

#[test]
fn a_trace_holding_nothing_cannot_be_gated() {
    let d = trace("{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":0}\n");
    let e = check_device(&d, &peak_limit(1)).unwrap_err();
    assert!(
        matches!(e, GateError::NothingToGate { events: 1, .. }),
        "{e:?}"
    );
    assert!(e.about_file());
}

#[test]
fn the_window_measures_the_peak_inside_it() {
    // Step 1 holds 1000 + 100 = 1100 B at its highest; the whole trace ends at 1200 B.
    let d = trace(LEAK);
    let limits = Limits {
        window: Some("step:1".into()),
        ..peak_limit(1100)
    };
    let v = check_device(&d, &limits).unwrap();
    let p = v.peak.unwrap();
    assert_eq!((p.peak, p.passed), (1100, true));
    assert_eq!(p.window.unwrap().spec, "step:1");
    let v = check_device(&d, &peak_limit(1100)).unwrap();
    assert_eq!(v.peak.unwrap().peak, 1200);
    assert_eq!(v.outcome, Outcome::Fail);

    let limits = Limits {
        window: Some("bogus".into()),
        ..peak_limit(1)
    };
    let e = check_device(&d, &limits).unwrap_err();
    assert!(
        matches!(e, GateError::Window(_)) && !e.about_file(),
        "{e:?}"
    );
}

fn row(rank: u64, peak: Option<u64>, growth: Option<f64>, doubtful: bool) -> RankRow {
    RankRow {
        rank,
        order: rank as usize,
        file: format!("rank{rank}.pickle").into(),
        peak,
        growth,
        doubtful: if doubtful {
            vec!["truncated".into()]
        } else {
            vec![]
        },
        ..RankRow::default()
    }
}

#[test]
fn a_job_fails_on_the_rank_over_and_on_the_spread() {
    let r = Ranks {
        rows: vec![
            row(0, Some(100), Some(0.0), false),
            row(1, Some(300), Some(0.5), false),
            row(2, None, None, false),
            row(3, Some(1000), None, true),
        ],
        ..Ranks::default()
    };
    let limits = JobLimits {
        max_peak: Some(Bytes(200)),
        max_imbalance: Some(0.1),
        max_growth: Some(0.1),
        allow_warnings: false,
    };
    let v = check_job(&r, &limits).unwrap();
    assert_eq!(v.outcome, Outcome::Fail);
    assert_eq!((v.ranks, v.ranks_checked), (4, 3));
    let p = v.peak.unwrap();
    assert_eq!(
        p.over
            .iter()
            .map(|x| (x.rank.rank, x.peak))
            .collect::<Vec<_>>(),
        [(1, 300)]
    );
    // Rank 3's 1000 B is doubted, so not the highest.
    assert_eq!(p.highest.map(|h| h.peak), Some(300));
    // 300 / 100 = 3: an imbalance of 2 (200%).
    let i = v.imbalance.unwrap();
    assert_eq!(
        (i.ratio, i.imbalance, i.passed),
        (Some(3.0), Some(2.0), false)
    );
    let g = v.growth.unwrap();
    assert_eq!((g.checked, g.over.len(), g.over[0].rank.rank), (2, 1, 1));
    let ranks = |v: &[RankRef]| v.iter().map(|x| x.rank).collect::<Vec<_>>();
    match v.unchecked.as_slice() {
        [Unchecked::NoPeak { ranks: a }, Unchecked::NoSteps { count: 1 }, Unchecked::Doubted { ranks: b }] =>
        {
            assert_eq!((ranks(a), ranks(b)), (vec![2], vec![3]));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_job_that_passes_with_an_unreadable_file_is_incomplete() {
    let r = Ranks {
        rows: vec![
            row(0, Some(100), None, false),
            row(1, Some(105), None, false),
        ],
        errors: vec![Failed {
            path: "runs/rank2.pickle".into(),
            error: "bad magic".into(),
        }],
        ..Ranks::default()
    };
    let limits = JobLimits {
        max_peak: Some(Bytes(200)),
        max_imbalance: Some(0.1),
        ..JobLimits::default()
    };
    let v = check_job(&r, &limits).unwrap();
    assert_eq!(v.outcome, Outcome::Incomplete);
    assert_eq!(v.outcome.exit_code(), 2);
    // 105 / 100 − 1 = 5%, within 10%.
    let i = v.imbalance.unwrap();
    assert!(i.passed && (i.imbalance.unwrap() - 0.05).abs() < 1e-12);
    assert_eq!(
        v.unchecked[0].to_string(),
        "1 unreadable file not checked: rank2.pickle: bad magic"
    );

    let clean = Ranks {
        errors: vec![],
        ..r
    };
    assert_eq!(check_job(&clean, &limits).unwrap().outcome, Outcome::Pass);
}

#[test]
fn a_job_with_no_peak_cannot_be_gated() {
    let r = Ranks {
        rows: vec![row(0, None, None, false)],
        ..Ranks::default()
    };
    let limits = JobLimits {
        max_peak: Some(Bytes(1)),
        ..JobLimits::default()
    };
    let e = check_job(&r, &limits).unwrap_err();
    assert_eq!(
        e.to_string(),
        "--max-peak checked nothing: no rank has a peak (rank 0 (rank0.pickle))"
    );
    let limits = JobLimits {
        max_imbalance: Some(0.1),
        ..JobLimits::default()
    };
    assert_eq!(check_job(&r, &limits), Err(GateError::NoRankPeaks));
}

/// A device named `name` whose trace holds `lines`.
fn device(name: &str, lines: &str) -> crate::open::Device {
    let text = format!("{{\"memtide\":1,\"device\":\"{name}\",\"clock\":\"us\"}}\n{lines}");
    let mut t = Trace::new(name, "test", "jsonl");
    let mut dec = JsonlDecoder::new(JsonlOptions::default());
    dec.feed(&mut t, text.as_bytes()).unwrap();
    dec.finish(&mut t).unwrap();
    let i = Index::build(&t);
    crate::open::Device::new(t, i)
}

/// 3 MiB on cuda:0, 300 GiB on cuda:1: the first device alone passes 1 GiB.
fn two_devices() -> Vec<crate::open::Device> {
    vec![
        device(
            "cuda:0",
            r#"{"t":1,"op":"alloc","id":1,"size":3145728,"cat":"activation"}
"#,
        ),
        device(
            "cuda:1",
            r#"{"t":1,"op":"alloc","id":1,"size":322122547200,"cat":"activation"}
"#,
        ),
    ]
}

#[test]
fn every_device_with_events_is_gated_and_the_one_over_fails_the_file() {
    let devs = two_devices();
    let lim = peak_limit(1 << 30);
    let FileVerdict::Several(v) = check_file(&devs, &lim).unwrap() else {
        panic!("two devices with events are gated as several");
    };
    assert_eq!(v.outcome, Outcome::Fail);
    let got: Vec<(&str, Outcome, u64)> = v
        .devices
        .iter()
        .map(|d| (d.device.as_str(), d.outcome, d.peak.as_ref().unwrap().peak))
        .collect();
    assert_eq!(
        got,
        [
            ("cuda:0", Outcome::Pass, 3 << 20),
            ("cuda:1", Outcome::Fail, 300 << 30)
        ]
    );
    assert!(v.unchecked.is_empty() && v.skipped.is_empty());
    // Narrowed to the first device, the file passes (what `--device 0` asks for).
    let one = check_file(&devs[..1], &lim).unwrap();
    assert!(matches!(&one, FileVerdict::One(v) if v.device == "cuda:0"));
    assert_eq!(one.outcome(), Outcome::Pass);
}

#[test]
fn a_device_that_cannot_be_gated_keeps_the_file_from_passing() {
    let mut devs = two_devices();
    devs[1].trace.warn_doubtful("trace is truncated");
    let v = check_file(&devs, &peak_limit(1 << 50)).unwrap();
    let FileVerdict::Several(v) = v else {
        panic!("several");
    };
    assert_eq!(v.outcome, Outcome::Incomplete);
    assert_eq!(v.outcome.exit_code(), 2);
    assert_eq!(v.devices.len(), 1);
    assert_eq!(v.unchecked.len(), 1);
    assert_eq!(v.unchecked[0].device, "cuda:1");
    assert!(v.unchecked[0].error.contains("trace is truncated"));
    // A failure elsewhere is still a failure.
    let v = check_file(&devs, &peak_limit(1 << 20)).unwrap();
    assert_eq!(v.outcome(), Outcome::Fail);
    // Allowed, both are gated.
    let lim = Limits {
        allow_warnings: true,
        ..peak_limit(1 << 50)
    };
    assert_eq!(check_file(&devs, &lim).unwrap().outcome(), Outcome::Pass);
    // When no device can be gated, the first reason is the error.
    devs[0].trace.warn_doubtful("trace is truncated");
    let e = check_file(&devs, &peak_limit(1 << 50)).unwrap_err();
    assert!(matches!(e, GateError::Doubtful { ref device, .. } if device == "cuda:0"));
}

#[test]
fn devices_without_events_or_memory_are_skipped_not_gated() {
    let mut devs = two_devices();
    devs.push(device("cuda:2", ""));
    devs.push(device(
        "cpu",
        r#"{"t":1,"op":"alloc","id":1,"size":0,"cat":"activation"}
"#,
    ));
    let FileVerdict::Several(v) = check_file(&devs, &peak_limit(1 << 50)).unwrap() else {
        panic!("several");
    };
    assert_eq!(v.outcome, Outcome::Pass);
    let skipped: Vec<(&str, SkipReason)> = v
        .skipped
        .iter()
        .map(|s| (s.device.as_str(), s.reason))
        .collect();
    assert_eq!(
        skipped,
        [
            ("cuda:2", SkipReason::NoEvents),
            ("cpu", SkipReason::HoldsNoMemory)
        ]
    );
    // A file whose only device with events holds nothing is refused, as before.
    assert!(matches!(
        check_file(&devs[2..], &peak_limit(1)),
        Err(GateError::NothingToGate { .. })
    ));
    assert_eq!(
        check_file(&devs[2..3], &peak_limit(1)),
        Err(GateError::NoEvents)
    );
}

#[test]
fn a_rank_file_of_several_devices_is_gated_on_each() {
    let mut r0 = row(0, Some(3 << 20), None, false);
    r0.devices = vec![
        crate::ranks::DeviceFigures {
            device: "cuda:0".into(),
            peak: Some(3 << 20),
            ..Default::default()
        },
        crate::ranks::DeviceFigures {
            device: "cuda:1".into(),
            peak: Some(300 << 30),
            ooms: 2,
            growth: Some(0.5),
            ..Default::default()
        },
    ];
    let r = Ranks {
        rows: vec![r0.clone(), row(1, Some(1 << 20), Some(0.0), false)],
        ..Ranks::default()
    };
    let limits = JobLimits {
        max_peak: Some(Bytes(1 << 30)),
        max_growth: Some(0.1),
        ..JobLimits::default()
    };
    let v = check_job(&r, &limits).unwrap();
    assert_eq!(v.outcome, Outcome::Fail);
    let p = v.peak.unwrap();
    assert_eq!(p.over.len(), 1);
    assert_eq!(
        (
            p.over[0].rank.rank,
            p.over[0].peak,
            p.over[0].device.as_deref()
        ),
        (0, 300 << 30, Some("cuda:1"))
    );
    assert_eq!(v.oom.unwrap().ranks[0].ooms, 2);
    let g = v.growth.unwrap();
    assert_eq!(g.over.len(), 1);
    assert_eq!(g.over[0].device.as_deref(), Some("cuda:1"));
    // A doubt on any device of the rank's file holds the rank back.
    r0.devices[1].doubtful = vec!["trace is truncated".into()];
    let r = Ranks {
        rows: vec![r0, row(1, Some(1 << 20), None, false)],
        ..Ranks::default()
    };
    let v = check_job(&r, &peak_limit_job(1 << 40)).unwrap();
    assert_eq!(v.outcome, Outcome::Incomplete);
    assert_eq!(v.ranks_checked, 1);
}

fn peak_limit_job(b: u64) -> JobLimits {
    JobLimits {
        max_peak: Some(Bytes(b)),
        ..JobLimits::default()
    }
}
