//! Shell habits: `--version` names the formats, `completions` writes scripts the shells
//! accept, `man` writes a roff page, and the packaging metadata agrees on one version.

use std::path::Path;

use crate::support::repo::memtide;

fn stdout_of(args: &[&str]) -> String {
    let out = memtide().args(args).output().expect("runs");
    assert!(
        out.status.success(),
        "memtide {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn version_names_the_version_and_every_format() {
    let text = stdout_of(&["--version"]);
    assert!(
        text.starts_with(&format!("memtide {}\n", env!("CARGO_PKG_VERSION"))),
        "{text}"
    );
    for f in ["JSONL v1", "snapshot", "Kineto", "export_memory_timeline"] {
        assert!(text.contains(f), "--version does not name {f}: {text}");
    }
    // -V stays one line, for scripts.
    assert_eq!(stdout_of(&["-V"]).lines().count(), 1);
}

#[test]
fn bash_completion_script_parses_and_knows_the_subcommands() {
    let script = stdout_of(&["completions", "bash"]);
    for sub in ["summary", "check", "diff", "replay", "completions", "man"] {
        assert!(script.contains(sub), "completion script lacks {sub}");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("memtide.bash");
    std::fs::write(&path, &script).expect("write");
    let status = std::process::Command::new("bash")
        .arg("-n")
        .arg(&path)
        .status()
        .expect("bash runs");
    assert!(status.success(), "bash -n rejects the completion script");
}

#[test]
fn zsh_and_fish_scripts_are_written() {
    assert!(stdout_of(&["completions", "zsh"]).starts_with("#compdef memtide"));
    assert!(stdout_of(&["completions", "fish"]).contains("complete -c memtide"));
    let out = memtide()
        .args(["completions", "tcsh"])
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unknown shell is a usage error"
    );
}

#[test]
fn man_page_is_roff_with_the_commands() {
    let page = stdout_of(&["man"]);
    assert!(
        page.contains(".TH memtide 1"),
        "{}",
        &page[..page.len().min(200)]
    );
    assert!(page.contains("summary") && page.contains("check"));
}

/// The wheel's version comes from Cargo.toml (maturin, `dynamic = ["version"]`); the recorder
/// states its own for files it writes, and the recorder-only package in python/ has one too:
/// all must be Cargo's.
#[test]
fn python_packaging_agrees_with_cargo_on_the_version() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |p: &str| std::fs::read_to_string(root.join(p)).expect(p);
    let pyproject = read("pyproject.toml");
    assert!(pyproject.contains("dynamic = [\"version\"]"));
    assert!(pyproject.contains("bindings = \"bin\""));
    let v = env!("CARGO_PKG_VERSION");
    assert!(
        read("python/memtide_record/_version.py").contains(&format!("__version__ = \"{v}\"")),
        "python/memtide_record/_version.py __version__ must be {v}"
    );
    assert!(
        read("python/pyproject.toml").contains(&format!("version = \"{v}\"")),
        "python/pyproject.toml version must be {v}"
    );
}
