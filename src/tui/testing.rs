//! Headless driving for tests: a key-macro parser (`"p<Enter>"`) and a harness that runs
//! keys through the real keymap → update, executes effects inline (load, search) and renders
//! on ratatui's `TestBackend`.

use super::app::App;
use super::effect::Effect;
use super::explorer::{ExplorerState, FollowState};
use super::msg::Msg;
use super::runtime::workers;
use super::theme::Theme;
use super::{ui, update};
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Terminal;
use std::path::Path;

/// Parses a key macro: plain characters, and `<Enter>`, `<Esc>`, `<Left>`, `<Right>`,
/// `<Up>`, `<Down>`, `<Home>`, `<End>`, `<PgUp>`, `<PgDn>`, `<BS>`, `<C-c>`.
pub fn keys(s: &str) -> Vec<KeyEvent> {
    let mut out = Vec::new();
    let mut it = s.chars().peekable();
    while let Some(c) = it.next() {
        if c == '<' {
            let mut name = String::new();
            for d in it.by_ref() {
                if d == '>' {
                    break;
                }
                name.push(d);
            }
            let (code, m) = match name.as_str() {
                "Enter" | "CR" => (KeyCode::Enter, KeyModifiers::NONE),
                "Esc" => (KeyCode::Esc, KeyModifiers::NONE),
                "Left" => (KeyCode::Left, KeyModifiers::NONE),
                "Right" => (KeyCode::Right, KeyModifiers::NONE),
                "Up" => (KeyCode::Up, KeyModifiers::NONE),
                "Down" => (KeyCode::Down, KeyModifiers::NONE),
                "Home" => (KeyCode::Home, KeyModifiers::NONE),
                "End" => (KeyCode::End, KeyModifiers::NONE),
                "PgUp" => (KeyCode::PageUp, KeyModifiers::NONE),
                "PgDn" => (KeyCode::PageDown, KeyModifiers::NONE),
                "BS" => (KeyCode::Backspace, KeyModifiers::NONE),
                "C-c" => (KeyCode::Char('c'), KeyModifiers::CONTROL),
                "lt" => (KeyCode::Char('<'), KeyModifiers::NONE),
                _ => continue,
            };
            out.push(KeyEvent::new(code, m));
        } else {
            out.push(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
        }
    }
    out
}

/// An app driven synchronously: every effect runs inline before the next key.
pub struct Harness {
    pub app: App,
    /// Texts sent to the clipboard.
    pub clipboard: Vec<String>,
}

impl Harness {
    /// Loads `path` (inline) into an app of the given size with the default theme.
    pub fn open(path: &Path, width: u16, height: u16) -> Harness {
        Harness::open_with(path, width, height, Theme::default(), false)
    }

    /// Loads `path` in follow mode (`-f`); tests feed `Msg::Tail` themselves.
    pub fn open_follow(path: &Path, width: u16, height: u16) -> Harness {
        let mut app = App::new(
            path.to_path_buf(),
            Default::default(),
            Theme::default(),
            false,
        );
        if let Some(ex) = app.explorer_mut() {
            ex.follow = Some(FollowState::new(crate::follow::WatchMode::Notify));
        }
        Harness::with_app(app, width, height)
    }

    pub fn open_with(path: &Path, width: u16, height: u16, theme: Theme, ascii: bool) -> Harness {
        let app = App::new(path.to_path_buf(), Default::default(), theme, ascii);
        Harness::with_app(app, width, height)
    }

    /// The ranks overview of `inputs` (a directory, or files), every file read inline.
    pub fn open_ranks(inputs: &[std::path::PathBuf], width: u16, height: u16) -> Harness {
        let d = memtide_core::ranks::discover(inputs).unwrap_or_default();
        let title = match inputs {
            [one] => one.display().to_string(),
            many => format!("{} files", many.len()),
        };
        let st = super::ranks::RanksState::new(title, d, Default::default());
        Harness::with_app(App::new_ranks(st, Theme::default(), false), width, height)
    }

    /// Drives a prepared app (the lab or diff screen) at the given size; runs its first
    /// effects (the diff's loads) inline.
    pub fn with_app(app: App, width: u16, height: u16) -> Harness {
        let mut h = Harness {
            app,
            clipboard: Vec::new(),
        };
        h.send(Msg::Resize { width, height });
        let fx = update::start(&mut h.app);
        h.run(fx);
        h
    }

    /// Sends one message and runs the resulting effects (and theirs) to completion.
    pub fn send(&mut self, msg: Msg) {
        let fx = update::update(&mut self.app, msg);
        self.run(fx);
    }

    fn run(&mut self, mut fx: Vec<Effect>) {
        while let Some(e) = fx.pop() {
            let msg = match e {
                Effect::Load {
                    gen,
                    path,
                    opts,
                    progress,
                } => Msg::Loaded {
                    gen,
                    result: workers::load(&path, &opts, &progress),
                },
                Effect::LoadFollow {
                    gen,
                    path,
                    opts,
                    progress,
                    waiting,
                } => {
                    // Inline, a missing file is not waited for: the load is cancelled.
                    if !crate::follow::appeared(&path) {
                        progress.cancel();
                    }
                    Msg::FollowLoaded {
                        gen,
                        result: workers::load_follow(&path, &opts, &progress, &waiting),
                    }
                }
                // Tests feed `Msg::Tail` themselves; no watcher thread.
                Effect::Tail { .. } => continue,
                Effect::Search {
                    gen,
                    query,
                    device,
                    at,
                } => workers::search(gen, &query, &device, at),
                Effect::Live {
                    gen,
                    at,
                    group,
                    device,
                } => workers::live(&(gen, at, group, device)),
                Effect::LoadRanks {
                    gen,
                    files,
                    opts,
                    progress,
                    ..
                } => {
                    // One thread, in file order: the same rows, reproducibly.
                    for m in workers::load_ranks(gen, &files, &opts, 1, &progress) {
                        fx.extend(update::update(&mut self.app, m));
                    }
                    continue;
                }
                Effect::Whatif { gen, device, conf } => Msg::WhatifDone {
                    gen,
                    result: super::explorer::whatif::simulate(&device, conf.as_ref()).map(Box::new),
                },
                Effect::Wait { device, fact } => {
                    fact.wait(&device);
                    Msg::Ready(fact)
                }
                Effect::Copy(t) => {
                    self.clipboard.push(t);
                    continue;
                }
                Effect::WriteFile {
                    path,
                    bytes,
                    inputs,
                } => {
                    let inputs: Vec<&std::path::Path> =
                        inputs.iter().map(|p| p.as_path()).collect();
                    Msg::Wrote {
                        result: crate::output_file::write_atomically(&path, &bytes, &inputs)
                            .map_err(|e| format!("{e:#}")),
                        path,
                    }
                }
                Effect::Quit => continue,
            };
            fx.extend(update::update(&mut self.app, msg));
        }
    }

    /// The explorer's state (tests of the explorer page).
    ///
    /// # Panics
    /// When another page is shown: the test drives the wrong screen.
    pub fn explorer(&self) -> &ExplorerState {
        match self.app.explorer() {
            Some(ex) => ex,
            None => panic!("the explorer is not the page shown"),
        }
    }

    /// Presses a key macro (see [`keys`]).
    pub fn press(&mut self, macro_keys: &str) -> &mut Self {
        for k in keys(macro_keys) {
            self.send(Msg::Key(k));
        }
        self
    }

    /// Renders the current state at the app's size; returns the screen as text lines.
    pub fn screen(&self) -> String {
        let backend = TestBackend::new(self.app.shared.width, self.app.shared.height);
        let Ok(mut term) = Terminal::new(backend);
        let _ = term.draw(|f| ui::draw(f, &self.app));
        buffer_text(term.backend().buffer())
    }

    /// Renders into a terminal (for insta snapshots of the backend).
    pub fn terminal(&self) -> Terminal<TestBackend> {
        let backend = TestBackend::new(self.app.shared.width, self.app.shared.height);
        let Ok(mut term) = Terminal::new(backend);
        let _ = term.draw(|f| ui::draw(f, &self.app));
        term
    }
}

/// A buffer as plain text, one line per row (trailing spaces trimmed).
pub fn buffer_text(buf: &ratatui::buffer::Buffer) -> String {
    let a = buf.area;
    let mut s = String::new();
    for y in a.y..a.bottom() {
        let mut line = String::new();
        for x in a.x..a.right() {
            line.push_str(buf[(x, y)].symbol());
        }
        s.push_str(line.trim_end());
        s.push('\n');
    }
    s
}
