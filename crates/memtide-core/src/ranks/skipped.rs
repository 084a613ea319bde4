//! Skipped files summarised: one line per kind of reason, with a count and the first few
//! names, so a job directory holding hundreds of notes and configs does not print hundreds of
//! lines (issue 35).

use super::Skipped;
use std::path::Path;

/// How many names a summarised line shows before "… and N more".
pub const NAMES_SHOWN: usize = 3;

/// Skipped files that share a kind of reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkipGroup {
    /// The reason's kind: the reason up to its first ` (` or `: ` (`a directory`, `not a trace
    /// nor a memtide summary`), which its details (the bytes a file starts with) follow.
    pub kind: String,
    /// The whole reason of the first file (what a group of one prints).
    pub first_reason: String,
    /// File names in the order given (a directory's name ends in `/`).
    pub names: Vec<String>,
}

/// The kind of a reason: what comes before its details.
pub(crate) fn reason_kind(reason: &str) -> &str {
    let cut = [" (", ": "]
        .iter()
        .filter_map(|sep| reason.find(sep))
        .min()
        .unwrap_or(reason.len());
    &reason[..cut]
}

/// `skipped` grouped by kind, groups in the order their first file comes.
pub fn group(skipped: &[Skipped]) -> Vec<SkipGroup> {
    let mut groups: Vec<SkipGroup> = Vec::new();
    for s in skipped {
        let kind = reason_kind(&s.reason);
        let name = display_name(&s.path, is_directory_reason(kind));
        match groups.iter_mut().find(|g| g.kind == kind) {
            Some(g) => g.names.push(name),
            None => groups.push(SkipGroup {
                kind: kind.to_string(),
                first_reason: s.reason.clone(),
                names: vec![name],
            }),
        }
    }
    groups
}

impl SkipGroup {
    /// One line: `config.yaml: not a trace … (it starts with …)` for a group of one, else
    /// `615 files that are not traces nor memtide summaries: README.md, config.yaml,
    /// notes.txt, … and 612 more`.
    pub fn line(&self) -> String {
        match self.names.as_slice() {
            [one] => format!("{one}: {}", self.first_reason),
            names => format!(
                "{} {}: {}",
                names.len(),
                plural_kind(&self.kind),
                names_with_more(names, NAMES_SHOWN)
            ),
        }
    }
}

/// `a, b, c, … and 7 more` (all of them when there are at most `shown`).
pub fn names_with_more(names: &[String], shown: usize) -> String {
    let mut s = names
        .iter()
        .take(shown)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > shown {
        s.push_str(&format!(", … and {} more", names.len() - shown));
    }
    s
}

fn is_directory_reason(kind: &str) -> bool {
    kind == super::discover::DIRECTORY
}

/// The kind said of many: `files that are not traces nor memtide summaries`.
fn plural_kind(kind: &str) -> String {
    if is_directory_reason(kind) {
        "directories (only the files directly in the job's directory are read)".into()
    } else if kind == super::discover::EXCLUDED {
        format!("files {kind}")
    } else if let Some(rest) = kind.strip_prefix("not ") {
        format!(
            "files that are not {}",
            rest.replace(
                "a trace nor a memtide summary",
                "traces nor memtide summaries"
            )
        )
    } else {
        format!("files, {kind}")
    }
}

fn display_name(p: &Path, dir: bool) -> String {
    let mut n = p.file_name().map_or_else(
        || p.display().to_string(),
        |f| f.to_string_lossy().into_owned(),
    );
    if dir {
        n.push('/');
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn sk(name: &str, reason: &str) -> Skipped {
        Skipped {
            path: PathBuf::from("/job").join(name),
            reason: reason.into(),
        }
    }

    #[test]
    fn many_notes_make_one_line_with_a_count() {
        let mut v = vec![sk(
            "sub",
            "a directory (only the files directly in the job's directory are read)",
        )];
        for i in 0..615 {
            v.push(sk(
                &format!("n{i:03}.md"),
                &format!("not a trace nor a memtide summary (it starts with bytes {i:02x})"),
            ));
        }
        let g = group(&v);
        assert_eq!(g.len(), 2);
        assert_eq!(
            g[0].line(),
            "sub/: a directory (only the files directly in the job's directory are read)"
        );
        assert_eq!(
            g[1].line(),
            "615 files that are not traces nor memtide summaries: n000.md, n001.md, n002.md, \
             … and 612 more"
        );
    }

    #[test]
    fn a_group_of_one_keeps_its_whole_reason() {
        let g = group(&[sk(
            "README.md",
            "not a trace nor a memtide summary (it starts with bytes 23 20)",
        )]);
        assert_eq!(
            g[0].line(),
            "README.md: not a trace nor a memtide summary (it starts with bytes 23 20)"
        );
    }

    #[test]
    fn three_names_are_all_shown() {
        let names: Vec<String> = ["a", "b", "c"].iter().map(|s| s.to_string()).collect();
        assert_eq!(names_with_more(&names, 3), "a, b, c");
        assert_eq!(names_with_more(&names, 2), "a, b, … and 1 more");
    }
}
