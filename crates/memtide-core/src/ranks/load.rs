//! Reading the job's files in parallel (a bounded pool of threads, each holding one trace at
//! a time): each file becomes a [`RankRow`] (its `summary --json` figures and a sparkline),
//! is skipped (not a trace), or failed (with the reader's error). The trace is dropped as
//! soon as its row is made.

use super::discover::RankFile;
use super::row::{distributed_rank, row_from_summary, sparkline, KeptSummary, RankRow, RankSource};
use crate::analysis::summary::{FixReplay, Summary, SummaryOptions};
use crate::analysis::summary_json::{DocumentJson, StepsJson};
use crate::analysis::tree::TreeFrames;
use crate::analysis::window_spec::WindowSpec;
use crate::formats::limit::{Limited, TooLarge};
use crate::formats::{source, FormatError, LoadOptions, Progress};
use crate::open::{OpenError, OpenOptions, Opened, UserRules};
use serde_json::Value;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// How the files are read and summarised (as `summary FILE --json` would with the same
/// flags).
#[derive(Clone, Debug)]
pub struct RankOptions {
    pub load: LoadOptions,
    /// `--device`: an ordinal or a name (None: the first device that ran out of memory, else the
    /// first that held memory, else the first with events).
    pub device: Option<String>,
    /// `--capacity` in bytes (the user's figure wins over the file's).
    pub capacity: Option<u64>,
    /// `--window`: measure each rank's peak in this window.
    pub window: Option<WindowSpec>,
    /// The `--rules` file's rules, read once for every rank (None: each rank's opening reads
    /// `load.rules`).
    pub rules: Option<Arc<UserRules>>,
    /// `--frames all`: the stack tree has every frame (default: user frames).
    pub all_frames: bool,
    /// Keep each rank's `summary --json` object in its row (the JSON report needs it; the
    /// overview does not).
    pub keep_summary: bool,
    /// Points of each row's sparkline.
    pub sparkline_points: usize,
    /// Whether each rank's OOM fix list is replayed (`--fixes`: [`FixReplay::Always`]).
    pub fixes: FixReplay,
}

impl Default for RankOptions {
    fn default() -> Self {
        RankOptions {
            load: LoadOptions::default(),
            device: None,
            capacity: None,
            window: None,
            rules: None,
            all_frames: false,
            keep_summary: false,
            sparkline_points: 120,
            fixes: FixReplay::default(),
        }
    }
}

impl RankOptions {
    /// How each rank's file is opened (the reader options and `--capacity`): for the
    /// overview's rows and for a rank opened from it.
    pub fn open_options(&self) -> OpenOptions {
        OpenOptions {
            read: self.load.clone(),
            capacity: self.capacity.map(crate::trace::Bytes),
            oom_message: None,
            server_log: None,
            rules: self.rules.clone(),
        }
    }
}

/// What became of one file.
#[derive(Clone, Debug, PartialEq)]
pub enum FileOutcome {
    Row(Box<RankRow>),
    /// Certainly not a trace nor a summary: no format memtide reads, or a whole file of one
    /// whose content is no trace (a pickled config dict); the reason says what it is.
    Skipped(String),
    /// A trace (or what claims to be one) that could not be read: the reader's error. A
    /// damaged rank (cut short, malformed) is this, never skipped.
    Failed(String),
}

/// A load's report to its caller: a file's reading began, or it ended.
#[derive(Debug)]
pub enum RankEvent {
    Started(usize),
    Done(usize, FileOutcome),
}

pub use crate::worker::default_jobs;

/// Reads every file on at most `jobs` threads (`progress[i]` counts file `i`'s bytes; a
/// missing entry gets a fresh counter), calling `on_event` from the worker threads as each
/// file starts and ends. Returns when all are done.
///
/// A file whose reading the memory budget (`MEMTIDE_MAX_MEMORY`) stopped fails alone, with
/// its own name and the reason; the others go on. Read while other files were read too, it
/// may only have been crowded out: it is read again once the others are done, by itself,
/// and fails only if it still does not fit.
pub fn load_all(
    files: &[RankFile],
    opts: &RankOptions,
    jobs: usize,
    progress: &[Progress],
    on_event: &(dyn Fn(RankEvent) + Sync),
) {
    let next = AtomicUsize::new(0);
    let threads = jobs.clamp(1, files.len().max(1));
    let again = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(file) = files.get(i) else {
                    break;
                };
                on_event(RankEvent::Started(i));
                let p = progress.get(i).cloned().unwrap_or_default();
                match guarded_load(file, opts, &p) {
                    (_, true) if threads > 1 => match again.lock() {
                        Ok(mut v) => v.push(i),
                        Err(_) => on_event(RankEvent::Done(
                            i,
                            FileOutcome::Failed("internal error while reading the file".into()),
                        )),
                    },
                    (outcome, _) => on_event(RankEvent::Done(i, outcome)),
                }
            });
        }
    });
    let mut again = again.into_inner().unwrap_or_default();
    again.sort_unstable();
    for i in again {
        let Some(file) = files.get(i) else {
            continue;
        };
        let p = progress.get(i).cloned().unwrap_or_default();
        // Read again from the start: the bytes counted so far were the first attempt's.
        p.done.store(0, Ordering::Relaxed);
        on_event(RankEvent::Done(i, guarded_load(file, opts, &p).0));
    }
}

/// [`load_one`] with a panic and the memory budget's refusal each turned into a failed
/// outcome; true when the budget refused.
fn guarded_load(file: &RankFile, opts: &RankOptions, p: &Progress) -> (FileOutcome, bool) {
    let (outcome, over_budget) = crate::budget::recoverable(|| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| load_one(file, opts, p)))
            .unwrap_or_else(|_| FileOutcome::Failed("internal error while reading the file".into()))
    });
    match over_budget {
        Some(why) => (FileOutcome::Failed(why), true),
        None => (outcome, false),
    }
}

/// Reads one file into its row.
pub fn load_one(file: &RankFile, opts: &RankOptions, progress: &Progress) -> FileOutcome {
    match read_row(file, opts, progress) {
        Ok(row) => FileOutcome::Row(Box::new(row)),
        Err(FormatError::Unrecognised(why)) => {
            FileOutcome::Skipped(match why.rsplit_once("; it starts with ") {
                Some((_, head)) => {
                    format!("not a trace nor a memtide summary (it starts with {head})")
                }
                None => format!("not a trace nor a memtide summary: {why}"),
            })
        }
        // A whole file of a known format whose content is no trace (a pickled config).
        Err(FormatError::NotATrace(why)) => {
            FileOutcome::Skipped(format!("not a trace nor a memtide summary ({why})"))
        }
        Err(e) => FileOutcome::Failed(e.to_string()),
    }
}

/// The largest `summary --json` file read (its content, once decompressed).
const SUMMARY_MAX: u64 = 256 << 20;
const SUMMARY: &str = "a memtide summary";

fn read_row(
    file: &RankFile,
    opts: &RankOptions,
    progress: &Progress,
) -> Result<RankRow, FormatError> {
    let path = &file.path;
    let input = source::open(path, progress)?;
    let from_summary = looks_like_summary(&input.head);
    let mut kept: Option<Box<serde_json::value::RawValue>> = None;
    let (summary, timeline) = if from_summary {
        if input.file_size > SUMMARY_MAX {
            return Err(FormatError::Invalid(format!(
                "{} MiB: {}",
                input.file_size >> 20,
                TooLarge {
                    what: SUMMARY,
                    limit: SUMMARY_MAX,
                    gzip: false
                }
            )));
        }
        let v = if opts.keep_summary {
            let raw: Box<serde_json::value::RawValue> = read_summary(input)?;
            let v = serde_json::from_str(raw.get()).map_err(summary_error)?;
            kept = Some(raw);
            v
        } else {
            read_summary(input)?
        };
        (v, Vec::new())
    } else {
        drop(input);
        let opened =
            crate::open::open(path, &opts.open_options(), progress).map_err(|e| match e {
                OpenError::Read { source, .. } | OpenError::SideFile(source) => source,
                other => FormatError::Invalid(other.to_string()),
            })?;
        let s = summary_json(opened, opts).map_err(FormatError::Invalid)?;
        kept = s.kept;
        (s.value, s.timeline)
    };
    let mut row = row_from_summary(&summary).map_err(FormatError::Invalid)?;
    let (rank, rank_from) = match (distributed_rank(&summary), file.name_rank) {
        (Some(r), _) => (r, RankSource::Distributed),
        (None, Some(r)) => (r, RankSource::FileName),
        (None, None) => (file.order as u64, RankSource::Order),
    };
    row.rank = rank;
    row.rank_from = rank_from;
    row.order = file.order;
    row.file = path.clone();
    row.from_summary = from_summary;
    row.sparkline = timeline;
    if opts.keep_summary {
        row.summary = match kept {
            Some(raw) => Some(KeptSummary(raw)),
            None => Some(KeptSummary(
                serde_json::value::to_raw_value(&summary).map_err(|e| {
                    FormatError::Invalid(format!("its summary could not be kept: {e}"))
                })?,
            )),
        };
    }
    Ok(row)
}

/// Parses a summary file as it is read (its text is never held whole besides what `T`
/// keeps), refusing more than [`SUMMARY_MAX`] bytes of content: a small `.gz` that inflates
/// to gigabytes is refused at the limit.
fn read_summary<T: serde::de::DeserializeOwned>(input: source::Input) -> Result<T, FormatError> {
    let gzip = input.gzip;
    let capped = Limited::new(input.into_reader(), SUMMARY_MAX, SUMMARY, gzip);
    serde_json::from_reader(std::io::BufReader::with_capacity(256 << 10, capped))
        .map_err(summary_error)
}

fn summary_error(e: serde_json::Error) -> FormatError {
    if e.is_io() {
        return source::io_or_cancel(std::io::Error::from(e));
    }
    FormatError::Invalid(format!("a memtide summary that is not valid JSON: {e}"))
}

/// Whether a file's first bytes are a `summary --json` object (its first key is `source`).
pub(crate) fn looks_like_summary(head: &[u8]) -> bool {
    let head = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    let mut it = head.iter().copied().skip_while(u8::is_ascii_whitespace);
    if it.next() != Some(b'{') {
        return false;
    }
    let rest: Vec<u8> = it.skip_while(u8::is_ascii_whitespace).take(8).collect();
    rest.starts_with(b"\"source\"")
}

/// What [`summary_json`] makes of a file.
pub struct RankSummary {
    /// The summary as the row reads it.
    pub value: Value,
    /// The whole `summary --json` document (with `opts.keep_summary`).
    pub kept: Option<Box<serde_json::value::RawValue>>,
    /// The sparkline of the shown device's total timeline.
    pub timeline: Vec<u64>,
}

/// The `summary FILE --json` object of an opened file (with `opts`' device, window and
/// frame rules; its capacity was applied when it was opened) as the row reads it (without
/// `steps`, which it does not read), the whole document as `summary --json`
/// writes it when `opts.keep_summary` (compact), and the sparkline of the shown device's
/// total timeline. The trace is dropped on return.
pub fn summary_json(opened: Opened, opts: &RankOptions) -> Result<RankSummary, String> {
    if opened.devices.is_empty() {
        return Err("the file holds no device traces".into());
    }
    let primary = opened
        .pick(opts.device.as_deref())
        .map_err(|e| e.to_string())?;
    let source = opened
        .devices
        .first()
        .map(|d| d.trace.source.clone())
        .unwrap_or_default();
    let devices: Vec<String> = opened
        .devices
        .iter()
        .map(|d| d.name().to_string())
        .collect();
    let sopts = SummaryOptions {
        tree_frames: if opts.all_frames {
            TreeFrames::All
        } else {
            TreeFrames::User
        },
        fixes: opts.fixes,
        ..SummaryOptions::default()
    };
    let mut summaries: Vec<Summary> = Vec::with_capacity(opened.devices.len());
    let mut timeline = Vec::new();
    for (i, d) in opened.devices.iter().enumerate() {
        let resolved = match &opts.window {
            Some(s) if !d.index.is_empty() => {
                Some(s.resolve(&d.trace, &d.index).map_err(|e| e.to_string())?)
            }
            _ => None,
        };
        summaries.push(d.summary(&sopts, resolved.as_ref()));
        if i == primary {
            timeline = sparkline(d.index.totals(), opts.sparkline_points);
        }
    }
    if summaries.iter().all(|s| s.events == 0) {
        return Err(format!(
            "{source}: the trace has no events (header only?); nothing to summarise"
        ));
    }
    let main = summaries.get(primary).ok_or("no trace to summarise")?;
    let mut doc = DocumentJson::new(main, &summaries, &devices, opts.device.is_some());
    let kept = if opts.keep_summary {
        let mut text = Vec::new();
        crate::clip::to_json_writer(&mut text, &doc, false).map_err(|e| e.to_string())?;
        let text = String::from_utf8(text).map_err(|e| e.to_string())?;
        Some(serde_json::value::RawValue::from_string(text).map_err(|e| e.to_string())?)
    } else {
        None
    };
    // The row reads each device's gated figures from `per_device`, not their steps.
    for d in doc.per_device.iter_mut().flatten() {
        d.steps = StepsJson(&[]);
    }
    doc.main.steps = StepsJson(&[]);
    let value = serde_json::to_value(&doc).map_err(|e| e.to_string())?;
    Ok(RankSummary {
        value,
        kept,
        timeline,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_summary_is_told_from_a_trace_by_its_first_key() {
        assert!(looks_like_summary(b"{\n  \"source\": \"x\""));
        assert!(looks_like_summary(b"\xef\xbb\xbf {\"source\":1}"));
        assert!(!looks_like_summary(b"{\"traceEvents\": []}"));
        assert!(!looks_like_summary(b"{\"memtide\":1}"));
        assert!(!looks_like_summary(b"\x80\x04"));
    }
}
