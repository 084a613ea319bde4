//! Command-line interface: argument definitions and dispatch to the subcommands.

pub mod check;
pub mod diff;
pub mod examples;
pub mod explore;
pub mod flags;
pub mod follow;
pub mod lab;
pub mod load;
pub mod oom;
pub mod plot;
pub mod ranks;
pub mod replay;
pub mod shell;
pub mod summary;
pub mod typo;
pub mod whatif;

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// memtide — explore the memory timeline of deep-learning training runs.
///
/// Opens memtide JSONL, PyTorch snapshot (.pickle/.json, optionally .gz) and Kineto profiler
/// traces. Sizes are shown in binary units (KiB, MiB, GiB).
#[derive(Debug, Parser)]
#[command(
    name = "memtide",
    version,
    long_version = LONG_VERSION,
    about,
    after_help = examples::EXPLORE,
    args_conflicts_with_subcommands = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub explore: ExploreArgs,
}

/// `memtide --version`: the version, then the formats this build reads.
const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "\ndistribution: memtide-cli (built from a checkout with `pip install .` or `cargo install --path .`;",
    "\n  PyPI's `memtide` is an unrelated project)",
    "\nreads (the format is detected from the content, never from the file name):",
    "\n  memtide JSONL v1 (.jsonl; can be followed while it is written)",
    "\n  PyTorch CUDA memory snapshots: _dump_snapshot() pickle (protocols 2-5) or JSON, .gz",
    "\n  PyTorch profiler traces: Kineto Chrome-trace JSON, .json.gz",
    "\n  export_memory_timeline() files: .json and .raw.json.gz"
);

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Print a report of a trace: peak, bands at the peak, top live allocations, windows.
    #[command(after_help = examples::SUMMARY)]
    Summary(SummaryArgs),
    /// Exit 1 when the peak exceeds a limit (a CI gate for training jobs).
    #[command(after_help = examples::CHECK)]
    Check(CheckArgs),
    /// Write any readable trace as memtide JSONL, progressively (demo and test the live view).
    #[command(after_help = examples::REPLAY)]
    Replay(ReplayArgs),
    /// Compare two runs: peaks, band deltas at the peaks, per-step table aligned by step.
    #[command(after_help = examples::DIFF)]
    Diff(DiffArgs),
    /// The cache lab: an LRU teaching toy (entries, not bytes) — predict, then check.
    #[command(after_help = examples::LAB)]
    Lab(LabArgs),
    /// Print a shell completion script: `memtide completions bash > ~/.local/share/bash-completion/completions/memtide`.
    #[command(after_help = examples::COMPLETIONS)]
    Completions(shell::CompletionsArgs),
    /// Print the man page (roff): `memtide man > memtide.1`.
    #[command(after_help = examples::MAN)]
    Man,
    /// Draw the timeline as a picture: `memtide plot FILE -o peak.svg` (or .png); `plot A B`
    /// draws two runs aligned by step.
    #[command(after_help = examples::PLOT)]
    Plot(PlotArgs),
    /// What if: replay the run through a model of PyTorch's caching allocator under other
    /// settings: `memtide whatif FILE --alloc-conf expandable_segments:True --capacity 80GiB`.
    #[command(after_help = examples::WHATIF)]
    Whatif(WhatifArgs),
    /// Explain PyTorch's OOM message alone, where no trace was kept: `memtide oom job.log`
    /// (the first `CUDA out of memory` message in the file; its figures as printed).
    #[command(after_help = examples::OOM)]
    Oom(OomArgs),
}

#[derive(Debug, Args)]
pub struct OomArgs {
    /// A file holding PyTorch's `OutOfMemoryError` message (a whole job log is fine).
    #[arg(value_name = "MESSAGE")]
    pub file: PathBuf,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct WhatifArgs {
    /// Trace file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Allocator settings to compare, in PYTORCH_CUDA_ALLOC_CONF syntax
    /// (`expandable_segments:True,max_split_size_mb:128`); repeat to compare several.
    #[arg(long = "alloc-conf", value_name = "CONF")]
    pub alloc_conf: Vec<String>,
    /// The device's capacity (`80GiB`). Every setting is replayed under the ceiling the
    /// allocator really had: at a recorded OOM, reserved + driver free (this capacity then
    /// names the memory outside the allocator); else the capacity.
    #[arg(long, value_name = "SIZE")]
    pub capacity: Option<String>,
    /// Print JSON instead of text.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub input: InputArgs,
}

#[derive(Debug, Args)]
pub struct PlotArgs {
    /// Trace file.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// A second run: draw both on one scale, aligned by step as `diff` aligns them.
    #[arg(value_name = "B")]
    pub file_b: Option<PathBuf>,
    /// The picture to write; the format follows the extension: .svg, or .png (rendered from
    /// the SVG); `-` writes SVG to standard output. Never one of the files read; an existing
    /// file is replaced atomically and keeps its permissions; a symlink is written through.
    #[arg(short = 'o', long = "out", value_name = "OUT")]
    pub out: PathBuf,
    /// Width in pixels (200–8000).
    #[arg(long, default_value_t = 1200, value_parser = clap::value_parser!(u32).range(200..=8000))]
    pub width: u32,
    /// Height in pixels (120–8000; 200 or more for two runs).
    #[arg(long, default_value_t = 480, value_parser = clap::value_parser!(u32).range(120..=8000))]
    pub height: u32,
    /// Draw one window only (see summary --window).
    #[arg(long, value_name = "WINDOW")]
    pub window: Option<String>,
    /// Colours: light (default for pictures), default, mono, or a theme TOML.
    #[arg(long)]
    pub theme: Option<String>,
    /// With two runs: also draw each run's stacked bands, faint, under its total line.
    #[arg(long, requires = "file_b")]
    pub bands: bool,
    /// The device's memory (e.g. 80GiB) when the file does not record it: drawn as the
    /// capacity line.
    #[arg(long, value_name = "SIZE")]
    pub capacity: Option<String>,
    #[command(flatten)]
    pub input: InputArgs,
}

#[derive(Debug, Args)]
pub struct LabArgs {
    /// Cache capacity in entries (1–16).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=16))]
    pub capacity: u64,
    /// Stride s: request i asks for address (i × s) mod 16 (0–16).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(0..=16))]
    pub stride: u64,
    /// Requests to simulate headlessly (at most 4096).
    #[arg(long, default_value_t = 16)]
    pub requests: u64,
    /// Print the per-request trace and totals as JSON instead of opening the screen.
    #[arg(long)]
    pub json: bool,
    /// Print a plain-text table instead of opening the screen.
    #[arg(long)]
    pub text: bool,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The reference run.
    #[arg(value_name = "A")]
    pub a: PathBuf,
    /// The run compared with it.
    #[arg(value_name = "B")]
    pub b: PathBuf,
    /// Print JSON instead of text.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print a Markdown report (GitHub tables) for a pull request or `$GITHUB_STEP_SUMMARY`.
    #[arg(long)]
    pub markdown: bool,
    /// Exit 1 when the two runs did different work (parameters, optimizer state, inputs,
    /// steps or phases differ), exit 2 when the files cannot tell: a CI check that a saving
    /// is not a batch change. Prints the report instead of opening the screen.
    #[arg(long)]
    pub require_parity: bool,
    #[command(flatten)]
    pub input: InputArgs,
}

/// How to follow a growing file.
#[derive(Debug, Args, Clone, Default)]
pub struct FollowArgs {
    /// Follow the file while it is being written (like `tail -f`).
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// Poll for changes every MS milliseconds (10–3600000) instead of inotify (NFS, shared
    /// file systems).
    #[arg(long, value_name = "MS", num_args = 0..=1, default_missing_value = "250",
          value_parser = clap::value_parser!(u64).range(10..=3_600_000))]
    pub poll: Option<u64>,
}

impl FollowArgs {
    pub fn mode(&self) -> crate::follow::WatchMode {
        match self.poll {
            Some(ms) => {
                crate::follow::WatchMode::Poll(std::time::Duration::from_millis(ms.max(10)))
            }
            None => crate::follow::WatchMode::Notify,
        }
    }
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// Trace to replay (any format memtide reads).
    #[arg(value_name = "SRC")]
    pub src: PathBuf,
    /// JSONL file to write (created, or truncated in place: a symlink is written through and
    /// an existing file keeps its permissions); `-`: standard output. Never one of the files
    /// read (checked before anything is opened for writing).
    #[arg(value_name = "OUT")]
    pub out: PathBuf,
    /// Events per second (0: as fast as possible; at most 10000000).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(0..=10_000_000))]
    pub rate: u64,
    #[command(flatten)]
    pub input: InputArgs,
}

fn parse_tz(s: &str) -> Result<i64, String> {
    memtide_core::formats::parse_device_log_tz(s)
}

fn parse_offset(s: &str) -> Result<i64, String> {
    memtide_core::formats::parse_device_log_offset(s)
}

/// Options shared by every command that reads a trace.
// The field docs are the `--help` text (brackets there are literal, not links).
#[allow(rustdoc::broken_intra_doc_links)]
#[derive(Debug, Args, Clone, Default)]
pub struct InputArgs {
    /// Device to read: an ordinal (0, 1, ...) or a name (cuda:1).
    #[arg(long)]
    pub device: Option<String>,
    /// Skip and count bad JSONL and device-log lines instead of failing on the first.
    #[arg(long)]
    pub lenient: bool,
    /// Device-usage log merged with a snapshot or Kineto trace: external = used − reserved
    /// (nvidia-smi --query-gpu=timestamp,index,memory.used,memory.total --format=csv, or
    /// time_us,device,used_bytes[,total_bytes]).
    #[arg(long, value_name = "CSV")]
    pub device_log: Option<PathBuf>,
    /// Time zone of nvidia-smi's local timestamps (+02:00, -05:30, UTC); default: UTC.
    #[arg(long, value_name = "ZONE", requires = "device_log", value_parser = parse_tz, allow_hyphen_values = true)]
    pub device_log_tz: Option<i64>,
    /// Shift added to the log's times after the zone (1.25s, -300ms, 2min).
    #[arg(long, value_name = "DURATION", requires = "device_log", value_parser = parse_offset, allow_hyphen_values = true)]
    pub device_log_offset: Option<i64>,
    /// PyTorch's out-of-memory message, pasted from the job log into FILE ("… Tried to
    /// allocate … GPU 0 has a total capacity of … of which … is free …", any PyTorch 2.x
    /// wording): the device's capacity (and the driver's free bytes where the file lacks
    /// them) for the OOM explanation, checked against the file's figures.
    #[arg(long, value_name = "FILE")]
    pub oom_message: Option<PathBuf>,
    /// Nsight Systems SQLite export of the same run, merged with a snapshot: memory outside
    /// PyTorch by library (NCCL, cuDNN, cuBLAS, …); PyTorch's own segments are matched and
    /// left out. Record with `nsys profile --cuda-memory-usage=true --trace=cuda python
    /// train.py`, export with `nsys export --type sqlite -o run.sqlite report.nsys-rep`, then
    /// `memtide summary snapshot.pickle --nsys run.sqlite`.
    #[arg(long, value_name = "SQLITE")]
    pub nsys: Option<PathBuf>,
    /// The inference server's startup log (vLLM or SGLang, any release that prints its
    /// memory lines; a whole job log is fine): the serving budget shows each figure's source
    /// and reconciles the log's figures with the trace's (docs/serving.md).
    #[arg(long, value_name = "FILE")]
    pub server_log: Option<PathBuf>,
    /// PyTorch export_memory_timeline file whose categories label a Kineto trace.
    #[arg(long, value_name = "FILE")]
    pub categories: Option<PathBuf>,
    /// TOML rules for category inference ([[rule]] match = "optimizer.py" band = "persistent").
    #[arg(long, value_name = "FILE")]
    pub rules: Option<PathBuf>,
    /// Keep C++ frames in snapshot stacks (hidden by default).
    #[arg(long)]
    pub cpp_frames: bool,
    /// Read on one thread (no reading ahead, no parse on a second core): the same results,
    /// slower; for comparison or a machine shared with a training run.
    #[arg(long)]
    pub single_thread: bool,
}

#[derive(Debug, Args, Default)]
pub struct ExploreArgs {
    /// Trace file to explore (two files: their diff; a directory of rank files or more than
    /// two files: the ranks overview of a distributed job).
    #[arg(value_name = "FILE")]
    pub files: Vec<PathBuf>,
    #[command(flatten)]
    pub input: InputArgs,
    /// A job (DIR or several files): leave out the files whose name matches GLOB (`*`, `?`,
    /// `[a-z]`; matched against the file name), listed as skipped; repeatable.
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Colour theme: default, light, mono, or a path to a theme TOML.
    #[arg(long)]
    pub theme: Option<String>,
    /// Draw with ASCII only (for terminals without block glyphs).
    #[arg(long)]
    pub ascii: bool,
    /// The device's memory (e.g. 80GiB) when the file does not record it: the OOM panel's
    /// explanation needs it (memory outside the allocator = capacity − reserved − driver free).
    #[arg(long, value_name = "SIZE")]
    pub capacity: Option<String>,
    /// Show times as the file's absolute values instead of relative to the trace's first
    /// event (`T` toggles in the explorer).
    #[arg(long)]
    pub absolute_time: bool,
    /// Allocator settings `w` simulates (the what-if overlay), in PYTORCH_CUDA_ALLOC_CONF
    /// syntax (`expandable_segments:True,max_split_size_mb:128`); default: the file's own
    /// settings, else PyTorch's defaults.
    #[arg(long = "alloc-conf", value_name = "CONF")]
    pub alloc_conf: Option<String>,
    #[command(flatten)]
    pub follow: FollowArgs,
}

#[derive(Debug, Args)]
pub struct SummaryArgs {
    /// Trace file; or a directory of rank files (one per rank: the ranks table).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// More rank files: with FILE, one row per rank (a distributed job).
    #[arg(value_name = "MORE")]
    pub more: Vec<PathBuf>,
    /// Ranks: read at most N files at once (at most 1024; default: every core, or MEMTIDE_JOBS).
    #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true, value_parser = flags::jobs)]
    pub jobs: usize,
    /// A job (DIR or several files): leave out the files whose name matches GLOB (`*`, `?`,
    /// `[a-z]`; matched against the file name), listed as skipped; repeatable.
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Print the stable JSON schema instead of text.
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print a Markdown report (GitHub tables) for a pull request or `$GITHUB_STEP_SUMMARY`.
    #[arg(long)]
    pub markdown: bool,
    /// Print load and index timings (MB/s, bytes per event) to stderr.
    #[arg(long)]
    pub timings: bool,
    /// Replay each OOM's fix list whatever the history's length: every allocator setting is
    /// a replay of the whole history, so by default only histories of at most 1,000,000
    /// entries get theirs.
    #[arg(long)]
    pub fixes: bool,
    /// Measure the peak in a window: steady (last full step after warm-up), step:N,
    /// marks:A..B, reset_peak (since the last reset), all.
    #[arg(long, value_name = "WINDOW")]
    pub window: Option<String>,
    /// The device's memory (e.g. 80GiB) when the file does not record it: used by the OOM
    /// explanation (memory outside the allocator = capacity − reserved − driver free).
    #[arg(long, value_name = "SIZE")]
    pub capacity: Option<String>,
    /// Frames to show: user (the innermost frame of user code, `file.py:123 function`, with
    /// the innermost op beside it) or all (the top frame as the file gives it; the tree then
    /// has every frame). Library patterns: `[[frames]] internal = "my_lib/"` in --rules.
    #[arg(long, value_name = "MODE", default_value = "user", value_parser = ["user", "all"])]
    pub frames: String,
    /// Print the top of the stack tree at the peak (who owns the bytes, by stack).
    #[arg(long)]
    pub tree: bool,
    /// Windows in the text and Markdown reports: folded (each phase name once, with its
    /// count and highest peak: a server's hundreds of `CompiledFxGraph` calls are one
    /// line) or all (every window on its own line).
    #[arg(long, value_name = "MODE", default_value = "folded", value_parser = ["folded", "all"])]
    pub windows: String,
    /// Print times as the file's absolute values (epoch µs) instead of relative to the
    /// trace's first event.
    #[arg(long)]
    pub absolute_time: bool,
    #[command(flatten)]
    pub input: InputArgs,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Trace file; or a directory of rank files (every rank is checked).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// More rank files: with FILE, a distributed job (every rank is checked).
    #[arg(value_name = "MORE")]
    pub more: Vec<PathBuf>,
    /// Fail when the peak exceeds this size (with a unit: B, KiB, MiB, GiB, TiB, KB, MB, GB,
    /// TB; e.g. 12GiB, 4096B); for a job, naming the ranks over it.
    #[arg(long, value_name = "SIZE", required_unless_present_any = ["max_growth", "max_imbalance"])]
    pub max_peak: Option<String>,
    /// A job (DIR or several files): fail when the highest rank peak exceeds the lowest by
    /// more than this, e.g. 10% (max/min − 1; the % sign is required).
    #[arg(long, value_name = "PCT")]
    pub max_imbalance: Option<String>,
    /// Ranks: read at most N files at once (at most 1024; default: every core, or MEMTIDE_JOBS).
    #[arg(long, value_name = "N", default_value_t = 0, hide_default_value = true, value_parser = flags::jobs)]
    pub jobs: usize,
    /// A job (DIR or several files): leave out the files whose name matches GLOB (`*`, `?`,
    /// `[a-z]`; matched against the file name), listed as skipped; repeatable.
    #[arg(long, value_name = "GLOB")]
    pub exclude: Vec<String>,
    /// Fail when the step baseline (bytes live at each step start, after warm-up) grows by more
    /// than this, e.g. 1% (a leak or retained-graph gate; the % sign is required).
    #[arg(long, value_name = "PCT")]
    pub max_growth: Option<String>,
    /// Measure --max-peak in a window (see summary --window).
    #[arg(long, value_name = "WINDOW")]
    pub window: Option<String>,
    /// The device's memory (e.g. 80GiB) when the file does not record it: used by the OOM
    /// explanation (memory outside the allocator = capacity − reserved − driver free).
    #[arg(long, value_name = "SIZE")]
    pub capacity: Option<String>,
    #[command(flatten)]
    pub follow: FollowArgs,
    /// With --follow: exit 0 once the file has not grown for SECS seconds (0 to 604800, a
    /// week; e.g. 30 or 2.5).
    #[arg(long, value_name = "SECS", value_parser = flags::idle_seconds)]
    pub idle_exit: Option<f64>,
    /// Gate on the figures even when the reader warned that they may be wrong (without it,
    /// such a trace exits 2 with the reason).
    #[arg(long)]
    pub allow_warnings: bool,
    /// Also write the verdict and a Markdown report of the checked trace to FILE (on pass and
    /// on fail), for a CI job summary or a pull-request comment; `-`: print the report (which
    /// starts with the verdict) instead of the plain verdict lines. Never one of the files read.
    /// The file named by $GITHUB_STEP_SUMMARY is appended to (a step's summary keeps what
    /// was written before); any other file is replaced.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// With --report FILE: append the report to FILE (after a blank line) instead of
    /// replacing it, for a summary that several checks write to.
    #[arg(long, requires = "report")]
    pub report_append: bool,
    /// Print the verdict as one JSON object (each limit, its figure, pass or fail, the
    /// evidence) instead of the verdict lines; the exit code is unchanged.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub input: InputArgs,
}

/// `println!` for text meant for a terminal: control characters from trace content are shown
/// escaped (see `safe_text`), and a closed pipe (`memtide summary FILE | head`) ends the
/// process quietly instead of panicking like `println!` does.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::write_out(&$crate::safe_text::terminal_safe(&format!($($arg)*)))
    };
}

/// `outln!` for JSON: written exactly (serde_json already escapes what must be escaped).
#[macro_export]
macro_rules! out_json {
    ($($arg:tt)*) => {
        $crate::cli::write_out(&format!($($arg)*))
    };
}

/// `eprintln!` for a message that may quote trace content or paths: one line, whatever it
/// quotes — control characters escaped, and a newline inside a file name or a name from the
/// file too (`\n`), so no input can forge a line of a CI log (`ok: …`).
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {
        eprintln!("{}", $crate::safe_text::one_line(&format!($($arg)*)))
    };
}

/// Writes one line to stdout; exits 0 on a broken pipe (the reader has what it wanted).
pub fn write_out(s: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{s}").and_then(|_| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
    }
}

/// Reports a command line clap refused: help and version as clap prints them; any other
/// error with the values it quotes made terminal-safe (they come from the user's shell, and
/// may come from a file name), and exit 2.
pub fn usage_error(e: clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
        _ => {
            eprint!(
                "{}",
                crate::safe_text::terminal_safe(&e.render().to_string())
            );
            ExitCode::from(EXIT_ERROR)
        }
    }
}

/// Writes a JSON document to stdout as `write` serialises it (buffered, no text of the whole
/// held), then a newline; exits 0 on a broken pipe like [`write_out`].
pub fn write_json_out(
    write: impl FnOnce(&mut std::io::BufWriter<std::io::StdoutLock<'static>>) -> serde_json::Result<()>,
) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock());
    let done = write(&mut out)
        .map_err(std::io::Error::from)
        .and_then(|()| writeln!(out))
        .and_then(|()| out.flush());
    match done {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => Err(anyhow::Error::new(e).context("cannot write the JSON report")),
        Ok(()) => Ok(()),
    }
}

/// Exit code for errors (bad file, bad arguments); `check` uses 1 for "over the limit".
pub const EXIT_ERROR: u8 = 2;

/// Runs the parsed command line.
pub fn run(cli: Cli) -> ExitCode {
    let result = match cli.command {
        Some(Command::Summary(a)) if ranks::is_job(&a.file, &a.more) => ranks::summary(&a),
        Some(Command::Summary(a)) if !a.exclude.is_empty() => Err(ranks::exclude_without_job()),
        Some(Command::Summary(a)) => summary::run(&a),
        Some(Command::Check(a)) if ranks::is_job(&a.file, &a.more) || a.max_imbalance.is_some() => {
            ranks::check(&a)
        }
        Some(Command::Check(a)) if !a.exclude.is_empty() => Err(ranks::exclude_without_job()),
        Some(Command::Check(a)) if a.follow.follow => follow::run_check(&a),
        Some(Command::Check(a)) => check::run(&a),
        Some(Command::Replay(a)) => replay::run(&a),
        Some(Command::Diff(a)) => diff::run(&a),
        Some(Command::Lab(a)) => lab::run(&a),
        Some(Command::Completions(a)) => shell::completions(&a),
        Some(Command::Man) => shell::man(),
        Some(Command::Plot(a)) => plot::run(&a),
        Some(Command::Whatif(a)) => whatif::run(&a),
        Some(Command::Oom(a)) => oom::run(&a),
        None => explore::explore(&cli.explore),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            crate::errln!("memtide: error: {e:#}");
            ExitCode::from(EXIT_ERROR)
        }
    }
}
