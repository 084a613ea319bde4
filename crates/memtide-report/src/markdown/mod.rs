//! The Markdown report (`summary --markdown`, `check --report FILE`): GitHub-flavoured tables
//! for a pull-request comment or a CI job summary (`$GITHUB_STEP_SUMMARY`). Text from the
//! trace is escaped for Markdown and HTML, and control characters never pass.

pub mod diff;
mod diff_fair;
mod oom;
mod owners;

use crate::frames::short_frame;
use crate::safe_text::terminal_safe;
use crate::summary::{shown_windows, steps_omitted_text, ShownWindows};
use memtide_core::analysis::{table_ends, StepRow, Summary};
use memtide_core::trace::{external, grouped, human_bytes, Band};
use std::fmt::Write as _;

/// Trace text made safe inside a Markdown table cell or line: shortened to
/// [`memtide_core::clip::TEXT_CAP`] bytes (a longer text ends in `… (N bytes)`), control
/// characters escaped, newlines flattened, the characters Markdown or HTML would act on
/// escaped, and what a CI comment would turn into a notification or a link broken with a
/// zero-width space (`&#8203;`, as dependency bots write it): an `@mention`, an issue
/// reference `#123` (`owner/repo#123` too) and `GH-123`.
pub fn cell(s: &str) -> String {
    let short = memtide_core::clip::clip(s);
    let s = terminal_safe(&short);
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        let next = chars.peek().copied();
        match c {
            '\n' | '\r' | '\t' => out.push(' '),
            '|' | '\\' | '`' | '*' | '_' | '[' | ']' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '@' if next.is_some_and(|n| n.is_alphanumeric()) => out.push_str("@&#8203;"),
            '#' if next.is_some_and(|n| n.is_ascii_digit()) && is_reference(&out) => {
                out.push_str("#&#8203;")
            }
            '-' if next.is_some_and(|n| n.is_ascii_digit())
                && out
                    .get(out.len().saturating_sub(2)..)
                    .is_some_and(|t| t.eq_ignore_ascii_case("gh")) =>
            {
                out.push_str("&#8203;-")
            }
            _ => out.push(c),
        }
    }
    out
}

/// Whether a `#` after `before` starts an issue reference as GitHub reads one: at the start
/// of a word (`see #12`, `(#12)`) or after `owner/repo`; not inside a word (`ProfilerStep#2`).
fn is_reference(before: &str) -> bool {
    let word = before.rsplit(char::is_whitespace).next().unwrap_or("");
    word.contains('/') || !word.chars().last().is_some_and(char::is_alphanumeric)
}

fn size(n: u64) -> String {
    format!("{} ({} B)", human_bytes(n), grouped(n))
}

/// Where the peak holds, in words.
fn peak_place(s: &Summary) -> String {
    let Some(p) = &s.peak else {
        return "unavailable (no events)".into();
    };
    let mut at = if p.at_start {
        "at start (the initial state, before event #0)".to_string()
    } else {
        format!("at event #{}", p.index)
    };
    if let Some(t) = p.time_us.filter(|_| !p.at_start) {
        let _ = write!(at, " ({})", time_text(s, t));
    }
    if let Some(m) = &p.mark {
        let _ = write!(at, " in {}", cell(m));
    }
    at
}

/// A time relative to the trace's first event (`t=+12.345 ms`), or the file's value.
fn time_text(s: &Summary, t: f64) -> String {
    crate::summary::time_words(s, t, false)
}

/// The report of one device's summary (phases folded by name).
pub fn render(s: &Summary) -> String {
    render_with(s, false)
}

/// The Markdown report's first line for a file of several devices
/// ([`crate::summary::devices_index`]).
pub fn devices_line(shown: &[&Summary]) -> Option<String> {
    crate::summary::devices_index(shown).map(|list| {
        format!(
            "**{} devices**, each below in this order: {}",
            shown.len(),
            cell(&list)
        )
    })
}

/// [`render`], every window listed when `all_windows` (`--windows all`).
pub fn render_with(s: &Summary, all_windows: bool) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "### memtide · {} · {} · {}\n",
        cell(&s.source),
        cell(&s.format),
        cell(&s.device)
    );
    if let Some(p) = &s.peak {
        let _ = writeln!(o, "**Peak {}** {}.\n", size(p.bytes), peak_place(s));
    }
    if let Some(w) = &s.window {
        let _ = writeln!(
            o,
            "Measured in the window {} = {} (events #{}–#{}).\n",
            cell(&w.spec),
            cell(&w.label),
            w.first_index,
            w.last_index
        );
    }
    let _ = writeln!(o, "| figure | value |\n|---|---|");
    let _ = writeln!(
        o,
        "| peak | {} |",
        s.peak
            .as_ref()
            .map_or("unavailable".into(), |p| size(p.bytes))
    );
    let reserved = match (s.reserved_peak, s.reserved_peak_index) {
        (Some(r), Some(i)) => format!("{} at event #{i}", size(r)),
        (Some(r), None) => format!("{} at start", size(r)),
        _ => "unavailable (the source records no reserved memory)".into(),
    };
    let _ = writeln!(o, "| reserved peak | {reserved} |");
    let _ = writeln!(
        o,
        "| capacity | {} |",
        s.capacity.map_or("unknown".into(), size)
    );
    let _ = writeln!(o, "| final | {} |", size(s.final_bytes));
    let _ = writeln!(o, "| events | {} |", grouped(s.events));
    if let Some(d) = &s.distributed {
        let _ = writeln!(o, "| distributed | {} |", cell(&d.label()));
    }
    if let Some(n) = &s.nsys {
        let _ = writeln!(o, "| nsys | {} |", cell(&n.label()));
    }
    if let Some(d) = &s.device_log {
        let _ = writeln!(
            o,
            "| device log | {} ({}) |",
            cell(&d.label()),
            cell(&d.time_basis)
        );
    }
    let _ = writeln!(o);
    bands(&mut o, s);
    owners::persistent(&mut o, s);
    if let Some(b) = &s.budget {
        crate::serving::markdown(&mut o, b);
    }
    device_log(&mut o, s);
    owners::live(&mut o, s);
    steps(&mut o, s);
    windows(&mut o, &shown_windows(s, all_windows));
    oom::ooms(&mut o, s);
    if !s.notes.is_empty() {
        let _ = writeln!(o, "**Notes**\n");
        for n in &s.notes {
            let _ = writeln!(o, "- {}", cell(n));
        }
        let _ = writeln!(o);
    }
    if !s.warnings.is_empty() {
        let _ = writeln!(o, "**Warnings**\n");
        for w in &s.warnings {
            let doubt = if s.doubtful.contains(w) {
                " *(the figures may be wrong)*"
            } else {
                ""
            };
            let _ = writeln!(o, "- {}{doubt}", cell(w));
        }
        let _ = writeln!(o);
    }
    o
}

fn bands(o: &mut String, s: &Summary) {
    let Some(p) = &s.peak else { return };
    let _ = writeln!(
        o,
        "**Bands at the peak** ({})\n\n| band | bytes | share |\n|---|---:|---:|",
        s.bands_source
    );
    for b in Band::ALL {
        let v = p.bands[b.idx()];
        let pct = if p.bytes > 0 {
            v as f64 * 100.0 / p.bytes as f64
        } else {
            0.0
        };
        if !s.band_known(b) {
            // Not measured: "unavailable", never 0.
            let _ = writeln!(o, "| {} | unavailable | - |", b.name());
            continue;
        }
        let _ = writeln!(o, "| {} | {} | {pct:.1} % |", b.name(), human_bytes(v));
        if b == Band::External {
            for (src, bytes) in p.external_by_source.iter().flatten() {
                let _ = writeln!(
                    o,
                    "| &nbsp;&nbsp;{} | {} | |",
                    cell(src),
                    human_bytes(*bytes)
                );
            }
        }
    }
    let _ = writeln!(o);
    if !s.band_known(Band::Persistent) {
        let _ = writeln!(
            o,
            "Persistent, activation and workspace memory are unavailable: {}.\n",
            crate::summary::BANDS_UNAVAILABLE
        );
    }
    if !s.external_known {
        let _ = writeln!(
            o,
            "External memory (outside the framework) is unavailable: {}.\n",
            crate::summary::EXTERNAL_UNAVAILABLE
        );
    }
}

/// How `--device-log` was read and aligned: source, device, samples, shift, coverage.
fn device_log(o: &mut String, s: &Summary) {
    let Some(d) = &s.device_log else {
        return;
    };
    let _ = writeln!(o, "**Device log**\n\n| figure | value |\n|---|---|");
    let _ = writeln!(o, "| file | {} ({}) |", cell(&d.path), d.format);
    let _ = writeln!(
        o,
        "| device | {} |",
        d.device
            .map_or("no matching device".to_string(), |i| format!("device {i}"))
    );
    let every = d.sample_interval_us.map_or(String::new(), |i| {
        format!(" every {}", external::interval(i))
    });
    let _ = writeln!(o, "| samples | {}{every} |", grouped(d.samples));
    let _ = writeln!(
        o,
        "| aligned | {} · shift {} |",
        cell(&d.time_basis),
        external::secs(d.shift_us)
    );
    let _ = writeln!(
        o,
        "| coverage | {:.1} % of the trace ({} of {} events) |",
        d.coverage * 100.0,
        grouped(d.covered_events),
        grouped(d.events)
    );
    let peak = match s.device_log_peak_covered {
        Some(true) => "inside the log (its external bytes are the log's)",
        Some(false) => "outside the log (external there unavailable, counted as 0)",
        None => "unavailable",
    };
    let _ = writeln!(o, "| the peak | {peak} |");
    if d.used_below_reserved > 0 {
        let _ = writeln!(
            o,
            "| used < reserved | at {} events (by up to {}) |",
            grouped(d.used_below_reserved),
            human_bytes(d.max_shortfall)
        );
    }
    let _ = writeln!(o);
}

fn steps(o: &mut String, s: &Summary) {
    let t = &s.trend;
    if t.steps.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "**Steps** (baseline = bytes live at the step's start)\n\n| step | baseline | peak |\n|---|---:|---:|"
    );
    let (head, left_out, tail) = table_ends(&t.steps);
    let row = |o: &mut String, r: &StepRow| {
        let _ = writeln!(
            o,
            "| {} | {} | {} |",
            cell(&r.name),
            human_bytes(r.baseline.0),
            human_bytes(r.peak.0)
        );
    };
    head.iter().for_each(|r| row(o, r));
    if left_out > 0 {
        let _ = writeln!(o, "| {} | | |", steps_omitted_text(left_out));
    }
    tail.iter().for_each(|r| row(o, r));
    let _ = writeln!(o);
    if let Some(words) = t.growth_words() {
        let _ = writeln!(o, "Baseline after warm-up: {words}.\n");
    }
    if !t.survivors.is_empty() {
        let _ = writeln!(
            o,
            "| survives every step | count | bytes | frame |\n|---|---:|---:|---|"
        );
        for sv in t.survivors.iter().take(10) {
            let _ = writeln!(
                o,
                "| {} | {} | {} | {} |",
                if sv.name.is_empty() {
                    "-".into()
                } else {
                    cell(&sv.name)
                },
                sv.count,
                human_bytes(sv.bytes.0),
                cell(if sv.user_frame.is_empty() {
                    short_frame(&sv.frame)
                } else {
                    &sv.user_frame
                })
            );
        }
        let _ = writeln!(o);
    }
}

fn windows(o: &mut String, shown: &ShownWindows) {
    if shown.rows.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "**Windows**\n\n| kind | name | events | peak | at |\n|---|---|---|---:|---|"
    );
    for (w, count) in &shown.rows {
        let at = match (w.peak_index, w.peak_at_start) {
            (Some(i), _) => format!("#{i}"),
            (None, true) => "start".into(),
            _ => "-".into(),
        };
        // A folded row: the name's count; its events and peak are the highest window's.
        let name = if *count > 1 {
            format!("{} × {}", cell(&w.name), grouped(*count))
        } else {
            cell(&w.name)
        };
        let _ = writeln!(
            o,
            "| {} | {name} | #{}–#{} | {} | {at} |",
            w.kind,
            w.first_index,
            w.last_index,
            w.peak_bytes.map_or("-".into(), human_bytes)
        );
    }
    for line in shown.notes() {
        let _ = writeln!(o, "\n{line}");
    }
    let _ = writeln!(o);
}

#[cfg(test)]
mod tests {
    use super::cell;

    #[test]
    fn cells_escape_markdown_html_and_controls() {
        assert_eq!(cell("a|b"), "a\\|b");
        assert_eq!(cell("<script>"), "&lt;script&gt;");
        assert_eq!(cell("x\ny"), "x y");
        assert_eq!(cell("\u{1b}]0;t\u{7}"), "\\\\x1b\\]0;t\\\\x07");
        assert_eq!(cell("layers.0.weight"), "layers.0.weight");
    }

    #[test]
    fn mentions_and_references_never_reach_a_ci_comment() {
        // GitHub turns these into notifications and links; the zero-width space stops it.
        assert_eq!(cell("@team please"), "@&#8203;team please");
        assert_eq!(cell("see #123"), "see #&#8203;123");
        assert_eq!(cell("org/repo#7"), "org/repo#&#8203;7");
        assert_eq!(cell("GH-42 and gh-1"), "GH&#8203;-42 and gh&#8203;-1");
        // What is neither is left alone.
        assert_eq!(cell("(#5)"), "(#&#8203;5)");
        assert_eq!(cell("a@ b # c x-1 #x"), "a@ b # c x-1 #x");
        assert_eq!(cell("ProfilerStep#2"), "ProfilerStep#2");
        assert_eq!(cell("user@"), "user@");
    }
}
