//! The diff screen's fair-comparison panel (`f`), as text: the lines `memtide diff` prints
//! under the file names (parity lines, each run's boundary, the boundary warning, what the
//! change bought and cost, the methods), wrapped to the panel with a hanging indent, and the
//! panel's place on screen. Pure: the reducer (scroll limits) and the drawing share it.

use memtide_core::analysis::Fair;
use ratatui::layout::Rect;

/// The panel: below the header's first row, above the status row, the full width.
pub fn rect(width: u16, height: u16) -> Rect {
    Rect::new(0, 1, width, height.saturating_sub(2))
}

/// Text rows inside the panel's border.
pub fn visible_rows(width: u16, height: u16) -> usize {
    rect(width, height).height.saturating_sub(2) as usize
}

/// The report's lines wrapped to `width` columns (the panel's inside).
pub fn lines(f: &Fair, width: usize) -> Vec<String> {
    let text = memtide_report::diff_fair::text(f);
    let mut out = Vec::new();
    for l in text.trim_start_matches('\n').lines() {
        wrap_into(&mut out, l, width);
    }
    out
}

/// Where a wrapped line's continuation starts: under the text after the label (`parity
/// `, `  inputs          `) or a short `warning: `, else at the line's own indent.
fn hanging_indent(line: &str, width: usize) -> usize {
    let chars: Vec<char> = line.chars().collect();
    let lead = chars.iter().take_while(|c| **c == ' ').count();
    let gap =
        (lead..chars.len().saturating_sub(1)).find(|&i| chars[i] == ' ' && chars[i + 1] == ' ');
    // No label column: under the text after a short `warning: `.
    let colon = || {
        (lead..chars.len().saturating_sub(1))
            .take(12)
            .find(|&i| chars[i] == ':' && chars[i + 1] == ' ')
            .map_or(lead, |i| i + 2)
    };
    let at = gap.map_or_else(colon, |g| {
        g + chars[g..].iter().take_while(|c| **c == ' ').count()
    });
    at.min(width / 2)
}

/// Appends `line` cut at spaces into rows of at most `width` characters (a word longer
/// than a row is cut).
fn wrap_into(out: &mut Vec<String>, line: &str, width: usize) {
    let width = width.max(8);
    if line.chars().count() <= width {
        out.push(line.to_string());
        return;
    }
    let indent = hanging_indent(line, width);
    let mut row = String::new();
    let mut row_len = 0usize;
    for (k, word) in line.split(' ').enumerate() {
        let wl = word.chars().count();
        let sep = usize::from(k > 0);
        if row_len + sep + wl > width && row_len > indent {
            out.push(std::mem::take(&mut row));
            row = " ".repeat(indent);
            row_len = indent;
        } else if k > 0 {
            row.push(' ');
            row_len += 1;
        }
        let mut rest: Vec<char> = word.chars().collect();
        while row_len + rest.len() > width {
            let room = width - row_len;
            row.extend(rest.drain(..room));
            out.push(std::mem::take(&mut row));
            row = " ".repeat(indent);
            row_len = indent;
        }
        row_len += rest.len();
        row.extend(rest);
    }
    out.push(row);
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_wraps_under_its_text_and_keeps_every_word() {
        let mut out = Vec::new();
        let l = "boundary A       full update after the optimizer state exists: 2 of 3 steps; optimizer state 256.0 MiB allocated lazily in step 0";
        wrap_into(&mut out, l, 40);
        assert!(out.iter().all(|r| r.chars().count() <= 40), "{out:?}");
        assert!(
            out[1].starts_with("                 full") || out[1].starts_with("                 ")
        );
        assert_eq!(out[0], "boundary A       full update after the");
        let joined: Vec<&str> = out.iter().flat_map(|r| r.split_whitespace()).collect();
        let want: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(joined, want);
        // A word longer than a row is cut, not lost.
        let mut out = Vec::new();
        wrap_into(&mut out, &format!("x  {}", "y".repeat(30)), 10);
        assert!(out.iter().all(|r| r.chars().count() <= 10), "{out:?}");
        let ys: usize = out.iter().map(|r| r.matches('y').count()).sum();
        assert_eq!(ys, 30);
    }
}
