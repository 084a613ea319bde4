//! The README and the guide in `docs/` stay true. The README stays a five-minute read; every
//! documented command that runs on a bundled file (`sample-traces/`, `tests/fixtures/`), and
//! the headless `lab`, is run with the built binary and must exit as documented (0, or the `# exits N` its comment
//! states), with the output shown beside a `$ ` command found in what it prints; the JSONL
//! and rules examples are accepted; the README's screenshot is what the explorer draws and its
//! key table is the keymap's; and no Markdown link, repository path, `DESIGN` citation or man
//! page named in the docs or in code comments is dangling.

#![allow(clippy::unwrap_used)]

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The README's limit: a newcomer reads it in five minutes.
const README_MAX_CHARS: usize = 25_000;

/// Fewer documented commands than this run: the extraction broke, not the docs.
const MIN_COMMANDS_RUN: usize = 25;

/// Directories whose names mark a repository-relative path in prose and comments.
const PATH_ROOTS: &[&str] = &[
    "docs",
    "benches",
    "scripts",
    "tests",
    "sample-traces",
    "examples",
    "tools",
    "python",
    "crates",
    "src",
    "themes",
    "fuzz",
    ".ci",
];

/// Subcommands that print and exit (the explorer, `-f` and a bare `lab` open a screen).
const HEADLESS: &[&str] = &[
    "summary", "check", "diff", "whatif", "plot", "replay", "lab",
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(root().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// README.md, CONTRIBUTING.md and every page of the guide, as (repository-relative path,
/// text).
fn documents() -> Vec<(String, String)> {
    let mut docs = vec![
        ("README.md".to_string(), read("README.md")),
        ("CONTRIBUTING.md".to_string(), read("CONTRIBUTING.md")),
    ];
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    pages.sort();
    for p in pages {
        let rel = p
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        docs.push((rel.clone(), read(&rel)));
    }
    docs
}

// ---------------------------------------------------------------------------------------
// Fenced blocks and the commands in them
// ---------------------------------------------------------------------------------------

/// A fenced code block: its info string, the 1-based line of its first content line, its
/// lines, and the last non-blank line before its fence (where a `<!-- screen: … -->` marker
/// goes).
struct Block {
    lang: String,
    first_line: usize,
    lines: Vec<String>,
    before: String,
}

/// Every fenced block of a Markdown text (fences may be indented, as in list items).
fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<(Block, usize)> = None;
    let mut before = "";
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match open.take() {
            None => {
                if let Some(info) = trimmed.strip_prefix("```") {
                    let block = Block {
                        lang: info.trim().to_string(),
                        first_line: i + 2,
                        lines: Vec::new(),
                        before: before.to_string(),
                    };
                    open = Some((block, indent));
                } else if !trimmed.is_empty() {
                    before = trimmed;
                }
            }
            Some((mut block, ind)) => {
                if trimmed == "```" {
                    out.push(block);
                } else {
                    let cut = line.len().min(ind);
                    let body = if line[..cut].trim().is_empty() {
                        &line[cut..]
                    } else {
                        line
                    };
                    block.lines.push(body.to_string());
                    open = Some((block, ind));
                }
            }
        }
    }
    out
}

/// One documented command line, and the output shown under it (for `$ ` lines).
struct DocCommand {
    place: String,
    line: String,
    shown_output: Vec<String>,
}

/// The commands of a document: every line of a `sh`/`bash`/`console` block, and every
/// `$ ` line of any other block with the lines under it (up to the next `$ `) as its shown
/// output. A line ending in `\` continues on the next.
fn commands(file: &str, text: &str) -> Vec<DocCommand> {
    let mut out: Vec<DocCommand> = Vec::new();
    for b in blocks(text) {
        let shell = matches!(b.lang.as_str(), "sh" | "bash" | "console" | "shell");
        if !shell && !b.lang.is_empty() {
            continue;
        }
        let mut i = 0;
        let mut current: Option<usize> = None;
        while i < b.lines.len() {
            let raw = &b.lines[i];
            let start = i;
            let dollar = raw.strip_prefix("$ ");
            if dollar.is_none() && !(shell && !raw.trim().is_empty() && !raw.starts_with('#')) {
                if let Some(c) = current {
                    out[c].shown_output.push(raw.clone());
                }
                i += 1;
                continue;
            }
            let mut line = dollar.unwrap_or(raw).to_string();
            while line.trim_end().ends_with('\\') && i + 1 < b.lines.len() {
                line = line.trim_end().trim_end_matches('\\').to_string();
                i += 1;
                line.push(' ');
                line.push_str(b.lines[i].trim());
            }
            out.push(DocCommand {
                place: format!("{file}:{}", b.first_line + start),
                line,
                shown_output: Vec::new(),
            });
            current = dollar.map(|_| out.len() - 1);
            i += 1;
        }
    }
    out
}

/// A command line split into words (single and double quotes honoured) and its trailing
/// `# comment`; `Err` names shell syntax the test cannot run (pipes, redirections,
/// variables, background jobs).
fn split_words(line: &str) -> Result<(Vec<String>, String), String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for (i, c) in line.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '#') if !in_word => return Ok((words, line[i + 1..].trim().to_string())),
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, '|' | '>' | '<' | '&' | ';' | '$' | '`' | '(' | ')') => {
                return Err(format!("shell syntax `{c}`"))
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok((words, String::new()))
}

/// What the test does with one documented command.
enum Plan {
    /// Not a memtide command on a bundled file, or one that opens a screen.
    Skip,
    /// Run these arguments; expect this exit status.
    Run { args: Vec<String>, exit: i32 },
}

fn names_bundled_file(args: &[String]) -> bool {
    args.iter()
        .any(|a| a.starts_with("sample-traces/") || a.starts_with("tests/fixtures/"))
}

/// `# exits N` in a command's comment: the status it is documented to end with.
fn documented_exit(comment: &str) -> i32 {
    comment
        .split("exits ")
        .nth(1)
        .and_then(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .unwrap_or(0)
}

fn plan(line: &str) -> Result<Plan, String> {
    let first: Vec<&str> = line.split_whitespace().collect();
    let skip_words = match first.as_slice() {
        ["memtide", ..] => 1,
        ["cargo", "run", "--release", "--", ..] => 4,
        _ => return Ok(Plan::Skip),
    };
    let loose: Vec<String> = first[skip_words..].iter().map(|s| s.to_string()).collect();
    let sub = loose.first().map(String::as_str).unwrap_or("");
    if !names_bundled_file(&loose) && sub != "lab" {
        return Ok(Plan::Skip);
    }
    let follows = loose.iter().any(|a| a == "-f" || a == "--follow");
    let lab_screen = sub == "lab" && !loose.iter().any(|a| a == "--json" || a == "--text");
    if !HEADLESS.contains(&sub) || follows || lab_screen {
        return Ok(Plan::Skip);
    }
    let (words, comment) = split_words(line)?;
    Ok(Plan::Run {
        args: words[skip_words..].to_vec(),
        exit: documented_exit(&comment),
    })
}

/// The arguments with every file the command would write pointed into `dir`: `-o`/`--out`,
/// `--report`, and `replay`'s OUT.
fn redirect_outputs(args: &[String], dir: &Path) -> Vec<String> {
    let mut out = args.to_vec();
    let into = |name: &str| {
        let file = Path::new(name).file_name().unwrap_or_default();
        dir.join(file).to_string_lossy().into_owned()
    };
    for i in 1..out.len() {
        let prev = out[i - 1].as_str();
        if matches!(prev, "-o" | "--out" | "--report") && out[i] != "-" {
            out[i] = into(&out[i]);
        }
    }
    if out.first().is_some_and(|s| s == "replay") && out.len() > 2 && !out[2].starts_with('-') {
        out[2] = into(&out[2]);
    }
    out
}

/// Runs the binary from the repository root; `None` when it ran past `limit`.
fn run_memtide(args: &[String], limit: Duration) -> Option<(i32, String, String)> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_memtide"))
        .args(args)
        .current_dir(root())
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    Some((
        status.code().unwrap_or(-1),
        out.join().unwrap(),
        err.join().unwrap(),
    ))
}

/// Whether a shown line is a cut: `…` (or `...`) alone on its line, where printed lines
/// were left out.
fn is_cut(line: &str) -> bool {
    matches!(line.trim(), "…" | "...")
}

/// Whether a shown line stands for `printed`: the same text, or — a line shortened with `…`
/// — the text before its first `…` starts the printed line and the text after its last `…`
/// ends it.
fn shows(want: &str, printed: &str) -> bool {
    let (want, printed) = (want.trim_end(), printed.trim_end());
    if want == printed {
        return true;
    }
    match (want.find('…'), want.rfind('…')) {
        (Some(a), Some(b)) => {
            let (head, tail) = (&want[..a], &want[b + '…'.len_utf8()..]);
            printed.len() >= head.len() + tail.len()
                && printed.starts_with(head)
                && printed.ends_with(tail)
        }
        _ => false,
    }
}

/// Why a shown output is not what was printed, or None: the shown lines are the printed
/// lines, in order and contiguous, except where a cut line (`…`) marks lines left out — at
/// its start, its end, or between two runs of lines. A line shortened with `…` stands for
/// one printed line (see [`shows`]). Blank lines count; blank lines at either end do not.
fn shown_output_mismatch(shown: &[String], printed: &str) -> Option<String> {
    fn trim_blank<T: AsRef<str>>(v: &[T]) -> &[T] {
        let start = v
            .iter()
            .position(|l| !l.as_ref().trim().is_empty())
            .unwrap_or(v.len());
        let end = v
            .iter()
            .rposition(|l| !l.as_ref().trim().is_empty())
            .map_or(start, |e| e + 1);
        &v[start..end]
    }
    let printed: Vec<&str> = printed.lines().collect();
    let printed = trim_blank(&printed);
    let shown = trim_blank(shown);
    if shown.is_empty() {
        return None;
    }
    // Runs of shown lines between cuts, each with whether a cut comes before it.
    let mut runs: Vec<(bool, &[String])> = Vec::new();
    let mut start = 0;
    let mut cut_before = false;
    for (i, l) in shown.iter().enumerate() {
        if is_cut(l) {
            if start < i {
                runs.push((cut_before, &shown[start..i]));
            }
            cut_before = true;
            start = i + 1;
        }
    }
    if start < shown.len() {
        runs.push((cut_before, &shown[start..]));
    }
    let ends_with_cut = shown.last().is_some_and(|l| is_cut(l));
    let fits = |run: &[String], at: usize| {
        at + run.len() <= printed.len() && run.iter().zip(&printed[at..]).all(|(w, p)| shows(w, p))
    };
    let mut at = 0;
    for (cut, run) in runs {
        let found = if cut {
            (at..=printed.len()).find(|&p| fits(run, p))
        } else {
            Some(at).filter(|&p| fits(run, p))
        };
        let Some(p) = found else {
            let first = run.first().map_or("", String::as_str);
            return Some(if cut {
                format!("the lines from `{first}` on are not printed one after another")
            } else {
                format!(
                    "the lines from `{first}` on do not follow the line printed before them (a \
                     line left out needs a `…` line where it was)"
                )
            });
        };
        at = p + run.len();
    }
    if !ends_with_cut && at < printed.len() {
        return Some(format!(
            "{} printed line(s) after the last one shown are left out without a `…` line \
             (from `{}`)",
            printed.len() - at,
            printed[at]
        ));
    }
    None
}

/// The rule on a planted output: every left-out line is marked.
#[test]
fn a_shown_output_marks_every_cut() {
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let printed = "a\nb\n\nc\nd\n";
    let ok = |v: &[&str]| shown_output_mismatch(&s(v), printed).is_none();
    assert!(ok(&["a", "b", "", "c", "d"]));
    assert!(!ok(&["a", "", "c", "d"]), "b left out");
    assert!(!ok(&["a", "b", "c", "d"]), "the blank line left out");
    assert!(ok(&["a", "…", "c", "d"]));
    assert!(ok(&["a", "...", "d"]));
    assert!(!ok(&["a", "b"]), "the end left out");
    assert!(ok(&["a", "b", "…"]));
    assert!(!ok(&["b", "", "c", "d"]), "the start left out");
    assert!(ok(&["…", "c", "d"]));
    assert!(!ok(&["a", "b", "", "c", "x"]), "a line not printed");
    assert!(!ok(&["…", "d", "c"]), "out of order");
    // A line shortened with … stands for one printed line.
    let long = "peak 9.312 GiB (9999220736 B) at #77\nnext\n";
    assert!(shown_output_mismatch(&s(&["peak 9.312 GiB …", "next"]), long).is_none());
    assert!(shown_output_mismatch(&s(&["peak 9.312 GiB … at #77", "next"]), long).is_none());
    assert!(shown_output_mismatch(&s(&["peak 8 GiB …", "next"]), long).is_some());
}

#[test]
fn readme_is_a_five_minute_read() {
    let readme = read("README.md");
    let chars = readme.chars().count();
    println!("README.md: {chars} characters, {} bytes", readme.len());
    assert!(
        chars < README_MAX_CHARS,
        "README.md has {chars} characters (limit {README_MAX_CHARS}): move detail to docs/"
    );
}

/// An unclosed fence would hide the rest of a page from every check here (and from readers).
#[test]
fn every_code_fence_is_closed() {
    for (file, text) in documents() {
        let fences = text
            .lines()
            .filter(|l| l.trim_start().starts_with("```"))
            .count();
        assert!(
            fences % 2 == 0,
            "{file}: {fences} ``` lines: one is not closed"
        );
    }
}

#[test]
fn documented_commands_run_on_the_bundled_files() {
    let tmp = tempfile::tempdir().unwrap();
    let mut ran = 0;
    let mut skipped = 0;
    let mut failures = Vec::new();
    for (file, text) in documents() {
        for c in commands(&file, &text) {
            let (args, exit) = match plan(&c.line) {
                Ok(Plan::Skip) => {
                    skipped += 1;
                    continue;
                }
                Ok(Plan::Run { args, exit }) => (args, exit),
                Err(why) => {
                    failures.push(format!(
                        "{}: `{}`: {why}: a command on a bundled file must be plain words",
                        c.place, c.line
                    ));
                    continue;
                }
            };
            let args = redirect_outputs(&args, tmp.path());
            ran += 1;
            println!("run {}: memtide {}", c.place, args.join(" "));
            let Some((code, stdout, stderr)) = run_memtide(&args, Duration::from_secs(120)) else {
                failures.push(format!("{}: `{}` ran past 120 s", c.place, c.line));
                continue;
            };
            if code != exit {
                failures.push(format!(
                    "{}: `{}` exited {code}, documented {exit} (say `# exits {code}` if that is \
                     right)\nstdout: {}\nstderr: {}",
                    c.place,
                    c.line,
                    stdout.chars().take(600).collect::<String>(),
                    stderr.chars().take(600).collect::<String>()
                ));
                continue;
            }
            if let Some(why) = shown_output_mismatch(&c.shown_output, &format!("{stdout}{stderr}"))
            {
                failures.push(format!(
                    "{}: `{}`: the output shown is not what it printed: {why}\n\
                     it printed:\n{stdout}{stderr}",
                    c.place, c.line,
                ));
            }
        }
    }
    println!("documented commands: {ran} run, {skipped} not run (no bundled file, or a screen)");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(
        ran >= MIN_COMMANDS_RUN,
        "only {ran} documented commands ran (at least {MIN_COMMANDS_RUN} expected)"
    );
}

/// The JSONL examples (```jsonl) read as traces, and the rules examples (```toml with
/// `[[rule]]` or `[[frames]]`) are accepted by `--rules`.
#[test]
fn documented_jsonl_and_rules_examples_are_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut jsonl, mut rules) = (0, 0);
    let mut failures = Vec::new();
    for (file, text) in documents() {
        for (n, b) in blocks(&text).into_iter().enumerate() {
            let body = b.lines.join("\n") + "\n";
            let args = match b.lang.as_str() {
                "jsonl" => {
                    jsonl += 1;
                    let p = tmp.path().join(format!("example{n}.jsonl"));
                    std::fs::write(&p, &body).unwrap();
                    vec!["summary".to_string(), p.to_string_lossy().into_owned()]
                }
                "toml" if body.contains("[[rule]]") || body.contains("[[frames]]") => {
                    rules += 1;
                    let p = tmp.path().join(format!("rules{n}.toml"));
                    std::fs::write(&p, &body).unwrap();
                    vec![
                        "summary".to_string(),
                        "sample-traces/cuda-oom.pickle".to_string(),
                        "--rules".to_string(),
                        p.to_string_lossy().into_owned(),
                    ]
                }
                _ => continue,
            };
            match run_memtide(&args, Duration::from_secs(60)) {
                Some((0, _, _)) => {}
                other => failures.push(format!(
                    "{file}:{}: the ```{} example is refused: {other:?}",
                    b.first_line, b.lang
                )),
            }
        }
    }
    println!("examples: {jsonl} JSONL, {rules} rules files");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        jsonl >= 1 && rules >= 2,
        "the JSONL spec and the rules examples went missing"
    );
}

/// Every key of an object in `value` (at any depth; not inside `allocator_settings`, the
/// file's own object).
fn json_keys(value: &serde_json::Value, out: &mut std::collections::BTreeSet<String>) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                out.insert(k.clone());
                if k != "allocator_settings" {
                    json_keys(v, out);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| json_keys(v, out)),
        _ => {}
    }
}

/// Whether a doc names a JSON key: quoted, in code, or as the last part of a dotted path.
fn names_key(doc: &str, key: &str) -> bool {
    let opens = ['"', '`', '.', '{'];
    let closes = ['"', '`', ',', ' ', '[', '}', '.', ':', ')'];
    doc.match_indices(key).any(|(i, _)| {
        let before = doc[..i].chars().next_back();
        let after = doc[i + key.len()..].chars().next();
        before.is_some_and(|c| opens.contains(&c)) && after.is_some_and(|c| closes.contains(&c))
    })
}

/// docs/summary-json.md names every key `summary --json` prints for the samples and the OOM
/// and profiler fixtures.
#[test]
fn summary_json_keys_are_documented() {
    let doc = read("docs/summary-json.md");
    let mut keys = std::collections::BTreeSet::new();
    for args in [
        "sample-traces/train-3steps.jsonl",
        "sample-traces/train-leak.jsonl --window steady",
        "sample-traces/cuda-oom.pickle",
        "sample-traces/cuda-oom.pt.trace.json.gz",
        "tests/fixtures/oom/oom_fragmented.pickle",
    ] {
        let file = args.split(' ').next().unwrap_or(args);
        let args: Vec<String> = ["summary", "--json"]
            .into_iter()
            .chain(args.split(' '))
            .map(String::from)
            .collect();
        let (code, out, err) = run_memtide(&args, Duration::from_secs(60)).unwrap();
        assert_eq!(code, 0, "{file}: {err}");
        json_keys(&serde_json::from_str(&out).unwrap(), &mut keys);
    }
    let missing: Vec<&String> = keys.iter().filter(|k| !names_key(&doc, k)).collect();
    println!("{} keys checked", keys.len());
    assert!(
        missing.is_empty(),
        "docs/summary-json.md does not name these keys of `summary --json`: {missing:?}"
    );
    assert!(keys.len() > 60, "only {} keys", keys.len());
}

// ---------------------------------------------------------------------------------------
// The README's screenshot and keys
// ---------------------------------------------------------------------------------------

/// A screen block's marker, `<!-- screen: FILE WxH [keys: MACRO] -->`: the file the explorer
/// opens, its size, and the keys pressed before the screen is drawn.
fn screen_marker(before: &str) -> Option<(String, u16, u16, String)> {
    let inner = before
        .strip_prefix("<!-- screen: ")?
        .strip_suffix("-->")?
        .trim();
    let (head, keys) = inner.split_once(" keys: ").unwrap_or((inner, ""));
    let mut words = head.split_whitespace();
    let file = words.next()?.to_string();
    let (w, h) = words.next()?.split_once('x')?;
    Some((
        file,
        w.parse().ok()?,
        h.parse().ok()?,
        keys.trim().to_string(),
    ))
}

/// Every screen shown in the docs under a `<!-- screen: … -->` marker is what the explorer
/// draws for that file, size and keys: the block's lines are a run of the drawn lines (a
/// whole screen, or the part of it the text discusses).
#[test]
fn documented_screens_are_what_the_explorer_draws() {
    let mut checked = Vec::new();
    let mut failures = Vec::new();
    for (file, text) in documents() {
        for b in blocks(&text) {
            let Some((sample, width, height, keys)) = screen_marker(&b.before) else {
                continue;
            };
            let mut h = memtide::tui::testing::Harness::open(&root().join(&sample), width, height);
            if !keys.is_empty() {
                h.press(&keys);
            }
            let drawn: Vec<String> = h
                .screen()
                .lines()
                .map(|l| l.trim_end().to_string())
                .collect();
            let shown: Vec<String> = b.lines.iter().map(|l| l.trim_end().to_string()).collect();
            checked.push(format!("{file}:{}", b.first_line));
            if !drawn.windows(shown.len()).any(|w| w == shown.as_slice()) {
                failures.push(format!(
                    "{file}:{}: the screen is stale; the explorer draws {sample} at {width}x{height} \
                     after {keys:?}:\n{}",
                    b.first_line,
                    drawn.join("\n")
                ));
            }
        }
    }
    println!("screens checked: {}", checked.join(", "));
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(
        checked.iter().any(|c| c.starts_with("README.md:")),
        "README.md shows the explorer under a <!-- screen: FILE WxH --> marker"
    );
}

/// The README's table of the keys used most: ten rows, each a row of `docs/keys.md` (which
/// `tests/tui/tui_keys.rs` keeps equal to the keymap).
#[test]
fn readme_keys_are_rows_of_the_keymap() {
    let readme = read("README.md");
    let keys_md = read("docs/keys.md");
    let keymap: HashSet<&str> = keys_md.lines().filter(|l| l.starts_with("| `")).collect();
    let mut rows = readme
        .lines()
        .skip_while(|l| !l.starts_with("| keys | action |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'));
    let rows: Vec<&str> = rows.by_ref().collect();
    assert_eq!(rows.len(), 10, "the README lists the ten keys used most");
    for r in rows {
        assert!(
            keymap.contains(r),
            "README.md key row {r:?} is not a row of docs/keys.md"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Nothing dangling
// ---------------------------------------------------------------------------------------

/// GitHub's anchor for a heading: lower case, punctuation dropped, spaces → `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of a Markdown text's headings (outside code blocks), with GitHub's `-N`
/// suffixes for repeats.
fn anchors(text: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced || !line.starts_with('#') {
            continue;
        }
        let base = slug(line.trim_start_matches('#'));
        let mut s = base.clone();
        let mut n = 0;
        while seen.contains(&s) {
            n += 1;
            s = format!("{base}-{n}");
        }
        seen.insert(s);
    }
    seen
}

/// The targets of the inline links and images of a Markdown text (outside code blocks).
fn link_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            let after = &rest[i + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

#[test]
fn markdown_links_resolve() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for (file, text) in documents() {
        let dir = Path::new(&file).parent().unwrap_or(Path::new(""));
        for target in link_targets(&text) {
            if target.starts_with("http://") || target.starts_with("https://") {
                continue;
            }
            checked += 1;
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let resolved = if path.is_empty() {
                PathBuf::from(&file)
            } else {
                dir.join(path)
            };
            let full = root().join(&resolved);
            if !full.exists() {
                failures.push(format!(
                    "{file}: link to {target}: {} does not exist",
                    resolved.display()
                ));
                continue;
            }
            if !anchor.is_empty() && full.extension().is_some_and(|x| x == "md") {
                let text = std::fs::read_to_string(&full).unwrap();
                if !anchors(&text).contains(anchor) {
                    failures.push(format!("{file}: link to {target}: no heading #{anchor}"));
                }
            }
        }
    }
    println!("{checked} relative links checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 40, "only {checked} links found");
}

/// Every file under `rel` (recursively; build outputs and caches skipped).
fn files_under(rel: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root().join(rel)];
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if matches!(name, "target" | "__pycache__" | ".git" | ".pytest_cache") {
                continue;
            }
            for e in std::fs::read_dir(&p).unwrap() {
                stack.push(e.unwrap().path());
            }
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// The comment text of a Rust source line (`//`, `///`, `//!`, or after code).
fn rust_comment(line: &str) -> Option<&str> {
    let t = line.trim_start();
    if t.starts_with("//") {
        return Some(t);
    }
    line.find(" // ").map(|i| &line[i..])
}

/// Repository-relative paths named in a text: words starting with one of [`PATH_ROOTS`]
/// and `/`, not inside another path or a URL.
fn named_paths(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let is_path_char =
        |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-' | '*');
    for root_dir in PATH_ROOTS {
        let needle = format!("{root_dir}/");
        let mut from = 0;
        while let Some(i) = text[from..].find(&needle) {
            let at = from + i;
            from = at + needle.len();
            let before = text[..at].chars().next_back();
            if before.is_some_and(|c| {
                c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-' | '~' | '$')
            }) {
                continue;
            }
            let word: String = text[at..]
                .chars()
                .take_while(|&c| is_path_char(c))
                .collect();
            out.push(word.trim_end_matches(['.', ',']).to_string());
        }
    }
    out
}

/// Whether a named path exists from one of `bases` (a `*` matches: its directory must exist).
fn path_exists(path: &str, bases: &[PathBuf]) -> bool {
    let path = match path.find('*') {
        Some(i) => &path[..path[..i].rfind('/').map_or(0, |j| j + 1)],
        None => path,
    };
    bases.iter().any(|b| b.join(path).exists())
}

#[test]
fn paths_named_in_docs_and_comments_exist() {
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut check = |place: &str, text: &str, bases: &[PathBuf]| {
        for p in named_paths(text) {
            checked += 1;
            if !path_exists(&p, bases) {
                failures.push(format!("{place}: names {p}, which does not exist"));
            }
        }
    };
    for (file, text) in documents() {
        check(&file, &text, &[root().to_path_buf()]);
    }
    for dir in ["src", "crates"] {
        for f in files_under(dir) {
            if f.extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let rel = f
                .strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            // A crate's comments may name paths from the crate's own root.
            let mut bases = vec![root().to_path_buf()];
            if let Some(rest) = rel.strip_prefix("crates/") {
                if let Some(name) = rest.split('/').next() {
                    bases.push(root().join("crates").join(name));
                }
            }
            let text = std::fs::read_to_string(&f).unwrap();
            for (n, line) in text.lines().enumerate() {
                if let Some(comment) = rust_comment(line) {
                    check(&format!("{rel}:{}", n + 1), comment, &bases);
                }
            }
        }
    }
    println!("{checked} named paths checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(checked >= 100, "only {checked} paths found");
}

/// The design document lives outside the repository: nothing in it may cite it.
#[test]
fn nothing_cites_the_design_document_outside_the_repository() {
    let needle = ["DES", "IGN"].concat();
    let mut failures = Vec::new();
    let own = root().join("tests/docs.rs");
    let mut files = vec![root().join("README.md")];
    for dir in [
        "src", "crates", "docs", "tests", "benches", "scripts", "python", "tools", "examples",
    ] {
        files.extend(files_under(dir));
    }
    for f in files.into_iter().filter(|f| *f != own) {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            if line.contains(&needle) {
                let rel = f.strip_prefix(root()).unwrap().display().to_string();
                failures.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "cite docs/ instead (the design document is not in a clone):\n{}",
        failures.join("\n")
    );
}

/// Only `memtide(1)` is generated: neither the docs, the code nor the man page itself may
/// refer to a `memtide-COMMAND(1)` page.
#[test]
fn no_man_page_is_named_that_is_not_generated() {
    let mut failures = Vec::new();
    let mut files = vec![root().join("README.md")];
    for dir in ["src", "crates", "docs"] {
        files.extend(files_under(dir));
    }
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for (n, line) in text.lines().enumerate() {
            let unescaped = line.replace("\\-", "-");
            if let Some(i) = unescaped.find("memtide-") {
                let word: String = unescaped[i + 8..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                if unescaped[i + 8 + word.len()..].starts_with("(1)") {
                    let rel = f.strip_prefix(root()).unwrap().display().to_string();
                    failures.push(format!("{rel}:{}: memtide-{word}(1)", n + 1));
                }
            }
        }
    }
    let (code, man, err) = run_memtide(&["man".to_string()], Duration::from_secs(60)).unwrap();
    assert_eq!(code, 0, "memtide man: {err}");
    assert!(man.contains(".TH memtide 1"), "{man}");
    assert!(
        man.contains("\\fBmemtide summary\\fR") && man.contains("\\fICOMMAND\\fR \\fB\\-\\-help"),
        "the man page lists the commands and where their options are:\n{man}"
    );
    for line in man.lines().filter(|l| !l.starts_with(".TH")) {
        if line.contains("(1)") {
            failures.push(format!("memtide man: {line}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

// ---------------------------------------------------------------------------------------
// docs/architecture.md: the map of the repository
// ---------------------------------------------------------------------------------------

/// Folders whose entries each need a row of the map in `docs/architecture.md`, and whether
/// only their sub-folders count (the repository's top and `crates/`) or every module.
const MAPPED: &[(&str, bool)] = &[
    ("", true),
    ("crates", true),
    ("src", false),
    ("src/tui", false),
    ("crates/memtide-core/src", false),
    ("crates/memtide-core/src/formats", false),
];

/// The first cells of the map's table rows (`| \`path\` | … |`), without their backquotes.
fn map_rows(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once("` |").map(|(cell, _)| cell.to_string()))
        .collect()
}

/// Root-level folders `.gitignore` names (`target/`, `/bench-data/`): build outputs, no row.
fn ignored_top_folders() -> HashSet<String> {
    std::fs::read_to_string(root().join(".gitignore"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.ends_with('/') && !l.starts_with('#'))
        .map(|l| l.trim_matches('/').to_string())
        .collect()
}

/// Every folder and module the map must name, as the row would spell it (`src/tui/`,
/// `src/picture.rs`), read from the filesystem.
fn mapped_entries() -> Vec<String> {
    let ignored = ignored_top_folders();
    let mut out = Vec::new();
    for &(dir, folders_only) in MAPPED {
        let mut names: Vec<(String, bool)> = std::fs::read_dir(root().join(dir))
            .unwrap()
            .map(|e| e.unwrap())
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    e.path().is_dir(),
                )
            })
            .collect();
        names.sort();
        for (name, is_dir) in names {
            let prefix = if dir.is_empty() {
                String::new()
            } else {
                format!("{dir}/")
            };
            if is_dir {
                let hidden = name.starts_with('.') && name != ".ci";
                if !(dir.is_empty() && (hidden || ignored.contains(&name))) {
                    out.push(format!("{prefix}{name}/"));
                }
            } else if !folders_only && name.ends_with(".rs") && name != "mod.rs" {
                out.push(format!("{prefix}{name}"));
            }
        }
    }
    out
}

/// Every folder at the top, every crate, and every module of the binary, its screens, the
/// core and the core's readers has a row in docs/architecture.md's map; every path a row
/// names exists. A module added without a row fails here, naming the row to add.
#[test]
fn architecture_map_names_every_folder_and_module() {
    let text = read("docs/architecture.md");
    let rows = map_rows(&text);
    let named: HashSet<&str> = rows.iter().map(String::as_str).collect();
    let mut failures = Vec::new();
    let entries = mapped_entries();
    for e in &entries {
        if !named.contains(e.as_str()) {
            failures.push(format!(
                "docs/architecture.md has no row for {e}: add the row | `{e}` | what it holds | to its table"
            ));
        }
    }
    let mut paths = 0;
    for r in &rows {
        // A Rust path (`memtide_core::open`) or a crate name marks a module on its way.
        if !r.contains('/') {
            continue;
        }
        paths += 1;
        if !root().join(r).exists() {
            failures.push(format!(
                "docs/architecture.md has a row for {r}, which does not exist: remove or rename it"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The table was found and read, not skipped: the folders and modules above.
    assert!(entries.len() >= 60, "only {} entries found", entries.len());
    assert!(paths >= entries.len(), "{paths} path rows");
    for must in [
        "src/tui/layout.rs",
        "crates/memtide-core/src/formats/input/",
        "tests/",
    ] {
        assert!(entries.iter().any(|e| e == must), "{must} not derived");
    }
}

/// The reducers never call the drawing (`tui::ui`) for sizes or rows: what both need is in
/// `src/tui/layout.rs` (docs/architecture.md). Only the runtime and the test harness draw.
#[test]
fn tui_reducers_do_not_call_the_drawing() {
    let mut failures = Vec::new();
    for f in files_under("src/tui") {
        let rel = f
            .strip_prefix(root())
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if rel.starts_with("src/tui/ui/")
            || rel.starts_with("src/tui/runtime/")
            || rel == "src/tui/testing.rs"
        {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        for (n, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            // `ui::…` as a path of its own (not the tail of `ratatui::`), or `ui` imported
            // in a group (`use crate::tui::{ui, …}`).
            let as_path = code.match_indices("ui::").any(|(i, _)| {
                code[..i]
                    .chars()
                    .next_back()
                    .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'))
            });
            let in_group = code.trim_start().starts_with("use ")
                && ["{ui,", "{ui}", " ui,", " ui}"]
                    .iter()
                    .any(|p| code.contains(p));
            if as_path || in_group {
                failures.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "reducer code calls tui::ui:\n{}",
        failures.join("\n")
    );
}
