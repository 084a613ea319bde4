//! The one door into the core and the one home of the answers: no file of the binary crate
//! (`src/`) reads a trace, builds an index or replays an allocator model itself (they all go
//! through `memtide_core::open`); no front end (`src/`, the Python crate) computes an answer
//! the report layer gives (`crates/memtide-report`), and the report layer imports no front
//! end; the core's, the report layer's and the binary's modules use each other without a
//! cycle.

use std::path::{Path, PathBuf};

/// What only the core's door may call: reading (its reading step `open::load`, the readers),
/// indexing, replaying.
const FORBIDDEN: &[&str] = &[
    "open::load",
    "Index::build",
    "Model::build",
    "Models::build",
    "formats::read(",
    "formats::read_jsonl_resumable",
    "load_followable",
    "infer_missing",
    "Device::with_model",
    "Device::with_built_model",
    "Device::with_history",
];

/// What only the report layer computes: the answers (the gate's verdicts and evidence, the
/// comparison, the allocator replays, the OOM explanations, the summaries).
const ANSWERS: &[&str] = &[
    "check_device(",
    "check_file(",
    "check_job(",
    "peak_evidence(",
    "biggest_live(",
    "analysis::diff(",
    "analysis::fair(",
    "owner_changes(",
    "whatif_under(",
    "reserved_series(",
    "derive_ceiling(",
    "explain_ooms(",
    "Summary::build",
    "window_peak(",
    "global_peak(",
];

/// What the report layer never names: a front end or a terminal, command-line or Python
/// crate.
const FRONT_ENDS: &[&str] = &[
    "memtide::",
    "ratatui",
    "crossterm",
    "clap::",
    "pyo3",
    "notify::",
    "crate::tui",
    "crate::cli",
];

/// The lines of `text` that call around the door, as `NAME:LINE: text`.
fn violations(name: &str, text: &str) -> Vec<String> {
    lines_naming(name, text, FORBIDDEN)
}

/// The lines of `text` (comments left out) that name any of `names`, as `NAME:LINE: text`.
fn lines_naming(name: &str, text: &str, names: &[&str]) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .filter(|(_, l)| names.iter().any(|f| l.contains(f)))
        .map(|(i, l)| format!("{name}:{}: {}", i + 1, l.trim()))
        .collect()
}

/// Every line of the Rust files under `dirs` (relative to the repository) naming one of
/// `names`, test modules included (a test of a front end may build what it checks).
fn scan(dirs: &[&str], names: &[&str]) -> (usize, Vec<String>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for d in dirs {
        rust_files(&root.join(d), &mut files);
    }
    let found = files
        .iter()
        .flat_map(|p| {
            let text = std::fs::read_to_string(p).expect("readable");
            let text = text.split("#[cfg(test)]").next().unwrap_or_default();
            let name = p.strip_prefix(root).unwrap_or(p).display().to_string();
            lines_naming(&name, text, names)
        })
        .collect();
    (files.len(), found)
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("src/ is readable").flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn no_src_file_reads_indexes_or_replays_around_the_core_s_door() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    assert!(files.len() > 50, "{} files under src/", files.len());
    let found: Vec<String> = files
        .iter()
        .flat_map(|p| {
            let text = std::fs::read_to_string(p).expect("readable");
            let name = p.strip_prefix(root).unwrap_or(p).display().to_string();
            violations(&name, &text)
        })
        .collect();
    assert!(
        found.is_empty(),
        "these src/ lines go around memtide_core::open:\n{}",
        found.join("\n")
    );
}

#[test]
fn no_front_end_computes_an_answer() {
    let (n, found) = scan(&["src", "crates/memtide-py/src"], ANSWERS);
    assert!(n > 60, "{n} front-end files");
    assert!(
        found.is_empty(),
        "these front-end lines compute what the report layer answers (crates/memtide-report):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_report_layer_imports_no_front_end() {
    let (n, found) = scan(&["crates/memtide-report/src"], FRONT_ENDS);
    assert!(n > 10, "{n} report-layer files");
    assert!(
        found.is_empty(),
        "the report layer names a front end:\n{}",
        found.join("\n")
    );
    // The scan itself finds what it looks for.
    assert_eq!(
        lines_naming(
            "x.rs",
            "use ratatui::style::Color;\n// ratatui in a comment",
            FRONT_ENDS
        ),
        vec!["x.rs:1: use ratatui::style::Color;".to_string()]
    );
}

#[test]
fn the_scan_finds_a_call_around_the_door_and_skips_comments() {
    let text =
        "fn f() {\n    // Index::build(&t) is the core's\n    let i = Index::build(&t);\n}\n";
    assert_eq!(
        violations("x.rs", text),
        vec!["x.rs:3: let i = Index::build(&t);".to_string()]
    );
    assert!(violations("y.rs", "let o = memtide_core::open::open(p, &o, &g);").is_empty());
    // The door's reading step alone, which skips the index and the device facts.
    assert_eq!(
        violations("z.rs", "let l = memtide_core::open::load(p, &o, &g);").len(),
        1
    );
}

/// The core's top-level modules (`crates/memtide-core/src/X.rs` or `X/`) each file under
/// `dir` names with `crate::X`, comments left out: module → modules it uses.
fn core_uses(dir: &Path) -> std::collections::BTreeMap<String, std::collections::BTreeSet<String>> {
    let mut modules = std::collections::BTreeMap::new();
    for e in std::fs::read_dir(dir).expect("core src").flatten() {
        let p = e.path();
        let name = p
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or_default()
            .to_string();
        if name == "lib" || name.is_empty() {
            continue;
        }
        let mut files = Vec::new();
        if p.is_dir() {
            rust_files(&p, &mut files);
        } else if p.extension().is_some_and(|x| x == "rs") {
            files.push(p.clone());
        } else {
            continue;
        }
        let used: &mut std::collections::BTreeSet<String> =
            modules.entry(name.clone()).or_default();
        for f in files {
            let text = std::fs::read_to_string(&f).expect("readable");
            for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
                for (i, _) in line.match_indices("crate::") {
                    let rest = &line[i + "crate::".len()..];
                    let m: String = rest
                        .chars()
                        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .collect();
                    if !m.is_empty() && m != name {
                        used.insert(m);
                    }
                }
            }
        }
    }
    modules
}

/// A cycle among `uses` (module → modules it uses), as `a -> b -> a`, if there is one.
fn a_cycle(
    uses: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
) -> Option<String> {
    fn visit(
        m: &str,
        uses: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut std::collections::BTreeSet<String>,
    ) -> Option<String> {
        if let Some(k) = path.iter().position(|p| p == m) {
            let mut c = path[k..].to_vec();
            c.push(m.to_string());
            return Some(c.join(" -> "));
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for n in uses.get(m).into_iter().flatten() {
            if let Some(c) = visit(n, uses, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = std::collections::BTreeSet::new();
    uses.keys()
        .find_map(|m| visit(m, uses, &mut Vec::new(), &mut done))
}

#[test]
fn the_report_layer_s_and_the_binary_s_modules_use_each_other_without_a_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let report = core_uses(&root.join("crates/memtide-report/src"));
    assert!(report.len() > 10, "{} report modules", report.len());
    assert_eq!(a_cycle(&report), None, "a cycle in the report layer");
    let binary = core_uses(&root.join("src"));
    assert!(
        binary.get("cli").is_some_and(|u| u.contains("tui")),
        "cli uses tui (the explorer is a command): {binary:?}"
    );
    assert_eq!(
        a_cycle(&binary),
        None,
        "a cycle between the binary's modules (tui must not use cli)"
    );
}

#[test]
fn the_core_s_top_level_modules_use_each_other_without_a_cycle() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let uses = core_uses(&root.join("crates/memtide-core/src"));
    assert!(uses.len() > 10, "{} top-level modules", uses.len());
    assert!(
        uses.get("open").is_some_and(|u| {
            ["formats", "analysis", "device_merge", "nsys_merge", "index"]
                .iter()
                .all(|m| u.contains(*m))
        }),
        "open reads, infers, merges and indexes: {uses:?}"
    );
    assert_eq!(
        a_cycle(&uses),
        None,
        "a cycle between the core's top-level modules"
    );
}

/// The core's top-level modules bottom up, as docs/architecture.md draws them: a module
/// uses only modules of its own layer or below (a module not listed here fails the test:
/// place it).
const CORE_LAYERS: &[&[&str]] = &[
    &[
        "digits",
        "json_text",
        "worker",
        "synth",
        "lab",
        "test_files",
    ],
    &["clip"],
    &["trace", "budget"],
    &["index"],
    &["allocator"],
    &["formats"],
    &["device_merge", "nsys_merge", "analysis"],
    &["open"],
    &["gate", "ranks"],
];

/// The first use that climbs: `a (layer i) uses b (layer j > i)`, or a module in no layer.
fn a_climb(
    uses: &std::collections::BTreeMap<String, std::collections::BTreeSet<String>>,
    layers: &[&[&str]],
) -> Option<String> {
    let layer = |m: &str| layers.iter().position(|l| l.contains(&m));
    for (m, used) in uses {
        let Some(i) = layer(m) else {
            return Some(format!("{m} is in no layer"));
        };
        for u in used {
            match layer(u) {
                Some(j) if j > i => return Some(format!("{m} (layer {i}) uses {u} (layer {j})")),
                _ => {}
            }
        }
    }
    None
}

#[test]
fn the_core_s_modules_use_only_their_layer_and_below() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let uses = core_uses(&root.join("crates/memtide-core/src"));
    assert_eq!(a_climb(&uses, CORE_LAYERS), None);
    // The check itself finds a climb.
    let mut planted = uses.clone();
    planted
        .entry("trace".to_string())
        .or_default()
        .insert("open".to_string());
    assert_eq!(
        a_climb(&planted, CORE_LAYERS),
        Some("trace (layer 2) uses open (layer 7)".to_string())
    );
}

#[test]
fn a_planted_cycle_is_found() {
    let g = |pairs: &[(&str, &str)]| {
        let mut m: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
            Default::default();
        for (a, b) in pairs {
            m.entry(a.to_string()).or_default().insert(b.to_string());
            m.entry(b.to_string()).or_default();
        }
        m
    };
    assert_eq!(
        a_cycle(&g(&[("a", "b"), ("b", "c"), ("c", "a")])),
        Some("a -> b -> c -> a".to_string())
    );
    assert_eq!(a_cycle(&g(&[("a", "b"), ("b", "c"), ("a", "c")])), None);
}
