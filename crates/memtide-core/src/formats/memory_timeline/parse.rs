//! The streaming parser of `export_memory_timeline` JSON, both shapes: each row is stored
//! compactly as it is read (never the file's text, never a tree of JSON values), growth is
//! checked against the memory budget ([`crate::budget`]), and errors name the byte offset.
//! The caller caps the bytes read ([`crate::formats::limit`]).
//!
//! The shape is told apart as the file is read: `[times, rows]` (two elements, the second
//! a list of 9-column rows) is the coalesced `.json`; anything else is raw rows
//! `[t, action, bytes, category]`.

use super::{Action, RawRow, Timeline};
use crate::budget::try_push;
use crate::formats::error::FormatError;
use crate::formats::source::io_or_cancel;
use serde::de::{self, DeserializeSeed, Deserializer, SeqAccess, Visitor};
use std::fmt;
use std::io::{self, Read};

const EXPECTED: &str =
    "expected [[times…], [[0, …8 categories], …]] or [[t, action, bytes, category], …]";

/// Parses a whole document from `r` (give it a buffered reader: serde_json reads a byte at a
/// time). Errors carry the offset of the byte where parsing stopped.
pub(crate) fn parse_reader(r: impl Read) -> Result<Timeline, FormatError> {
    let mut counted = Counted { inner: r, n: 0 };
    let res = {
        let mut de = serde_json::Deserializer::from_reader(&mut counted);
        Top.deserialize(&mut de).and_then(|t| de.end().map(|()| t))
    };
    res.map_err(|e| to_error(e, counted.n))
}

/// Counts the bytes serde_json has taken (it takes one ahead at most).
struct Counted<R> {
    inner: R,
    n: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n += k as u64;
        Ok(k)
    }
}

fn to_error(e: serde_json::Error, read: u64) -> FormatError {
    if e.is_io() {
        return io_or_cancel(io::Error::from(e));
    }
    let data = e.classify() == serde_json::error::Category::Data;
    let msg = e.to_string();
    let msg = match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    };
    let at = read.saturating_sub(1);
    if data && msg.starts_with("export_memory_timeline") {
        return FormatError::at(at, msg);
    }
    FormatError::at(
        at,
        format!("not an export_memory_timeline file ({msg}); {EXPECTED}"),
    )
}

/// A JSON number (rounded to an integer) or null.
struct Scalar(Option<i64>);

impl<'de> de::Deserialize<'de> for Scalar {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarV)
    }
}

struct ScalarV;

impl Visitor<'_> for ScalarV {
    type Value = Scalar;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number or null")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Scalar, E> {
        Ok(Scalar(Some(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Scalar, E> {
        i64::try_from(v)
            .map(|v| Scalar(Some(v)))
            .map_err(|_| E::custom("number too large"))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Scalar, E> {
        Ok(Scalar(Some(v.round() as i64)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Scalar, E> {
        Ok(Scalar(None))
    }
}

/// The first `N` values of a flat array of scalars and its length (the rest is read, not
/// kept: a row of a billion values costs no memory).
#[derive(Clone, Copy)]
struct Row<const N: usize> {
    v: [Option<i64>; N],
    len: usize,
}

impl<const N: usize> Row<N> {
    fn new() -> Self {
        Row {
            v: [None; N],
            len: 0,
        }
    }
    fn push(&mut self, x: Option<i64>) {
        if let Some(slot) = self.v.get_mut(self.len) {
            *slot = x;
        }
        self.len = self.len.saturating_add(1);
    }
    fn fill<'de, A: SeqAccess<'de>>(mut self, s: &mut A) -> Result<Self, A::Error> {
        while let Some(x) = s.next_element::<Scalar>()? {
            self.push(x.0);
        }
        Ok(self)
    }
}

/// A [`Row`] read from an array.
struct RowSeed<const N: usize>;

impl<'de, const N: usize> DeserializeSeed<'de> for RowSeed<N> {
    type Value = Row<N>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Row<N>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, const N: usize> Visitor<'de> for RowSeed<N> {
    type Value = Row<N>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of numbers")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Row<N>, A::Error> {
        Row::new().fill(&mut s)
    }
}

/// The first element: an array of scalars of any length (the coalesced file's times, or the
/// first raw row), kept whole.
struct Scalars {
    vals: Vec<i64>,
    /// Nulls among the first 8 values (bit k: value k).
    null_mask: u8,
    first_null: Option<usize>,
}

impl Scalars {
    /// The first raw row, as the others are read.
    fn as_row(&self) -> Row<4> {
        let mut r = Row::new();
        for (k, v) in self.vals.iter().enumerate().take(4) {
            r.push((self.null_mask & (1 << k) == 0).then_some(*v));
        }
        r.len = self.vals.len();
        r
    }
}

struct ScalarsSeed;

impl<'de> DeserializeSeed<'de> for ScalarsSeed {
    type Value = Scalars;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Scalars, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for ScalarsSeed {
    type Value = Scalars;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of numbers")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Scalars, A::Error> {
        let mut out = Scalars {
            vals: Vec::new(),
            null_mask: 0,
            first_null: None,
        };
        while let Some(Scalar(x)) = s.next_element::<Scalar>()? {
            let i = out.vals.len();
            if x.is_none() {
                out.first_null.get_or_insert(i);
                if i < 8 {
                    out.null_mask |= 1 << i;
                }
            }
            try_push(
                &mut out.vals,
                x.unwrap_or(0),
                "export_memory_timeline times",
            )
            .map_err(de::Error::custom)?;
        }
        Ok(out)
    }
}

/// The second element: the coalesced rows, or the second raw row.
enum Second {
    Empty,
    Rows(Vec<[i64; 8]>),
    Raw(Row<4>),
}

/// The first value of the second element: a row (coalesced) or a number (a raw row).
enum Lead {
    Num(Option<i64>),
    Row(Row<9>),
}

struct LeadSeed;

impl<'de> DeserializeSeed<'de> for LeadSeed {
    type Value = Lead;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Lead, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for LeadSeed {
    type Value = Lead;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number, null or an array of numbers")
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Lead, E> {
        ScalarV.visit_i64(v).map(|s| Lead::Num(s.0))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Lead, E> {
        ScalarV.visit_u64(v).map(|s| Lead::Num(s.0))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Lead, E> {
        ScalarV.visit_f64(v).map(|s| Lead::Num(s.0))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Lead, E> {
        Ok(Lead::Num(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Lead, A::Error> {
        Row::new().fill(&mut s).map(Lead::Row)
    }
}

struct SecondSeed;

impl<'de> DeserializeSeed<'de> for SecondSeed {
    type Value = Second;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Second, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for SecondSeed {
    type Value = Second;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of rows or of numbers")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Second, A::Error> {
        match s.next_element_seed(LeadSeed)? {
            None => Ok(Second::Empty),
            Some(Lead::Num(x)) => {
                let mut r = Row::new();
                r.push(x);
                r.fill(&mut s).map(Second::Raw)
            }
            Some(Lead::Row(first)) => {
                let mut rows = Vec::new();
                let mut next = Some(first);
                while let Some(r) = next {
                    let row = coalesced_row(rows.len(), &r).map_err(de::Error::custom)?;
                    try_push(&mut rows, row, "export_memory_timeline rows")
                        .map_err(de::Error::custom)?;
                    next = s.next_element_seed(RowSeed::<9>)?;
                }
                Ok(Second::Rows(rows))
            }
        }
    }
}

/// The 8 category columns of a coalesced row (after its leading zero; null counts as 0).
fn coalesced_row(i: usize, r: &Row<9>) -> Result<[i64; 8], String> {
    if r.len != 9 {
        return Err(format!(
            "export_memory_timeline .json: row {i} has {} columns, expected 9 (leading zero + 8 categories)",
            r.len
        ));
    }
    let mut row = [0i64; 8];
    for (k, v) in r.v[1..].iter().enumerate() {
        row[k] = v.unwrap_or(0);
    }
    Ok(row)
}

fn bad_raw_row(i: usize) -> String {
    format!(
        "export_memory_timeline raw row {i}: expected [t, action 1–4, bytes, category 0–7 or null]"
    )
}

/// A raw row `[t, action 1–4, bytes, category 0–7 or null]`.
fn raw_row(i: usize, r: &Row<4>) -> Result<RawRow, String> {
    let bad = || bad_raw_row(i);
    if r.len != 4 {
        return Err(bad());
    }
    let [t, action, bytes, cat] = r.v;
    Ok(RawRow {
        t: t.ok_or_else(bad)?,
        action: action.and_then(Action::from_i64).ok_or_else(bad)?,
        bytes: bytes.ok_or_else(bad)?,
        cat: match cat {
            None => None,
            Some(c @ 0..=7) => Some(c as u8),
            Some(_) => return Err(bad()),
        },
    })
}

/// The top-level array.
struct Top;

impl<'de> DeserializeSeed<'de> for Top {
    type Value = Timeline;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Timeline, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Top {
    type Value = Timeline;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(EXPECTED)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Timeline, A::Error> {
        let Some(first) = s.next_element_seed(ScalarsSeed)? else {
            return Ok(Timeline::Raw(Vec::new()));
        };
        let Some(second) = s.next_element_seed(SecondSeed)? else {
            let row = raw_row(0, &first.as_row()).map_err(de::Error::custom)?;
            return Ok(Timeline::Raw(vec![row]));
        };
        let Some(third) = s.next_element_seed(RowSeed::<4>)? else {
            return two_elements(first, second).map_err(de::Error::custom);
        };
        // Three or more: raw rows.
        let second = match second {
            Second::Raw(r) => r,
            Second::Empty | Second::Rows(_) => return Err(de::Error::custom(bad_raw_row(1))),
        };
        let mut rows = Vec::new();
        for r in [first.as_row(), second] {
            let row = raw_row(rows.len(), &r).map_err(de::Error::custom)?;
            try_push(&mut rows, row, "export_memory_timeline rows").map_err(de::Error::custom)?;
        }
        let mut next = Some(third);
        while let Some(r) = next {
            let row = raw_row(rows.len(), &r).map_err(de::Error::custom)?;
            try_push(&mut rows, row, "export_memory_timeline rows").map_err(de::Error::custom)?;
            next = s.next_element_seed(RowSeed::<4>)?;
        }
        Ok(Timeline::Raw(rows))
    }
}

/// A document of two elements: the coalesced shape (times and rows, or both empty), else two
/// raw rows.
fn two_elements(first: Scalars, second: Second) -> Result<Timeline, String> {
    match second {
        Second::Rows(rows) => {
            if let Some(i) = first.first_null {
                return Err(format!(
                    "export_memory_timeline .json: time point {i} is null or not a number"
                ));
            }
            if first.vals.len() != rows.len() {
                return Err(format!(
                    "export_memory_timeline .json: {} times but {} rows",
                    first.vals.len(),
                    rows.len()
                ));
            }
            Ok(Timeline::Coalesced {
                times_us: first.vals,
                rows,
            })
        }
        Second::Empty if first.vals.is_empty() => Ok(Timeline::Coalesced {
            times_us: Vec::new(),
            rows: Vec::new(),
        }),
        Second::Empty => {
            raw_row(0, &first.as_row())?;
            Err(bad_raw_row(1))
        }
        Second::Raw(r) => Ok(Timeline::Raw(vec![
            raw_row(0, &first.as_row())?,
            raw_row(1, &r)?,
        ])),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Result<Timeline, FormatError> {
        parse_reader(s.as_bytes())
    }

    #[test]
    fn both_shapes_parse() {
        let c =
            parse("[[1000, 1001], [[0, 1, 2, 3, 4, 5, 6, 7, 8], [0, 0, 0, 0, 0, 0, 0, 0, null]]]")
                .unwrap();
        assert_eq!(
            c,
            Timeline::Coalesced {
                times_us: vec![1000, 1001],
                rows: vec![[1, 2, 3, 4, 5, 6, 7, 8], [0; 8]],
            }
        );
        let r = parse("[[-1, 1, 100, 0], [5, 2, 8, null], [6, 4, -8, null]]").unwrap();
        let Timeline::Raw(rows) = r else {
            panic!("raw")
        };
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[0].action, Action::Preexisting);
        assert_eq!((rows[1].t, rows[1].bytes, rows[1].cat), (5, 8, None));
        assert_eq!(rows[2].action, Action::Destroy);
        // One and two raw rows, and the empty documents.
        assert!(matches!(parse("[[5, 2, 8, 3]]").unwrap(), Timeline::Raw(v) if v.len() == 1));
        assert!(
            matches!(parse("[[5, 2, 8, 3], [6, 4, -8, 3.2]]").unwrap(), Timeline::Raw(v) if v.len() == 2 && v[1].cat == Some(3))
        );
        assert_eq!(parse("[]").unwrap(), Timeline::Raw(Vec::new()));
        assert_eq!(
            parse("[[], []]").unwrap(),
            Timeline::Coalesced {
                times_us: vec![],
                rows: vec![]
            }
        );
    }

    #[test]
    fn bad_documents_say_what_and_where() {
        for (doc, want) in [
            ("{}", "not an export_memory_timeline file"),
            ("[[1], [[0, 1]]]", "row 0 has 2 columns, expected 9"),
            ("[[1, 2], [[0,0,0,0,0,0,0,0,0]]]", "2 times but 1 rows"),
            ("[[null], [[0,0,0,0,0,0,0,0,0]]]", "time point 0 is null"),
            ("[[1, 9, 3, 0], [1, 2, 3, 0], [1, 2, 3, 0]]", "raw row 0"),
            ("[[1, 2, 3, 0], [1, 2, 3, 0], [1, 2, 3, 8]]", "raw row 2"),
            ("[[1, 2, 3, 0], [1, 2, 3, 0], [1, 2, 3]]", "raw row 2"),
            ("[[1, 2, 3, 0], []]", "raw row 1"),
            (
                "[[1, 2, 3, 0], [1, \"x\", 3, 0]]",
                "not an export_memory_timeline file",
            ),
            ("[[1, 2, 3, 0]] x", "not an export_memory_timeline file"),
            ("[[1, 2, 3, 0], [1, 2", "not an export_memory_timeline file"),
        ] {
            let e = parse(doc).unwrap_err();
            assert!(matches!(e, FormatError::At { .. }), "{doc}: {e:?}");
            assert!(e.to_string().contains(want), "{doc}: {e}");
        }
        // The offset is where the bad value is.
        let doc = "[[1, 2, 3, 0], [1, 2, 3, 0], [1, 2, 3, 0], [1, 2, 3, 0], [1, 2, 3, 99]]";
        match parse(doc).unwrap_err() {
            FormatError::At { offset, .. } => {
                assert!(
                    (doc.len() as u64 - 3..doc.len() as u64).contains(&offset),
                    "{offset}"
                )
            }
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn a_long_row_is_counted_not_kept() {
        let long = format!("[[1, 2, 3, 0{}]]", ", 1".repeat(100_000));
        let e = parse(&long).unwrap_err();
        assert!(e.to_string().contains("raw row 0"), "{e}");
    }
}
