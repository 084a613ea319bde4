//! The composite GitHub Action at the repository root (`action.yml`, issue 52), run as a
//! runner would run it — without a runner: its steps are read from the file (inputs with
//! their defaults, each step's `env` and `run` script, `${{ … }}` substituted), and each
//! script runs under `bash --noprofile --norc -eo pipefail` with the runner's files
//! (`$GITHUB_STEP_SUMMARY`, `$GITHUB_OUTPUT`, `$GITHUB_PATH`, applied to later steps). The
//! release install downloads through a stand-in `curl` that serves a tarball made here, so
//! the download, the SHA-256 check and the unpacking are what runs; the source install
//! (`cargo install`, minutes) is not run here.

use crate::support::repo::{root, sample};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One step of the composite action.
#[derive(Debug)]
struct Step {
    id: String,
    env: Vec<(String, String)>,
    run: String,
}

/// The action's inputs (name → default) and steps, read from `action.yml` (the subset of
/// YAML it uses: two-space indents, `key: value`, `run: |` blocks).
fn action() -> (BTreeMap<String, String>, Vec<Step>) {
    let text = std::fs::read_to_string(root().join("action.yml")).expect("action.yml");
    let lines: Vec<&str> = text.lines().collect();
    let indent = |l: &str| l.len() - l.trim_start().len();
    let value = |v: &str| {
        let v = v.trim();
        v.strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(v)
            .to_string()
    };
    let mut inputs = BTreeMap::new();
    let mut steps: Vec<Step> = Vec::new();
    let mut section = "";
    let mut input = String::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        let t = l.trim();
        i += 1;
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        if indent(l) == 0 {
            section = t.trim_end_matches(':');
            continue;
        }
        match section {
            "inputs" if indent(l) == 2 => input = t.trim_end_matches(':').to_string(),
            "inputs" if indent(l) == 4 => {
                if let Some(d) = t.strip_prefix("default:") {
                    inputs.insert(input.clone(), value(d));
                } else if t == "required: true" {
                    inputs.insert(input.clone(), String::new());
                }
            }
            "runs" if t.starts_with("- name:") => steps.push(Step {
                id: String::new(),
                env: Vec::new(),
                run: String::new(),
            }),
            "runs" if indent(l) == 6 => {
                let step = steps.last_mut().expect("a step");
                if let Some(id) = t.strip_prefix("id:") {
                    step.id = value(id);
                } else if t == "run: |" {
                    while i < lines.len() && (lines[i].trim().is_empty() || indent(lines[i]) > 6) {
                        step.run.push_str(lines[i].get(8..).unwrap_or(""));
                        step.run.push('\n');
                        i += 1;
                    }
                } else if t == "shell: bash" || t == "env:" {
                } else {
                    panic!("action.yml: a step key this test does not run: {t}");
                }
            }
            "runs" if indent(l) == 8 => {
                let (k, v) = t.split_once(':').expect("env KEY: value");
                let step = steps.last_mut().expect("a step");
                step.env.push((k.to_string(), value(v)));
            }
            _ => {}
        }
    }
    (inputs, steps)
}

/// What one run of the action did.
struct Ran {
    /// The exit status of the step that failed (the run stops there), or 0.
    code: i32,
    /// The ids of the steps that ran.
    ran: Vec<String>,
    output: String,
    log: String,
}

/// A stand-in runner: a job's temporary directory and files.
struct Runner {
    dir: tempfile::TempDir,
    path: String,
    /// `github.action_ref`, `github.action_repository`.
    action_ref: String,
    action_repo: String,
}

impl Runner {
    fn new(path: String) -> Runner {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("summary.md"), "").expect("summary");
        Runner {
            dir,
            path,
            action_ref: String::new(),
            action_repo: String::new(),
        }
    }

    fn summary(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("summary.md")).expect("summary")
    }

    /// Runs the action's steps with `given` inputs (the others at their defaults).
    fn run(&self, given: &[(&str, &str)]) -> Ran {
        let (mut inputs, steps) = action();
        for (k, v) in given {
            assert!(inputs.contains_key(*k), "action.yml has no input {k}");
            inputs.insert(k.to_string(), v.to_string());
        }
        let expr = |s: &str| -> String {
            let mut out = String::new();
            let mut rest = s;
            while let Some(a) = rest.find("${{") {
                out.push_str(&rest[..a]);
                let b = rest[a..].find("}}").expect("closed ${{") + a;
                let name = rest[a + 3..b].trim();
                out.push_str(&match name {
                    "github.action_path" => root().display().to_string(),
                    "github.action_ref" => self.action_ref.clone(),
                    "github.action_repository" => self.action_repo.clone(),
                    n => match n.strip_prefix("inputs.") {
                        Some(k) => inputs.get(k).cloned().expect("a declared input"),
                        None => panic!("an expression this test does not know: {n}"),
                    },
                });
                rest = &rest[b + 2..];
            }
            out.push_str(rest);
            out
        };
        let d = self.dir.path();
        let (output, gh_path) = (d.join("output"), d.join("path"));
        std::fs::write(&output, "").expect("output");
        std::fs::write(&gh_path, "").expect("path");
        let mut ran = Vec::new();
        let mut log = String::new();
        for s in &steps {
            // Directories added to $GITHUB_PATH by earlier steps come first.
            let added: Vec<String> = std::fs::read_to_string(&gh_path)
                .expect("path")
                .lines()
                .rev()
                .map(str::to_string)
                .collect();
            let path = added
                .into_iter()
                .chain([self.path.clone()])
                .collect::<Vec<_>>()
                .join(":");
            assert!(
                !s.run.contains("${{"),
                "an expression inside a script: {}",
                s.id
            );
            let mut c = Command::new("bash");
            c.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", &s.run])
                .current_dir(d)
                .env_clear()
                .env("PATH", path)
                .env("HOME", d)
                .env("RUNNER_TEMP", d.join("runner-temp"))
                .env("GITHUB_STEP_SUMMARY", d.join("summary.md"))
                .env("GITHUB_OUTPUT", &output)
                .env("GITHUB_PATH", &gh_path)
                .env("GITHUB_REPOSITORY", "someone/project")
                .env("FAKE_RELEASES", d.join("releases"));
            for (k, v) in &s.env {
                c.env(k, expr(v));
            }
            let o = c.output().expect("bash");
            log.push_str(&String::from_utf8_lossy(&o.stdout));
            log.push_str(&String::from_utf8_lossy(&o.stderr));
            ran.push(s.id.clone());
            let code = o.status.code().unwrap_or(-1);
            if code != 0 {
                return Ran {
                    code,
                    ran,
                    output: std::fs::read_to_string(&output).expect("output"),
                    log,
                };
            }
        }
        Ran {
            code: 0,
            ran,
            output: std::fs::read_to_string(&output).expect("output"),
            log,
        }
    }
}

/// PATH with this build's `memtide` first, as a job that installed it earlier has.
fn path_with_memtide() -> String {
    let bin = Path::new(env!("CARGO_BIN_EXE_memtide"));
    format!("{}:/usr/bin:/bin", bin.parent().expect("bin dir").display())
}

fn file(name: &str) -> String {
    sample(name).display().to_string()
}

#[test]
fn the_action_gates_and_appends_its_report_to_the_step_summary() {
    let r = Runner::new(path_with_memtide());
    std::fs::write(r.dir.path().join("summary.md"), "Tests: 718 passed\n").expect("w");
    let f = file("train-3steps.jsonl");
    let ok = r.run(&[("file", &f), ("max-peak", "12GiB")]);
    assert_eq!(ok.code, 0, "{}", ok.log);
    assert_eq!(ok.ran, ["install", "check"]);
    assert!(ok.output.contains("exit-code=0"), "{}", ok.output);
    // The install step found the memtide on PATH.
    assert!(
        ok.log
            .contains(&format!("memtide {}", env!("CARGO_PKG_VERSION"))),
        "{}",
        ok.log
    );
    // The same job's second gate, over its limit: exit 1, and both reports in the summary.
    let over = r.run(&[("file", &f), ("max-peak", "9GiB")]);
    assert_eq!(over.code, 1, "{}", over.log);
    assert!(over.output.contains("exit-code=1"), "{}", over.output);
    assert!(over.log.contains("FAIL: peak 9.312 GiB"), "{}", over.log);
    let md = r.summary();
    assert!(
        md.starts_with("Tests: 718 passed\n\n## memtide check"),
        "{md}"
    );
    assert_eq!(md.matches("## memtide check").count(), 2, "{md}");
    assert!(md.find("ok: peak").expect("ok") < md.find("FAIL: peak").expect("FAIL"));
    // A growth gate with extra arguments passed through.
    let leak = file("train-leak.jsonl");
    let g = r.run(&[
        ("file", &leak),
        ("max-growth", "1%"),
        ("args", "--window steady"),
    ]);
    assert_eq!(g.code, 1, "{}", g.log);
    assert!(g.log.contains("FAIL: step baseline grew by"), "{}", g.log);
    let bad = r.run(&[
        ("file", &f),
        ("max-peak", "12GiB"),
        ("args", "--no-such-flag"),
    ]);
    assert_eq!(bad.code, 2, "{}", bad.log);
    // summary: false leaves the summary alone.
    let before = r.summary();
    let quiet = r.run(&[("file", &f), ("max-peak", "12GiB"), ("summary", "false")]);
    assert_eq!(quiet.code, 0, "{}", quiet.log);
    assert_eq!(r.summary(), before);
}

/// A stand-in `curl -fsSL … -o OUT URL`: copies `$FAKE_RELEASES/<URL's last part>` to OUT
/// and logs the URL; a file it does not have fails as curl -f does (22).
const FAKE_CURL: &str = r#"#!/bin/bash
out=""; url=""
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out="$2"; shift 2 ;;
    --retry) shift 2 ;;
    -*) shift ;;
    *) url="$1"; shift ;;
  esac
done
echo "$url" >> "$FAKE_RELEASES/urls"
src="$FAKE_RELEASES/${url##*/}"
[ -f "$src" ] || exit 22
cp "$src" "$out"
"#;

/// A release of this build's binary, as `.github/workflows/release.yml` packs it
/// (`memtide-TAG-TARGET/memtide` in `memtide-TAG-TARGET.tar.gz`, its `.sha256` beside it), for
/// every target the action knows; `tamper` corrupts the tarballs after their checksums are taken.
fn fake_release(r: &Runner, tag: &str, tamper: bool) -> PathBuf {
    let d = r.dir.path();
    let bin = d.join("fakebin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let curl = bin.join("curl");
    std::fs::write(&curl, FAKE_CURL).expect("curl");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&curl, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let rel = d.join("releases");
    std::fs::create_dir_all(&rel).expect("mkdir");
    for target in [
        "x86_64-unknown-linux-gnu",
        "aarch64-unknown-linux-gnu",
        "x86_64-apple-darwin",
        "aarch64-apple-darwin",
    ] {
        let name = format!("memtide-{tag}-{target}");
        let stage = d.join("stage").join(&name);
        std::fs::create_dir_all(&stage).expect("mkdir");
        // The packed `memtide` runs this build's binary (a copy would be 100s of MB here).
        let packed = stage.join("memtide");
        std::fs::write(
            &packed,
            format!(
                "#!/bin/sh\nexec '{}' \"$@\"\n",
                env!("CARGO_BIN_EXE_memtide")
            ),
        )
        .expect("write");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&packed, std::fs::Permissions::from_mode(0o755))
                .expect("chmod");
        }
        let tar = format!("{name}.tar.gz");
        let ok = Command::new("tar")
            .args(["-czf"])
            .arg(rel.join(&tar))
            .arg("-C")
            .arg(d.join("stage"))
            .arg(&name)
            .status()
            .expect("tar");
        assert!(ok.success());
        let sum = Command::new("sha256sum")
            .arg(&tar)
            .current_dir(&rel)
            .output()
            .expect("sha256sum");
        assert!(sum.status.success());
        std::fs::write(rel.join(format!("{tar}.sha256")), &sum.stdout).expect("sum");
        if tamper {
            let mut bytes = std::fs::read(rel.join(&tar)).expect("read");
            bytes.push(0);
            std::fs::write(rel.join(&tar), bytes).expect("write");
        }
    }
    bin
}

#[test]
fn the_release_install_downloads_checks_and_unpacks_the_binary() {
    // No memtide on PATH: the install step must put it there.
    let mut r = Runner::new(String::new());
    let bin = fake_release(&r, "v9.8.7", false);
    r.path = format!("{}:/usr/bin:/bin", bin.display());
    r.action_repo = "owner/memtide".into();
    let f = file("train-3steps.jsonl");
    let ran = r.run(&[
        ("file", &f),
        ("max-peak", "12GiB"),
        ("install", "release"),
        ("version", "v9.8.7"),
    ]);
    assert_eq!(ran.code, 0, "{}", ran.log);
    assert!(
        ran.log.contains(": OK"),
        "the checksum was checked: {}",
        ran.log
    );
    let urls = std::fs::read_to_string(r.dir.path().join("releases/urls")).expect("urls");
    assert!(
        urls.lines().all(|u| u.starts_with(
            "https://github.com/owner/memtide/releases/download/v9.8.7/memtide-v9.8.7-"
        )),
        "{urls}"
    );
    assert!(urls.contains(".tar.gz.sha256"), "{urls}");
    assert!(r.summary().contains("## memtide check"));
    // The binary stays where later steps find it ($GITHUB_PATH).
    let added = std::fs::read_to_string(r.dir.path().join("path")).expect("path");
    assert!(Path::new(added.trim()).join("memtide").is_file(), "{added}");
}

#[test]
fn a_tampered_release_is_refused_and_nothing_is_gated() {
    let mut r = Runner::new(String::new());
    let bin = fake_release(&r, "v1.2.3", true);
    r.path = format!("{}:/usr/bin:/bin", bin.display());
    r.action_repo = "owner/memtide".into();
    // auto at a release tag, with no memtide on PATH: the release binary.
    r.action_ref = "v1.2.3".into();
    let f = file("train-3steps.jsonl");
    let ran = r.run(&[("file", &f), ("max-peak", "12GiB")]);
    assert_ne!(ran.code, 0, "{}", ran.log);
    assert_eq!(ran.ran, ["install"], "the check never ran: {}", ran.log);
    assert!(ran.log.contains("FAILED"), "{}", ran.log);
    assert_eq!(r.summary(), "");
}
