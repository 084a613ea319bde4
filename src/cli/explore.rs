//! The interactive screens from the command line: `memtide FILE` (explorer), `memtide A B`
//! and `memtide diff A B` in a terminal (diff), `memtide lab` (cache lab). Builds each app from
//! the parsed arguments and maps how it ended to the exit status.

use super::{ExploreArgs, InputArgs, LabArgs, EXIT_ERROR};
use crate::tui;
use crate::tui::app::{App, Outcome};
use crate::tui::explorer::FollowState;
use anyhow::{bail, Context, Result};
use std::path::Path;
use std::process::ExitCode;

/// Opens the explorer on the given files (two files: the diff screen; a directory or more
/// than two files: the ranks overview).
pub fn explore(args: &ExploreArgs) -> Result<ExitCode> {
    super::typo::check_first_file(
        &args.files,
        args.follow.follow || args.follow.poll.is_some(),
    )?;
    if args.alloc_conf.is_some() && (is_job(&args.files) || args.files.len() == 2) {
        bail!("--alloc-conf is for the explorer of one file (`w` overlays the simulated reserved line); for a table use `memtide whatif FILE --alloc-conf CONF`");
    }
    if is_job(&args.files) {
        return open_ranks(args);
    }
    if !args.exclude.is_empty() {
        return Err(super::ranks::exclude_without_job());
    }
    if let [a, b] = args.files.as_slice() {
        return open_diff(a, b, &args.input, args.theme.as_deref(), args.ascii);
    }
    let Some(path) = args.files.first() else {
        bail!("no trace file given: usage `memtide FILE` (or `memtide --help`)");
    };
    let theme = tui::theme(args.theme.as_deref())?;
    // A bad capacity or OOM message fails before the screen opens.
    let opts = super::load::open_options(&args.input, args.capacity.as_deref())?;
    // Bad settings fail before a long load, as `whatif`'s do.
    let whatif_conf = args
        .alloc_conf
        .as_deref()
        .map(memtide_core::allocator::sim::AllocConf::parse)
        .transpose()
        .context("--alloc-conf")?;
    let mut app = App::new(path.clone(), opts, theme, args.ascii);
    if let Some(ex) = app.explorer_mut() {
        ex.device_want = args.input.device.clone();
        ex.whatif_conf = whatif_conf;
        ex.absolute_time = args.absolute_time;
        if args.follow.follow || args.follow.poll.is_some() {
            ex.follow = Some(FollowState::new(args.follow.mode()));
        }
    }
    if args.files.len() > 1 {
        app.shared.status = Some("showing the first file only".into());
    }
    let outcome = tui::run_in_terminal(
        app,
        "the explorer",
        "for a report use `memtide summary FILE`",
    )?;
    Ok(exit(outcome))
}

/// A directory alone, or more than two files: a distributed job.
fn is_job(files: &[std::path::PathBuf]) -> bool {
    files.len() > 2 || matches!(files, [one] if one.is_dir())
}

/// Opens the ranks overview on a job's files (`memtide DIR`, `memtide r0 r1 r2 …`).
fn open_ranks(args: &ExploreArgs) -> Result<ExitCode> {
    if args.follow.follow || args.follow.poll.is_some() {
        bail!("--follow watches one file; the ranks overview reads a finished job");
    }
    let theme = tui::theme(args.theme.as_deref())?;
    let opts = super::ranks::options(&args.input, None, None, false)?;
    let discovered = super::ranks::list(&args.files, &args.exclude)?;
    if discovered.files.is_empty() {
        bail!(
            "no files to read in {}",
            args.files
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let title = match args.files.as_slice() {
        [one] => one.display().to_string(),
        many => format!("{} files", many.len()),
    };
    let st = tui::ranks::RanksState::new(title, discovered, opts);
    let app = App::new_ranks(st, theme, args.ascii);
    let outcome = tui::run_in_terminal(
        app,
        "the ranks overview",
        "for a table use `memtide summary DIR`",
    )?;
    Ok(exit(outcome))
}

/// Opens the cache lab screen (starts empty: the prediction is read before any step).
pub fn lab(args: &LabArgs) -> Result<ExitCode> {
    let theme = tui::theme(None)?;
    let app = App::new_lab(args.capacity as usize, args.stride, theme, false);
    let outcome = tui::run_in_terminal(
        app,
        "the lab screen",
        "use `memtide lab --json` or `--text`",
    )?;
    Ok(exit(outcome))
}

/// Opens the diff screen on runs `a` and `b` (`memtide diff A B` in a terminal).
pub fn diff(a: &Path, b: &Path, input: &InputArgs) -> Result<ExitCode> {
    open_diff(a, b, input, None, false)
}

fn open_diff(
    a: &Path,
    b: &Path,
    input: &InputArgs,
    theme: Option<&str>,
    ascii: bool,
) -> Result<ExitCode> {
    let theme = tui::theme(theme)?;
    let mut app = App::new_diff(
        a.to_path_buf(),
        b.to_path_buf(),
        super::load::open_options(input, None)?,
        theme,
        ascii,
    );
    if let Some(st) = app.diff_mut() {
        st.device_want = input.device.clone();
    }
    let outcome = tui::run_in_terminal(
        app,
        "the diff screen",
        "for a report use `memtide diff A B`",
    )?;
    Ok(exit(outcome))
}

/// The exit status of a screen session: 2 when an input could not be read.
pub fn exit(outcome: Outcome) -> ExitCode {
    match outcome {
        Outcome::Done => ExitCode::SUCCESS,
        Outcome::InputFailed => ExitCode::from(EXIT_ERROR),
    }
}
