//! The one door into the core: no file of the binary crate (`src/`) reads a trace, builds an
//! index or replays an allocator model itself; they all go through `memtide_core::open`.

use std::path::{Path, PathBuf};

/// What only the core's door may call: reading (`load`, the readers), indexing, replaying.
const FORBIDDEN: &[&str] = &[
    "memtide_core::load",
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

/// The lines of `text` that call around the door, as `NAME:LINE: text`.
fn violations(name: &str, text: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim_start().starts_with("//"))
        .filter(|(_, l)| FORBIDDEN.iter().any(|f| l.contains(f)))
        .map(|(i, l)| format!("{name}:{}: {}", i + 1, l.trim()))
        .collect()
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
fn the_scan_finds_a_call_around_the_door_and_skips_comments() {
    let text =
        "fn f() {\n    // Index::build(&t) is the core's\n    let i = Index::build(&t);\n}\n";
    assert_eq!(
        violations("x.rs", text),
        vec!["x.rs:3: let i = Index::build(&t);".to_string()]
    );
    assert!(violations("y.rs", "let o = memtide_core::open::open(p, &o, &g);").is_empty());
}
