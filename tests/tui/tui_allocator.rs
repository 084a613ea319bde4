//! The explorer's OOM panel (`o` / `O`, `x`) and allocator view (`s`): reducer tests and
//! screens on the OOM fixtures (tests/fixtures/oom, made by tools/gen_oom_snapshots.py).
//! Expected figures come from the generator's own state (`*.truth.json`, the README's hand
//! table) and its source (segment base addresses, event order), never from memtide's output.

#![allow(clippy::unwrap_used)]

use memtide::tui::app::App;
use memtide::tui::explorer::alloc::{AllocRow, AllocSort};
use memtide::tui::testing::Harness;
use memtide::tui::theme::Theme;
use memtide_core::allocator::BlockState;
use memtide_core::trace::{Bytes, Seq};
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/oom")
        .join(name)
}

fn truth(name: &str) -> serde_json::Value {
    let p = fixture(&name.replace(".pickle", ".truth.json"));
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

/// The explorer on an OOM fixture, with `--capacity` when given.
fn open(name: &str, capacity: Option<u64>, w: u16, h: u16) -> Harness {
    let mut app = App::new(fixture(name), Default::default(), Theme::default(), false);
    if let Some(ex) = app.explorer_mut() {
        ex.opts.capacity = capacity.map(Bytes);
    }
    Harness::with_app(app, w, h)
}

/// The cursor as an event number.
fn event(h: &Harness) -> u64 {
    let ex = h.explorer();
    ex.device().unwrap().trace.event_number(ex.view.cursor)
}

#[test]
fn o_lands_on_the_oom_and_o_shift_goes_back_while_brackets_skip_it() {
    let mut h = open("oom_fragmented.pickle", None, 100, 30);
    let want = truth("oom_fragmented.pickle")["ooms"][0]["index"]
        .as_u64()
        .unwrap();
    h.press("<Home>");
    assert_eq!(event(&h), 0);
    assert!(h.explorer().panel_oom().is_none());
    // `]` walks step/phase marks only: a snapshot has none, so it never lands on the OOM.
    h.press("]");
    assert_eq!(event(&h), 0);
    h.press("o");
    assert_eq!(event(&h), want);
    assert_eq!(h.explorer().panel_oom(), Some(0));
    let s = h.screen();
    assert!(s.contains("OOM 1/1: verdict fragmentation"), "{s}");
    // Nothing after the last OOM; `O` from the end comes back to it.
    h.press("o");
    assert_eq!(event(&h), want);
    assert!(h.screen().contains("no further OOM"));
    h.press("<End>");
    if event(&h) != want {
        h.press("O");
        assert_eq!(event(&h), want);
    }
    h.press("<Home>O");
    assert_eq!(event(&h), 0);
    assert!(h.screen().contains("no further OOM"));
}

#[test]
fn the_panel_shows_the_explanation_with_unavailable_figures_and_the_verdict() {
    // README table: 2 GiB requested, driver free 1534 MiB, reserved 6146 MiB, 512 MiB outside.
    let mut h = open("oom_live.pickle", Some(8 * GIB), 120, 40);
    h.press("o");
    let s = h.screen();
    let t = &truth("oom_live.pickle")["ooms"][0];
    assert_eq!(event(&h), t["index"].as_u64().unwrap());
    assert!(s.contains("requested         2.000 GiB"), "{s}");
    assert!(s.contains("driver free       1.498 GiB"), "{s}"); // 1534 MiB
    assert!(s.contains("reserved          6.002 GiB"), "{s}"); // 6146 MiB
    assert!(s.contains("capacity          8.000 GiB"), "{s}");
    assert!(s.contains("outside allocator 512.0 MiB"), "{s}");
    assert!(s.contains("verdict           live_tensors"), "{s}");
    assert!(s.contains("empty_cache() will not help"), "{s}");
    // Without --capacity the file does not say the device's size: unavailable, and the
    // verdict comes from the file's own figures (issue 38), with its reasoning.
    let mut h = open("oom_live.pickle", None, 120, 40);
    h.press("o");
    let s = h.screen();
    assert!(s.contains("capacity          unavailable"), "{s}");
    assert!(s.contains("outside allocator unavailable"), "{s}");
    assert!(s.contains("verdict           live_tensors"), "{s}");
    assert!(
        s.contains("reasoning         2.000 GiB requested > "),
        "{s}"
    );
}

#[test]
fn x_pins_the_panel_away_from_the_oom() {
    let mut h = open("oom_fragmented.pickle", None, 100, 30);
    h.press("<Home>");
    assert!(h.explorer().panel_oom().is_none());
    h.press("x");
    // Pinned before the OOM: the panel shows the (only, first) OOM.
    assert_eq!(h.explorer().panel_oom(), Some(0));
    assert!(h.screen().contains("pinned; the cursor is elsewhere"));
    h.press("x");
    assert!(h.explorer().panel_oom().is_none());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut j = Harness::open(
        &root.join("tests/fixtures/jsonl/views_external.jsonl"),
        100,
        30,
    );
    j.press("x");
    assert!(j.screen().contains("no out-of-memory event in this trace"));
    j.press("o");
    assert!(j.screen().contains("no out-of-memory event in this trace"));
    // A JSONL oom line: no blocks in the file, so the block figures are unavailable.
    let mut j = Harness::open(&root.join("tests/fixtures/tui/train3.jsonl"), 120, 40);
    j.press("<Home>o");
    assert_eq!(j.explorer().panel_oom(), Some(0));
    let s = j.screen();
    assert!(s.contains("largest free      unavailable"), "{s}");
    assert!(s.contains("verdict"), "{s}");
}

#[test]
fn s_shows_the_segments_at_the_oom_with_the_generators_totals() {
    let name = "oom_fragmented.pickle";
    let t = &truth(name)["ooms"][0];
    let mut h = open(name, None, 160, 30);
    h.press("os");
    let a = h
        .explorer()
        .alloc
        .as_ref()
        .expect("the allocator view is open");
    assert!(a.model);
    assert_eq!(a.at, h.explorer().view.cursor);
    let tot = a.totals.as_ref().unwrap();
    assert_eq!(tot.allocated, t["allocated"].as_u64().unwrap());
    assert_eq!(tot.reserved, t["reserved"].as_u64().unwrap());
    assert_eq!(tot.free_in_reserve, t["free_in_reserve"].as_u64().unwrap());
    assert_eq!(
        tot.largest_free_block,
        t["largest_free_block"].as_u64().unwrap()
    );
    // One 7 GiB segment at the generator's base address, fourteen 512 MiB blocks, every
    // other one free: fragmentation 1 − 512 MiB / 3.5 GiB.
    assert_eq!(a.segments.len(), 1);
    let seg = &a.segments[0];
    assert_eq!((seg.address, seg.size), (0x7E00_0000_0000, 7168 * MIB));
    assert_eq!(seg.blocks.len(), 14);
    let frag = tot.pools[0].fragmentation.unwrap();
    assert!((frag - (1.0 - 512.0 / 3584.0)).abs() < 1e-12, "{frag}");
    let s = h.screen();
    assert!(s.contains("0x7e0000000000"), "{s}");
    assert!(s.contains("fragmentation 85.7%"), "{s}");
    assert!(s.contains("largest free block 512.0 MiB"), "{s}");
    // Esc closes it, s reopens, s closes.
    h.press("<Esc>");
    assert!(h.explorer().alloc.is_none());
    h.press("ss");
    assert!(h.explorer().alloc.is_none());
}

#[test]
fn the_allocator_view_follows_the_cursor() {
    let mut h = open("oom_fragmented.pickle", None, 100, 30);
    h.press("<Home>s");
    // Event #0 is the segment_alloc: 7 GiB reserved, nothing allocated, one free block.
    let tot = h.explorer().alloc.as_ref().unwrap().totals.clone().unwrap();
    assert_eq!(
        (tot.reserved, tot.allocated, tot.free_in_reserve),
        (7168 * MIB, 0, 7168 * MIB)
    );
    assert_eq!(tot.largest_free_block, 7168 * MIB);
    assert_eq!(tot.pools[0].fragmentation, Some(0.0));
    // #1 allocates the first 512 MiB block.
    h.press("l");
    assert_eq!(event(&h), 1);
    let a = h.explorer().alloc.as_ref().unwrap();
    assert_eq!(a.at, Seq(1));
    let tot = a.totals.as_ref().unwrap();
    assert_eq!(
        (tot.allocated, tot.largest_free_block),
        (512 * MIB, 6656 * MIB)
    );
}

#[test]
fn enter_on_a_block_inspects_its_allocation_and_moves_the_cursor_to_it() {
    let mut h = open("oom_fragmented.pickle", None, 100, 30);
    h.press("os<Enter>");
    let a = h.explorer().alloc.as_ref().unwrap();
    assert_eq!(a.expanded, Some(0x7E00_0000_0000));
    assert_eq!(a.rows.len(), 1 + 14);
    assert_eq!(a.rows[1], AllocRow::Block(0, 0));
    // The second block (i = 1) was freed: Enter on it says so and moves nothing.
    h.press("jj<Enter>");
    assert!(h.explorer().inspect.is_none());
    assert!(h.screen().contains("a free block"));
    // The first block was allocated by entry #1 (the generator allocates in address order).
    h.press("k");
    let sel = h.explorer().alloc.as_ref().unwrap().selected_block();
    assert_eq!(sel, Some((0x7E00_0000_0000, BlockState::Allocated)));
    h.press("<Enter>");
    assert_eq!(event(&h), 1);
    let ex = h.explorer();
    let id = ex.inspect.as_ref().expect("the inspector is open").id;
    let tr = &ex.device().unwrap().trace;
    assert_eq!(tr.src_id(id).unwrap(), 0x7E00_0000_0000);
    assert_eq!(tr.size(id), Bytes(512 * MIB));
    let s = h.screen();
    assert!(s.contains("address 0x7e0000000000"), "{s}");
    assert!(s.contains("stack (innermost first)"), "{s}");
    // Esc closes the inspector back to the allocator view, which now shows #1.
    h.press("<Esc>");
    assert!(h.explorer().inspect.is_none());
    assert_eq!(h.explorer().alloc.as_ref().unwrap().at, Seq(1));
}

#[test]
fn sort_cycles_size_free_address() {
    // oom_live: three 2 GiB segments (full) and a 2 MiB small-pool segment at base +
    // 0x10_0000_0000 holding 4000 B (generator): the only one with free bytes.
    let mut h = open("oom_live.pickle", None, 100, 30);
    h.press("os");
    let a = h.explorer().alloc.as_ref().unwrap();
    assert_eq!(a.sort, AllocSort::Size);
    assert_eq!(a.segments.len(), 4);
    assert_eq!(a.segments[0].size, 2048 * MIB);
    assert_eq!(a.segments[3].size, 2 * MIB);
    h.press("S");
    let a = h.explorer().alloc.as_ref().unwrap();
    assert_eq!(a.sort, AllocSort::Free);
    assert_eq!(a.segments[0].address, 0x7F00_0000_0000 + 0x10_0000_0000);
    h.press("S");
    let a = h.explorer().alloc.as_ref().unwrap();
    assert_eq!(a.sort, AllocSort::Address);
    let addrs: Vec<u64> = a.segments.iter().map(|s| s.address).collect();
    let base = 0x7F00_0000_0000u64;
    assert_eq!(
        addrs,
        [
            base,
            base + 2048 * MIB,
            base + 4096 * MIB,
            base + 0x10_0000_0000
        ]
    );
    assert!(h.screen().contains("segments sorted by address"));
}

#[test]
fn a_source_without_segments_says_what_it_does_not_know() {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tui/train3.jsonl");
    let mut h = Harness::open(&p, 100, 30);
    h.press("s");
    let a = h.explorer().alloc.as_ref().unwrap();
    assert!(!a.model && a.segments.is_empty());
    let s = h.screen();
    assert!(s.contains("this file records no segments"), "{s}");
    // Known: 288 MiB live at the peak and the 512 MiB reserve span (gen_train3.py).
    assert!(s.contains("allocated 288.0 MiB"), "{s}");
    assert!(s.contains("reserved 512.0 MiB"), "{s}");
    assert!(s.contains("fragmentation: unavailable"), "{s}");
}

/// A model still replaying is not waited for by a key: the view says so (and draws no
/// segment), and `Msg::Ready(Behind::Model)` — the worker's reply once the model is there — fills it
/// in with what the view shows when the model was there from the start.
#[test]
fn the_allocator_view_waits_for_a_replaying_model_without_blocking_and_then_fills_in() {
    let mut h = open("oom_fragmented.pickle", None, 100, 30);
    h.press("os");
    let ready = format!("{:?}", h.explorer().alloc.as_ref().unwrap().rows);
    let ready_screen = h.screen();
    assert!(!h.explorer().alloc.as_ref().unwrap().rows.is_empty());
    // The worker's reply fills the view in; so does the next tick when the reply went to
    // another page (the ranks overview) while this one waited.
    let tick = memtide::tui::msg::Msg::Tick {
        now: std::time::Instant::now(),
    };
    let model_ready = memtide::tui::msg::Msg::Ready(memtide::tui::effect::Behind::Model);
    for reply in [model_ready, tick] {
        // The state `refresh` leaves while the device's model is still replaying.
        {
            let ex = h.app.explorer_mut().unwrap();
            let v = ex.alloc.as_mut().unwrap();
            v.waiting = Some(1);
            v.rows.clear();
            v.segments.clear();
            v.totals = None;
            v.at = Seq(u64::MAX);
        }
        let s = h.screen();
        assert!(s.contains("replaying the allocator's segments"), "{s}");
        assert!(!s.contains("segments ·") && !s.contains("sorted by"), "{s}");
        h.send(reply);
        let v = h.explorer().alloc.as_ref().unwrap();
        assert_eq!(v.waiting, None);
        assert_eq!(format!("{:?}", v.rows), ready);
        assert_eq!(h.screen(), ready_screen);
    }
}

/// An OOM whose explanation is still being computed (its fix list replayed behind the first
/// screen) never holds a key or a frame: the loaded page asks a worker to wait for it, `o`
/// lands on the OOM and draws a placeholder panel, and the worker's reply brings the panel
/// the explanation fills.
#[test]
fn an_oom_still_being_explained_draws_a_placeholder_then_fills_in() {
    use memtide::tui::effect::Effect;
    use memtide::tui::msg::Msg;
    use memtide::tui::testing::{buffer_text, keys};
    use memtide::tui::update;
    use std::sync::Arc;
    let draw = |app: &App| {
        let backend = ratatui::backend::TestBackend::new(120, 40);
        let mut term = ratatui::Terminal::new(backend).unwrap();
        term.draw(|f| memtide::tui::ui::draw(f, app)).unwrap();
        buffer_text(term.backend().buffer())
    };
    let mut app = App::new(
        fixture("oom_live.pickle"),
        Default::default(),
        Theme::default(),
        false,
    );
    if let Some(ex) = app.explorer_mut() {
        ex.opts.capacity = Some(Bytes(8 * GIB));
    }
    update::update(
        &mut app,
        Msg::Resize {
            width: 120,
            height: 40,
        },
    );
    let Some(Effect::Load {
        gen,
        path,
        opts,
        progress,
    }) = update::start(&mut app).pop()
    else {
        panic!("the explorer starts by loading");
    };
    // Opened through the door, not warmed: the explanations are not computed yet.
    let opened = memtide_core::open::open(&path, &opts, &progress).unwrap();
    let devs: Vec<Arc<_>> = opened.devices.into_iter().map(Arc::new).collect();
    let dev = devs[0].clone();
    let fx = update::update(
        &mut app,
        Msg::Loaded {
            gen,
            result: Ok(devs),
        },
    );
    assert!(
        dev.ooms_if_ready().is_none(),
        "the page computed them itself"
    );
    assert!(
        fx.iter().any(|e| matches!(
            e,
            Effect::Wait {
                fact: memtide::tui::effect::Behind::Ooms,
                ..
            }
        )),
        "nobody waits for the explanations"
    );
    for k in keys("o") {
        update::update(&mut app, Msg::Key(k));
    }
    assert!(
        dev.ooms_if_ready().is_none(),
        "`o` computed them on the UI thread"
    );
    let s = draw(&app);
    assert!(
        s.contains("out of memory at") && s.contains("explaining this OOM"),
        "{s}"
    );
    assert!(!s.contains("verdict"), "{s}");
    assert!(!s.contains("so far"), "nothing replayed yet: {s}");
    // The replays as a worker would count them: a tick samples them into the panel.
    let p = dev.oom_progress();
    p.total.store(200, std::sync::atomic::Ordering::Relaxed);
    p.done.store(84, std::sync::atomic::Ordering::Relaxed);
    let fx = update::update(
        &mut app,
        Msg::Tick {
            now: std::time::Instant::now(),
        },
    );
    assert!(fx.is_empty(), "a tick only redraws: {fx:?}");
    assert!(draw(&app).contains("(42 % so"), "{}", draw(&app));
    p.total.store(0, std::sync::atomic::Ordering::Relaxed);
    p.done.store(0, std::sync::atomic::Ordering::Relaxed);
    // The worker's wait, then its reply.
    let verdict = dev.ooms()[0].verdict.name();
    update::update(&mut app, Msg::Ready(memtide::tui::effect::Behind::Ooms));
    let s = draw(&app);
    assert!(!s.contains("explaining this OOM"), "{s}");
    assert!(s.contains("verdict") && s.contains(verdict), "{s}");
}

#[test]
fn allocator_view_80x24() {
    let mut h = open("oom_fragmented.pickle", None, 80, 24);
    h.press("os");
    insta::assert_snapshot!(h.terminal().backend());
}

#[test]
fn allocator_view_expanded_200x50() {
    let mut h = open("oom_fragmented.pickle", None, 200, 50);
    h.press("os<Enter>");
    insta::assert_snapshot!(h.terminal().backend());
}

#[test]
fn oom_panel_120x40() {
    let mut h = open("oom_live.pickle", Some(8 * GIB), 120, 40);
    h.press("o");
    insta::assert_snapshot!(h.terminal().backend());
}

#[test]
fn help_in_the_allocator_view_lists_its_keys_then_the_explorers() {
    let mut h = open("oom_fragmented.pickle", None, 120, 50);
    h.press("os?");
    let s = h.screen();
    assert!(
        s.contains("allocator: sort by size / free bytes / address"),
        "{s}"
    );
    assert!(s.contains("jump to the global peak"), "{s}");
    // Any key closes the overlay; the view stays open.
    h.press("j");
    assert!(!h.screen().contains("any key closes"));
    assert!(h.explorer().alloc.is_some());
}

#[test]
fn small_terminals_draw_the_panel_and_the_view_without_panicking() {
    for (w, hgt) in [(40, 10), (41, 12), (60, 16)] {
        let mut h = open("oom_fragmented.pickle", None, w, hgt);
        h.press("o");
        assert!(h.screen().contains("out of memory"), "{w}x{hgt}");
        // The OOM panel sits above the live list, inside the screen, overlapping nothing.
        let l = h.explorer().layout(w, hgt);
        assert!(l.panel.height > 0, "{w}x{hgt}");
        let rects = [
            l.header, l.plot, l.axis, l.minimap, l.panel, l.live, l.status,
        ];
        for (i, a) in rects.iter().enumerate() {
            assert!(a.right() <= w && a.bottom() <= hgt, "{w}x{hgt} {a:?}");
            for b in &rects[i + 1..] {
                assert!(
                    a.area() == 0 || b.area() == 0 || !a.intersects(*b),
                    "{a:?} {b:?}"
                );
            }
        }
        h.press("s<Enter>jj<Enter>");
        let _ = h.screen();
        h.press("<Esc>?");
        let _ = h.screen();
        h.press("q");
        assert!(h.app.shared.quit);
    }
}

/// The OOM panel names frames under the `--rules` file's `[[frames]]` patterns, as the live
/// table does: the door reads the rules once and the device's explanations use them.
#[test]
fn the_oom_panel_follows_the_frame_rules() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let sample = root.join("sample-traces/cuda-oom.pickle");
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("rules.toml");
    std::fs::write(&rules, "[[frames]]\ninternal = \"model.py\"\n").unwrap();
    let panel = |opts: memtide_core::open::OpenOptions| {
        let app = memtide::tui::app::App::new(
            sample.clone(),
            opts,
            memtide::tui::theme::Theme::default(),
            false,
        );
        let mut h = Harness::with_app(app, 200, 60);
        h.press("o");
        h.screen()
    };
    let plain = panel(Default::default());
    assert!(plain.contains("model.py:31"), "{plain}");
    let mut opts = memtide_core::open::OpenOptions::default();
    opts.read.rules = Some(rules);
    let ruled = panel(opts);
    assert!(ruled.contains("OOM 1/1"), "{ruled}");
    assert!(!ruled.contains("model.py:31"), "{ruled}");
    assert!(ruled.contains("train.py:57"), "{ruled}");
}

/// A file of two GPUs whose second ran out of memory opens on that one, with the OOM's key in
/// the status row; `d` goes to the other.
#[test]
fn a_file_opens_on_the_device_that_ran_out_of_memory() {
    let mut h = open("oom_second_device.pickle", Some(8 * GIB), 100, 30);
    let want = truth("oom_second_device.pickle")["ooms"][0]["index"]
        .as_u64()
        .unwrap();
    assert_eq!(h.explorer().device().unwrap().trace.device, "cuda:1");
    let s = h.screen();
    assert!(s.contains("cuda:1 [2/2]"), "{s}");
    assert!(s.contains("o OOM"), "{s}");
    assert!(
        s.contains("d device"),
        "the other device is a key away: {s}"
    );
    h.press("o");
    assert_eq!(event(&h), want);
    h.press("d");
    assert_eq!(h.explorer().device().unwrap().trace.device, "cuda:0");
}

/// At 80 columns a long file name is cut from the left, not left out: the header keeps the
/// name's end beside the device and the peak (the OOM fixture's figures, by hand: 6 GiB of
/// blocks and 8 KiB made and freed before the OOM).
#[test]
fn at_80_columns_a_long_file_name_keeps_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let long = "a_distributed_job_of_eight_ranks_rank3_step1200_memory_snapshot.pickle";
    let p = dir.path().join(long);
    std::fs::copy(fixture("oom_live.pickle"), &p).unwrap();
    let h = Harness::open(&p, 80, 24);
    let s = h.screen();
    let header = s.lines().next().unwrap();
    assert!(header.contains("…"), "{header}");
    assert!(
        header.contains("_memory_snapshot.pickle · cuda:0"),
        "{header}"
    );
    assert!(!header.contains(long), "cut: {header}");
    assert!(header.contains("cuda:0"), "{header}");
    assert!(header.contains("peak 6.000 GiB"), "{header}");
    assert!(header.chars().count() <= 80, "{header}");
}
