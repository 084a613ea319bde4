//! PyTorch `export_memory_timeline` files: the coalesced `.json` (`[times, rows]`, 9 columns)
//! and the `.raw.json.gz` (`[[t_ns, action, bytes, category], ...]`), read on their own or as
//! the category sidecar of a Kineto trace.

mod parse;

use super::error::FormatError;
use super::limit::{Limited, TooLarge};
use super::source::{self, Input, Progress};
use crate::trace::{AllocId, Bytes, Category, Clock, EventKind, StackId, StorageKind, Trace, Ts};
use rustc_hash::FxHashMap;
use std::path::Path;

/// PyTorch's categories in export order (index 0–7); index 7 is "Unknown" (None in PyTorch).
pub(crate) const PT_CATEGORIES: [&str; 8] = [
    "PARAMETER",
    "OPTIMIZER_STATE",
    "INPUT",
    "TEMPORARY",
    "ACTIVATION",
    "GRADIENT",
    "AUTOGRAD_DETAIL",
    "Unknown",
];

/// PyTorch category index (0–7, None = Unknown) → our category.
pub(crate) fn category_of(pt: Option<u8>) -> Category {
    match pt {
        Some(0) => Category::Param,
        Some(1) => Category::Optimizer,
        Some(2) => Category::Input,
        Some(3) => Category::Temp,
        Some(4) => Category::Activation,
        Some(5) => Category::Grad,
        Some(6) => Category::AutogradDetail,
        _ => Category::Unknown,
    }
}

/// Timeline actions (`_memory_profiler.Action`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    Preexisting,
    Create,
    IncrementVersion,
    Destroy,
}

impl Action {
    pub(crate) fn from_i64(v: i64) -> Option<Action> {
        Some(match v {
            1 => Action::Preexisting,
            2 => Action::Create,
            3 => Action::IncrementVersion,
            4 => Action::Destroy,
            _ => return None,
        })
    }
}

/// One row of a `.raw.json.gz` file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RawRow {
    /// Nanoseconds on the profiler clock (−1 for PREEXISTING).
    pub t: i64,
    pub action: Action,
    /// Signed: + create/preexisting, − destroy.
    pub bytes: i64,
    /// 0–7, None for PyTorch's uncategorised (`None`) bytes.
    pub cat: Option<u8>,
}

/// The two shapes of an export.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Timeline {
    /// `[times_us, rows]`: bytes per category (8 columns after the leading zero) after each time.
    Coalesced {
        times_us: Vec<i64>,
        rows: Vec<[i64; 8]>,
    },
    Raw(Vec<RawRow>),
}

/// Byte offset of a 1-based line/column in `bytes`.
pub(crate) fn line_col_offset(bytes: &[u8], line: usize, column: usize) -> u64 {
    let start = if line <= 1 {
        0
    } else {
        memchr::memchr_iter(b'\n', bytes)
            .nth(line - 2)
            .map_or(bytes.len(), |p| p + 1)
    };
    (start + column.saturating_sub(1)).min(bytes.len()) as u64
}

/// The most an export may hold once decompressed. PyTorch writes some 35 bytes a raw row
/// (`[1709123456789012, 2, 4194304, 4]`), so this is about 15 million rows, more than a
/// profile of a few steps records; every row read is kept (24 bytes, the trace's event on
/// top), so past this the file is refused with this figure rather than read on.
pub(crate) const MAX_BYTES: u64 = 512 << 20;

/// Reads a sidecar file (any shape, gzip or not) from a path, streamed and capped at
/// [`MAX_BYTES`].
pub(crate) fn read_path(path: &Path) -> Result<Timeline, FormatError> {
    let input = source::open(path, &Progress::new())?;
    // A compressed stream holds at least about as much as its size: refused before reading.
    if input.file_size > MAX_BYTES {
        return Err(FormatError::Invalid(
            TooLarge {
                what: SIDECAR,
                limit: MAX_BYTES,
                gzip: false,
            }
            .to_string(),
        ));
    }
    parse_input(input, SIDECAR)
}

const SIDECAR: &str = "a category sidecar (export_memory_timeline)";

/// Reads an export on its own: one trace whose bands are PyTorch's categories.
pub fn read(source_name: &str, input: Input) -> Result<Vec<Trace>, FormatError> {
    let tl = parse_input(input, "an export_memory_timeline file")?;
    let mut t = Trace::new("timeline", source_name, "memory_timeline");
    t.bands_source = crate::trace::BandsSource::Recorded;
    match tl {
        Timeline::Coalesced { times_us, rows } => build_coalesced(&mut t, &times_us, &rows),
        Timeline::Raw(rows) => build_raw(&mut t, &rows),
    }
    Ok(vec![t])
}

/// Parses an opened input as it is read, refusing more than [`MAX_BYTES`] of content.
fn parse_input(input: Input, what: &'static str) -> Result<Timeline, FormatError> {
    let gzip = input.gzip;
    let capped = Limited::new(input.into_reader(), MAX_BYTES, what, gzip);
    parse::parse_reader(std::io::BufReader::with_capacity(256 << 10, capped))
}

/// Each category's level follows the rows exactly: rises open a storage of the difference,
/// drops close the newest storages of that category (and reopen a remainder if needed).
fn build_coalesced(t: &mut Trace, times_us: &[i64], rows: &[[i64; 8]]) {
    t.clock = Clock::Us;
    let names: Vec<_> = PT_CATEGORIES.iter().map(|n| t.strings.intern(n)).collect();
    let mut live: [Vec<(AllocId, i64)>; 8] = Default::default();
    let mut level = [0i64; 8];
    let mut negative = 0u64;
    for (i, row) in rows.iter().enumerate() {
        // In i128: a hostile row (i64::MIN, i64::MAX) cannot overflow the net change.
        let net: i128 = row
            .iter()
            .zip(&level)
            .map(|(a, b)| i128::from(*a) - i128::from(*b))
            .sum();
        let kind = if net >= 0 {
            EventKind::Alloc
        } else {
            EventKind::Free
        };
        let ts = times_us.get(i).copied().unwrap_or(0).saturating_mul(1000);
        t.push_event(Ts(ts), kind);
        for k in 0..8 {
            let want = row[k].max(0);
            if row[k] < 0 {
                negative += 1;
            }
            if want == level[k] {
                continue;
            }
            let cat = category_of(Some(k as u8));
            if want < level[k] {
                while level[k] > want {
                    let Some((id, sz)) = live[k].pop() else { break };
                    t.close(id);
                    level[k] -= sz;
                }
            }
            if want > level[k] {
                let d = want - level[k];
                let id = t.open(
                    Bytes(d as u64),
                    cat,
                    StorageKind::Block,
                    names[k],
                    StackId::default(),
                    k as u64,
                );
                live[k].push((id, d));
                level[k] = want;
            }
        }
    }
    if negative > 0 {
        t.warn_doubtful(format!(
            "{negative} negative category totals in the timeline were shown as 0"
        ));
    }
}

/// Replays CREATE/DESTROY/INCREMENT_VERSION rows. Rows carry no tensor identity, so a
/// DESTROY closes a live storage of the same size and category (any one: the totals agree).
fn build_raw(t: &mut Trace, rows: &[RawRow]) {
    t.clock = Clock::Ns;
    let names: Vec<_> = PT_CATEGORIES.iter().map(|n| t.strings.intern(n)).collect();
    let name_of = |c: Option<u8>| names[c.unwrap_or(7).min(7) as usize];
    // (bytes, category) → live storages, newest last.
    let mut live: FxHashMap<(u64, Option<u8>), Vec<AllocId>> = FxHashMap::default();
    let mut unmatched = 0u64;
    let mut i = 0;
    while i < rows.len() {
        let r = rows[i];
        match r.action {
            Action::Preexisting | Action::Create => {
                let (size, cat, name) = (
                    Bytes(r.bytes.unsigned_abs()),
                    category_of(r.cat),
                    name_of(r.cat),
                );
                let id = if r.action == Action::Preexisting {
                    t.open_from_start(
                        size,
                        cat,
                        StorageKind::Block,
                        name,
                        StackId::default(),
                        i as u64,
                    )
                } else {
                    t.push_event(Ts(r.t), EventKind::Alloc);
                    t.open(
                        size,
                        cat,
                        StorageKind::Block,
                        name,
                        StackId::default(),
                        i as u64,
                    )
                };
                live.entry((r.bytes.unsigned_abs(), r.cat))
                    .or_default()
                    .push(id);
                i += 1;
            }
            Action::Destroy => {
                t.push_event(Ts(r.t), EventKind::Free);
                match take_live(&mut live, r.bytes.unsigned_abs(), r.cat) {
                    Some(id) => t.close(id),
                    None => unmatched += 1,
                }
                i += 1;
            }
            Action::IncrementVersion => {
                // Two rows: −bytes of the old category, +bytes of the new one.
                let next = rows.get(i + 1).copied();
                t.push_event(Ts(r.t), EventKind::Other);
                match next {
                    Some(n) if n.action == Action::IncrementVersion && r.bytes < 0 => {
                        if n.cat != r.cat {
                            if let Some(old) = take_live(&mut live, r.bytes.unsigned_abs(), r.cat) {
                                t.close(old);
                            }
                            let id = t.open(
                                Bytes(n.bytes.unsigned_abs()),
                                category_of(n.cat),
                                StorageKind::Block,
                                name_of(n.cat),
                                StackId::default(),
                                (i + 1) as u64,
                            );
                            live.entry((n.bytes.unsigned_abs(), n.cat))
                                .or_default()
                                .push(id);
                        }
                        i += 2;
                    }
                    _ => i += 1,
                }
            }
        }
    }
    if unmatched > 0 {
        t.unmatched_frees += unmatched;
        t.warn(format!(
            "{unmatched} DESTROY rows matched no live bytes of that size and category"
        ));
    }
}

fn take_live(
    live: &mut FxHashMap<(u64, Option<u8>), Vec<AllocId>>,
    bytes: u64,
    cat: Option<u8>,
) -> Option<AllocId> {
    if let Some(id) = live.get_mut(&(bytes, cat)).and_then(|v| v.pop()) {
        return Some(id);
    }
    // The category may have changed without a recorded INCREMENT_VERSION: any same size.
    let key = live
        .iter()
        .find(|((b, _), v)| *b == bytes && !v.is_empty())
        .map(|(k, _)| *k)?;
    live.get_mut(&key).and_then(|v| v.pop())
}
