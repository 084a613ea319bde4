//! The interval index over a trace's storages on the event axis.
//!
//! Built from the trace's change log and extended in place when events are appended (live
//! tail): nothing already indexed is recomputed. Queries:
//! - [`Index::total`] / [`Index::bands_at`]: bytes live after an event, per band;
//! - [`Index::argmax`]: first position of the highest total in any range (block maxima plus a
//!   sparse table over complete blocks, so O(block) per query);
//! - [`Index::live_at`]: the live set at any position (adaptive live-set checkpoints, so the
//!   replay is bounded by twice max(block, live-set size));
//! - [`Index::overlapping`]: storages live anywhere in a range;
//! - the initial state (before position 0: storages live from the start) as an instant of its
//!   own: [`Index::start_total`], [`Index::live_at_start`], and [`Index::reserved_peak_at`]
//!   (`None` position when the reserved peak is the initial state).
//!
//! A trace without identities (no addresses) adds per-event byte deltas to the unknown band;
//! its live set is empty (unavailable: [`Trace::identities_known`]).
//!
//! Memory: 4 bytes per event for the totals (`trace/column64.rs`), plus checkpoints
//! (amortised ≤ half a `u32` per change) and `O(events / block)` for block maxima and band
//! checkpoints.

use crate::trace::column64::Column64;
use crate::trace::{AllocId, Band, BandTotals, Bytes, Change, Seq, StorageKind, Trace};
use rustc_hash::FxHashMap;

/// Positions per block (band checkpoints, block maxima).
pub(crate) const BLOCK: usize = 1024;

/// A live-set checkpoint is taken once this many times max(BLOCK, live-set size) changes
/// went by since the last: a query replays at most that many changes; the checkpoints
/// hold at most 4 / this bytes a change. At 1 they held 41 MB of the 113 MB index of a
/// 17 M-entry snapshot; at 2 half that, for `live_at` at 35.6–40.5 µs against 32.4–40.0 µs
/// on 10 M events (criterion, fat LTO, one sitting: benches/HISTORY.md).
const LIVE_CHECKPOINT_SPAN: usize = 2;

#[derive(Debug, Clone, Default)]
struct LiveCheckpoint {
    /// The live set recorded is the state *before* position `pos` is applied.
    pos: u64,
    /// Offset into the trace's change log of the first change at or after `pos`.
    change_off: usize,
    /// Range into `live_flat`.
    lo: usize,
    hi: usize,
}

/// The storages live as the change log goes, and copies of them at checkpoints (what
/// [`Index::live_at`] replays from).
#[derive(Debug, Clone, Default)]
struct LiveSets {
    ckpts: Vec<LiveCheckpoint>,
    flat: Vec<u32>,
    changes_since_ckpt: usize,
    /// Live at the end of what is followed, and where each is in `live`.
    live: Vec<u32>,
    pos: FxHashMap<u32, u32>,
}

impl LiveSets {
    fn insert(&mut self, id: u32) {
        if self.pos.contains_key(&id) {
            return;
        }
        self.pos.insert(id, self.live.len() as u32);
        self.live.push(id);
    }

    fn remove(&mut self, id: u32) {
        let Some(i) = self.pos.remove(&id) else {
            return;
        };
        let i = i as usize;
        self.live.swap_remove(i);
        if let Some(&moved) = self.live.get(i) {
            self.pos.insert(moved, i as u32);
        }
    }

    /// Follows `changes` (the first at `c`) over positions `from..to`: a checkpoint at a
    /// block's start when enough has changed since the last one to make replays long
    /// (bounded by [`LIVE_CHECKPOINT_SPAN`] times max(BLOCK, live size)).
    fn extend(&mut self, changes: &[Change], from: usize, to: usize, mut c: usize) {
        for p in from..to {
            if p % BLOCK == 0
                && (self.ckpts.is_empty()
                    || self.changes_since_ckpt >= LIVE_CHECKPOINT_SPAN * BLOCK.max(self.live.len()))
            {
                let lo = self.flat.len();
                self.flat.extend_from_slice(&self.live);
                self.ckpts.push(LiveCheckpoint {
                    pos: p as u64,
                    change_off: c,
                    lo,
                    hi: self.flat.len(),
                });
                self.changes_since_ckpt = 0;
            }
            while let Some(ch) = changes.get(c) {
                if ch.at().0 as usize > p {
                    break;
                }
                match ch.open() {
                    true => self.insert(ch.storage().0),
                    false => self.remove(ch.storage().0),
                }
                c += 1;
                self.changes_since_ckpt += 1;
            }
        }
    }
}

/// Sets bit `i`.
fn set_bit(bits: &mut Vec<u64>, i: u32) {
    let w = (i / 64) as usize;
    if bits.len() <= w {
        bits.resize(w + 1, 0);
    }
    if let Some(x) = bits.get_mut(w) {
        *x |= 1 << (i % 64);
    }
}

/// Clears bit `i`; whether it was set.
fn clear_bit(bits: &mut [u64], i: u32) -> bool {
    let Some(x) = bits.get_mut((i / 64) as usize) else {
        return false;
    };
    let was = *x & (1 << (i % 64)) != 0;
    *x &= !(1 << (i % 64));
    was
}

/// Events from which [`Index::extend`] follows the live sets on a second thread (below, the
/// thread costs more than it saves).
const LIVE_THREAD_FROM: usize = 1 << 20;

/// The interval index. Rebuild with [`Index::build`], extend with [`Index::extend`].
#[derive(Debug, Clone, Default)]
pub struct Index {
    events: usize,
    changes: usize,
    /// Total of the five bands after each position.
    totals: Column64,
    /// Band totals and reserved before each block's first position, plus the change-log offset.
    block_bands: Vec<BandTotals>,
    block_reserved: Vec<u64>,
    block_change: Vec<usize>,
    /// (max total, first position reaching it) of each block.
    block_max: Vec<(u64, u64)>,
    /// sparse[j][i] = index of the best block among complete blocks [i, i + 2^j).
    sparse: Vec<Vec<u32>>,
    complete_blocks: usize,

    /// The live sets and their checkpoints (built beside the totals).
    live: LiveSets,

    // running state at the end of what is indexed
    cur_bands: BandTotals,
    cur_reserved: u64,
    /// Which storages are live, one bit each (what the totals need of the live set).
    live_bits: Vec<u64>,
    baseline: BandTotals,
    baseline_reserved: u64,
    /// Storages live before position 0 (the initial state), for [`Index::live_at_start`].
    start_live: Vec<u32>,
    /// Highest reserved bytes and the first instant reaching it (None: the initial state).
    reserved_peak: Option<(u64, Option<u64>)>,
}

impl Index {
    /// Builds the index of a whole trace.
    pub fn build(trace: &Trace) -> Index {
        let mut ix = Index::build_base(trace);
        ix.extend(trace);
        ix
    }

    /// The index of the initial state alone (nothing of the events indexed yet).
    fn build_base(trace: &Trace) -> Index {
        let mut ix = Index {
            live_bits: Vec::with_capacity(trace.storage_count() / 64 + 1),
            ..Index::default()
        };
        // Storages live from the start are the baseline: counted before position 0.
        for i in 0..trace.storage_count() {
            let id = AllocId(i as u32);
            if trace.is_from_start(id) {
                let size = trace.size(id).0;
                match trace.storage_kind(id) {
                    StorageKind::Segment => ix.baseline_reserved += size,
                    StorageKind::Block => ix.baseline.add(trace.band(id), size),
                }
                ix.live.insert(i as u32);
                set_bit(&mut ix.live_bits, i as u32);
            }
        }
        // Bytes no storage carries (a source without identities) sit in the unknown band.
        ix.baseline.add(Band::Unknown, trace.anon_baseline());
        ix.start_live = ix.live.live.clone();
        ix.cur_bands = ix.baseline;
        ix.cur_reserved = ix.baseline_reserved;
        if trace.has_reserved || ix.baseline_reserved > 0 {
            // The initial state is the first candidate (it wins ties: it comes first).
            ix.reserved_peak = Some((ix.cur_reserved, None));
        }
        ix
    }

    /// Indexes events appended to `trace` since the last call. Cost is proportional to the new
    /// events and changes only. The live sets follow the change log on a thread of their own
    /// while this one sums the totals, when there are 2^20 new events or more.
    pub fn extend(&mut self, trace: &Trace) {
        self.extend_on(trace, LIVE_THREAD_FROM);
    }

    /// [`Index::extend`], the live sets on a second thread from `thread_from` new events.
    fn extend_on(&mut self, trace: &Trace, thread_from: usize) {
        let (from, to, c) = (self.events, trace.len(), self.changes);
        let changes = &trace.changes;
        let live = std::mem::take(&mut self.live);
        let follow = move || {
            let mut live = live;
            live.extend(changes, from, to, c);
            live
        };
        let jobs = match to.saturating_sub(from) >= thread_from {
            true => 2,
            false => 1,
        };
        let (live, ()) =
            crate::worker::both("memtide-index", jobs, follow, || self.extend_totals(trace));
        self.live = live;
    }

    /// The totals, band and reserved checkpoints, block maxima and reserved peak of the
    /// events appended since the last call.
    fn extend_totals(&mut self, trace: &Trace) {
        let n = trace.len();
        let changes = &trace.changes;
        let mut c = self.changes;
        for p in self.events..n {
            if p % BLOCK == 0 {
                self.block_bands.push(self.cur_bands);
                self.block_reserved.push(self.cur_reserved);
                self.block_change.push(c);
                self.block_max.push((0, p as u64));
            }
            while let Some(ch) = changes.get(c) {
                if ch.at().0 as usize > p {
                    break;
                }
                self.apply(trace, ch.storage(), ch.open());
                c += 1;
            }
            apply_delta(&mut self.cur_bands, trace.delta(Seq(p as u64)));
            let total = self.cur_bands.total();
            self.totals.push(total);
            if let Some(bm) = self.block_max.last_mut() {
                if total > bm.0 || (p % BLOCK == 0) {
                    *bm = (total, p as u64);
                }
            }
            if trace.has_reserved {
                let rp = self
                    .reserved_peak
                    .get_or_insert((self.baseline_reserved, None));
                if self.cur_reserved > rp.0 {
                    *rp = (self.cur_reserved, Some(p as u64));
                }
            }
            if p % BLOCK == BLOCK - 1 {
                self.complete_blocks = p / BLOCK + 1;
                self.push_sparse();
            }
        }
        self.events = n;
        self.changes = c;
    }

    /// A change's bytes: an open counts (again, were it open already), a close of a live
    /// storage stops counting, a close of one not live changes nothing.
    fn apply(&mut self, trace: &Trace, id: AllocId, open: bool) {
        let size = trace.size(id).0;
        let seg = trace.storage_kind(id) == StorageKind::Segment;
        if open {
            if seg {
                self.cur_reserved = self.cur_reserved.wrapping_add(size);
            } else {
                self.cur_bands.add(trace.band(id), size);
            }
            set_bit(&mut self.live_bits, id.0);
        } else if clear_bit(&mut self.live_bits, id.0) {
            if seg {
                self.cur_reserved = self.cur_reserved.wrapping_sub(size);
            } else {
                self.cur_bands.sub(trace.band(id), size);
            }
        }
    }

    /// Adds one level-entry per level for the block that just completed.
    fn push_sparse(&mut self) {
        let nb = self.complete_blocks;
        if self.sparse.is_empty() {
            self.sparse.push(Vec::new());
        }
        let b = nb - 1;
        self.sparse[0].push(b as u32);
        let mut j = 1;
        while (1usize << j) <= nb {
            if self.sparse.len() <= j {
                self.sparse.push(Vec::new());
            }
            let i = nb - (1 << j);
            let half = 1 << (j - 1);
            let (a, c) = (self.sparse[j - 1][i], self.sparse[j - 1][i + half]);
            let best = self.better_block(a, c);
            self.sparse[j].push(best);
            j += 1;
        }
    }

    fn better_block(&self, a: u32, b: u32) -> u32 {
        let (ma, pa) = self.block_max[a as usize];
        let (mb, pb) = self.block_max[b as usize];
        if mb > ma || (mb == ma && pb < pa) {
            b
        } else {
            a
        }
    }

    // ------------------------------------------------------------------ queries

    /// Number of indexed events.
    pub fn len(&self) -> usize {
        self.events
    }

    pub fn is_empty(&self) -> bool {
        self.events == 0
    }

    /// Total bytes (five bands) live after event `at`.
    pub fn total(&self, at: Seq) -> Bytes {
        Bytes(self.totals.get(at.idx()))
    }

    /// Bytes allocated after event `at`: every band but external (memory outside the
    /// framework's allocator — NCCL buffers, the CUDA context, a device log's used − reserved).
    /// The one "allocated" figure of every screen and report: the header's total is this plus
    /// its external band.
    pub fn allocated_at(&self, trace: &Trace, at: Seq) -> Bytes {
        let b = self.bands_at(trace, at);
        Bytes(b.total().saturating_sub(b.get(Band::External)))
    }

    /// Totals after each event, in order (for sparklines).
    pub fn totals(&self) -> impl ExactSizeIterator<Item = u64> + '_ {
        self.totals.iter()
    }

    /// Bytes live before the first event (storages whose alloc predates the trace).
    pub fn baseline(&self) -> BandTotals {
        self.baseline
    }

    /// Highest reserved bytes and the first position reaching it (position 0 when it is the
    /// initial state; see [`Index::reserved_peak_at`]); None when the source has no reserved
    /// memory (unavailable, not zero).
    pub fn reserved_peak(&self) -> Option<(Bytes, Seq)> {
        self.reserved_peak
            .map(|(b, p)| (Bytes(b), Seq(p.unwrap_or(0))))
    }

    /// Highest reserved bytes and the first instant reaching it: `None` for the initial state
    /// (before event 0), else the event position.
    pub fn reserved_peak_at(&self) -> Option<(Bytes, Option<Seq>)> {
        self.reserved_peak.map(|(b, p)| (Bytes(b), p.map(Seq)))
    }

    /// Total bytes (five bands) of the initial state: live before the first event.
    pub fn start_total(&self) -> Bytes {
        Bytes(self.baseline.total())
    }

    /// Reserved bytes of the initial state.
    pub fn start_reserved(&self) -> Bytes {
        Bytes(self.baseline_reserved)
    }

    /// Blocks live in the initial state (before the first event), biggest first.
    pub fn live_at_start(&self, trace: &Trace) -> Vec<AllocId> {
        let mut v: Vec<AllocId> = self
            .start_live
            .iter()
            .map(|&i| AllocId(i))
            .filter(|&id| trace.storage_kind(id) == StorageKind::Block)
            .collect();
        sort_biggest_first(trace, &mut v);
        v
    }

    /// Per-band totals after event `at`.
    pub fn bands_at(&self, trace: &Trace, at: Seq) -> BandTotals {
        self.state_at(trace, at).0
    }

    /// Reserved bytes after event `at`.
    pub fn reserved_at(&self, trace: &Trace, at: Seq) -> Bytes {
        Bytes(self.state_at(trace, at).1)
    }

    /// [`Index::bands_at`] and [`Index::reserved_at`] in one replay from the block's start.
    pub fn bands_and_reserved_at(&self, trace: &Trace, at: Seq) -> (BandTotals, Bytes) {
        let (bands, reserved) = self.state_at(trace, at);
        (bands, Bytes(reserved))
    }

    fn state_at(&self, trace: &Trace, at: Seq) -> (BandTotals, u64) {
        if self.events == 0 {
            return (self.baseline, self.baseline_reserved);
        }
        let p = at.idx().min(self.events - 1);
        let b = p / BLOCK;
        let mut bands = self.block_bands[b];
        let mut reserved = self.block_reserved[b];
        let mut c = self.block_change[b];
        while let Some(ch) = trace.changes.get(c) {
            if ch.at().idx() > p || c >= self.changes {
                break;
            }
            let size = trace.size(ch.storage()).0;
            let seg = trace.storage_kind(ch.storage()) == StorageKind::Segment;
            // Zero-length and duplicate closes cancel exactly as in `apply`, because a close
            // of a storage that was never opened is only ever logged after its open.
            match (seg, ch.open()) {
                (true, true) => reserved = reserved.wrapping_add(size),
                (true, false) => reserved = reserved.wrapping_sub(size),
                (false, true) => bands.add(trace.band(ch.storage()), size),
                (false, false) => bands.sub(trace.band(ch.storage()), size),
            }
            c += 1;
        }
        if !trace.identities_known() {
            for q in b * BLOCK..=p {
                apply_delta(&mut bands, trace.delta(Seq(q as u64)));
            }
        }
        (bands, reserved)
    }

    /// First position of the highest total in `[lo, hi]` (inclusive), or None if empty.
    pub fn argmax(&self, lo: Seq, hi: Seq) -> Option<(Seq, Bytes)> {
        if self.events == 0 {
            return None;
        }
        let lo = lo.idx();
        let hi = hi.idx().min(self.events - 1);
        if lo > hi {
            return None;
        }
        let (bl, bh) = (lo / BLOCK, hi / BLOCK);
        let mut best: (u64, usize) = (0, usize::MAX);
        let consider = |v: u64, p: usize, best: &mut (u64, usize)| {
            if best.1 == usize::MAX || v > best.0 || (v == best.0 && p < best.1) {
                *best = (v, p);
            }
        };
        let scan = |a: usize, b: usize, best: &mut (u64, usize)| {
            if let Some((v, p)) = self.totals.first_max(a, b) {
                consider(v, p, best);
            }
        };
        if bl == bh {
            scan(lo, hi, &mut best);
        } else {
            let first_end = (bl + 1) * BLOCK;
            scan(lo, first_end - 1, &mut best);
            // Whole blocks strictly inside, via the sparse table (complete blocks only).
            let (ml, mh) = (bl + 1, bh); // [ml, mh)
            if ml < mh {
                let full_hi = mh.min(self.complete_blocks);
                if ml < full_hi {
                    let bi = self.sparse_query(ml, full_hi - 1);
                    let (v, p) = self.block_max[bi];
                    consider(v, p as usize, &mut best);
                }
                for blk in full_hi.max(ml)..mh {
                    let (v, p) = self.block_max[blk];
                    consider(v, p as usize, &mut best);
                }
            }
            scan(bh * BLOCK, hi, &mut best);
        }
        (best.1 != usize::MAX).then_some((Seq(best.1 as u64), Bytes(best.0)))
    }

    fn sparse_query(&self, l: usize, r: usize) -> usize {
        let len = r - l + 1;
        let j = (usize::BITS - 1 - len.leading_zeros()) as usize;
        let a = self.sparse[j][l];
        let b = self.sparse[j][r + 1 - (1 << j)];
        self.better_block(a, b) as usize
    }

    /// Storages live after event `at`, biggest first (ties: earlier start, then id).
    pub fn live_at(&self, trace: &Trace, at: Seq) -> Vec<AllocId> {
        let mut v = self.live_at_unsorted(trace, at);
        sort_biggest_first(trace, &mut v);
        v
    }

    /// Blocks (not segments) live after `at`, unsorted.
    pub fn live_at_unsorted(&self, trace: &Trace, at: Seq) -> Vec<AllocId> {
        if self.events == 0 {
            return Vec::new();
        }
        let p = at.idx().min(self.events - 1) as u64;
        let ci = self
            .live
            .ckpts
            .partition_point(|c| c.pos <= p)
            .saturating_sub(1);
        let Some(ck) = self.live.ckpts.get(ci) else {
            return Vec::new();
        };
        let mut set: FxHashMap<u32, ()> = self.live.flat[ck.lo..ck.hi]
            .iter()
            .map(|&i| (i, ()))
            .collect();
        let mut c = ck.change_off;
        while c < self.changes {
            let Some(ch) = trace.changes.get(c) else {
                break;
            };
            if ch.at().0 > p {
                break;
            }
            if ch.open() {
                set.insert(ch.storage().0, ());
            } else {
                set.remove(&ch.storage().0);
            }
            c += 1;
        }
        set.into_keys()
            .map(AllocId)
            .filter(|&id| trace.storage_kind(id) == StorageKind::Block)
            .collect()
    }

    /// Blocks live at any position in `[lo, hi]`, biggest first.
    pub fn overlapping(&self, trace: &Trace, lo: Seq, hi: Seq) -> Vec<AllocId> {
        if self.events == 0 || lo > hi {
            return Vec::new();
        }
        let mut set: FxHashMap<u32, ()> = self
            .live_at_unsorted(trace, lo)
            .into_iter()
            .map(|a| (a.0, ()))
            .collect();
        // Everything opened in (lo, hi] also overlaps.
        let hi = hi.idx().min(self.events - 1) as u64;
        let start = trace.changes.partition_point(|c| c.at().0 <= lo.0);
        for ch in trace.changes[start..self.changes.min(trace.changes.len())].iter() {
            if ch.at().0 > hi {
                break;
            }
            if ch.open() && trace.storage_kind(ch.storage()) == StorageKind::Block {
                // A zero-length interval opened and closed at one position is never live.
                if trace.end(ch.storage()) != Some(ch.at()) {
                    set.insert(ch.storage().0, ());
                }
            }
        }
        let mut v: Vec<AllocId> = set.into_keys().map(AllocId).collect();
        sort_biggest_first(trace, &mut v);
        v
    }

    /// Approximate heap use of the index in bytes (for the ≤ 48 B/event budget).
    pub fn heap_bytes(&self) -> usize {
        self.totals.heap_bytes()
            + self.block_bands.capacity() * std::mem::size_of::<BandTotals>()
            + self.block_reserved.capacity() * 8
            + self.block_change.capacity() * 8
            + self.block_max.capacity() * 16
            + self.sparse.iter().map(|l| l.capacity() * 4).sum::<usize>()
            + self.live.ckpts.capacity() * std::mem::size_of::<LiveCheckpoint>()
            + self.live.flat.capacity() * 4
            + self.live.live.capacity() * 4
            + self.live.pos.capacity() * 12
            + self.live_bits.capacity() * 8
            + self.start_live.capacity() * 4
    }
}

/// Adds an event's byte change that no storage carries (traces without identities).
fn apply_delta(bands: &mut BandTotals, d: i64) {
    if d > 0 {
        bands.add(Band::Unknown, d as u64);
    } else if d < 0 {
        bands.sub(Band::Unknown, d.unsigned_abs());
    }
}

/// Sort order of live lists: size desc, then alloc position asc, then id asc.
pub fn sort_biggest_first(trace: &Trace, v: &mut [AllocId]) {
    // The keys read once each (a comparison reading the columns twice cost more than the
    // sort itself on a live set of thousands).
    let mut keyed: Vec<(std::cmp::Reverse<u64>, Seq, AllocId)> = v
        .iter()
        .map(|&id| (std::cmp::Reverse(trace.size(id).0), trace.start(id), id))
        .collect();
    keyed.sort_unstable();
    for (slot, (_, _, id)) in v.iter_mut().zip(keyed) {
        *slot = id;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{Category, StrId, Ts};

    /// A trace of `n` events: blocks of random sizes and categories opened and closed (some
    /// live from the start, some closed twice), segments mapped and unmapped.
    fn random_trace(n: u64, seed: u64) -> Trace {
        let mut next = crate::synth::xorshift(seed);
        let mut t = Trace::new("cuda:0", "test", "synthetic");
        let mut live: Vec<AllocId> = Vec::new();
        let cats = [
            Category::Activation,
            Category::Param,
            Category::Temp,
            Category::External,
        ];
        for k in 0..40 {
            let kind = [StorageKind::Block, StorageKind::Segment][k % 2];
            let size = Bytes(next() % 1_000_000);
            let cat = cats[k % cats.len()];
            live.push(t.open_from_start(size, cat, kind, StrId(0), Default::default(), k as u64));
        }
        for i in 0..n {
            t.push_event(Ts(i as i64), crate::trace::EventKind::Other);
            match next() % 5 {
                0..=2 if live.len() < 500 => {
                    let kind = [StorageKind::Block, StorageKind::Segment]
                        [usize::from(next().is_multiple_of(9))];
                    let cat = cats[(next() % 4) as usize];
                    live.push(t.open(
                        Bytes(next() % 1_000_000),
                        cat,
                        kind,
                        StrId(0),
                        Default::default(),
                        i,
                    ));
                }
                _ if !live.is_empty() => {
                    let k = (next() % live.len() as u64) as usize;
                    let id = live.swap_remove(k);
                    t.close(id);
                    if next().is_multiple_of(50) {
                        t.close(id);
                    }
                }
                _ => {}
            }
        }
        t
    }

    /// The live sets followed on a thread of their own give the very index that one thread
    /// gives, built whole or extended in pieces.
    #[test]
    fn the_live_sets_thread_changes_nothing() {
        for (n, seed) in [(0u64, 1u64), (5, 2), (3000, 3), (40_000, 4)] {
            let t = random_trace(n, seed);
            let one = {
                let mut ix = Index::build_base(&t);
                ix.extend_on(&t, usize::MAX);
                ix
            };
            let two = {
                let mut ix = Index::build_base(&t);
                ix.extend_on(&t, 0);
                ix
            };
            assert_eq!(format!("{one:?}"), format!("{two:?}"), "{n} events");
            assert_eq!(format!("{one:?}"), format!("{:?}", Index::build(&t)));
            assert!(
                n < 40_000 || one.live.ckpts.len() > 10,
                "{}",
                one.live.ckpts.len()
            );
        }
    }
}
