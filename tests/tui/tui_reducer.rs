//! Reducer tests: messages in, state and effects out — no terminal, no threads. Expected
//! numbers come from the fixtures' hand computation (tests/fixtures/tui/gen_train3.py).

#![allow(clippy::unwrap_used)]

use memtide::tui::action::{Action, ExplorerAction};
use memtide::tui::app::{App, Device, GroupMode, Screen};
use memtide::tui::effect::Effect;
use memtide::tui::msg::Msg;
use memtide::tui::testing::Harness;
use memtide::tui::theme::Theme;
use memtide::tui::update::{start, update};
use memtide_core::index::Index;
use memtide_core::trace::{Bytes, Category, EventKind, Seq, StorageKind, Trace, Ts};
use std::path::PathBuf;
use std::sync::Arc;

const MIB: u64 = 1 << 20;

use crate::support::repo::tui_fixture as fixture;

fn train3() -> Harness {
    Harness::open(&fixture("train3.jsonl"), 100, 30)
}

/// The cursor as the source's own event index.
fn cursor(h: &Harness) -> u64 {
    let d = h.explorer().device().expect("loaded");
    d.trace.src_index(h.explorer().view.cursor)
}

#[test]
fn opens_at_the_global_peak_with_hand_computed_totals() {
    let h = train3();
    assert!(matches!(h.explorer().screen, Screen::Ready));
    // Step 3 forward: 128 MiB persistent + 64 MiB retained + 32 + 64 MiB activations.
    assert_eq!(cursor(&h), 30);
    assert_eq!(h.explorer().live.bands.total(), 288 * MIB);
    assert_eq!(h.explorer().live.bands.0[0], 128 * MIB); // persistent
    assert_eq!(h.explorer().live.bands.0[1], 160 * MIB); // activation
    assert_eq!(h.explorer().live.total, Bytes(288 * MIB));
    assert_eq!(h.explorer().live.count, 9);
}

#[test]
fn home_then_p_jumps_to_the_peak() {
    let mut h = train3();
    h.press("<Home>");
    assert_eq!(cursor(&h), 0);
    assert_eq!(h.explorer().live.total, Bytes(0));
    h.press("p");
    assert_eq!(cursor(&h), 30);
    h.press("<End>");
    assert_eq!(cursor(&h), 36);
}

#[test]
fn live_total_matches_header_breakdown_everywhere() {
    let mut h = train3();
    h.press("<Home>");
    // Walk every column; the live panel's sum (from the live set) must equal the header's
    // band breakdown (from the band totals) at each instant.
    for _ in 0..200 {
        assert_eq!(
            h.explorer().live.total.0,
            h.explorer().live.bands.total(),
            "at {}",
            cursor(&h)
        );
        let before = h.explorer().view.cursor;
        h.press("l");
        if h.explorer().view.cursor == before {
            break;
        }
    }
    assert_eq!(cursor(&h), 36, "walking right reaches the last event");
}

#[test]
fn marks_and_step_peaks_navigate() {
    let mut h = train3();
    h.press("<Home>]");
    assert_eq!(cursor(&h), 3, "step 1 mark");
    h.press("]");
    assert_eq!(cursor(&h), 16, "step 2 mark");
    h.press("]");
    assert_eq!(cursor(&h), 26, "step 3 mark");
    h.press("[");
    assert_eq!(cursor(&h), 16);
    // Step peaks: step 1 reaches 160 MiB when w2.grad lands (#9), step 2 224 MiB at its
    // attention alloc (#20), step 3 the global 288 MiB (#30).
    h.press("<Home>}");
    assert_eq!(cursor(&h), 9);
    assert_eq!(h.explorer().live.total, Bytes(160 * MIB));
    h.press("}");
    assert_eq!(cursor(&h), 20);
    assert_eq!(h.explorer().live.total, Bytes(224 * MIB));
    h.press("}");
    assert_eq!(cursor(&h), 30);
    h.press("{");
    assert_eq!(cursor(&h), 20);
}

#[test]
fn inspect_shows_the_view_retaining_the_storage_and_jumps_to_its_ends() {
    let mut h = train3();
    h.press("p");
    let top = h.explorer().live.rows[0].clone();
    assert_eq!(top.bytes, Bytes(64 * MIB));
    assert!(
        top.retained_by_view,
        "step 2's attention is retained by the probe view"
    );
    assert_eq!(top.views, 1);
    h.press("<Enter>");
    let ins = h.explorer().inspect.as_ref().expect("inspector open");
    let text: String = ins
        .lines
        .iter()
        .map(|l| l.iter().map(|(s, _)| s.as_str()).collect::<String>() + "\n")
        .collect();
    assert!(
        text.contains(
            "retained by view: a 256.0 KiB view keeps 64.00 MiB alive; base released at #22"
        ),
        "{text}"
    );
    assert!(text.contains("\"attn_probe\" still holds it"), "{text}");
    assert!(text.contains("debug.py:7 probe_attention"), "{text}");
    assert!(text.contains("model.py:31 attention"), "{text}");
    h.press("a");
    assert_eq!(cursor(&h), 20, "alloc of step 2's layer2.attn");
    h.press("f");
    assert_eq!(cursor(&h), 35, "freed when the view is released");
    h.press("<Esc>");
    assert!(h.explorer().inspect.is_none());
}

#[test]
fn search_jumps_to_the_biggest_match_inside_its_lifetime_and_cycles() {
    let mut h = train3();
    // Fuzzy: "adam" also matches "autograd AccumulateGrad" (a…d…a…m), the grads' frame.
    h.press("<Home>/adam");
    assert_eq!(h.explorer().search.matches.len(), 7);
    h.press("<Esc><Home>/adam.py");
    assert!(h.explorer().searching);
    // exp_avg, exp_avg_sq (32 MiB, adam.py stacks) and three 4 MiB adam temps.
    assert_eq!(h.explorer().search.matches.len(), 5);
    h.press("<Enter>");
    assert!(!h.explorer().searching);
    // exp_avg lives from #12 to the end; the highest total in that span is the peak.
    assert_eq!(cursor(&h), 30);
    assert_eq!(h.explorer().search.current, Some(0));
    h.press("n");
    // exp_avg_sq is live at #30 too: selected where it is, the cursor stays.
    assert_eq!(cursor(&h), 30);
    h.press("n");
    // The third match is step 1's temp, live only after #14.
    assert_eq!(cursor(&h), 14);
    h.press("N");
    // exp_avg_sq lives from #12 on: live at #14, so the cursor stays there; `p` returns.
    assert_eq!(cursor(&h), 14);
    assert_eq!(h.explorer().search.current, Some(1));
    h.press("p");
    assert_eq!(cursor(&h), 30);
    // A view's name finds the storage it holds.
    h.press("/attn_probe<Enter>");
    assert_eq!(h.explorer().search.matches.len(), 1);
    h.press("<Esc>");
    assert!(h.explorer().search.matches.is_empty());
}

#[test]
fn stale_worker_replies_are_dropped() {
    let mut h = train3();
    h.press("/adam");
    let gen = h.explorer().search.gen;
    let n = h.explorer().search.matches.len();
    h.send(Msg::SearchDone {
        gen: gen - 1,
        matches: vec![],
        strings: 0,
    });
    assert_eq!(h.explorer().search.matches.len(), n);
    // A load reply for a generation that is not loading is ignored too.
    h.send(Msg::Loaded {
        gen: 9999,
        result: Err("stale".into()),
    });
    assert!(matches!(h.explorer().screen, Screen::Ready));
}

#[test]
fn grouping_by_band_sums_to_the_total() {
    let mut h = train3();
    h.press("g");
    assert_eq!(h.explorer().live.group, GroupMode::ByBand);
    let g = &h.explorer().live.groups;
    assert_eq!(g.len(), 2);
    assert_eq!(
        (g[0].key.as_str(), g[0].bytes),
        ("activation", Bytes(160 * MIB))
    );
    assert_eq!(
        (g[1].key.as_str(), g[1].bytes),
        ("persistent", Bytes(128 * MIB))
    );
    h.press("g");
    assert_eq!(h.explorer().live.group, GroupMode::ByFrame);
    let sum: u64 = h.explorer().live.groups.iter().map(|g| g.bytes.0).sum();
    assert_eq!(sum, 288 * MIB);
    // By user frame: the two Adam moments are made under torch/optim/adam.py, from the
    // user's train.py:46 (gen_train3.py): one group of 2 × 32 MiB, not torch's frame.
    let adam = h
        .explorer()
        .live
        .groups
        .iter()
        .find(|g| g.key == "train.py:46 train_step")
        .expect("a user-frame group");
    assert_eq!((adam.bytes, adam.count), (Bytes(64 * MIB), 2));
    assert!(h
        .explorer()
        .live
        .groups
        .iter()
        .all(|g| !g.key.contains("torch/")));
    h.press("g");
    assert_eq!(h.explorer().live.group, GroupMode::Tree);
    // The tree's top level holds every live byte (288 MiB by hand).
    let top: u64 = h
        .explorer()
        .live
        .tree_rows
        .iter()
        .filter(|r| r.depth == 0)
        .map(|r| r.bytes)
        .sum();
    assert_eq!(top, 288 * MIB);
    h.press("g");
    assert_eq!(h.explorer().live.group, GroupMode::List);
}

#[test]
fn selection_moves_and_copy_emits_osc52_text() {
    let mut h = train3();
    h.press("jjk");
    assert_eq!(h.explorer().live.selected, 1);
    h.press("kkk");
    assert_eq!(h.explorer().live.selected, 0);
    h.press("y");
    let clip = h.clipboard.last().expect("copied");
    assert!(clip.contains("layer2.attn"), "{clip}");
    assert!(clip.contains("retained by view"), "{clip}");
    assert!(clip.contains("model.py:31 attention"), "{clip}");
}

#[test]
fn zoom_narrows_the_view_and_zoom_out_restores_it() {
    let mut h = train3();
    let whole = (h.explorer().view.lo, h.explorer().view.hi);
    assert_eq!(whole, (0, 36));
    h.press("+");
    let (lo, hi) = (h.explorer().view.lo, h.explorer().view.hi);
    assert!(hi - lo < 36 && lo <= 30 && 30 <= hi, "{lo}..{hi}");
    assert_eq!(cursor(&h), 30, "zoom keeps the cursor");
    h.press("--");
    assert_eq!((h.explorer().view.lo, h.explorer().view.hi), whole);
}

#[test]
fn bands_cycle_and_axis_toggle() {
    let mut h = train3();
    h.press("b");
    assert_eq!(h.explorer().bands_shown, [true, false, false, false, false]);
    h.press("bbbbb");
    assert_eq!(h.explorer().bands_shown, [true; 5]);
    h.press("t");
    assert!(memtide::tui::update::time_axis(&h.app));
    assert_eq!(cursor(&h), 30, "the cursor survives the axis switch");
    h.press("t");
    assert!(!memtide::tui::update::time_axis(&h.app));
}

#[test]
fn mouse_click_places_the_cursor_on_that_column() {
    let mut h = train3();
    let l = h.explorer().layout(h.app.shared.width, h.app.shared.height);
    let col = 5usize;
    let want = h.explorer().view.columns[col].at;
    h.send(Msg::Action(Action::Explorer(ExplorerAction::ClickAt {
        col: l.plot.x + col as u16,
        row: l.plot.y + 1,
    })));
    assert_eq!(h.explorer().view.cursor, want);
    assert_eq!(h.explorer().view.cursor_col, Some(col));
}

#[test]
fn bad_file_shows_the_readers_message_and_exits_non_zero() {
    let h = Harness::open(&fixture("bad.jsonl"), 80, 24);
    match &h.explorer().screen {
        Screen::Error(e) => assert!(e.contains("line 2"), "{e}"),
        s => panic!("expected an error screen, got {s:?}"),
    }
    assert_eq!(
        h.app.shared.outcome,
        memtide::tui::app::Outcome::InputFailed
    );
    assert!(h.screen().contains("line 2"));
}

#[test]
fn quit_during_load_cancels_the_reader() {
    let mut app = App::new(
        fixture("train3.jsonl"),
        Default::default(),
        Theme::default(),
        false,
    );
    let fx = start(&mut app);
    let progress = match &fx[..] {
        [Effect::Load { progress, .. }] => progress.clone(),
        other => panic!("{other:?}"),
    };
    let fx = update(&mut app, Msg::Action(Action::Quit));
    assert!(matches!(fx[..], [Effect::Quit]));
    assert!(progress.is_cancelled());
    assert!(app.shared.quit);
}

#[test]
fn keys_other_than_quit_are_ignored_while_loading() {
    let mut app = App::new(
        fixture("train3.jsonl"),
        Default::default(),
        Theme::default(),
        false,
    );
    let _ = start(&mut app);
    let fx = update(
        &mut app,
        Msg::Action(Action::Explorer(ExplorerAction::JumpPeak)),
    );
    assert!(fx.is_empty());
    assert!(matches!(
        app.explorer().expect("explorer").screen,
        Screen::Loading(_)
    ));
}

fn tiny_trace(device: &str, events: u64) -> Arc<Device> {
    let mut t = Trace::new(device, "mem", "jsonl");
    for i in 0..events {
        t.push_event(Ts(i as i64 * 1000), EventKind::Alloc);
        let name = t.strings.intern("x");
        t.open(
            Bytes(1024),
            Category::Activation,
            StorageKind::Block,
            name,
            Default::default(),
            i,
        );
    }
    let ix = Index::build(&t);
    Arc::new(Device::new(t, ix))
}

#[test]
fn multi_device_starts_on_the_first_with_events_and_d_cycles() {
    let mut app = App::new(
        PathBuf::from("multi"),
        Default::default(),
        Theme::default(),
        false,
    );
    let fx = start(&mut app);
    let gen = match &fx[..] {
        [Effect::Load { gen, .. }] => *gen,
        other => panic!("{other:?}"),
    };
    let devs = vec![tiny_trace("cuda:0", 0), tiny_trace("cuda:1", 4)];
    update(
        &mut app,
        Msg::Loaded {
            gen,
            result: Ok(devs),
        },
    );
    assert_eq!(app.explorer().expect("explorer").current, 1);
    assert_eq!(app.explorer().expect("explorer").live.total, Bytes(4096));
    assert_eq!(app.explorer().expect("explorer").view.cursor, Seq(3));
    update(
        &mut app,
        Msg::Action(Action::Explorer(ExplorerAction::NextDevice)),
    );
    assert_eq!(app.explorer().expect("explorer").current, 0);
    update(
        &mut app,
        Msg::Action(Action::Explorer(ExplorerAction::NextDevice)),
    );
    assert_eq!(app.explorer().expect("explorer").current, 1);
}

#[test]
fn tiny_terminals_never_panic() {
    let mut h = train3();
    for (w, hh) in [
        (1, 1),
        (10, 5),
        (20, 3),
        (39, 9),
        (40, 10),
        (41, 11),
        (80, 24),
        (250, 80),
    ] {
        h.send(Msg::Resize {
            width: w,
            height: hh,
        });
        h.press("l+<Enter>jg/a<Enter>n?x");
        let s = h.screen();
        if (w < 40 || hh < 10) && w >= 20 && hh >= 2 {
            assert!(s.contains("too small"), "{w}x{hh}: {s}");
        }
        h.press("<Esc><Esc>");
    }
}

#[test]
fn a_tick_does_not_clear_a_pending_redraw() {
    // Found by the PTY test: a tick between a key and the (frame-capped) draw swallowed it.
    let mut h = train3();
    h.app.take_dirty();
    h.press("<Home>");
    assert!(h.app.shared.dirty);
    h.send(Msg::Tick {
        now: std::time::Instant::now(),
    });
    assert!(h.app.shared.dirty, "the Home move must still be drawn");
    h.press("\u{1}"); // an unmapped key
    assert!(h.app.shared.dirty);
}

/// A pseudo-random trace with many ties in size, stacks with C++ `??` frames, empty names.
fn random_trace(seed: u64, n: usize) -> Trace {
    let mut t = Trace::new("cuda:0", "rand", "jsonl");
    let mut x = seed;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let frames: Vec<_> = [
        "??:0 c10::alloc",
        "model.py:3 forward",
        "model.py:9 attn",
        "",
    ]
    .iter()
    .map(|f| t.strings.intern(f))
    .collect();
    let names: Vec<_> = ["", "a", "b"].iter().map(|s| t.strings.intern(s)).collect();
    let stacks: Vec<_> = [vec![], vec![0, 1], vec![1], vec![0], vec![2, 1]]
        .iter()
        .map(|v: &Vec<usize>| {
            let ids: Vec<_> = v.iter().map(|&i| frames[i]).collect();
            t.strings.intern_stack(&ids)
        })
        .collect();
    let mut live = Vec::new();
    for i in 0..n {
        let r = rnd();
        t.push_event(Ts(i as i64), EventKind::Alloc);
        if live.is_empty() || r % 4 != 0 {
            let cat = [
                Category::Activation,
                Category::Param,
                Category::Workspace,
                Category::Unknown,
            ][(r >> 8) as usize % 4];
            let id = t.open(
                Bytes(((r >> 16) % 8 + 1) * 1024),
                cat,
                StorageKind::Block,
                names[(r >> 24) as usize % 3],
                stacks[(r >> 32) as usize % 5],
                i as u64,
            );
            live.push(id);
        } else {
            let k = (r >> 40) as usize % live.len();
            let id = live.swap_remove(k);
            t.close(id);
        }
    }
    t
}

/// Brute-force grouping of live rows by `key`, biggest first (ties by key).
fn group_by(
    all: &[memtide_core::analysis::LiveEntry],
    key: impl Fn(&memtide_core::analysis::LiveEntry) -> String,
) -> Vec<memtide_core::analysis::Group> {
    let mut m: std::collections::BTreeMap<String, (u64, usize)> = Default::default();
    for e in all {
        let g = m.entry(key(e)).or_default();
        g.0 += e.bytes.0;
        g.1 += 1;
    }
    let mut v: Vec<_> = m
        .into_iter()
        .map(|(key, (b, count))| memtide_core::analysis::Group {
            key,
            bytes: Bytes(b),
            count,
        })
        .collect();
    v.sort_by(|a, b| b.bytes.cmp(&a.bytes).then(a.key.cmp(&b.key)));
    v
}

#[test]
fn live_rows_and_groups_match_the_core_oracles() {
    use memtide_core::analysis::{group_by_band, live_entries};
    for seed in [7u64, 99, 12345] {
        let trace = random_trace(seed, 6000);
        let index = Index::build(&trace);
        let dev = Arc::new(Device::new(trace, index));
        let mut app = App::new(
            PathBuf::from("r"),
            Default::default(),
            Theme::default(),
            false,
        );
        let gen = match &start(&mut app)[..] {
            [Effect::Load { gen, .. }] => *gen,
            other => panic!("{other:?}"),
        };
        update(
            &mut app,
            Msg::Loaded {
                gen,
                result: Ok(vec![dev.clone()]),
            },
        );
        for at in [0u64, 100, 2999, 5999] {
            update(
                &mut app,
                Msg::Action(Action::Explorer(ExplorerAction::Home)),
            );
            // Place the cursor exactly by clicking is column-bound; set it via a jump instead.
            app.explorer_mut().expect("explorer").view.cursor = Seq(at);
            update(
                &mut app,
                Msg::Action(Action::Explorer(ExplorerAction::ToggleGroup)),
            ); // by band: recomputes
            let all = live_entries(&dev.trace, &dev.index, Seq(at), None);
            assert_eq!(
                app.explorer().expect("explorer").live.groups,
                group_by_band(&all),
                "seed {seed} at {at}"
            );
            update(
                &mut app,
                Msg::Action(Action::Explorer(ExplorerAction::ToggleGroup)),
            ); // by frame: the user frame, else the innermost op, else the name
            let by_user = group_by(&all, |e| {
                [&e.user_frame, &e.innermost, &e.name, &e.frame]
                    .into_iter()
                    .find(|s| !s.is_empty())
                    .cloned()
                    .unwrap_or_else(|| "(no frame)".into())
            });
            assert_eq!(
                app.explorer().expect("explorer").live.groups,
                by_user,
                "seed {seed} at {at}"
            );
            update(
                &mut app,
                Msg::Action(Action::Explorer(ExplorerAction::ToggleGroup)),
            ); // tree
            update(
                &mut app,
                Msg::Action(Action::Explorer(ExplorerAction::ToggleGroup)),
            ); // list
            let want: Vec<_> = all.iter().take(1000).map(|e| e.id).collect();
            let have: Vec<_> = app
                .explorer()
                .expect("explorer")
                .live
                .rows
                .iter()
                .map(|e| e.id)
                .collect();
            assert_eq!(have, want, "seed {seed} at {at}");
            assert_eq!(app.explorer().expect("explorer").live.count, all.len());
        }
    }
}

#[test]
fn huge_live_sets_are_computed_on_a_worker_and_stale_replies_dropped() {
    use memtide::tui::liveset::HUGE_LIVE;
    let n = HUGE_LIVE as u64 + 50;
    let dev = tiny_trace("cuda:0", n);
    let mut app = App::new(
        PathBuf::from("huge"),
        Default::default(),
        Theme::default(),
        false,
    );
    let gen = match &start(&mut app)[..] {
        [Effect::Load { gen, .. }] => *gen,
        other => panic!("{other:?}"),
    };
    update(
        &mut app,
        Msg::Loaded {
            gen,
            result: Ok(vec![dev]),
        },
    );
    // The first live set (at the peak, the last event) is computed inline.
    assert_eq!(app.explorer().expect("explorer").live.count, n as usize);
    assert!(!app.explorer().expect("explorer").live.pending);
    let fx = update(
        &mut app,
        Msg::Action(Action::Explorer(ExplorerAction::CursorLeft)),
    );
    let (g1, at1) = match &fx[..] {
        [Effect::Live { gen, at, .. }] => (*gen, *at),
        other => panic!("expected a live-set request, got {other:?}"),
    };
    assert!(app.explorer().expect("explorer").live.pending);
    // The header's bytes are exact at once (band totals), before the worker answers.
    assert_eq!(
        app.explorer().expect("explorer").live.bands.total(),
        (at1.0 + 1) * 1024
    );
    let fx = update(
        &mut app,
        Msg::Action(Action::Explorer(ExplorerAction::CursorLeft)),
    );
    let (g2, at2) = match &fx[..] {
        [Effect::Live { gen, at, .. }] => (*gen, *at),
        other => panic!("{other:?}"),
    };
    // The reply to the first request is stale: dropped.
    let dev = app.explorer().expect("explorer").device().unwrap().clone();
    let r1 = memtide::tui::liveset::compute(&dev.trace, &dev.index, at1, GroupMode::List);
    update(
        &mut app,
        Msg::LiveDone {
            gen: g1,
            result: Box::new(r1),
        },
    );
    assert!(app.explorer().expect("explorer").live.pending);
    let r2 = memtide::tui::liveset::compute(&dev.trace, &dev.index, at2, GroupMode::List);
    update(
        &mut app,
        Msg::LiveDone {
            gen: g2,
            result: Box::new(r2),
        },
    );
    assert!(!app.explorer().expect("explorer").live.pending);
    assert_eq!(
        app.explorer().expect("explorer").live.count as u64,
        at2.0 + 1
    );
    assert_eq!(
        app.explorer().expect("explorer").live.total.0,
        app.explorer().expect("explorer").live.bands.total()
    );
}

#[test]
fn device_flag_picks_by_name_or_ordinal() {
    for (want, expect) in [
        (Some("cuda:0"), 0),
        (Some("1"), 1),
        (Some("nope"), 1),
        (None, 1),
    ] {
        let mut app = App::new(
            PathBuf::from("m"),
            Default::default(),
            Theme::default(),
            false,
        );
        app.explorer_mut().expect("explorer").device_want = want.map(String::from);
        let gen = match &start(&mut app)[..] {
            [Effect::Load { gen, .. }] => *gen,
            other => panic!("{other:?}"),
        };
        let devs = vec![tiny_trace("cuda:0", 0), tiny_trace("cuda:1", 3)];
        update(
            &mut app,
            Msg::Loaded {
                gen,
                result: Ok(devs),
            },
        );
        assert_eq!(
            app.explorer().expect("explorer").current,
            expect,
            "{want:?}"
        );
    }
}

#[test]
fn wheel_zooms_and_inspector_scrolls() {
    use ratatui::crossterm::event::{KeyModifiers, MouseEvent, MouseEventKind};
    let mut h = train3();
    let wheel = |kind| {
        Msg::Mouse(MouseEvent {
            kind,
            column: 20,
            row: 5,
            modifiers: KeyModifiers::NONE,
        })
    };
    h.send(wheel(MouseEventKind::ScrollUp));
    assert!(
        h.explorer().view.hi - h.explorer().view.lo < 36,
        "wheel up zooms in"
    );
    h.send(wheel(MouseEventKind::ScrollDown));
    assert_eq!((h.explorer().view.lo, h.explorer().view.hi), (0, 36));
    h.press("<Enter>jj");
    assert_eq!(h.explorer().inspect.as_ref().unwrap().scroll, 2);
    assert_eq!(
        h.explorer().live.selected,
        0,
        "j scrolls the inspector, not the list"
    );
    h.press("k");
    assert_eq!(h.explorer().inspect.as_ref().unwrap().scroll, 1);
}

#[test]
fn an_unknown_device_is_named_not_silently_replaced() {
    let mut app = memtide::tui::app::App::new(
        fixture("train3.jsonl"),
        Default::default(),
        memtide::tui::theme::Theme::default(),
        false,
    );
    app.explorer_mut().expect("explorer").device_want = Some("cuda:7".into());
    let h = Harness::with_app(app, 100, 30);
    let status = h.app.shared.status.clone().unwrap_or_default();
    assert!(status.contains("no device \"cuda:7\""), "{status}");
    assert!(status.contains("showing cuda:0"), "{status}");
}
