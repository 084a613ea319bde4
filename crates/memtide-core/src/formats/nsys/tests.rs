//! The reader against exports written here with rusqlite: data only (views, virtual tables
//! and computed columns refused by name, triggers never run, nothing beside the file read or
//! created), bounded (a budget of steps, cancel), and linear (work counted in rows fetched).

use super::*;
use rusqlite::Connection;
use std::path::PathBuf;
use tempfile::TempDir;

const SESSION_NS: i64 = 1_795_946_400_000_000_000;
const PID: i64 = 4242;

/// The documented tables (tests/fixtures/nsys/README.md), empty but for the session start
/// and the enum tables.
const SCHEMA: &str = "
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS (start INTEGER NOT NULL, globalPid INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, address INTEGER NOT NULL, pc INTEGER NOT NULL, bytes INTEGER NOT NULL, memKind INTEGER NOT NULL, memoryOperationType INTEGER NOT NULL, name TEXT, correlationId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, correlationId INTEGER, callchainId INTEGER);
CREATE TABLE CUDA_CALLCHAINS (id INTEGER NOT NULL, symbol INTEGER NOT NULL, module INTEGER NOT NULL, stackDepth INTEGER NOT NULL, PRIMARY KEY (id, stackDepth));
CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER NOT NULL PRIMARY KEY, name TEXT);
CREATE TABLE ENUM_CUDA_DEV_MEM_EVENT_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT);
CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER);
INSERT INTO ENUM_CUDA_MEM_KIND VALUES (1,'CUDA_MEMOPR_MEMORY_KIND_PINNED'),(2,'CUDA_MEMOPR_MEMORY_KIND_DEVICE');
INSERT INTO ENUM_CUDA_DEV_MEM_EVENT_OPER VALUES (0,'CUDA_DEV_MEM_EVENT_OPR_ALLOCATION'),(1,'CUDA_DEV_MEM_EVENT_OPR_DEALLOCATION');
INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1795946400000000000);
";

/// An export at `dir/name`: the schema, then `sql`.
fn export_in(dir: &Path, name: &str, sql: &str) -> PathBuf {
    let p = dir.join(name);
    let c = Connection::open(&p).expect("create");
    c.execute_batch(SCHEMA).expect("schema");
    c.execute_batch(sql).expect("rows");
    p
}

fn export(sql: &str) -> (TempDir, PathBuf) {
    let d = tempfile::tempdir().expect("tempdir");
    let p = export_in(d.path(), "run.sqlite", sql);
    (d, p)
}

/// `n` allocations of 1 KiB at 0x1000 apart, pid `PID`, device 0, each with correlation id
/// `k + 1`, at 1000 ns steps.
fn allocations(n: u64) -> String {
    format!(
        "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < {n})
         INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS
         SELECT 1000 * (i + 1), {gpid}, 0, 1, 65536 + 4096 * i, 7, 1024, 2, 0, NULL, i + 1 FROM k;",
        gpid = PID << 24
    )
}

fn read_ok(p: &Path) -> NsysExport {
    match read(p, &Progress::new()) {
        Ok(e) => e,
        Err(e) => panic!("{e}"),
    }
}

fn read_err(p: &Path) -> String {
    match read(p, &Progress::new()) {
        Ok(e) => panic!("read: {} allocations", e.allocations.len()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_plain_export_pairs_allocations_with_their_chain_and_library() {
    let (_d, p) = export(&format!(
        "INSERT INTO StringIds VALUES (1,'cudaMalloc'),(2,'libcudart.so.12'),(3,'ncclCommInitRank'),(4,'/nccl/lib/libnccl.so.2');
         INSERT INTO CUDA_CALLCHAINS VALUES (9,3,4,1),(9,1,2,0);
         INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (0,1,5,9);
         INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES
           (3000, {g}, 0, 1, 4096, 7, 100, 2, 1, NULL, NULL),
           (1000, {g}, 0, 1, 4096, 7, 100, 2, 0, NULL, 5),
           (2000, {g}, 0, 1, 8192, 0, 50, 1, 0, NULL, NULL);",
        g = PID << 24
    ));
    let e = read_ok(&p);
    assert_eq!(e.session_start_ns, SESSION_NS);
    assert_eq!(e.rows, 3);
    // Time order, not row order: the free at 3000 ns closes the allocation at 1000 ns.
    assert_eq!(e.allocations.len(), 2);
    let a = &e.allocations[0];
    assert_eq!((a.pid, a.address, a.bytes), (PID as u32, 4096, 100));
    assert_eq!((a.start_ns, a.end_ns), (Some(1000), Some(3000)));
    assert_eq!(a.source, "nccl");
    assert_eq!(a.chain, Some(0));
    assert_eq!(
        e.chains[0].to_vec(),
        [
            "cudaMalloc (libcudart.so.12)",
            "ncclCommInitRank (/nccl/lib/libnccl.so.2)"
        ]
    );
    let b = &e.allocations[1];
    assert_eq!(
        (b.kind, b.source, b.chain),
        (MemKind::Pinned, "library-internal", None)
    );
    assert_eq!(e.unmatched_frees, 0);
    assert!(e.notes.is_empty(), "{:?}", e.notes);
}

#[test]
fn views_virtual_tables_and_computed_columns_are_refused_by_name() {
    let d = tempfile::tempdir().expect("tempdir");
    // The memory table as a recursive view: an endless stream if it were ever run.
    let recursive = export_in(
        d.path(),
        "recursive.sqlite",
        "DROP TABLE CUDA_GPU_MEMORY_USAGE_EVENTS;
         CREATE VIEW CUDA_GPU_MEMORY_USAGE_EVENTS AS
           WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r)
           SELECT n AS start, n AS globalPid, 0 AS deviceId, 1 AS contextId, n AS address,
                  0 AS pc, 1 AS bytes, 2 AS memKind, 0 AS memoryOperationType, NULL AS name,
                  n AS correlationId FROM r;",
    );
    let e = read_err(&recursive);
    assert!(
        e.contains("recursive.sqlite")
            && e.contains("CUDA_GPU_MEMORY_USAGE_EVENTS is a view")
            && e.contains("runs no view"),
        "{e}"
    );
    // Ten million rows from a small file.
    let many = export_in(
        d.path(),
        "many.sqlite",
        "CREATE TABLE digits (d INTEGER); INSERT INTO digits VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9);
         DROP TABLE CUDA_CALLCHAINS;
         CREATE VIEW CUDA_CALLCHAINS AS SELECT 1 AS id, 1 AS symbol, 1 AS module, a.d AS stackDepth
           FROM digits a, digits b, digits c, digits e, digits f, digits g, digits h;",
    );
    let e = read_err(&many);
    assert!(e.contains("CUDA_CALLCHAINS is a view"), "{e}");
    // A virtual table (FTS5 is built into the bundled SQLite) for the strings.
    let virt = export_in(
        d.path(),
        "virtual.sqlite",
        "DROP TABLE StringIds; CREATE VIRTUAL TABLE StringIds USING fts5(id, value);",
    );
    let e = read_err(&virt);
    assert!(e.contains("StringIds is a virtual table"), "{e}");
    // A column SQLite computes on each read.
    let generated = export_in(
        d.path(),
        "generated.sqlite",
        "DROP TABLE TARGET_INFO_SESSION_START_TIME;
         CREATE TABLE TARGET_INFO_SESSION_START_TIME (x INTEGER,
           utcEpochNs INTEGER GENERATED ALWAYS AS (length(printf('%.*c', 10000000, 'x')) + x) VIRTUAL);
         INSERT INTO TARGET_INFO_SESSION_START_TIME (x) VALUES (1);",
    );
    let e = read_err(&generated);
    assert!(
        e.contains("TARGET_INFO_SESSION_START_TIME.utcEpochNs is a generated column"),
        "{e}"
    );
    // An enum table as a view is refused too (every table read is checked).
    let en = export_in(
        d.path(),
        "enum.sqlite",
        "DROP TABLE ENUM_CUDA_MEM_KIND; CREATE VIEW ENUM_CUDA_MEM_KIND AS SELECT 2 AS id, 'x' AS name;",
    );
    assert!(read_err(&en).contains("ENUM_CUDA_MEM_KIND is a view"));
}

#[test]
fn triggers_never_run_and_the_file_is_untouched() {
    let (d, p) = export(&format!(
        "{}
         CREATE TABLE log (x);
         CREATE TRIGGER wipe AFTER INSERT ON log BEGIN DELETE FROM CUDA_GPU_MEMORY_USAGE_EVENTS; END;
         CREATE TRIGGER on_delete BEFORE DELETE ON CUDA_GPU_MEMORY_USAGE_EVENTS BEGIN SELECT RAISE(FAIL, 'ran'); END;
         CREATE TRIGGER on_update AFTER UPDATE ON StringIds BEGIN INSERT INTO log VALUES (1); END;",
        allocations(10)
    ));
    let before = std::fs::read(&p).expect("read");
    let mtime = std::fs::metadata(&p)
        .and_then(|m| m.modified())
        .expect("mtime");
    let e = read_ok(&p);
    assert_eq!(e.allocations.len(), 10);
    assert_eq!(std::fs::read(&p).expect("read"), before);
    assert_eq!(
        std::fs::metadata(&p)
            .and_then(|m| m.modified())
            .expect("mtime"),
        mtime
    );
    let beside: Vec<_> = std::fs::read_dir(d.path())
        .expect("dir")
        .filter_map(|e| e.ok().map(|e| e.file_name()))
        .collect();
    assert_eq!(beside, ["run.sqlite"], "created beside the export");
}

#[test]
fn a_shared_call_chain_is_read_once_and_work_is_linear_in_rows() {
    // N allocations, each its own call, all sharing one chain of D frames: a join per call
    // would fetch N × D rows (160,000); each table read once fetches about 2N + 2D.
    const N: u64 = 400;
    const D: u64 = 400;
    let (_d, p) = export(&format!(
        "{}
         WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < {N})
           INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT 0, 1, i + 1, 77 FROM k;
         WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < {D})
           INSERT INTO CUDA_CALLCHAINS SELECT 77, i + 1, 100000 + i, i FROM k;
         WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < {D})
           INSERT INTO StringIds SELECT i + 1, 'f' || i FROM k;
         INSERT INTO StringIds VALUES (100000, 'libnccl.so.2');",
        allocations(N)
    ));
    let e = read_ok(&p);
    assert_eq!(e.allocations.len() as u64, N);
    assert_eq!(e.chains.len(), 1, "one chain, however many calls share it");
    assert!(e.allocations.iter().all(|a| a.chain == Some(0)));
    assert_eq!(e.chains[0].len() as u64, D);
    assert_eq!(e.chains[0][0], "f0 (libnccl.so.2)");
    assert_eq!(e.chains[0][1], "f1 (??)");
    assert!(e.allocations.iter().all(|a| a.source == "nccl"));
    // Rows in the tables read: N usage + N runtime + D chain + D + 1 strings + the small ones.
    let rows_in_file = 2 * N + 2 * D + 1;
    assert!(
        e.fetched <= rows_in_file + 64,
        "fetched {} rows from {rows_in_file}",
        e.fetched
    );
}

#[test]
fn steps_past_the_budget_are_refused_with_the_figures() {
    let (_d, p) = export(&allocations(5000));
    let len = std::fs::metadata(&p).expect("meta").len();
    // Within the default budget by a wide margin: the steps taken are a few per byte.
    let e = read_ok(&p);
    assert!(
        e.steps > 0 && e.steps < open::budget_for(len),
        "{}",
        e.steps
    );
    assert!(
        e.steps < 8 * len,
        "{} steps for {len} bytes: the budget's margin is gone",
        e.steps
    );
    // A budget the reading cannot meet.
    let r = read_with(&p, &Progress::new(), |_| 10_000);
    let msg = r.map(|_| ()).expect_err("over budget").to_string();
    assert!(
        msg.contains(&format!(
            "the export's queries did more than 10000 steps for a file of {len} bytes: refusing"
        )) && msg.contains("run.sqlite"),
        "{msg}"
    );
}

#[test]
fn cancel_stops_a_read_and_a_running_query() {
    let (_d, p) = export(&allocations(20_000));
    let progress = Progress::new();
    progress.cancel();
    assert!(matches!(read(&p, &progress), Err(FormatError::Cancelled)));
    // Inside one query that returns no row until it has counted them all, the progress
    // handler is what stops it.
    let progress = Progress::new();
    let len = std::fs::metadata(&p).expect("meta").len();
    let db = Db::open(&p, len, &progress, open::budget_for(len)).expect("open");
    progress.cancel();
    let r = db
        .connection()
        .query_row(
            "SELECT count(*) FROM CUDA_GPU_MEMORY_USAGE_EVENTS a, CUDA_GPU_MEMORY_USAGE_EVENTS b",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_err(|e| db.fail("count", &e));
    assert!(matches!(r, Err(FormatError::Cancelled)), "{r:?}");
    // The same query on a budget: stopped at it, with the figures.
    let db = Db::open(&p, len, &Progress::new(), 1_000_000).expect("open");
    let r = db
        .connection()
        .query_row(
            "SELECT count(*) FROM CUDA_GPU_MEMORY_USAGE_EVENTS a, CUDA_GPU_MEMORY_USAGE_EVENTS b",
            [],
            |r| r.get::<_, i64>(0),
        )
        .map_err(|e| db.fail("count", &e).to_string());
    let msg = r.expect_err("over budget");
    assert!(msg.contains("did more than 1000000 steps"), "{msg}");
}

/// An export in WAL mode whose last rows are still in its `-wal` (a writer open): the main
/// file holds `checkpointed` allocations, the log `more`.
fn wal_export(dir: &Path, checkpointed: u64, more: u64) -> (PathBuf, Connection) {
    let p = dir.join("w.sqlite");
    let c = Connection::open(&p).expect("create");
    c.execute_batch("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;")
        .expect("wal");
    c.execute_batch(SCHEMA).expect("schema");
    c.execute_batch(&allocations(checkpointed)).expect("rows");
    c.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .expect("checkpoint");
    c.execute_batch(&format!(
        "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < {more})
         INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS
         SELECT 9000000 + i, {gpid}, 0, 1, 900000000 + 4096 * i, 7, 1024, 2, 0, NULL, NULL FROM k;",
        gpid = PID << 24
    ))
    .expect("wal rows");
    (p, c)
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("dir")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    v.sort();
    v
}

#[test]
fn a_wal_export_is_read_as_on_disk_and_nothing_beside_it_is_created_or_read() {
    let src = tempfile::tempdir().expect("tempdir");
    let (p, writer) = wal_export(src.path(), 5, 3);
    let wal_src = src.path().join("w.sqlite-wal");
    assert!(
        std::fs::metadata(&wal_src).expect("wal").len() > 0,
        "the writer left its rows in the log"
    );
    // The main file alone, in a directory of its own.
    let alone = tempfile::tempdir().expect("tempdir");
    let a = alone.path().join("w.sqlite");
    std::fs::copy(&p, &a).expect("copy");
    let e = read_ok(&a);
    assert_eq!(e.allocations.len(), 5, "the checkpointed rows");
    assert_eq!(
        names_in(alone.path()),
        ["w.sqlite"],
        "nothing created beside it"
    );
    // With its uncheckpointed log beside it: the same figures (the log is not read), the
    // log untouched, no -shm made, and a note says the log was left out.
    let with = tempfile::tempdir().expect("tempdir");
    let b = with.path().join("w.sqlite");
    let bw = with.path().join("w.sqlite-wal");
    std::fs::copy(&p, &b).expect("copy");
    std::fs::copy(&wal_src, &bw).expect("copy wal");
    drop(writer);
    let stamp = |f: &Path| {
        (
            std::fs::read(f).expect("read"),
            std::fs::metadata(f)
                .and_then(|m| m.modified())
                .expect("mtime"),
        )
    };
    let (main0, wal0) = (stamp(&b), stamp(&bw));
    let e = read_ok(&b);
    assert_eq!(e.allocations.len(), 5, "the log's 3 rows are not read");
    assert_eq!(names_in(with.path()), ["w.sqlite", "w.sqlite-wal"]);
    assert!(stamp(&b) == main0 && stamp(&bw) == wal0, "files changed");
    assert!(
        e.notes
            .iter()
            .any(|n| n.contains("w.sqlite-wal beside the export was not read")),
        "{:?}",
        e.notes
    );
    // An export whose tables are all still in its log: the error says the log was not read.
    let empty = tempfile::tempdir().expect("tempdir");
    let c = Connection::open(empty.path().join("e.sqlite")).expect("create");
    c.execute_batch("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;")
        .expect("wal");
    c.execute_batch(SCHEMA).expect("schema");
    let e = empty.path().join("e.sqlite");
    let copy = tempfile::tempdir().expect("tempdir");
    std::fs::copy(&e, copy.path().join("e.sqlite")).expect("copy");
    std::fs::copy(
        empty.path().join("e.sqlite-wal"),
        copy.path().join("e.sqlite-wal"),
    )
    .expect("copy wal");
    drop(c);
    let msg = read_err(&copy.path().join("e.sqlite"));
    assert!(
        msg.contains("no table CUDA_GPU_MEMORY_USAGE_EVENTS")
            && msg.contains("e.sqlite-wal beside the export was not read"),
        "{msg}"
    );
    // A rollback journal beside it (a write that did not finish): not read, said.
    std::fs::write(with.path().join("w.sqlite-journal"), [1u8; 512]).expect("journal");
    let e = read_ok(&b);
    assert_eq!(e.allocations.len(), 5);
    assert!(
        e.notes.iter().any(
            |n| n.contains("w.sqlite-journal beside the export was not read")
                && n.contains("did not finish")
        ),
        "{:?}",
        e.notes
    );
}

#[test]
fn text_a_default_or_a_chain_repeats_is_bounded_by_the_file() {
    // A 1 MiB name stored once as the column's default: every one of 5,000 rows reads it
    // (5 GiB), from a file of about 1.2 MiB.
    let big = "n".repeat(1 << 20);
    let (_d, p) = export(&format!(
        "{}
         ALTER TABLE CUDA_GPU_MEMORY_USAGE_EVENTS DROP COLUMN name;
         ALTER TABLE CUDA_GPU_MEMORY_USAGE_EVENTS ADD COLUMN name TEXT DEFAULT '{big}';",
        allocations(5000)
    ));
    let len = std::fs::metadata(&p).expect("meta").len();
    assert!(len < 2 << 20, "{len}");
    let e = read_err(&p);
    assert!(
        e.contains(
            "CUDA_GPU_MEMORY_USAGE_EVENTS: the export's names and call chains come to more than"
        ) && e.contains(&format!(
            "bytes of text for a file of {len} bytes: refusing"
        )),
        "{e}"
    );
    // One 512 KiB symbol named by every frame of a chain of 2,000 frames (1 GiB formatted).
    let symbol = "s".repeat(512 << 10);
    let (_d, p) = export(&format!(
        "{}
         INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (0, 1, 1, 5);
         INSERT INTO StringIds VALUES (1, '{symbol}');
         WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < 2000)
           INSERT INTO CUDA_CALLCHAINS SELECT 5, 1, 1, i FROM k;",
        allocations(1)
    ));
    let e = read_err(&p);
    assert!(
        e.contains("CUDA_CALLCHAINS: the export's names and call chains come to more than"),
        "{e}"
    );
}
