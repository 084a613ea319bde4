//! Turns the collected Kineto events into one [`Trace`] per device: replay of `[memory]`
//! events in (stable) time order, the Total Allocated / Reserved checks, marks and categories.

use super::attribute::{Attribution, NONE};
use super::blocks::Blocks;
use super::parse::{Collected, MemEv, SpanKind};
use super::sidecar::Sidecar;
use crate::formats::memory_timeline::category_of;
use crate::trace::model::{FLAG_FREED_IN_OP, FLAG_OP_KNOWN};
use crate::trace::{
    AllocId, Bytes, Category, Clock, EventKind, EventNumbers, Mark, MarkKind, Seq, StackId,
    StorageKind, StrId, Trace, Ts,
};
use rustc_hash::FxHashMap;

pub const PREEXISTING: &str = "pre-existing (allocated before profiling)";
const NO_OP: &str = "(no enclosing op)";
/// The outermost frame of a stack whose outer spans were not kept (`attribute::CUT`).
const CUT_FRAME: &str = "(outer spans not kept: nested too deep)";

/// c10::DeviceType names, by number (`c10/core/DeviceType.h`, lower case as PyTorch prints).
pub(crate) const DEVICE_TYPES: [&str; 21] = [
    "cpu",
    "cuda",
    "mkldnn",
    "opengl",
    "opencl",
    "ideep",
    "hip",
    "fpga",
    "maia",
    "xla",
    "vulkan",
    "metal",
    "xpu",
    "mps",
    "meta",
    "hpu",
    "ve",
    "lazy",
    "ipu",
    "mtia",
    "privateuseone",
];

/// A device as Kineto names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Device {
    pub ty: i32,
    pub id: i32,
}

impl Device {
    /// c10::DeviceType numbers → the names PyTorch prints (`cpu`, `cuda:0`, `xpu:1`, …).
    pub fn name(self) -> String {
        match usize::try_from(self.ty)
            .ok()
            .and_then(|t| DEVICE_TYPES.get(t))
        {
            Some(&"cpu") => "cpu".into(),
            Some(kind) => format!("{kind}:{}", self.id.max(0)),
            None => format!("device{}:{}", self.ty, self.id),
        }
    }
    /// Accelerators first (by type and id), the CPU last: the default device is the GPU.
    fn order(self) -> (bool, i32, i32) {
        (self.ty == 0, self.ty, self.id)
    }
}

/// Everything shared by the devices of one file.
pub(crate) struct Shared<'a> {
    pub c: &'a Collected,
    /// The `[memory]` events (taken out of `c`): blocks are freed as the replay uses them.
    pub mem: &'a mut Blocks<MemEv>,
    pub attr: &'a Attribution,
    pub source: &'a str,
    pub sidecar: Option<&'a mut Sidecar>,
    pub sidecar_name: String,
    /// File-level warnings, each with whether it says the figures may be wrong.
    pub warnings: &'a [(String, bool)],
}

/// Builds every device's trace.
pub(crate) fn build_all(mut sh: Shared<'_>) -> Vec<Trace> {
    let c = sh.c;
    let mut by_dev: FxHashMap<Device, Vec<u32>> = FxHashMap::default();
    for (i, m) in sh.mem.iter().enumerate() {
        by_dev.entry(dev_of(m)).or_default().push(i as u32);
    }
    let mut oom_devs: FxHashMap<Device, Vec<usize>> = FxHashMap::default();
    for (i, o) in c.ooms.iter().enumerate() {
        oom_devs
            .entry(Device {
                ty: o.dev_type,
                id: o.dev_id,
            })
            .or_default()
            .push(i);
    }
    let mut devs: Vec<Device> = by_dev.keys().chain(oom_devs.keys()).copied().collect();
    devs.sort_by_key(|d| d.order());
    devs.dedup();
    let mut matched_any = false;
    let mut out = Vec::with_capacity(devs.len());
    for d in devs {
        let evs = by_dev.remove(&d).unwrap_or_default();
        let ooms = oom_devs.remove(&d).unwrap_or_default();
        let (t, matched) = build_device(&mut sh, d, evs, &ooms);
        matched_any |= matched;
        out.push(t);
    }
    if sh.sidecar.is_some() && !matched_any {
        for t in &mut out {
            t.warn(format!(
                "categories file {} matched no allocation of this trace (is it from the same run?); bands are unknown",
                sh.sidecar_name
            ));
        }
    }
    out
}

fn dev_of(m: &MemEv) -> Device {
    Device {
        ty: m.dev_type as i32,
        id: m.dev_id as i32,
    }
}

/// Result of the dry replay used for the consistency checks.
struct Dry {
    /// Whether the free at each position matched no live allocation.
    unmatched: Vec<bool>,
    /// For an alloc at a position, the position of its free (NONE if still live).
    free_of: Vec<u32>,
    /// Pre-existing bytes (Total Allocated above the running sum from the first event on).
    baseline: i64,
}

/// Bytes live before the first event by `Total Allocated` (its value minus the running sum of
/// `Bytes`; 0 when no event has it), warning when later totals disagree with the sum.
fn total_alloc_baseline(t: &mut Trace, evs: Evs<'_>) -> i64 {
    let n = evs.len();
    let mut sum: i64 = 0;
    // Candidate baselines from the first event with a total: Total Allocated read after the
    // event (post) or before it (pre). Allocators differ (even per event kind), so an event
    // agrees with a baseline d when Total Allocated − d is the running sum before or after it.
    let mut cand: Option<[i64; 2]> = None;
    let mut mismatch = [0u64; 2];
    let mut first_mismatch: [Option<(usize, i64, i64)>; 2] = [None, None];
    for (p, m) in evs.iter().enumerate() {
        let before = sum;
        sum = sum.saturating_add(m.bytes);
        if let Some(ta) = m.total_alloc() {
            let c = *cand.get_or_insert([ta.saturating_sub(sum), ta.saturating_sub(before)]);
            for k in 0..2 {
                let v = ta.saturating_sub(c[k]);
                if v != sum && v != before {
                    mismatch[k] += 1;
                    first_mismatch[k].get_or_insert((p, sum, ta));
                }
            }
        }
    }
    let k = usize::from(mismatch[1] < mismatch[0]);
    if let Some((p, s, ta)) = first_mismatch[k] {
        let src = evs.get(p).map_or(0, |m| m.src);
        t.warn_doubtful(format!(
            "the running sum of Bytes differs from Total Allocated at {} of {n} [memory] events (first at event #{p}, traceEvents[{src}]: sum {s}, Total Allocated {ta}); the memory shown follows Bytes",
            mismatch[k]
        ));
    }
    cand.map_or(0, |c| c[k])
}

fn dry_run(t: &mut Trace, evs: Evs<'_>, free_of_needed: bool) -> Dry {
    let n = evs.len();
    let mut live: FxHashMap<u64, (i64, u32)> = FxHashMap::default();
    let mut unmatched = vec![false; n];
    let mut free_of = if free_of_needed {
        vec![NONE; n]
    } else {
        Vec::new()
    };
    let (mut reallocs, mut size_diff) = (0u64, 0u64);
    for (p, m) in evs.iter().enumerate() {
        if m.bytes > 0 {
            if live.insert(m.addr, (m.bytes, p as u32)).is_some() {
                reallocs += 1;
            }
        } else if m.bytes < 0 {
            match live.remove(&m.addr) {
                Some((sz, at)) => {
                    if let Some(f) = free_of.get_mut(at as usize) {
                        *f = p as u32;
                    }
                    if sz != -m.bytes {
                        size_diff += 1;
                    }
                }
                None => unmatched[p] = true,
            }
        }
    }
    let baseline = total_alloc_baseline(t, evs);
    if baseline < 0 {
        t.warn_doubtful(format!(
            "Total Allocated is {} bytes below the running sum of Bytes from the first event on; the memory shown follows Bytes",
            -baseline
        ));
    } else if baseline > 0 {
        t.warn(format!(
            "{baseline} bytes were allocated before profiling started (Total Allocated minus the running sum of Bytes); shown as \"{PREEXISTING}\""
        ));
    }
    if reallocs > 0 {
        t.warn_doubtful(format!(
            "{reallocs} allocations reused an address that was still live; the older allocation was closed there, so the totals may be too low"
        ));
    }
    if size_diff > 0 {
        t.warn_doubtful(format!(
            "{size_diff} frees had a size different from their allocation; the totals follow the allocation sizes"
        ));
    }
    Dry {
        unmatched,
        free_of,
        baseline: baseline.max(0),
    }
}

/// One live allocation during the replay.
#[derive(Clone, Copy)]
struct Live {
    id: AllocId,
    size: i64,
    at: u32,
    /// PyTorch category from the sidecar (index 0–7; None = Unknown).
    pt: Option<u8>,
    /// End of the top-level op the alloc was made in (`i64::MIN`: none).
    top_end: i64,
}

fn build_device(
    sh: &mut Shared<'_>,
    dev: Device,
    mut idx: Vec<u32>,
    ooms: &[usize],
) -> (Trace, bool) {
    let c = sh.c;
    let mut t = device_trace(sh, dev);
    // Time order, stable: the file order decides ties.
    idx.sort_by_key(|&i| sh.mem[i as usize].ts);
    let n = idx.len();
    let evs = Evs {
        mem: sh.mem,
        idx: &idx,
    };
    if evs.iter().any(|m| !m.has_addr()) {
        replay_anonymous(&mut t, evs);
        if n == 0 {
            push_oom_events(&mut t, c, ooms);
        }
        add_marks(&mut t, c, n, ooms);
        return (t, false);
    }
    let base_ns = c.base_ns.unwrap_or(0);
    // Does the sidecar describe this device at all?
    let use_sidecar = sh.sidecar.as_deref().is_some_and(|s| {
        evs.iter()
            .filter(|m| m.bytes > 0)
            .take(10_000)
            .any(|m| s.has_match(m.ts + base_ns, m.bytes))
    });
    let dry = dry_run(&mut t, evs, use_sidecar);
    // The category changes look ahead at the times of frees: keep them all.
    let ts: Vec<i64> = if use_sidecar {
        evs.iter().map(|m| m.ts).collect()
    } else {
        Vec::new()
    };
    let reserved_known = evs.iter().any(|m| m.total_res().is_some_and(|r| r > 0));
    let sidecar = if use_sidecar {
        sh.sidecar.as_deref_mut()
    } else {
        None
    };
    let mut r = AddrReplay::new(t, c, sh.attr, sidecar, &dry, &ts, base_ns);
    r.reserved_known = reserved_known;
    for (p, &mi) in idx.iter().enumerate() {
        let mi = mi as usize;
        let m = sh.mem[mi];
        r.event(p, &m, mi);
        // Without a sidecar nothing looks back at an event once replayed.
        if !use_sidecar {
            sh.mem.used(mi);
        }
    }
    let counts = r.counts;
    let mut t = r.finish();
    if use_sidecar {
        let coalesced = sh.sidecar.as_deref().is_some_and(|s| s.coalesced);
        t.warn(sidecar_summary(&sh.sidecar_name, counts, coalesced));
    }
    if n == 0 {
        push_oom_events(&mut t, c, ooms);
    }
    add_marks(&mut t, c, n, ooms);
    (t, use_sidecar)
}

/// A device's `[memory]` events in time order: indices into the events.
#[derive(Clone, Copy)]
struct Evs<'a> {
    mem: &'a Blocks<MemEv>,
    idx: &'a [u32],
}

impl<'a> Evs<'a> {
    fn len(self) -> usize {
        self.idx.len()
    }
    fn get(self, p: usize) -> Option<&'a MemEv> {
        self.mem.get(*self.idx.get(p)? as usize)
    }
    fn iter(self) -> impl Iterator<Item = &'a MemEv> {
        self.idx.iter().map(move |&i| &self.mem[i as usize])
    }
}

/// An empty trace for `dev`: clock, numbering, rank, capacity and the file's warnings.
fn device_trace(sh: &Shared<'_>, dev: Device) -> Trace {
    let c = sh.c;
    let mut t = Trace::new(dev.name(), sh.source, "kineto");
    t.clock = Clock::Us;
    // Wall-clock UTC = ts + baseTimeNanoseconds (older traces write absolute ts).
    t.wall_offset_ns = Some(c.base_ns.unwrap_or(0));
    t.bands_source = crate::trace::BandsSource::Recorded;
    // `#N` counts the time-ordered axis; the traceEvents position is the source index.
    t.numbers = EventNumbers::Axis;
    t.distributed = c.distributed.clone();
    // deviceProperties describe CUDA (or ROCm) devices by id.
    if matches!(dev.ty, 1 | 6) {
        t.capacity = c
            .dev_props
            .iter()
            .find(|p| p.id == Some(dev.id as i64))
            .and_then(|p| p.total_global_mem)
            .map(Bytes);
        t.capacity_source = t
            .capacity
            .map(|_| "the Kineto trace's deviceProperties.totalGlobalMem".to_string());
    }
    for (w, doubtful) in sh.warnings {
        if *doubtful {
            t.warn_doubtful(w.clone());
        } else {
            t.warn(w.clone());
        }
    }
    t
}

/// How the sidecar's categories matched this device's allocations.
#[derive(Clone, Copy, Default)]
struct SidecarCounts {
    matched: u64,
    unmatched: u64,
    lost_changes: u64,
}

/// The warning that says how well `--categories` matched.
fn sidecar_summary(name: &str, n: SidecarCounts, coalesced: bool) -> String {
    let mut w = format!(
        "categories from {name}: {} of {} allocations matched",
        n.matched,
        n.matched + n.unmatched
    );
    if n.unmatched > 0 {
        w.push_str(&format!(" ({} unmatched shown as unknown)", n.unmatched));
    }
    if n.lost_changes > 0 {
        w.push_str(&format!(
            "; {} category changes found no live allocation",
            n.lost_changes
        ));
    }
    if coalesced {
        w.push_str("; the coalesced .json only gives totals per µs, prefer the .raw.json.gz");
    }
    w
}

/// The replay of a device whose `[memory]` events carry addresses: allocations by address,
/// blocks from before profiling, reserved segments following `Total Reserved`, and the
/// sidecar's categories and category changes.
struct AddrReplay<'a, 's> {
    t: Trace,
    c: &'a Collected,
    attr: &'a Attribution,
    sidecar: Option<&'s mut Sidecar>,
    dry: &'a Dry,
    ts: &'a [i64],
    base_ns: i64,
    reserved_known: bool,
    pre_name: StrId,
    seg_name: StrId,
    no_op: StrId,
    name_map: FxHashMap<u32, StrId>,
    stack_map: FxHashMap<u32, StackId>,
    live: FxHashMap<u64, Live>,
    /// Bytes from before profiling not yet accounted to a free.
    pre_left: i64,
    segs: Vec<(AllocId, i64)>,
    reserved: Option<i64>,
    counts: SidecarCounts,
    next_change: usize,
}

impl<'a, 's> AddrReplay<'a, 's> {
    fn new(
        mut t: Trace,
        c: &'a Collected,
        attr: &'a Attribution,
        sidecar: Option<&'s mut Sidecar>,
        dry: &'a Dry,
        ts: &'a [i64],
        base_ns: i64,
    ) -> Self {
        let pre_name = t.strings.intern(PREEXISTING);
        let seg_name = t.strings.intern("reserved segment");
        let no_op = t.strings.intern(NO_OP);
        AddrReplay {
            t,
            c,
            attr,
            sidecar,
            dry,
            ts,
            base_ns,
            reserved_known: false,
            pre_name,
            seg_name,
            no_op,
            name_map: FxHashMap::default(),
            stack_map: FxHashMap::default(),
            live: FxHashMap::default(),
            pre_left: dry.baseline,
            segs: Vec::new(),
            reserved: None,
            counts: SidecarCounts::default(),
            next_change: 0,
        }
    }

    /// Event `p` of the time-ordered axis (`mi`: its index among the file's memory events).
    fn event(&mut self, p: usize, m: &MemEv, mi: usize) {
        let kind = match m.bytes {
            b if b > 0 => EventKind::Alloc,
            b if b < 0 => EventKind::Free,
            _ => EventKind::Other,
        };
        self.t.push_event_src(Ts(m.ts), kind, m.src);
        if m.bytes > 0 {
            self.alloc(p, m, mi);
        } else if m.bytes < 0 {
            self.free(p, m);
        }
        if self.reserved_known {
            if let Some(r) = m.total_res().filter(|&r| r >= 0) {
                follow_reserved(
                    &mut self.t,
                    &mut self.segs,
                    &mut self.reserved,
                    r,
                    self.seg_name,
                );
            }
        }
        self.category_changes(p, m);
    }

    /// A new block at `m.addr` (a block still live there is closed first).
    fn alloc(&mut self, p: usize, m: &MemEv, mi: usize) {
        if let Some(old) = self.live.remove(&m.addr) {
            self.t.close(old.id);
        }
        let (name, stack) = names_of(
            &mut self.t,
            self.attr,
            self.c,
            mi,
            &mut self.name_map,
            &mut self.stack_map,
        );
        let name = if name == StrId::default() {
            self.no_op
        } else {
            name
        };
        let pt = self.sidecar_category(m);
        // Without a sidecar the category stays Unknown here; the door's reading step infers it.
        let cat = if self.sidecar.is_some() {
            category_of(pt)
        } else {
            Category::Unknown
        };
        let id = self.t.open(
            Bytes(m.bytes as u64),
            cat,
            StorageKind::Block,
            name,
            stack,
            m.addr,
        );
        let top_end = self.attr.top_end.get(mi).copied().unwrap_or(i64::MIN);
        if top_end != i64::MIN {
            self.t.add_flag(id, FLAG_OP_KNOWN);
        }
        self.live.insert(
            m.addr,
            Live {
                id,
                size: m.bytes,
                at: p as u32,
                pt,
                top_end,
            },
        );
    }

    /// The sidecar's category for this allocation (None: no sidecar or no match).
    fn sidecar_category(&mut self, m: &MemEv) -> Option<u8> {
        let s = self.sidecar.as_deref_mut()?;
        match s.take(m.ts + self.base_ns, m.bytes) {
            Some(cat) => {
                self.counts.matched += 1;
                cat
            }
            None => {
                self.counts.unmatched += 1;
                None
            }
        }
    }

    /// A free at `m.addr`: closes the live block, or accounts a block from before profiling.
    fn free(&mut self, p: usize, m: &MemEv) {
        if let Some(l) = self.live.remove(&m.addr) {
            if m.ts < l.top_end {
                self.t.add_flag(l.id, FLAG_FREED_IN_OP);
            }
            self.t.close(l.id);
            return;
        }
        self.t.unmatched_frees += 1;
        let b = -m.bytes;
        if self.dry.unmatched[p] && self.pre_left >= b {
            // A block from before profiling: it was live from the start until here.
            let id = self.t.open_from_start(
                Bytes(b as u64),
                Category::Unknown,
                StorageKind::Block,
                self.pre_name,
                StackId::default(),
                m.addr,
            );
            self.t.close(id);
            self.pre_left -= b;
        }
    }

    /// The sidecar's category changes up to this event's time.
    fn category_changes(&mut self, p: usize, m: &MemEv) {
        let Some(s) = self.sidecar.as_deref() else {
            return;
        };
        let now = m.ts + self.base_ns;
        while let Some(ch) = s.changes.get(self.next_change).filter(|ch| ch.t <= now) {
            let ch = *ch;
            self.next_change += 1;
            if !apply_change(
                &mut self.t,
                &mut self.live,
                s,
                self.ts,
                self.dry,
                self.base_ns,
                p,
                ch,
            ) {
                self.counts.lost_changes += 1;
            }
        }
    }

    /// The bytes from before profiling that no free accounted for, the unmatched-free warning.
    fn finish(mut self) -> Trace {
        if self.pre_left > 0 {
            self.t.open_from_start(
                Bytes(self.pre_left as u64),
                Category::Unknown,
                StorageKind::Block,
                self.pre_name,
                StackId::default(),
                0,
            );
        }
        if self.t.unmatched_frees > 0 {
            let n = self.t.unmatched_frees;
            self.t.warn(format!(
                "{n} frees of addresses never allocated in the trace (allocated before profiling started)"
            ));
        }
        self.t
    }
}

/// A device with OOMs alone: each one gets an event so it can be marked.
fn push_oom_events(t: &mut Trace, c: &Collected, ooms: &[usize]) {
    for &o in ooms {
        if let Some(ev) = c.ooms.get(o) {
            t.push_event_src(Ts(ev.ts), EventKind::Oom, ev.src);
        }
    }
}

/// The replay of a device whose `[memory]` events name no allocation (no `Addr`: older
/// PyTorch): the totals are the running sum of `Bytes` in time order on top of the bytes live
/// before the first event, carried as per-event deltas; no allocation is invented, so the
/// live set is unavailable. Reserved memory still follows `Total Reserved`.
fn replay_anonymous(t: &mut Trace, evs: Evs<'_>) {
    let n = evs.len();
    let without = evs.iter().filter(|m| !m.has_addr()).count();
    let recorded = total_alloc_baseline(t, evs);
    if recorded < 0 {
        t.warn_doubtful(format!(
            "Total Allocated is {} bytes below the running sum of Bytes from the first event on; the memory shown follows Bytes",
            -recorded
        ));
    }
    let start = recorded.max(0);
    // Frees of memory allocated before profiling can take the running sum below the start:
    // at least that much was live from the start.
    let (mut sum, mut low) = (start, start);
    for m in evs.iter() {
        sum = sum.saturating_add(m.bytes);
        low = low.min(sum);
    }
    let lifted = low.min(0).unsigned_abs();
    let baseline = (start as u64).saturating_add(lifted);
    if lifted > 0 {
        t.warn(format!(
            "the running sum of Bytes falls {lifted} B below {}: at least that much was allocated before profiling started and is counted live from the start (peak and totals are lower bounds)",
            if start > 0 { "the Total Allocated baseline" } else { "zero" }
        ));
    } else if baseline > 0 {
        t.warn(format!(
            "{baseline} bytes were allocated before profiling started (Total Allocated minus the running sum of Bytes); counted live from the start"
        ));
    }
    let which = if without == n {
        "no [memory] event carries an Addr (older PyTorch)".to_string()
    } else {
        format!("{without} of {n} [memory] events carry no Addr")
    };
    t.warn(format!(
        "{which}: totals are the running sum of Bytes in time order; which allocations are live is unknown, so the live set is unavailable"
    ));
    t.set_identities_unknown(baseline);
    t.bands_source = crate::trace::BandsSource::Unavailable;
    let reserved_known = evs.iter().any(|m| m.total_res().is_some_and(|r| r > 0));
    let seg_name = t.strings.intern("reserved segment");
    let mut segs: Vec<(AllocId, i64)> = Vec::new();
    let mut reserved: Option<i64> = None;
    for m in evs.iter() {
        let kind = match m.bytes {
            b if b > 0 => EventKind::Alloc,
            b if b < 0 => EventKind::Free,
            _ => EventKind::Other,
        };
        let at = t.push_event_src(Ts(m.ts), kind, m.src);
        t.set_delta(at, m.bytes);
        if reserved_known {
            if let Some(r) = m.total_res().filter(|&r| r >= 0) {
                follow_reserved(t, &mut segs, &mut reserved, r, seg_name);
            }
        }
    }
}

fn names_of(
    t: &mut Trace,
    attr: &Attribution,
    c: &Collected,
    mi: usize,
    name_map: &mut FxHashMap<u32, StrId>,
    stack_map: &mut FxHashMap<u32, StackId>,
) -> (StrId, StackId) {
    let mut intern = |t: &mut Trace, g: u32| -> StrId {
        *name_map.entry(g).or_insert_with(|| {
            if g == super::attribute::CUT {
                t.strings.intern(CUT_FRAME)
            } else {
                t.strings.intern(c.names.get(g))
            }
        })
    };
    let op = attr.op.get(mi).copied().unwrap_or(NONE);
    let sid = attr.stack.get(mi).copied().unwrap_or(NONE);
    let stack = if sid == NONE {
        StackId::default()
    } else if let Some(&s) = stack_map.get(&sid) {
        s
    } else {
        let frames: Vec<StrId> = attr
            .stacks
            .get(sid as usize)
            .map(|f| f.iter().map(|&g| intern(t, g)).collect())
            .unwrap_or_default();
        let s = t.strings.intern_stack(&frames);
        stack_map.insert(sid, s);
        s
    };
    let name = if op != NONE {
        intern(t, op)
    } else if sid != NONE {
        // No cpu_op: the innermost Python frame names it.
        let first = attr
            .stacks
            .get(sid as usize)
            .and_then(|f| f.first().copied());
        first.map_or(StrId::default(), |g| intern(t, g))
    } else {
        StrId::default()
    };
    (name, stack)
}

/// Makes the reserved total after this event equal `r` with segment storages.
fn follow_reserved(
    t: &mut Trace,
    segs: &mut Vec<(AllocId, i64)>,
    level: &mut Option<i64>,
    r: i64,
    name: StrId,
) {
    let Some(cur) = *level else {
        // Reserved before the first event (or by it): live from the start.
        if r > 0 {
            let id = t.open_from_start(
                Bytes(r as u64),
                Category::Unknown,
                StorageKind::Segment,
                name,
                StackId::default(),
                0,
            );
            segs.push((id, r));
        }
        *level = Some(r);
        return;
    };
    let mut cur = cur;
    while cur > r {
        let Some((id, sz)) = segs.pop() else { break };
        t.close(id);
        cur -= sz;
    }
    if r > cur {
        let id = t.open(
            Bytes((r - cur) as u64),
            Category::Unknown,
            StorageKind::Segment,
            name,
            StackId::default(),
            0,
        );
        segs.push((id, r - cur));
    }
    *level = Some(r);
}

/// Moves one live allocation of the change's size from its old category to the new one.
#[allow(clippy::too_many_arguments)]
fn apply_change(
    t: &mut Trace,
    live: &mut FxHashMap<u64, Live>,
    s: &Sidecar,
    ts: &[i64],
    dry: &Dry,
    base_ns: i64,
    p: usize,
    ch: super::sidecar::Change,
) -> bool {
    // Prefer an allocation whose recorded DESTROY has the new category; then the newest.
    let score = |l: &Live| {
        let f = dry.free_of.get(l.at as usize).copied().unwrap_or(NONE);
        let ends_new = f != NONE
            && ts
                .get(f as usize)
                .and_then(|&tf| s.destroy_cat(tf + base_ns, l.size))
                == Some(ch.new);
        (ends_new, l.at)
    };
    let Some((&addr, &l)) = live
        .iter()
        .filter(|(_, l)| l.size == ch.bytes && l.pt == ch.old)
        .max_by_key(|(_, l)| score(l))
    else {
        return false;
    };
    let cat = category_of(ch.new);
    let id = if l.at as usize == p {
        t.set_category(l.id, cat, false);
        l.id
    } else {
        let (name, stack, src) = (
            t.storages.name.get(l.id.idx()),
            t.storages
                .stack
                .get(l.id.idx())
                .copied()
                .unwrap_or_default(),
            addr,
        );
        t.close(l.id);
        t.open(
            Bytes(l.size as u64),
            cat,
            StorageKind::Block,
            name,
            stack,
            src,
        )
    };
    live.insert(
        addr,
        Live {
            id,
            pt: ch.new,
            ..l
        },
    );
    true
}

/// Stream captures: each `…BeginCapture` call with the next `…EndCapture` on its thread, as
/// (name, start, end) in ns, in time order. The name is the innermost annotation around the
/// begin call on that thread (`capture_8192_PIECEWISE`, `capture_32_DECODE`), else
/// `CUDA graph capture`. A begin without an end runs to the last span of the trace.
fn captures(c: &Collected) -> Vec<(String, i64, i64)> {
    let mut calls: Vec<&super::parse::Span> = c
        .spans
        .iter()
        .filter(|s| s.kind() == SpanKind::Capture)
        .collect();
    if calls.is_empty() {
        return Vec::new();
    }
    calls.sort_by_key(|s| (s.start, s.end));
    let last = c.spans.iter().map(|s| s.end).max().unwrap_or(0);
    let mut open: rustc_hash::FxHashMap<u32, i64> = Default::default();
    let mut out = Vec::new();
    for s in calls {
        match super::parse::capture_call(c.names.get(s.name())) {
            Some(true) => {
                open.entry(s.tid).or_insert(s.start);
            }
            Some(false) => {
                if let Some(b) = open.remove(&s.tid) {
                    out.push((capture_name(c, s.tid, b), b, s.end));
                }
            }
            None => {}
        }
    }
    let mut rest: Vec<(u32, i64)> = open.into_iter().collect();
    rest.sort_by_key(|&(tid, b)| (b, tid));
    for (tid, b) in rest {
        out.push((capture_name(c, tid, b), b, last));
    }
    out.sort_by_key(|&(_, b, e)| (b, e));
    out
}

/// The innermost annotation on thread `tid` open at `at` (the one that started last).
fn capture_name(c: &Collected, tid: u32, at: i64) -> String {
    c.spans
        .iter()
        .filter(|s| s.kind() == SpanKind::Annotation && s.tid == tid)
        .filter(|s| s.start <= at && at < s.end)
        .max_by_key(|s| (s.start, std::cmp::Reverse(s.end)))
        .map_or_else(
            || "CUDA graph capture".to_string(),
            |s| c.names.get(s.name()).to_string(),
        )
}

/// Step and phase marks from annotation spans, OOM marks, sorted by position. The first
/// `n_mem` events of `t` are the device's `[memory]` events (their times, ascending, place
/// the marks).
fn add_marks(t: &mut Trace, c: &Collected, n_mem: usize, ooms: &[usize]) {
    let n = t.len();
    if n == 0 {
        return;
    }
    // The first of the memory events for which `pred` (false from some point on) is false.
    let first = |t: &Trace, pred: &dyn Fn(i64) -> bool| -> usize {
        let (mut lo, mut hi) = (0usize, n_mem);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(t.ts(Seq(mid as u64)).0) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    };
    let has_profiler_steps = c.spans.iter().any(|s| {
        s.kind() == SpanKind::Annotation && c.names.get(s.name()).starts_with("ProfilerStep#")
    });
    let mut marks: Vec<(Mark, i64)> = Vec::new();
    let mut seen = rustc_hash::FxHashSet::default();
    for s in c.spans.iter().filter(|s| s.kind() == SpanKind::Annotation) {
        // The same annotation recorded twice (e.g. on two threads) is one mark.
        if !seen.insert((s.name(), s.start, s.end)) {
            continue;
        }
        let at = first(t, &|x| x < s.start);
        let last = first(t, &|x| x < s.end.max(s.start.saturating_add(1)));
        if at >= n_mem || last == 0 || last - 1 < at {
            continue; // no [memory] event of this device inside the span
        }
        let name = c.names.get(s.name());
        let step = if has_profiler_steps {
            name.starts_with("ProfilerStep#")
        } else {
            step_like(name)
        };
        let id = t.strings.intern(name);
        marks.push((
            Mark {
                at: Seq(at as u64),
                ts: Ts(s.start),
                name: id,
                kind: if step {
                    MarkKind::Step
                } else {
                    MarkKind::Phase
                },
                end: Some(Seq(last as u64 - 1)),
                size: None,
                free: None,
                stack: StackId(0),
            },
            s.start,
        ));
    }
    for (name, start, end) in captures(c) {
        let at = first(t, &|x| x < start);
        let last = first(t, &|x| x < end.max(start.saturating_add(1)));
        // A capture with no [memory] event of this device inside still opened: marked
        // on the event after it (grew nothing), as long as one exists.
        let at = at.min(n_mem.saturating_sub(1));
        let end_at = last.saturating_sub(1).max(at);
        let id = t.strings.intern(&name);
        marks.push((
            Mark {
                at: Seq(at as u64),
                ts: Ts(start),
                name: id,
                kind: MarkKind::Capture,
                end: Some(Seq(end_at as u64)),
                size: None,
                free: None,
                stack: StackId(0),
            },
            start,
        ));
    }
    for &o in ooms {
        let ev = &c.ooms[o];
        let at = if n_mem == 0 {
            // OOM-only device: one event per OOM, in order.
            ooms.iter().position(|&x| x == o).unwrap_or(0)
        } else {
            first(t, &|x| x <= ev.ts).saturating_sub(1)
        };
        let name = t.strings.intern(&format!(
            "out of memory: {} requested",
            Bytes(ev.bytes.unsigned_abs()).human()
        ));
        marks.push((
            Mark {
                at: Seq((at as u64).min(n as u64 - 1)),
                ts: Ts(ev.ts),
                name,
                kind: MarkKind::Oom,
                end: None,
                size: Some(Bytes(ev.bytes.unsigned_abs())),
                free: None,
                stack: StackId(0),
            },
            ev.ts,
        ));
    }
    marks.sort_by_key(|(m, start)| (m.at, *start));
    for (m, _) in marks {
        t.add_mark(m);
    }
}

/// `ProfilerStep#3`, `step1`, `step0_warmup`, `Step 2`, `train_step_4`…
pub fn step_like(name: &str) -> bool {
    if name.starts_with("ProfilerStep#") {
        return true;
    }
    let l = name.to_ascii_lowercase();
    let Some(i) = l.find("step") else {
        return false;
    };
    // "step" must start the name or follow a separator, and be followed by a number.
    let before_ok = i == 0 || l.as_bytes()[i - 1] == b'_' || l.as_bytes()[i - 1] == b' ';
    let rest = l[i + 4..].trim_start_matches(['_', ' ', '#', '-']);
    before_ok && rest.as_bytes().first().is_some_and(|b| b.is_ascii_digit())
}
