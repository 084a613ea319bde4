//! Which files make up the job, and the rank number each file name gives.
//!
//! A directory's regular files, hidden ones (`.name`) left out, subdirectories skipped with a
//! note; or a list of files as given. Content decides later whether a file is a trace (the
//! reader) or a `summary --json` object; nothing is judged by its extension here.

use super::exclude::Exclude;
use std::path::{Path, PathBuf};

/// One file of the job, before it is read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankFile {
    pub path: PathBuf,
    /// Position in the order given (a directory: sorted by name rank, then name).
    pub order: usize,
    /// The rank its name gives ([`rank_from_name`]), None when it gives none.
    pub name_rank: Option<u64>,
}

/// A file left out, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub path: PathBuf,
    pub reason: String,
}

impl Skipped {
    /// Whether the skipped entry is a subdirectory (its name is shown with a `/`).
    pub fn is_directory(&self) -> bool {
        self.reason.starts_with(DIRECTORY)
    }
}

/// The reason of a subdirectory, up to its details.
pub(crate) const DIRECTORY: &str = "a directory";

/// The files of a job and what was skipped while listing them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Discovered {
    pub files: Vec<RankFile>,
    pub skipped: Vec<Skipped>,
}

/// How sure a name's rank is: `rank3` / `rank-3` / `rank_3` say so; `trace_3.json` /
/// `trace-3.json` only suggest it (a profiler's `host_PID.TS.pt.trace.json` has such a number
/// too, so these count only when they differ across the job).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRank {
    Named(u64),
    Suggested(u64),
}

impl NameRank {
    pub fn value(self) -> u64 {
        match self {
            NameRank::Named(n) | NameRank::Suggested(n) => n,
        }
    }
}

/// The rank a file name gives: `rank3`, `rank-3`, `rank_3`, `rank.3`, `Rank 3` (any case,
/// anywhere in the name) are `NameRank::Named`; a number ending the name's first part after
/// `_` or `-` (`snapshot_3.pickle`, `trace-12.json.gz`) or a name that is only a number
/// (`3.pickle`) is `NameRank::Suggested`.
pub fn rank_from_name(name: &str) -> Option<NameRank> {
    let lower = name.to_ascii_lowercase();
    let b = lower.as_bytes();
    let mut from = 0;
    while let Some(k) = lower[from..].find("rank") {
        let mut i = from + k + 4;
        if i < b.len() && matches!(b[i], b'-' | b'_' | b'.' | b' ' | b':' | b'=') {
            i += 1;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i > start {
            if let Ok(n) = lower[start..i].parse::<u64>() {
                return Some(NameRank::Named(n));
            }
        }
        from += k + 4;
    }
    // The first part of the name (`trace_3` of `trace_3.pt.trace.json`).
    let stem = lower.split('.').next().unwrap_or("");
    let digits = stem.bytes().rev().take_while(u8::is_ascii_digit).count();
    if digits == 0 || digits > 9 {
        return None;
    }
    let cut = stem.len() - digits;
    let before = stem.as_bytes()[..cut].last().copied();
    if matches!(before, None | Some(b'_') | Some(b'-')) {
        return stem[cut..].parse().ok().map(NameRank::Suggested);
    }
    None
}

/// The files of the job: a single directory is listed; anything else is the list as given.
/// Fails only when a directory cannot be listed.
pub fn discover(inputs: &[PathBuf]) -> std::io::Result<Discovered> {
    discover_excluding(inputs, &Exclude::none())
}

/// [`discover`], leaving out the files whose name `exclude` matches (`--exclude GLOB`): each
/// is listed as skipped, naming the pattern, and never read.
pub fn discover_excluding(inputs: &[PathBuf], exclude: &Exclude) -> std::io::Result<Discovered> {
    let mut d = discover_all(inputs)?;
    if exclude.is_empty() {
        return Ok(d);
    }
    let mut kept = Vec::with_capacity(d.files.len());
    for f in d.files {
        match exclude.matching(&file_name(&f.path)) {
            Some(glob) => d.skipped.push(Skipped {
                path: f.path,
                reason: format!("{EXCLUDED} (it matches {glob})"),
            }),
            None => kept.push(f),
        }
    }
    // The order given, renumbered over the files kept.
    for (order, f) in kept.iter_mut().enumerate() {
        f.order = order;
    }
    d.files = kept;
    Ok(d)
}

/// The reason of a file `--exclude` left out, up to its details.
pub(crate) const EXCLUDED: &str = "left out by --exclude";

fn discover_all(inputs: &[PathBuf]) -> std::io::Result<Discovered> {
    let mut d = Discovered::default();
    let mut paths: Vec<PathBuf> = Vec::new();
    match inputs {
        [dir] if dir.is_dir() => {
            let mut names: Vec<PathBuf> = Vec::new();
            for e in std::fs::read_dir(dir)? {
                let e = e?;
                let path = e.path();
                let hidden = e.file_name().to_string_lossy().starts_with('.');
                if hidden {
                    continue;
                }
                if path.is_dir() {
                    d.skipped.push(Skipped {
                        path,
                        reason:
                            "a directory (only the files directly in the job's directory are read)"
                                .into(),
                    });
                } else {
                    names.push(path);
                }
            }
            names.sort_by(|a, b| {
                let key = |p: &Path| {
                    let n = file_name(p);
                    (rank_from_name(&n).map_or(u64::MAX, NameRank::value), n)
                };
                key(a).cmp(&key(b))
            });
            paths = names;
            d.skipped.sort_by(|a, b| a.path.cmp(&b.path));
        }
        _ => {
            for p in inputs {
                if p.is_dir() {
                    d.skipped.push(Skipped {
                        path: p.clone(),
                        reason: "a directory (give one directory alone, or files)".into(),
                    });
                } else {
                    paths.push(p.clone());
                }
            }
        }
    }
    let ranks: Vec<Option<NameRank>> = paths
        .iter()
        .map(|p| rank_from_name(&file_name(p)))
        .collect();
    // Suggested numbers count only when no two files share one.
    let mut suggested: Vec<u64> = ranks
        .iter()
        .filter_map(|r| match r {
            Some(NameRank::Suggested(n)) => Some(*n),
            _ => None,
        })
        .collect();
    suggested.sort_unstable();
    let distinct = suggested.windows(2).all(|w| w[0] != w[1]);
    d.files = paths
        .into_iter()
        .zip(ranks)
        .enumerate()
        .map(|(order, (path, r))| RankFile {
            path,
            order,
            name_rank: match r {
                Some(NameRank::Named(n)) => Some(n),
                Some(NameRank::Suggested(n)) if distinct => Some(n),
                _ => None,
            },
        })
        .collect();
    Ok(d)
}

fn file_name(p: &Path) -> String {
    p.file_name().map_or_else(
        || p.display().to_string(),
        |f| f.to_string_lossy().into_owned(),
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn ranks_from_names() {
        let named =
            |s: &str| rank_from_name(s).map(|r| (r.value(), matches!(r, NameRank::Named(_))));
        assert_eq!(named("rank3.pickle"), Some((3, true)));
        assert_eq!(named("rank-3.pickle"), Some((3, true)));
        assert_eq!(named("rank_12.json.gz"), Some((12, true)));
        assert_eq!(named("job.Rank.7.pt.trace.json"), Some((7, true)));
        assert_eq!(named("snapshot_rank5_step100.pickle"), Some((5, true)));
        assert_eq!(named("ranking_rank2.pickle"), Some((2, true)));
        assert_eq!(named("trace_3.pickle"), Some((3, false)));
        assert_eq!(named("trace-3.json"), Some((3, false)));
        assert_eq!(named("4.pickle"), Some((4, false)));
        assert_eq!(
            named("host_1234.1700000000.pt.trace.json"),
            Some((1234, false))
        );
        assert_eq!(named("worker0.pickle"), None);
        assert_eq!(named("memory.pickle"), None);
        assert_eq!(named("v2.3.pickle"), None);
    }

    #[test]
    fn a_directory_is_listed_in_rank_order() {
        let dir = std::env::temp_dir().join(format!("memtide-discover-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        for n in [
            "rank10.pickle",
            "rank2.pickle",
            "rank1.pickle",
            ".hidden",
            "notes.txt",
        ] {
            std::fs::write(dir.join(n), b"x").unwrap();
        }
        let d = discover(std::slice::from_ref(&dir)).unwrap();
        let names: Vec<String> = d.files.iter().map(|f| file_name(&f.path)).collect();
        assert_eq!(
            names,
            ["rank1.pickle", "rank2.pickle", "rank10.pickle", "notes.txt"]
        );
        assert_eq!(d.files[2].name_rank, Some(10));
        assert_eq!(d.files[3].name_rank, None);
        assert_eq!(d.skipped.len(), 1, "the subdirectory");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn excluded_names_are_skipped_and_the_rest_renumbered() {
        let paths: Vec<PathBuf> = ["rank0.pickle", "notes.pickle", "rank1.pickle"]
            .iter()
            .map(PathBuf::from)
            .collect();
        let d = discover_excluding(&paths, &Exclude::parse(&["notes*"]).unwrap()).unwrap();
        let kept: Vec<(String, usize)> = d
            .files
            .iter()
            .map(|f| (file_name(&f.path), f.order))
            .collect();
        assert_eq!(
            kept,
            [
                ("rank0.pickle".to_string(), 0),
                ("rank1.pickle".to_string(), 1)
            ]
        );
        assert_eq!(d.skipped.len(), 1);
        assert_eq!(
            d.skipped[0].reason,
            "left out by --exclude (it matches notes*)"
        );
    }

    #[test]
    fn suggested_numbers_that_repeat_are_dropped() {
        let paths: Vec<PathBuf> = ["a_1.pickle", "b_1.pickle", "rank_4.pickle"]
            .iter()
            .map(PathBuf::from)
            .collect();
        let d = discover(&paths).unwrap();
        let r: Vec<Option<u64>> = d.files.iter().map(|f| f.name_rank).collect();
        assert_eq!(r, [None, None, Some(4)]);
    }
}
