//! The sync runtime: one loop over a crossbeam channel (input thread, workers, ticks);
//! coalesces messages, runs effects, and draws at most ~60 frames per second when dirty.

pub mod input;
pub mod tail;
pub mod terminal;
pub mod workers;

use crate::tui::app::App;
use crate::tui::effect::Effect;
use crate::tui::msg::Msg;
use crate::tui::shared::Outcome;
use crate::tui::{ui, update};
use anyhow::{Context, Result};
use crossbeam_channel::{bounded, unbounded, Receiver, Sender};
use ratatui::crossterm::terminal::{BeginSynchronizedUpdate, EndSynchronizedUpdate};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const FRAME: Duration = Duration::from_millis(16);
/// Longest time spent applying queued messages before a frame goes out (a big append must
/// not freeze the screen or the keys).
const DRAIN_BUDGET: Duration = Duration::from_millis(8);
const TICK: Duration = Duration::from_millis(100);

/// Runs the explorer until the user quits; returns the exit code.
pub fn run(mut app: App) -> Result<Outcome> {
    let mut guard = terminal::TerminalGuard::new().context("cannot set up the terminal")?;
    let size = guard
        .terminal
        .size()
        .context("cannot read the terminal size")?;
    let (tx, rx) = unbounded::<Msg>();
    // The tail worker's channel holds one chunk: it reads the next only once the UI took the
    // last (back-pressure instead of a queue of megabytes ahead of the user's keys).
    let (tail_tx, tail_rx) = bounded::<Msg>(1);
    let stop = Arc::new(AtomicBool::new(false));
    let input = input::spawn(tx.clone(), stop.clone()).context("cannot start the input thread")?;
    let search = workers::spawn_latest(
        "memtide-search",
        tx.clone(),
        |r: &workers::SearchRequest| workers::search(r.0, &r.1, &r.2, r.3),
    )
    .context("cannot start the search thread")?;
    let live = workers::spawn_latest("memtide-live", tx.clone(), workers::live)
        .context("cannot start the live-set thread")?;
    let mut fx = update::start(&mut app);
    fx.extend(update::update(
        &mut app,
        Msg::Resize {
            width: size.width,
            height: size.height,
        },
    ));
    let mut last_draw: Option<Instant> = None;
    let mut last_tick = Instant::now();
    loop {
        if run_effects(
            &mut app,
            std::mem::take(&mut fx),
            &tx,
            &tail_tx,
            &search,
            &live,
        ) {
            break;
        }
        let due = last_draw.is_none_or(|t| t.elapsed() >= FRAME);
        if app.shared.dirty && due {
            app.take_dirty();
            let out = guard.terminal.backend_mut();
            let _ = ratatui::crossterm::queue!(out, BeginSynchronizedUpdate);
            guard
                .terminal
                .draw(|f| ui::draw(f, &app))
                .context("cannot draw")?;
            let out = guard.terminal.backend_mut();
            let _ = ratatui::crossterm::execute!(out, EndSynchronizedUpdate);
            last_draw = Some(Instant::now());
        }
        // Wait for a message, a tick, or the next frame if a redraw is pending.
        let wait = if app.shared.dirty {
            FRAME.saturating_sub(last_draw.map_or(FRAME, |t| t.elapsed()))
        } else {
            TICK.saturating_sub(last_tick.elapsed())
        };
        if let Some(m) = next_msg(&rx, &tail_rx, wait) {
            fx.extend(update::update(&mut app, m));
            // Coalesce what else is queued before drawing, within the budget.
            let start = Instant::now();
            while start.elapsed() < DRAIN_BUDGET && !app.shared.quit {
                match rx.try_recv().or_else(|_| tail_rx.try_recv()) {
                    Ok(m) => fx.extend(update::update(&mut app, m)),
                    Err(_) => break,
                }
            }
        }
        if last_tick.elapsed() >= TICK {
            last_tick = Instant::now();
            fx.extend(update::update(&mut app, Msg::Tick { now: last_tick }));
        }
        if app.shared.quit && fx.iter().all(|e| !matches!(e, Effect::Copy(_))) {
            break;
        }
    }
    stop.store(true, Ordering::Relaxed);
    drop(guard);
    let _ = input.join();
    Ok(app.shared.outcome)
}

/// Starts workers and performs terminal writes; true when the loop should end.
fn run_effects(
    app: &mut App,
    fx: Vec<Effect>,
    tx: &Sender<Msg>,
    tail_tx: &Sender<Msg>,
    search: &Sender<workers::SearchRequest>,
    live: &Sender<workers::LiveRequest>,
) -> bool {
    let mut quit = false;
    for e in fx {
        match e {
            Effect::Load {
                gen,
                path,
                opts,
                progress,
            } => workers::spawn_reader(
                gen,
                tx.clone(),
                move || workers::load(&path, &opts, &progress),
                |gen, result| Msg::Loaded { gen, result },
            ),
            Effect::LoadFollow {
                gen,
                path,
                opts,
                progress,
                waiting,
            } => workers::spawn_reader(
                gen,
                tx.clone(),
                move || workers::load_follow(&path, &opts, &progress, &waiting),
                |gen, result| Msg::FollowLoaded { gen, result },
            ),
            Effect::Tail {
                gen,
                path,
                offset,
                appendable,
                mode,
            } => tail::spawn(gen, path, offset, appendable, mode, tail_tx.clone()),
            Effect::Search {
                gen,
                query,
                device,
                at,
            } => {
                let _ = search.send((gen, query, device, at));
            }
            Effect::Live {
                gen,
                at,
                group,
                device,
            } => {
                let _ = live.send((gen, at, group, device));
            }
            Effect::LoadRanks {
                gen,
                files,
                opts,
                jobs,
                progress,
            } => workers::spawn_ranks(gen, files, opts, jobs, progress, tx.clone()),
            Effect::Whatif { gen, device, conf } => workers::spawn_reader(
                gen,
                tx.clone(),
                move || {
                    crate::tui::explorer::whatif::simulate(&device, conf.as_ref()).map(Box::new)
                },
                |gen, result| Msg::WhatifDone { gen, result },
            ),
            Effect::Wait { device, fact } => workers::wait_behind(device, fact, tx.clone()),
            Effect::Copy(text) => {
                let mut out = std::io::stdout();
                let _ = out.write_all(workers::osc52(&text).as_bytes());
                let _ = out.flush();
            }
            Effect::WriteFile {
                path,
                bytes,
                inputs,
            } => {
                let inputs: Vec<&std::path::Path> = inputs.iter().map(|p| p.as_path()).collect();
                let result = crate::output_file::write_atomically(&path, &bytes, &inputs)
                    .map_err(|e| format!("{e:#}"));
                let _ = tx.send(Msg::Wrote { path, result });
            }
            Effect::Quit => quit = true,
        }
    }
    quit || app.shared.quit
}

/// The next message from the UI channel or the tail worker, waiting at most `wait`.
fn next_msg(rx: &Receiver<Msg>, tail_rx: &Receiver<Msg>, wait: Duration) -> Option<Msg> {
    crossbeam_channel::select! {
        recv(rx) -> m => m.ok(),
        recv(tail_rx) -> m => m.ok(),
        default(wait) => None,
    }
}
