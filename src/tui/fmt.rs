//! Display formatting shared by the screens: compact binary sizes, times, event indices.

use memtide_core::trace::{binary_scale, human_bytes, Seq, Trace, BINARY_PREFIXES};

/// Bytes in binary units, e.g. `4.000 MiB` (the unit is always shown: binary).
pub fn bytes(n: u64) -> String {
    human_bytes(n)
}

/// Short size for axis labels: `1.5G`, `512M`, `64K`, `0` (binary units, the header says so).
/// The axis needs this narrower form than [`bytes`]; it scales with the core's
/// [`binary_scale`], like every byte formatter.
pub fn bytes_short(n: u64) -> String {
    if n < 1024 {
        return format!("{n}B");
    }
    let (v, u) = binary_scale(n);
    let unit = BINARY_PREFIXES[u];
    if v >= 100.0 {
        format!("{v:.0}{unit}")
    } else {
        format!("{v:.1}{unit}")
    }
}

/// A duration or timestamp in ns, e.g. `12.000 µs`, `3.250 ms`, `1.500 s`.
pub fn time_ns(ns: i64) -> String {
    let a = ns.unsigned_abs() as f64;
    let sign = if ns < 0 { "-" } else { "" };
    if a < 1_000.0 {
        format!("{sign}{a:.0} ns")
    } else if a < 1_000_000.0 {
        format!("{sign}{:.3} µs", a / 1e3)
    } else if a < 1_000_000_000.0 {
        format!("{sign}{:.3} ms", a / 1e6)
    } else {
        format!("{sign}{:.3} s", a / 1e9)
    }
}

/// `#N` (the event number: docs/summary-json.md, "Event numbers") and, when the clock has
/// time, ` t=+…` relative to the trace's first event.
pub fn at(trace: &Trace, s: Seq) -> String {
    at_mode(trace, s, false)
}

/// [`at`] with the time relative to the first event, or as the file's value (`absolute`).
pub fn at_mode(trace: &Trace, s: Seq, absolute: bool) -> String {
    let idx = trace.event_number(s);
    if trace.clock.has_time() && !trace.is_empty() {
        format!("#{idx} t={}", time_of(trace, s, absolute))
    } else {
        format!("#{idx}")
    }
}

/// The time of position `s`: `+12.345 ms` after the file's first event (over all its
/// devices), or the file's value (`absolute`).
pub fn time_of(trace: &Trace, s: Seq, absolute: bool) -> String {
    time_at_ns(trace, trace.ts(s).0, absolute)
}

/// A timestamp (ns, the file's clock) relative to the file's time origin (its earliest event
/// over all its devices: `Trace::origin_ns`), `+1.500 s`, or as is.
pub fn time_at_ns(trace: &Trace, ns: i64, absolute: bool) -> String {
    if absolute {
        return time_ns(ns);
    }
    let t0 = trace.origin_ns().unwrap_or(0);
    let d = ns.saturating_sub(t0);
    if d < 0 {
        time_ns(d)
    } else {
        format!("+{}", time_ns(d))
    }
}

/// [`at`] with the event's position in the file beside it when the two differ (Kineto:
/// `#N (file #S) t=…`), so the cursor can be found in the file.
pub fn at_src(trace: &Trace, s: Seq) -> String {
    at_src_mode(trace, s, false)
}

/// [`at_src`] with relative or absolute time (see [`at_mode`]).
pub fn at_src_mode(trace: &Trace, s: Seq, absolute: bool) -> String {
    if !trace.numbers_differ_from_source() || trace.is_empty() {
        return at_mode(trace, s, absolute);
    }
    let idx = trace.event_number(s);
    let src = trace.src_index(s);
    if trace.clock.has_time() {
        format!("#{idx} (file #{src}) t={}", time_of(trace, s, absolute))
    } else {
        format!("#{idx} (file #{src})")
    }
}

/// An address as users know it: `0x7f3c6de00000`.
pub fn addr(a: u64) -> String {
    format!("{a:#x}")
}

/// Thousands separators: `2,341`.
pub fn thousands(n: u64) -> String {
    memtide_core::trace::grouped(n)
}

/// Truncates to `w` display columns with an ellipsis.
pub fn trunc(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        return s.to_string();
    }
    if w == 0 {
        return String::new();
    }
    let mut out: String = s.chars().take(w - 1).collect();
    out.push('…');
    out
}

/// Truncates to `w` display columns from the left, keeping the end: a path's last
/// components (`…/fixtures/ranks`) say more than its first.
pub fn trunc_left(s: &str, w: usize) -> String {
    let n = s.chars().count();
    if n <= w {
        return s.to_string();
    }
    if w == 0 {
        return String::new();
    }
    let mut out = String::from('…');
    out.extend(s.chars().skip(n - (w - 1)));
    out
}

/// Two names shown by where they differ: their common beginning and end left out (`…`) at
/// the edges of the words that differ, so `…_medium_128_training.pickle` and
/// `…_medium_256_training.pickle` read `…128…` and `…256…`. Equal names, or names with nothing
/// in common, come back whole.
pub fn differing(a: &str, b: &str) -> (String, String) {
    let (x, y): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    if x == y {
        return (a.to_string(), b.to_string());
    }
    let shortest = x.len().min(y.len());
    let mut head = x.iter().zip(&y).take_while(|(c, d)| c == d).count();
    let mut tail = x
        .iter()
        .rev()
        .zip(y.iter().rev())
        .take(shortest - head)
        .take_while(|(c, d)| c == d)
        .count();
    // Whole words: back the cuts off to the edges of the words that differ.
    while head > 0 && x[head - 1].is_alphanumeric() {
        head -= 1;
    }
    while tail > 0 && x[x.len() - tail].is_alphanumeric() {
        tail -= 1;
    }
    let show = |v: &[char]| {
        let mut out = String::new();
        if head > 0 {
            out.push('…');
        }
        out.extend(&v[head..v.len() - tail]);
        if tail > 0 {
            out.push('…');
        }
        out
    };
    (show(&x), show(&y))
}

/// `s` cut to `w` columns at a word boundary, ending in `…` when cut (mid-word only when a
/// single word is wider than `w`).
pub fn trunc_words(s: &str, w: usize) -> String {
    if s.chars().count() <= w {
        return s.to_string();
    }
    let mut out = String::new();
    for word in s.split(' ') {
        let sep = usize::from(!out.is_empty());
        if out.chars().count() + sep + word.chars().count() + 1 > w {
            break;
        }
        if sep == 1 {
            out.push(' ');
        }
        out.push_str(word);
    }
    if out.is_empty() {
        out = s.chars().take(w.saturating_sub(1)).collect();
    }
    if w > 0 {
        out.push('…');
    }
    out
}

/// Greedy word wrap to `w` columns (a word longer than `w` is cut).
pub fn wrap(text: &str, w: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let n = line.chars().count();
        let wn = word.chars().count();
        if n > 0 && n + 1 + wn > w {
            out.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
        while line.chars().count() > w {
            let head: String = line.chars().take(w).collect();
            let tail: String = line.chars().skip(w).collect();
            out.push(head);
            line = tail;
        }
    }
    if !line.is_empty() {
        out.push(line);
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn two_names_are_shown_by_the_words_that_differ() {
        let d = differing;
        assert_eq!(
            d(
                "results__medium_128_training_memory_snapshot.pickle",
                "results__medium_256_training_memory_snapshot.pickle"
            ),
            ("…128…".into(), "…256…".into())
        );
        // A word that differs is shown whole, not from the first differing letter.
        assert_eq!(
            d("rank3_step100.pickle", "rank3_step200.pickle"),
            ("…step100…".into(), "…step200…".into())
        );
        assert_eq!(
            d("memory_forward.pickle", "memory_forward_mixed.pickle"),
            ("…forward…".into(), "…forward_mixed…".into())
        );
        // Nothing in common at an end: that end is not cut.
        assert_eq!(
            d("a.pickle", "b.json"),
            ("a.pickle".into(), "b.json".into())
        );
        assert_eq!(
            d("same.pickle", "same.pickle"),
            ("same.pickle".into(), "same.pickle".into())
        );
        assert_eq!(d("ab", "abc"), ("ab".into(), "abc".into()));
    }

    #[test]
    fn words_are_cut_whole() {
        assert_eq!(
            trunc_words("inspect storage (tree)", 40),
            "inspect storage (tree)"
        );
        assert_eq!(
            trunc_words("inspect storage (tree)", 17),
            "inspect storage…"
        );
        assert_eq!(
            trunc_words("inspect storage (tree)", 16),
            "inspect storage…"
        );
        assert_eq!(trunc_words("inspect storage (tree)", 15), "inspect…");
        assert_eq!(trunc_words("supercalifragilistic", 6), "super…");
        assert_eq!(trunc_words("abc", 0), "");
    }

    #[test]
    fn short_sizes_use_binary_units() {
        assert_eq!(bytes_short(0), "0B");
        assert_eq!(bytes_short(4 << 20), "4.0Mi");
        assert_eq!(bytes_short(1536 << 20), "1.5Gi");
        assert_eq!(bytes_short(200 << 10), "200Ki");
        assert_eq!(time_ns(12_000), "12.000 µs");
        assert_eq!(time_ns(1_500_000_000), "1.500 s");
        assert_eq!(trunc("abcdef", 4), "abc…");
        assert_eq!(trunc_left("/a/b/ranks", 6), "…ranks");
        assert_eq!(trunc_left("ranks", 6), "ranks");
        assert_eq!(addr(139_897_518_161_920), "0x7f3c6de00000");
    }

    #[test]
    fn wrap_keeps_words_and_width() {
        let w = wrap("the device is full of live tensors", 12);
        assert_eq!(w, ["the device", "is full of", "live tensors"]);
        assert!(wrap("abcdefghijklmnop", 5)
            .iter()
            .all(|l| l.chars().count() <= 5));
    }
}
