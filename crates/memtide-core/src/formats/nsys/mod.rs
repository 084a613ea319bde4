//! Nsight Systems SQLite exports (`nsys profile --cuda-memory-usage=true`, then
//! `nsys export --type sqlite`) as a side source of memory outside the framework: every
//! `cudaMalloc`/`cudaFree`, `cudaMallocAsync`, managed and static allocation the export
//! records, paired into allocations with their call chains and the library that made them.
//! [`crate::nsys_merge`] puts them on a trace's clock. The tables and columns read are
//! listed, with where NVIDIA documents them, in [`schema`].

pub(crate) mod library;
pub(crate) mod schema;

use super::FormatError;
use rusqlite::{Connection, OpenFlags, Row};
use schema::{MemKind, Oper, Shape, POOLS, SESSION_START, USAGE, USAGE_REQUIRED};
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

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
    /// Call chains, each `symbol (module)` frames innermost first.
    pub chains: Vec<Vec<String>>,
    pub pools: Vec<PoolSample>,
    /// Deallocations with no allocation before them (made before the capture began and not
    /// reported at `start = 0`).
    pub unmatched_frees: u64,
    /// Rows of the usage table read.
    pub rows: u64,
    /// Whether the export has `memKind` / call chains.
    pub has_mem_kind: bool,
    pub has_callchains: bool,
}

/// The largest allocation read (1 PiB): a bigger `bytes` is a damaged row, not memory.
pub(crate) const MAX_BYTES: u64 = 1 << 50;

/// The most rows of the usage table read (a run of a billion allocations is refused with
/// this figure rather than exhausting memory).
pub(crate) const MAX_ROWS: u64 = 50_000_000;

fn side(path: &Path, reason: impl Into<String>) -> FormatError {
    FormatError::SideFile {
        what: format!("Nsight Systems export {}", path.display()),
        reason: reason.into(),
    }
}

/// Reads the export at `path` (opened read-only; never written).
pub fn read(path: &Path) -> Result<NsysExport, FormatError> {
    check_file(path)?;
    let c = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| side(path, format!("cannot open as SQLite: {e}")))?;
    let shape = shape(&c).map_err(|e| side(path, sql_text("the schema", &e)))?;
    check_usage_table(&shape, path)?;
    let session_start_ns = session_start(&c, path)?;
    let (chains, chain_of) =
        call_chains(&c, &shape).map_err(|e| side(path, sql_text("CUDA_CALLCHAINS", &e)))?;
    let mut out = NsysExport {
        path: path.display().to_string(),
        session_start_ns,
        chains,
        has_mem_kind: shape.has("memKind"),
        has_callchains: shape.has_callchains && shape.has_runtime_callchains,
        ..Default::default()
    };
    read_usage(&c, &shape, &chain_of, path, &mut out)?;
    read_pools(&c, &shape, path, &mut out)?;
    out.pools.sort_by_key(|p| (p.pool, p.t_ns));
    Ok(out)
}

/// The file is a regular file whose SQLite header is whole ([`schema::check_header`]).
fn check_file(path: &Path) -> Result<(), FormatError> {
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
    schema::check_header(&head[..n], len).map_err(|e| side(path, e))
}

/// `table: reason` for an SQLite error, with SQLite's own words for damage.
fn sql_text(table: &str, e: &rusqlite::Error) -> String {
    let damaged = matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    );
    if damaged {
        format!("{table}: the database is damaged or truncated ({e})")
    } else {
        format!("{table}: {e}")
    }
}

/// The tables and columns present.
fn shape(c: &Connection) -> Result<Shape, rusqlite::Error> {
    let usage = schema::columns(c, USAGE)?;
    let runtime = schema::columns(c, "CUPTI_ACTIVITY_KIND_RUNTIME")?;
    Ok(Shape {
        usage_columns: usage.unwrap_or_default(),
        pool_columns: schema::columns(c, POOLS)?,
        has_runtime_callchains: runtime.is_some_and(|v| {
            v.iter().any(|c| c == "callchainId") && v.iter().any(|c| c == "correlationId")
        }),
        has_callchains: schema::columns(c, "CUDA_CALLCHAINS")?.is_some(),
        has_strings: schema::columns(c, "StringIds")?.is_some(),
        mem_kinds: schema::mem_kinds(c)?,
        opers: schema::opers(c)?,
    })
}

/// `TARGET_INFO_SESSION_START_TIME.utcEpochNs`: what puts the export on a wall clock.
fn session_start(c: &Connection, path: &Path) -> Result<i64, FormatError> {
    let cols =
        schema::columns(c, SESSION_START).map_err(|e| side(path, sql_text(SESSION_START, &e)))?;
    let Some(cols) = cols else {
        return Err(side(path, format!("no table {SESSION_START}: the export's clock cannot be aligned with the trace's (its times are relative to a session start it does not record)")));
    };
    if !cols.iter().any(|c| c == "utcEpochNs") {
        return Err(side(path, format!("{SESSION_START} has no column utcEpochNs: the export's clock cannot be aligned with the trace's")));
    }
    let v: Option<i64> = c
        .query_row(&format!("SELECT utcEpochNs FROM {SESSION_START} LIMIT 1"), [], |r| r.get(0))
        .map_err(|e| match e {
            rusqlite::Error::QueryReturnedNoRows => side(path, format!("{SESSION_START} has no row: the export's clock cannot be aligned with the trace's")),
            e => side(path, sql_text(SESSION_START, &e)),
        })?;
    match v {
        Some(ns) if ns > 0 => Ok(ns),
        other => Err(side(path, format!(
            "{SESSION_START} row 1: utcEpochNs is {}: not a UTC time, so the export's clock cannot be aligned with the trace's",
            other.map_or("null".to_string(), |n| n.to_string())
        ))),
    }
}

/// Call chains of the memory events: `correlationId → chain index`, and the chains.
#[allow(clippy::type_complexity)]
fn call_chains(
    c: &Connection,
    shape: &Shape,
) -> Result<(Vec<Vec<String>>, HashMap<i64, u32>), rusqlite::Error> {
    let mut chains: Vec<Vec<String>> = Vec::new();
    let mut of_corr: HashMap<i64, u32> = HashMap::new();
    if !(shape.has_callchains && shape.has_runtime_callchains && shape.has("correlationId")) {
        return Ok((chains, of_corr));
    }
    let strings = if shape.has_strings {
        "LEFT JOIN StringIds s ON s.id = c.symbol LEFT JOIN StringIds m ON m.id = c.module"
    } else {
        "LEFT JOIN (SELECT NULL AS id, NULL AS value) s ON 0 LEFT JOIN (SELECT NULL AS id, NULL AS value) m ON 0"
    };
    let q = format!(
        "SELECT r.correlationId, c.id, c.stackDepth, s.value, m.value
         FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN CUDA_CALLCHAINS c ON c.id = r.callchainId
         {strings}
         WHERE r.correlationId IN (SELECT correlationId FROM {USAGE} WHERE correlationId IS NOT NULL)
         ORDER BY r.correlationId, c.stackDepth"
    );
    let mut st = c.prepare(&q)?;
    let mut rows = st.query([])?;
    let mut index_of_chain: HashMap<i64, u32> = HashMap::new();
    let mut seen_pair: Option<(i64, i64)> = None;
    while let Some(r) = rows.next()? {
        let corr: i64 = r.get(0)?;
        let chain_id: i64 = r.get(1)?;
        let symbol: Option<String> = r.get(3)?;
        let module: Option<String> = r.get(4)?;
        let known = index_of_chain.contains_key(&chain_id);
        let idx = *index_of_chain.entry(chain_id).or_insert_with(|| {
            chains.push(Vec::new());
            (chains.len() - 1) as u32
        });
        of_corr.insert(corr, idx);
        // A chain shared by several calls is filled once (by its first call's rows).
        let filling = !known || seen_pair == Some((corr, chain_id));
        if filling {
            seen_pair = Some((corr, chain_id));
            if let Some(ch) = chains.get_mut(idx as usize) {
                ch.push(format!(
                    "{} ({})",
                    symbol.as_deref().unwrap_or("??"),
                    module.as_deref().unwrap_or("??")
                ));
            }
        }
    }
    Ok((chains, of_corr))
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

/// Reads and pairs the usage table's rows (time order; ties in row order).
fn read_usage(
    c: &Connection,
    shape: &Shape,
    chain_of: &HashMap<i64, u32>,
    path: &Path,
    out: &mut NsysExport,
) -> Result<(), FormatError> {
    let opt = |col: &str| {
        if shape.has(col) {
            col.to_string()
        } else {
            "NULL".to_string()
        }
    };
    let q = format!(
        "SELECT rowid, start, globalPid, deviceId, {}, address, {}, bytes, {}, memoryOperationType, {}, {}, {}, {}, {} FROM {USAGE} ORDER BY start, rowid",
        opt("contextId"),
        opt("pc"),
        opt("memKind"),
        opt("name"),
        opt("correlationId"),
        opt("localMemoryPoolAddress"),
        opt("localMemoryPoolSize"),
        opt("localMemoryPoolUtilizedSize"),
    );
    let mut st = c.prepare(&q).map_err(|e| side(path, sql_text(USAGE, &e)))?;
    let mut rows = st.query([]).map_err(|e| side(path, sql_text(USAGE, &e)))?;
    let mut live: HashMap<(u32, u32, Option<u32>, u64), usize> = HashMap::new();
    loop {
        let r = match rows.next() {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => {
                return Err(side(
                    path,
                    format!("{} after {} rows", sql_text(USAGE, &e), out.rows),
                ))
            }
        };
        out.rows += 1;
        if out.rows > MAX_ROWS {
            return Err(side(path, format!("{USAGE} holds more than {MAX_ROWS} rows: refusing rather than exhausting memory")));
        }
        let u = usage_row(r, shape).map_err(|reason| {
            side(
                path,
                format!("{USAGE} row {}: {reason}", r.get::<_, i64>(0).unwrap_or(-1)),
            )
        })?;
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
                let chain = u.corr.and_then(|k| chain_of.get(&k).copied());
                let modules: Vec<&str> = chain
                    .and_then(|i| out.chains.get(i as usize))
                    .map(|ch| ch.iter().map(|f| frame_module(f)).collect())
                    .unwrap_or_default();
                let source = library::source_of(&modules, u.pc);
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
    Ok(())
}

/// Decodes one usage row; the error names the column and what was wrong.
fn usage_row(r: &Row<'_>, shape: &Shape) -> Result<UsageRow, String> {
    let int = |i: usize, col: &str| -> Result<Option<i64>, String> {
        r.get::<_, Option<i64>>(i)
            .map_err(|e| format!("column {col}: expected an integer ({e})"))
    };
    let need = |i: usize, col: &str| -> Result<i64, String> {
        int(i, col)?.ok_or_else(|| format!("column {col} is null"))
    };
    let row = need(0, "rowid")?;
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
/// usage rows' pool columns say them).
fn read_pools(
    c: &Connection,
    shape: &Shape,
    path: &Path,
    out: &mut NsysExport,
) -> Result<(), FormatError> {
    let Some(cols) = &shape.pool_columns else {
        return Ok(());
    };
    for need in ["start", "globalPid", "deviceId", "address"] {
        if !cols.iter().any(|c| c == need) {
            return Err(side(
                path,
                format!("{POOLS} has no column {need}: another schema than Nsight Systems'"),
            ));
        }
    }
    if !(shape.pool_has("localMemoryPoolSize")) {
        return Ok(());
    }
    let used = if shape.pool_has("localMemoryPoolUtilizedSize") {
        "localMemoryPoolUtilizedSize"
    } else {
        "NULL"
    };
    let q = format!("SELECT rowid, start, globalPid, deviceId, address, localMemoryPoolSize, {used} FROM {POOLS} ORDER BY start, rowid");
    let mut st = c.prepare(&q).map_err(|e| side(path, sql_text(POOLS, &e)))?;
    let mut rows = st.query([]).map_err(|e| side(path, sql_text(POOLS, &e)))?;
    loop {
        let r = match rows.next() {
            Ok(Some(r)) => r,
            Ok(None) => break,
            Err(e) => return Err(side(path, sql_text(POOLS, &e))),
        };
        let get = |i: usize| r.get::<_, Option<i64>>(i);
        let row = get(0).ok().flatten().unwrap_or(-1);
        let bad = |col: &str| {
            side(
                path,
                format!("{POOLS} row {row}: column {col}: expected a non-negative integer"),
            )
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
            continue;
        };
        let utilized = get(6)
            .ok()
            .flatten()
            .and_then(|s| u64::try_from(s).ok())
            .unwrap_or(0);
        out.pools.push(PoolSample {
            pid: ((gpid >> 24) & 0xFF_FFFF) as u32,
            device,
            pool,
            t_ns: t,
            size,
            utilized,
        });
    }
    Ok(())
}
