//! What every front end asks the door for beyond the path: the input options (`--device`,
//! the side files, `--lenient`, …) as one plain type the command line, Python and the tests
//! build, and the core's open options made from them.

use anyhow::Result;
use memtide_core::formats::{DeviceLogOptions, Histories, LoadOptions, Threads};
use memtide_core::open::OpenOptions;
use std::path::{Path, PathBuf};

/// How a file and its side files are read: the command line's input flags, Python's keyword
/// arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InputOptions {
    /// The device meant: an ordinal (0, 1, …) or a name (`cuda:1`); None: the first with
    /// events.
    pub device: Option<String>,
    /// Skip and count bad JSONL and device-log lines instead of failing on the first.
    pub lenient: bool,
    /// A device-usage log (nvidia-smi CSV) merged with the trace.
    pub device_log: Option<PathBuf>,
    /// The zone of the log's local timestamps, µs east of UTC.
    pub device_log_tz: Option<i64>,
    /// Added to every log time after the zone, µs.
    pub device_log_offset: Option<i64>,
    /// PyTorch's out-of-memory message, in a file of its own or a job log.
    pub oom_message: Option<PathBuf>,
    /// An Nsight Systems SQLite export of the same run.
    pub nsys: Option<PathBuf>,
    /// The inference server's startup log (vLLM, SGLang): its memory figures reconcile the
    /// serving budget.
    pub server_log: Option<PathBuf>,
    /// An `export_memory_timeline` file whose categories label a Kineto trace.
    pub categories: Option<PathBuf>,
    /// A rules TOML: category rules and `[[frames]]` patterns.
    pub rules: Option<PathBuf>,
    /// Keep C++ frames in snapshot stacks.
    pub cpp_frames: bool,
    /// Read on one thread.
    pub single_thread: bool,
}

impl InputOptions {
    /// The reader options (the headless answers' histories: enough to explain an OOM).
    pub fn load_options(&self) -> LoadOptions {
        LoadOptions {
            lenient: self.lenient,
            cpp_frames: self.cpp_frames,
            categories: self.categories.clone(),
            rules: self.rules.clone(),
            device_log: self.device_log.clone().map(|path| DeviceLogOptions {
                path,
                tz_east_us: self.device_log_tz,
                offset_us: self.device_log_offset.unwrap_or(0),
            }),
            nsys: self.nsys.clone(),
            threads: if self.single_thread {
                Threads::One
            } else {
                Threads::Auto
            },
            // The headless answers read the histories themselves; the explorer asks for
            // models.
            allocator_models: false,
            // What they read a history for is an OOM's explanation and the final segments
            // (`whatif` asks for whole histories).
            histories: Histories::ForOoms,
        }
    }

    /// The side files these options name (`--device-log`, `--nsys`, `--categories`,
    /// `--rules`, `--oom-message`, `--server-log`): inputs like the trace, which no output may overwrite.
    pub fn side_files(&self) -> Vec<&Path> {
        [
            self.device_log.as_deref(),
            self.nsys.as_deref(),
            self.categories.as_deref(),
            self.rules.as_deref(),
            self.oom_message.as_deref(),
            self.server_log.as_deref(),
        ]
        .into_iter()
        .flatten()
        .collect()
    }

    /// The core's open options: these, `--oom-message` and `--server-log` read, and
    /// `capacity` (a size as written, checked; None where the answer applies none).
    pub fn open_options(&self, capacity: Option<&str>) -> Result<OpenOptions> {
        let oom_message = match &self.oom_message {
            Some(p) => Some(memtide_core::open::read_oom_message(p)?),
            None => None,
        };
        let server_log = match &self.server_log {
            Some(p) => Some(std::sync::Arc::new(memtide_core::open::read_server_log(p)?)),
            None => None,
        };
        let capacity = capacity.map(crate::sizes::capacity).transpose()?;
        Ok(OpenOptions {
            read: self.load_options(),
            capacity,
            oom_message,
            server_log,
            rules: None,
        })
    }
}
