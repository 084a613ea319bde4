//! Range-checked parsers for the numeric flags: a value out of range, a bare number where a
//! unit or a `%` is expected, NaN or infinity is a usage error naming the flag and the form
//! expected — never a wrapped, clamped or silently reinterpreted number.

pub use memtide_report::sizes::{capacity, percent, size, MAX_PERCENT};

/// The longest `--idle-exit`: a week.
pub const MAX_IDLE_SECS: f64 = 7.0 * 24.0 * 3600.0;

/// `--idle-exit SECS` (clap value parser): seconds from 0 to a week (`30`, `2.5`).
pub fn idle_seconds(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=MAX_IDLE_SECS).contains(&v) => Ok(v),
        _ => Err(format!(
            "{s:?} is not a number of seconds from 0 to {MAX_IDLE_SECS} (a week), e.g. 30 or 2.5"
        )),
    }
}

/// The most reading threads `--jobs` takes.
pub const MAX_JOBS: usize = 1024;

/// `--jobs N` (clap value parser): 0 (every core) to [`MAX_JOBS`].
pub fn jobs(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n <= MAX_JOBS => Ok(n),
        _ => Err(format!(
            "{s:?} is not a thread count from 0 (every core) to {MAX_JOBS}"
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn idle_seconds_and_jobs_are_ranged() {
        assert_eq!(idle_seconds("2.5"), Ok(2.5));
        for bad in ["-1", "NaN", "inf", "1e300", "18446744073709551616", "x"] {
            assert!(idle_seconds(bad).is_err(), "{bad}");
        }
        assert_eq!(jobs("0"), Ok(0));
        assert!(jobs("1025").is_err());
        assert!(jobs("-1").is_err());
    }
}
