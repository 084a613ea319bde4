//! The one door into the core: a file read, its devices indexed, the device picked. Every
//! Python entry that opens a file goes through [`open`].

use memtide::cli::load::{apply_capacity, apply_oom_message, index_all, load_options, Indexed};
use memtide::cli::InputArgs;
use memtide_core::analysis::frames::FrameRules;
use memtide_core::formats::{Format, FormatError, Histories, Progress};
use memtide_core::load::UnknownDevice;
use std::path::{Path, PathBuf};

/// What `memtide.open` asks for beyond the path.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The flags every reading command shares (`--device`, `--device-log`, `--rules`, …).
    pub input: InputArgs,
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
    pub devices: Vec<Indexed>,
    /// The device asked for (`device=`), else the first with events.
    pub primary: usize,
    /// Whether `device=` was given (`summary --json` then says so).
    pub device_given: bool,
    /// The frame rules of `--rules` (the built-in ones without it).
    pub frame_rules: FrameRules,
}

/// Why a file could not be opened.
#[derive(Debug)]
pub enum OpenFail {
    /// The reader refused the file (or a side file): where and why.
    Format(FormatError),
    /// `device=` names no device of the file.
    Device(UnknownDevice),
    /// Anything else (a bad `capacity=`, an `--oom-message` file that does not fit).
    Other(anyhow::Error),
}

/// Reads `path` as `memtide summary` does (same options, same device rule), indexing every
/// device. The only function of this crate that loads a file.
pub fn open(path: &Path, o: &Options, progress: &Progress) -> Result<Opened, OpenFail> {
    let mut opts = load_options(&o.input);
    if o.whole_histories {
        opts.histories = Histories::Whole;
    }
    let mut loaded = memtide_core::load::load(path, &opts, progress).map_err(OpenFail::Format)?;
    apply_oom_message(&mut loaded, &o.input).map_err(OpenFail::Other)?;
    apply_capacity(&mut loaded, o.capacity.as_deref()).map_err(OpenFail::Other)?;
    if loaded.traces.is_empty() {
        return Err(OpenFail::Other(anyhow::anyhow!(
            "the file holds no device traces"
        )));
    }
    let primary = memtide_core::load::pick_device(
        loaded
            .traces
            .iter()
            .map(|t| (t.device.as_str(), !t.is_empty())),
        o.input.device.as_deref(),
    )
    .map_err(OpenFail::Device)?;
    let frame_rules = memtide_core::load::frame_rules(&opts).map_err(OpenFail::Format)?;
    let (format, devices) = index_all(loaded);
    Ok(Opened {
        path: path.to_path_buf(),
        format,
        devices,
        primary,
        device_given: o.input.device.is_some(),
        frame_rules,
    })
}
