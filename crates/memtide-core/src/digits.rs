//! Integers written with thousands separators (`301,460,984`): the one digit grouping the
//! reports, the errors and the shortened texts of [`crate::clip`] use. A leaf module, so that
//! `clip` and `trace` (which shortens texts with `clip`) need not import each other.

/// Bytes with thousands separators: `301,460,984`.
pub fn grouped(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::grouped;

    #[test]
    fn groups_by_three_from_the_right() {
        assert_eq!(grouped(301_460_984), "301,460,984");
        assert_eq!(grouped(1_048_576), "1,048,576");
        assert_eq!(grouped(100_000), "100,000");
        assert_eq!(grouped(12), "12");
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(u64::MAX), "18,446,744,073,709,551,615");
    }
}
