//! Memory outside PyTorch, by source (issue 39): a snapshot written here from a hand-made
//! event list and Nsight Systems SQLite exports of the "same run" generated here from the
//! documented schema (tests/fixtures/nsys/README.md: the tables, where NVIDIA documents
//! them, and the expected bytes per library at the peak, computed by hand). Every expected
//! figure comes from those lists, not from memtide.

use rusqlite::Connection;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

pub(crate) const MIB: u64 = 1 << 20;
/// `TARGET_INFO_SESSION_START_TIME.utcEpochNs`: 2026-11-29 10:00:00 UTC.
const SESSION_NS: i64 = 1_795_946_400_000_000_000;
/// The snapshot's first entry, 1 ms after the session start (µs since the epoch).
pub(crate) const T0_US: i64 = SESSION_NS / 1000 + 1000;
/// The training process and one other process on the same GPU.
pub(crate) const PID: i64 = 4242;
const OTHER_PID: i64 = 999;

const SEG_A: u64 = 0x7f00_0000_0000;
const SEG_B: u64 = 0x7f00_0200_0000;
const NCCL: u64 = 0x7f10_0000_0000;
const CUDNN: u64 = 0x7f20_0000_0000;
const INTERNAL: u64 = 0x7f30_0000_0000;
const OTHER: u64 = 0x7f40_0000_0000;

use crate::support::repo::memtide;

/// The snapshot's entries: (µs after T0, action, address, size). Events e0..e8, 10 µs apart.
fn entries() -> Vec<(i64, &'static str, u64, u64)> {
    vec![
        (0, "segment_alloc", SEG_A, 20 * MIB),
        (10, "alloc", SEG_A, 8 * MIB),
        (20, "segment_alloc", SEG_B, 40 * MIB),
        (30, "alloc", SEG_B, 30 * MIB),
        (40, "alloc", SEG_A + 8 * MIB, 4 * MIB),
        (50, "free_completed", SEG_B, 30 * MIB),
        (60, "segment_free", SEG_B, 40 * MIB),
        (70, "alloc", SEG_A + 12 * MIB, 2 * MIB),
        (80, "free_completed", SEG_A + 12 * MIB, 2 * MIB),
    ]
}

fn snapshot_json() -> Value {
    let frames = json!([{"filename": "train.py", "line": 10, "name": "step"}]);
    let traces: Vec<Value> = entries()
        .into_iter()
        .map(|(us, action, addr, size)| {
            json!({"action": action, "addr": addr, "size": size, "stream": 0,
                   "time_us": T0_US + us, "frames": frames})
        })
        .collect();
    let segments = json!([{
        "device": 0, "address": SEG_A, "total_size": 20 * MIB, "allocated_size": 12 * MIB,
        "active_size": 12 * MIB, "requested_size": 12 * MIB, "stream": 0,
        "segment_type": "large", "frames": frames,
        "blocks": [
            {"address": SEG_A, "size": 8 * MIB, "requested_size": 8 * MIB,
             "state": "active_allocated", "frames": frames},
            {"address": SEG_A + 8 * MIB, "size": 4 * MIB, "requested_size": 4 * MIB,
             "state": "active_allocated", "frames": frames},
            {"address": SEG_A + 12 * MIB, "size": 8 * MIB, "requested_size": 0,
             "state": "inactive", "frames": []}
        ]
    }]);
    json!({"segments": segments, "device_traces": [traces]})
}

/// One row of `CUDA_GPU_MEMORY_USAGE_EVENTS`: (ns after the session start, pid, address,
/// bytes, memKind, 0 alloc / 1 free, pc, correlationId).
pub(crate) type Usage = (i64, i64, u64, i64, i64, i64, i64, Option<i64>);

/// ns after the session start of `us` after T0.
pub(crate) fn at(us: i64) -> i64 {
    (T0_US + us) * 1000 - SESSION_NS
}

/// The export's rows (see the README for the life of each on the event axis).
fn usage_rows() -> Vec<Usage> {
    vec![
        // PyTorch's segments, 5 µs before the snapshot records them: matched, left out.
        (at(-5), PID, SEG_A, (20 * MIB) as i64, 2, 0, 0x7f11, Some(1)),
        (at(15), PID, SEG_B, (40 * MIB) as i64, 2, 0, 0x7f11, Some(2)),
        // NCCL's buffer at 15 µs (live from e2), never freed.
        (at(15), PID, NCCL, (64 * MIB) as i64, 2, 0, 0x7f22, Some(3)),
        // cuDNN's workspace at 25 µs (from e3), freed at 55 µs (gone at e6).
        (at(25), PID, CUDNN, (16 * MIB) as i64, 2, 0, 0x7f33, Some(4)),
        // Pinned host memory: not device memory.
        (
            at(26),
            PID,
            0x5000_0000,
            (8 * MIB) as i64,
            1,
            0,
            0x7f44,
            None,
        ),
        // Something without a library on its chain and a pc: "other", 35–75 µs (e4–e7).
        (at(35), PID, OTHER, MIB as i64, 2, 0, 0x40_0000, None),
        // Made and freed between e4 (40 µs) and e5 (50 µs): no event sees it.
        (
            at(41),
            PID,
            0x7f50_0000_0000,
            (32 * MIB) as i64,
            2,
            0,
            0x40_0000,
            None,
        ),
        (
            at(42),
            PID,
            0x7f50_0000_0000,
            (32 * MIB) as i64,
            2,
            1,
            0x40_0000,
            None,
        ),
        // A free whose allocation the export never saw.
        (
            at(45),
            PID,
            0x7f60_0000_0000,
            (4 * MIB) as i64,
            2,
            1,
            0,
            None,
        ),
        (at(55), PID, CUDNN, (16 * MIB) as i64, 2, 1, 0x7f33, None),
        (at(58), PID, SEG_B, (40 * MIB) as i64, 2, 1, 0x7f11, None),
        (at(75), PID, OTHER, MIB as i64, 2, 1, 0x40_0000, None),
        // Another process on the same GPU: not the snapshot's.
        (
            at(30),
            OTHER_PID,
            0x7e00_0000_0000,
            (100 * MIB) as i64,
            2,
            0,
            0x7f55,
            None,
        ),
        // Before the capture range (start = 0), pc 0, never freed: library-internal, from
        // the first event.
        (0, PID, INTERNAL, (2 * MIB) as i64, 2, 0, 0, None),
    ]
}

/// Call chains by correlationId: (symbol, module), innermost first.
pub(crate) fn chains() -> Vec<(i64, Vec<(&'static str, &'static str)>)> {
    let rt = ("cudaMalloc", "/usr/local/cuda/lib64/libcudart.so.12");
    vec![
        (
            1,
            vec![
                rt,
                (
                    "c10::cuda::CUDACachingAllocator::malloc",
                    "/torch/lib/libc10_cuda.so",
                ),
            ],
        ),
        (
            2,
            vec![
                rt,
                (
                    "c10::cuda::CUDACachingAllocator::malloc",
                    "/torch/lib/libc10_cuda.so",
                ),
            ],
        ),
        (
            3,
            vec![
                rt,
                ("ncclCommInitRank", "/nccl/lib/libnccl.so.2.21.5"),
                ("init", "/torch/lib/libtorch_cuda.so"),
            ],
        ),
        (
            4,
            vec![
                rt,
                (
                    "cudnnBackendExecute",
                    "/cudnn/lib/libcudnn_engines_precompiled.so.9",
                ),
            ],
        ),
    ]
}

/// How the generated export departs from the documented schema.
#[derive(Clone, Copy, Default)]
pub(crate) struct Variant {
    /// An older export: no `contextId`, no `memKind` (and no host rows, which it could not
    /// tell apart).
    pub(crate) old: bool,
    /// No `TARGET_INFO_SESSION_START_TIME`.
    pub(crate) no_session_start: bool,
    /// The session start a day off (another run's clock).
    pub(crate) day_off: bool,
    /// A row with a negative `bytes`.
    pub(crate) negative_bytes: bool,
}

/// Writes an export per the documented schema (tests/fixtures/nsys/README.md).
pub(crate) fn write_export(path: &Path, v: Variant) {
    write_export_of(path, v, &usage_rows());
}

/// Writes an export of `rows` (with the call chains of [`chains`]).
pub(crate) fn write_export_of(path: &Path, v: Variant, rows: &[Usage]) {
    let c = Connection::open(path).expect("create sqlite");
    let mem_cols = if v.old {
        "start INTEGER NOT NULL, globalPid INTEGER NOT NULL, deviceId INTEGER NOT NULL, address INTEGER NOT NULL, pc INTEGER NOT NULL, bytes INTEGER NOT NULL, memoryOperationType INTEGER NOT NULL, name TEXT, correlationId INTEGER"
    } else {
        "start INTEGER NOT NULL, globalPid INTEGER NOT NULL, deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, address INTEGER NOT NULL, pc INTEGER NOT NULL, bytes INTEGER NOT NULL, memKind INTEGER NOT NULL, memoryOperationType INTEGER NOT NULL, name TEXT, correlationId INTEGER, streamId INTEGER, localMemoryPoolAddress INTEGER, localMemoryPoolReleaseThreshold INTEGER, localMemoryPoolSize INTEGER, localMemoryPoolUtilizedSize INTEGER, importedMemoryPoolAddress INTEGER, importedMemoryPoolProcessId INTEGER"
    };
    c.execute_batch(&format!(
        "CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
         CREATE TABLE CUDA_GPU_MEMORY_USAGE_EVENTS ({mem_cols});
         CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
         CREATE TABLE CUDA_CALLCHAINS (id INTEGER NOT NULL, symbol INTEGER NOT NULL, module INTEGER NOT NULL, unresolved INTEGER, originalIP INTEGER, stackDepth INTEGER NOT NULL, PRIMARY KEY (id, stackDepth));
         CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
         CREATE TABLE ENUM_CUDA_DEV_MEM_EVENT_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
         INSERT INTO ENUM_CUDA_MEM_KIND VALUES (0,'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE','Pageable'),(1,'CUDA_MEMOPR_MEMORY_KIND_PINNED','Pinned'),(2,'CUDA_MEMOPR_MEMORY_KIND_DEVICE','Device'),(3,'CUDA_MEMOPR_MEMORY_KIND_ARRAY','Array'),(4,'CUDA_MEMOPR_MEMORY_KIND_MANAGED','Managed'),(5,'CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC','Device Static'),(6,'CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC','Managed Static'),(7,'CUDA_MEMOPR_MEMORY_KIND_UNKNOWN','Unknown');
         INSERT INTO ENUM_CUDA_DEV_MEM_EVENT_OPER VALUES (0,'CUDA_DEV_MEM_EVENT_OPR_ALLOCATION','Allocation'),(1,'CUDA_DEV_MEM_EVENT_OPR_DEALLOCATION','Deallocation');"
    ))
    .expect("schema");
    if !v.no_session_start {
        c.execute_batch("CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);")
            .expect("session table");
        let start = if v.day_off {
            SESSION_NS + 86_400_000_000_000
        } else {
            SESSION_NS
        };
        c.execute(
            "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (?1, '2026-11-29T10:00:00Z', '')",
            [start],
        )
        .expect("session row");
    }
    let mut strings: Vec<String> = Vec::new();
    let mut sid = |s: &str| -> i64 {
        if let Some(i) = strings.iter().position(|x| x == s) {
            return i as i64 + 1;
        }
        strings.push(s.to_string());
        strings.len() as i64
    };
    for (corr, frames) in chains() {
        let chain_id = 100 + corr;
        c.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (0, 1, 67, ?1, ?2, ?3, 0, ?4)",
            [PID << 24, corr, sid("cudaMalloc"), chain_id],
        )
        .expect("runtime row");
        for (depth, (sym, module)) in frames.iter().enumerate() {
            c.execute(
                "INSERT INTO CUDA_CALLCHAINS VALUES (?1, ?2, ?3, 0, 0, ?4)",
                [chain_id, sid(sym), sid(module), depth as i64],
            )
            .expect("callchain row");
        }
    }
    for (i, s) in strings.iter().enumerate() {
        c.execute(
            "INSERT INTO StringIds VALUES (?1, ?2)",
            rusqlite::params![i as i64 + 1, s],
        )
        .expect("string row");
    }
    for (k, &(start, pid, addr, bytes, kind, op, pc, corr)) in rows.iter().enumerate() {
        if v.old && kind == 1 {
            continue;
        }
        let bytes = if v.negative_bytes && k == 3 {
            -5
        } else {
            bytes
        };
        if v.old {
            c.execute(
                "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS VALUES (?1, ?2, 0, ?3, ?4, ?5, ?6, NULL, ?7)",
                rusqlite::params![start, pid << 24, addr as i64, pc, bytes, op, corr],
            )
            .expect("usage row");
        } else {
            c.execute(
                "INSERT INTO CUDA_GPU_MEMORY_USAGE_EVENTS (start, globalPid, deviceId, contextId, address, pc, bytes, memKind, memoryOperationType, name, correlationId) VALUES (?1, ?2, 0, 1, ?3, ?4, ?5, ?6, ?7, NULL, ?8)",
                rusqlite::params![start, pid << 24, addr as i64, pc, bytes, kind, op, corr],
            )
            .expect("usage row");
        }
    }
}

pub(crate) struct Files {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) snapshot: PathBuf,
}

pub(crate) fn files() -> Files {
    let dir = tempfile::tempdir().expect("tempdir");
    let snapshot = dir.path().join("snap.json");
    std::fs::write(&snapshot, snapshot_json().to_string()).expect("write snapshot");
    Files { dir, snapshot }
}

impl Files {
    pub(crate) fn export(&self, name: &str, v: Variant) -> PathBuf {
        let p = self.dir.path().join(name);
        write_export(&p, v);
        p
    }
}

pub(crate) fn summary_json(args: &[&std::ffi::OsStr]) -> Value {
    let out = memtide()
        .arg("summary")
        .args(args)
        .arg("--json")
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "summary failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("json")
}

/// The hand-computed peak (README): e4, 42 MiB of PyTorch blocks + 83 MiB outside it.
pub(crate) fn assert_the_peak(j: &Value) {
    let peak = &j["peak"];
    assert_eq!(peak["index"], json!(4), "{peak}");
    assert_eq!(peak["bands"]["external"], json!(83 * MIB));
    assert_eq!(peak["bytes"], json!(125 * MIB));
    let by = &peak["external_by_source"];
    assert_eq!(by["nccl"], json!(64 * MIB), "{by}");
    assert_eq!(by["cudnn"], json!(16 * MIB), "{by}");
    assert_eq!(by["library-internal"], json!(2 * MIB), "{by}");
    assert_eq!(by["other"], json!(MIB), "{by}");
    assert_eq!(by.as_object().map(|o| o.len()), Some(4), "{by}");
    // PyTorch's segments are reserved once: 20 + 40 MiB at e4, not counted again.
    assert_eq!(j["reserved_peak"], json!(60 * MIB));
}

#[test]
fn an_export_gives_the_bytes_of_each_library_at_the_peak_and_leaves_pytorch_out() {
    let f = files();
    let e = f.export("run.sqlite", Variant::default());
    let j = summary_json(&[f.snapshot.as_os_str(), "--nsys".as_ref(), e.as_os_str()]);
    assert_the_peak(&j);
    let n = &j["nsys"];
    assert_eq!(n["pid"], json!(PID));
    assert_eq!(n["pytorch_segments"], json!(2), "{n}");
    assert_eq!(n["host"], json!(1), "{n}");
    assert_eq!(n["between_events"], json!(1), "{n}");
    assert_eq!(n["before_capture"], json!(1), "{n}");
    assert_eq!(n["never_freed"], json!(2), "{n}");
    assert_eq!(n["unmatched_frees"], json!(1), "{n}");
    assert_eq!(n["external"], json!(4), "{n}");
    let unseen = n["unseen"].to_string();
    assert!(unseen.contains("CUDA context"), "{unseen}");
}

#[test]
fn an_old_export_without_mem_kind_or_context_reads_the_same() {
    let f = files();
    let e = f.export(
        "old.sqlite",
        Variant {
            old: true,
            ..Default::default()
        },
    );
    let j = summary_json(&[f.snapshot.as_os_str(), "--nsys".as_ref(), e.as_os_str()]);
    assert_the_peak(&j);
    assert!(
        j["warnings"].to_string().contains("without memKind"),
        "{}",
        j["warnings"]
    );
}

#[test]
fn without_a_source_external_is_null_never_zero() {
    let f = files();
    let j = summary_json(&[f.snapshot.as_os_str()]);
    assert_eq!(j["peak"]["bands"]["external"], Value::Null, "{}", j["peak"]);
    assert_eq!(j["peak"]["external_by_source"], Value::Null);
    assert_eq!(j["peak"]["bytes"], json!(42 * MIB));
}

/// Runs `summary --nsys export` and returns stderr, asserting exit 2.
pub(crate) fn refused(f: &Files, export: &Path) -> String {
    let out = memtide()
        .arg("summary")
        .arg(&f.snapshot)
        .arg("--nsys")
        .arg(export)
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(2),
        "stdout {}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bad_exports_are_refused_naming_the_table_or_row() {
    let f = files();
    // Another schema: a database without the usage table.
    let other = f.dir.path().join("other.sqlite");
    Connection::open(&other)
        .and_then(|c| c.execute_batch("CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);"))
        .expect("other schema");
    let e = refused(&f, &other);
    assert!(e.contains("no table CUDA_GPU_MEMORY_USAGE_EVENTS"), "{e}");
    // A truncated export.
    let whole = f.export("whole.sqlite", Variant::default());
    let bytes = std::fs::read(&whole).expect("read");
    let cut = f.dir.path().join("cut.sqlite");
    std::fs::write(&cut, &bytes[..bytes.len() / 2 + 100]).expect("write");
    let e = refused(&f, &cut);
    assert!(e.contains("truncated") && e.contains("cut.sqlite"), "{e}");
    // A clock that cannot be aligned: no session start, or another day's.
    let e = refused(
        &f,
        &f.export(
            "nostart.sqlite",
            Variant {
                no_session_start: true,
                ..Default::default()
            },
        ),
    );
    assert!(e.contains("TARGET_INFO_SESSION_START_TIME"), "{e}");
    let e = refused(
        &f,
        &f.export(
            "dayoff.sqlite",
            Variant {
                day_off: true,
                ..Default::default()
            },
        ),
    );
    assert!(
        e.contains("do not overlap") && e.contains("cannot be aligned"),
        "{e}"
    );
    // A bad row.
    let e = refused(
        &f,
        &f.export(
            "neg.sqlite",
            Variant {
                negative_bytes: true,
                ..Default::default()
            },
        ),
    );
    assert!(
        e.contains("CUDA_GPU_MEMORY_USAGE_EVENTS row 4: column bytes is -5"),
        "{e}"
    );
    // A size no device holds (a damaged row), and a session start at the end of time (the
    // clock is said to be the problem, not the choice of process).
    let huge = f.export("huge.sqlite", Variant::default());
    Connection::open(&huge)
        .and_then(|c| {
            c.execute_batch(
                "UPDATE CUDA_GPU_MEMORY_USAGE_EVENTS SET bytes = 9223372036854775807 WHERE rowid = 3;",
            )
        })
        .expect("huge");
    let e = refused(&f, &huge);
    assert!(
        e.contains("row 3: column bytes is 9223372036854775807: more than any device holds"),
        "{e}"
    );
    let late = f.export("late.sqlite", Variant::default());
    Connection::open(&late)
        .and_then(|c| {
            c.execute_batch(
                "UPDATE TARGET_INFO_SESSION_START_TIME SET utcEpochNs = 9223372036854775807;",
            )
        })
        .expect("late");
    let e = refused(&f, &late);
    assert!(e.contains("cannot be aligned"), "{e}");
    // The export where the trace belongs.
    let out = memtide().arg("summary").arg(&whole).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--nsys"));
}

#[test]
fn diff_plot_markdown_and_text_say_unavailable_or_give_the_sources() {
    let f = files();
    let e = f.export("run.sqlite", Variant::default());
    // diff of the same snapshot without and with the export: A's external is unknown.
    let out = memtide()
        .args(["diff", "--json"])
        .arg(&f.snapshot)
        .arg(&f.snapshot)
        .arg("--nsys")
        .arg(&e)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: Value = serde_json::from_slice(&out.stdout).expect("json");
    // `--nsys` applies to both inputs of a diff: both know their external memory.
    assert_eq!(j["a"]["peak"]["bands"]["external"], json!(83 * MIB), "{j}");
    assert_eq!(j["band_delta_at_peaks"]["external"], json!(0));
    assert_eq!(
        j["b"]["peak"]["external_by_source"],
        json!({"nccl": 64 * MIB, "cudnn": 16 * MIB, "library-internal": 2 * MIB, "other": MIB}),
        "{j}"
    );
    let out = memtide()
        .args(["diff"])
        .arg(&f.snapshot)
        .arg(&f.snapshot)
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().any(
            |l| l.trim_start().starts_with("external") && l.matches("unavailable").count() == 3
        ),
        "{text}"
    );
    let out = memtide()
        .args(["diff", "--json"])
        .arg(&f.snapshot)
        .arg(&f.snapshot)
        .output()
        .expect("run");
    let j: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(j["a"]["peak"]["bands"]["external"], Value::Null);
    assert_eq!(j["band_delta_at_peaks"]["external"], Value::Null);
    assert_eq!(j["a"]["peak"]["external_by_source"], Value::Null);
    // Text and Markdown summaries list the sources under the external band.
    let out = memtide()
        .arg("summary")
        .arg(&f.snapshot)
        .arg("--nsys")
        .arg(&e)
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["nccl", "64.00", "MiB"]),
        "{text}"
    );
    assert!(
        text.contains("nsys             external from run.sqlite (pid 4242, device 0)"),
        "{text}"
    );
    let out = memtide()
        .arg("summary")
        .arg("--markdown")
        .arg(&f.snapshot)
        .arg("--nsys")
        .arg(&e)
        .output()
        .expect("run");
    let md = String::from_utf8_lossy(&out.stdout);
    assert!(md.contains("| &nbsp;&nbsp;cudnn | 16.00 MiB | |"), "{md}");
    let out = memtide()
        .arg("summary")
        .arg("--markdown")
        .arg(&f.snapshot)
        .output()
        .expect("run");
    assert!(String::from_utf8_lossy(&out.stdout).contains("| external | unavailable | - |"));
    // The plot draws no external band without a source, and says so.
    let svg = f.dir.path().join("p.svg");
    let out = memtide()
        .arg("plot")
        .arg(&f.snapshot)
        .arg("-o")
        .arg(&svg)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = std::fs::read_to_string(&svg).expect("svg");
    assert!(
        s.contains("id=\"external-note\"") && !s.contains(">external</text>"),
        "{s}"
    );
    let out = memtide()
        .arg("plot")
        .arg(&f.snapshot)
        .arg("--nsys")
        .arg(&e)
        .arg("-o")
        .arg(&svg)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = std::fs::read_to_string(&svg).expect("svg");
    assert!(
        !s.contains("external-note") && s.contains(">external</text>"),
        "{s}"
    );
}

/// The explorer opened on the snapshot with the export, at the peak (`p`).
fn explorer_at_peak(f: &Files, export: &Path) -> memtide::tui::testing::Harness {
    let opts = memtide_core::open::OpenOptions {
        read: memtide_core::formats::LoadOptions {
            nsys: Some(export.to_path_buf()),
            ..Default::default()
        },
        ..Default::default()
    };
    let app = memtide::tui::app::App::new(
        f.snapshot.clone(),
        opts,
        memtide::tui::theme::Theme::default(),
        false,
    );
    let mut h = memtide::tui::testing::Harness::with_app(app, 140, 36);
    h.press("p");
    h
}

#[test]
fn the_explorer_stacks_one_sub_band_per_source_with_its_legend() {
    let f = files();
    let e = f.export("run.sqlite", Variant::default());
    let h = explorer_at_peak(&f, &e);
    let s = h.screen();
    // The cursor row names each source at the peak (#4): the figures of the README.
    let cursor = s.lines().nth(1).unwrap_or_default();
    assert!(
        cursor.contains(
            "█ext 83.0Mi (█nccl 64.0Mi █cudnn 16.0Mi █library-internal 2.0Mi █other 1.0Mi)"
        ),
        "{s}"
    );
    // The timeline paints the sources in their own colours: cuDNN's (the second source)
    // appears in the plot, apart from the external band's own colour (nccl, the first).
    let th = memtide::tui::theme::Theme::default();
    let ext = th.band(memtide_core::trace::Band::External).fg;
    let cudnn = th.fill(memtide::tui::theme::Fill::Source(1)).fg;
    assert_ne!(ext, cudnn);
    let term = h.terminal();
    let buf = term.backend().buffer();
    let plot = h.explorer().layout(140, 36).plot;
    let mut seen = (0, 0);
    for y in plot.y..plot.bottom() {
        for x in plot.x..plot.right() {
            let c = &buf[(x, y)];
            if c.fg == cudnn.unwrap_or_default() || c.bg == cudnn.unwrap_or_default() {
                seen.0 += 1;
            }
            if c.fg == ext.unwrap_or_default() {
                seen.1 += 1;
            }
        }
    }
    assert!(
        seen.0 > 0 && seen.1 > 0,
        "cudnn cells {} nccl cells {}\n{s}",
        seen.0,
        seen.1
    );
}

#[test]
fn the_inspector_names_an_external_allocation_its_library_and_call_chain() {
    let f = files();
    let e = f.export("run.sqlite", Variant::default());
    let mut h = explorer_at_peak(&f, &e);
    // The biggest live storage at the peak is NCCL's 64 MiB: inspect it.
    h.press("<Enter>");
    let s = h.screen();
    assert!(s.contains("outside the framework: nccl"), "{s}");
    assert!(s.contains("device memory of pid 4242"), "{s}");
    assert!(s.contains("freed never (within the capture)"), "{s}");
    assert!(s.contains("libnccl"), "{s}");
}

#[test]
fn an_oom_names_the_sources_outside_the_allocator_and_allocated_leaves_them_out() {
    // The snapshot with an OOM at e9 (90 µs after T0): 100 MiB asked, 10 MiB free on the
    // driver, a 200 MiB card. Live then (README's table): PyTorch 12 MiB in segment A (20
    // MiB reserved); outside it NCCL's 64 MiB (never freed) and the 2 MiB made before the
    // capture; cuDNN's (freed at 55 µs) and OTHER (75 µs) are gone.
    let f = files();
    let mut snap = snapshot_json();
    let frames = json!([{"filename": "train.py", "line": 10, "name": "step"}]);
    if let Some(t) = snap["device_traces"][0].as_array_mut() {
        t.push(
            json!({"action": "oom", "addr": 0, "size": 100 * MIB, "stream": 0,
                      "device_free": 10 * MIB, "time_us": T0_US + 90, "frames": frames}),
        );
    }
    let oom_snap = f.dir.path().join("oom.json");
    std::fs::write(&oom_snap, snap.to_string()).expect("write");
    let e = f.export("run.sqlite", Variant::default());
    let j = summary_json(&[
        oom_snap.as_os_str(),
        "--nsys".as_ref(),
        e.as_os_str(),
        "--capacity".as_ref(),
        "200MiB".as_ref(),
    ]);
    let o = &j["ooms"][0];
    assert_eq!(o["allocated"], json!(12 * MIB), "{o}");
    assert_eq!(o["reserved"], json!(20 * MIB), "{o}");
    assert_eq!(o["outside_allocator"], json!(170 * MIB), "{o}");
    assert_eq!(
        o["outside_by_source"],
        json!({"nccl": 64 * MIB, "library-internal": 2 * MIB}),
        "{o}"
    );
    // Without a source: null, not {}.
    let j = summary_json(&[oom_snap.as_os_str()]);
    assert_eq!(j["ooms"][0]["outside_by_source"], Value::Null);
    let out = memtide()
        .arg("summary")
        .arg(&oom_snap)
        .arg("--nsys")
        .arg(&e)
        .args(["--capacity", "200MiB"])
        .output()
        .expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("170.0 MiB (sources: nccl 64.00 MiB, library-internal 2.000 MiB)"),
        "{text}"
    );
}

#[test]
fn without_a_source_the_explorer_says_external_unavailable_never_0() {
    let f = files();
    let mut h = memtide::tui::testing::Harness::open(&f.snapshot, 140, 36);
    h.press("pg");
    let s = h.screen();
    assert!(
        s.lines()
            .next()
            .unwrap_or_default()
            .contains("external unavailable"),
        "{s}"
    );
    // The live pane by band: the framework's bands, then external as unavailable.
    assert!(
        s.lines().any(
            |l| l.split_whitespace().take(2).collect::<Vec<_>>() == ["unavailable", "external"]
        ),
        "{s}"
    );
    assert!(!s.contains("█ext"), "{s}");
}

#[test]
fn the_plot_draws_each_source_at_the_peak_with_its_bytes() {
    let f = files();
    let e = f.export("run.sqlite", Variant::default());
    let svg = f.dir.path().join("p.svg");
    let out = memtide()
        .arg("plot")
        .arg(&f.snapshot)
        .arg("--nsys")
        .arg(&e)
        .arg("-o")
        .arg(&svg)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s = std::fs::read_to_string(&svg).expect("svg");
    // The peak column's rectangles: each source's height in px, against the external band's.
    let peak = s
        .split("<g id=\"peak-column\"")
        .nth(1)
        .and_then(|r| r.split("</g>").next())
        .unwrap_or_default();
    let height = |attr: &str| -> f64 {
        peak.split("<rect ")
            .find(|r| r.starts_with(attr))
            .and_then(|r| r.split("height=\"").nth(1))
            .and_then(|h| h.split('"').next())
            .and_then(|h| h.parse().ok())
            .unwrap_or(f64::NAN)
    };
    let ext = height("data-band=\"external\"");
    let px_per_mib = ext / 83.0;
    for (src, mib) in [
        ("nccl", 64.0),
        ("cudnn", 16.0),
        ("library-internal", 2.0),
        ("other", 1.0),
    ] {
        let h = height(&format!("data-source=\"{src}\""));
        assert!(
            (h - mib * px_per_mib).abs() < 0.05,
            "{src}: {h} px, want {} px\n{peak}",
            mib * px_per_mib
        );
    }
    for src in ["nccl", "cudnn", "library-internal", "other"] {
        assert!(
            s.contains(&format!("class=\"source\" data-source=\"{src}\"")),
            "{s}"
        );
        assert!(s.contains(&format!(">{src}</text>")), "legend: {s}");
    }
}

/// A recording as `memtide_record` writes it on CUDA: reserved 100 MiB, 40 MiB allocated,
/// then samples of the process's own NVML used memory with NCCL's bytes named.
fn recorded(dir: &Path, sample2: &str) -> PathBuf {
    let p = dir.join("rec.jsonl");
    let lines = [
        r#"{"memtide":1,"device":"cuda:0","clock":"us","meta":{"external_sources":{"process":"ok","nccl":"ok (1 communicator(s))"}}}"#.to_string(),
        format!(r#"{{"t":1,"op":"reserve","id":1,"size":{}}}"#, 100 * MIB),
        format!(r#"{{"t":2,"op":"alloc","id":2,"size":{},"cat":"activation"}}"#, 40 * MIB),
        // used 700 MiB: external 600 = nccl 256 + unattributed 344 (the CUDA context, ...).
        format!(
            r#"{{"t":3,"op":"sample","used":{},"scope":"process","sources":{{"nccl":{}}},"host_pinned":{}}}"#,
            700 * MIB,
            256 * MIB,
            8 * MIB
        ),
        r#"{"t":4,"op":"free","id":2}"#.to_string(),
        sample2.to_string(),
    ];
    std::fs::write(&p, lines.join("\n") + "\n").expect("write");
    p
}

#[test]
fn recorder_samples_split_external_into_named_sources_and_unattributed() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The second sample has no NCCL figure (its source failed then): all unattributed.
    let p = recorded(
        dir.path(),
        &format!(
            r#"{{"t":5,"op":"sample","used":{},"scope":"process"}}"#,
            650 * MIB
        ),
    );
    let j = summary_json(&[p.as_os_str()]);
    let peak = &j["peak"];
    // The peak is at the first sample (#3): 40 allocated + 600 external.
    assert_eq!(peak["bytes"], json!(640 * MIB), "{peak}");
    assert_eq!(peak["bands"]["external"], json!(600 * MIB));
    assert_eq!(
        peak["external_by_source"],
        json!({"unattributed": 344 * MIB, "nccl": 256 * MIB}),
        "{peak}"
    );
    // The final state: 550 MiB external, none named.
    assert_eq!(j["final_bytes"], json!(550 * MIB));
    // A sample naming more than used − reserved is clipped, with a warning.
    let p = recorded(
        dir.path(),
        &format!(
            r#"{{"t":5,"op":"sample","used":{},"sources":{{"nccl":{}}}}}"#,
            150 * MIB,
            MIB * 80
        ),
    );
    let j = summary_json(&[p.as_os_str()]);
    assert_eq!(j["final_bytes"], json!(50 * MIB), "{j}");
    assert!(
        j["warnings"].to_string().contains("line 6"),
        "{}",
        j["warnings"]
    );
    // A bad sources object is an error naming the line (exit 2).
    let p = recorded(
        dir.path(),
        r#"{"t":5,"op":"sample","used":1,"sources":{"nccl":-4}}"#,
    );
    let out = memtide().arg("summary").arg(&p).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(e.contains("line 6") && e.contains("\"sources\""), "{e}");
}
