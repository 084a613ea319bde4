//! The answers about a distributed job (`memtide summary DIR`, the rows `memtide check DIR`
//! gates): the options each rank is read with, the ranks table as text and Markdown, the
//! `summary DIR --json` document.

use crate::gate_text::{extremes_text, ratio_text};
use crate::options::InputOptions;
use anyhow::Result;
use memtide_core::ranks::{RankOptions, RankRow, Ranks};
use memtide_core::trace::human_bytes;
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::PathBuf;

/// How each rank is read: `input`'s options, `capacity` and `window` as written, the rules
/// file read once for every rank.
pub fn options(
    input: &InputOptions,
    capacity: Option<&str>,
    window: Option<&str>,
    all_frames: bool,
) -> Result<RankOptions> {
    let load = input.load_options();
    // The rules file is read once, before any rank (a bad one fails first).
    let rules = memtide_core::open::UserRules::read(&load)
        .map_err(|e| crate::prologue::open_error(memtide_core::open::OpenError::SideFile(e)))?;
    Ok(RankOptions {
        device: input.device.clone(),
        capacity: capacity
            .map(|c| crate::sizes::capacity(c).map(|b| b.0))
            .transpose()?,
        window: window
            .map(memtide_core::analysis::WindowSpec::parse)
            .transpose()?,
        rules: Some(std::sync::Arc::new(rules)),
        all_frames,
        load,
        ..RankOptions::default()
    })
}

/// A file's name for a table row: its last component.
pub fn display_name(p: &std::path::Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |f| f.to_string_lossy().into_owned(),
    )
}

/// The error when no file of the job could be read, naming the first unreadable ones.
pub fn nothing_readable(r: &Ranks, title: &str) -> Vec<String> {
    let mut v = vec![format!(
        "no readable rank file in {title} ({} unreadable, {} skipped)",
        r.errors.len(),
        r.skipped.len()
    )];
    for f in r.errors.iter().take(3) {
        v.push(format!("{}: {}", f.path.display(), f.error));
    }
    if r.errors.len() > 3 {
        v.push(format!("… and {} more", r.errors.len() - 3));
    }
    v
}

/// What the job is called in headings: the directory, or `N files`.
pub fn title(files: &[PathBuf]) -> String {
    match files {
        [one] => one.display().to_string(),
        many => format!("{} files", many.len()),
    }
}

/// `rank 2 (rank2.pickle)`.
fn who(row: &RankRow) -> String {
    format!("rank {} ({})", row.rank, row.file_name())
}

fn opt_bytes(b: Option<u64>) -> String {
    b.map_or_else(|| "–".into(), human_bytes)
}

/// The ranks table: heading, spread, worst rank, one row per rank, what was skipped and
/// what could not be read.
pub fn render_text(r: &Ranks, title: &str) -> String {
    let mut o = String::new();
    let read = r.rows.len();
    let files = read + r.errors.len();
    crate::report_line!(
        o,
        "memtide ranks · {title} · {read} rank{} read of {files} file{}",
        plural(read),
        plural(files)
    );
    crate::report_line!(o, "sizes in binary units (1 MiB = 1,048,576 B)");
    let spread = r.spread();
    let worst = r.worst();
    if let (Some(s), Some(w)) = (spread, worst) {
        crate::report_line!(
            o,
            "spread           max/min {} ({}) · max − median {} (median {})",
            ratio_text(s.ratio),
            extremes_text(s.worst_rank, s.max, s.best_rank, s.min),
            human_bytes(s.max_minus_median),
            human_bytes(s.median)
        );
        let mut at = String::new();
        if let Some(i) = w.peak_index {
            let _ = write!(at, " at event #{i}");
        }
        let sp = w.step_phase();
        if !sp.is_empty() {
            let _ = write!(at, " · {sp}");
        }
        crate::report_line!(
            o,
            "worst rank       {} · peak {}{at} · {}",
            w.rank,
            human_bytes(s.max),
            w.file_name()
        );
    }
    let oom: Vec<String> = r
        .rows
        .iter()
        .filter(|x| x.ooms > 0)
        .map(|x| format!("rank {} ({})", x.rank, x.ooms))
        .collect();
    if !oom.is_empty() {
        crate::report_line!(o, "out of memory    {}", oom.join(", "));
    }
    if !r.rows.is_empty() {
        let _ = writeln!(o);
        table(&mut o, r, worst.map(|w| w.order));
    }
    lists(&mut o, r);
    o
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The per-rank rows, the worst one marked `*`.
fn table(o: &mut String, r: &Ranks, worst: Option<usize>) {
    let head = [
        "rank",
        "device",
        "peak",
        "at",
        "step · phase",
        "reserved",
        "OOMs",
        "persistent",
        "activation",
        "file",
    ];
    let rows: Vec<[String; 10]> = r
        .rows
        .iter()
        .map(|x| {
            let mut sp = x.step_phase();
            if sp.chars().count() > 32 {
                sp = sp.chars().take(31).collect::<String>() + "…";
            }
            [
                x.rank.to_string(),
                x.device.clone(),
                opt_bytes(x.peak),
                x.peak_index.map_or_else(
                    || {
                        if x.peak.is_some() {
                            "start".into()
                        } else {
                            "–".into()
                        }
                    },
                    |i| format!("#{i}"),
                ),
                if sp.is_empty() { "–".into() } else { sp },
                opt_bytes(x.reserved_peak),
                x.ooms.to_string(),
                opt_bytes(x.persistent),
                opt_bytes(x.activation),
                x.file_name(),
            ]
        })
        .collect();
    let mut w = head.map(|h| h.chars().count());
    for row in &rows {
        for (k, c) in row.iter().enumerate() {
            w[k] = w[k].max(c.chars().count());
        }
    }
    // Numbers right-aligned; names left.
    let right = [
        true, false, true, true, false, true, true, true, true, false,
    ];
    let line = |mark: &str, cells: &[String]| {
        let mut l = format!("{mark} ");
        for (k, c) in cells.iter().enumerate() {
            let pad = w[k].saturating_sub(c.chars().count());
            if right[k] {
                l.push_str(&" ".repeat(pad));
                l.push_str(c);
            } else {
                l.push_str(c);
                if k + 1 < cells.len() {
                    l.push_str(&" ".repeat(pad));
                }
            }
            if k + 1 < cells.len() {
                l.push_str("  ");
            }
        }
        l.trim_end().to_string()
    };
    crate::report_line!(o, "{}", line(" ", &head.map(String::from)));
    for (row, x) in rows.iter().zip(&r.rows) {
        let mark = if Some(x.order) == worst { "*" } else { " " };
        crate::report_line!(o, "{}", line(mark, row));
    }
    crate::report_line!(o, "  (* the worst rank: the highest peak)");
}

/// Skipped files, unreadable files, notes and the ranks whose figures are in doubt.
fn lists(o: &mut String, r: &Ranks) {
    if !r.skipped.is_empty() {
        let _ = writeln!(o);
        crate::report_line!(o, "skipped (not traces):");
        for g in memtide_core::ranks::group_skipped(&r.skipped) {
            crate::report_line!(o, "  {}", g.line());
        }
    }
    if !r.errors.is_empty() {
        let _ = writeln!(o);
        crate::report_line!(o, "unreadable:");
        for e in &r.errors {
            crate::report_line!(o, "  {}: {}", display_name(&e.path), e.error);
        }
    }
    let doubtful: Vec<&RankRow> = r.rows.iter().filter(|x| !x.doubtful.is_empty()).collect();
    if !r.notes.is_empty() || !doubtful.is_empty() {
        let _ = writeln!(o);
        crate::report_line!(o, "notes:");
        for n in &r.notes {
            crate::report_line!(o, "  - {n}");
        }
        for x in doubtful {
            crate::report_line!(
                o,
                "  - {}: the figures may be wrong: {}",
                who(x),
                x.doubtful.join("; ")
            );
        }
    }
}

/// The ranks table as GitHub Markdown.
pub fn render_markdown(r: &Ranks, title: &str) -> String {
    use crate::markdown::cell;
    let mut o = String::new();
    crate::report_line!(o, "### memtide ranks · {}", cell(title));
    let _ = writeln!(o);
    let worst = r.worst().map(|w| w.order);
    if let Some(s) = r.spread() {
        crate::report_line!(
            o,
            "Spread: max/min **{}** · max − median **{}** · worst rank **{}** ({})",
            ratio_text(s.ratio),
            human_bytes(s.max_minus_median),
            s.worst_rank,
            human_bytes(s.max)
        );
        let _ = writeln!(o);
    }
    crate::report_line!(o, "| rank | device | peak | step · phase | reserved | OOMs | persistent | activation | file |"
    );
    crate::report_line!(o, "|---:|---|---:|---|---:|---:|---:|---:|---|");
    for x in &r.rows {
        let b = if Some(x.order) == worst { "**" } else { "" };
        crate::report_line!(
            o,
            "| {b}{}{b} | {} | {b}{}{b} | {} | {} | {} | {} | {} | {} |",
            x.rank,
            cell(&x.device),
            opt_bytes(x.peak),
            cell(&x.step_phase()),
            opt_bytes(x.reserved_peak),
            x.ooms,
            opt_bytes(x.persistent),
            opt_bytes(x.activation),
            cell(&x.file_name())
        );
    }
    for g in memtide_core::ranks::group_skipped(&r.skipped) {
        let _ = writeln!(o);
        crate::report_line!(o, "- skipped {}", cell(&g.line()));
    }
    for e in &r.errors {
        let _ = writeln!(o);
        crate::report_line!(
            o,
            "- unreadable {}: {}",
            cell(&display_name(&e.path)),
            cell(&e.error)
        );
    }
    o
}

/// The `summary DIR --json` document (docs/ranks.md): one element per rank, holding
/// that file's own `summary --json` text as it was kept, then the job's figures.
#[derive(serde::Serialize)]
pub struct JobJson<'a> {
    ranks: Vec<RankJson<'a>>,
    #[serde(flatten)]
    job: serde_json::Map<String, Value>,
}

#[derive(serde::Serialize)]
struct RankJson<'a> {
    rank: u64,
    rank_from: &'static str,
    file: String,
    summary: Option<&'a serde_json::value::RawValue>,
    timeline: Option<&'a [u64]>,
}

/// The `summary DIR --json` document of `r`.
pub fn to_json(r: &Ranks) -> JobJson<'_> {
    let spread = r.spread();
    let ranks = r
        .rows
        .iter()
        .map(|x| RankJson {
            rank: x.rank,
            rank_from: x.rank_from.name(),
            file: x.file.display().to_string(),
            summary: x.summary.as_ref().map(|k| k.raw()),
            timeline: (!x.from_summary).then_some(x.sparkline.as_slice()),
        })
        .collect();
    let mut job = serde_json::Map::new();
    job.insert(
        "spread".into(),
        json!(spread.map(|s| json!({
            "ranks": s.count,
            "max_peak": s.max,
            "min_peak": s.min,
            "median_peak": s.median,
            "max_over_min": s.ratio,
            "max_minus_median": s.max_minus_median,
            "max_rank": s.worst_rank,
            "min_rank": s.best_rank,
        }))),
    );
    job.insert("worst_rank".into(), json!(spread.map(|s| s.worst_rank)));
    job.insert(
        "oom_ranks".into(),
        json!(r
            .rows
            .iter()
            .filter(|x| x.ooms > 0)
            .map(|x| x.rank)
            .collect::<Vec<_>>()),
    );
    job.insert(
        "skipped".into(),
        r.skipped
            .iter()
            .map(|s| json!({"file": s.path.display().to_string(), "reason": s.reason}))
            .collect(),
    );
    job.insert(
        "errors".into(),
        r.errors
            .iter()
            .map(|e| json!({"file": e.path.display().to_string(), "error": e.error}))
            .collect(),
    );
    job.insert("notes".into(), json!(r.notes));
    JobJson { ranks, job }
}
