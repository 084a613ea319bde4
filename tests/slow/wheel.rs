//! `pip install .` (the `memtide-cli` wheel): builds the wheel with maturin, installs it into a
//! fresh virtual environment and uses it as a user would: the `memtide` command on PATH (an
//! entry point into the `memtide._native` extension), the recorder importable as
//! `memtide_record` and `memtide.record`, a tiny recording read back;
//! the wheel carries a manylinux tag, its name is ours, and the licenses ship in it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::python_env::{borrow, build_wheel, run, stdout as text, target_dir, venv_with};

fn env_dir() -> PathBuf {
    crate::support::python_env::env_dir().expect("MEMTIDE_PY_ENV or HOME")
}

#[test]
#[ignore = "needs maturin and torch: run scripts/setup-python-env, then cargo test -- --include-ignored"]
fn wheel_installs_the_binary_and_the_recorder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let env = env_dir();
    let tmp = tempfile::tempdir().expect("tempdir");

    // 1. The wheel (dev profile: the same compiled code the other tests run).
    let bin = Path::new(env!("CARGO_BIN_EXE_memtide"));
    let wheel = build_wheel(&env, root, &target_dir(bin), &tmp.path().join("wheels"));
    let name = wheel.file_name().and_then(|n| n.to_str()).unwrap_or("");
    // `memtide-cli` on PyPI is ours (`memtide` is an unrelated project); wheel file names
    // spell it `memtide_cli`.
    assert!(
        name.starts_with(&format!("memtide_cli-{}-", env!("CARGO_PKG_VERSION"))),
        "wheel name {name}"
    );
    assert!(
        !cfg!(target_os = "linux") || name.contains("manylinux"),
        "a Linux wheel carries a manylinux tag: {name}"
    );
    let listing = run(
        Command::new(env.join("bin/python"))
            .args([
                "-c",
                "import sys, zipfile; print('\\n'.join(zipfile.ZipFile(sys.argv[1]).namelist()))",
            ])
            .arg(&wheel),
        "list the wheel",
    );
    assert!(
        text(&listing)
            .lines()
            .any(|l| l.starts_with("memtide/_native.") && l.ends_with(".so")),
        "the extension memtide/_native is not in the wheel:\n{}",
        text(&listing)
    );
    for license in ["LICENSE-MIT", "LICENSE-APACHE"] {
        assert!(
            text(&listing).lines().any(|l| l.ends_with(license)),
            "{license} is not in the wheel:\n{}",
            text(&listing)
        );
    }
    let meta = run(
        Command::new(env.join("bin/python"))
            .args([
                "-c",
                "import sys, zipfile; z = zipfile.ZipFile(sys.argv[1]); \
                 print(z.read(next(n for n in z.namelist() if n.endswith('METADATA'))).decode())",
            ])
            .arg(&wheel),
        "read the wheel's METADATA",
    );
    assert!(
        text(&meta).lines().any(|l| l == "Name: memtide-cli"),
        "{}",
        text(&meta)
    );

    // 2. A fresh venv with nothing but the wheel (no index: the wheel has no dependencies).
    let venv = tmp.path().join("venv");
    let py = venv_with(&env, &venv, &wheel);

    // 3. The command on the venv's PATH (the extension's `main`), reading as cargo's binary.
    let bin = venv.join("bin/memtide");
    let v = run(Command::new(&bin).arg("--version"), "memtide --version");
    assert!(text(&v).starts_with(&format!("memtide {}", env!("CARGO_PKG_VERSION"))));
    let sample = root.join("sample-traces/cuda-oom.pickle");
    let ours = run(
        Command::new(env!("CARGO_BIN_EXE_memtide"))
            .args(["summary", "--json"])
            .arg(&sample),
        "cargo's memtide summary",
    );
    let theirs = run(
        Command::new(&bin).args(["summary", "--json"]).arg(&sample),
        "the wheel's memtide summary",
    );
    assert_eq!(
        text(&theirs),
        text(&ours),
        "the wheel's binary reads the sample alike"
    );
    let m = run(
        Command::new(&py).args(["-m", "memtide", "--version"]),
        "python -m memtide",
    );
    assert!(text(&m).starts_with("memtide "));

    // 4. The recorder from the wheel (not from the checkout), under both names.
    let imp = run(
        Command::new(&py).current_dir(tmp.path()).args([
            "-c",
            "import memtide_record, memtide.record as r, memtide; \
             assert r.record is memtide_record.record; \
             print(memtide_record.__file__); print(memtide.__version__)",
        ]),
        "import memtide_record",
    );
    let out = text(&imp);
    let mut lines = out.lines();
    let file = lines.next().unwrap_or("");
    assert!(
        file.starts_with(&venv.display().to_string()),
        "memtide_record came from {file}, not the venv"
    );
    assert_eq!(lines.next(), Some(env!("CARGO_PKG_VERSION")));

    // 5. A tiny recording with the wheel's recorder, torch borrowed from the test environment
    // (a .pth line appends its site-packages after the venv's own).
    borrow(&env, &py, "torch");
    let jsonl = tmp.path().join("run.jsonl");
    let script = "import sys, torch, memtide_record\n\
        model = torch.nn.Linear(512, 512)\n\
        opt = torch.optim.Adam(model.parameters())\n\
        with memtide_record.record(sys.argv[1], model=model, optimizer=opt):\n\
        \x20   for i in range(2):\n\
        \x20       memtide_record.step(i)\n\
        \x20       opt.zero_grad(set_to_none=True)\n\
        \x20       model(torch.randn(64, 512)).sum().backward()\n\
        \x20       opt.step()\n\
        print(sum(p.numel() * p.element_size() for p in model.parameters()))\n";
    let rec = run(
        Command::new(&py)
            .current_dir(tmp.path())
            .args(["-c", script])
            .arg(&jsonl),
        "a tiny recording",
    );
    let param_bytes: u64 = text(&rec).trim().parse().expect("parameter bytes");
    let s = run(
        Command::new(&bin).args(["summary", "--json"]).arg(&jsonl),
        "memtide summary of the recording",
    );
    let v: serde_json::Value = serde_json::from_str(&text(&s)).expect("summary json");
    assert_eq!(v["format"], "jsonl");
    // Parameters + gradients + Adam's two moments stay live: at least 4 × the parameters.
    let final_bytes = v["final_bytes"].as_u64().expect("final_bytes");
    assert!(
        final_bytes >= 4 * param_bytes,
        "final {final_bytes} B < 4 × {param_bytes} B of parameters"
    );
    let steps = v["steps"].as_array().map_or(0, Vec::len);
    assert_eq!(steps, 2, "two step marks recorded");
}
