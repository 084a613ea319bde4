//! The `nsys` reader's cases: small Nsight Systems exports built with rusqlite for a snapshot
//! of the same run, mutated on the SQLite level (schema: a table made a view, a recursive
//! view, a view of millions of rows, a virtual table, a column dropped, renamed or retyped, a
//! computed column or default, a trigger, an index, WITHOUT ROWID, WAL mode; rows: extreme
//! integers, nulls, text and blobs in integer columns, duplicate addresses, a call chain shared
//! by many calls, many processes, deleted rows) and then, one case in four, on the byte level.
//! A case is the export's bytes; it is read from a temporary file by loading the snapshot with
//! `--nsys`, and reading must leave the file, and a `-wal` planted beside it, untouched.

use super::{exercise, mutate_once, Rng};
use rusqlite::Connection;
use std::cell::RefCell;
use std::path::{Path, PathBuf};

/// `TARGET_INFO_SESSION_START_TIME.utcEpochNs`; the snapshot's first event is 1 ms later.
const SESSION_NS: i64 = 1_795_946_400_000_000_000;
const T0_US: i64 = SESSION_NS / 1000 + 1000;
const MIB: i64 = 1 << 20;
const PID: i64 = 4242;
const SEG_A: i64 = 0x7f00_0000_0000;
const SEG_B: i64 = 0x7f00_0200_0000;

/// The tables the reader reads (the mutators' targets).
const TABLES: [&str; 9] = [
    "CUDA_GPU_MEMORY_USAGE_EVENTS",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUDA_CALLCHAINS",
    "StringIds",
    "TARGET_INFO_SESSION_START_TIME",
    "CUDA_GPU_MEMORY_POOL_EVENTS",
    "ENUM_CUDA_MEM_KIND",
    "ENUM_CUDA_DEV_MEM_EVENT_OPER",
    "CUDA_GPU_MEMORY_USAGE_EVENTS",
];

/// The snapshot the exports belong to: segments A (20 MiB) and B (40 MiB) with blocks,
/// events 10 µs apart from T0.
fn snapshot_json() -> String {
    let ev = |us: i64, action: &str, addr: i64, size: i64| {
        format!(
            r#"{{"action":"{action}","addr":{addr},"size":{size},"stream":0,"time_us":{},"frames":[{{"filename":"train.py","line":1,"name":"step"}}]}}"#,
            T0_US + us
        )
    };
    let events = [
        ev(0, "segment_alloc", SEG_A, 20 * MIB),
        ev(10, "alloc", SEG_A, 8 * MIB),
        ev(20, "segment_alloc", SEG_B, 40 * MIB),
        ev(30, "alloc", SEG_B, 30 * MIB),
        ev(40, "alloc", SEG_A + 8 * MIB, 4 * MIB),
        ev(50, "free_completed", SEG_B, 30 * MIB),
        ev(60, "segment_free", SEG_B, 40 * MIB),
    ];
    format!(
        r#"{{"segments":[{{"device":0,"address":{SEG_A},"total_size":{},"allocated_size":{},"active_size":{},"requested_size":{},"stream":0,"segment_type":"large","frames":[],"blocks":[{{"address":{SEG_A},"size":{},"requested_size":{},"state":"active_allocated","frames":[]}},{{"address":{},"size":{},"requested_size":{},"state":"active_allocated","frames":[]}},{{"address":{},"size":{},"requested_size":0,"state":"inactive","frames":[]}}]}}],"device_traces":[[{}]]}}"#,
        20 * MIB,
        12 * MIB,
        12 * MIB,
        12 * MIB,
        8 * MIB,
        8 * MIB,
        SEG_A + 8 * MIB,
        4 * MIB,
        4 * MIB,
        SEG_A + 12 * MIB,
        8 * MIB,
        events.join(",")
    )
}

/// ns after the session start of `us` after T0.
fn at(us: i64) -> i64 {
    (T0_US + us) * 1000 - SESSION_NS
}

/// The seeds' shapes.
#[derive(Clone, Copy)]
enum Seed {
    /// Today's documented schema with call chains.
    Documented,
    /// An older export: no `contextId`, `memKind` or enum tables.
    Old,
    /// cudaMallocAsync pools, a chain shared by two calls, another process.
    Pools,
}

/// A usage row: (µs after T0, pid, address, bytes, memKind, 0 alloc / 1 free, pc,
/// correlationId).
type Usage = (i64, i64, i64, i64, i64, i64, i64, Option<i64>);

/// Writes a seed export at `path`.
fn write_seed(path: &Path, seed: Seed) -> rusqlite::Result<()> {
    let c = Connection::open(path)?;
    let old = matches!(seed, Seed::Old);
    let usage = if old {
        "start INTEGER NOT NULL, globalPid INTEGER NOT NULL, deviceId INTEGER NOT NULL, address INTEGER NOT NULL, pc INTEGER NOT NULL, bytes INTEGER NOT NULL, memoryOperationType INTEGER NOT NULL, name TEXT, correlationId INTEGER"
    } else {
        "start INTEGER NOT NULL, globalPid INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, address INTEGER NOT NULL, pc INTEGER NOT NULL, bytes INTEGER NOT NULL, memKind INTEGER NOT NULL, memoryOperationType INTEGER NOT NULL, name TEXT, correlationId INTEGER, localMemoryPoolAddress INTEGER, localMemoryPoolSize INTEGER, localMemoryPoolUtilizedSize INTEGER"
    };
    c.execute_batch(&format!(
        "CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
         CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS ({usage});
         CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, correlationId INTEGER, callchainId INTEGER);
         CREATE TABLE CUDA_CALLCHAINS (id INTEGER NOT NULL, symbol INTEGER NOT NULL, module INTEGER NOT NULL, stackDepth INTEGER NOT NULL, PRIMARY KEY (id, stackDepth));
         CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT);
         INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES ({SESSION_NS}, '2026-11-29T10:00:00Z');
         INSERT INTO StringIds VALUES (1, 'cudaMalloc'), (2, '/cuda/lib64/libcudart.so.12'), (3, 'ncclCommInitRank'), (4, '/nccl/lib/libnccl.so.2'), (5, 'cudnnBackendExecute'), (6, 'libcudnn_engines_precompiled.so.9');
         INSERT INTO CUDA_CALLCHAINS VALUES (103, 1, 2, 0), (103, 3, 4, 1), (104, 1, 2, 0), (104, 5, 6, 1);
         INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (0, 1, 3, 103), (0, 1, 4, 104), (0, 1, 5, 103);"
    ))?;
    if !old {
        c.execute_batch(
            "CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
             CREATE TABLE ENUM_CUDA_DEV_MEM_EVENT_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
             INSERT INTO ENUM_CUDA_MEM_KIND VALUES (0,'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE','Pageable'),(1,'CUDA_MEMOPR_MEMORY_KIND_PINNED','Pinned'),(2,'CUDA_MEMOPR_MEMORY_KIND_DEVICE','Device'),(4,'CUDA_MEMOPR_MEMORY_KIND_MANAGED','Managed');
             INSERT INTO ENUM_CUDA_DEV_MEM_EVENT_OPER VALUES (0,'CUDA_DEV_MEM_EVENT_OPR_ALLOCATION','Allocation'),(1,'CUDA_DEV_MEM_EVENT_OPR_DEALLOCATION','Deallocation');",
        )?;
    }
    let mut rows: Vec<Usage> = vec![
        (-5, PID, SEG_A, 20 * MIB, 2, 0, 0x7f11, None),
        (15, PID, SEG_B, 40 * MIB, 2, 0, 0x7f11, None),
        (15, PID, 0x7f10_0000_0000, 64 * MIB, 2, 0, 0x7f22, Some(3)),
        (25, PID, 0x7f20_0000_0000, 16 * MIB, 2, 0, 0x7f33, Some(4)),
        (26, PID, 0x5000_0000, 8 * MIB, 1, 0, 0x7f44, None),
        (55, PID, 0x7f20_0000_0000, 16 * MIB, 2, 1, 0x7f33, None),
        (58, PID, SEG_B, 40 * MIB, 2, 1, 0x7f11, None),
        (45, PID, 0x7f60_0000_0000, 4 * MIB, 2, 1, 0, None),
    ];
    if matches!(seed, Seed::Pools) {
        rows.push((30, 999, 0x7e00_0000_0000, 100 * MIB, 2, 0, 0x7f55, Some(5)));
        rows.push((35, PID, 0x7f30_0000_0000, 2 * MIB, 4, 0, 0, None));
    }
    for (us, pid, addr, bytes, kind, op, pc, corr) in rows {
        let start = if us < 0 { 0 } else { at(us) };
        if old {
            c.execute(
                "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES (?1, ?2, 0, ?3, ?4, ?5, ?6, NULL, ?7)",
                rusqlite::params![start, pid << 24, addr, pc, bytes, op, corr],
            )?;
        } else {
            let pool = matches!(seed, Seed::Pools).then_some(0x7d00_0000_0000i64);
            c.execute(
                "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES (?1, ?2, 0, 1, ?3, ?4, ?5, ?6, ?7, NULL, ?8, ?9, ?10, ?11)",
                rusqlite::params![start, pid << 24, addr, pc, bytes, kind, op, corr, pool, pool.map(|_| 96 * MIB), pool.map(|_| bytes)],
            )?;
        }
    }
    if matches!(seed, Seed::Pools) {
        c.execute_batch(&format!(
            "CREATE TABLE CUDA_GPU_MEMORY_POOL_EVENTS (start INTEGER NOT NULL, globalPid INTEGER NOT NULL, deviceId INTEGER NOT NULL, address INTEGER NOT NULL, operationType INTEGER, localMemoryPoolSize INTEGER, localMemoryPoolUtilizedSize INTEGER);
             INSERT INTO CUDA_GPU_MEMORY_POOL_EVENTS VALUES ({}, {}, 0, {}, 0, {}, 0), ({}, {}, 0, {}, 1, {}, {});",
            at(12), PID << 24, 0x7d00_0000_0000i64, 32 * MIB,
            at(48), PID << 24, 0x7d00_0000_0000i64, 64 * MIB, 16 * MIB
        ))?;
    }
    Ok(())
}

thread_local! {
    /// A directory of this thread's own: the snapshot, and each case's files.
    static DIR: RefCell<Option<(tempfile::TempDir, PathBuf)>> = const { RefCell::new(None) };
}

/// This thread's directory and the snapshot in it.
fn dir() -> Option<(PathBuf, PathBuf)> {
    DIR.with(|d| {
        let mut d = d.borrow_mut();
        if d.is_none() {
            let t = tempfile::tempdir().ok()?;
            let snap = t.path().join("snap.json");
            std::fs::write(&snap, snapshot_json()).ok()?;
            *d = Some((t, snap));
        }
        d.as_ref().map(|(t, s)| (t.path().to_path_buf(), s.clone()))
    })
}

/// Removes the case's files (and anything SQLite may have left beside them).
fn clear(dir: &Path) {
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with("case") {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

/// The seed exports' bytes.
pub fn seeds() -> Vec<Vec<u8>> {
    let Some((d, _)) = dir() else {
        return Vec::new();
    };
    [Seed::Documented, Seed::Old, Seed::Pools]
        .into_iter()
        .filter_map(|s| {
            clear(&d);
            let p = d.join("case-seed.sqlite");
            write_seed(&p, s).ok()?;
            let b = std::fs::read(&p).ok();
            clear(&d);
            b
        })
        .collect()
}

/// The columns of `t` (none when it is not a table).
fn columns(c: &Connection, t: &str) -> Vec<String> {
    c.prepare(&format!("PRAGMA table_info(\"{t}\")"))
        .and_then(|mut s| {
            s.query_map([], |r| r.get::<_, String>(1))?
                .collect::<Result<Vec<_>, _>>()
        })
        .unwrap_or_default()
}

/// Values a mutated cell takes.
const EXTREMES: [&str; 14] = [
    "0",
    "-1",
    "1",
    "9223372036854775807",
    "-9223372036854775808",
    "4294967296",
    "1125899906842624",
    "1e308",
    "-0.5",
    "NULL",
    "'text'",
    "'12'",
    "x'00ff'",
    "''",
];

/// Rows `rowid % m = r`: a deterministic choice of rows.
fn some_rows(rng: &mut Rng) -> String {
    let m = 1 + rng.below(4);
    format!("rowid % {m} = {}", rng.below(m))
}

/// A recursive CTE of `n` rows `k(i)`.
fn counter(n: usize) -> String {
    format!("WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < {n})")
}

/// One SQLite-level mutation of the export open on `c` (errors are ignored: a mutation
/// that does not apply leaves the file as it was); true when no other should follow it (a
/// huge default: copying its rows would write gigabytes).
fn mutate_sql(c: &Connection, rng: &mut Rng) -> bool {
    let t = TABLES[rng.below(TABLES.len())];
    let cols = columns(c, t);
    let col = cols
        .get(rng.below(cols.len().max(1)))
        .cloned()
        .unwrap_or_else(|| "start".into());
    let most = if rng.chance(4) { 20_000 } else { 300 };
    let n = 1 + rng.below(most);
    let as_cols = |value: &str| {
        cols.iter()
            .map(|c| format!("{value} AS \"{c}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let kind = rng.below(22);
    let sql = match kind {
        // Schema mutators.
        0 => format!("ALTER TABLE {t} RENAME TO {t}_rows; CREATE VIEW {t} AS SELECT * FROM {t}_rows;"),
        1 => format!(
            "ALTER TABLE {t} RENAME TO {t}_rows; CREATE VIEW {t} AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT {} FROM r;",
            as_cols("n")
        ),
        2 => format!(
            "CREATE TABLE IF NOT EXISTS digit (d); INSERT INTO digit VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9);
             ALTER TABLE {t} RENAME TO {t}_rows;
             CREATE VIEW {t} AS SELECT {} FROM digit a, digit b, digit c, digit e, digit g, digit h, digit i;",
            as_cols("a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * g.d + 100000 * h.d + 1000000 * i.d")
        ),
        3 => format!(
            "ALTER TABLE {t} RENAME TO {t}_rows; CREATE VIRTUAL TABLE {t} USING fts5({}); INSERT INTO {t} SELECT * FROM {t}_rows;",
            cols.iter().map(|c| format!("\"{c}\"")).collect::<Vec<_>>().join(", ")
        ),
        4 => format!("ALTER TABLE {t} DROP COLUMN \"{col}\";"),
        5 => format!("ALTER TABLE {t} RENAME COLUMN \"{col}\" TO \"{col}_x\";"),
        6 => {
            let ty = ["TEXT", "BLOB", "REAL", "ANY", "", "INTEGER PRIMARY KEY"][rng.below(6)];
            let defs = cols
                .iter()
                .map(|c| if *c == col { format!("\"{c}\" {ty}") } else { format!("\"{c}\"") })
                .collect::<Vec<_>>()
                .join(", ");
            let without = if rng.chance(3) { " WITHOUT ROWID" } else { "" };
            let pk = if without.is_empty() { String::new() } else { format!(", PRIMARY KEY (\"{}\")", cols.first().cloned().unwrap_or_default()) };
            format!(
                "CREATE TABLE {t}_new ({defs}{pk}){without}; INSERT OR IGNORE INTO {t}_new SELECT * FROM {t}; DROP TABLE {t}; ALTER TABLE {t}_new RENAME TO {t};"
            )
        }
        7 => format!(
            "CREATE TRIGGER trg_{k} AFTER INSERT ON {t} BEGIN DELETE FROM {t}; END;
             CREATE TRIGGER trg_u{k} BEFORE UPDATE ON {t} BEGIN SELECT RAISE(FAIL, 'trigger ran'); END;",
            k = rng.below(1000)
        ),
        8 => format!(
            "ALTER TABLE {t} RENAME COLUMN \"{col}\" TO \"{col}_raw\"; ALTER TABLE {t} ADD COLUMN \"{col}\" GENERATED ALWAYS AS (\"{col}_raw\" * 2) VIRTUAL;"
        ),
        9 => format!(
            "ALTER TABLE {t} RENAME COLUMN \"{col}\" TO \"{col}_old\"; ALTER TABLE {t} ADD COLUMN \"{col}\" TEXT DEFAULT (printf('%.*c', {}, 'x'));",
            // Past the reader's 16 MiB cap on a value, or not.
            [1000, 17_000_000][rng.below(2)]
        ),
        10 => format!("CREATE INDEX IF NOT EXISTS ix_{k} ON {t}(\"{col}\");", k = rng.below(1000)),
        11 => format!("DROP TABLE {t};"),
        12 => "PRAGMA journal_mode = WAL;".into(),
        // Row mutators.
        13 | 14 => format!(
            "UPDATE {t} SET \"{col}\" = {} WHERE {};",
            EXTREMES[rng.below(EXTREMES.len())],
            some_rows(rng)
        ),
        15 => format!(
            "UPDATE CUDA_GPU_MEMORY_USAGE_EVENTS SET address = (SELECT address FROM CUDA_GPU_MEMORY_USAGE_EVENTS LIMIT 1) WHERE {};",
            some_rows(rng)
        ),
        16 => {
            // A chain of d frames shared by n calls, each an allocation.
            let d = 1 + rng.below(2000);
            format!(
                "{c} INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, correlationId, callchainId) SELECT 0, 1, 900000 + i, 777 FROM k;
                 {cd} INSERT INTO CUDA_CALLCHAINS (id, symbol, module, stackDepth) SELECT 777, 1 + i % 6, 4, i FROM k;
                 {c} INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId, address, pc, bytes, memKind, memoryOperationType, correlationId)
                   SELECT {s} + i, {g}, 0, 1, 140000000000000 + 4096 * i, 1, 4096, 2, 0, 900000 + i FROM k;",
                c = counter(n),
                cd = counter(d),
                s = at(20),
                g = PID << 24
            )
        }
        17 => format!(
            "{} INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId, address, pc, bytes, memKind, memoryOperationType)
               SELECT {} + i % 50, (5000 + i) << 24, i % 3, 1, 150000000000000 + 4096 * i, i % 2, 1048576, 2, i % 2 FROM k;",
            counter(n),
            at(10)
        ),
        18 => format!(
            "UPDATE CUDA_GPU_MEMORY_USAGE_EVENTS SET start = {} WHERE {};",
            ["0", "-1", "start * 1000000000", "9223372036854775807"][rng.below(4)],
            some_rows(rng)
        ),
        19 => format!("DELETE FROM {t} WHERE {};", some_rows(rng)),
        20 => format!(
            "UPDATE {t} SET \"{col}\" = zeroblob({}) WHERE {};",
            rng.below(100_000),
            some_rows(rng)
        ),
        _ => format!(
            "INSERT INTO StringIds (id, value) SELECT id + 1000000, value || value FROM StringIds; UPDATE CUDA_CALLCHAINS SET symbol = symbol + 1000000 WHERE {};",
            some_rows(rng)
        ),
    };
    let _ = c.execute_batch(&sql);
    kind == 9
}

/// The mutating connection's bounds: a mutation that copies an endless view stops after
/// [`MUTATE_STEPS`], and no value is over 20 MiB.
fn bounded(c: &Connection) -> rusqlite::Result<()> {
    c.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH, 20 << 20)?;
    c.execute_batch("PRAGMA temp_store = MEMORY; PRAGMA synchronous = OFF;")?;
    let mut steps = 0u64;
    c.progress_handler(
        10_000,
        Some(move || {
            steps += 1;
            steps > MUTATE_STEPS / 10_000
        }),
    )
}

/// SQLite steps one case's SQL mutations may take together.
const MUTATE_STEPS: u64 = 5_000_000;

/// A case for the `nsys` reader from `base` (an export's bytes, or another seed's): SQL
/// mutations three cases in four, byte mutations one in four (and whenever the SQL ones
/// changed nothing), most of them in place.
pub fn make(base: Vec<u8>, pool: &[Vec<u8>], all: &[Vec<u8>], rng: &mut Rng) -> Vec<u8> {
    let mut b = base;
    let mut sql_done = false;
    if !rng.chance(4) {
        if let Some((d, _)) = dir() {
            clear(&d);
            let p = d.join("case-make.sqlite");
            if std::fs::write(&p, &b).is_ok() {
                if let Ok(c) = Connection::open(&p) {
                    if bounded(&c).is_ok() {
                        for _ in 0..1 + rng.below(3) {
                            if mutate_sql(&c, rng) {
                                break;
                            }
                        }
                    }
                    drop(c);
                    if let Ok(m) = std::fs::read(&p) {
                        sql_done = m != b;
                        b = m;
                    }
                }
            }
            clear(&d);
        }
    }
    if !sql_done || rng.chance(4) {
        for _ in 0..1 + rng.below(2) {
            if rng.chance(4) {
                mutate_once(&mut b, pool, all, rng);
            } else {
                overwrite(&mut b, rng);
            }
        }
    }
    b.truncate(super::MAX_CASE);
    b
}

/// A same-length mutation (the file stays whole pages, so SQLite reads the damage): a bit
/// flipped, a byte set, or a big-endian integer of 1 to 8 bytes (SQLite's byte order)
/// written, half the time in the first page (the header, the schema's root).
fn overwrite(b: &mut [u8], rng: &mut Rng) {
    if b.is_empty() {
        return;
    }
    let span = if rng.chance(2) {
        b.len().min(4096)
    } else {
        b.len()
    };
    let i = rng.below(span);
    match rng.below(3) {
        0 => b[i] ^= 1 << rng.below(8),
        1 => b[i] = rng.next() as u8,
        _ => {
            let width = 1 + rng.below(8);
            let v = if rng.chance(2) {
                rng.next() >> rng.below(64)
            } else {
                super::INTERESTING[rng.below(super::INTERESTING.len())]
            };
            for (k, byte) in v.to_be_bytes()[8 - width..].iter().enumerate() {
                if let Some(x) = b.get_mut(i + k) {
                    *x = *byte;
                }
            }
        }
    }
}

/// A file's bytes and modification time (None: absent).
fn stamp(p: &Path) -> Option<(Vec<u8>, std::time::SystemTime)> {
    Some((
        std::fs::read(p).ok()?,
        std::fs::metadata(p).ok()?.modified().ok()?,
    ))
}

/// Loads the snapshot with the case as its `--nsys` export (a `-wal` of garbage planted
/// beside it when `knob` says so); panics when reading changed or created a file beside it.
pub fn run(bytes: &[u8], knob: u64) -> bool {
    let Some((d, snap)) = dir() else {
        return false;
    };
    clear(&d);
    let p = d.join("case.sqlite");
    if std::fs::write(&p, bytes).is_err() {
        return false;
    }
    let wal = d.join("case.sqlite-wal");
    if knob & 0x100 != 0 {
        let junk: Vec<u8> = bytes.iter().rev().take(8192).copied().collect();
        if std::fs::write(&wal, junk).is_err() {
            return false;
        }
    }
    let before = (stamp(&p), stamp(&wal));
    let opts = memtide_core::formats::LoadOptions {
        nsys: Some(p.clone()),
        ..Default::default()
    };
    let opened =
        memtide_core::open::open(&snap, &opts.into(), &memtide_core::formats::Progress::new());
    let ok = match opened {
        Ok(o) => {
            let traces: Vec<_> = o.devices.into_iter().map(|d| d.trace).collect();
            exercise(&traces, true);
            true
        }
        Err(_) => false,
    };
    assert!(
        (stamp(&p), stamp(&wal)) == before,
        "reading the export changed it or the -wal beside it"
    );
    let extra: Vec<String> = std::fs::read_dir(&d)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("case") && n != "case.sqlite" && n != "case.sqlite-wal")
                .collect()
        })
        .unwrap_or_default();
    assert!(
        extra.is_empty(),
        "reading the export created {extra:?} beside it"
    );
    clear(&d);
    ok
}
