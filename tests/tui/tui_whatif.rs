//! The explorer's what-if overlay (`w`, issue 20): the key asks for a simulation on a worker
//! (an effect, "simulating…"), the worker's reply installs the simulated reserved line, `w`
//! hides and shows it; its figures are the core whatif run's, computed apart; a simulated
//! OOM is marked and said; a trace without an allocator is labelled an estimate; the screen
//! with the overlay (insta) and the help lists `w`.

#![allow(clippy::unwrap_used)]

use memtide::tui::app::App;
use memtide::tui::effect::Effect;
use memtide::tui::explorer::whatif::{self, Whatif};
use memtide::tui::msg::Msg;
use memtide::tui::testing::{keys, Harness};
use memtide::tui::theme::Theme;
use memtide::tui::update::update;
use memtide_core::allocator::sim::{whatif as core_whatif, AllocConf};
use memtide_core::trace::{Bytes, MarkKind};
use std::path::Path;

const MIB: u64 = 1 << 20;

use crate::support::repo::sample;

fn expandable() -> AllocConf {
    AllocConf::parse("expandable_segments:True").unwrap()
}

/// The explorer on `path` at 100×30, with `--alloc-conf` and `--capacity` as given.
fn open(path: &Path, conf: Option<AllocConf>, capacity: Option<u64>) -> Harness {
    let mut app = App::new(
        path.to_path_buf(),
        Default::default(),
        Theme::default(),
        false,
    );
    let ex = app.explorer_mut().unwrap();
    ex.whatif_conf = conf;
    ex.opts.capacity = capacity.map(Bytes);
    Harness::with_app(app, 100, 30)
}

/// Presses `w` without running its effects: what the reducer asked for.
fn press_w(h: &mut Harness) -> Vec<Effect> {
    let k = keys("w").pop().unwrap();
    update(&mut h.app, Msg::Key(k))
}

fn overlay(h: &Harness) -> Option<&whatif::Overlay> {
    let ex = h.explorer();
    whatif::shown(ex, ex.device()?)
}

#[test]
fn w_asks_a_worker_then_the_reply_draws_the_overlay_and_w_hides_it() {
    let f = sample("cuda-oom.pickle");
    let mut h = open(&f, Some(expandable()), None);
    assert!(h.explorer().whatif.is_none());
    assert!(h.explorer().view.whatif.is_empty());

    // w: one effect, the simulation of the shown device under --alloc-conf; "simulating…".
    let fx = press_w(&mut h);
    let [Effect::Whatif { gen, device, conf }] = &fx[..] else {
        panic!("w should ask for the simulation, got {fx:?}");
    };
    assert_eq!(conf.as_ref(), Some(&expandable()));
    assert!(std::sync::Arc::ptr_eq(
        device,
        h.explorer().device().unwrap()
    ));
    assert!(matches!(h.explorer().whatif, Some(Whatif::Pending { gen: g, .. }) if g == *gen));
    assert_eq!(h.app.shared.status.as_deref(), Some("simulating…"));
    assert!(overlay(&h).is_none(), "nothing drawn before the reply");
    assert!(h.screen().contains("simulating…"));

    // The worker's computation (run here, off the reducer).
    let result = whatif::simulate(device, conf.as_ref()).map(Box::new);
    let (gen, device) = (*gen, device.clone());
    // A reply of another generation is stale: dropped.
    let stale = whatif::simulate(&device, None).map(Box::new);
    h.send(Msg::WhatifDone {
        gen: gen + 100,
        result: stale,
    });
    assert!(matches!(h.explorer().whatif, Some(Whatif::Pending { .. })));
    h.send(Msg::WhatifDone { gen, result });

    // The overlay: the core whatif run's figures for the same settings, computed apart.
    let l = memtide_core::open::open(
        &f,
        &Default::default(),
        &memtide_core::formats::Progress::new(),
    )
    .unwrap();
    // Replayed under the ceiling the allocator really had (issue 42): reserved + driver free
    // at the file's OOM, 15,362 + 510 = 15,872 MiB (the sample's README).
    let w = core_whatif(
        &l.devices[0].trace,
        l.devices[0].history(),
        &[expandable()],
        Some(15872 * MIB),
    )
    .unwrap();
    let o = overlay(&h).expect("the reply sets the overlay");
    assert_eq!(o.peak, w.runs[1].reserved_peak);
    let oom = w.runs[1]
        .oom
        .as_ref()
        .expect("live tensors: expandable segments do not save the run");
    assert_eq!(o.series.len() as u64, oom.index + 1, "one value per event");
    assert_eq!(o.series.iter().max().copied(), Some(o.peak));
    assert!(!o.estimate);
    assert_eq!(o.label, "whatif reserved (expandable_segments:True)");
    assert_eq!(o.oom.as_ref().map(|x| x.at.0), Some(oom.index));
    assert_eq!(
        o.ceiling.as_deref(),
        Some("15.50 GiB ceiling (reserved + driver free at the file's OOM)")
    );
    let v = &h.explorer().view;
    assert_eq!(v.whatif.len(), v.columns.len());
    assert!(v.whatif.iter().all(|x| x.is_some()), "every column drawn");
    // Peak-preserving: the highest column is the simulated peak, on the scale.
    assert_eq!(v.whatif.iter().flatten().max().copied(), Some(o.peak));
    assert!(v.ymax >= o.peak);
    let status = h.app.shared.status.clone().unwrap();
    assert!(status.contains("expandable_segments:True"), "{status}");

    // w again hides it (no rerun); once more shows it again from the cache.
    assert!(press_w(&mut h).is_empty());
    assert!(overlay(&h).is_none());
    assert!(h.explorer().view.whatif.is_empty());
    assert!(!h.screen().contains("whatif reserved"));
    assert!(press_w(&mut h).is_empty(), "shown again without a rerun");
    assert!(overlay(&h).is_some());
    // The legend (shortened beside the OOM mark) names the settings.
    assert!(h
        .screen()
        .contains("┄ whatif (expandable_segments:True) · peak 14.8Gi · ✖ OOM at #80"));
}

#[test]
fn w_while_simulating_cancels_and_the_late_reply_is_dropped() {
    let mut h = open(&sample("cuda-oom.pickle"), None, None);
    let fx = press_w(&mut h);
    let [Effect::Whatif { gen, device, conf }] = &fx[..] else {
        panic!("{fx:?}");
    };
    assert!(conf.is_none(), "no --alloc-conf: the file's own settings");
    let result = whatif::simulate(device, None).map(Box::new);
    let gen = *gen;
    assert!(press_w(&mut h).is_empty());
    assert!(h.explorer().whatif.is_none());
    h.send(Msg::WhatifDone { gen, result });
    assert!(
        h.explorer().whatif.is_none(),
        "a cancelled run draws nothing"
    );
}

#[test]
fn a_simulated_oom_is_marked_and_said() {
    // The sample's README: a 16 GiB card with 512 MiB outside the allocator; under its own
    // settings the model runs out of memory at the file's own OOM (the 1 GiB temp).
    let f = sample("cuda-oom.pickle");
    let mut h = open(&f, None, Some(15872 * MIB));
    h.press("w");
    let dev = h.explorer().device().unwrap().clone();
    let oom_at = dev
        .trace
        .marks
        .iter()
        .find(|m| m.kind == MarkKind::Oom)
        .map(|m| m.at)
        .unwrap();
    let o = overlay(&h).unwrap();
    let x = o
        .oom
        .as_ref()
        .expect("the simulated run runs out of memory");
    assert_eq!(x.at, oom_at);
    assert_eq!(o.series.len() as u64, oom_at.0 + 1, "nothing after the OOM");
    assert!(o.label.contains("file's settings"), "{}", o.label);
    let status = h.app.shared.status.clone().unwrap();
    let n = dev.trace.event_number(oom_at);
    // The whatif report's OOM for the same device, computed apart.
    let l = memtide_core::open::open(
        &f,
        &Default::default(),
        &memtide_core::formats::Progress::new(),
    )
    .unwrap();
    let w = core_whatif(
        &l.devices[0].trace,
        l.devices[0].history(),
        &[],
        Some(15872 * MIB),
    )
    .unwrap();
    let wo = w.runs[0].oom.as_ref().unwrap();
    assert_eq!(wo.index, oom_at.0);
    assert!(
        status.starts_with(&format!("whatif: OOM at #{n} ({})", wo.verdict.name())),
        "{status}"
    );
    assert_eq!(
        h.explorer().view.whatif_oom_col,
        h.explorer().view.col_of(oom_at)
    );
    assert!(h.screen().contains(&format!("✖ OOM at #{n}")));
}

#[test]
fn a_trace_without_an_allocator_gets_an_estimate() {
    let mut h = open(&sample("train-3steps.jsonl"), None, None);
    h.press("w");
    let o = overlay(&h).expect("JSONL allocations are replayed too");
    assert!(o.estimate);
    assert_eq!(o.label, "whatif reserved, estimate (PyTorch defaults)");
    // Reserved is never below what is allocated: the line is at or above the live bytes.
    let dev = h.explorer().device().unwrap().clone();
    let peak = dev.peak.unwrap();
    assert!(o.peak >= peak.bytes.0, "{} < {}", o.peak, peak.bytes.0);
    assert!(h.screen().contains("whatif reserved, estimate"));
}

#[test]
fn overlay_screen_100x30() {
    let mut h = open(&sample("cuda-oom.pickle"), Some(expandable()), None);
    h.press("w");
    assert!(overlay(&h).is_some());
    let s = h.screen();
    // The simulated line is drawn (its own glyph) beside the recorded outline.
    assert!(s.contains('┄'), "{s}");
    insta::assert_snapshot!("overlay_100x30", h.terminal().backend());
}

#[test]
fn the_help_lists_w() {
    let mut h = open(&sample("cuda-oom.pickle"), None, None);
    h.send(Msg::Resize {
        width: 120,
        height: 60,
    });
    h.press("?");
    let s = h.screen();
    assert!(
        s.lines()
            .any(|l| l.contains("│w ") && l.contains("whatif overlay (--alloc-conf) on / off")),
        "{s}"
    );
}

#[test]
fn bad_alloc_conf_exits_2_before_the_terminal_opens() {
    let f = sample("cuda-oom.pickle");
    let o = assert_cmd::Command::new(env!("CARGO_BIN_EXE_memtide"))
        .arg(&f)
        .args(["--alloc-conf", "expandable_segmnts:True"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("--alloc-conf") && err.contains("expandable_segmnts"),
        "{err}"
    );
    // Two files open the diff screen: the flag has no meaning there.
    let o = assert_cmd::Command::new(env!("CARGO_BIN_EXE_memtide"))
        .arg(&f)
        .arg(&f)
        .args(["--alloc-conf", "expandable_segments:True"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("one file"));
}

#[test]
fn ascii_draws_the_overlay_with_its_own_glyph() {
    let f = sample("train-3steps.jsonl");
    let mut h = Harness::open_with(&f, 80, 24, Theme::default(), true);
    h.press("w");
    assert!(overlay(&h).is_some());
    let s = h.screen();
    // ASCII bands fill with # = + % : and the outline is -: the overlay is '*'.
    let l = h.explorer().layout(80, 24);
    let plot: Vec<&str> = s
        .lines()
        .skip(l.plot.y as usize)
        .take(l.plot.height as usize)
        .collect();
    assert!(plot.iter().any(|r| r.contains('*')), "{s}");
    assert!(
        s.lines()
            .nth(l.legend.y as usize)
            .unwrap()
            .contains("* whatif"),
        "{s}"
    );
}
