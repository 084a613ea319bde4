//! The one door into the core: [`open`] reads a file (any format memtide reads), infers the
//! categories it lacks, merges its side sources (`--device-log`, `--nsys`), checks its sums,
//! applies what the user says of the device (`--oom-message`, `--capacity`), and hands back
//! each device indexed with the facts every consumer asks for ([`Device`]). The explorer,
//! every command, the ranks overview, `follow` and the Python API all stand on it.
//! Its reading step alone (read, infer, merge, check; no index) is [`load()`], for what
//! times or inspects the read itself.
//!
//! ```
//! use memtide_core::open::{open, OpenOptions};
//! use memtide_core::formats::Progress;
//!
//! let dir = std::env::temp_dir().join(format!("memtide-open-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir).unwrap();
//! let path = dir.join("run.jsonl");
//! std::fs::write(&path, concat!(
//!     "{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\"}\n",
//!     "{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":4096,\"cat\":\"param\"}\n",
//!     "{\"t\":2,\"op\":\"alloc\",\"id\":2,\"size\":1024,\"cat\":\"activation\"}\n",
//!     "{\"t\":3,\"op\":\"free\",\"id\":2}\n",
//! )).unwrap();
//! let opened = open(&path, &OpenOptions::default(), &Progress::new()).unwrap();
//! let device = &opened.devices[opened.pick(None).unwrap()];
//! assert_eq!(device.name(), "cuda:0");
//! assert_eq!(device.peak.unwrap().bytes.0, 5120);
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```

mod capacity;
mod device;
mod load;
mod model_slot;
mod pick;

pub use capacity::{capacity_floor, check_capacity, CapacityFloor};
pub use device::Device;
pub use load::{infer_missing, load, UserRules};
pub use pick::{is_rocm_alias, pick_device, Holds, UnknownDevice};

use crate::allocator::History;
use crate::analysis::frames::FrameRules;
use crate::formats::jsonl::JsonlDecoder;
use crate::formats::oom_message::{self, OomMessage};
use crate::formats::server_log::ServerLog;
use crate::formats::{Format, FormatError, LoadOptions, Loaded, Progress};
use crate::index::Index;
use crate::trace::Bytes;
use model_slot::ModelSlot;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What to open a file with: how to read it, and what the user says of its device.
#[derive(Clone, Debug, Default)]
pub struct OpenOptions {
    /// How the file and its side files are read.
    pub read: LoadOptions,
    /// `--capacity`: the device's memory; the user's figure wins over the file's and the
    /// message's.
    pub capacity: Option<Bytes>,
    /// `--oom-message`: PyTorch's OOM message, read ([`read_oom_message`]), for the capacity
    /// and the driver's free bytes where the file lacks them.
    pub oom_message: Option<OomMessageFile>,
    /// `--server-log`: the server's startup log, read ([`read_server_log`]); each device gets
    /// its rank's figures for the serving budget.
    pub server_log: Option<Arc<ServerLog>>,
    /// `read.rules`' rules when already read ([`OpenOptions::read_rules`]: a job opens many
    /// files under one rules file, read once); None: [`open`] reads them.
    pub rules: Option<Arc<UserRules>>,
}

impl From<LoadOptions> for OpenOptions {
    /// Reader options alone: no `--capacity`, no `--oom-message`.
    fn from(read: LoadOptions) -> OpenOptions {
        OpenOptions {
            read,
            ..OpenOptions::default()
        }
    }
}

/// PyTorch's OOM message as read from a file, with the file's name for reports.
#[derive(Clone, Debug)]
pub struct OomMessageFile {
    pub message: OomMessage,
    pub name: String,
    /// The file read.
    pub path: std::path::PathBuf,
}

impl OpenOptions {
    /// Reads the `--rules` file now (once for every file opened with these options): a bad
    /// rules file fails before any trace is read.
    pub fn read_rules(&mut self) -> Result<(), OpenError> {
        if self.rules.is_none() {
            let r = UserRules::read(&self.read).map_err(OpenError::SideFile)?;
            self.rules = Some(Arc::new(r));
        }
        Ok(())
    }

    /// The rules: those read ahead, else the `--rules` file's, read now.
    fn user_rules(&self) -> Result<Arc<UserRules>, OpenError> {
        match &self.rules {
            Some(r) => Ok(Arc::clone(r)),
            None => UserRules::read(&self.read)
                .map(Arc::new)
                .map_err(OpenError::SideFile),
        }
    }

    /// Every side file these options read (`--device-log`, `--nsys`, `--categories`,
    /// `--rules`, `--oom-message`): inputs like the trace, which no output may overwrite.
    pub fn side_files(&self) -> Vec<&Path> {
        let r = &self.read;
        [
            r.device_log.as_ref().map(|d| d.path.as_path()),
            r.nsys.as_deref(),
            r.categories.as_deref(),
            r.rules.as_deref(),
            self.oom_message.as_ref().map(|m| m.path.as_path()),
            self.server_log.as_ref().map(|l| l.path.as_path()),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

/// A file opened: its format and devices, ready to analyse.
#[derive(Debug)]
pub struct Opened {
    pub format: Format,
    /// Every device of the file, in file order.
    pub devices: Vec<Device>,
    /// What the user should be told of the opening (where `--oom-message`'s figures differ
    /// from the file's, say), one line each.
    pub notes: Vec<String>,
    /// A followed file: how to read on ([`open_followed`]); None for [`open`].
    pub follow: Option<Follow>,
    /// How long reading and then indexing took (`summary --timings`).
    pub timings: Timings,
    /// The `--rules` file's rules (none without one), read once: every answer reads frames
    /// and categories under them (each device's [`Device::frames`] is built from them).
    pub rules: Arc<UserRules>,
}

/// Where an opening's time went.
#[derive(Clone, Copy, Debug, Default)]
pub struct Timings {
    /// Reading, inferring, merging and checking the file.
    pub read: std::time::Duration,
    /// Indexing the devices and computing their facts (allocator models asked for go on
    /// replaying: the first ask for one waits).
    pub index: std::time::Duration,
}

/// How a followed file is read on: for JSONL the decoder that continues after `offset`
/// bytes; other formats are opened again whole when they change.
#[derive(Debug, Default)]
pub struct Follow {
    pub decoder: Option<JsonlDecoder>,
    /// Bytes of the file already read.
    pub offset: u64,
}

/// Why a file could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The file itself: not readable, not a format memtide reads, or bad inside.
    #[error("cannot read {}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: FormatError,
    },
    /// A side file (`--device-log`, `--rules`, `--nsys`, …): its error names it.
    #[error(transparent)]
    SideFile(FormatError),
    /// `--server-log`: unreadable, or no vLLM or SGLang memory line in it.
    #[error("--server-log {name}: {reason}")]
    ServerLog { name: String, reason: String },
    /// `--oom-message`: unreadable, not PyTorch's message, or of a GPU the file lacks.
    #[error("--oom-message {name}: {reason}")]
    OomMessage { name: String, reason: String },
    /// The file holds no device at all.
    #[error("the file holds no device traces")]
    NoDevices,
    /// `--capacity` below what the file shows the device held ([`capacity_floor`]), or 0.
    #[error("--capacity {given} is impossible: {why}; give the device's real capacity (nvidia-smi's memory.total) or leave --capacity out")]
    Capacity { given: String, why: String },
}

impl OpenError {
    /// The reader's error, where the file itself was at fault.
    pub fn format_error(&self) -> Option<&FormatError> {
        match self {
            OpenError::Read { source, .. } | OpenError::SideFile(source) => Some(source),
            _ => None,
        }
    }
}

impl Opened {
    /// The device the user means ([`pick_device`]: a name, an ordinal, or None for the
    /// first device that ran out of memory, else the first that held memory, else the first
    /// with events).
    pub fn pick(&self, want: Option<&str>) -> Result<usize, UnknownDevice> {
        pick_device(names(&self.devices), want)
    }

    /// A note when `want` named device `i` under PyTorch's other name for it (ROCm).
    pub fn alias_note(&self, want: Option<&str>, i: usize) -> Option<String> {
        let d = self.devices.get(i)?;
        let w = want.filter(|w| is_rocm_alias(w, d.name()))?;
        Some(format!(
            "--device {w} taken as this file's {} (PyTorch on ROCm names its hip devices cuda)",
            d.name()
        ))
    }

    /// Takes how a followed file is read on ([`open_followed`]; for a file opened with
    /// [`open`], no decoder at offset 0).
    pub fn take_follow(&mut self) -> Follow {
        self.follow.take().unwrap_or_default()
    }

    /// Takes device `i` out of the file (None past the end).
    pub fn take(mut self, i: usize) -> Option<Device> {
        (i < self.devices.len()).then(|| self.devices.swap_remove(i))
    }
}

/// Each device's name and what it holds, as [`pick_device`] takes them.
pub(crate) fn names(devices: &[Device]) -> impl Iterator<Item = (&str, Holds)> {
    devices.iter().map(|d| (d.name(), d.holds()))
}

/// Opens `path`: read, infer, merge side sources, check the sums, then per device the index,
/// the allocator history (replayed into its model on a thread of its own, started once the
/// indexes are built, when `opts.read.allocator_models` asks) and the facts every consumer
/// asks for.
pub fn open(path: &Path, opts: &OpenOptions, progress: &Progress) -> Result<Opened, OpenError> {
    let rules = opts.user_rules()?;
    let t0 = std::time::Instant::now();
    let loaded = load::load_with(path, &opts.read, &rules.categories, progress)
        .map_err(|e| read_error(path, e))?;
    finish(loaded, None, opts, rules, t0)
}

/// [`open`] for a file that may still be growing: JSONL keeps its decoder and offset in
/// [`Opened::follow`] to read appends with ([`Device::append`]); other formats are read
/// whole (open them again when they change).
pub fn open_followed(
    path: &Path,
    opts: &OpenOptions,
    progress: &Progress,
) -> Result<Opened, OpenError> {
    let rules = opts.user_rules()?;
    let t0 = std::time::Instant::now();
    let f = load::load_followable(path, &opts.read, &rules.categories, progress)
        .map_err(|e| read_error(path, e))?;
    let follow = Follow {
        decoder: f.decoder,
        offset: f.offset,
    };
    finish(f.loaded, Some(follow), opts, rules, t0)
}

/// Reads `--oom-message FILE` (a job log is fine: bytes that are not UTF-8 read as U+FFFD;
/// past `OOM_MESSAGE_MAX` refused).
pub fn read_oom_message(path: &Path) -> Result<OomMessageFile, OpenError> {
    let name = path.display().to_string();
    let fail = |reason: String| OpenError::OomMessage {
        name: name.clone(),
        reason,
    };
    // A regular file only (a FIFO or `/dev/zero` is refused at once), its size checked on
    // what is read (a file still growing stops at the limit).
    let bytes =
        crate::formats::limit::read_file(path, OOM_MESSAGE_MAX, "an out-of-memory message file")
            .map_err(|e| match crate::formats::limit::too_large(&e) {
                Some(_) => fail(format!(
                    "{e}: paste PyTorch's message into a file of its own"
                )),
                None => fail(format!("cannot read it: {e}")),
            })?;
    let message =
        oom_message::parse(&String::from_utf8_lossy(&bytes)).map_err(|e| fail(e.to_string()))?;
    Ok(OomMessageFile {
        message,
        name,
        path: path.to_path_buf(),
    })
}

/// Reads `--server-log FILE` (a whole job log is fine: only the memory lines of vLLM and
/// SGLang are read; bytes that are not UTF-8 read as U+FFFD; past 256 MiB refused). A file
/// without one memory line is an error.
pub fn read_server_log(path: &Path) -> Result<ServerLog, OpenError> {
    crate::formats::server_log::read(path).map_err(|reason| OpenError::ServerLog {
        name: path.display().to_string(),
        reason,
    })
}

/// The largest `--oom-message` file read (a whole job log is fine; a stray multi-gigabyte
/// file is refused rather than read into memory).
pub(crate) const OOM_MESSAGE_MAX: u64 = 256 << 20;

/// A reader's error: a side file's names that file ("cannot read TRACE" would blame the
/// trace), any other names the trace.
fn read_error(path: &Path, e: FormatError) -> OpenError {
    match e {
        e @ (FormatError::DeviceLog(_) | FormatError::SideFile { .. }) => OpenError::SideFile(e),
        source => OpenError::Read {
            path: path.to_path_buf(),
            source,
        },
    }
}

/// From the read file to ready devices: the user's figures applied, each trace indexed, its
/// allocator history or model attached.
fn finish(
    mut loaded: Loaded,
    follow: Option<Follow>,
    opts: &OpenOptions,
    rules: Arc<UserRules>,
    t0: std::time::Instant,
) -> Result<Opened, OpenError> {
    let read = t0.elapsed();
    let mut notes = Vec::new();
    let mut message_device = None;
    if let Some(m) = &opts.oom_message {
        let (device, said) = apply_oom_message(&mut loaded, m)?;
        notes.extend(said);
        message_device = Some(device);
    }
    if let Some(log) = &opts.server_log {
        for t in &mut loaded.traces {
            t.server_log = Some(log.for_device(&t.device));
        }
    }
    if let Some(c) = opts.capacity {
        for t in &mut loaded.traces {
            t.capacity = Some(c);
            t.capacity_source = Some("--capacity".into());
        }
    }
    let format = loaded.format;
    let mut devices = devices(loaded, &rules.frames);
    // A capacity below what the file shows held is never used for a verdict.
    for d in &mut devices {
        let message = opts
            .oom_message
            .as_ref()
            .filter(|_| message_device.as_deref() == Some(d.name()))
            .map(|m| &m.message);
        notes.extend(capacity::settle(d, opts.capacity.is_some(), message)?);
    }
    Ok(Opened {
        format,
        devices,
        notes,
        follow,
        timings: Timings {
            read,
            index: t0.elapsed().saturating_sub(read),
        },
        rules,
    })
}

/// Applies the OOM message to the trace of its GPU (`cuda:N`; a file of one device: that
/// one); returns that device's name and the notes where the figures disagree.
fn apply_oom_message(
    loaded: &mut Loaded,
    m: &OomMessageFile,
) -> Result<(String, Vec<String>), OpenError> {
    let want = format!("cuda:{}", m.message.gpu);
    let one = loaded.traces.len() == 1;
    let Some(t) = loaded
        .traces
        .iter_mut()
        .enumerate()
        .find(|(i, t)| t.device == want || (one && *i == 0))
        .map(|(_, t)| t)
    else {
        return Err(OpenError::OomMessage {
            name: m.name.clone(),
            reason: format!(
                "the message is of GPU {}, and the file has no {want}",
                m.message.gpu
            ),
        });
    };
    let notes = oom_message::apply(t, &m.message, &m.name)
        .into_iter()
        .map(|note| format!("--oom-message {note}"))
        .collect();
    Ok((t.device.clone(), notes))
}

/// Indexes each trace into a device with its allocator history: models when the load asked
/// for them (their replay started once every index is built, waited for on the first ask),
/// else the histories as read.
fn devices(loaded: Loaded, rules: &FrameRules) -> Vec<Device> {
    let Loaded {
        traces,
        allocators,
        models,
        ..
    } = loaded;
    let mut histories: Vec<Option<History>> = Vec::new();
    let mut allocators = allocators;
    for t in &traces {
        histories.push(
            allocators
                .iter()
                .position(|h| h.device == t.device)
                .map(|i| allocators.swap_remove(i)),
        );
    }
    let mut devices: Vec<Device> = traces
        .into_iter()
        .zip(histories)
        .map(|(trace, history)| {
            let index = Index::build(&trace);
            Device::with_history(trace, index, history, rules)
        })
        .collect();
    if models.devices().is_empty() {
        return devices;
    }
    // The indexes are built: the models' replay may have the second core now. It is not
    // waited for here: the first ask for a model waits.
    let mut models = models;
    models.start();
    let names: Vec<String> = devices.iter().map(|d| d.name().to_string()).collect();
    for (d, slot) in devices.iter_mut().zip(ModelSlot::assign(models, &names)) {
        if slot.expected() {
            d.set_model_slot(slot);
        }
    }
    devices
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::formats::device_log::DeviceLogOptions;

    #[test]
    fn every_side_file_read_is_an_input_no_output_may_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let msg = dir.path().join("oom.txt");
        std::fs::write(
            &msg,
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 16.00 GiB of which 510.00 MiB is free. Including non-PyTorch memory, this process has 15.50 GiB memory in use. Of the allocated memory 14.75 GiB is allocated by PyTorch, and 260.00 MiB is reserved by PyTorch but unallocated.",
        )
        .unwrap();
        let opts = OpenOptions {
            read: LoadOptions {
                device_log: Some(DeviceLogOptions {
                    path: "gpu.csv".into(),
                    ..Default::default()
                }),
                nsys: Some("run.sqlite".into()),
                categories: Some("cats.json".into()),
                rules: Some("rules.toml".into()),
                ..Default::default()
            },
            oom_message: Some(read_oom_message(&msg).unwrap()),
            ..Default::default()
        };
        let got: Vec<&Path> = opts.side_files();
        let want: Vec<&Path> = vec![
            Path::new("gpu.csv"),
            Path::new("run.sqlite"),
            Path::new("cats.json"),
            Path::new("rules.toml"),
            msg.as_path(),
        ];
        assert_eq!(got, want);
        assert!(OpenOptions::default().side_files().is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn an_oom_message_that_is_not_a_regular_file_is_refused_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            // Opening a FIFO with no writer would block forever: it is refused first.
            let e = read_oom_message(&fifo).unwrap_err().to_string();
            assert!(e.contains("a FIFO (named pipe), not a regular file"), "{e}");
        }
        let e = read_oom_message(Path::new("/dev/zero"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("a character device, not a regular file"), "{e}");
    }
}
