//! A line of parts that may not all fit: the least important parts are left out first (the
//! rightmost of equal importance first), so a narrow terminal keeps what matters most — the
//! peak and reserved figures in the header, `? help` and `q quit` in the status row.

use super::put;
use ratatui::buffer::Buffer;
use ratatui::style::Style;

/// One part of a line: its pieces of styled text (a leading separator included) and how
/// important it is (higher stays longer).
#[derive(Clone, Debug)]
pub struct Part {
    pub spans: Vec<(String, Style)>,
    pub keep: u8,
}

impl Part {
    /// A part of one piece of text.
    pub fn text(text: impl Into<String>, style: Style, keep: u8) -> Part {
        Part {
            spans: vec![(text.into(), style)],
            keep,
        }
    }

    fn width(&self) -> usize {
        self.spans.iter().map(|(t, _)| t.chars().count()).sum()
    }
}

/// Which of `parts` fit in `width` columns together: drops the least important (and, among
/// equals, the rightmost) until the rest fit. The last part standing is kept even when it
/// alone is too wide (it is cut when drawn).
pub fn fitting(parts: &[Part], width: usize) -> Vec<bool> {
    let mut shown = vec![true; parts.len()];
    let mut total: usize = parts.iter().map(Part::width).sum();
    while total > width {
        let drop = (0..parts.len())
            .filter(|&i| shown[i])
            .min_by_key(|&i| (parts[i].keep, std::cmp::Reverse(i)));
        match drop {
            Some(i) if shown.iter().filter(|&&s| s).count() > 1 => {
                shown[i] = false;
                total -= parts[i].width();
            }
            _ => break,
        }
    }
    shown
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
    for (p, _) in parts.iter().zip(shown).filter(|(_, s)| *s) {
        for (i, (text, style)) in p.spans.iter().enumerate() {
            let text = match text
                .strip_prefix(" · ")
                .or_else(|| text.strip_prefix(" | "))
            {
                Some(rest) if x == start && i == 0 => format!(" {rest}"),
                _ => text.clone(),
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
        assert_eq!(fitting(&p, 12), vec![true; 4]);
        assert_eq!(fitting(&p, 11), vec![true, true, true, false]);
        assert_eq!(fitting(&p, 9), vec![true, false, true, false]);
        assert_eq!(fitting(&p, 5), vec![false, false, true, false]);
        // The most important part stays even when nothing fits.
        assert_eq!(fitting(&p, 0), vec![false, false, true, false]);
    }
}
