//! The reducer: `update(&mut App, Msg) -> Vec<Effect>` is the only mutator of the app state.
//! It maps input through the page's key table, handles what every page shares (size, quit,
//! the help overlay, the redraw flag) and hands the rest to the page's own reducer. No I/O:
//! slow work is asked for as effects and comes back as messages.

use super::action::Action;
use super::app::{App, Page};
use super::effect::Effect;
use super::explorer::{self, Screen};
use super::keymap;
use super::msg::Msg;
use super::{diffview, lab, ranks};

/// The first effects: load what the page shows.
pub fn start(app: &mut App) -> Vec<Effect> {
    let sh = &mut app.shared;
    match &mut app.page {
        Page::Explorer(ex) => explorer::update::start(sh, ex),
        Page::Diff(st) => diffview::start(sh, st),
        Page::Lab(_) => Vec::new(),
        Page::Ranks(st) => ranks::start(sh, st),
    }
}

/// Applies one message.
pub fn update(app: &mut App, msg: Msg) -> Vec<Effect> {
    // A message that changes nothing must not clear a redraw still pending (frame cap).
    let was_dirty = app.shared.dirty;
    app.shared.dirty = true;
    let fx = match msg {
        // Esc in a page opened from the ranks overview, with nothing of its own to close.
        Msg::Key(k) if keymap::is_back(&k) && ranks::esc_goes_back(app) => Some(ranks::back(app)),
        // The overview takes its rows while it waits under a rank's page.
        msg @ (Msg::RankStarted { .. } | Msg::RankLoaded { .. }) => ranks::deliver(app, msg),
        Msg::Key(k) => keymap::map_key(app.mode(), k).map(|a| action(app, a)),
        Msg::Mouse(m) => keymap::map_mouse(app.page_mode(), m).map(|a| action(app, a)),
        Msg::Action(a) => Some(action(app, a)),
        msg => {
            if let Msg::Resize { width, height } = msg {
                app.shared.width = width;
                app.shared.height = height;
            }
            page_update(app, msg)
        }
    };
    fx.unwrap_or_else(|| {
        app.shared.dirty = was_dirty;
        Vec::new()
    })
}

/// A message that is not input, for the page's reducer; `None`: nothing changed.
fn page_update(app: &mut App, msg: Msg) -> Option<Vec<Effect>> {
    let sh = &mut app.shared;
    match &mut app.page {
        Page::Explorer(ex) => explorer::update::update(sh, ex, msg),
        Page::Diff(st) => diffview::update(sh, st, msg),
        Page::Lab(st) => lab::update(sh, st, msg),
        Page::Ranks(st) => ranks::update(sh, st, msg),
    }
}

/// One action: quitting and closing the help overlay are the same on every page; the rest
/// goes to the page it is for (an action for another page, injected, does nothing).
fn action(app: &mut App, a: Action) -> Vec<Effect> {
    if a == Action::Quit {
        cancel_loads(&app.page);
        app.back.iter().for_each(cancel_loads);
        app.shared.quit = true;
        return vec![Effect::Quit];
    }
    if app.shared.help {
        // The scrolling keys scroll an overlay taller than the screen; any other key (and
        // every key when it all fits) closes it.
        let mode = app.page_mode();
        let sh = &mut app.shared;
        let max = keymap::help_geometry(mode, sh.width, sh.height).max_scroll;
        match a {
            Action::ScrollHelp(by) if max > 0 => {
                let to = (sh.help_scroll as i64 + i64::from(by)).clamp(0, max as i64);
                sh.help_scroll = to as usize;
            }
            _ => {
                sh.help = false;
                sh.help_scroll = 0;
            }
        }
        return Vec::new();
    }
    if let (Page::Ranks(_), Action::Ranks(a)) = (&app.page, a) {
        return ranks::action(app, a);
    }
    let sh = &mut app.shared;
    match (&mut app.page, a) {
        (Page::Explorer(ex), Action::Explorer(a)) => explorer::update::action(sh, ex, a),
        (Page::Diff(st), Action::Diff(a)) => diffview::action(sh, st, a),
        (Page::Lab(st), Action::Lab(a)) => lab::action(sh, st, a),
        _ => Vec::new(),
    }
}

/// Quitting cancels the page's loads in progress.
fn cancel_loads(page: &Page) {
    match page {
        Page::Explorer(ex) => {
            if let Screen::Loading(l) = &ex.screen {
                l.progress.cancel();
            }
        }
        Page::Diff(st) => st.cancel_loads(),
        Page::Lab(_) => {}
        Page::Ranks(st) => st.cancel_loads(),
    }
}

/// Whether the explorer's time axis is active.
pub fn time_axis(app: &App) -> bool {
    app.explorer().is_some_and(explorer::update::time_axis)
}
