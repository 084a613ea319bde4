//! The columnar trace: events on the event axis, storages (intervals), views, marks.
//!
//! Readers append to a [`Trace`] through [`Trace::push_event`], [`Trace::open`] and
//! [`Trace::close`]; the interval index (`crate::index`) consumes the change log
//! incrementally, so appending never forces a rebuild.

use super::band::{Band, Category};
use super::column64::Column64;
use super::external::{DeviceLogInfo, ExternalDetail, NsysInfo};
use super::intern::Interner;
use super::name_column::NameColumn;
use super::size_column::SizeColumn;
use super::src_id_column::SrcIdColumn;
use super::units::{AllocId, Bytes, Seq, StackId, StrId, Ts};
use rustc_hash::FxHashMap;
use std::borrow::Cow;

/// Unit of the `t` field of the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Clock {
    /// Microseconds (stored as ns).
    Us,
    /// Nanoseconds.
    Ns,
    /// A bare sequence number: no wall-clock time is available.
    Seq,
}

impl Clock {
    pub fn has_time(self) -> bool {
        !matches!(self, Clock::Seq)
    }
}

/// What an event on the event axis was in the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum EventKind {
    Alloc = 0,
    Free = 1,
    View = 2,
    Release = 3,
    Reserve = 4,
    Unreserve = 5,
    External = 6,
    Sample = 7,
    Mark = 8,
    Oom = 9,
    FreeRequested = 10,
    Other = 11,
}

impl EventKind {
    const ALL: [EventKind; 12] = [
        EventKind::Alloc,
        EventKind::Free,
        EventKind::View,
        EventKind::Release,
        EventKind::Reserve,
        EventKind::Unreserve,
        EventKind::External,
        EventKind::Sample,
        EventKind::Mark,
        EventKind::Oom,
        EventKind::FreeRequested,
        EventKind::Other,
    ];
    pub fn from_u8(v: u8) -> EventKind {
        Self::ALL
            .get(v as usize)
            .copied()
            .unwrap_or(EventKind::Other)
    }
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Alloc => "alloc",
            EventKind::Free => "free",
            EventKind::View => "view",
            EventKind::Release => "release",
            EventKind::Reserve => "reserve",
            EventKind::Unreserve => "unreserve",
            EventKind::External => "external",
            EventKind::Sample => "sample",
            EventKind::Mark => "mark",
            EventKind::Oom => "oom",
            EventKind::FreeRequested => "free_requested",
            EventKind::Other => "other",
        }
    }
}

/// What a storage interval stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum StorageKind {
    /// Allocated bytes: counted in the five bands.
    Block = 0,
    /// Reserved allocator segment: counted in `reserved`, never in a band.
    Segment = 1,
}

/// Kinds of marks (the JSONL `mark` op: docs/formats.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MarkKind {
    Step,
    Phase,
    ResetPeak,
    Note,
    Oom,
    Annotation,
    /// A stream capture open (a CUDA graph being captured): `at` where it opens, `end` where
    /// it closes; named after the annotation around it (`capture_8192_PIECEWISE`), if any.
    Capture,
}

impl MarkKind {
    pub fn parse(s: &str) -> Option<MarkKind> {
        Some(match s {
            "step" => MarkKind::Step,
            "phase" => MarkKind::Phase,
            "reset_peak" => MarkKind::ResetPeak,
            "note" => MarkKind::Note,
            "oom" => MarkKind::Oom,
            "annotation" => MarkKind::Annotation,
            "capture" => MarkKind::Capture,
            _ => return None,
        })
    }
    pub fn name(self) -> &'static str {
        match self {
            MarkKind::Step => "step",
            MarkKind::Phase => "phase",
            MarkKind::ResetPeak => "reset_peak",
            MarkKind::Note => "note",
            MarkKind::Oom => "oom",
            MarkKind::Annotation => "annotation",
            MarkKind::Capture => "capture",
        }
    }
}

/// A named point on the event axis. Steps and phases delimit windows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mark {
    pub at: Seq,
    pub ts: Ts,
    pub name: StrId,
    pub kind: MarkKind,
    /// Optional end of a span (Kineto `ProfilerStep#N` spans, snapshot annotations).
    pub end: Option<Seq>,
    /// For OOM marks: bytes requested.
    pub size: Option<Bytes>,
    /// For OOM marks: bytes the device reported free.
    pub free: Option<Bytes>,
    /// For OOM marks: the failed request's stack, where the source records it
    /// (`StackId(0)`: none).
    pub stack: StackId,
}

/// A tensor reference that shares a storage (the base tensor is not a view).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct View {
    pub storage: AllocId,
    /// The source's own id for this tensor.
    pub tensor: u64,
    pub name: StrId,
    pub stack: StackId,
    /// The bytes the view spans (its elements × element size), where the source records it
    /// (memtide JSONL `view` `size`); None: not recorded.
    pub bytes: Option<Bytes>,
    pub created: Seq,
    pub released: Option<Seq>,
}

/// One entry of the change log: a storage opened or closed at a position. Eight bytes (one
/// per event of a snapshot): the position in 31 bits with the open flag above it, and the
/// storage. A trace keeps no change past [`Change::LAST_POSITION`] (see [`Trace::log`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Change {
    at_open: u32,
    storage: AllocId,
}

impl Change {
    /// The last position a change can be at (2^31 − 1).
    pub const LAST_POSITION: u64 = (1 << 31) - 1;
    const OPEN: u32 = 1 << 31;

    /// A change at `at` (at most [`Change::LAST_POSITION`]; a later one is kept there).
    pub fn new(at: Seq, storage: AllocId, open: bool) -> Change {
        Change {
            at_open: column_position(at) | if open { Change::OPEN } else { 0 },
            storage,
        }
    }
    pub fn at(&self) -> Seq {
        Seq(u64::from(self.at_open & !Change::OPEN))
    }
    pub fn storage(&self) -> AllocId {
        self.storage
    }
    /// True: the storage opened; false: it closed.
    pub fn open(&self) -> bool {
        self.at_open & Change::OPEN != 0
    }
}

impl std::fmt::Debug for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Change")
            .field("at", &self.at())
            .field("storage", &self.storage)
            .field("open", &self.open())
            .finish()
    }
}

/// Where the band of each storage came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BandsSource {
    Recorded,
    /// The file carries none: the reader leaves them to the door's reading step (`open/load.rs`), which infers them.
    Inferred,
    /// The source names no allocation: every byte is in the unknown band.
    Unavailable,
}

impl BandsSource {
    pub fn name(self) -> &'static str {
        match self {
            BandsSource::Recorded => "recorded",
            BandsSource::Inferred => "inferred",
            BandsSource::Unavailable => "unavailable",
        }
    }
}

/// What the `#N` event numbers shown to users count (docs/summary-json.md, "Event numbers").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventNumbers {
    /// The source's own order: JSONL event lines in file order, snapshot trace entries.
    Source,
    /// Positions on the event axis (Kineto: time order, ties in file order); the file
    /// position is kept as the source index beside it.
    Axis,
}

/// Distributed-run facts a profiler recorded (Kineto `distributedInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Distributed {
    pub rank: Option<u64>,
    pub world_size: Option<u64>,
    pub backend: Option<String>,
}

impl Distributed {
    /// `rank 3 of 8 · nccl` (the parts that are known).
    pub fn label(&self) -> String {
        let mut s = match (self.rank, self.world_size) {
            (Some(r), Some(w)) => format!("rank {r} of {w}"),
            (Some(r), None) => format!("rank {r}"),
            (None, Some(w)) => format!("world size {w}"),
            (None, None) => String::new(),
        };
        if let Some(b) = &self.backend {
            if !s.is_empty() {
                s.push_str(" · ");
            }
            s.push_str(b);
        }
        s
    }
}

/// Why the live set of a trace is unavailable, shown where the live list would be.
pub const NO_IDENTITIES: &str =
    "this file records no addresses: the live set is unavailable (totals are the running sum of Bytes)";

/// Sentinel for "not freed within the trace" (positions are at most
/// [`Change::LAST_POSITION`], so a storage's start and end take four bytes each).
pub const OPEN_END: u32 = u32::MAX;

/// A position as a storage column holds it (past [`Change::LAST_POSITION`], where the trace
/// keeps no change and says so, it is held at that position).
fn column_position(at: Seq) -> u32 {
    at.0.min(Change::LAST_POSITION) as u32
}

/// Storage flag: live from before the first event (ring buffer lost its alloc, or pre-existing).
pub const FLAG_FROM_START: u8 = 1;
/// Storage flag: its category was inferred, not recorded.
pub const FLAG_INFERRED: u8 = 2;
/// Storage flag: the reader knows the top-level op its alloc was made in (Kineto `cpu_op`
/// spans), so `FLAG_FREED_IN_OP` is meaningful.
pub(crate) const FLAG_OP_KNOWN: u8 = 4;
/// Storage flag: freed before that top-level op ended (PyTorch's TEMPORARY rule).
pub(crate) const FLAG_FREED_IN_OP: u8 = 8;

/// Columnar table of storages: each is the interval `[start, end)` on the event axis.
#[derive(Debug, Default, Clone)]
pub struct Storages {
    pub start: Vec<u32>,
    pub end: Vec<u32>,
    /// Bytes of each storage (4 bytes each below 4 GiB: see [`Trace::size`]).
    pub(crate) size: SizeColumn,
    pub cat: Vec<u8>,
    pub kind: Vec<u8>,
    pub flags: Vec<u8>,
    /// Names (on the side while few storages have one: see [`Trace::name`]).
    pub(crate) name: NameColumn,
    pub stack: Vec<StackId>,
    /// The source's own id (JSONL tensor id, snapshot/Kineto address; 4 bytes each where
    /// it fits: see [`Trace::src_id`]).
    pub(crate) src_id: SrcIdColumn,
}

impl Storages {
    pub fn len(&self) -> usize {
        self.start.len()
    }
    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }
}

/// A block a merge step adds over events already read ([`Trace::add_blocks`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NewBlock {
    /// The first event it is live after; None: live from before the first event.
    pub start: Option<Seq>,
    /// The first event it is no longer live after; None: live to the end.
    pub end: Option<Seq>,
    pub size: Bytes,
    pub name: StrId,
    pub stack: StackId,
    pub src_id: u64,
}

/// A fully decoded trace of one device.
#[derive(Debug, Clone)]
pub struct Trace {
    pub device: String,
    pub source: String,
    pub format: &'static str,
    pub clock: Clock,
    pub capacity: Option<Bytes>,
    /// Where `capacity` came from (`--capacity`, `Kineto deviceProperties.totalGlobalMem`,
    /// a device log's `memory.total`, the JSONL header, PyTorch's OOM message), for reports.
    pub capacity_source: Option<String>,
    pub bands_source: BandsSource,
    pub strings: Interner,

    // --- events (application order) ---
    /// Times in ns (the clock's), as `i64` bit patterns.
    ts: Column64,
    kind: Vec<u8>,
    /// Source order index of each event, only materialised once an event is applied out of
    /// source order (JSONL equal-`t` reordering); otherwise the position is the index.
    src: Option<Vec<u64>>,

    pub storages: Storages,
    pub views: Vec<View>,
    /// Views of each storage (indices into `views`), for storages that have any.
    pub views_of: FxHashMap<AllocId, Vec<u32>>,
    /// Position at which a storage's base tensor was released while views kept it alive.
    pub base_released: FxHashMap<AllocId, Seq>,
    /// Unknown fields of a storage's alloc line, kept as JSON text.
    pub extra: FxHashMap<AllocId, StrId>,
    /// Why an inferred category was chosen where the file shows it only indirectly (memory
    /// from before the recording, paired by size with gradients or optimizer state): the
    /// inspector's evidence line.
    pub evidence: FxHashMap<AllocId, String>,
    /// What the caller asked for, for storages whose size is a larger block the allocator
    /// holds for them (CUDA snapshots: the request rounded, or a whole unsplit block, as
    /// `memory_allocated()` counts it). Absent: the size is what was asked for.
    pub(crate) requested: super::requested::Requested,
    pub marks: Vec<Mark>,
    pub changes: Vec<Change>,

    pub unmatched_frees: u64,
    pub skipped_lines: u64,
    pub warnings: Vec<String>,
    /// Whether the source records reserved memory at all (None → unavailable).
    pub has_reserved: bool,
    /// Header `meta` and other source-level facts, as JSON text.
    pub meta: Vec<(String, String)>,
    /// What `#N` event numbers count (see [`Trace::event_number`]).
    pub numbers: EventNumbers,
    /// Rank, world size and backend when the source records them.
    pub distributed: Option<Distributed>,
    /// Indices into `warnings` of the ones that say the figures may be wrong (`check` refuses
    /// to vouch for such a trace); the others are informational.
    doubtful: Vec<usize>,
    /// Signed byte change of each event, for a source that names no allocation (old Kineto
    /// `[memory]` events carry only `Bytes`): totals are their running sum, in the unknown
    /// band, and the live set is unavailable. None: the storages carry every byte.
    deltas: Option<Vec<i64>>,
    /// Bytes live before the first event of such a source (Total Allocated baseline).
    anon_baseline: u64,
    /// What turns a timestamp into UTC wall-clock ns since the Unix epoch (`ts + offset`):
    /// 0 for snapshots (`time_us` is epoch µs), Kineto's `baseTimeNanoseconds`. None when the
    /// timestamps are not wall-clock times (JSONL's relative clock, no clock at all).
    pub wall_offset_ns: Option<i64>,
    /// How a merged device-usage log was aligned (None: no log was merged).
    pub device_log: Option<DeviceLogInfo>,
    /// The file's time origin (ns, the file's clock): its earliest event over all its devices
    /// (`open::load::share_time_origin`), so relative times on every device of one file count
    /// from one instant. None: this trace's own first event.
    pub time_origin_ns: Option<i64>,
    /// How a merged Nsight Systems export was aligned (None: none was merged).
    pub nsys: Option<NsysInfo>,
    /// The server's startup log (`--server-log`): this device's rank's memory figures, which
    /// the serving budget is reconciled with (None: no log given).
    pub server_log: Option<super::external::DeviceServerLog>,
    /// Whether memory outside the framework is measured at all (a recorder's `external`
    /// spans or `sample` lines, a device log that covers the trace, an Nsight Systems
    /// export). False: the external band is unavailable, never 0.
    pub external_known: bool,
    /// The source of each external storage a side source added (`nccl`, `cudnn`,
    /// `library-internal`, …); see [`Trace::external_source`].
    pub ext_source: FxHashMap<AllocId, StrId>,
    /// The call chain of an external storage, when its source recorded one.
    pub ext_detail: FxHashMap<AllocId, ExternalDetail>,
    /// The trace is one instant with no history (a snapshot dumped without
    /// `_record_memory_history`): its blocks are shown made at event #0, but nothing says
    /// what ran before, so no phase can be said absent.
    pub one_instant: bool,
}

impl Trace {
    /// Whether the bytes of band `b` are known: the external band only where memory outside
    /// the framework is measured; persistent, activation and workspace only where the file
    /// names its allocations (a Kineto trace without addresses keeps a running total alone,
    /// all of it in the unknown band). A band not known is unavailable, never 0.
    pub fn band_known(&self, b: Band) -> bool {
        match b {
            Band::External => self.external_known,
            Band::Unknown => true,
            Band::Persistent | Band::Activation | Band::Workspace => {
                self.bands_source != BandsSource::Unavailable
            }
        }
    }
    pub fn new(device: impl Into<String>, source: impl Into<String>, format: &'static str) -> Self {
        Trace {
            device: device.into(),
            source: source.into(),
            format,
            clock: Clock::Us,
            capacity: None,
            capacity_source: None,
            bands_source: BandsSource::Recorded,
            strings: Interner::new(),
            ts: Column64::default(),
            kind: Vec::new(),
            src: None,
            storages: Storages::default(),
            views: Vec::new(),
            views_of: FxHashMap::default(),
            base_released: FxHashMap::default(),
            extra: FxHashMap::default(),
            evidence: FxHashMap::default(),
            requested: Default::default(),
            marks: Vec::new(),
            changes: Vec::new(),
            unmatched_frees: 0,
            skipped_lines: 0,
            warnings: Vec::new(),
            has_reserved: false,
            meta: Vec::new(),
            numbers: EventNumbers::Source,
            distributed: None,
            doubtful: Vec::new(),
            deltas: None,
            anon_baseline: 0,
            wall_offset_ns: None,
            device_log: None,
            time_origin_ns: None,
            nsys: None,
            server_log: None,
            external_known: false,
            one_instant: false,
            ext_source: FxHashMap::default(),
            ext_detail: FxHashMap::default(),
        }
    }

    // ----------------------------------------------------------------- events

    /// Number of events on the event axis.
    pub fn len(&self) -> usize {
        self.ts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ts.len() == 0
    }

    /// Reserves room for `events` more events and `storages` more storages (readers that know
    /// their size up front avoid regrowing a dozen columns).
    pub fn reserve(&mut self, events: usize, storages: usize) {
        self.ts.reserve(events);
        self.kind.reserve(events);
        self.changes.reserve(events);
        let s = &mut self.storages;
        s.start.reserve(storages);
        s.end.reserve(storages);
        s.size.reserve(storages);
        s.cat.reserve(storages);
        s.kind.reserve(storages);
        s.flags.reserve(storages);
        s.name.reserve(storages);
        s.stack.reserve(storages);
        s.src_id.reserve(storages);
    }

    /// Appends an event whose source index equals its position.
    pub fn push_event(&mut self, ts: Ts, kind: EventKind) -> Seq {
        let at = self.ts.len() as u64;
        self.push_event_src(ts, kind, at)
    }

    /// Appends an event with an explicit source-order index.
    pub fn push_event_src(&mut self, ts: Ts, kind: EventKind, src_index: u64) -> Seq {
        let at = self.ts.len() as u64;
        if src_index != at || self.src.is_some() {
            let v = self.src.get_or_insert_with(|| (0..at).collect());
            v.push(src_index);
        }
        self.ts.push(ts.0 as u64);
        self.kind.push(kind as u8);
        if let Some(d) = self.deltas.as_mut() {
            d.push(0);
        }
        Seq(at)
    }

    pub fn ts(&self, at: Seq) -> Ts {
        Ts(self.ts.get(at.idx()) as i64)
    }

    pub fn kind(&self, at: Seq) -> EventKind {
        EventKind::from_u8(self.kind.get(at.idx()).copied().unwrap_or(11))
    }

    /// Index of the event in the source's own order (`source_index`: docs/summary-json.md).
    pub fn src_index(&self, at: Seq) -> u64 {
        match &self.src {
            Some(v) => v.get(at.idx()).copied().unwrap_or(at.0),
            None => at.0,
        }
    }

    /// The `#N` shown to users for an event (docs/summary-json.md): the source index, or the
    /// position on the event axis where the source's order is not the axis (Kineto).
    pub fn event_number(&self, at: Seq) -> u64 {
        match self.numbers {
            EventNumbers::Source => self.src_index(at),
            EventNumbers::Axis => at.0,
        }
    }

    /// Whether event numbers and source indices can differ (then both are worth showing).
    pub fn numbers_differ_from_source(&self) -> bool {
        self.numbers == EventNumbers::Axis && self.src.is_some()
    }

    // ------------------------------------------------------------ identities

    /// Marks the trace as one whose source names no allocation: from now on every event
    /// carries a byte delta ([`Trace::set_delta`]) and `baseline` bytes are live from the
    /// start. Events already pushed get a delta of 0.
    pub fn set_identities_unknown(&mut self, baseline: u64) {
        let n = self.ts.len();
        self.deltas.get_or_insert_with(Vec::new).resize(n, 0);
        self.anon_baseline = baseline;
    }

    /// Whether each allocation is known (else only totals are: the live set is unavailable).
    pub fn identities_known(&self) -> bool {
        self.deltas.is_none()
    }

    /// Sets the byte change of event `at` (traces without identities; ignored otherwise).
    pub fn set_delta(&mut self, at: Seq, delta: i64) {
        if let Some(x) = self.deltas.as_mut().and_then(|d| d.get_mut(at.idx())) {
            *x = delta;
        }
    }

    /// Byte change of event `at` not carried by any storage (0 when identities are known).
    pub fn delta(&self, at: Seq) -> i64 {
        self.deltas
            .as_ref()
            .and_then(|d| d.get(at.idx()).copied())
            .unwrap_or(0)
    }

    /// Bytes live before the first event that no storage carries.
    pub fn anon_baseline(&self) -> u64 {
        self.anon_baseline
    }

    /// The time of each event, in order.
    pub fn timestamps(&self) -> impl DoubleEndedIterator<Item = i64> + ExactSizeIterator + '_ {
        self.ts.iter().map(|x| x as i64)
    }

    /// The first position whose time fails `pred` (`pred` holds for a prefix: rising
    /// times), as `slice::partition_point` over the times.
    pub fn ts_partition_point(&self, pred: impl Fn(i64) -> bool) -> usize {
        self.ts.partition_point(|x| pred(x as i64))
    }

    /// Where relative times (`t=+…`) count from (ns, the file's clock): the file's time
    /// origin, else this trace's first event; None when the clock has no time.
    pub fn origin_ns(&self) -> Option<i64> {
        if !self.clock.has_time() || self.is_empty() {
            return None;
        }
        self.time_origin_ns.or_else(|| Some(self.ts(Seq(0)).0))
    }

    /// [`Trace::origin_ns`] in microseconds.
    pub fn origin_us(&self) -> Option<f64> {
        let ns = self.origin_ns()?;
        Some((ns / 1000) as f64 + (ns % 1000) as f64 / 1000.0)
    }

    /// Time in microseconds of an event, or None when the clock has no time.
    pub fn time_us(&self, at: Seq) -> Option<f64> {
        if !self.clock.has_time() || self.is_empty() {
            return None;
        }
        // Split so whole microseconds stay exact (ns since the epoch exceed f64's 53 bits).
        let ns = self.ts(at).0;
        Some((ns / 1000) as f64 + (ns % 1000) as f64 / 1000.0)
    }

    /// [`Trace::seq_at_time`] of each of `times`, the same answers: when both the trace's
    /// times and `times` rise (annotations, steps), one walk that gallops from the last
    /// answer instead of a binary search over the whole trace each.
    pub fn seq_at_times(&self, times: &[Ts]) -> Vec<Option<Seq>> {
        let wanted: Vec<i64> = times.iter().map(|t| t.0).collect();
        let rising = wanted.windows(2).all(|w| w[0] <= w[1])
            && self
                .timestamps()
                .zip(self.timestamps().skip(1))
                .all(|(a, b)| a <= b);
        if !rising {
            return times.iter().map(|&t| self.seq_at_time(t)).collect();
        }
        let n = self.ts.len();
        let at = |i: usize| self.ts.get(i) as i64;
        let mut lo = 0usize; // every time before lo is <= the current time
        times
            .iter()
            .map(|&Ts(t)| {
                let (mut hi, mut step) = (lo, 1usize);
                while hi < n && at(hi) <= t {
                    lo = hi + 1;
                    hi = lo.saturating_add(step).min(n);
                    step = step.saturating_mul(2);
                }
                lo = self
                    .ts
                    .partition_point_in(lo, hi.max(lo), |x| x as i64 <= t);
                lo.checked_sub(1).map(|n| Seq(n as u64))
            })
            .collect()
    }

    /// The last position whose timestamp is ≤ `t` (None if before the first event).
    pub fn seq_at_time(&self, t: Ts) -> Option<Seq> {
        let n = self.ts_partition_point(|x| x <= t.0);
        if n == 0 {
            None
        } else {
            Some(Seq(n as u64 - 1))
        }
    }

    // --------------------------------------------------------------- storages

    /// Creates a storage starting at `start` without logging its opening (see [`Trace::log`]).
    #[allow(clippy::too_many_arguments)]
    pub fn new_storage(
        &mut self,
        start: Seq,
        size: Bytes,
        cat: Category,
        kind: StorageKind,
        name: StrId,
        stack: StackId,
        src_id: u64,
    ) -> AllocId {
        let s = &mut self.storages;
        let id = AllocId(s.start.len() as u32);
        s.start.push(column_position(start));
        s.end.push(OPEN_END);
        s.size.push(size.0);
        s.cat.push(cat as u8);
        s.kind.push(kind as u8);
        s.flags.push(0);
        s.name.push(name);
        s.stack.push(stack);
        s.src_id.push(src_id);
        if kind == StorageKind::Segment {
            self.has_reserved = true;
        }
        id
    }

    /// Appends to the change log. Entries must come in non-decreasing position order.
    /// A close of a storage that is already closed is ignored, so the log never holds one.
    /// A change past [`Change::LAST_POSITION`] is not kept, and the trace says its figures
    /// stop there (a file of over two billion entries).
    pub fn log(&mut self, storage: AllocId, at: Seq, open: bool) {
        if at.0 > Change::LAST_POSITION {
            self.past_last_position();
            return;
        }
        if !open {
            match self.storages.end.get_mut(storage.idx()) {
                Some(e) if *e == OPEN_END => *e = column_position(at),
                _ => return,
            }
        }
        self.changes.push(Change::new(at, storage, open));
    }

    fn past_last_position(&mut self) {
        let said = "the figures stop at event";
        if !self.warnings.iter().any(|w| w.starts_with(said)) {
            self.warn_doubtful(format!(
                "{said} {}: memtide keeps at most 2^31 events of a trace, and this file has more (the allocations and frees after it are not counted)",
                super::units::grouped(Change::LAST_POSITION)
            ));
        }
    }

    /// Creates a storage live from the latest event on (the usual reader call).
    pub fn open(
        &mut self,
        size: Bytes,
        cat: Category,
        kind: StorageKind,
        name: StrId,
        stack: StackId,
        src_id: u64,
    ) -> AllocId {
        let at = self.last_seq();
        let id = self.new_storage(at, size, cat, kind, name, stack, src_id);
        self.log(id, at, true);
        id
    }

    /// Creates a storage live from before the first event (lost alloc, pre-existing memory).
    /// It is not in the change log as opened: the index counts it in its baseline.
    pub fn open_from_start(
        &mut self,
        size: Bytes,
        cat: Category,
        kind: StorageKind,
        name: StrId,
        stack: StackId,
        src_id: u64,
    ) -> AllocId {
        let id = self.new_storage(Seq(0), size, cat, kind, name, stack, src_id);
        if let Some(f) = self.storages.flags.get_mut(id.idx()) {
            *f |= FLAG_FROM_START;
        }
        id
    }

    /// Frees a storage at the latest event.
    pub fn close(&mut self, id: AllocId) {
        let at = self.last_seq();
        self.log(id, at, false);
    }

    /// Adds block storages over intervals of events already read (a merge step after the
    /// reader, e.g. a device log's external memory): each `(start, end, size, name)` is live
    /// from event `start` up to, excluding, `end` (None: to the end). The change log is merged
    /// back into position order (the new entries after the old ones at one position).
    pub fn add_intervals(
        &mut self,
        spans: &[(Seq, Option<Seq>, Bytes, StrId)],
        cat: Category,
    ) -> Vec<AllocId> {
        let blocks: Vec<NewBlock> = spans
            .iter()
            .map(|&(start, end, size, name)| NewBlock {
                start: Some(start),
                end,
                size,
                name,
                stack: StackId(0),
                src_id: u64::MAX,
            })
            .collect();
        self.add_blocks(&blocks, cat)
    }

    /// [`Trace::add_intervals`] with stacks, source ids and blocks live from before the
    /// first event (`start: None`); returns the new storages' ids, in order.
    pub fn add_blocks(&mut self, blocks: &[NewBlock], cat: Category) -> Vec<AllocId> {
        let mut extra: Vec<Change> = Vec::with_capacity(blocks.len() * 2);
        let mut ids = Vec::with_capacity(blocks.len());
        for b in blocks {
            let start = b.start.unwrap_or(Seq(0));
            let id = self.new_storage(
                start,
                b.size,
                cat,
                StorageKind::Block,
                b.name,
                b.stack,
                b.src_id,
            );
            ids.push(id);
            if b.start.is_none() {
                self.add_flag(id, FLAG_FROM_START);
            } else {
                extra.push(Change::new(start, id, true));
            }
            if let Some(e) = b
                .end
                .filter(|&e| e > start || (b.start.is_none() && e >= start))
            {
                if let Some(x) = self.storages.end.get_mut(id.idx()) {
                    *x = column_position(e);
                }
                extra.push(Change::new(e, id, false));
            }
        }
        if extra.is_empty() {
            return ids;
        }
        extra.sort_by_key(|c| c.at());
        let old = std::mem::take(&mut self.changes);
        let mut merged = Vec::with_capacity(old.len() + extra.len());
        let mut new = extra.into_iter().peekable();
        for c in old {
            while let Some(n) = new.next_if(|n| n.at() < c.at()) {
                merged.push(n);
            }
            merged.push(c);
        }
        merged.extend(new);
        self.changes = merged;
        ids
    }

    /// Where an external storage's bytes come from: the source a side source gave it, else
    /// `recorded` (a recorder's `external` span) or `unattributed` (used − reserved).
    pub fn external_source(&self, id: AllocId) -> &str {
        match self.ext_source.get(&id) {
            Some(&s) => self.strings.text(s),
            None => crate::trace::external::RECORDED,
        }
    }

    fn last_seq(&self) -> Seq {
        Seq(self.ts.len().saturating_sub(1) as u64)
    }

    pub fn storage_count(&self) -> usize {
        self.storages.len()
    }

    /// The source's own id of storage `id`: a snapshot's or Kineto's block address, a JSONL
    /// tensor id (None: no such storage).
    pub fn src_id(&self, id: AllocId) -> Option<u64> {
        self.storages.src_id.get(id.idx())
    }

    pub fn size(&self, id: AllocId) -> Bytes {
        Bytes(self.storages.size.get(id.idx()))
    }

    /// The bytes the caller asked for when the storage's size is a larger allocator block
    /// (CUDA snapshots: the request rounded, or a whole unsplit block, as
    /// `memory_allocated()` counts it); None when the size is what was asked for.
    pub fn requested_size(&self, id: AllocId) -> Option<Bytes> {
        self.requested.get(id, self.size(id).0).map(Bytes)
    }

    /// The tensor's own bytes: what was asked for where the file says, else the storage's
    /// size (a block may hold an unsplit remainder beside its tensor).
    pub fn tensor_size(&self, id: AllocId) -> Bytes {
        self.requested_size(id).unwrap_or(self.size(id))
    }

    pub fn category(&self, id: AllocId) -> Category {
        Category::from_u8(self.storages.cat.get(id.idx()).copied().unwrap_or(10))
    }

    pub fn set_category(&mut self, id: AllocId, cat: Category, inferred: bool) {
        if let Some(c) = self.storages.cat.get_mut(id.idx()) {
            *c = cat as u8;
        }
        if let Some(f) = self.storages.flags.get_mut(id.idx()) {
            if inferred {
                *f |= FLAG_INFERRED;
            } else {
                *f &= !FLAG_INFERRED;
            }
        }
    }

    pub fn band(&self, id: AllocId) -> Band {
        self.category(id).band()
    }

    pub fn storage_kind(&self, id: AllocId) -> StorageKind {
        if self.storages.kind.get(id.idx()).copied() == Some(1) {
            StorageKind::Segment
        } else {
            StorageKind::Block
        }
    }

    pub fn flags(&self, id: AllocId) -> u8 {
        self.storages.flags.get(id.idx()).copied().unwrap_or(0)
    }

    /// Sets `flag` (one of the `FLAG_*` bits) on a storage.
    pub fn add_flag(&mut self, id: AllocId, flag: u8) {
        if let Some(f) = self.storages.flags.get_mut(id.idx()) {
            *f |= flag;
        }
    }

    pub fn is_from_start(&self, id: AllocId) -> bool {
        self.flags(id) & FLAG_FROM_START != 0
    }

    pub fn start(&self, id: AllocId) -> Seq {
        Seq(self
            .storages
            .start
            .get(id.idx())
            .map_or(0, |&s| u64::from(s)))
    }

    /// End of the interval (exclusive), None while still live.
    pub fn end(&self, id: AllocId) -> Option<Seq> {
        match self.storages.end.get(id.idx()).copied() {
            Some(OPEN_END) | None => None,
            Some(e) => Some(Seq(u64::from(e))),
        }
    }

    /// Whether the storage is live in the state after event `at`.
    pub fn is_live_at(&self, id: AllocId, at: Seq) -> bool {
        let s = self.start(id);
        let live_start = self.is_from_start(id) || s <= at;
        live_start && self.end(id).is_none_or(|e| at < e)
    }

    pub fn name(&self, id: AllocId) -> &str {
        self.strings.text(self.name_id(id))
    }

    /// The interned name of storage `id` (names shared by many storages are one id).
    pub fn name_id(&self, id: AllocId) -> StrId {
        self.storages.name.get(id.idx())
    }

    /// The id of the storage's stack (`StackId(0)`, the empty stack, when it has none).
    pub fn stack_id(&self, id: AllocId) -> StackId {
        self.storages
            .stack
            .get(id.idx())
            .copied()
            .unwrap_or_default()
    }

    pub fn stack(&self, id: AllocId) -> Vec<Cow<'_, str>> {
        let sid = self
            .storages
            .stack
            .get(id.idx())
            .copied()
            .unwrap_or_default();
        self.stack_frames(sid)
    }

    pub fn stack_frames(&self, sid: StackId) -> Vec<Cow<'_, str>> {
        self.strings
            .stack(sid)
            .iter()
            .map(|&f| self.strings.str(f))
            .collect()
    }

    /// The top (innermost) frame worth showing: the innermost frame that is not an
    /// unsymbolised `??` frame, an ATen op or built-in call (Kineto stacks start with the ops,
    /// the innermost of which is already the storage's name), nor the name itself; as
    /// one-line fields show it ([`super::intern::Interner::shown`]: a long text shortened).
    pub fn top_frame(&self, id: AllocId) -> Cow<'_, str> {
        let sid = self
            .storages
            .stack
            .get(id.idx())
            .copied()
            .unwrap_or_default();
        let frames = self.strings.stack(sid);
        let name = self.name(id);
        let shown = || frames.iter().map(|&f| self.strings.shown(f));
        let op_like = |s: &str| s.starts_with("aten::") || s.starts_with("<built-in");
        shown()
            .find(|s| !s.starts_with("??") && !op_like(s) && *s != name)
            .or_else(|| shown().find(|s| !s.starts_with("??") && *s != name))
            .or_else(|| frames.first().map(|&f| self.strings.shown(f)))
            .unwrap_or(Cow::Borrowed(""))
    }

    // ------------------------------------------------------------------ views

    pub fn add_view(&mut self, v: View) -> usize {
        let i = self.views.len();
        self.views_of.entry(v.storage).or_default().push(i as u32);
        self.views.push(v);
        i
    }

    pub fn views_of(&self, id: AllocId) -> impl Iterator<Item = &View> {
        self.views_of
            .get(&id)
            .into_iter()
            .flatten()
            .filter_map(|&i| self.views.get(i as usize))
    }

    pub fn view_count(&self, id: AllocId) -> usize {
        self.views_of.get(&id).map_or(0, |v| v.len())
    }

    /// Views of `id` still holding it after event `at`.
    pub fn live_views_at(&self, id: AllocId, at: Seq) -> usize {
        self.holding_views(id, at).count()
    }

    /// The views of `id` that hold it at `at` (made at or before it, not yet released).
    pub fn holding_views(&self, id: AllocId, at: Seq) -> impl Iterator<Item = &View> {
        self.views_of(id)
            .filter(move |v| v.created <= at && v.released.is_none_or(|r| at < r))
    }

    /// True when the base tensor was released at or before `at` while the storage is still
    /// live (so only views keep it): "retained by view" (docs/concepts.md, fact 3).
    pub fn retained_by_view(&self, id: AllocId, at: Seq) -> bool {
        self.base_released.get(&id).is_some_and(|&r| r <= at) && self.is_live_at(id, at)
    }

    // ------------------------------------------------------------------ marks

    pub fn add_mark(&mut self, m: Mark) {
        self.marks.push(m);
    }

    /// The nearest mark at or before `at` (preferring steps) that still encloses it (a span
    /// mark's recorded end at or after `at`), for "enclosing mark" labels: a phase that ended
    /// before `at` does not name it.
    pub fn enclosing_mark(&self, at: Seq) -> Option<&Mark> {
        let upto = self.marks.partition_point(|m| m.at <= at);
        let before = &self.marks[..upto];
        let open = |m: &&Mark| m.end.is_none_or(|e| at <= e);
        before
            .iter()
            .rev()
            .filter(open)
            .find(|m| m.kind == MarkKind::Step)
            .or_else(|| {
                before
                    .iter()
                    .rev()
                    .filter(open)
                    .find(|m| matches!(m.kind, MarkKind::Step | MarkKind::Phase))
            })
    }

    pub fn mark_name(&self, m: &Mark) -> &str {
        self.strings.text(m.name)
    }

    /// The mark's name as one-line fields show it (a long one shortened, see
    /// [`crate::clip`]).
    pub fn mark_label(&self, m: &Mark) -> Cow<'_, str> {
        crate::clip::clip(self.strings.text(m.name))
    }

    /// Memory estimate of the trace columns in bytes (for benches and `--timings`).
    pub fn heap_bytes(&self) -> usize {
        let s = &self.storages;
        self.ts.heap_bytes()
            + self.kind.capacity()
            + self.src.as_ref().map_or(0, |v| v.capacity() * 8)
            + s.start.capacity() * 4
            + s.end.capacity() * 4
            + s.size.heap_bytes()
            + s.cat.capacity()
            + s.kind.capacity()
            + s.flags.capacity()
            + s.name.heap_bytes()
            + s.stack.capacity() * 4
            + s.src_id.heap_bytes()
            + self.changes.capacity() * std::mem::size_of::<Change>()
            + self.deltas.as_ref().map_or(0, |d| d.capacity() * 8)
    }

    /// An informational warning (shown; `check` still vouches for the figures).
    /// Checks that the bytes live at once (blocks and bytes without a storage together, and
    /// reserved segments) stay within 64 bits over the whole trace, so no total can wrap.
    /// The error names the event at which a sum first passes `u64::MAX` and the storage
    /// that opened there. Cost: one pass over the change log.
    pub fn check_byte_sums(&self) -> Result<(), String> {
        let (mut used, mut reserved) = (0u128, 0u128);
        let over = |what: &str, sum: u128, at: Option<Seq>, id: Option<AllocId>| {
            let place = match at {
                Some(at) => format!("at event #{}", self.event_number(at)),
                None => "before the first event".to_string(),
            };
            let who = id.map_or(String::new(), |id| {
                format!(
                    " (storage {} of {} B opens there)",
                    self.src_id(id).unwrap_or(0),
                    self.size(id).0
                )
            });
            format!(
                "the {what} bytes pass 2^64 − 1 B {place}{who}: {sum} B cannot be real (sizes too large or corrupt); refusing the trace rather than showing wrapped totals"
            )
        };
        for i in 0..self.storage_count() {
            let id = AllocId(i as u32);
            if self.is_from_start(id) {
                let sz = self.size(id).0 as u128;
                match self.storage_kind(id) {
                    StorageKind::Segment => reserved += sz,
                    StorageKind::Block => used += sz,
                }
            }
        }
        used += self.anon_baseline as u128;
        let max = u64::MAX as u128;
        if used > max {
            return Err(over("live", used, None, None));
        }
        if reserved > max {
            return Err(over("reserved", reserved, None, None));
        }
        // Bytes no storage carries: their running sum (clamped at 0 as the index does not).
        let mut anon: i128 = 0;
        let mut c = 0;
        let changes = &self.changes;
        let n = self.len();
        for p in 0..n {
            while let Some(ch) = changes.get(c) {
                if ch.at().0 as usize > p {
                    break;
                }
                let sz = self.size(ch.storage()).0 as u128;
                let seg = self.storage_kind(ch.storage()) == StorageKind::Segment;
                let sum = if seg { &mut reserved } else { &mut used };
                if ch.open() {
                    *sum += sz;
                    if *sum + anon.max(0) as u128 * u128::from(!seg) > max {
                        let what = if seg { "reserved" } else { "live" };
                        return Err(over(what, *sum, Some(ch.at()), Some(ch.storage())));
                    }
                } else {
                    *sum = sum.saturating_sub(sz);
                }
                c += 1;
            }
            if let Some(d) = &self.deltas {
                anon += d.get(p).copied().unwrap_or(0) as i128;
                if used + anon.max(0) as u128 > max {
                    return Err(over(
                        "live",
                        used + anon.max(0) as u128,
                        Some(Seq(p as u64)),
                        None,
                    ));
                }
            }
        }
        Ok(())
    }

    pub fn warn(&mut self, w: impl Into<String>) {
        self.warnings.push(w.into());
    }

    /// A warning that the figures may be wrong: shown like any other, and `check` exits 2
    /// on it unless `--allow-warnings` is given.
    pub fn warn_doubtful(&mut self, w: impl Into<String>) {
        self.doubtful.push(self.warnings.len());
        self.warnings.push(w.into());
    }

    /// The warnings that say the figures may be wrong, in order.
    pub fn doubtful_warnings(&self) -> impl Iterator<Item = &str> {
        self.doubtful
            .iter()
            .filter_map(|&i| self.warnings.get(i).map(String::as_str))
    }
}
