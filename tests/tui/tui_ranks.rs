//! The ranks overview (`memtide DIR`) on the 8-rank fixture job: insta snapshots at 80×24
//! and 200×50, rows filling in as files finish (keys work meanwhile), sorting, the worst
//! rank, opening a rank in the explorer and two in the diff screen, Esc back.

#![allow(clippy::unwrap_used)]

use memtide::tui::app::Page;
use memtide::tui::msg::Msg;
use memtide::tui::ranks::{RanksState, Slot, SortBy};
use memtide::tui::testing::Harness;
use std::path::PathBuf;

fn job() -> PathBuf {
    // Relative: the title and file names in the snapshots are the same on every machine.
    PathBuf::from("tests/fixtures/ranks")
}

fn ranks(h: &Harness) -> &RanksState {
    h.app.ranks().expect("the ranks overview is shown")
}

#[test]
fn overview_80x24() {
    let h = Harness::open_ranks(&[job()], 80, 24);
    insta::assert_snapshot!(h.screen());
}

#[test]
fn overview_200x50() {
    let h = Harness::open_ranks(&[job()], 200, 50);
    insta::assert_snapshot!(h.screen());
}

#[test]
fn a_long_directory_gives_way_to_the_counts_in_the_title() {
    // A path as long as a CI checkout's (140 columns, wider than the screen): the counts and
    // the sort stay whole, the directory keeps its last components.
    let long = PathBuf::from(format!("tests{}/fixtures/ranks", "/fixtures/..".repeat(11)));
    assert!(long.display().to_string().chars().count() > 100);
    let h = Harness::open_ranks(&[long], 100, 30);
    let screen = h.screen();
    let title = screen.lines().next().unwrap();
    assert!(title.contains("7/8 read"), "{title}");
    assert!(title.contains("sort: rank (s)"), "{title}");
    assert!(title.contains("…"), "{title}");
    assert!(title.contains("fixtures/ranks"), "{title}");
}

#[test]
fn the_worst_rank_is_starred_and_w_selects_it() {
    let mut h = Harness::open_ranks(&[job()], 120, 30);
    let st = ranks(&h);
    let worst = st.worst_slot().unwrap();
    assert_eq!(st.row(worst).unwrap().rank, 2);
    let screen = h.screen();
    let starred: Vec<&str> = screen.lines().filter(|l| l.starts_with(" *")).collect();
    assert_eq!(starred.len(), 1, "{screen}");
    assert!(starred[0].contains("rank2.pickle"));
    assert!(screen.contains("worst rank 2"), "{screen}");
    h.press("w");
    assert_eq!(ranks(&h).cursor, worst);
}

/// Ranks whose peaks are all equal: the spread line says every rank, not "worst rank 0".
#[test]
fn tied_ranks_read_every_rank_in_the_spread_line() {
    let tmp = tempfile::tempdir().unwrap();
    for r in [0, 1] {
        std::fs::copy(
            job().join("rank1.pickle"),
            tmp.path().join(format!("rank{r}.pickle")),
        )
        .unwrap();
    }
    let h = Harness::open_ranks(&[tmp.path().to_path_buf()], 100, 24);
    let st = ranks(&h);
    let peak = st.spread.unwrap().max;
    let screen = h.screen();
    let line = screen.lines().nth(1).unwrap();
    assert!(
        line.contains(&format!("every rank {}", memtide::tui::fmt::bytes(peak))),
        "{screen}"
    );
    assert!(!line.contains("worst rank"), "{screen}");
}

#[test]
fn s_sorts_by_peak_and_back() {
    let mut h = Harness::open_ranks(&[job()], 100, 30);
    let by_rank: Vec<Option<u64>> = ranks(&h)
        .order
        .iter()
        .map(|&i| ranks(&h).row(i).map(|r| r.rank))
        .collect();
    assert_eq!(&by_rank[..7], &[0, 1, 2, 3, 4, 5, 6].map(Some));
    assert_eq!(by_rank[7], None, "the unreadable file last");
    h.press("s");
    let st = ranks(&h);
    assert_eq!(st.sort, SortBy::Peak);
    let peaks: Vec<u64> = st
        .order
        .iter()
        .filter_map(|&i| st.row(i).and_then(|r| r.peak))
        .collect();
    assert!(peaks.windows(2).all(|w| w[0] >= w[1]), "{peaks:?}");
    assert_eq!(st.row(st.order[0]).unwrap().rank, 2);
    h.press("s");
    assert_eq!(ranks(&h).sort, SortBy::Rank);
}

#[test]
fn enter_opens_the_rank_in_the_explorer_and_esc_returns() {
    let mut h = Harness::open_ranks(&[job()], 100, 30);
    h.press("jj"); // rank 2
    h.press("<Enter>");
    let ex = h.explorer();
    assert!(ex.path.ends_with("rank2.pickle"));
    assert!(ex.device().is_some(), "loaded");
    assert!(h.screen().contains("Esc: back to the ranks overview"));
    // Esc closes the inspector first, then returns.
    h.press("p<Enter>");
    assert!(h.explorer().inspect.is_some());
    h.press("<Esc>");
    assert!(
        h.app.explorer().is_some(),
        "the inspector closed; still the explorer"
    );
    h.press("<Esc>");
    let st = ranks(&h);
    assert_eq!(st.row(st.cursor).unwrap().rank, 2, "the selection is kept");
    assert_eq!(st.cache.len(), 1, "the explorer is kept for a quick return");
    // Opening it again uses the kept explorer (no load).
    h.press("<Enter>");
    assert!(h.explorer().device().is_some());
    h.press("<Esc>");
    assert!(h.app.ranks().is_some());
}

#[test]
fn two_marked_ranks_open_in_the_diff_screen() {
    let mut h = Harness::open_ranks(&[job()], 100, 30);
    h.press(" jj "); // ranks 0 and 2
    assert_eq!(ranks(&h).marked.len(), 2);
    assert!(h.screen().contains("two ranks marked"));
    h.press("d");
    let d = h.app.diff().expect("the diff screen");
    assert!(d.a.path.ends_with("rank0.pickle") && d.b.path.ends_with("rank2.pickle"));
    assert!(d.diff.is_some(), "both loaded and compared");
    h.press("<Esc>");
    assert!(h.app.ranks().is_some());
    assert!(ranks(&h).marked.is_empty());
    // d with fewer than two marked says how.
    h.press("d");
    assert!(h.screen().contains("mark two ranks"));
}

#[test]
fn the_unreadable_file_shows_its_error_and_cannot_be_opened() {
    let mut h = Harness::open_ranks(&[job()], 120, 30);
    h.press("G"); // the unreadable file is last
    let st = ranks(&h);
    assert!(matches!(st.slots[st.cursor], Slot::Failed(_)));
    let screen = h.screen();
    assert!(screen.contains("unreadable"), "{screen}");
    assert!(
        screen.contains("rank7.pickle: unreadable: byte offset"),
        "{screen}"
    );
    assert!(
        screen.contains("skipped (not traces): README.md"),
        "{screen}"
    );
    h.press("<Enter>");
    assert!(h.app.ranks().is_some(), "nothing opened");
}

#[test]
fn rows_fill_in_as_files_finish_and_keys_work_meanwhile() {
    use memtide::tui::app::App;
    use memtide::tui::theme::Theme;
    use memtide::tui::update;
    let d = memtide_core::ranks::discover(&[job()]).unwrap();
    let files = d.files.clone();
    let st = RanksState::new("job".into(), d, Default::default());
    let mut app = App::new_ranks(st, Theme::default(), false);
    update::update(
        &mut app,
        Msg::Resize {
            width: 100,
            height: 30,
        },
    );
    let fx = update::start(&mut app);
    assert_eq!(fx.len(), 1, "one pool load");
    let gen = match &app.page {
        Page::Ranks(r) => r.gen,
        _ => unreachable!(),
    };
    // Read the files ourselves, then hand the results over one by one, with keys between.
    let opts = memtide_core::ranks::RankOptions::default();
    let mut outcomes: Vec<_> = files
        .iter()
        .map(|f| memtide_core::ranks::load_one(f, &opts, &Default::default()))
        .collect();
    update::update(&mut app, Msg::RankStarted { gen, file: 3 });
    update::update(&mut app, Msg::Key(memtide::tui::testing::keys("j")[0]));
    update::update(&mut app, Msg::Key(memtide::tui::testing::keys("s")[0]));
    let r = app.ranks().unwrap();
    assert!(matches!(r.slots[3], Slot::Loading(_)));
    assert_eq!(r.rows().count(), 0);
    for (k, o) in outcomes.drain(..).enumerate().rev() {
        update::update(
            &mut app,
            Msg::RankLoaded {
                gen,
                file: k,
                outcome: o,
            },
        );
        let r = app.ranks().unwrap();
        assert_eq!(r.done, files.len() - k);
    }
    // A stale generation is ignored.
    let r = app.ranks().unwrap();
    let rows = r.rows().count();
    update::update(
        &mut app,
        Msg::RankLoaded {
            gen: gen + 99,
            file: 0,
            outcome: memtide_core::ranks::FileOutcome::Failed("x".into()),
        },
    );
    assert_eq!(app.ranks().unwrap().rows().count(), rows);
    assert_eq!(
        app.ranks().unwrap().sort,
        SortBy::Peak,
        "the key pressed while loading took effect"
    );
    assert_eq!(app.shared.outcome, memtide::tui::shared::Outcome::Done);
}
