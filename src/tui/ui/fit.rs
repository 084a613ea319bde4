//! A line of parts that may not all fit: the least important parts are left out first (the
//! rightmost of equal importance first; a part that may be cut is cut down first), so a narrow
//! terminal keeps what matters most — the peak and reserved figures in the header, `? help`
//! and `q quit` in the status row, as much of the file's name as is left.

use super::put;
use ratatui::buffer::Buffer;
use ratatui::style::Style;

/// One part of a line: its pieces of styled text (a leading separator included) and how
/// important it is (higher stays longer).
#[derive(Clone, Debug)]
pub struct Part {
    pub spans: Vec<(String, Style)>,
    pub keep: u8,
    /// The fewest columns its one piece of text may be cut to (from the left, after its
    /// separator: the end of a file's name tells files apart) before it is left out; 0: shown
    /// whole or not at all.
    pub least: usize,
}

impl Part {
    /// A part of one piece of text.
    pub fn text(text: impl Into<String>, style: Style, keep: u8) -> Part {
        Part {
            spans: vec![(text.into(), style)],
            keep,
            least: 0,
        }
    }

    /// A part of one piece of text that may be cut down to `least` columns before it goes.
    pub fn cuttable(text: impl Into<String>, style: Style, keep: u8, least: usize) -> Part {
        Part {
            least,
            ..Part::text(text, style, keep)
        }
    }

    /// Its columns, whole.
    pub fn width(&self) -> usize {
        self.spans.iter().map(|(t, _)| t.chars().count()).sum()
    }
}

/// The columns each of `parts` is drawn in so that together they fit `width` (None: left
/// out): the least important (and, among equals, the rightmost) goes first, cut down to its
/// `least` columns before it is left out, until the rest fit. The last part standing is kept
/// even when it alone is too wide (it is cut when drawn).
pub fn fitting(parts: &[Part], width: usize) -> Vec<Option<usize>> {
    let mut shown: Vec<Option<usize>> = parts.iter().map(|p| Some(p.width())).collect();
    let mut total: usize = shown.iter().flatten().sum();
    while total > width {
        let drop = (0..parts.len())
            .filter(|&i| shown[i].is_some())
            .min_by_key(|&i| (parts[i].keep, std::cmp::Reverse(i)));
        match drop {
            Some(i) if shown.iter().flatten().count() > 1 => {
                let now = shown[i].unwrap_or(0);
                let least = parts[i].least;
                if least > 0 && now > least {
                    let cut = (now - least).min(total - width);
                    shown[i] = Some(now - cut);
                    total -= cut;
                } else {
                    shown[i] = None;
                    total -= now;
                }
            }
            _ => break,
        }
    }
    shown
}

/// `text` cut to `w` columns from the left, after a leading separator (` · `, ` | `), with
/// `…` where it was cut.
fn cut_left(text: &str, w: usize) -> String {
    if text.chars().count() <= w {
        return text.to_string();
    }
    let (sep, rest) = split_separator(text);
    match w.checked_sub(sep.chars().count()).filter(|&room| room > 0) {
        Some(room) => format!("{sep}{}", crate::tui::fmt::trunc_left(rest, room)),
        None => text.chars().take(w).collect(),
    }
}

/// A part's leading separator (` · `, ` | ` in ASCII; empty if none) and the rest.
fn split_separator(text: &str) -> (&str, &str) {
    [" · ", " | "]
        .into_iter()
        .find_map(|sep| text.strip_prefix(sep).map(|rest| (sep, rest)))
        .unwrap_or(("", text))
}

/// The parts `make(true)` gives (the long form) when they all fit `width`, else the parts
/// `make(false)` gives (the short form), to be fitted in turn.
pub fn longest(make: impl Fn(bool) -> Vec<Part>, width: u16) -> Vec<Part> {
    let long = make(true);
    if long.iter().map(Part::width).sum::<usize>() <= usize::from(width) {
        long
    } else {
        make(false)
    }
}

/// Draws the parts of `parts` that fit between `x` and `right` on row `y`; returns the
/// column after the last one drawn. A leading separator (` · `, ` | ` in ASCII) of the first
/// part drawn is
/// left out: it separates nothing there.
pub fn draw(buf: &mut Buffer, x: u16, y: u16, right: u16, parts: &[Part]) -> u16 {
    let shown = fitting(parts, usize::from(right.saturating_sub(x)));
    let start = x;
    let mut x = x;
    for (p, w) in parts.iter().zip(shown) {
        let Some(w) = w else { continue };
        let cut = (w < p.width() && p.spans.len() == 1).then(|| cut_left(&p.spans[0].0, w));
        for (i, (text, style)) in p.spans.iter().enumerate() {
            let text = cut.as_deref().unwrap_or(text);
            let text = match split_separator(text) {
                (sep, rest) if !sep.is_empty() && x == start && i == 0 => format!(" {rest}"),
                _ => text.to_string(),
            };
            if x >= right {
                return x;
            }
            x = put(buf, x, y, &text, right - x, *style);
        }
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(spec: &[(&str, u8)]) -> Vec<Part> {
        spec.iter()
            .map(|&(t, k)| Part::text(t, Style::default(), k))
            .collect()
    }

    #[test]
    fn least_important_goes_first_and_the_rightmost_of_equals() {
        let p = parts(&[("aaaa", 5), ("bb", 1), ("cccc", 9), ("dd", 1)]);
        let shown = |w| -> Vec<bool> { fitting(&p, w).iter().map(Option::is_some).collect() };
        assert_eq!(shown(12), vec![true; 4]);
        assert_eq!(shown(11), vec![true, true, true, false]);
        assert_eq!(shown(9), vec![true, false, true, false]);
        assert_eq!(shown(5), vec![false, false, true, false]);
        // The most important part stays even when nothing fits.
        assert_eq!(shown(0), vec![false, false, true, false]);
    }

    #[test]
    fn a_cuttable_part_is_cut_to_its_least_before_it_goes() {
        let name = " · a_long_run_name_rank3.pickle";
        let p = vec![
            Part::text(" memtide", Style::default(), 3),
            Part::cuttable(name, Style::default(), 6, 12),
            Part::text(" · peak 1.0 GiB", Style::default(), 10),
        ];
        let (n, peak) = (name.chars().count(), 15);
        // Room for all: nothing cut.
        assert_eq!(
            fitting(&p, 8 + n + peak),
            vec![Some(8), Some(n), Some(peak)]
        );
        // Less: the less important title goes first, then the name is cut, never below 12.
        assert_eq!(fitting(&p, n + peak), vec![None, Some(n), Some(peak)]);
        assert_eq!(fitting(&p, 20 + peak), vec![None, Some(20), Some(peak)]);
        assert_eq!(fitting(&p, 12 + peak), vec![None, Some(12), Some(peak)]);
        assert_eq!(fitting(&p, 11 + peak), vec![None, None, Some(peak)]);
        // Cut from the left, after its separator: the end of the name stays.
        assert_eq!(cut_left(name, 20), " · …ame_rank3.pickle");
        assert_eq!(cut_left(name, 20).chars().count(), 20);
        assert_eq!(cut_left("abcdef", 4), "…def");
        assert_eq!(cut_left(name, n), name);
    }
}
