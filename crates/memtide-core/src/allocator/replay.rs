//! Replaying a device's trace entries into allocator states. The input ([`History`]) is what
//! a snapshot records: the entries in order and the final `segments`. The state before the
//! first entry is solved from both: segments are the final ones with the trace's segment
//! events undone newest first; blocks live from the start are the frees whose alloc the ring
//! buffer dropped and the final active blocks the trace never allocated. Then each entry is
//! applied forward.

use super::by_address::ByAddress;
use super::entries::Entries;
use super::extent::block_for_at;
use super::rounding::{segment_kind, PoolKind, LARGE_BUFFER};
use super::sim::config::AllocConf;
use super::state::{Active, BlockState, FlatState, PoolId, SegMeta, State};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// A trace entry's action, as far as the allocator state is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Op {
    Alloc,
    FreeRequested,
    FreeCompleted,
    SegmentAlloc,
    SegmentFree,
    SegmentMap,
    SegmentUnmap,
    /// `addr` is the driver's free bytes (`device_free`), `size` the rounded request.
    Oom,
    /// Anything that does not change the state (snapshot, annotate, unknown actions).
    Other,
}

/// One trace entry (24 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub addr: u64,
    pub size: u64,
    /// Index into [`History::places`]: its stream and pool (0: stream 0 of the default
    /// pool).
    pub place: u32,
    pub op: Op,
}

const _: () = assert!(std::mem::size_of::<Entry>() == 24);

/// Where an entry allocates: its stream and pool, shared by the entries that name the same
/// pair (a trace has a handful).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Place {
    pub stream: u64,
    /// Index into [`History::pools`] (0: the default pool).
    pub pool: u32,
}

/// A block of the final `segments`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FinalBlock {
    pub size: u64,
    pub requested: u64,
    pub state: BlockState,
}

/// A segment of the final `segments`: blocks tile it from `address` in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FinalSegment {
    pub address: u64,
    pub total_size: u64,
    pub stream: u64,
    pub pool_id: PoolId,
    /// `segment_type` (None when the file does not say).
    pub kind: Option<PoolKind>,
    pub expandable: bool,
    pub blocks: Vec<FinalBlock>,
}

impl FinalSegment {
    /// The pool set the segment belongs to: its `segment_type`, else inferred from its size.
    pub fn pool_kind(&self) -> PoolKind {
        self.kind.unwrap_or_else(|| segment_kind(self.total_size))
    }

    pub(crate) fn meta(&self) -> SegMeta {
        SegMeta {
            stream: self.stream,
            pool_id: self.pool_id,
            kind: self.pool_kind(),
            expandable: self.expandable,
        }
    }
}

/// One device's allocator history: what [`Model`] replays.
#[derive(Clone, Debug, Default)]
pub struct History {
    /// The device ("cuda:0") of the trace this history belongs to.
    pub device: String,
    pub entries: Entries,
    /// The stream and pool of entries (index 0: stream 0 of the default pool; missing
    /// places read as that).
    pub places: Vec<Place>,
    /// Pool ids named by entries (index 0 is the default pool).
    pub pools: Vec<PoolId>,
    pub segments: Vec<FinalSegment>,
    /// The recorded allocator settings (`allocator_settings`; PyTorch's defaults when the
    /// file has none): how requests were rounded and whether blocks were split.
    pub conf: AllocConf,
    /// The states before its OOM entries, when replayed ahead of the ask (a headless load of
    /// a file that ran out of memory replays them as it reads the history).
    pub at_ooms: StatesAtOoms,
}

/// The allocator states before a history's OOM entries, replayed ahead of the ask: what
/// [`History::states_before`] gives at those entries without a replay.
#[derive(Clone, Debug, Default)]
pub struct StatesAtOoms {
    /// How many entries the history had when they were replayed (a history whose entries
    /// changed since replays again).
    entries: usize,
    /// (entry index, the state once the entries before it are applied), ascending.
    states: Vec<(usize, State)>,
}

impl StatesAtOoms {
    /// The state before entry `i`, if replayed ahead over `entries` entries.
    fn before(&self, i: usize, entries: usize) -> Option<&State> {
        if self.entries != entries {
            return None;
        }
        let k = self.states.binary_search_by_key(&i, |&(at, _)| at).ok()?;
        self.states.get(k).map(|(_, s)| s)
    }
}

/// What the replay met that a faithful file would not have.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplayReport {
    /// Allocs over active blocks (the older ones are dropped).
    pub overwritten: u64,
    /// `free_requested` / `free_completed` of an address with no active block.
    pub unmatched_frees: u64,
    /// Bytes mapped while already mapped.
    pub double_mapped: u64,
    /// Bytes unmapped or freed that were not mapped.
    pub unmatched_unmap: u64,
    /// Reserved bytes at the end of the replay and in the final segments.
    pub end_reserved: u64,
    pub final_reserved: u64,
    /// Active blocks at the end of the replay that the final segments do not have, and the
    /// converse.
    pub end_extra_blocks: u64,
    pub end_missing_blocks: u64,
}

impl ReplayReport {
    /// Whether the replay ends exactly at the final segments.
    pub fn consistent(&self) -> bool {
        self.end_reserved == self.final_reserved
            && self.end_extra_blocks == 0
            && self.end_missing_blocks == 0
    }
}

impl History {
    /// The stream and pool of an entry.
    pub fn place_of(&self, e: &Entry) -> Place {
        self.places
            .get(e.place as usize)
            .copied()
            .unwrap_or_default()
    }

    /// The stream of an entry.
    pub fn stream_of(&self, e: &Entry) -> u64 {
        self.place_of(e).stream
    }

    /// The pool id of an entry.
    pub fn pool_of(&self, e: &Entry) -> PoolId {
        let pool = self.place_of(e).pool;
        self.pools.get(pool as usize).copied().unwrap_or_default()
    }

    /// The final active blocks by address (addresses are running sums, as MemoryViz does).
    pub fn final_blocks(&self) -> Vec<(u64, FinalBlock, &FinalSegment)> {
        let mut out = Vec::new();
        for s in &self.segments {
            let mut addr = s.address;
            for b in &s.blocks {
                out.push((addr, *b, s));
                addr = addr.wrapping_add(b.size);
            }
        }
        out
    }

    /// The state before the first entry.
    pub fn initial_state(&self) -> State {
        self.initial_state_and_segment_entries().0
    }

    /// [`History::initial_state`], with the history's segment entries in order (found by
    /// the same pass).
    pub(crate) fn initial_state_and_segment_entries(&self) -> (State, Vec<Entry>) {
        // Slots for the addresses the entries name, while they are few enough for a state to
        // carry a slot each (a training loop's are a few thousand; a history naming millions
        // keeps its blocks in the tree, as it would cost more to rank them than to search).
        let table = self
            .entries
            .addresses()
            .filter(|t| t.len() <= SLOTTED_ADDRESSES)
            .unwrap_or_default();
        let final_blocks = self.final_blocks();
        let others = match table.is_empty() {
            true => Vec::new(),
            false => final_blocks.iter().map(|&(a, _, _)| a).collect(),
        };
        let mut st = State::for_addresses(table, others);
        for s in &self.segments {
            st.map(s.address, s.address.saturating_add(s.total_size), s.meta());
        }
        // Blocks live from the start, and the segment entries to undo.
        let mut seen = Seen::new(&self.entries);
        let mut segment_entries = Vec::new();
        for (e, number) in self.entries.numbered(0..self.entries.len()) {
            match e.op {
                Op::Alloc => seen.set(e.addr, number, Seen::LIVE),
                Op::FreeRequested if !seen.has(e.addr, number, Seen::LIVE) => {
                    seen.set(e.addr, number, Seen::REQUESTED_FIRST);
                }
                Op::FreeCompleted
                    if !seen.take(e.addr, number, Seen::LIVE)
                        && !seen.has(e.addr, number, Seen::UNMATCHED) =>
                {
                    seen.set(e.addr, number, Seen::UNMATCHED);
                    st.put_block(
                        e.addr,
                        Active {
                            // Its free run is unknown: the rounded request, a lower bound.
                            size: self.conf.round_size(e.size).unwrap_or(e.size),
                            requested: e.size,
                            pending: false,
                        },
                    );
                }
                Op::SegmentAlloc | Op::SegmentMap | Op::SegmentFree | Op::SegmentUnmap => {
                    segment_entries.push(e);
                }
                _ => {}
            }
        }
        // The final segments with the trace's segment entries undone, newest first.
        let finals = self.final_kinds();
        for e in segment_entries.iter().rev() {
            let (a, b) = (e.addr, e.addr.saturating_add(e.size));
            match e.op {
                Op::SegmentAlloc | Op::SegmentMap => {
                    st.unmap(a, b);
                }
                _ => {
                    let meta = self.meta_for(e, &finals, &st);
                    st.map(a, b, meta);
                }
            }
        }
        for (addr, b, _) in final_blocks {
            let active = matches!(b.state, BlockState::Allocated | BlockState::PendingFree);
            // (A final block's address comes without its number: the table is asked.)
            let saw = |flag| seen.has(addr, None, flag);
            if active && !saw(Seen::LIVE) && !saw(Seen::UNMATCHED) {
                let pending = b.state == BlockState::PendingFree && !saw(Seen::REQUESTED_FIRST);
                st.put_block(
                    addr,
                    Active {
                        size: b.size,
                        requested: b.requested,
                        pending,
                    },
                );
            }
        }
        (st, segment_entries)
    }

    /// What the final segments tell the replay: each segment's pool set and each active
    /// block's extent (a block of the same request at the same address has that extent).
    fn finals(&self) -> Finals {
        let blocks = self
            .final_blocks()
            .into_iter()
            .filter(|(_, b, _)| matches!(b.state, BlockState::Allocated | BlockState::PendingFree))
            .map(|(a, b, _)| (a, (b.requested, b.size)))
            .collect();
        Finals {
            kinds: self.final_kinds(),
            blocks,
        }
    }

    /// Final segments by start: (end, kind), to name the pool set of a range the trace maps.
    fn final_kinds(&self) -> BTreeMap<u64, (u64, PoolKind)> {
        self.segments
            .iter()
            .map(|s| {
                (
                    s.address,
                    (s.address.saturating_add(s.total_size), s.pool_kind()),
                )
            })
            .collect()
    }

    fn meta_for(&self, e: &Entry, finals: &BTreeMap<u64, (u64, PoolKind)>, st: &State) -> SegMeta {
        let expandable = matches!(e.op, Op::SegmentMap | Op::SegmentUnmap);
        // A final segment overlapping the range names its pool set.
        let known = finals
            .range(..e.addr.saturating_add(e.size.max(1)))
            .next_back()
            .filter(|&(_, &(end, _))| end > e.addr)
            .map(|(_, &(_, k))| k);
        // An expandable range continues the expandable segment of its pool and stream that it
        // touches.
        let pool_id = self.pool_of(e);
        let known = known.or_else(|| {
            expandable
                .then(|| {
                    st.touching_expandable(
                        e.addr,
                        e.addr.saturating_add(e.size),
                        self.stream_of(e),
                        pool_id,
                    )
                })
                .flatten()
        });
        // Expandable large-pool segments grow by 20 MiB pages, small ones by 2 MiB.
        let kind = known.unwrap_or(if expandable {
            if e.size.is_multiple_of(LARGE_BUFFER) {
                PoolKind::Large
            } else {
                PoolKind::Small
            }
        } else {
            segment_kind(e.size)
        });
        SegMeta {
            stream: self.stream_of(e),
            pool_id,
            kind,
            expandable,
        }
    }

    /// A forward replayer starting at [`History::initial_state`].
    pub fn replayer(&self) -> Replayer<'_> {
        Replayer {
            history: self,
            finals: self.finals(),
            state: self.initial_state(),
            next: 0,
            report: ReplayReport::default(),
        }
    }

    /// Replays the history now to each of its OOM entries, keeping the state before each
    /// for [`History::states_before`] (a headless load of a file that ran out of memory does
    /// this on the thread that read the history, while the traces are built).
    pub(crate) fn replay_to_ooms(&mut self) {
        let at: Vec<usize> = self
            .entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.op == Op::Oom)
            .map(|(i, _)| i)
            .collect();
        if at.is_empty() {
            return;
        }
        let states = self.states_before(&at);
        self.at_ooms = StatesAtOoms {
            entries: self.entries.len(),
            states: at.into_iter().zip(states).collect(),
        };
    }

    /// The states before each of `at` (entry indices, ascending), in one pass (none when
    /// every one was replayed ahead: [`History::at_ooms`]).
    pub fn states_before(&self, at: &[usize]) -> Vec<State> {
        let n = self.entries.len();
        let ahead: Option<Vec<State>> = at
            .iter()
            .map(|&i| self.at_ooms.before(i, n).cloned())
            .collect();
        if let Some(states) = ahead.filter(|_| !at.is_empty()) {
            return states;
        }
        let mut r = self.replayer();
        at.iter()
            .map(|&i| {
                r.advance_to(i);
                r.state.clone()
            })
            .collect()
    }

    /// Checks the replay's end against the final segments.
    pub fn check_end(&self, end: &State, report: &mut ReplayReport) {
        report.end_reserved = end.totals().reserved;
        report.final_reserved = self
            .segments
            .iter()
            .fold(0u64, |a, s| a.saturating_add(s.total_size));
        let finals: FxHashMap<u64, FinalBlock> = self
            .final_blocks()
            .into_iter()
            .filter(|(_, b, _)| matches!(b.state, BlockState::Allocated | BlockState::PendingFree))
            .map(|(a, b, _)| (a, b))
            .collect();
        report.end_extra_blocks = end
            .blocks
            .iter()
            .filter(|(a, _)| !finals.contains_key(a))
            .count() as u64;
        report.end_missing_blocks = finals
            .keys()
            .filter(|&&a| !end.blocks.contains_key(a))
            .count() as u64;
    }
}

/// The most addresses a replayed state keeps a slot for ([`History::initial_state`]).
const SLOTTED_ADDRESSES: usize = 1 << 16;

/// What [`History::initial_state`]'s pass saw of each address.
struct Seen<'a>(ByAddress<'a, u8>);

impl<'a> Seen<'a> {
    /// Allocated and not yet freed.
    const LIVE: u8 = 1;
    /// Its first `free_requested` came while it was not live.
    const REQUESTED_FIRST: u8 = 2;
    /// A `free_completed` of it came while it was not live.
    const UNMATCHED: u8 = 4;

    fn new(entries: &'a Entries) -> Self {
        Seen(ByAddress::new(entries))
    }

    fn has(&self, addr: u64, n: Option<u32>, flag: u8) -> bool {
        self.0.get(addr, n).is_some_and(|f| f & flag != 0)
    }

    fn set(&mut self, addr: u64, n: Option<u32>, flag: u8) {
        let f = self.0.get(addr, n).unwrap_or(0);
        self.0.insert(addr, n, f | flag);
    }

    /// Clears `flag`, saying whether it was set.
    fn take(&mut self, addr: u64, n: Option<u32>, flag: u8) -> bool {
        let f = self.0.get(addr, n).unwrap_or(0);
        if f & flag != 0 {
            self.0.insert(addr, n, f & !flag);
        }
        f & flag != 0
    }
}

/// Applies entries forward from the initial state.
pub struct Replayer<'a> {
    history: &'a History,
    finals: Finals,
    pub state: State,
    /// Entries applied so far.
    pub next: usize,
    pub report: ReplayReport,
}

impl Replayer<'_> {
    /// Applies entries until `n` have been applied (no-op when already past).
    pub fn advance_to(&mut self, n: usize) {
        let n = n.min(self.history.entries.len());
        if self.next >= n {
            return;
        }
        for (e, number) in self.history.entries.numbered(self.next..n) {
            apply(
                &mut self.state,
                &e,
                number,
                self.history,
                &self.finals,
                &mut self.report,
            );
        }
        self.next = n;
    }
}

/// Facts from the final segments used while replaying.
#[derive(Clone, Debug, Default)]
struct Finals {
    kinds: BTreeMap<u64, (u64, PoolKind)>,
    /// Active block address → (requested, size).
    blocks: FxHashMap<u64, (u64, u64)>,
}

/// Applies one entry (`number`: its address's number in the entries' table, if numbered).
fn apply(
    st: &mut State,
    e: &Entry,
    number: Option<u32>,
    h: &History,
    finals: &Finals,
    rep: &mut ReplayReport,
) {
    let (a, b) = (e.addr, e.addr.saturating_add(e.size));
    let locate = |st: &State| match number {
        Some(n) => st.locate_number(e.addr, n),
        None => st.locate(e.addr),
    };
    match e.op {
        Op::Alloc => {
            // A block still there at the dump says its own size; else PyTorch's rules place it.
            let at = locate(st);
            let size = match finals.blocks.get(&e.addr) {
                Some(&(req, size)) if req == e.size => size,
                _ => block_for_at(st, &h.conf, &at, e.size).size,
            };
            rep.overwritten += st.alloc_sized_at(&at, e.size, size);
        }
        Op::FreeRequested => {
            if !st.free_requested_at(&locate(st)) {
                rep.unmatched_frees += 1;
            }
        }
        Op::FreeCompleted => {
            if !st.free_completed_at(&locate(st)) {
                rep.unmatched_frees += 1;
            }
        }
        Op::SegmentAlloc | Op::SegmentMap => {
            let meta = h.meta_for(e, &finals.kinds, st);
            rep.double_mapped += st.map(a, b, meta);
        }
        Op::SegmentFree | Op::SegmentUnmap => rep.unmatched_unmap += st.unmap(a, b),
        Op::Oom | Op::Other => {}
    }
}

/// The replayed history with checkpoints: the state at any entry without a replay from the
/// start (a checkpoint's copy, then at most one checkpoint interval of entries).
#[derive(Clone, Debug)]
pub struct Model {
    history: History,
    /// `checkpoints[k]` = the state after `k * every` entries, kept flat.
    checkpoints: Vec<FlatState>,
    every: usize,
    end: State,
    report: ReplayReport,
    finals: Finals,
}

/// Checkpoint memory budget, in stored blocks and segments (32 B each, kept flat: 32 MiB;
/// about 48 B each as trees). Four times this held 192 MiB on a 7 M-entry snapshot, half
/// the explorer's memory beyond the trace, to save replaying at most a few thousand more
/// entries per query (a millisecond).
const CHECKPOINT_BUDGET: usize = 1 << 20;

impl Model {
    /// Replays `history` once, keeping checkpoints (every 4,096 entries at first; the
    /// interval doubles whenever they would hold more than `CHECKPOINT_BUDGET` items).
    pub fn build(history: History) -> Model {
        Model::build_every(history, 4096)
    }

    /// [`Model::build`] with a first checkpoint interval of `every` entries (at least 1).
    pub fn build_every(history: History, every: usize) -> Model {
        let mut every = every.max(1);
        let mut checkpoints = Vec::new();
        let mut held = 0usize;
        let (end, mut report) = {
            let mut r = history.replayer();
            checkpoints.push(r.state.flat());
            held += r.state.active_count() + r.state.segment_count();
            let n = history.entries.len();
            let mut at = every;
            while at <= n {
                r.advance_to(at);
                checkpoints.push(r.state.flat());
                held += r.state.active_count() + r.state.segment_count();
                if held > CHECKPOINT_BUDGET {
                    // Keep every other checkpoint: the interval doubles.
                    checkpoints = checkpoints.into_iter().step_by(2).collect();
                    held = checkpoints.iter().map(FlatState::items).sum();
                    every *= 2;
                }
                at = checkpoints.len() * every;
            }
            r.advance_to(n);
            (r.state, r.report)
        };
        history.check_end(&end, &mut report);
        let finals = history.finals();
        Model {
            finals,
            history,
            checkpoints,
            every,
            end,
            report,
        }
    }

    pub fn history(&self) -> &History {
        &self.history
    }

    pub fn report(&self) -> &ReplayReport {
        &self.report
    }

    /// Number of entries (events on the event axis).
    pub fn len(&self) -> usize {
        self.history.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.history.entries.is_empty()
    }

    /// The checkpoint interval, in entries.
    pub fn checkpoint_interval(&self) -> usize {
        self.every
    }

    /// The state before the first entry.
    pub fn at_start(&self) -> State {
        self.before(0)
    }

    /// The state after the last entry.
    pub fn at_end(&self) -> &State {
        &self.end
    }

    /// The state once entries `0..n` are applied (`n` is clamped to the length).
    pub fn before(&self, n: usize) -> State {
        let n = n.min(self.len());
        let k = (n / self.every).min(self.checkpoints.len().saturating_sub(1));
        let Some(base) = self.checkpoints.get(k) else {
            return self.history.initial_state();
        };
        let mut st = State::from_flat(base, &self.end);
        let mut rep = ReplayReport::default();
        for (e, number) in self.history.entries.numbered(k * self.every..n) {
            apply(&mut st, &e, number, &self.history, &self.finals, &mut rep);
        }
        st
    }

    /// The state after event `i` (entry `i` applied): what the timeline shows at `#i`.
    pub fn after(&self, i: usize) -> State {
        self.before(i.saturating_add(1))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::allocator::rounding::PoolKind;
    use crate::{open, LoadOptions, OpenOptions, Progress};
    use proptest::prelude::*;

    /// The history with its entries packed: no address table, so its replay keeps every
    /// block in the state's tree (what every replay did before blocks had slots).
    fn in_a_tree(h: &History) -> History {
        History {
            entries: h.entries.packed_copy(),
            ..h.clone()
        }
    }

    /// The replay through slots and through the tree: the same state before every entry
    /// (`every` apart), the same what-if input, the same report, the same checkpointed
    /// model.
    fn same_both_ways(h: &History, every: usize) -> Result<(), TestCaseError> {
        let tree = in_a_tree(h);
        prop_assert!(h.entries.addresses().is_some());
        prop_assert!(tree.entries.addresses().is_none());
        let at: Vec<usize> = (0..=h.entries.len()).step_by(every.max(1)).collect();
        let slots = h.states_before(&at);
        prop_assert_eq!(&slots, &tree.states_before(&at));
        for (st, &i) in slots.iter().zip(&at) {
            prop_assert_eq!(st.segments(), tree.states_before(&[i])[0].segments());
        }
        // The what-if input read from it: the same ops, hints and streams either way.
        let input = |h: &History| format!("{:?}", crate::allocator::sim::SimInput::from_history(h));
        prop_assert_eq!(input(h), input(&tree));
        let (a, b) = (
            Model::build_every(h.clone(), 3),
            Model::build_every(tree, 3),
        );
        prop_assert_eq!(a.report(), b.report());
        prop_assert_eq!(a.at_end(), b.at_end());
        for &i in &at {
            prop_assert_eq!(a.before(i), b.before(i));
        }
        Ok(())
    }

    #[test]
    fn every_snapshot_fixture_replays_the_same_through_slots_and_a_tree() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let mut files = Vec::new();
        for dir in ["tests/fixtures/oom", "tests/fixtures", "sample-traces"] {
            for e in std::fs::read_dir(root.join(dir)).unwrap() {
                let p = e.unwrap().path();
                if p.extension().is_some_and(|x| x == "pickle") {
                    files.push(p);
                }
            }
        }
        files.sort();
        // (Read for the explorer: every history whole, in its model.)
        let opts = OpenOptions {
            read: LoadOptions {
                allocator_models: true,
                ..Default::default()
            },
            ..Default::default()
        };
        let mut replayed = 0;
        for f in &files {
            let Ok(opened) = open(f, &opts, &Progress::new()) else {
                continue;
            };
            let models = opened.devices.iter().filter_map(|d| d.allocator());
            for h in models
                .map(|m| m.history())
                .filter(|h| !h.entries.is_empty())
            {
                let every = (h.entries.len() / 50).max(1);
                same_both_ways(h, every)
                    .map_err(|e| format!("{}: {e}", f.display()))
                    .unwrap();
                replayed += 1;
            }
        }
        assert!(replayed >= 10, "{replayed} histories replayed");
    }

    /// A headless load of a file that ran out of memory replays its history to each OOM as
    /// it reads it: the states kept are a replay's from the start, and a history whose
    /// entries changed since replays again.
    #[test]
    fn a_headless_load_keeps_the_state_before_each_oom() {
        let files = crate::test_files::oom_snapshots();
        let mut kept = 0;
        for f in &files {
            let opened = open(f, &Default::default(), &Progress::new()).unwrap();
            for h in opened.devices.iter().filter_map(|d| d.history()) {
                let at: Vec<usize> = (0..h.entries.len())
                    .filter(|&i| h.entries.get(i).is_some_and(|e| e.op == Op::Oom))
                    .collect();
                assert_eq!(h.at_ooms.states.len(), at.len(), "{}", f.display());
                let fresh = History {
                    at_ooms: StatesAtOoms::default(),
                    ..h.clone()
                };
                assert_eq!(h.states_before(&at), fresh.states_before(&at));
                kept += at.len();
                if let Some(&last) = at.last() {
                    let mut cut = h.clone();
                    cut.entries.truncate(last);
                    assert_eq!(cut.at_ooms.before(last, cut.entries.len()), None);
                }
            }
        }
        assert!(kept >= 9, "{kept} states kept");
    }

    /// A history naming more addresses than a state keeps slots for (its blocks stay in the
    /// tree) replays as its packed copy does.
    #[test]
    fn a_history_of_many_addresses_replays_through_the_tree_alike() {
        let n = SLOTTED_ADDRESSES as u64 + 1000;
        let mut entries = vec![Entry {
            op: Op::SegmentAlloc,
            addr: 1 << 40,
            size: n << 10,
            place: 0,
        }];
        // A long run over a few addresses first: the table keeps numbering new addresses
        // past 65,536 only while they are at most an eighth of the entries.
        for k in 0..(8 * n + 8) {
            let addr = (1 << 40) + ((k / 2 % 16) << 10);
            let op = if k % 2 == 0 {
                Op::Alloc
            } else {
                Op::FreeCompleted
            };
            entries.push(Entry {
                op,
                addr,
                size: 1000,
                place: 0,
            });
        }
        for k in 0..n {
            let addr = (1 << 40) + (k << 10);
            entries.push(Entry {
                op: Op::Alloc,
                addr,
                size: 1000,
                place: 0,
            });
            if k % 3 != 0 {
                entries.push(Entry {
                    op: Op::FreeCompleted,
                    addr,
                    size: 1000,
                    place: 0,
                });
            }
        }
        let h = History {
            device: "cuda:0".into(),
            entries: entries.into(),
            ..History::default()
        };
        assert!(h
            .entries
            .addresses()
            .is_some_and(|t| t.len() > SLOTTED_ADDRESSES));
        let len = h.entries.len();
        let at = [0, len / 3, len - 1, len];
        assert_eq!(h.states_before(&at), in_a_tree(&h).states_before(&at));
        assert!(h.states_before(&[len])[0].active_count() > 20_000);
    }

    /// One entry over a few addresses and segments, any op in any order: allocations over
    /// live blocks, frees of nothing, blocks outside segments, segments mapped twice.
    fn entry() -> impl Strategy<Value = Entry> {
        let op = proptest::sample::select(vec![
            Op::Alloc,
            Op::Alloc,
            Op::FreeRequested,
            Op::FreeCompleted,
            Op::FreeCompleted,
            Op::SegmentAlloc,
            Op::SegmentFree,
            Op::SegmentMap,
            Op::SegmentUnmap,
            Op::Oom,
        ]);
        (op, 0u64..400, 0u64..6, 0u32..2).prop_map(|(op, slot, size, place)| {
            let addr = 0x1000_0000 + slot * (1 << 19);
            let size = match op {
                Op::SegmentAlloc | Op::SegmentFree | Op::SegmentMap | Op::SegmentUnmap => {
                    (size + 1) << 21
                }
                _ => [0, 512, 1000, 3 << 19, 5 << 20, 21 << 20][size as usize],
            };
            Entry {
                addr,
                size,
                place,
                op,
            }
        })
    }

    fn final_segment() -> impl Strategy<Value = FinalSegment> {
        (
            0u64..200,
            proptest::collection::vec((0u64..4, 0u8..3), 1..6),
        )
            .prop_map(|(at, blocks)| {
                let blocks: Vec<FinalBlock> = blocks
                    .into_iter()
                    .map(|(units, state)| FinalBlock {
                        size: (units + 1) << 19,
                        requested: ((units + 1) << 19) - 100,
                        state: match state {
                            0 => BlockState::Allocated,
                            1 => BlockState::PendingFree,
                            _ => BlockState::Free,
                        },
                    })
                    .collect();
                FinalSegment {
                    address: 0x1000_0000 + at * (1 << 20),
                    total_size: blocks.iter().map(|b| b.size).sum(),
                    stream: 0,
                    pool_id: PoolId(0, 0),
                    kind: Some(PoolKind::Large),
                    expandable: false,
                    blocks,
                }
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Histories no faithful file would make replay the same through slots and a tree.
        #[test]
        fn any_history_replays_the_same_through_slots_and_a_tree(
            entries in proptest::collection::vec(entry(), 0..400),
            segments in proptest::collection::vec(final_segment(), 0..4),
            every in 1usize..7,
        ) {
            let h = History {
                device: "cuda:0".into(),
                entries: entries.into(),
                places: vec![Place::default(), Place { stream: 7, pool: 0 }],
                pools: vec![PoolId(0, 0)],
                segments,
                ..History::default()
            };
            same_both_ways(&h, every)?;
        }
    }
}
