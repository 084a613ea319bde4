//! Follow mode in the explorer's reducer: appends extend the trace and the index, a higher
//! peak lights the notice, moving the cursor pauses following, `F` resumes, truncation and
//! replacement trigger a background reload, stale tail messages are dropped, a bad appended
//! line stops following with the reader's message.

use memtide::follow::TailEvent;
use memtide::tui::effect::Effect;
use memtide::tui::msg::Msg;
use memtide::tui::testing::Harness;
use std::time::{Duration, Instant};

const HEADER: &str = "{\"memtide\":1}\n";

fn alloc(t: u64, id: u64, bytes: u64) -> String {
    format!("{{\"t\":{t},\"op\":\"alloc\",\"id\":{id},\"size\":{bytes},\"cat\":\"activation\"}}\n")
}

fn setup() -> (tempfile::TempDir, Harness) {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("run.jsonl");
    std::fs::write(
        &p,
        format!("{HEADER}{}{}", alloc(1, 1, 100), alloc(2, 2, 50)),
    )
    .expect("write");
    let h = Harness::open_follow(&p, 100, 30);
    (dir, h)
}

fn tail_gen(h: &Harness) -> u64 {
    h.explorer().follow.as_ref().expect("following").tail_gen
}

fn append(h: &mut Harness, text: &str, now: Instant) {
    let gen = tail_gen(h);
    h.send(Msg::Tail {
        gen,
        event: TailEvent::Appended(text.as_bytes().to_vec()),
        now,
    });
}

fn peak(h: &Harness) -> u64 {
    h.explorer()
        .device()
        .and_then(|d| d.peak)
        .expect("peak")
        .bytes
        .0
}

#[test]
fn appends_extend_and_light_the_new_peak() {
    let (_d, mut h) = setup();
    assert_eq!(peak(&h), 150);
    assert_eq!(h.explorer().device().expect("dev").len(), 2);
    let now = Instant::now();
    append(&mut h, &alloc(3, 3, 1000), now);
    // t=3 is the newest equal-t group: applied at the next t, or after a quiet moment.
    assert_eq!(h.explorer().device().expect("dev").len(), 2);
    h.send(Msg::Tick {
        now: now + Duration::from_millis(300),
    });
    let dev = h.explorer().device().expect("dev");
    assert_eq!(dev.len(), 3);
    assert_eq!(peak(&h), 1150);
    let f = h.explorer().follow.as_ref().expect("f");
    assert!(f.flashing(now + Duration::from_millis(400)));
    assert!(h.screen().contains("new peak"), "{}", h.screen());
    // Following keeps the newest event under the cursor.
    assert_eq!(h.explorer().view.cursor.0, 2);
    // A torn line waits for its newline; then both lines apply.
    append(
        &mut h,
        "{\"t\":4,\"op\":\"free\",\"id\":3}\n{\"t\":5,\"op\":\"al",
        now,
    );
    append(&mut h, "loc\",\"id\":4,\"size\":7,\"cat\":\"temp\"}\n", now);
    h.send(Msg::Tick {
        now: now + Duration::from_secs(1),
    });
    assert_eq!(h.explorer().device().expect("dev").len(), 5);
    assert_eq!(
        h.explorer()
            .device()
            .expect("dev")
            .index
            .total(memtide_core::trace::Seq(4))
            .0,
        157
    );
}

#[test]
fn moving_the_cursor_pauses_and_f_resumes() {
    let (_d, mut h) = setup();
    assert!(h.explorer().follow.as_ref().expect("f").on);
    h.press("h");
    assert!(
        !h.explorer().follow.as_ref().expect("f").on,
        "a cursor move pauses following"
    );
    let before = h.explorer().view.cursor;
    let now = Instant::now();
    append(&mut h, &(alloc(3, 3, 10) + &alloc(4, 4, 10)), now);
    assert_eq!(
        h.explorer().view.cursor,
        before,
        "paused: the cursor stays where the user put it"
    );
    h.press("F");
    assert!(h.explorer().follow.as_ref().expect("f").on);
    let last = h.explorer().device().expect("dev").last();
    assert_eq!(
        h.explorer().view.cursor,
        last,
        "resuming jumps to the newest event"
    );
}

#[test]
fn truncation_reloads_in_the_background_and_stale_tails_are_dropped() {
    let (d, mut h) = setup();
    let old_gen = tail_gen(&h);
    let p = d.path().join("run.jsonl");
    std::fs::write(&p, format!("{HEADER}{}", alloc(1, 9, 4242))).expect("rewrite");
    // The harness runs the reload inline: the new content is shown.
    h.send(Msg::Tail {
        gen: old_gen,
        event: TailEvent::Reload("the file was truncated"),
        now: Instant::now(),
    });
    assert_eq!(peak(&h), 4242);
    assert_ne!(
        tail_gen(&h),
        old_gen,
        "a new tail generation after the reload"
    );
    // A late message of the old watcher changes nothing.
    h.send(Msg::Tail {
        gen: old_gen,
        event: TailEvent::Appended(alloc(5, 5, 1 << 30).into_bytes()),
        now: Instant::now(),
    });
    h.send(Msg::Tick {
        now: Instant::now() + Duration::from_secs(1),
    });
    assert_eq!(peak(&h), 4242);
}

#[test]
fn reload_asks_for_a_follow_load() {
    let (_d, mut h) = setup();
    let gen = tail_gen(&h);
    let fx = memtide::tui::update::update(
        &mut h.app,
        Msg::Tail {
            gen,
            event: TailEvent::Reload("the file was replaced"),
            now: Instant::now(),
        },
    );
    assert!(
        matches!(fx.as_slice(), [Effect::LoadFollow { .. }]),
        "{fx:?}"
    );
    assert!(h
        .app
        .shared
        .status
        .as_deref()
        .unwrap_or("")
        .contains("replaced"));
}

#[test]
fn a_bad_appended_line_stops_following_with_the_reason() {
    let (_d, mut h) = setup();
    append(
        &mut h,
        "{\"t\":9,\"op\":\"alloc\",\"id\":7,\"size\":-1}\n",
        Instant::now(),
    );
    let f = h.explorer().follow.as_ref().expect("f");
    assert!(
        f.error.as_deref().unwrap_or("").contains("non-negative"),
        "{:?}",
        f.error
    );
    assert!(h.screen().contains("follow stopped"));
}

/// Issue 47 item 7 in the explorer: the followed file rewritten in place, past its old
/// length and never shorter (a restarted job): the tail worker's `Tailer` calls it a
/// rewrite, not an append, and the reload shows the new run's 200 GiB from the start.
#[test]
fn a_rewrite_in_place_reloads_the_new_run() {
    let (d, mut h) = setup();
    let p = d.path().join("run.jsonl");
    let len = std::fs::metadata(&p).expect("stat").len();
    let mut tail = memtide::follow::Tailer::new(&p, len, true);
    let new = format!(
        "{HEADER}{}{}{}",
        alloc(1, 1, 200 << 30),
        alloc(2, 2, 50),
        alloc(3, 3, 1)
    );
    assert!(new.len() as u64 > len);
    crate::support::files::overwrite_in_place(&p, new.as_bytes());
    let event = tail.poll().expect("poll").expect("a change");
    assert_eq!(
        event,
        TailEvent::Reload("the file was rewritten in place (the bytes already read changed)")
    );
    let gen = tail_gen(&h);
    h.send(Msg::Tail {
        gen,
        event,
        now: Instant::now(),
    });
    assert_eq!(peak(&h), (200 << 30) + 51);
    assert!(
        h.app
            .shared
            .status
            .as_deref()
            .unwrap_or("")
            .contains("rewritten in place"),
        "{:?}",
        h.app.shared.status
    );
}

/// A followed snapshot of two GPUs, reloaded whole on change: the reload keeps the device on
/// screen, not the one the file opened on (the OOM's device, `cuda:1`, by the core's rule).
#[test]
fn a_reload_keeps_the_device_the_user_moved_to() {
    let dir = tempfile::tempdir().expect("tmp");
    let p = dir.path().join("snapshot.pickle");
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/oom/oom_second_device.pickle");
    std::fs::copy(&fixture, &p).expect("copy");
    let mut h = Harness::open_follow(&p, 100, 30);
    let shown = |h: &Harness| h.explorer().device().expect("dev").trace.device.clone();
    assert_eq!(
        shown(&h),
        "cuda:1",
        "opened on the device that ran out of memory"
    );
    h.press("d");
    assert_eq!(shown(&h), "cuda:0");
    let gen = tail_gen(&h);
    h.send(Msg::Tail {
        gen,
        event: TailEvent::Reload("the file was replaced"),
        now: Instant::now(),
    });
    assert_eq!(shown(&h), "cuda:0", "the reload kept the device on screen");
    assert_ne!(tail_gen(&h), gen, "the reload did run");
}
