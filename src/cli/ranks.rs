//! A whole distributed job from the command line: `memtide summary DIR` (or more than one
//! file) prints one row per rank, the spread and the worst rank (`--json`: each rank's own
//! `summary --json` object); `memtide check DIR` gates every rank (`--max-peak`, OOMs,
//! `--max-growth`) and the job (`--max-imbalance`). The rows come from
//! [`memtide_core::ranks`]; files load in parallel, one trace in memory per thread.

use super::{CheckArgs, InputArgs, SummaryArgs, EXIT_ERROR};
use anyhow::{bail, Context, Result};
use memtide_core::gate::JobLimits;
use memtide_core::ranks::{self, RankEvent, RankOptions, Ranks};
use memtide_report::ranks::{
    display_name, nothing_readable, render_markdown, render_text, title, to_json,
};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Whether the command line names a job (a directory, or more than one file) rather than
/// one trace.
pub fn is_job(file: &Path, more: &[PathBuf]) -> bool {
    !more.is_empty() || file.is_dir()
}

fn inputs(file: &Path, more: &[PathBuf]) -> Vec<PathBuf> {
    std::iter::once(file.to_path_buf())
        .chain(more.iter().cloned())
        .collect()
}

/// The core's options from the shared input flags.
pub fn options(
    input: &InputArgs,
    capacity: Option<&str>,
    window: Option<&str>,
    all_frames: bool,
) -> Result<RankOptions> {
    memtide_report::ranks::options(&input.into(), capacity, window, all_frames)
}

/// `--exclude` given for one trace.
pub fn exclude_without_job() -> anyhow::Error {
    anyhow::anyhow!(
        "--exclude leaves files of a job out: give a directory or several files (one trace is read whole)"
    )
}

/// Lists the job's files, leaving out those `exclude` (`--exclude GLOB`, parsed by the core)
/// matches.
pub fn list(inputs: &[PathBuf], exclude: &[String]) -> Result<ranks::Discovered> {
    let exclude = ranks::Exclude::parse(exclude).map_err(anyhow::Error::msg)?;
    ranks::discover_excluding(inputs, &exclude).with_context(|| {
        format!(
            "cannot list {}",
            inputs
                .first()
                .map_or(String::new(), |p| p.display().to_string())
        )
    })
}

/// Lists (leaving out `exclude`) and reads the job on `jobs` threads (0: every core), with a
/// progress line on a terminal's stderr.
pub fn read(
    inputs: &[PathBuf],
    exclude: &[String],
    opts: &RankOptions,
    jobs: usize,
) -> Result<Ranks> {
    let discovered = list(inputs, exclude)?;
    let total = discovered.files.len();
    let names: Vec<String> = discovered
        .files
        .iter()
        .map(|f| display_name(&f.path))
        .collect();
    let show = std::io::stderr().is_terminal() && total > 1;
    let done = std::sync::Mutex::new(0usize);
    let jobs = if jobs == 0 {
        ranks::default_jobs()
    } else {
        jobs
    };
    let r = Ranks::load(discovered, opts, jobs, &|ev| {
        if let (true, RankEvent::Done(i, _)) = (show, ev) {
            if let Ok(mut n) = done.lock() {
                *n += 1;
                let name = names.get(*i).map_or("", String::as_str);
                eprint!(
                    "\r\x1b[Kread {}/{total} · {}",
                    *n,
                    crate::safe_text::terminal_safe(name)
                );
            }
        }
    });
    if show {
        eprint!("\r\x1b[K");
    }
    Ok(r)
}

/// `memtide summary DIR` / `memtide summary A B C …`.
pub fn summary(a: &SummaryArgs) -> Result<ExitCode> {
    let mut opts = options(
        &a.input,
        a.capacity.as_deref(),
        a.window.as_deref(),
        a.frames == "all",
    )?;
    opts.keep_summary = a.json;
    opts.fixes = memtide_core::analysis::FixReplay::from_flag(a.fixes);
    let files = inputs(&a.file, &a.more);
    let r = read(&files, &a.exclude, &opts, a.jobs)?;
    let title = title(&files);
    if a.json {
        crate::out_json!("{}", crate::safe_text::json_pretty(&to_json(&r))?);
    } else if a.markdown {
        crate::outln!("{}", render_markdown(&r, &title).trim_end());
    } else {
        crate::outln!("{}", render_text(&r, &title).trim_end());
    }
    if r.rows.is_empty() {
        // Its lines one by one: a newline inside a file name stays escaped.
        for (i, line) in nothing_readable(&r, &title).iter().enumerate() {
            match i {
                0 => crate::errln!("memtide: error: {line}"),
                _ => crate::errln!("  {line}"),
            }
        }
        return Ok(ExitCode::from(EXIT_ERROR));
    }
    Ok(ExitCode::SUCCESS)
}

/// `memtide check DIR`: 0 when every rank passes, 1 when a rank is over a limit, ran out of
/// memory (with `--max-peak`), or the job's peaks differ more than `--max-imbalance`; 2 when nothing is readable.
pub fn check(a: &CheckArgs) -> Result<ExitCode> {
    if !is_job(&a.file, &a.more) {
        bail!("--max-imbalance compares the ranks of a job: give a directory or several files");
    }
    if a.follow.follow || a.follow.poll.is_some() {
        bail!("--follow watches one file; `memtide check DIR` reads a finished job");
    }
    let limit = a
        .max_peak
        .as_deref()
        .map(|s| super::flags::size("--max-peak", s))
        .transpose()?;
    let imbalance = a
        .max_imbalance
        .as_deref()
        .map(|s| super::flags::percent("--max-imbalance", s))
        .transpose()?;
    let growth = a
        .max_growth
        .as_deref()
        .map(|s| super::flags::percent("--max-growth", s))
        .transpose()?;
    let opts = options(&a.input, a.capacity.as_deref(), a.window.as_deref(), false)?;
    let files = inputs(&a.file, &a.more);
    super::check::refuse_json_and_stdout_report(a)?;
    if let Some(path) = &a.report {
        // Before the (long) read; the rank files inside a directory are checked once listed.
        crate::output_file::refuse_inputs(path, &super::check::inputs(a))?;
    }
    let r = read(&files, &a.exclude, &opts, a.jobs)?;
    let title = title(&files);
    if r.rows.is_empty() {
        // With --json, standard output holds JSON or nothing: the error names the files.
        for e in r.errors.iter().filter(|_| !a.json) {
            crate::outln!(
                "unreadable: {}: {}",
                crate::safe_text::one_line(&display_name(&e.path)),
                crate::safe_text::one_line(&e.error.to_string())
            );
        }
        bail!("{}", nothing_readable(&r, &title).join("; "));
    }
    let limits = JobLimits {
        max_peak: limit,
        max_imbalance: imbalance,
        max_growth: growth,
        allow_warnings: a.allow_warnings,
    };
    let j = memtide_report::check::judge_job(&r, &limits)?;
    let code = j.verdict.outcome.exit_code();
    super::check::print(a, "job", title.clone(), code, &j.verdict, &j.lines)?;
    if let Some(path) = &a.report {
        let md = j.report(&r, &title);
        let mut read: Vec<&Path> = super::check::inputs(a);
        read.extend(r.rows.iter().map(|x| x.file.as_path()));
        read.extend(r.errors.iter().map(|e| e.path.as_path()));
        read.extend(r.skipped.iter().map(|s| s.path.as_path()));
        super::check::write_report(a, path, &md, &read)?;
    }
    Ok(ExitCode::from(code))
}
