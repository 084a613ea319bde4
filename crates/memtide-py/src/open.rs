//! The one door into the core: a file read, its devices indexed, the device picked. Every
//! Python entry that opens a file goes through [`open`].

use memtide_core::analysis::FrameRules;
use memtide_core::formats::{Format, Histories, Progress};
use memtide_core::open::{Device, OpenError, UnknownDevice};
use memtide_report::InputOptions;
use std::path::{Path, PathBuf};

/// What `memtide.open` asks for beyond the path.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The options every reading answer shares (`device=`, `device_log=`, `rules=`, …).
    pub input: InputOptions,
    /// `--capacity SIZE`.
    pub capacity: Option<String>,
    /// Keep every allocator history whole (for `allocator_at`; `summary` keeps them only
    /// to explain an OOM).
    pub whole_histories: bool,
}

/// A file read: every device indexed, and the one asked for.
pub struct Opened {
    pub path: PathBuf,
    pub format: Format,
    pub devices: Vec<Device>,
    /// The device asked for (`device=`), else the first that ran out of memory, else the
    /// first that held memory, else the first with events.
    pub primary: usize,
    /// Whether `device=` was given (`summary --json` then says so).
    pub device_given: bool,
    /// The frame rules of `--rules` (the built-in ones without it).
    pub frame_rules: FrameRules,
}

/// Why a file could not be opened.
#[derive(Debug)]
pub enum OpenFail {
    /// The core's door refused the file (or a side file): where and why.
    Open(OpenError),
    /// `device=` names no device of the file.
    Device(UnknownDevice),
    /// Anything else (a bad `capacity=`, an `--oom-message` file that does not fit).
    Other(anyhow::Error),
}

impl std::fmt::Display for OpenFail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenFail::Open(e) => write!(f, "{e}"),
            OpenFail::Device(d) => write!(f, "{d}"),
            OpenFail::Other(a) => write!(f, "{a:#}"),
        }
    }
}

/// Opens `path` through the core's door (`memtide_core::open`) with the options `memtide
/// summary` reads with (the same flags, the same device rule); the opening's notes go to
/// stderr as the commands say them. The only function of this crate that opens a file.
pub fn open(path: &Path, o: &Options, progress: &Progress) -> Result<Opened, OpenFail> {
    let mut opts = o
        .input
        .open_options(o.capacity.as_deref())
        .map_err(OpenFail::Other)?;
    if o.whole_histories {
        opts.read.histories = Histories::Whole;
    }
    let opened = memtide_core::open::open(path, &opts, progress).map_err(OpenFail::Open)?;
    memtide_report::prologue::say_notes(&opened, &mut say);
    if opened.devices.is_empty() {
        return Err(OpenFail::Open(OpenError::NoDevices));
    }
    let want = o.input.device.as_deref();
    let primary = opened.pick(want).map_err(OpenFail::Device)?;
    if let Some(note) = opened.alias_note(want, primary) {
        say(&note);
    }
    let frame_rules = opened.rules.frames.clone();
    Ok(Opened {
        path: path.to_path_buf(),
        format: opened.format,
        devices: opened.devices,
        primary,
        device_given: want.is_some(),
        frame_rules,
    })
}

/// A note of an opening, on stderr as the command says it (`memtide: note: …`, one line).
pub fn say(note: &str) {
    eprintln!(
        "{}",
        memtide_report::safe_text::one_line(&format!("memtide: note: {note}"))
    );
}
