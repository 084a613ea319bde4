//! Nsight Systems SQLite exports (`nsys profile --cuda-memory-usage=true`, then
//! `nsys export --type sqlite`) as a side source of memory outside the framework: every
//! `cudaMalloc`/`cudaFree`, `cudaMallocAsync`, managed and static allocation the export
//! records, paired into allocations with their call chains and the library that made them.
//! [`crate::nsys_merge`] puts them on a trace's clock. The tables and columns read are
//! listed, with where NVIDIA documents them, in [`schema`].

pub(crate) mod chains;
pub(crate) mod library;
pub(crate) mod open;
pub(crate) mod schema;
#[cfg(test)]
mod tests;

use super::{FormatError, Progress};
use chains::{Chains, CALLCHAINS, RUNTIME, STRINGS};
use open::Db;
use rusqlite::Row;
use schema::{MemKind, Oper, Shape, POOLS, SESSION_START, USAGE, USAGE_REQUIRED};
use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

/// One allocation of the export: an allocation event paired with its deallocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Allocation {
    /// The process (the pid bits of `globalPid`).
    pub pid: u32,
    pub device: u32,
    /// `contextId` (None: an older export without it).
    pub context: Option<u32>,
    pub address: u64,
    pub bytes: u64,
    pub kind: MemKind,
    /// ns since the session start; None when `start = 0`: made before the capture range.
    pub start_ns: Option<i64>,
    /// ns since the session start of the deallocation; None: never freed in the export.
    pub end_ns: Option<i64>,
    pub pc: u64,
    /// `nccl`, `cudnn`, … or `library-internal` / `other` ([`library::source_of`]).
    pub source: &'static str,
    /// Index into [`NsysExport::chains`] (None: no call chain recorded).
    pub chain: Option<u32>,
    /// `name`, the variable's name, when the export has one (static allocations).
    pub name: Option<String>,
    /// The cudaMallocAsync pool it came from (`localMemoryPoolAddress`).
    pub pool: Option<u64>,
    /// The allocation event's row (`rowid`), for messages.
    pub row: i64,
}

/// A pool's size and use at one instant (cudaMallocAsync: `localMemoryPoolSize`,
/// `localMemoryPoolUtilizedSize`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PoolSample {
    pub pid: u32,
    pub device: u32,
    pub pool: u64,
    pub t_ns: i64,
    pub size: u64,
    pub utilized: u64,
}

/// Everything read from one export.
#[derive(Clone, Debug, Default)]
pub(crate) struct NsysExport {
    pub path: String,
    /// `TARGET_INFO_SESSION_START_TIME.utcEpochNs`.
    pub session_start_ns: i64,
    pub allocations: Vec<Allocation>,
    /// Call chains, each `symbol (module)` frames innermost first; each chain once,
    /// however many allocations share it.
    pub chains: Vec<Arc<[String]>>,
    pub pools: Vec<PoolSample>,
    /// Deallocations with no allocation before them (made before the capture began and not
    /// reported at `start = 0`).
    pub unmatched_frees: u64,
    /// Rows of the usage table read.
    #[cfg_attr(not(test), allow(dead_code))]
    pub rows: u64,
    /// Whether the export has `memKind` / call chains.
    pub has_mem_kind: bool,
    pub has_callchains: bool,
    /// What reading it left out, said as warnings (a write-ahead log beside it, unread).
    pub notes: Vec<String>,
    /// The work reading it took (the tests' measure of it): rows fetched by every query,
    /// and SQLite's steps.
    #[cfg_attr(not(test), allow(dead_code))]
    pub fetched: u64,
    #[cfg_attr(not(test), allow(dead_code))]
    pub steps: u64,
}

/// The largest allocation read (1 PiB): a bigger `bytes` is a damaged row, not memory.
pub(crate) const MAX_BYTES: u64 = 1 << 50;

/// The most rows of the usage table, and of the pool table, read (a run of a billion
/// allocations is refused with this figure rather than exhausting memory).
pub(crate) const MAX_ROWS: u64 = 50_000_000;

pub(crate) fn side(path: &Path, reason: impl Into<String>) -> FormatError {
    FormatError::SideFile {
        what: format!("Nsight Systems export {}", path.display()),
        reason: reason.into(),
    }
}

/// Reads the export at `path` as data only ([`open`]: immutable, nothing beside it read or
/// created, no view or trigger run), every table once and in time linear in its rows; stops
/// with [`FormatError::Cancelled`] when `progress` is cancelled.
pub fn read(path: &Path, progress: &Progress) -> Result<NsysExport, FormatError> {
    read_with(path, progress, open::budget_for)
}

/// [`read`] with the budget of SQLite steps for a file of a given size.
pub(crate) fn read_with(
    path: &Path,
    progress: &Progress,
    budget: impl FnOnce(u64) -> u64,
) -> Result<NsysExport, FormatError> {
    let notes = beside(path);
    read_checked(path, progress, budget, notes.clone()).map_err(|e| match e {
        // What was left unread beside it may be why the export reads as it does.
        FormatError::SideFile { what, reason } if !notes.is_empty() => FormatError::SideFile {
            what,
            reason: format!("{reason} ({})", notes.join("; ")),
        },
        e => e,
    })
}

fn read_checked(
    path: &Path,
    progress: &Progress,
    budget: impl FnOnce(u64) -> u64,
    notes: Vec<String>,
) -> Result<NsysExport, FormatError> {
    let len = check_file(path)?;
    let db = Db::open(path, len, progress, budget(len))?;
    let shape = shape(&db)?;
    check_usage_table(&shape, path)?;
    let session_start_ns = session_start(&db)?;
    let rows = read_usage(&db, &shape)?;
    let corrs: HashSet<i64> = rows
        .iter()
        .filter(|u| u.oper == Oper::Alloc)
        .filter_map(|u| u.corr)
        .collect();
    let chains = chains::read(&db, &shape, &corrs)?;
    let mut out = NsysExport {
        path: path.display().to_string(),
        session_start_ns,
        has_mem_kind: shape.has("memKind"),
        has_callchains: shape.has_callchains && shape.has_runtime_callchains,
        notes,
        rows: rows.len() as u64,
        ..Default::default()
    };
    pair(rows, chains, &mut out);
    out.pools.append(&mut read_pools(&db, &shape)?);
    out.pools.sort_by_key(|p| (p.pool, p.t_ns));
    out.fetched = db.fetched();
    out.steps = db.steps();
    Ok(out)
}

/// The file is a regular file whose SQLite header is whole ([`schema::check_header`]); its
/// length.
fn check_file(path: &Path) -> Result<u64, FormatError> {
    let mut f = super::source::open_regular(path).map_err(|e| side(path, e.to_string()))?;
    let len = f.metadata().map_err(|e| side(path, e.to_string()))?.len();
    let mut head = [0u8; 100];
    let mut n = 0;
    while n < head.len() {
        match f.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) => return Err(side(path, e.to_string())),
        }
    }
    if n == 0 {
        return Err(side(
            path,
            "the file is empty: expected an SQLite export made by `nsys export --type sqlite`",
        ));
    }
    schema::check_header(&head[..n], len).map_err(|e| side(path, e))?;
    Ok(len)
}

/// What an immutable read leaves out beside the export, said: a write-ahead log (changes
/// not checkpointed into the file) or a rollback journal (a write that did not finish).
fn beside(path: &Path) -> Vec<String> {
    let mut notes = Vec::new();
    for (suffix, what) in [
        ("-wal", "without the changes that write-ahead log holds; checkpoint it into the export first to include them"),
        ("-journal", "a rollback journal beside it means a write to the export did not finish, so the export may be incomplete"),
    ] {
        let mut side = path.as_os_str().to_owned();
        side.push(suffix);
        let side = Path::new(&side);
        if std::fs::metadata(side).is_ok_and(|m| m.len() > 0) {
            notes.push(format!(
                "nsys: {} beside the export was not read: the export is read as it is on disk (immutable), {what}",
                side.display()
            ));
        }
    }
    notes
}

/// The tables and columns present (a view or virtual table of one of these names is refused).
fn shape(db: &Db) -> Result<Shape, FormatError> {
    let usage = db.table(USAGE)?;
    let runtime = db.table(RUNTIME)?;
    let pools = db.table(POOLS)?;
    Ok(Shape {
        usage_without_rowid: usage.as_ref().is_some_and(|t| t.without_rowid),
        usage_columns: usage.map(|t| t.columns).unwrap_or_default(),
        pool_without_rowid: pools.as_ref().is_some_and(|t| t.without_rowid),
        pool_columns: pools.map(|t| t.columns),
        has_runtime_callchains: runtime.is_some_and(|t| {
            t.columns.iter().any(|c| c == "callchainId")
                && t.columns.iter().any(|c| c == "correlationId")
        }),
        has_callchains: db.table(CALLCHAINS)?.is_some(),
        has_strings: db.table(STRINGS)?.is_some(),
        mem_kinds: schema::mem_kinds(db)?,
        opers: schema::opers(db)?,
    })
}

/// `TARGET_INFO_SESSION_START_TIME.utcEpochNs`: what puts the export on a wall clock.
fn session_start(db: &Db) -> Result<i64, FormatError> {
    let Some(t) = db.table(SESSION_START)? else {
        return Err(db.side(format!("no table {SESSION_START}: the export's clock cannot be aligned with the trace's (its times are relative to a session start it does not record)")));
    };
    if !t.columns.iter().any(|c| c == "utcEpochNs") {
        return Err(db.side(format!("{SESSION_START} has no column utcEpochNs: the export's clock cannot be aligned with the trace's")));
    }
    let v: Option<Option<i64>> = db.first(
        SESSION_START,
        &format!("SELECT utcEpochNs FROM {SESSION_START} LIMIT 1"),
    )?;
    let Some(v) = v else {
        return Err(db.side(format!(
            "{SESSION_START} has no row: the export's clock cannot be aligned with the trace's"
        )));
    };
    match v {
        Some(ns) if ns > 0 => Ok(ns),
        other => Err(db.side(format!(
            "{SESSION_START} row 1: utcEpochNs is {}: not a UTC time, so the export's clock cannot be aligned with the trace's",
            other.map_or("null".to_string(), |n| n.to_string())
        ))),
    }
}

/// The module of a `symbol (module)` frame.
pub(crate) fn frame_module(frame: &str) -> &str {
    frame
        .rsplit_once(" (")
        .map_or("", |(_, m)| m.strip_suffix(')').unwrap_or(m))
}

/// The usage table exists with the columns every row needs (else: another schema).
fn check_usage_table(shape: &Shape, path: &Path) -> Result<(), FormatError> {
    if shape.usage_columns.is_empty() {
        return Err(side(path, format!(
            "no table {USAGE}: not an Nsight Systems export with CUDA memory usage (record with `nsys profile --cuda-memory-usage=true`, export with `nsys export --type sqlite`)"
        )));
    }
    if let Some(missing) = USAGE_REQUIRED.iter().find(|c| !shape.has(c)) {
        return Err(side(
            path,
            format!(
            "{USAGE} has no column {missing}: another schema than Nsight Systems' (columns: {})",
            shape.usage_columns.join(", ")
        ),
        ));
    }
    Ok(())
}

/// One row of the usage table, as read.
struct UsageRow {
    row: i64,
    start: i64,
    pid: u32,
    device: u32,
    context: Option<u32>,
    address: u64,
    pc: u64,
    bytes: u64,
    kind: MemKind,
    oper: Oper,
    name: Option<String>,
    corr: Option<i64>,
    pool: Option<u64>,
    pool_size: Option<u64>,
    pool_used: Option<u64>,
}

/// The usage table's rows in time order (ties in row order): one pass over the table in
/// the file's order, sorted here (SQLite sorts nothing, so nothing spills to a temporary
/// file), at most [`MAX_ROWS`].
fn read_usage(db: &Db, shape: &Shape) -> Result<Vec<UsageRow>, FormatError> {
    let opt = |col: &str| {
        if shape.has(col) {
            col.to_string()
        } else {
            "NULL".to_string()
        }
    };
    let q = format!(
        "SELECT {}, start, globalPid, deviceId, {}, address, {}, bytes, {}, memoryOperationType, {}, {}, {}, {}, {} FROM {USAGE}",
        if shape.usage_without_rowid { "NULL" } else { "rowid" },
        opt("contextId"),
        opt("pc"),
        opt("memKind"),
        opt("name"),
        opt("correlationId"),
        opt("localMemoryPoolAddress"),
        opt("localMemoryPoolSize"),
        opt("localMemoryPoolUtilizedSize"),
    );
    let mut rows = Vec::new();
    db.scan(USAGE, &q, [], |r, n| {
        if n > MAX_ROWS {
            return Err(db.side(format!(
                "{USAGE} holds more than {MAX_ROWS} rows: refusing rather than exhausting memory"
            )));
        }
        let u = usage_row(r, shape, n).map_err(|reason| {
            let row = r.get::<_, i64>(0).unwrap_or(n as i64);
            db.side(format!("{USAGE} row {row}: {reason}"))
        })?;
        db.keep_text(USAGE, u.name.as_ref().map_or(0, String::len))?;
        rows.push(u);
        Ok(())
    })?;
    rows.sort_by_key(|u| (u.start, u.row));
    Ok(rows)
}

/// Pairs the usage rows (in time order) into allocations, each chain kept once with the
/// library it names worked out once.
fn pair(rows: Vec<UsageRow>, mut chains: Chains, out: &mut NsysExport) {
    let mut live: HashMap<(u32, u32, Option<u32>, u64), usize> = HashMap::new();
    let mut index_of_chain: HashMap<i64, u32> = HashMap::new();
    let mut library_of_chain: Vec<Option<&'static str>> = Vec::new();
    for u in rows {
        if let (Some(p), Some(size)) = (u.pool.filter(|&p| p != 0), u.pool_size) {
            out.pools.push(PoolSample {
                pid: u.pid,
                device: u.device,
                pool: p,
                t_ns: u.start,
                size,
                utilized: u.pool_used.unwrap_or(0),
            });
        }
        let key = (u.pid, u.device, u.context, u.address);
        match u.oper {
            Oper::Alloc => {
                let id = u.corr.and_then(|k| chains.chain_of.get(&k).copied());
                let chain = id.and_then(|id| {
                    if let Some(&i) = index_of_chain.get(&id) {
                        return Some(i);
                    }
                    let frames = chains.frames.remove(&id)?;
                    let modules: Vec<&str> = frames.iter().map(|f| frame_module(f)).collect();
                    library_of_chain.push(library::library_of_chain(&modules));
                    let i = out.chains.len() as u32;
                    out.chains.push(Arc::from(frames));
                    index_of_chain.insert(id, i);
                    Some(i)
                });
                let source = chain
                    .and_then(|i| library_of_chain.get(i as usize).copied().flatten())
                    .unwrap_or_else(|| library::without_library(u.pc));
                out.allocations.push(Allocation {
                    pid: u.pid,
                    device: u.device,
                    context: u.context,
                    address: u.address,
                    bytes: u.bytes,
                    kind: u.kind,
                    start_ns: (u.start != 0).then_some(u.start),
                    end_ns: None,
                    pc: u.pc,
                    source,
                    chain,
                    name: u.name,
                    pool: u.pool.filter(|&p| p != 0),
                    row: u.row,
                });
                // An allocation at an address still live means its free was not recorded:
                // the older one is taken as freed here.
                if let Some(old) = live.insert(key, out.allocations.len() - 1) {
                    if let Some(a) = out.allocations.get_mut(old) {
                        a.end_ns = Some(u.start);
                    }
                }
            }
            Oper::Free => match live.remove(&key) {
                Some(i) => {
                    if let Some(a) = out.allocations.get_mut(i) {
                        a.end_ns = Some(u.start);
                    }
                }
                None => out.unmatched_frees += 1,
            },
        }
    }
}

/// Decodes one usage row; the error names the column and what was wrong.
fn usage_row(r: &Row<'_>, shape: &Shape, n: u64) -> Result<UsageRow, String> {
    let int = |i: usize, col: &str| -> Result<Option<i64>, String> {
        r.get::<_, Option<i64>>(i)
            .map_err(|e| format!("column {col}: expected an integer ({e})"))
    };
    let need = |i: usize, col: &str| -> Result<i64, String> {
        int(i, col)?.ok_or_else(|| format!("column {col} is null"))
    };
    // The rowid, or the row's ordinal in a WITHOUT ROWID table.
    let row = int(0, "rowid")?.unwrap_or(n as i64);
    let start = need(1, "start")?;
    if start < 0 {
        return Err(format!(
            "column start is {start}: a time before the session start"
        ));
    }
    let gpid = need(2, "globalPid")?;
    let device = need(3, "deviceId")?;
    let device =
        u32::try_from(device).map_err(|_| format!("column deviceId is {device}: not a device"))?;
    let context = int(4, "contextId")?.map(|c| c as u32);
    let address = need(5, "address")? as u64;
    let pc = int(6, "pc")?.unwrap_or(0) as u64;
    let bytes = need(7, "bytes")?;
    let bytes =
        u64::try_from(bytes).map_err(|_| format!("column bytes is {bytes}: a negative size"))?;
    if bytes > MAX_BYTES {
        return Err(format!(
            "column bytes is {bytes}: more than any device holds (at most {MAX_BYTES} B, 1 PiB, read)"
        ));
    }
    let kind = match int(8, "memKind")? {
        None if !shape.has("memKind") => MemKind::NotRecorded,
        None => MemKind::Unknown,
        Some(k) => shape.mem_kinds.get(&k).copied().unwrap_or(MemKind::Unknown),
    };
    let op = need(9, "memoryOperationType")?;
    let oper = shape.opers.get(&op).copied().ok_or_else(|| {
        format!("column memoryOperationType is {op}: neither an allocation nor a deallocation (ENUM_CUDA_DEV_MEM_EVENT_OPER)")
    })?;
    let name = r
        .get::<_, Option<String>>(10)
        .ok()
        .flatten()
        .filter(|s| !s.is_empty());
    let nonneg = |v: Option<i64>| v.and_then(|x| u64::try_from(x).ok());
    Ok(UsageRow {
        row,
        start,
        pid: ((gpid >> 24) & 0xFF_FFFF) as u32,
        device,
        context,
        address,
        pc,
        bytes,
        kind,
        oper,
        name,
        corr: int(11, "correlationId")?,
        pool: int(12, "localMemoryPoolAddress")?.map(|p| p as u64),
        pool_size: nonneg(int(13, "localMemoryPoolSize")?),
        pool_used: nonneg(int(14, "localMemoryPoolUtilizedSize")?),
    })
}

/// Pool sizes from `CUDA_GPU_MEMORY_POOL_EVENTS` (absent in many exports: then only the
/// usage rows' pool columns say them), in time order, at most [`MAX_ROWS`].
fn read_pools(db: &Db, shape: &Shape) -> Result<Vec<PoolSample>, FormatError> {
    let Some(cols) = &shape.pool_columns else {
        return Ok(Vec::new());
    };
    for need in ["start", "globalPid", "deviceId", "address"] {
        if !cols.iter().any(|c| c == need) {
            return Err(db.side(format!(
                "{POOLS} has no column {need}: another schema than Nsight Systems'"
            )));
        }
    }
    if !(shape.pool_has("localMemoryPoolSize")) {
        return Ok(Vec::new());
    }
    let used = if shape.pool_has("localMemoryPoolUtilizedSize") {
        "localMemoryPoolUtilizedSize"
    } else {
        "NULL"
    };
    let rowid = if shape.pool_without_rowid {
        "NULL"
    } else {
        "rowid"
    };
    let q = format!("SELECT {rowid}, start, globalPid, deviceId, address, localMemoryPoolSize, {used} FROM {POOLS}");
    let mut samples: Vec<(i64, PoolSample)> = Vec::new();
    db.scan(POOLS, &q, [], |r, n| {
        if n > MAX_ROWS {
            return Err(db.side(format!(
                "{POOLS} holds more than {MAX_ROWS} rows: refusing rather than exhausting memory"
            )));
        }
        let get = |i: usize| r.get::<_, Option<i64>>(i);
        let row = get(0).ok().flatten().unwrap_or(n as i64);
        let bad = |col: &str| {
            db.side(format!(
                "{POOLS} row {row}: column {col}: expected a non-negative integer"
            ))
        };
        let t = get(1)
            .ok()
            .flatten()
            .filter(|&t| t >= 0)
            .ok_or_else(|| bad("start"))?;
        let gpid = get(2).ok().flatten().ok_or_else(|| bad("globalPid"))?;
        let device = get(3)
            .ok()
            .flatten()
            .and_then(|d| u32::try_from(d).ok())
            .ok_or_else(|| bad("deviceId"))?;
        let pool = get(4).ok().flatten().ok_or_else(|| bad("address"))? as u64;
        let Some(size) = get(5)
            .map_err(|_| bad("localMemoryPoolSize"))?
            .and_then(|s| u64::try_from(s).ok())
        else {
            return Ok(());
        };
        let utilized = get(6)
            .ok()
            .flatten()
            .and_then(|s| u64::try_from(s).ok())
            .unwrap_or(0);
        samples.push((
            row,
            PoolSample {
                pid: ((gpid >> 24) & 0xFF_FFFF) as u32,
                device,
                pool,
                t_ns: t,
                size,
                utilized,
            },
        ));
        Ok(())
    })?;
    samples.sort_by_key(|(row, p)| (p.t_ns, *row));
    Ok(samples.into_iter().map(|(_, p)| p).collect())
}
