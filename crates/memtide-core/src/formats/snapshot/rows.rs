//! The decoded trace entries of a snapshot, kept in blocks of 8,192 rows (each row packed in
//! 20 bytes, see [`Packed`]; a block of 160 KiB is above the C allocator's 128 KiB threshold,
//! so each is mapped on its own and freeing it gives its memory back): once the passes that
//! read a block (each CUDA device's allocator history and timeline replay, the pinned host
//! timeline) have all gone past it, the last one frees it, so the rows and what is built from
//! them are not all in memory at once.
//!
//! Freeing happens only under a [`Rows::plan`] of the passes about to run, each reading its
//! row list in order through a [`Reader`] ([`Reader::pass`], then [`Reader::end_pass`]).
//! Without a plan, or when a list is not in row order (a hostile file can repeat or reorder
//! rows), nothing is freed and every row stays readable.

use super::raw::{Action, Row};
use crate::trace::{Category, StackId};
use rustc_hash::FxHashMap;
use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{RwLock, RwLockReadGuard};

/// Rows per block, as a power of two.
const BLOCK_BITS: u32 = 13;

/// A block of rows; empty once freed.
type Block = RwLock<Chunk>;

/// A row in 20 bytes instead of [`Row`]'s 32: the address in units of 512 bytes (40 bits;
/// every block and segment address the caching allocator hands out is a multiple of 512
/// below 2^49), the size in 40 bits, the action, the time flag and the category beside them,
/// and the time as µs after the block's first timed row. A row whose address, size or time
/// does not fit (an OOM entry's free bytes in `addr`, a size of 1 TiB or more, a time before
/// the block's first or over 71 minutes after it) keeps all three in its block's side map,
/// and its word says so: every row reads back as it was pushed.
#[derive(Clone, Copy)]
struct Packed {
    /// The address in units (low 32 bits).
    addr_lo: u32,
    /// The address units' high 8 bits, then the size's low 24 bits.
    mid: u32,
    /// The size's high 16 bits, the action, the time flag, the category, the wide flag.
    word: u32,
    dt: u32,
    stack: u32,
}

const ADDR_SHIFT: u32 = 9;
const ADDR_UNIT_BITS: u32 = 40;
const SIZE_BITS: u32 = 40;
const SIZE_MASK: u64 = (1 << SIZE_BITS) - 1;
/// The size's bits in `mid` (above the address's high 8).
const SIZE_LOW_BITS: u32 = 24;
const ACTION_SHIFT: u32 = 16;
const TIMED: u32 = 1 << 20;
const CATEGORY_SHIFT: u32 = 21;
const WIDE: u32 = 1 << 31;
/// Every action, at its discriminant.
const ACTIONS: [Action; 12] = [
    Action::Alloc,
    Action::FreeRequested,
    Action::FreeCompleted,
    Action::SegmentAlloc,
    Action::SegmentFree,
    Action::SegmentMap,
    Action::SegmentUnmap,
    Action::Snapshot,
    Action::Oom,
    Action::Annotate,
    Action::UserDefined,
    Action::Unknown,
];

// 7 M entries held as rows are 140 MB at this size (224 MB as `Row`s).
const _: () = assert!(std::mem::size_of::<Packed>() == 20);
// A block the C allocator serves from its heap (below its 128 KiB mmap threshold) would stay
// in the process once freed: the rows' memory would not shrink as the passes go.
const _: () = assert!((1usize << BLOCK_BITS) * std::mem::size_of::<Packed>() > 128 << 10);
// The action (4 bits), the time flag and the category (5 bits) fit between the size's high
// bits and the wide flag.
const _: () = assert!(CATEGORY_SHIFT + 5 < 31 && SIZE_BITS - SIZE_LOW_BITS <= ACTION_SHIFT);

/// The address in units of 512 bytes, when it is a multiple of 512 below 2^49.
fn addr_units(addr: u64) -> Option<u64> {
    let units = addr >> ADDR_SHIFT;
    (addr & ((1 << ADDR_SHIFT) - 1) == 0 && units < 1 << ADDR_UNIT_BITS).then_some(units)
}

/// One block's rows, packed.
#[derive(Default)]
struct Chunk {
    rows: Vec<Packed>,
    /// The time of the block's first timed row: the others' `dt` counts from it.
    base_us: Option<i64>,
    /// (address, size, time) of the rows whose word has [`WIDE`], by index in the block.
    wide: FxHashMap<u32, (u64, u64, i64)>,
}

impl Chunk {
    fn push(&mut self, row: &Row) {
        let dt = if row.has_time {
            let base = *self.base_us.get_or_insert(row.time_us);
            u32::try_from(i128::from(row.time_us) - i128::from(base)).ok()
        } else {
            (row.time_us == 0).then_some(0)
        };
        let category = row.category.map_or(0, |c| c as u32 + 1);
        let mut word = ((row.action as u32) << ACTION_SHIFT)
            | (category << CATEGORY_SHIFT)
            | if row.has_time { TIMED } else { 0 };
        let fits = dt
            .zip(addr_units(row.addr))
            .filter(|_| row.size <= SIZE_MASK);
        let (units, size, dt) = match fits {
            Some((dt, units)) => (units, row.size, dt),
            None => {
                word |= WIDE;
                self.wide
                    .insert(self.rows.len() as u32, (row.addr, row.size, row.time_us));
                (0, 0, 0)
            }
        };
        word |= (size >> SIZE_LOW_BITS) as u32;
        self.rows.push(Packed {
            addr_lo: units as u32,
            mid: (units >> 32) as u32 | ((size & ((1 << SIZE_LOW_BITS) - 1)) as u32) << 8,
            word,
            dt,
            stack: row.stack.0,
        });
    }

    fn get(&self, i: usize) -> Option<Row> {
        let p = self.rows.get(i)?;
        let w = p.word;
        let has_time = w & TIMED != 0;
        let (addr, size, time_us) = if w & WIDE != 0 {
            *self.wide.get(&(i as u32))?
        } else {
            let units = u64::from(p.addr_lo) | u64::from(p.mid & 0xff) << 32;
            let size =
                u64::from(p.mid >> 8) | u64::from(w & ((1 << ACTION_SHIFT) - 1)) << SIZE_LOW_BITS;
            let time_us = match has_time {
                true => self.base_us.unwrap_or(0) + i64::from(p.dt),
                false => 0,
            };
            (units << ADDR_SHIFT, size, time_us)
        };
        let category = ((w >> CATEGORY_SHIFT) & 0x1f) as u8;
        Some(Row {
            addr,
            size,
            time_us,
            stack: StackId(p.stack),
            action: ACTIONS
                .get(((w >> ACTION_SHIFT) & 0xf) as usize)
                .copied()
                .unwrap_or(Action::Unknown),
            has_time,
            category: category.checked_sub(1).map(Category::from_u8),
        })
    }
}

pub struct Rows {
    blocks: Vec<Block>,
    len: usize,
    bits: u32,
    /// Per block, the planned passes that have not gone past it yet (empty: no plan).
    left: Vec<AtomicU32>,
}

impl Default for Rows {
    fn default() -> Self {
        Rows::with_block_bits(BLOCK_BITS)
    }
}

impl Rows {
    /// Rows in blocks of `2^bits` (tests use small blocks to free often).
    pub fn with_block_bits(bits: u32) -> Rows {
        Rows {
            blocks: Vec::new(),
            len: 0,
            bits: bits.clamp(1, 20),
            left: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends a row; its index. A new block is taken within the memory budget.
    pub fn push(&mut self, row: Row, what: &str) -> Result<u32, String> {
        let r = u32::try_from(self.len).map_err(|_| {
            "more than 2^32 trace entries: over the limit memtide reads".to_string()
        })?;
        if self.len.is_multiple_of(1 << self.bits) {
            let mut v = Vec::new();
            crate::budget::try_grow(&mut v, 1 << self.bits, what)?;
            self.blocks.push(RwLock::new(Chunk {
                rows: v,
                ..Chunk::default()
            }));
        }
        let Some(block) = self.blocks.last_mut() else {
            return Err(format!("{what}: no block to append to"));
        };
        block
            .get_mut()
            .map_err(|_| format!("{what}: a block was poisoned"))?
            .push(&row);
        self.len += 1;
        Ok(r)
    }

    /// Row `r`; None when out of range or freed.
    pub fn get(&self, r: u32) -> Option<Row> {
        let (b, i) = self.split(r);
        self.blocks.get(b)?.read().ok()?.get(i)
    }

    /// A reader of rows (for a pass, or random access).
    pub fn reader(&self) -> Reader<'_> {
        Reader {
            rows: self,
            at: None,
            passing: None,
        }
    }

    /// Plans the passes about to run, one row list each: a block is freed when the last of
    /// them leaves it. A list out of row order cancels the plan (nothing is freed).
    pub fn plan(&mut self, passes: &[&[u32]]) {
        let mut left = vec![0u32; self.blocks.len()];
        for list in passes {
            if list.windows(2).any(|w| w[0] > w[1]) {
                self.left.clear();
                return;
            }
            let mut last = None;
            for &r in *list {
                let b = self.split(r).0;
                if last != Some(b) {
                    if let Some(n) = left.get_mut(b) {
                        *n = n.saturating_add(1);
                    }
                    last = Some(b);
                }
            }
        }
        self.left = left.into_iter().map(AtomicU32::new).collect();
    }

    /// Copies the rows into blocks of `2^bits` (tests: small blocks free often).
    #[doc(hidden)]
    pub fn rechunk(&mut self, bits: u32) {
        let mut out = Rows::with_block_bits(bits);
        for r in 0..self.len as u32 {
            if let Some(row) = self.get(r) {
                // (Within the budget: this is a copy of what is already held.)
                let _ = out.push(row, "the trace entries");
            }
        }
        *self = out;
    }

    /// How many blocks still hold rows (tests).
    #[doc(hidden)]
    pub fn blocks_held(&self) -> usize {
        self.blocks
            .iter()
            .filter(|b| b.read().is_ok_and(|v| !v.rows.is_empty()))
            .count()
    }

    fn split(&self, r: u32) -> (usize, usize) {
        let r = r as usize;
        (r >> self.bits, r & ((1 << self.bits) - 1))
    }

    /// A planned pass has gone past block `b`: the last one frees it. A block still read
    /// (outside a plan) is left as it is.
    fn leave(&self, b: usize) {
        let Some(n) = self.left.get(b) else { return };
        if n.fetch_sub(1, Ordering::AcqRel) == 1 {
            if let Some(Ok(mut v)) = self.blocks.get(b).map(RwLock::try_write) {
                *v = Chunk::default();
            }
        }
    }
}

/// Reads rows block by block (one lock per block, not per row).
pub struct Reader<'a> {
    rows: &'a Rows,
    /// The block held for reading, and its index.
    at: Option<(usize, RwLockReadGuard<'a, Chunk>)>,
    /// The block a pass is in.
    passing: Option<usize>,
}

impl Reader<'_> {
    /// Row `r`; None when out of range or freed.
    #[inline]
    pub fn get(&mut self, r: u32) -> Option<Row> {
        let (b, i) = self.rows.split(r);
        match &self.at {
            Some((at, rows)) if *at == b => rows.get(i),
            _ => self.enter(b, i),
        }
    }

    /// Row `i` of block `b`, holding that block from now on.
    #[cold]
    #[inline(never)]
    fn enter(&mut self, b: usize, i: usize) -> Option<Row> {
        self.at = None;
        self.at = Some((b, self.rows.blocks.get(b)?.read().ok()?));
        self.at.as_ref()?.1.get(i)
    }

    /// The next row `r` of a planned pass (rows in order): leaving a block for the next one
    /// tells the plan the pass has gone past it.
    #[inline]
    pub fn pass(&mut self, r: u32) -> Option<Row> {
        let b = self.rows.split(r).0;
        if self.passing != Some(b) {
            self.end_pass();
            self.passing = Some(b);
        }
        self.get(r)
    }

    /// The pass is over: it has gone past its last block too.
    pub fn end_pass(&mut self) {
        if let Some(p) = self.passing.take() {
            if self.at.as_ref().is_some_and(|(at, _)| *at == p) {
                self.at = None;
            }
            self.rows.leave(p);
        }
    }
}

impl Drop for Reader<'_> {
    fn drop(&mut self) {
        self.end_pass();
    }
}

/// As a list of rows, whatever the blocks (a freed row shows as `None`).
impl fmt::Debug for Rows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut l = f.debug_list();
        for r in 0..self.len as u32 {
            match self.get(r) {
                Some(row) => l.entry(&row),
                None => l.entry(&None::<Row>),
            };
        }
        l.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::snapshot::raw::Action;
    use crate::trace::StackId;

    fn row(i: u64) -> Row {
        Row {
            addr: i,
            size: i * 2,
            time_us: 0,
            stack: StackId(0),
            action: Action::Alloc,
            has_time: false,
            category: None,
        }
    }

    fn rows(n: u64, bits: u32) -> Rows {
        let mut v = Rows::with_block_bits(bits);
        for i in 0..n {
            assert_eq!(v.push(row(i), "rows").expect("push"), i as u32);
        }
        v
    }

    /// Every row reads back as it was pushed: the packed fields, and the addresses, sizes
    /// and times that do not fit them (an address off 512 or at 2^49 and above, sizes of
    /// 2^40 and above, times before the block's first timed row or long after).
    #[test]
    fn packed_rows_read_back_as_pushed() {
        let mut pushed = Vec::new();
        let mut v = Rows::with_block_bits(3);
        let times = [
            0i64,
            1_700_000_000_000_000,
            -5,
            i64::MAX,
            i64::MIN,
            1_700_000_000_000_001,
        ];
        let sizes = [
            0,
            1,
            SIZE_MASK,
            SIZE_MASK + 1,
            u64::MAX,
            4096,
            0xff_ffff,
            1 << 24,
        ];
        let addrs = [
            0u64,
            512,
            0x7f4a_2000_0000,
            (1 << 49) - 512,
            1 << 49,
            u64::MAX,
            0x7f4a_2000_0001,
            64_000_000_123,
        ];
        for (i, a) in ACTIONS.iter().enumerate() {
            for (k, &t) in times.iter().enumerate() {
                for (j, (&size, &addr)) in sizes.iter().zip(&addrs).enumerate() {
                    let row = Row {
                        addr: addr ^ ((i * 31 + k) as u64 * 512 * u64::from(j < 4)),
                        size,
                        time_us: t,
                        stack: StackId((i * k + j) as u32),
                        action: *a,
                        has_time: (k + j) % 3 != 2,
                        category: (k > 0).then(|| Category::ALL[(i + k + j) % Category::ALL.len()]),
                    };
                    v.push(row, "rows").expect("push");
                    pushed.push(row);
                }
            }
        }
        for (r, want) in pushed.iter().enumerate() {
            let got = v.get(r as u32).expect("there");
            assert_eq!(format!("{got:?}"), format!("{want:?}"), "row {r}");
        }
        // Both ways of keeping a row are read back (else the comparison proves little).
        let wide: usize = v
            .blocks
            .iter()
            .map(|b| b.read().expect("not poisoned").wide.len())
            .sum();
        let packed = pushed.len() - wide;
        assert!(wide > 100 && packed > 100, "{wide} wide, {packed} packed");
        for (i, a) in ACTIONS.iter().enumerate() {
            assert_eq!(*a as usize, i, "{a:?} at its discriminant");
        }
    }

    #[test]
    fn rows_read_back_across_blocks() {
        let v = rows(37, 3);
        assert_eq!(v.len(), 37);
        assert_eq!(v.blocks_held(), 5);
        let mut rd = v.reader();
        for i in (0..37u32).rev() {
            assert_eq!(rd.get(i).map(|r| r.addr), Some(i as u64));
            assert_eq!(v.get(i).map(|r| r.size), Some(i as u64 * 2));
        }
        assert!(rd.get(37).is_none());
    }

    #[test]
    fn a_block_is_freed_when_the_last_planned_pass_leaves_it() {
        let mut v = rows(32, 3); // blocks 0..4 of 8 rows
        let a: Vec<u32> = (0..32).collect();
        let b: Vec<u32> = (8..20).collect(); // blocks 1 and 2
        v.plan(&[&a, &b]);
        let mut ra = v.reader();
        for &r in &a[..17] {
            assert!(ra.pass(r).is_some());
        }
        // a left blocks 0 and 1; b still needs 1.
        assert!(v.get(0).is_none());
        assert!(v.get(8).is_some());
        let mut rb = v.reader();
        for &r in &b {
            assert_eq!(rb.pass(r).map(|x| x.addr), Some(r as u64));
        }
        rb.end_pass();
        assert!(v.get(8).is_none(), "both passes left block 1");
        assert!(v.get(16).is_some(), "a is still in block 2");
        for &r in &a[17..] {
            assert!(ra.pass(r).is_some());
        }
        drop(ra);
        assert_eq!(v.blocks_held(), 0);
    }

    #[test]
    fn without_a_plan_or_out_of_order_nothing_is_freed() {
        let mut v = rows(20, 2);
        let mut rd = v.reader();
        (0..20).for_each(|r| assert!(rd.pass(r).is_some()));
        drop(rd);
        assert_eq!(v.blocks_held(), 5);
        let back: Vec<u32> = vec![0, 9, 3];
        v.plan(&[&back]);
        let mut rd = v.reader();
        for &r in &back {
            assert!(rd.pass(r).is_some());
        }
        drop(rd);
        assert_eq!(v.blocks_held(), 5);
    }

    #[test]
    fn debug_ignores_the_block_size() {
        let mut a = rows(50, 2);
        let b = rows(50, 12);
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        a.rechunk(5);
        assert_eq!(format!("{a:?}"), format!("{b:?}"));
        assert_eq!(a.blocks_held(), 2);
    }
}
