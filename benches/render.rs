//! Render benchmarks (criterion, TestBackend): one full 200×60 frame on a 10 k-event and a
//! 10 M-event synthetic training trace, and moving the cursor (update + draw) on 10 M.
//! The trace is built directly (steps of forward activations, workspaces, backward frees),
//! so the bench measures the UI, not the reader.

#![allow(clippy::unwrap_used)]

use criterion::{criterion_group, criterion_main, Criterion};
use memtide::tui::action::{Action, ExplorerAction};
use memtide::tui::app::{App, Device};
use memtide::tui::effect::Effect;
use memtide::tui::msg::Msg;
use memtide::tui::theme::Theme;
use memtide::tui::{ui, update};
use memtide_core::index::Index;
use memtide_core::trace::{
    Bytes, Category, EventKind, Mark, MarkKind, StackId, StorageKind, Trace, Ts,
};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

/// About `events` events: 64 params, then steps of ~10 k events (activations up to ~2 k live,
/// workspace pairs, frees in reverse).
fn synthetic(events: usize) -> Trace {
    let mut t = Trace::new("cuda:0", "synthetic", "jsonl");
    let frames: Vec<_> = (0..200)
        .map(|i| {
            let f = t
                .strings
                .intern(&format!("model.py:{i} layer{}.forward", i % 48));
            let g = t.strings.intern("train.py:40 train_step");
            t.strings.intern_stack(&[f, g])
        })
        .collect();
    let names: Vec<_> = (0..200)
        .map(|i| t.strings.intern(&format!("act{i}")))
        .collect();
    let mut ts = 0i64;
    let mut src = 0u64;
    let mut next = |t: &mut Trace, k: EventKind| {
        ts += 1000;
        t.push_event(Ts(ts), k)
    };
    for i in 0..64u64 {
        next(&mut t, EventKind::Alloc);
        t.open(
            Bytes(4 << 20),
            Category::Param,
            StorageKind::Block,
            names[0],
            frames[0],
            i,
        );
    }
    let mut step = 0;
    while t.len() < events {
        let at = next(&mut t, EventKind::Mark);
        let name = t.strings.intern(&format!("step {step}"));
        t.add_mark(Mark {
            at,
            ts: t.ts(at),
            name,
            kind: MarkKind::Step,
            end: None,
            size: None,
            free: None,
            stack: StackId(0),
        });
        let mut live = Vec::new();
        let acts = 2000 + (step % 7) * 100;
        for a in 0..acts {
            next(&mut t, EventKind::Alloc);
            let sz = ((a * 7919) % 64 + 1) as u64 * (1 << 16);
            let id = t.open(
                Bytes(sz),
                Category::Activation,
                StorageKind::Block,
                names[a % 200],
                frames[a % 200],
                src,
            );
            src += 1;
            live.push(id);
            if a % 3 == 0 {
                next(&mut t, EventKind::Alloc);
                let w = t.open(
                    Bytes(1 << 20),
                    Category::Workspace,
                    StorageKind::Block,
                    names[1],
                    frames[1],
                    src,
                );
                src += 1;
                next(&mut t, EventKind::Free);
                t.close(w);
            }
            if t.len() >= events {
                break;
            }
        }
        while let Some(id) = live.pop() {
            if t.len() >= events {
                break;
            }
            next(&mut t, EventKind::Free);
            t.close(id);
        }
        step += 1;
    }
    t
}

fn app_for(events: usize, w: u16, h: u16) -> App {
    let trace = synthetic(events);
    let index = Index::build(&trace);
    let dev = Arc::new(Device::new(trace, index));
    let mut app = App::new(
        "synthetic.jsonl".into(),
        Default::default(),
        Theme::default(),
        false,
    );
    let fx = update::start(&mut app);
    let gen = match &fx[..] {
        [Effect::Load { gen, .. }] => *gen,
        _ => 0,
    };
    update::update(
        &mut app,
        Msg::Resize {
            width: w,
            height: h,
        },
    );
    update::update(
        &mut app,
        Msg::Loaded {
            gen,
            result: Ok(vec![dev]),
        },
    );
    app
}

fn full_frame(c: &mut Criterion, label: &str, app: &App) {
    let mut term = Terminal::new(TestBackend::new(200, 60)).unwrap();
    c.bench_function(label, |b| {
        b.iter(|| {
            // clear() drops the previous buffer, so every cell is diffed and written.
            term.clear().unwrap();
            term.draw(|f| ui::draw(f, black_box(app))).unwrap();
        })
    });
}

fn render_only(c: &mut Criterion, label: &str, app: &App) {
    let area = ratatui::layout::Rect::new(0, 0, 200, 60);
    let mut buf = ratatui::buffer::Buffer::empty(area);
    c.bench_function(label, |b| {
        b.iter(|| {
            buf.reset();
            ui::render(&mut buf, area, black_box(app));
        })
    });
}

fn benches(c: &mut Criterion) {
    let small = app_for(10_000, 200, 60);
    full_frame(c, "frame_200x60_10k_events", &small);
    render_only(c, "render_only_200x60_10k_events", &small);
    drop(small);
    let mut big = app_for(10_000_000, 200, 60);
    full_frame(c, "frame_200x60_10M_events", &big);
    render_only(c, "render_only_200x60_10M_events", &big);

    let mut term = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let mut right = true;
    c.bench_function("cursor_move_10M_events (update+draw)", |b| {
        b.iter(|| {
            let a = if right {
                Action::Explorer(ExplorerAction::CursorRight)
            } else {
                Action::Explorer(ExplorerAction::CursorLeft)
            };
            right = !right;
            update::update(&mut big, Msg::Action(a));
            term.draw(|f| ui::draw(f, &big)).unwrap();
        })
    });
    // Zoomed in, paging recomputes every column (worst case of a cursor move).
    for _ in 0..6 {
        update::update(
            &mut big,
            Msg::Action(Action::Explorer(ExplorerAction::ZoomIn)),
        );
    }
    let mut fwd = true;
    c.bench_function("page_move_zoomed_10M_events (update+draw)", |b| {
        b.iter(|| {
            let a = if fwd {
                Action::Explorer(ExplorerAction::PageRight)
            } else {
                Action::Explorer(ExplorerAction::PageLeft)
            };
            fwd = !fwd;
            update::update(&mut big, Msg::Action(a));
            term.draw(|f| ui::draw(f, &big)).unwrap();
        })
    });
}

/// A trace whose live set grows to `n` storages (worst case for the live panel).
fn many_live(n: usize) -> Trace {
    let mut t = Trace::new("cuda:0", "many-live", "jsonl");
    let f = t.strings.intern("model.py:1 forward");
    let stack = t.strings.intern_stack(&[f]);
    let name = t.strings.intern("act");
    for i in 0..n {
        t.push_event(Ts(i as i64), EventKind::Alloc);
        t.open(
            Bytes(4096 + (i as u64 * 7919) % 65536),
            Category::Activation,
            StorageKind::Block,
            name,
            stack,
            i as u64,
        );
    }
    t
}

fn big_live_set(c: &mut Criterion) {
    let trace = many_live(500_000);
    let index = Index::build(&trace);
    let dev = Arc::new(Device::new(trace, index));
    let mut app = App::new(
        "many.jsonl".into(),
        Default::default(),
        Theme::default(),
        false,
    );
    let fx = update::start(&mut app);
    let gen = match &fx[..] {
        [Effect::Load { gen, .. }] => *gen,
        _ => 0,
    };
    update::update(
        &mut app,
        Msg::Resize {
            width: 200,
            height: 60,
        },
    );
    update::update(
        &mut app,
        Msg::Loaded {
            gen,
            result: Ok(vec![dev]),
        },
    );
    let d = app.explorer().expect("explorer").device().unwrap().clone();
    c.bench_function("live_set_500k_live (worker compute)", |b| {
        b.iter(|| {
            memtide::tui::liveset::compute(
                &d.trace,
                &d.index,
                memtide_core::trace::Seq(400_000),
                memtide::tui::app::GroupMode::List,
            )
        })
    });
    let mut term = Terminal::new(TestBackend::new(200, 60)).unwrap();
    let mut right = false;
    c.bench_function(
        "cursor_move_500k_live (update+draw; live set on the worker)",
        |b| {
            b.iter(|| {
                let a = if right {
                    Action::Explorer(ExplorerAction::CursorRight)
                } else {
                    Action::Explorer(ExplorerAction::CursorLeft)
                };
                right = !right;
                update::update(&mut app, Msg::Action(a));
                term.draw(|f| ui::draw(f, &app)).unwrap();
            })
        },
    );
}

criterion_group! {
    name = render;
    config = Criterion::default()
        .sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    targets = benches, big_live_set
}
criterion_main!(render);
