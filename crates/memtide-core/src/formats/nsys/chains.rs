//! Call chains of an export's allocations, read in time linear in the export's rows: one pass
//! over `CUPTI_ACTIVITY_KIND_RUNTIME` for the chain of each allocation's `correlationId`, one
//! over `CUDA_CALLCHAINS` keeping the chains named, one over `StringIds` keeping the strings
//! their frames name. A chain shared by many calls is read, formatted and kept once.

use super::open::Db;
use super::schema::Shape;
use crate::formats::FormatError;
use rusqlite::types::ValueRef;
use rusqlite::Row;
use std::collections::{HashMap, HashSet};

pub(crate) const RUNTIME: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";
pub(crate) const CALLCHAINS: &str = "CUDA_CALLCHAINS";
pub(crate) const STRINGS: &str = "StringIds";

/// The call chains of a set of calls.
#[derive(Debug, Default)]
pub(crate) struct Chains {
    /// `correlationId` → `callchainId` (the first runtime row of a correlation id).
    pub chain_of: HashMap<i64, i64>,
    /// `callchainId` → its frames `symbol (module)`, innermost first.
    pub frames: HashMap<i64, Vec<String>>,
}

/// Column `i` (`col`) of row `n` of `table` as an integer, or None when null.
pub(crate) fn int(
    db: &Db,
    r: &Row<'_>,
    i: usize,
    table: &str,
    col: &str,
    n: u64,
) -> Result<Option<i64>, FormatError> {
    r.get::<_, Option<i64>>(i).map_err(|e| {
        db.side(format!(
            "{table} row {n}: column {col}: expected an integer ({e})"
        ))
    })
}

/// A string value as text, whatever SQLite stored (None: null or a blob).
fn text(r: &Row<'_>, i: usize) -> Option<String> {
    match r.get_ref(i).ok()? {
        ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into_owned()),
        ValueRef::Integer(v) => Some(v.to_string()),
        ValueRef::Real(v) => Some(v.to_string()),
        ValueRef::Null | ValueRef::Blob(_) => None,
    }
}

/// The chains of the calls `corrs` (correlation ids of allocations).
pub(crate) fn read(db: &Db, shape: &Shape, corrs: &HashSet<i64>) -> Result<Chains, FormatError> {
    let mut out = Chains::default();
    if corrs.is_empty() || !(shape.has_callchains && shape.has_runtime_callchains) {
        return Ok(out);
    }
    db.scan(
        RUNTIME,
        &format!("SELECT correlationId, callchainId FROM {RUNTIME} WHERE correlationId IS NOT NULL AND callchainId IS NOT NULL"),
        [],
        |r, n| {
            let corr = int(db, r, 0, RUNTIME, "correlationId", n)?;
            if let Some(corr) = corr.filter(|c| corrs.contains(c)) {
                if let Some(chain) = int(db, r, 1, RUNTIME, "callchainId", n)? {
                    out.chain_of.entry(corr).or_insert(chain);
                }
            }
            Ok(())
        },
    )?;
    let wanted: HashSet<i64> = out.chain_of.values().copied().collect();
    if wanted.is_empty() {
        return Ok(out);
    }
    type Frame = (Option<i64>, Option<i64>, Option<i64>);
    let mut raw: HashMap<i64, Vec<Frame>> = HashMap::new();
    db.scan(
        CALLCHAINS,
        &format!("SELECT id, stackDepth, symbol, module FROM {CALLCHAINS} WHERE id IS NOT NULL"),
        [],
        |r, n| {
            if let Some(id) = int(db, r, 0, CALLCHAINS, "id", n)?.filter(|i| wanted.contains(i)) {
                let frame = (
                    int(db, r, 1, CALLCHAINS, "stackDepth", n)?,
                    int(db, r, 2, CALLCHAINS, "symbol", n)?,
                    int(db, r, 3, CALLCHAINS, "module", n)?,
                );
                raw.entry(id).or_default().push(frame);
            }
            Ok(())
        },
    )?;
    let mut names: HashMap<i64, String> = HashMap::new();
    let want: HashSet<i64> = raw
        .values()
        .flatten()
        .flat_map(|&(_, s, m)| [s, m])
        .flatten()
        .collect();
    if shape.has_strings && !want.is_empty() {
        db.scan(
            STRINGS,
            &format!("SELECT id, value FROM {STRINGS} WHERE id IS NOT NULL"),
            [],
            |r, n| {
                if let Some(id) = int(db, r, 0, STRINGS, "id", n)?.filter(|i| want.contains(i)) {
                    if let (std::collections::hash_map::Entry::Vacant(e), Some(v)) =
                        (names.entry(id), text(r, 1))
                    {
                        db.keep_text(STRINGS, v.len())?;
                        e.insert(v);
                    }
                }
                Ok(())
            },
        )?;
    }
    let name = |k: Option<i64>| k.and_then(|k| names.get(&k)).map_or("??", String::as_str);
    for (id, mut frames) in raw {
        // Innermost first; frames of one depth in the file's order (a stable sort).
        frames.sort_by_key(|&(depth, _, _)| depth);
        let mut text = Vec::with_capacity(frames.len());
        for &(_, s, m) in &frames {
            let (s, m) = (name(s), name(m));
            db.keep_text(CALLCHAINS, s.len() + m.len() + 3)?;
            text.push(format!("{s} ({m})"));
        }
        out.frames.insert(id, text);
    }
    Ok(out)
}
