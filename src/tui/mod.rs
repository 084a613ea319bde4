//! The terminal explorer (`memtide FILE`), Elm-shaped: input → [`keymap`] → [`action::Action`]
//! → [`update::update`] (the only mutator, no I/O) → [`effect::Effect`]s run by the
//! [`runtime`] on worker threads → [`msg::Msg`]s back; [`ui::draw`] is pure.

pub mod action;
pub mod app;
pub mod details;
pub mod diffview;
pub mod effect;
pub mod find;
pub mod fmt;
pub mod follow;
pub mod keymap;
pub mod lab;
pub mod layout;
pub mod liveset;
pub mod msg;
pub mod picture;
pub mod runtime;
pub mod testing;
pub mod theme;
pub mod ui;
pub mod update;
pub mod view;

use crate::cli::ExploreArgs;
use anyhow::{bail, Result};
use std::io::IsTerminal;
use std::process::ExitCode;

/// Opens the explorer on the given files.
pub fn run_explore(args: &ExploreArgs) -> Result<ExitCode> {
    if let [a, b] = args.files.as_slice() {
        // Two files: compare them.
        return open_diff(a, b, &args.input, args.theme.as_deref(), args.ascii);
    }
    let Some(path) = args.files.first() else {
        bail!("no trace file given: usage `memtide FILE` (or `memtide --help`)");
    };
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let theme = theme::Theme::resolve(args.theme.as_deref(), no_color)?;
    if !std::io::stdout().is_terminal() {
        bail!("the explorer needs a terminal; for a report use `memtide summary FILE`");
    }
    let mut app = app::App::new(
        path.clone(),
        crate::cli::load::load_options(&args.input),
        theme,
        args.ascii,
    );
    app.device_want = args.input.device.clone();
    if args.follow.follow || args.follow.poll.is_some() {
        app.follow = Some(follow::FollowState::new(args.follow.mode()));
    }
    if args.files.len() > 1 {
        app.status = Some("showing the first file only".into());
    }
    let code = runtime::run(app)?;
    Ok(ExitCode::from(code))
}

/// Opens the cache lab screen (starts empty: the prediction is read before any step).
pub fn run_lab(args: &crate::cli::LabArgs) -> Result<ExitCode> {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let theme = theme::Theme::resolve(None, no_color)?;
    if !std::io::stdout().is_terminal() {
        bail!("the lab screen needs a terminal; use `memtide lab --json` or `--text`");
    }
    let app = lab::app(args.capacity as usize, args.stride, theme, false);
    let code = runtime::run(app)?;
    Ok(ExitCode::from(code))
}

/// Opens the diff screen on runs `a` and `b` (`memtide diff A B` in a terminal).
pub fn run_diff(
    a: &std::path::Path,
    b: &std::path::Path,
    input: &crate::cli::InputArgs,
) -> Result<ExitCode> {
    open_diff(a, b, input, None, false)
}

fn open_diff(
    a: &std::path::Path,
    b: &std::path::Path,
    input: &crate::cli::InputArgs,
    theme: Option<&str>,
    ascii: bool,
) -> Result<ExitCode> {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let theme = theme::Theme::resolve(theme, no_color)?;
    if !std::io::stdout().is_terminal() {
        bail!("the diff screen needs a terminal; for a report use `memtide diff A B`");
    }
    let mut app = diffview::app(
        a.to_path_buf(),
        b.to_path_buf(),
        crate::cli::load::load_options(input),
        theme,
        ascii,
    );
    app.device_want = input.device.clone();
    let code = runtime::run(app)?;
    Ok(ExitCode::from(code))
}
