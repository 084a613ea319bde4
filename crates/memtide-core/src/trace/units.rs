//! Newtypes for the quantities that cross module boundaries, and their human formatting.

use std::fmt;

/// A byte count. Always shown with binary units (KiB, MiB, GiB).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
pub struct Bytes(pub u64);

/// A timestamp in nanoseconds on the trace's own clock (see [`crate::trace::Clock`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ts(pub i64);

/// A position on the event axis: the state *after* applying event `Seq` (0-based, application order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Seq(pub u64);

/// Index of a storage in a trace's storage table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AllocId(pub u32);

/// An interned string.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StrId(pub u32);

/// An interned stack (list of frames, innermost first).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StackId(pub u32);

impl Seq {
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

impl AllocId {
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

impl Bytes {
    pub const ZERO: Bytes = Bytes(0);

    pub fn get(self) -> u64 {
        self.0
    }

    /// Human form with binary units: `512 B`, `1.50 KiB`, `14.2 GiB`.
    pub fn human(self) -> String {
        human_bytes(self.0)
    }
}

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&human_bytes(self.0))
    }
}

impl std::ops::Add for Bytes {
    type Output = Bytes;
    fn add(self, o: Bytes) -> Bytes {
        Bytes(self.0.saturating_add(o.0))
    }
}

impl std::ops::AddAssign for Bytes {
    fn add_assign(&mut self, o: Bytes) {
        self.0 = self.0.saturating_add(o.0);
    }
}

impl std::iter::Sum for Bytes {
    fn sum<I: Iterator<Item = Bytes>>(iter: I) -> Bytes {
        iter.fold(Bytes::ZERO, |a, b| a + b)
    }
}

/// The binary prefixes, by power of 1024.
pub const BINARY_PREFIXES: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];

/// `n` bytes in the largest binary unit it reaches: the value in that unit and the unit's
/// power of 1024 (an index into [`BINARY_PREFIXES`]). Every byte formatter scales with this.
pub fn binary_scale(n: u64) -> (f64, usize) {
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < BINARY_PREFIXES.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    (v, u)
}

/// Binary-unit rendering with three significant digits, e.g. `152.6 MiB`.
pub fn human_bytes(n: u64) -> String {
    if n < 1024 {
        return format!("{n} B");
    }
    let (v, u) = binary_scale(n);
    let unit = BINARY_PREFIXES[u];
    if v >= 100.0 {
        format!("{v:.1} {unit}B")
    } else if v >= 10.0 {
        format!("{v:.2} {unit}B")
    } else {
        format!("{v:.3} {unit}B")
    }
}

/// Bytes with thousands separators (kept at this path; its home is the `digits` module).
pub use crate::digits::grouped;

/// Error from [`parse_size`].
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid size {input:?}: expected a number with an optional unit B, KiB, MiB, GiB, TiB, KB, MB, GB, TB (e.g. 12GiB)")]
pub struct SizeError {
    pub input: String,
}

/// Parses `12GiB`, `1.5 GB`, `4096`, `300MiB`. Binary units are powers of 1024, decimal of 1000.
pub fn parse_size(s: &str) -> Result<Bytes, SizeError> {
    let err = || SizeError {
        input: s.to_string(),
    };
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let num: String = num.chars().filter(|&c| c != '_').collect();
    let unit = unit.trim();
    let mult: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kib" | "k" => 1 << 10,
        "mib" | "m" => 1 << 20,
        "gib" | "g" => 1 << 30,
        "tib" | "t" => 1 << 40,
        "kb" => 1_000,
        "mb" => 1_000_000,
        "gb" => 1_000_000_000,
        "tb" => 1_000_000_000_000,
        _ => return Err(err()),
    };
    if num.is_empty() {
        return Err(err());
    }
    if let Ok(i) = num.parse::<u64>() {
        return i.checked_mul(mult).map(Bytes).ok_or_else(err);
    }
    let f: f64 = num.parse().map_err(|_| err())?;
    if !f.is_finite() || f < 0.0 {
        return Err(err());
    }
    let v = f * mult as f64;
    // 2^64 itself is not a u64 (`u64::MAX as f64` rounds up to it).
    if v >= 18_446_744_073_709_551_616.0 {
        return Err(err());
    }
    Ok(Bytes(v.round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_and_decimal_units() {
        assert_eq!(parse_size("12GiB"), Ok(Bytes(12 * 1024 * 1024 * 1024)));
        assert_eq!(parse_size("12 GB"), Ok(Bytes(12_000_000_000)));
        assert_eq!(parse_size("1.5KiB"), Ok(Bytes(1536)));
        assert_eq!(parse_size("4096"), Ok(Bytes(4096)));
        assert!(parse_size("18446744073709551616").is_err());
        assert!(parse_size("16EiB").is_err());
        assert!(parse_size("16777216TiB").is_err());
        assert_eq!(parse_size("18446744073709551615"), Ok(Bytes(u64::MAX)));
        assert_eq!(parse_size("7B"), Ok(Bytes(7)));
        assert_eq!(parse_size("3MB"), Ok(Bytes(3_000_000)));
        assert_eq!(parse_size("2mib"), Ok(Bytes(2 << 20)));
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("").is_err());
        assert!(parse_size("GiB").is_err());
        assert!(parse_size("-1GiB").is_err());
    }

    #[test]
    fn human_uses_binary_units() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.500 KiB");
        // docs/concepts.md, fact 5: 160 MB = 152.6 MiB
        assert_eq!(human_bytes(160_000_000), "152.6 MiB");
    }
}
