//! Input formats. Each reader yields the same model ([`crate::trace::Trace`], one per device).
//! Readers do not infer categories: a trace whose file carries none says
//! [`crate::trace::BandsSource::Inferred`], and the door's reading step
//! ([`crate::open::load()`]) runs the inference after reading. No terminal code.

pub(crate) mod device_log;
pub(crate) mod input;
mod json;
pub(crate) mod jsonl;
pub(crate) mod kineto;
pub(crate) mod memory_timeline;
pub(crate) mod nsys;
pub(crate) mod oom_message;
pub(crate) mod pickle;
pub mod server_log;
pub mod snapshot;

// The input plumbing keeps its paths inside the crate (`formats::source`, `formats::limit`, …).
use input::bytes_memo;
pub(crate) use input::{detect, error, limit, source};

pub use detect::{detect, Format};
pub use device_log::{
    parse as parse_device_log, parse_offset as parse_device_log_offset,
    parse_tz as parse_device_log_tz, DeviceLog, DeviceLogOptions, LogFormat, LogSample,
};
pub use error::FormatError;
pub use jsonl::write::JsonlWriter;
pub use jsonl::{feed_two_threads, JsonlDecoder, JsonlOptions};
pub use kineto::{read as read_kineto, step_like, PREEXISTING};
pub use limit::read_text_file;
pub use pickle::{unpickle, walk_opcodes, NoHook};
pub use source::{from_reader, open as open_input, open_regular, Input, Progress};

use crate::trace::Trace;
use std::io::Read;
use std::path::{Path, PathBuf};

/// What the user asked for when loading.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// Skip and count bad JSONL lines instead of failing.
    pub lenient: bool,
    /// Keep C++ frames in snapshot stacks (hidden by default).
    pub cpp_frames: bool,
    /// A PyTorch `export_memory_timeline` file whose categories label a Kineto trace.
    pub categories: Option<PathBuf>,
    /// A TOML file of category rules for inference.
    pub rules: Option<PathBuf>,
    /// A device-usage log merged with a snapshot or Kineto trace (`--device-log`).
    pub device_log: Option<device_log::DeviceLogOptions>,
    /// An Nsight Systems SQLite export merged with a snapshot (`--nsys`): memory outside
    /// PyTorch, by library.
    pub nsys: Option<PathBuf>,
    /// Whether a second thread reads ahead or parses (the results are the same either way).
    pub threads: Threads,
    /// Snapshots: replay each allocator history into its model, for [`Loaded::models`] (on
    /// a thread of its own once started: [`crate::allocator::Models::start`]); the explorer
    /// asks for this.
    pub allocator_models: bool,
    /// Snapshots: which allocator histories keep their trace entries.
    pub histories: Histories,
}

/// Which allocator histories a snapshot load keeps whole.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Histories {
    /// Every history has its entries (the explorer, `whatif`).
    #[default]
    Whole,
    /// Entries only when the file records an OOM (their one use then is explaining it); the
    /// final segments always. For the commands that read a history for nothing else
    /// (`summary`, `check`, the ranks overview): the entries were a fifth of the peak memory.
    ForOoms,
}

/// How many threads a load may use. Every choice gives the same trace; tests hold them to
/// that on every fixture.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Threads {
    /// A second thread where the file is big enough for it to pay.
    #[default]
    Auto,
    /// This thread only (`--single-thread`): for comparison, or a machine shared with a run.
    One,
    /// A second thread whatever the size (tests: the threaded path on small fixtures).
    Always,
}

impl Threads {
    /// Whether a second thread is used for a file of `size` bytes, worth one from `from`.
    pub fn second_for(self, size: u64, from: u64) -> bool {
        match self {
            Threads::Auto => size >= from,
            Threads::One => false,
            Threads::Always => true,
        }
    }
}

/// Everything read from one file: one trace per device, in device order.
#[derive(Debug)]
pub struct Loaded {
    pub format: Format,
    pub traces: Vec<Trace>,
    /// Snapshots: the allocator history of each CUDA device (segments and blocks over time;
    /// [`crate::allocator`]), matched to `traces` by device name. Empty for other formats.
    pub allocators: Vec<crate::allocator::History>,
    /// Snapshots loaded with [`LoadOptions::allocator_models`]: those histories to replay
    /// into their models (then `allocators` is empty), held until started or still on
    /// their thread: [`crate::allocator::Models::wait`] replays or waits.
    pub models: crate::allocator::Models,
}

/// Reads `path` whole, detecting its format from content (no category inference: see
/// [`crate::open::load()`]).
pub fn read(path: &Path, opts: &LoadOptions, progress: &Progress) -> Result<Loaded, FormatError> {
    let input = source::open(path, progress)?;
    let source_name = path.display().to_string();
    crate::budget::set_context(&format!("cannot read {source_name}"));
    if input.head.is_empty() {
        return Err(FormatError::Empty(
            "the file is empty: expected a memtide JSONL v1 file, a PyTorch snapshot (pickle or JSON) or a Kineto trace".into(),
        ));
    }
    if input.head.starts_with(b"SQLite format 3\0") {
        return Err(FormatError::Unrecognised(
            "an SQLite database, not a trace: an Nsight Systems export is read beside the run's PyTorch snapshot, `memtide summary snapshot.pickle --nsys FILE.sqlite`".into(),
        ));
    }
    let Some(format) = detect(&input.head) else {
        return Err(FormatError::Unrecognised(format!(
            "{} does not look like memtide JSONL (first line {{\"memtide\":1,...}}), a PyTorch snapshot pickle (starts with byte 0x80), a snapshot JSON, a Kineto trace ({{\"traceEvents\":...}}) or an export_memory_timeline file; it starts with {}",
            if input.gzip { "the decompressed content" } else { "the file" },
            describe_head(&input.head)
        )));
    };
    // The Kineto reader reads ahead on its own thread, into its own chunks.
    let input = match format {
        Format::Kineto | Format::MemoryTimeline => input,
        _ => input.read_ahead(opts.threads),
    };
    let (mut allocators, mut models) = (Vec::new(), crate::allocator::Models::none());
    let traces = match format {
        Format::Jsonl => vec![read_jsonl(&source_name, input, opts)?],
        Format::SnapshotPickle | Format::SnapshotJson => {
            let s = snapshot::read(&source_name, input, format, opts, progress)?;
            allocators = s.histories;
            models = s.models;
            s.traces
        }
        Format::Kineto | Format::MemoryTimeline => {
            kineto::read(&source_name, input, format, opts, progress)?
        }
    };
    Ok(Loaded {
        format,
        traces,
        allocators,
        models,
    })
}

/// Refuses a trace whose byte sums overflow (checked after inference, which moves bytes
/// between bands).
pub(crate) fn check_byte_sums(traces: &[Trace]) -> Result<(), FormatError> {
    for t in traces {
        t.check_byte_sums()
            .map_err(|e| FormatError::Invalid(format!("{}: {e}", t.device)))?;
    }
    Ok(())
}

fn describe_head(head: &[u8]) -> String {
    let n = head.len().min(16);
    let printable = head[..n].iter().all(|c| c.is_ascii_graphic() || *c == b' ');
    if printable {
        format!("{:?}", String::from_utf8_lossy(&head[..n]))
    } else {
        let hex: Vec<String> = head[..n].iter().map(|b| format!("{b:02x}")).collect();
        format!("bytes {}", hex.join(" "))
    }
}

/// Reads the complete lines of a JSONL file that may still be growing, keeping the decoder so
/// a follower can continue from the returned byte offset (the pending equal-`t` group is
/// applied; a torn last line stays in the decoder).
pub(crate) fn read_jsonl_resumable(
    path: &Path,
    opts: &LoadOptions,
    progress: &Progress,
) -> Result<(Trace, jsonl::JsonlDecoder, u64), FormatError> {
    let mut trace = Trace::new("cuda:0", path.display().to_string(), "jsonl");
    let mut dec = jsonl::JsonlDecoder::new(jsonl::JsonlOptions {
        lenient: opts.lenient,
        has_external_spans: None,
    });
    // A followed file is plain (its head was detected as JSONL), so bytes fed (after a
    // byte-order mark) = file offset.
    let input = source::open(path, progress)?.read_ahead(opts.threads);
    let skipped = input.skipped;
    let offset = skipped + feed_all(input, opts.threads, &mut dec, &mut trace)?;
    dec.flush(&mut trace)?;
    trace
        .check_byte_sums()
        .map_err(|e| FormatError::Invalid(format!("{}: {e}", trace.device)))?;
    Ok((trace, dec, offset))
}

/// JSONL files from this size are read and decoded on a second thread while the first
/// applies the events (`jsonl::feed_two_threads`).
const JSONL_TWO_THREADS_FROM: u64 = 4 << 20;

/// Feeds everything `input` holds to the decoder (progress and cancellation come from the
/// input's counting reader); returns the bytes fed.
fn feed_all(
    input: source::Input,
    threads: Threads,
    dec: &mut jsonl::JsonlDecoder,
    trace: &mut Trace,
) -> Result<u64, FormatError> {
    if threads.second_for(input.file_size, JSONL_TWO_THREADS_FROM) {
        return jsonl::feed_two_threads(dec, trace, input.into_reader());
    }
    let mut reader = input.into_reader();
    let mut buf = vec![0u8; 4 << 20];
    let mut fed = 0u64;
    loop {
        let n = reader.read(&mut buf).map_err(source::io_or_cancel)?;
        if n == 0 {
            return Ok(fed);
        }
        fed += n as u64;
        dec.feed(trace, &buf[..n])?;
    }
}

/// Streams a JSONL file through the incremental decoder (constant extra memory).
fn read_jsonl(
    source: &str,
    input: source::Input,
    opts: &LoadOptions,
) -> Result<Trace, FormatError> {
    // `sample` lines stand for external memory only when the file has no explicit external
    // spans; a streaming scan of the whole file (a few GB/s) decides it, at the first sample.
    let mut trace = Trace::new("cuda:0", source, "jsonl");
    let mut dec = jsonl::JsonlDecoder::new(jsonl::JsonlOptions {
        lenient: opts.lenient,
        has_external_spans: None,
    });
    if !input.gzip {
        let path = Path::new(source).to_path_buf();
        dec.set_external_probe(jsonl::ExternalProbe(Box::new(move || {
            scan_for_external(&path)
        })));
    }
    feed_all(input, opts.threads, &mut dec, &mut trace)?;
    dec.finish(&mut trace)?;
    if !dec.header_seen() {
        return Err(FormatError::Empty(
            "no memtide JSONL header line: the file holds only comments or blank lines".into(),
        ));
    }
    Ok(trace)
}

fn scan_for_external(path: &Path) -> Result<bool, FormatError> {
    let mut f = source::open_regular(path).map_err(source::not_regular)?;
    let finder = memchr::memmem::Finder::new(b"external\"");
    let mut buf = vec![0u8; 4 << 20];
    let mut carry = 0usize;
    loop {
        let n = f.read(&mut buf[carry..])?;
        if n == 0 {
            return Ok(false);
        }
        let end = carry + n;
        for pos in finder.find_iter(&buf[..end]) {
            // `"op":"external"` (any spacing): look back for `"op"` before the value.
            let before = &buf[pos.saturating_sub(24)..pos];
            if memchr::memmem::find(before, b"\"op\"").is_some() && before.ends_with(b"\"") {
                return Ok(true);
            }
        }
        let keep = 32.min(end);
        buf.copy_within(end - keep..end, 0);
        carry = keep;
    }
}
