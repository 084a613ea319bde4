//! Opening an Nsight Systems export as data only: immutable and read-only through a URI memtide
//! builds itself (nothing created, changed or read beside the file: no `-wal`, `-shm` or
//! journal; a path that starts `file:` is a file name), the schema untrusted (views and
//! triggers disabled, the tables read checked to be ordinary tables), temporary storage in
//! memory under a heap limit, and a progress handler that stops any query on cancel or past a
//! budget of steps proportional to the file's size.

use crate::formats::{FormatError, Progress};
use rusqlite::config::DbConfig;
use rusqlite::limits::Limit;
use rusqlite::{Connection, OpenFlags, Row};
use std::cell::Cell;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// SQLite virtual-machine steps between two calls of the progress handler.
const STEPS_PER_CALL: u64 = 1000;
/// Steps any export may take, however small (the schema, the enum tables, the pragmas).
pub(crate) const BASE_STEPS: u64 = 50_000_000;
/// Steps per byte of the file on top of [`BASE_STEPS`]: reading every table of an export once
/// takes a few steps per byte (a row costs about one step per column read, and no row is
/// smaller than a few bytes), so this allows over ten times that.
pub(crate) const STEPS_PER_BYTE: u64 = 64;
/// SQLite's heap (all of this process's SQLite: memtide opens no other database). Reading
/// needs the page cache and one row at a time; a query that would spill gigabytes to a
/// temporary file fails here instead, in memory.
pub(crate) const HEAP_LIMIT: i64 = 512 << 20;
/// The longest string or blob a value may be (a symbol name is far shorter).
const MAX_VALUE: i32 = 16 << 20;

/// Bytes of text kept from an export however small it is (names, frames).
pub(crate) const BASE_TEXT: u64 = 64 << 20;
/// Bytes of text kept per byte of the file on top of [`BASE_TEXT`]: a string is kept once
/// per row that stores it, and a frame `symbol (module)` once per chain that names it, so a
/// real export keeps less text than its size; only a value a column default gives every row
/// (stored once, read once per row) or a long symbol named by every frame of a chain comes
/// near this.
pub(crate) const TEXT_PER_BYTE: u64 = 32;

/// The steps allowed for a file of `file_len` bytes.
pub(crate) fn budget_for(file_len: u64) -> u64 {
    BASE_STEPS.saturating_add(file_len.saturating_mul(STEPS_PER_BYTE))
}

/// An open export: the connection, the budget and what reading it has cost so far.
pub(crate) struct Db {
    c: Connection,
    path: PathBuf,
    file_len: u64,
    progress: Progress,
    /// Calls of the progress handler (each after [`STEPS_PER_CALL`] steps).
    calls: Arc<AtomicU64>,
    budget: u64,
    /// Rows fetched by every query.
    fetched: Cell<u64>,
    /// Bytes of text kept so far, and the most allowed ([`BASE_TEXT`], [`TEXT_PER_BYTE`]).
    text: Cell<u64>,
    text_budget: u64,
}

/// What kind of schema object a name is (`PRAGMA table_list`).
#[derive(Debug)]
pub(crate) struct Table {
    /// Its columns that hold data (stored ones; generated columns computed on each read
    /// are refused).
    pub columns: Vec<String>,
    /// `WITHOUT ROWID`: no `rowid` to name its rows by.
    pub without_rowid: bool,
}

/// `file:` + the absolute path, percent-encoded, + `?mode=ro&immutable=1`: the file is
/// read as it is on disk, never locked, journalled or written, and whatever its name says
/// it is never taken as a URI of its own.
pub(crate) fn uri_of(path: &Path) -> std::io::Result<String> {
    let abs = std::path::absolute(path)?;
    let mut s = String::from("file:");
    let bytes = abs.as_os_str().as_encoded_bytes();
    if !matches!(bytes.first(), Some(b'/' | b'\\')) {
        s.push('/');
    }
    for &b in bytes {
        let b = if cfg!(windows) && b == b'\\' { b'/' } else { b };
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            s.push(char::from(b));
        } else {
            let _ = write!(s, "%{b:02X}");
        }
    }
    s.push_str("?mode=ro&immutable=1");
    Ok(s)
}

impl Db {
    /// Opens `path` (`file_len` bytes) with at most `budget` steps for all its queries.
    pub fn open(
        path: &Path,
        file_len: u64,
        progress: &Progress,
        budget: u64,
    ) -> Result<Db, FormatError> {
        let uri = uri_of(path).map_err(|e| super::side(path, e.to_string()))?;
        let c = Connection::open_with_flags(
            &uri,
            OpenFlags::SQLITE_OPEN_READ_ONLY
                | OpenFlags::SQLITE_OPEN_URI
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| super::side(path, format!("cannot open as SQLite: {e}")))?;
        let calls = Arc::new(AtomicU64::new(0));
        let db = Db {
            c,
            path: path.to_path_buf(),
            file_len,
            progress: progress.clone(),
            calls: calls.clone(),
            budget,
            fetched: Cell::new(0),
            text: Cell::new(0),
            text_budget: BASE_TEXT.saturating_add(file_len.saturating_mul(TEXT_PER_BYTE)),
        };
        db.harden()
            .map_err(|e| super::side(path, format!("cannot open as data only: {e}")))?;
        let cancel = progress.cancel.clone();
        let most_calls = budget / STEPS_PER_CALL + 1;
        db.c.progress_handler(
            STEPS_PER_CALL as i32,
            Some(move || {
                let n = calls.fetch_add(1, Ordering::Relaxed) + 1;
                cancel.load(Ordering::Relaxed) || n > most_calls
            }),
        )
        .map_err(|e| super::side(path, format!("cannot open as data only: {e}")))?;
        Ok(db)
    }

    /// Nothing in the file runs: no view, trigger or untrusted function; nothing written
    /// (the file is immutable and read-only anyway); no attached database; temporary
    /// storage in memory under [`HEAP_LIMIT`]; no value over [`MAX_VALUE`] bytes.
    fn harden(&self) -> Result<(), rusqlite::Error> {
        let c = &self.c;
        c.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)?;
        c.set_db_config(DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false)?;
        c.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_VIEW, false)?;
        c.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_TRIGGER, false)?;
        c.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 0)?;
        c.set_limit(Limit::SQLITE_LIMIT_LENGTH, MAX_VALUE)?;
        // `hard_heap_limit` only ever lowers SQLite's limit (never raises one set lower).
        c.execute_batch(&format!(
            "PRAGMA query_only = ON; PRAGMA trusted_schema = OFF; PRAGMA temp_store = MEMORY;
             PRAGMA cell_size_check = ON; PRAGMA hard_heap_limit = {HEAP_LIMIT};"
        ))
    }

    #[cfg(test)]
    pub fn connection(&self) -> &Connection {
        &self.c
    }

    /// Rows fetched by every query so far.
    pub fn fetched(&self) -> u64 {
        self.fetched.get()
    }

    /// Steps taken so far (to within [`STEPS_PER_CALL`]).
    pub fn steps(&self) -> u64 {
        self.calls
            .load(Ordering::Relaxed)
            .saturating_mul(STEPS_PER_CALL)
    }

    /// Counts `bytes` of text kept from the export (`what`: where they come from), refusing
    /// past the text budget.
    pub fn keep_text(&self, what: &str, bytes: usize) -> Result<(), FormatError> {
        let kept = self.text.get().saturating_add(bytes as u64);
        self.text.set(kept);
        if kept > self.text_budget {
            return Err(self.side(format!(
                "{what}: the export's names and call chains come to more than {} bytes of text for a file of {} bytes: refusing (at most {} + {} per byte; a value that a column default repeats in every row, or a long string named by every frame of a chain)",
                self.text_budget, self.file_len, BASE_TEXT, TEXT_PER_BYTE
            )));
        }
        Ok(())
    }

    /// `Nsight Systems export FILE: reason`.
    pub fn side(&self, reason: impl Into<String>) -> FormatError {
        super::side(&self.path, reason)
    }

    /// An SQLite error as the user should read it: cancelled, the budget spent, or
    /// `what: SQLite's words`.
    pub fn fail(&self, what: &str, e: &rusqlite::Error) -> FormatError {
        if self.progress.is_cancelled() {
            return FormatError::Cancelled;
        }
        if self.steps() > self.budget {
            return self.side(format!(
                "the export's queries did more than {} steps for a file of {} bytes: refusing (at most {} + {} per byte; reading {what})",
                self.budget, self.file_len, BASE_STEPS, STEPS_PER_BYTE
            ));
        }
        self.side(sql_text(what, e))
    }

    fn check_cancel(&self) -> Result<(), FormatError> {
        if self.progress.is_cancelled() {
            Err(FormatError::Cancelled)
        } else {
            Ok(())
        }
    }

    /// Runs `sql` (about `what`), calling `each` with every row and its 1-based ordinal.
    pub fn scan(
        &self,
        what: &str,
        sql: &str,
        params: impl rusqlite::Params,
        mut each: impl FnMut(&Row<'_>, u64) -> Result<(), FormatError>,
    ) -> Result<(), FormatError> {
        self.check_cancel()?;
        let mut st = self.c.prepare(sql).map_err(|e| self.fail(what, &e))?;
        let mut rows = st.query(params).map_err(|e| self.fail(what, &e))?;
        let mut n = 0u64;
        loop {
            match rows.next() {
                Ok(Some(r)) => {
                    n += 1;
                    self.fetched.set(self.fetched.get() + 1);
                    self.check_cancel()?;
                    each(r, n)?;
                }
                Ok(None) => return Ok(()),
                Err(e) if n > 0 => {
                    return Err(self.fail(&format!("{what} after {n} rows"), &e));
                }
                Err(e) => return Err(self.fail(what, &e)),
            }
        }
    }

    /// The ordinary table `name`, or None when the file has no object of that name; a view,
    /// a virtual table or a table with columns computed on each read is refused by name.
    /// Read from `sqlite_master` itself: nothing else in the schema is prepared or run
    /// (`PRAGMA table_list` would work out the columns of every view in the file first).
    pub fn table(&self, name: &str) -> Result<Option<Table>, FormatError> {
        let mut kinds: Vec<(String, String)> = Vec::new();
        self.scan(
            "the schema",
            "SELECT type, sql FROM sqlite_master WHERE name = ?1 COLLATE NOCASE AND type IN ('table', 'view')",
            [name],
            |r, _| {
                let t: Option<String> = r.get(0).ok();
                let sql: Option<String> = r.get(1).ok();
                kinds.push((t.unwrap_or_default(), sql.unwrap_or_default()));
                Ok(())
            },
        )?;
        if kinds.is_empty() {
            return Ok(None);
        }
        let refuse = |what: &str| {
            Err(self.side(format!(
                "{name} is {what}: memtide reads an export's tables as data and runs no view, trigger or module (Nsight Systems writes {name} as a table)"
            )))
        };
        if kinds.iter().any(|(t, _)| t == "view") {
            return refuse("a view (an SQL query run on each read)");
        }
        if kinds.iter().any(|(_, sql)| is_virtual(sql)) {
            return refuse("a virtual table (rows made by a module's code on each read)");
        }
        // A WITHOUT ROWID table has no rowid to name its rows by.
        let without_rowid = self
            .c
            .prepare(&format!(
                "SELECT rowid FROM \"{}\" LIMIT 0",
                name.replace('"', "\"\"")
            ))
            .is_err();
        let mut columns = Vec::new();
        let mut generated = None;
        self.scan(
            "the schema",
            "SELECT name, hidden FROM pragma_table_xinfo(?1) WHERE schema = 'main'",
            [name],
            |r, _| {
                let col: String = r.get(0).map_err(|e| self.fail("the schema", &e))?;
                let hidden: i64 = r.get(1).map_err(|e| self.fail("the schema", &e))?;
                match hidden {
                    // 2: VIRTUAL generated (computed on each read); 3: STORED (data).
                    2 => generated = generated.take().or(Some(col)),
                    0 | 3 => columns.push(col),
                    _ => {}
                }
                Ok(())
            },
        )?;
        if let Some(col) = generated {
            return Err(self.side(format!(
                "{name}.{col} is a generated column (an expression SQLite computes on each read): memtide reads an export's tables as data"
            )));
        }
        Ok(Some(Table {
            columns,
            without_rowid,
        }))
    }

    /// The first row's first column of `sql`, if any row.
    pub fn first<T: rusqlite::types::FromSql>(
        &self,
        what: &str,
        sql: &str,
    ) -> Result<Option<T>, FormatError> {
        let mut v = None;
        self.scan(what, sql, [], |r, _| {
            if v.is_none() {
                v = Some(r.get(0).map_err(|e| self.fail(what, &e))?);
            }
            Ok(())
        })?;
        Ok(v)
    }
}

/// Whether a `CREATE` statement of `sqlite_master` makes a virtual table: its second word,
/// past whitespace and comments as SQLite's tokenizer skips them, is `VIRTUAL`.
fn is_virtual(sql: &str) -> bool {
    let mut rest = sql.trim_start();
    let mut words = 0;
    while !rest.is_empty() && words < 2 {
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix("--") {
            rest = r.split_once('\n').map_or("", |(_, r)| r);
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.split_once("*/").map_or("", |(_, r)| r);
        } else {
            let end = match rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                // A word, or else one character of punctuation.
                Some(0) => rest.chars().next().map_or(1, char::len_utf8),
                Some(e) => e,
                None => rest.len(),
            };
            let (word, r) = rest.split_at(end);
            words += 1;
            if words == 2 {
                return word.eq_ignore_ascii_case("virtual");
            }
            rest = r;
        }
    }
    false
}

/// `table: reason` for an SQLite error, with SQLite's own words for damage.
pub(crate) fn sql_text(table: &str, e: &rusqlite::Error) -> String {
    use rusqlite::ErrorCode as C;
    match e.sqlite_error_code() {
        Some(C::DatabaseCorrupt | C::NotADatabase) => {
            format!("{table}: the database is damaged or truncated ({e})")
        }
        Some(C::OutOfMemory) => format!(
            "{table}: SQLite needed more than its {} MiB while reading ({e}): refusing",
            HEAP_LIMIT >> 20
        ),
        Some(C::TooBig) => format!(
            "{table}: a value longer than {} MiB ({e}): refusing",
            MAX_VALUE >> 20
        ),
        _ => format!("{table}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn virtual_tables_are_told_past_comments_and_case() {
        assert!(is_virtual("CREATE VIRTUAL TABLE x USING fts5(a)"));
        assert!(is_virtual(
            "create/* a */--b\n\tvirtual table x using fts5(a)"
        ));
        assert!(!is_virtual("CREATE TABLE virtual (a)"));
        assert!(!is_virtual("CREATE TABLE \"x\" (virtual)"));
        assert!(!is_virtual("CREATE /* unclosed"));
        assert!(!is_virtual(""));
    }

    #[test]
    fn the_uri_is_the_absolute_path_percent_encoded_and_immutable() {
        let u = uri_of(Path::new("/data/file:run?x=1#a b%.sqlite")).expect("uri");
        assert_eq!(
            u,
            "file:/data/file%3Arun%3Fx%3D1%23a%20b%25.sqlite?mode=ro&immutable=1"
        );
        let rel = uri_of(Path::new("file:x.sqlite")).expect("uri");
        assert!(
            rel.starts_with("file:/") && rel.ends_with("/file%3Ax.sqlite?mode=ro&immutable=1"),
            "{rel}"
        );
    }
}
