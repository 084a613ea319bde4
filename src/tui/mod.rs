//! The terminal explorer (`memtide FILE`), Elm-shaped: input → [`keymap`] → [`action::Action`]
//! → [`update::update`] (the only mutator, no I/O) → [`effect::Effect`]s run by the
//! [`runtime`] on worker threads → [`msg::Msg`]s back; [`ui::draw`] is pure.
//!
//! It takes plain options (paths, [`memtide_core::open::OpenOptions`], a theme) and ends
//! with an [`app::Outcome`]; the command line (`crate::cli::explore`) builds the app and maps
//! the outcome to an exit status, so nothing here depends on `cli`.

pub mod action;
pub mod app;
pub mod details;
pub mod device;
pub mod diffview;
pub mod effect;
pub mod explorer;
pub mod fairpanel;
pub mod find;
pub mod fmt;
pub mod keymap;
pub mod lab;
pub mod layout;
pub mod liveset;
pub mod msg;
pub mod ranks;
pub mod runtime;
pub mod shared;
pub mod testing;
pub mod theme;
pub mod tree;
pub mod ui;
pub mod update;
pub mod view;

use anyhow::{bail, Result};
use std::io::IsTerminal;

/// Runs `app` in this terminal (refused when stdout is not one: `what` names the screen and
/// `instead` the command to use) until the user quits.
pub fn run_in_terminal(app: app::App, what: &str, instead: &str) -> Result<app::Outcome> {
    if !std::io::stdout().is_terminal() {
        bail!("{what} needs a terminal; {instead}");
    }
    runtime::run(app)
}

/// The theme named on the command line (or the default), plain under `NO_COLOR`.
pub fn theme(name: Option<&str>) -> Result<theme::Theme> {
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    theme::Theme::resolve(name, no_color)
}
