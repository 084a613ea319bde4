//! Sizes and percentages as people write them (`12GiB`, `1.5 GB`, `10%`), range-checked: a
//! value out of range, a bare number where a unit or a `%` is expected, NaN or infinity is an
//! error naming the flag (or argument) and the form expected — never a wrapped, clamped or
//! silently reinterpreted number. The command line's flags and Python's arguments alike.

use anyhow::{bail, Result};
use memtide_core::trace::{parse_size, Bytes};

/// The largest percentage a gate takes (a thousandfold: anything above means no gate).
pub const MAX_PERCENT: f64 = 100_000.0;

/// `10%`, `0.5 %` → a fraction (0.1, 0.005). A bare number is refused: `1` could mean 1 % or
/// 100 %.
pub fn percent(flag: &str, s: &str) -> Result<f64> {
    let t = s.trim();
    let Some(num) = t.strip_suffix('%') else {
        bail!("invalid {flag} {s:?}: expected a percentage such as 10% (with the % sign: a bare number could mean a fraction or a percent)");
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=MAX_PERCENT).contains(&v) => Ok(v / 100.0),
        _ => bail!(
            "invalid {flag} {s:?}: expected a percentage from 0% to {MAX_PERCENT}% such as 10%"
        ),
    }
}

/// `12GiB`, `1.5 GB`, `4096B` → bytes (below 2^64). A bare number is refused: `12` could be
/// meant as bytes or gigabytes.
pub fn size(flag: &str, s: &str) -> Result<Bytes> {
    let t = s.trim();
    let form = "a size with a unit such as 12GiB, 1.5GB or 4096B (B, KiB, MiB, GiB, TiB, KB, MB, GB, TB), below 16 EiB";
    if !t.ends_with(|c: char| c.is_ascii_alphabetic()) {
        bail!("invalid size {s:?} for {flag}: expected {form}");
    }
    parse_size(t).map_err(|_| anyhow::anyhow!("invalid size {s:?} for {flag}: expected {form}"))
}

/// As [`size`], for a device's memory: more than 0 B.
pub fn capacity(s: &str) -> Result<Bytes> {
    let b = size("--capacity", s)?;
    if b.0 == 0 {
        bail!("invalid size {s:?} for --capacity: a device holds more than 0 B (e.g. 80GiB)");
    }
    Ok(b)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn percentages_need_the_sign_and_a_range() {
        assert_eq!(percent("--max-growth", "10%").unwrap(), 0.1);
        assert_eq!(percent("--max-growth", " 0.5 % ").unwrap(), 0.005);
        let e = percent("--max-growth", "1").unwrap_err().to_string();
        assert!(e.contains("expected a percentage such as 10%"), "{e}");
        for bad in ["-1%", "NaN%", "inf%", "1e300%", "%", "ten%"] {
            assert!(percent("--max-growth", bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_need_a_unit_and_fit_64_bits() {
        assert_eq!(size("--max-peak", "12GiB").unwrap(), Bytes(12 << 30));
        assert_eq!(size("--max-peak", "4096B").unwrap(), Bytes(4096));
        let e = size("--max-peak", "4096").unwrap_err().to_string();
        assert!(e.contains("a size with a unit"), "{e}");
        assert!(size("--max-peak", "18446744073709551616B").is_err());
        assert!(size("--max-peak", "16384PiB").is_err());
        assert!(size("--max-peak", "-1GiB").is_err());
        assert!(capacity("0B").is_err());
    }
}
