//! The explorer's view of the core's devices: the core's [`Device`] (shared with the
//! workers behind an `Arc`), a load in progress, what the follow loader hands back, and which
//! device of a file to show.

use memtide_core::formats::{JsonlDecoder, Progress};
pub use memtide_core::open::Device;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A load in progress, sampled on ticks.
#[derive(Debug, Clone)]
pub struct LoadState {
    pub gen: u64,
    pub progress: Progress,
    pub done: u64,
    pub total: u64,
    pub started: Option<Instant>,
    pub elapsed: Duration,
    /// Set by a follow loader while the file is not there yet (`-f` before the recorder
    /// made it); `waiting_now` is its value at the last tick.
    pub waiting: Arc<AtomicBool>,
    pub waiting_now: bool,
}

impl LoadState {
    /// A load of generation `gen` that has not started reading yet.
    pub fn new(gen: u64, progress: Progress) -> LoadState {
        LoadState {
            gen,
            progress,
            done: 0,
            total: 0,
            started: None,
            elapsed: Duration::ZERO,
            waiting: Arc::default(),
            waiting_now: false,
        }
    }

    /// Samples the progress counters at `now` (a timer tick).
    pub fn sample(&mut self, now: Instant) {
        self.done = self.progress.done();
        self.total = self.progress.total();
        self.waiting_now = self.waiting.load(Ordering::Relaxed);
        let s = *self.started.get_or_insert(now);
        self.elapsed = now.saturating_duration_since(s);
    }
}

/// What the follow loader hands back: the devices, and for JSONL the decoder to continue.
#[derive(Debug)]
pub struct FollowLoad {
    pub devices: Vec<Arc<Device>>,
    pub decoder: Option<Box<JsonlDecoder>>,
    /// Bytes of the file already read.
    pub offset: u64,
    /// JSONL grows by appends; other formats are reloaded whole on change.
    pub appendable: bool,
}

/// Whether `want` (a name or an ordinal) names one of `devs`.
pub fn has_device(devs: &[Arc<Device>], want: &str) -> bool {
    memtide_core::open::pick_device(names(devs), Some(want)).is_ok()
}

/// The device the user asked for (name or ordinal: the core's rule), else the first that ran
/// out of memory, else the first that held memory, else the first with events.
pub fn pick_device(devs: &[Arc<Device>], want: Option<&str>) -> usize {
    memtide_core::open::pick_device(names(devs), want)
        .or_else(|_| memtide_core::open::pick_device(names(devs), None))
        .unwrap_or(0)
}

/// Each device's name and what it holds, as the core's device rule takes them.
fn names(devs: &[Arc<Device>]) -> impl Iterator<Item = (&str, memtide_core::open::Holds)> {
    devs.iter().map(|d| (d.trace.device.as_str(), d.holds()))
}
