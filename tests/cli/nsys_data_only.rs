//! `--nsys` reads an Nsight Systems export as data only, at a cost bounded by its rows (issue
//! 47): a view (recursive, or of millions of rows) is refused at once naming it, with nothing
//! written to the temporary directory; triggers never run; a WAL-mode export is read as it is
//! on disk, nothing created or read beside it; a path starting `file:` is a file name; a
//! hundred thousand processes and a call chain shared by thousands of calls read in linear
//! work. The export is the one of `external_sources.rs`, whose figures are computed by hand
//! (tests/fixtures/nsys/README.md); every change made here leaves them standing or moves them
//! by a figure computed here.

use crate::external_sources::{assert_the_peak, at, files, write_export, Files, Variant, MIB, PID};
use crate::support::repo::memtide;
use rusqlite::Connection;
use serde_json::{json, Value};
use std::path::Path;
use std::time::{Duration, SystemTime};

/// A file's bytes and modification time.
fn stamp(p: &Path) -> (Vec<u8>, SystemTime) {
    (
        std::fs::read(p).expect("read"),
        std::fs::metadata(p)
            .and_then(|m| m.modified())
            .expect("mtime"),
    )
}

/// The names in a directory, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("dir")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .collect();
    v.sort();
    v
}

/// What `summary SNAPSHOT --nsys EXPORT --json` did.
struct Run {
    code: Option<i32>,
    json: Value,
    stderr: String,
    /// What was left in the temporary directory it was given (`TMPDIR`, `SQLITE_TMPDIR`).
    temp: Vec<String>,
}

/// Runs `summary --json` on the snapshot with `export` (as written, from `cwd` when given),
/// its temporary directory a fresh one, and at most 60 s.
fn summary(f: &Files, export: &Path, cwd: Option<&Path>) -> Run {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut cmd = memtide();
    cmd.arg("summary")
        .arg(&f.snapshot)
        .arg("--nsys")
        .arg(export)
        .arg("--json")
        .env("TMPDIR", tmp.path())
        .env("SQLITE_TMPDIR", tmp.path())
        .timeout(Duration::from_secs(60));
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    let out = cmd.output().expect("run");
    Run {
        code: out.status.code(),
        json: serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        temp: names_in(tmp.path()),
    }
}

/// The export of `external_sources.rs` at `name`, then `sql` run on it.
fn export_with(f: &Files, name: &str, sql: &str) -> std::path::PathBuf {
    let p = f.export(name, Variant::default());
    Connection::open(&p)
        .and_then(|c| c.execute_batch(sql))
        .expect("change the export");
    p
}

#[test]
fn a_recursive_view_or_a_view_of_millions_of_rows_is_refused_at_once_writing_nothing() {
    let f = files();
    for (name, sql, object) in [
        (
            "recursive.sqlite",
            // Every row the table had, then an endless stream: SQLite would sort it forever.
            "ALTER TABLE CUDA_GPU_MEMORY_USAGE_EVENTS RENAME TO usage_rows;
             CREATE VIEW CUDA_GPU_MEMORY_USAGE_EVENTS AS
               SELECT * FROM usage_rows UNION ALL
               SELECT * FROM (WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r)
                 SELECT n, 1, 0, 1, n, 0, 1, 2, 0, NULL, n, NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM r);",
            "CUDA_GPU_MEMORY_USAGE_EVENTS",
        ),
        (
            "millions.sqlite",
            // Ten million runtime rows from a few kilobytes.
            "CREATE TABLE digit (d INTEGER);
             INSERT INTO digit VALUES (0),(1),(2),(3),(4),(5),(6),(7),(8),(9);
             ALTER TABLE CUPTI_ACTIVITY_KIND_RUNTIME RENAME TO runtime_rows;
             CREATE VIEW CUPTI_ACTIVITY_KIND_RUNTIME AS
               SELECT 0 AS start, 1 AS end, 67 AS eventClass, 0 AS globalTid,
                      a.d + 10 * b.d + 100 * c.d + 1000 * e.d + 10000 * g.d + 100000 * h.d + 1000000 * i.d AS correlationId,
                      1 AS nameId, 0 AS returnValue, 103 AS callchainId
               FROM digit a, digit b, digit c, digit e, digit g, digit h, digit i;",
            "CUPTI_ACTIVITY_KIND_RUNTIME",
        ),
    ] {
        let p = export_with(&f, name, sql);
        let before = stamp(&p);
        let r = summary(&f, &p, None);
        assert_eq!(r.code, Some(2), "{name}: {}", r.stderr);
        assert!(
            r.stderr.contains(&format!("Nsight Systems export {}", p.display()))
                && r.stderr.contains(&format!("{object} is a view")),
            "{}",
            r.stderr
        );
        assert!(r.temp.is_empty(), "{name} wrote {:?}", r.temp);
        assert!(stamp(&p) == before, "{name} changed");
        assert_eq!(names_in(f.dir.path()).iter().filter(|n| n.starts_with(name)).count(), 1);
    }
}

#[test]
fn triggers_in_an_export_never_run_and_its_figures_stand() {
    let f = files();
    let p = export_with(
        &f,
        "triggers.sqlite",
        "CREATE TABLE audit (x);
         CREATE TRIGGER wipe AFTER INSERT ON audit BEGIN DELETE FROM CUDA_GPU_MEMORY_USAGE_EVENTS; END;
         CREATE TRIGGER grow AFTER UPDATE ON StringIds BEGIN
           INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId, address, pc, bytes, memKind, memoryOperationType)
             VALUES (0, 71168950272, 0, 1, 1, 0, 1099511627776, 2, 0);
         END;",
    );
    let before = stamp(&p);
    let r = summary(&f, &p, None);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_the_peak(&r.json);
    assert!(stamp(&p) == before);
    assert!(r.temp.is_empty(), "{:?}", r.temp);
}

#[test]
fn a_wal_export_is_read_as_on_disk_with_nothing_created_or_read_beside_it() {
    let f = files();
    let src = tempfile::tempdir().expect("tempdir");
    let p = src.path().join("wal.sqlite");
    write_export(&p, Variant::default());
    // WAL mode, and a 500 MiB allocation of the process that stays in the log (a writer
    // still open, no checkpoint): on disk, the export is the hand-computed one.
    let writer = Connection::open(&p).expect("open");
    writer
        .execute_batch(&format!(
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
             INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId, address, pc, bytes, memKind, memoryOperationType)
               VALUES ({}, {}, 0, 1, {}, 4096, {}, 2, 0);",
            at(35),
            0x7f70_0000_0000u64,
            PID << 24,
            500 * MIB
        ))
        .expect("wal row");
    let wal = src.path().join("wal.sqlite-wal");
    assert!(std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0) > 0);
    for with_log in [false, true] {
        let d = tempfile::tempdir().expect("tempdir");
        let e = d.path().join("wal.sqlite");
        std::fs::copy(&p, &e).expect("copy");
        if with_log {
            std::fs::copy(&wal, d.path().join("wal.sqlite-wal")).expect("copy log");
        }
        let before = names_in(d.path())
            .iter()
            .map(|n| stamp(&d.path().join(n)))
            .collect::<Vec<_>>();
        let r = summary(&f, &e, None);
        assert_eq!(r.code, Some(0), "{}", r.stderr);
        // The log's 500 MiB are not in the figures.
        assert_the_peak(&r.json);
        let want: &[&str] = if with_log {
            &["wal.sqlite", "wal.sqlite-wal"]
        } else {
            &["wal.sqlite"]
        };
        assert_eq!(names_in(d.path()), want, "created beside the export");
        let after = want
            .iter()
            .map(|n| stamp(&d.path().join(n)))
            .collect::<Vec<_>>();
        assert!(after == before, "a file beside the export changed");
        let warned = r.json["warnings"]
            .to_string()
            .contains("wal.sqlite-wal beside the export was not read");
        assert_eq!(warned, with_log, "{}", r.json["warnings"]);
    }
    drop(writer);
}

#[test]
fn a_path_starting_file_colon_is_a_file_name_not_a_uri() {
    let f = files();
    let d = f.dir.path();
    // SQLite would take `file:run.sqlite` as a URI naming `run.sqlite`: here that is another
    // run's export (a day off), refused as such.
    write_export(
        &d.join("run.sqlite"),
        Variant {
            day_off: true,
            ..Default::default()
        },
    );
    for name in ["file:run.sqlite", "file:run.sqlite?mode=memory#x%41"] {
        write_export(&d.join(name), Variant::default());
        let r = summary(&f, Path::new(name), Some(d));
        assert_eq!(r.code, Some(0), "{name}: {}", r.stderr);
        assert_the_peak(&r.json);
        assert_eq!(r.json["nsys"]["path"], json!(name));
    }
}

#[test]
fn a_hundred_thousand_processes_and_a_chain_shared_by_thousands_of_calls_read_fast() {
    let f = files();
    // 100,000 other processes with a 1 MiB allocation each, and a process whose 2,000
    // allocations share one chain of 2,000 frames: none is the snapshot's process (they
    // match none of its segments), so the hand-computed figures stand.
    let p = export_with(
        &f,
        "crowd.sqlite",
        &format!(
            "WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < 100000)
               INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId, address, pc, bytes, memKind, memoryOperationType)
               SELECT {t}, (10000 + i) << 24, 0, 1, 1099511627776 + i * 4096, 1, {mib}, 2, 0 FROM k;
             WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < 2000)
               INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId, address, pc, bytes, memKind, memoryOperationType, correlationId)
               SELECT {t}, 777 << 24, 0, 1, 2199023255552 + i * 4096, 1, 4096, 2, 0, 50000 + i FROM k;
             WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < 2000)
               INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT 0, 1, 67, 0, 50000 + i, 1, 0, 900 FROM k;
             WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i + 1 < 2000)
               INSERT INTO CUDA_CALLCHAINS SELECT 900, 1, 2, 0, 0, i FROM k;",
            t = at(30),
            mib = MIB
        ),
    );
    let r = summary(&f, &p, None);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_the_peak(&r.json);
    assert_eq!(r.json["nsys"]["pid"], json!(PID));
}

#[test]
fn allocations_sharing_a_chain_share_its_frames() {
    // cuDNN's call (correlationId 4) given NCCL's chain (103): both allocations are then
    // NCCL's, 64 + 16 MiB at the peak (README), and hold one copy of the chain between them.
    let f = files();
    let p = export_with(
        &f,
        "shared.sqlite",
        "UPDATE CUPTI_ACTIVITY_KIND_RUNTIME SET callchainId = 103 WHERE correlationId = 4;",
    );
    let opts = memtide_core::formats::LoadOptions {
        nsys: Some(p),
        ..Default::default()
    };
    let opened = memtide_core::open::open(&f.snapshot, &opts.into(), &Default::default())
        .unwrap_or_else(|e| panic!("{e}"));
    let t = &opened.devices[0].trace;
    let chained: Vec<_> = t
        .ext_detail
        .values()
        .filter(|d| !d.frames.is_empty())
        .collect();
    assert_eq!(chained.len(), 2, "{chained:?}");
    assert!(std::sync::Arc::ptr_eq(
        &chained[0].frames,
        &chained[1].frames
    ));
    assert!(chained[0].frames.iter().any(|fr| fr.contains("libnccl")));
    let r = summary(&f, &f.dir.path().join("shared.sqlite"), None);
    assert_eq!(
        r.json["peak"]["external_by_source"],
        json!({"nccl": 80 * MIB, "library-internal": 2 * MIB, "other": MIB}),
        "{}",
        r.stderr
    );
}
