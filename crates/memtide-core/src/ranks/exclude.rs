//! `--exclude GLOB`: files of a job left out by name before anything is read (a damaged file
//! the user knows about, notes, configs). A pattern is matched against each file's name, not
//! its directory: `*` any run of characters, `?` one character, `[abc]` / `[a-z]` one of a
//! set (`[!…]` or `[^…]`: one not in it); any other character stands for itself.

/// The patterns a job's listing leaves out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exclude {
    patterns: Vec<Pattern>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Pattern {
    text: String,
    parts: Vec<Part>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Char(char),
    Any,
    Star,
    Set {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

impl Exclude {
    /// Leaves nothing out.
    pub fn none() -> Exclude {
        Exclude::default()
    }

    /// The patterns as given; an empty one, one with a `/` (names are matched, not paths) or
    /// an unclosed `[` is refused, naming it.
    pub fn parse<S: AsRef<str>>(globs: &[S]) -> Result<Exclude, String> {
        let patterns = globs
            .iter()
            .map(|g| parse_one(g.as_ref()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Exclude { patterns })
    }

    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// The first pattern that matches `name` (a file name), as given.
    pub fn matching(&self, name: &str) -> Option<&str> {
        let chars: Vec<char> = name.chars().collect();
        self.patterns
            .iter()
            .find(|p| matches(&p.parts, &chars))
            .map(|p| p.text.as_str())
    }
}

fn parse_one(g: &str) -> Result<Pattern, String> {
    if g.is_empty() {
        return Err("--exclude: an empty pattern".into());
    }
    if g.contains('/') {
        return Err(format!(
            "--exclude {g:?}: a pattern matches file names, not paths (drop the '/')"
        ));
    }
    let cs: Vec<char> = g.chars().collect();
    let mut parts = Vec::new();
    let mut i = 0;
    while i < cs.len() {
        match cs[i] {
            '*' => {
                if parts.last() != Some(&Part::Star) {
                    parts.push(Part::Star);
                }
                i += 1;
            }
            '?' => {
                parts.push(Part::Any);
                i += 1;
            }
            '[' => {
                let mut j = i + 1;
                let negated = matches!(cs.get(j), Some('!') | Some('^'));
                if negated {
                    j += 1;
                }
                let mut ranges = Vec::new();
                // A `]` first in the set stands for itself.
                let mut first = true;
                loop {
                    let Some(&c) = cs.get(j) else {
                        return Err(format!("--exclude {g:?}: a '[' without its ']'"));
                    };
                    if c == ']' && !first {
                        break;
                    }
                    first = false;
                    match (cs.get(j + 1), cs.get(j + 2)) {
                        (Some('-'), Some(&hi)) if hi != ']' => {
                            ranges.push((c, hi));
                            j += 3;
                        }
                        _ => {
                            ranges.push((c, c));
                            j += 1;
                        }
                    }
                }
                parts.push(Part::Set { negated, ranges });
                i = j + 1;
            }
            c => {
                parts.push(Part::Char(c));
                i += 1;
            }
        }
    }
    Ok(Pattern {
        text: g.to_string(),
        parts,
    })
}

fn one(p: &Part, c: char) -> bool {
    match p {
        Part::Char(x) => *x == c,
        Part::Any => true,
        Part::Star => false,
        Part::Set { negated, ranges } => {
            ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated
        }
    }
}

/// Whether `parts` match all of `name`: the usual two-pointer walk, going back only to the
/// last `*` (at most pattern × name steps).
fn matches(parts: &[Part], name: &[char]) -> bool {
    let (mut p, mut n) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while n < name.len() {
        match parts.get(p) {
            Some(Part::Star) => {
                star = Some((p, n));
                p += 1;
            }
            Some(part) if one(part, name[n]) => {
                p += 1;
                n += 1;
            }
            _ => match star {
                Some((sp, sn)) => {
                    p = sp + 1;
                    n = sn + 1;
                    star = Some((sp, sn + 1));
                }
                None => return false,
            },
        }
    }
    parts[p..].iter().all(|x| *x == Part::Star)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn m(glob: &str, name: &str) -> bool {
        Exclude::parse(&[glob]).unwrap().matching(name).is_some()
    }

    #[test]
    fn globs_match_whole_names() {
        assert!(m("notes*", "notes.pickle"));
        assert!(m("*.pickle", "rank3.pickle"));
        assert!(!m("*.pickle", "rank3.pickle.gz"));
        assert!(m("rank?.pickle", "rank7.pickle"));
        assert!(!m("rank?.pickle", "rank17.pickle"));
        assert!(m("rank[0-3].pickle", "rank2.pickle"));
        assert!(!m("rank[0-3].pickle", "rank7.pickle"));
        assert!(m("rank[!0-3].pickle", "rank7.pickle"));
        assert!(m("*a*b*c", "xxaxxbxxc"));
        assert!(!m("*a*b*c", "xxaxxcxxb"));
        assert!(m("[]]x", "]x"));
        assert!(m("*", ""));
        assert!(!m("a", ""));
        assert!(m("exact.json", "exact.json"));
        assert!(!m("exact.json", "exact.jsonl"));
    }

    #[test]
    fn bad_patterns_are_refused() {
        assert!(Exclude::parse(&["rank[0-3"]).unwrap_err().contains("'['"));
        assert!(Exclude::parse(&["a/b"]).unwrap_err().contains("file names"));
        assert!(Exclude::parse(&[""]).is_err());
        assert!(Exclude::parse::<&str>(&[]).unwrap().is_empty());
    }

    #[test]
    fn the_first_matching_pattern_is_named() {
        let e = Exclude::parse(&["*.txt", "notes*"]).unwrap();
        assert_eq!(e.matching("notes.pickle"), Some("notes*"));
        assert_eq!(e.matching("notes.txt"), Some("*.txt"));
        assert_eq!(e.matching("rank0.pickle"), None);
    }
}
