//! The parts of an Nsight Systems SQLite export (`nsys export --type sqlite`) the reader
//! relies on, checked before any row is read: the file is a whole SQLite database, the
//! tables exist, the columns are there (older exports lack `contextId` and `memKind`), and
//! the enum tables' numbers.
//!
//! Where each is documented (NVIDIA Nsight Systems User Guide, "SQLite Schema Reference",
//! <https://docs.nvidia.com/nsight-systems/UserGuide/index.html#sqlite-schema-reference>;
//! older releases: "SQLite Export Schema Reference",
//! <https://docs.nvidia.com/nsight-systems/2022.1/nsys-exporter/exported_data.html>):
//!
//! - `CUDA_GPU_MEMORY_USAGE_EVENTS`: `start` (ns from the session start), `globalPid`
//!   (serialized GlobalId: the pid is bits 24–47), `deviceId`, `contextId`, `address`, `pc`
//!   (program counter of the call), `bytes`, `memKind` (→ `ENUM_CUDA_MEM_KIND`),
//!   `memoryOperationType` (→ `ENUM_CUDA_DEV_MEM_EVENT_OPER`), `name`, `correlationId`
//!   (→ `CUPTI_ACTIVITY_KIND_RUNTIME.correlationId`), `localMemoryPoolAddress`,
//!   `localMemoryPoolSize`, `localMemoryPoolUtilizedSize`.
//! - `CUDA_GPU_MEMORY_POOL_EVENTS`: `start`, `globalPid`, `deviceId`, `address` (the pool's
//!   base), `operationType` (→ `ENUM_CUDA_MEMPOOL_OPER`), `localMemoryPoolSize`,
//!   `localMemoryPoolUtilizedSize`.
//! - `CUPTI_ACTIVITY_KIND_RUNTIME`: `correlationId`, `callchainId` (→ `CUDA_CALLCHAINS.id`).
//! - `CUDA_CALLCHAINS`: `id`, `symbol` and `module` (→ `StringIds.id`), `stackDepth` (0 is
//!   the innermost frame).
//! - `StringIds`: `id`, `value`.
//! - `TARGET_INFO_SESSION_START_TIME`: `utcEpochNs`, UTC ns since the epoch at the start of
//!   the capture: every `start` is relative to it.
//! - `ENUM_CUDA_MEM_KIND` (`id`, `name`, `label`): 0 `CUDA_MEMOPR_MEMORY_KIND_PAGEABLE`,
//!   1 `…_PINNED`, 2 `…_DEVICE`, 3 `…_ARRAY`, 4 `…_MANAGED`, 5 `…_DEVICE_STATIC`,
//!   6 `…_MANAGED_STATIC`, 7 `…_UNKNOWN`.
//! - `ENUM_CUDA_DEV_MEM_EVENT_OPER` (`id`, `name`, `label`): 0
//!   `CUDA_DEV_MEM_EVENT_OPR_ALLOCATION`, 1 `CUDA_DEV_MEM_EVENT_OPR_DEALLOCATION`.
//!
//! The enum tables travel in the export; their names are read when present and the
//! documented numbers used when not.

use super::open::Db;
use crate::formats::FormatError;
use std::collections::HashMap;

/// The memory usage table the reader needs.
pub(crate) const USAGE: &str = "CUDA_GPU_MEMORY_USAGE_EVENTS";
/// The pool table (cudaMallocAsync pools), optional.
pub(crate) const POOLS: &str = "CUDA_GPU_MEMORY_POOL_EVENTS";
/// The session's start time.
pub(crate) const SESSION_START: &str = "TARGET_INFO_SESSION_START_TIME";

/// Columns of `CUDA_GPU_MEMORY_USAGE_EVENTS` without which no row can be read.
pub(crate) const USAGE_REQUIRED: [&str; 6] = [
    "start",
    "globalPid",
    "deviceId",
    "address",
    "bytes",
    "memoryOperationType",
];

/// The kind of memory of one event (`ENUM_CUDA_MEM_KIND`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum MemKind {
    Pageable,
    Pinned,
    Device,
    Array,
    Managed,
    DeviceStatic,
    ManagedStatic,
    Unknown,
    /// The export has no `memKind` column (older Nsight Systems).
    NotRecorded,
}

impl MemKind {
    /// The documented number → kind (used when `ENUM_CUDA_MEM_KIND` is absent).
    pub fn from_documented(id: i64) -> MemKind {
        match id {
            0 => MemKind::Pageable,
            1 => MemKind::Pinned,
            2 => MemKind::Device,
            3 => MemKind::Array,
            4 => MemKind::Managed,
            5 => MemKind::DeviceStatic,
            6 => MemKind::ManagedStatic,
            _ => MemKind::Unknown,
        }
    }

    /// `CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC` → DeviceStatic (the enum table's `name`).
    pub fn from_name(name: &str) -> MemKind {
        let n = name.to_ascii_uppercase();
        if n.contains("DEVICE_STATIC") {
            MemKind::DeviceStatic
        } else if n.contains("MANAGED_STATIC") {
            MemKind::ManagedStatic
        } else if n.contains("DEVICE") {
            MemKind::Device
        } else if n.contains("ARRAY") {
            MemKind::Array
        } else if n.contains("MANAGED") {
            MemKind::Managed
        } else if n.contains("PINNED") {
            MemKind::Pinned
        } else if n.contains("PAGEABLE") {
            MemKind::Pageable
        } else {
            MemKind::Unknown
        }
    }

    /// Whether the bytes live in host memory (not counted on a device).
    pub fn is_host(self) -> bool {
        matches!(self, MemKind::Pageable | MemKind::Pinned)
    }

    /// Whether the driver decides where the bytes live (unified memory).
    pub fn is_managed(self) -> bool {
        matches!(self, MemKind::Managed | MemKind::ManagedStatic)
    }

    pub fn name(self) -> &'static str {
        match self {
            MemKind::Pageable => "pageable",
            MemKind::Pinned => "pinned",
            MemKind::Device => "device",
            MemKind::Array => "array",
            MemKind::Managed => "managed",
            MemKind::DeviceStatic => "device static",
            MemKind::ManagedStatic => "managed static",
            MemKind::Unknown => "unknown kind",
            MemKind::NotRecorded => "kind not recorded",
        }
    }
}

/// Allocation or deallocation (`ENUM_CUDA_DEV_MEM_EVENT_OPER`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Oper {
    Alloc,
    Free,
}

/// What the reader found in the file before reading rows.
#[derive(Debug, Default)]
pub(crate) struct Shape {
    pub usage_columns: Vec<String>,
    /// `WITHOUT ROWID` tables: rows named by their ordinal, not a rowid.
    pub usage_without_rowid: bool,
    pub pool_columns: Option<Vec<String>>,
    pub pool_without_rowid: bool,
    pub has_runtime_callchains: bool,
    pub has_callchains: bool,
    pub has_strings: bool,
    pub mem_kinds: HashMap<i64, MemKind>,
    pub opers: HashMap<i64, Oper>,
}

impl Shape {
    pub fn has(&self, col: &str) -> bool {
        self.usage_columns.iter().any(|c| c == col)
    }
    pub fn pool_has(&self, col: &str) -> bool {
        self.pool_columns
            .as_ref()
            .is_some_and(|v| v.iter().any(|c| c == col))
    }
}

/// Checks the 100-byte SQLite header against the file's length: a file cut short (a copy
/// that stopped, a disk that filled) is refused with both sizes, before SQLite reads pages
/// that are not there.
pub(crate) fn check_header(bytes: &[u8], file_len: u64) -> Result<(), String> {
    const MAGIC: &[u8] = b"SQLite format 3\0";
    if bytes.len() < 100 || &bytes[..16] != MAGIC {
        return Err(if bytes.len() < 16 || &bytes[..16] != MAGIC {
            "not an SQLite database (it does not start with \"SQLite format 3\"): expected an Nsight Systems export made by `nsys export --type sqlite`".into()
        } else {
            format!("truncated: {file_len} bytes, shorter than SQLite's 100-byte header")
        });
    }
    let page = u16::from_be_bytes([bytes[16], bytes[17]]);
    let page_size: u64 = if page == 1 { 65_536 } else { u64::from(page) };
    let pages = u64::from(u32::from_be_bytes([
        bytes[28], bytes[29], bytes[30], bytes[31],
    ]));
    // The header's page count is valid only when its change counter matches (SQLite's rule).
    let valid = bytes[24..28] == bytes[92..96];
    if !page_size.is_power_of_two() || page_size < 512 {
        return Err(format!(
            "byte offset 16: page size {page_size} is not a power of two from 512 to 65536: not an SQLite database or a damaged one"
        ));
    }
    let want = pages.saturating_mul(page_size);
    if valid && pages > 0 && want > file_len {
        return Err(format!(
            "truncated: the header says {pages} pages of {page_size} B ({want} B), the file has {file_len} B"
        ));
    }
    if !file_len.is_multiple_of(page_size) {
        return Err(format!(
            "truncated: {file_len} B is not a whole number of {page_size}-byte pages"
        ));
    }
    Ok(())
}

/// An enum table's `id → name` (None when the table is absent).
pub(crate) fn enum_names(db: &Db, table: &str) -> Result<Option<Vec<(i64, String)>>, FormatError> {
    let Some(t) = db.table(table)? else {
        return Ok(None);
    };
    let name_col = if t.columns.iter().any(|c| c == "name") {
        "name"
    } else if t.columns.iter().any(|c| c == "label") {
        "label"
    } else {
        return Ok(None);
    };
    let mut v = Vec::new();
    db.scan(
        table,
        &format!("SELECT id, {name_col} FROM {table}"),
        [],
        |r, n| {
            let id = r.get::<_, i64>(0).map_err(|e| {
                db.side(format!(
                    "{table} row {n}: column id: expected an integer ({e})"
                ))
            })?;
            if let Ok(Some(name)) = r.get::<_, Option<String>>(1) {
                db.keep_text(table, name.len())?;
                v.push((id, name));
            }
            Ok(())
        },
    )?;
    Ok(Some(v))
}

/// `ENUM_CUDA_MEM_KIND` as read, else the documented numbers.
pub(crate) fn mem_kinds(db: &Db) -> Result<HashMap<i64, MemKind>, FormatError> {
    Ok(match enum_names(db, "ENUM_CUDA_MEM_KIND")? {
        Some(v) if !v.is_empty() => v
            .into_iter()
            .map(|(id, n)| (id, MemKind::from_name(&n)))
            .collect(),
        _ => (0..8).map(|i| (i, MemKind::from_documented(i))).collect(),
    })
}

/// `ENUM_CUDA_DEV_MEM_EVENT_OPER` as read, else the documented numbers.
pub(crate) fn opers(db: &Db) -> Result<HashMap<i64, Oper>, FormatError> {
    let documented = || HashMap::from([(0, Oper::Alloc), (1, Oper::Free)]);
    Ok(match enum_names(db, "ENUM_CUDA_DEV_MEM_EVENT_OPER")? {
        Some(v) if !v.is_empty() => {
            let m: HashMap<i64, Oper> = v
                .into_iter()
                .filter_map(|(id, n)| {
                    let n = n.to_ascii_uppercase();
                    if n.contains("DEALLOC") {
                        Some((id, Oper::Free))
                    } else if n.contains("ALLOC") {
                        Some((id, Oper::Alloc))
                    } else {
                        None
                    }
                })
                .collect();
            if m.is_empty() {
                documented()
            } else {
                m
            }
        }
        _ => documented(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_by_name_and_number_agree() {
        let names = [
            "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE",
            "CUDA_MEMOPR_MEMORY_KIND_PINNED",
            "CUDA_MEMOPR_MEMORY_KIND_DEVICE",
            "CUDA_MEMOPR_MEMORY_KIND_ARRAY",
            "CUDA_MEMOPR_MEMORY_KIND_MANAGED",
            "CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC",
            "CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC",
            "CUDA_MEMOPR_MEMORY_KIND_UNKNOWN",
        ];
        for (i, n) in names.iter().enumerate() {
            assert_eq!(
                MemKind::from_name(n),
                MemKind::from_documented(i as i64),
                "{n}"
            );
        }
    }

    #[test]
    fn header_checks_name_the_sizes() {
        let mut h = vec![0u8; 100];
        h[..16].copy_from_slice(b"SQLite format 3\0");
        h[16..18].copy_from_slice(&4096u16.to_be_bytes());
        h[28..32].copy_from_slice(&3u32.to_be_bytes());
        assert!(check_header(&h, 3 * 4096).is_ok());
        let e = check_header(&h, 2 * 4096).expect_err("short");
        assert!(
            e.contains("3 pages of 4096 B (12288 B), the file has 8192 B"),
            "{e}"
        );
        let e = check_header(b"PK\x03\x04 not sqlite at all ...", 30).expect_err("zip");
        assert!(e.contains("not an SQLite database"), "{e}");
    }
}
