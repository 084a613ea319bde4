//! Headless key-script tests: key macros go through the real keymap → update → effects
//! (run inline) and the rendered screen text is checked. Also keeps docs/keys.md and
//! docs/screen.txt in step with the keymap and the renderer.

#![allow(clippy::unwrap_used)]

use memtide::tui::testing::{keys, Harness};
use std::path::PathBuf;

use crate::support::repo::root;

fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/tui").join(name)
}

#[test]
fn key_macro_parser() {
    let k = keys("p<Enter>/a<Esc><C-c>");
    assert_eq!(k.len(), 6);
    assert_eq!(k[1].code, ratatui::crossterm::event::KeyCode::Enter);
    assert!(k[5]
        .modifiers
        .contains(ratatui::crossterm::event::KeyModifiers::CONTROL));
}

#[test]
fn p_then_enter_shows_the_peaks_biggest_storage_and_its_stack() {
    let mut h = Harness::open(&fixture("train3.jsonl"), 100, 30);
    h.press("<Home>");
    assert!(h.screen().contains("cursor #0 "));
    h.press("p");
    let s = h.screen();
    // Header: the cursor's total, 288 MiB by hand (see gen_train3.py), with the breakdown;
    // the time is relative to the first event (t=1 µs in the file: 304 − 1).
    assert!(
        s.contains("cursor #30 t=+303.000 µs  288.0 MiB = █per 128Mi + █act 160Mi"),
        "{s}"
    );
    // The live panel flags the storage a view keeps alive.
    let first_row = s
        .lines()
        .find(|l| l.starts_with("▸"))
        .expect("a selected row");
    assert!(
        first_row.contains("64.00 MiB activation layer2.attn"),
        "{first_row}"
    );
    // A 256 KiB view keeps the 64 MiB storage: the flag says how much.
    assert!(
        first_row.contains("⚑ 256.0 KiB view keeps 64.00 MiB"),
        "{first_row}"
    );
    h.press("<Enter>");
    let s = h.screen();
    assert!(s.contains("model.py:31 attention"), "{s}");
    assert!(s.contains("model.py:25 forward"), "{s}");
    assert!(s.contains("attn_probe"), "{s}");
    assert!(
        s.contains("retained by view: a 256.0 KiB view keeps 64.00 MiB alive; base release"),
        "{s}"
    );
}

#[test]
fn design_example_view_retains_only_between_t12_and_t30() {
    let mut h = Harness::open(&fixture("design.jsonl"), 100, 30);
    // Event lines: 0 reserve, 1 external, 2 sample, 3 mark, 4 alloc fc.weight, 5 view,
    // 6 release base (t=12), 7 release view (t=30).
    h.press("<Home>");
    for (steps, retained) in [(5, false), (6, true), (7, false)] {
        h.press("<Home>");
        for _ in 0..steps {
            h.press("l");
        }
        let s = h.screen();
        assert!(s.contains(&format!("cursor #{steps} ")), "{s}");
        assert_eq!(
            s.contains("⚑ 4.000 KiB view keeps 4.000 MiB"),
            retained,
            "#{steps}: {s}"
        );
    }
    // The peak is external 64 MiB + fc.weight 4 MiB = 68 MiB, first reached at #4 (t=10 in
    // the file, whose first event is at t=5: +5 µs; `T` shows the file's value).
    h.press("p");
    assert!(h.screen().contains("cursor #4 t=+5.000 µs  68.00 MiB"));
    h.press("T");
    assert!(h.screen().contains("cursor #4 t=10.000 µs  68.00 MiB"));
}

#[test]
fn search_highlights_matches_in_the_live_set_and_reports_the_jump() {
    let mut h = Harness::open(&fixture("train3.jsonl"), 100, 30);
    h.press("<Home>/probe<Enter>");
    let s = h.screen();
    // "probe" matches the view attn_probe → its storage, step 2's attention (64 MiB).
    assert!(s.contains("match 1/1: 64.00 MiB layer2.attn"), "{s}");
    // The jump lands inside its lifetime at the highest total: the global peak, #30.
    assert!(s.contains("cursor #30 "), "{s}");
}

#[test]
fn docs_keys_md_matches_the_keymap() {
    let want = memtide::tui::keymap::markdown();
    let path = root().join("docs/keys.md");
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::create_dir_all(root().join("docs")).unwrap();
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).expect("docs/keys.md (UPDATE_DOCS=1 writes it)");
    assert_eq!(
        have, want,
        "docs/keys.md is stale: rerun with UPDATE_DOCS=1"
    );
}

#[test]
fn docs_screen_txt_matches_the_renderer() {
    let mut h = Harness::open(&fixture("train3.jsonl"), 100, 30);
    h.press("p");
    let want = h.screen();
    let path = root().join("docs/screen.txt");
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::create_dir_all(root().join("docs")).unwrap();
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).expect("docs/screen.txt (UPDATE_DOCS=1 writes it)");
    assert_eq!(
        have, want,
        "docs/screen.txt is stale: rerun with UPDATE_DOCS=1"
    );
}

#[test]
fn peak_marker_sits_above_the_peak_column() {
    let h = Harness::open(&fixture("train3.jsonl"), 80, 24);
    let s = h.screen();
    let lines: Vec<Vec<char>> = s.lines().map(|l| l.chars().collect()).collect();
    let l = h.explorer().layout(h.app.shared.width, h.app.shared.height);
    // The cursor starts at the peak: its ▲ on the axis row and the ▼ share a column.
    let axis = &lines[l.axis.y as usize];
    let cx = axis
        .iter()
        .position(|&c| c == '▲')
        .expect("cursor on the axis row");
    let marker_rows: Vec<usize> = (l.plot.y..l.plot.bottom())
        .map(|y| y as usize)
        .filter(|&y| lines[y].get(cx) == Some(&'▼'))
        .collect();
    assert_eq!(marker_rows.len(), 1, "{s}");
    // 288 of 512 MiB on 8 rows is 4.5 rows: the marker is in the 6th row from the bottom.
    assert_eq!(l.plot.bottom() as usize - 1 - marker_rows[0], 5, "{s}");
}

/// Text from the file never reaches the screen with characters that disguise or break it: a
/// bidi override, a zero-width space, a tag character and a line separator in a name are
/// shown escaped.
#[test]
fn names_with_format_characters_are_shown_escaped() {
    let dir = tempfile::tempdir().expect("tmp");
    let name = "evil\u{202e}gpj.exe\u{200b}x\u{e0041}\u{2028}y";
    let header = r#"{"memtide":1,"device":"cuda:0","clock":"us"}"#;
    let alloc = serde_json::json!({"t": 1, "op": "alloc", "id": 1, "size": 4096, "cat": "activation", "name": name});
    let p = dir.path().join("spoof.jsonl");
    std::fs::write(&p, format!("{header}\n{alloc}\n")).expect("write");
    let h = Harness::open(&p, 120, 30);
    let screen = h.screen();
    for c in ['\u{202e}', '\u{200b}', '\u{e0041}', '\u{2028}'] {
        assert!(
            !screen.contains(c),
            "U+{:04X} on screen:\n{screen}",
            u32::from(c)
        );
    }
    assert!(screen.contains("evil\\u{202e}gpj.exe"), "{screen}");
}

/// The help overlay taller than the screen scrolls with j/k ↑↓ PgUp PgDn (clamped to its
/// end) and closes on any other key; where it fits, every key closes it.
#[test]
fn help_scrolls_where_it_does_not_fit_and_closes_on_any_other_key() {
    let mut h = Harness::open(&fixture("train3.jsonl"), 80, 24);
    h.press("?");
    assert!(h.screen().contains("keys 1–22 of 41"), "{}", h.screen());
    h.press("j");
    assert!(h.app.shared.help, "j scrolls, the overlay stays");
    assert!(h.screen().contains("keys 2–23 of 41"), "{}", h.screen());
    h.press("<PgDn><PgDn><PgDn>");
    assert!(
        h.screen().contains("keys 20–41 of 41"),
        "clamped: {}",
        h.screen()
    );
    assert!(h.screen().contains("click"), "the last binding is shown");
    h.press("<PgUp><PgUp><PgUp>k");
    assert!(h.screen().contains("keys 1–22 of 41"), "{}", h.screen());
    h.press("x");
    assert!(!h.app.shared.help, "any other key closes");
    // Reopened, it starts at the top.
    h.press("?<PgDn>?");
    assert!(!h.app.shared.help);
    h.press("?");
    assert!(h.screen().contains("keys 1–22 of 41"));
    let mut big = Harness::open(&fixture("train3.jsonl"), 200, 50);
    big.press("?j");
    assert!(!big.app.shared.help, "where it all fits, j closes it");
}
