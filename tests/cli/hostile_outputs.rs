//! Hostile input, round two (issue 34), the command-line side: an output never touches an
//! input (plot -o, check --report, replay OUT), never follows a planted temporary file, never
//! replaces a symlink or a special file, keeps an existing file's mode; `-` is standard
//! output; the picture format follows the extension; `check` never passes what it did not
//! check; numeric flags are range-checked (no panic, no wrap-around); errors name the side
//! file they are about; one rank over the memory budget fails alone. Every input is made
//! here, in a temporary directory.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use crate::support::repo::memtide;

use crate::support::repo::sample;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A trace copied into `dir` (so nothing of the repository can be written).
fn trace_in(dir: &Path) -> PathBuf {
    let t = dir.join("t.jsonl");
    std::fs::copy(sample("train-3steps.jsonl"), &t).expect("copy");
    t
}

/// The side files, each named `*.svg` so that only their identity (not the extension check)
/// can stop `plot -o` writing over them: (flag, path, bytes).
fn side_files(dir: &Path) -> Vec<(&'static str, PathBuf, Vec<u8>)> {
    let files: [(&str, &str, &[u8]); 4] = [
        (
            "--device-log",
            "log.svg",
            b"time_us,device,used_bytes\n1,0,5\n",
        ),
        (
            "--rules",
            "rules.svg",
            b"[[rule]]\nmatch = \"x.py\"\nband = \"persistent\"\n",
        ),
        ("--categories", "cat.svg", b"[[1, 0, 512, 0]]\n"),
        ("--theme", "theme.svg", b"name = \"mine\"\n"),
    ];
    files
        .into_iter()
        .map(|(flag, name, bytes)| {
            let p = dir.join(name);
            std::fs::write(&p, bytes).expect("write");
            (flag, p, bytes.to_vec())
        })
        .collect()
}

#[test]
fn no_output_writes_over_a_side_input() {
    let dir = tempfile::tempdir().expect("tmp");
    let t = trace_in(dir.path());
    for (flag, side, bytes) in side_files(dir.path()) {
        let s = side.display().to_string();
        let mut runs: Vec<(&str, Vec<String>)> = vec![(
            "plot -o",
            vec![
                "plot".into(),
                t.display().to_string(),
                "-o".into(),
                s.clone(),
            ],
        )];
        if flag != "--theme" {
            runs.push((
                "check --report",
                vec![
                    "check".into(),
                    t.display().to_string(),
                    "--max-peak".into(),
                    "100GiB".into(),
                    "--report".into(),
                    s.clone(),
                ],
            ));
            runs.push((
                "replay OUT",
                vec![
                    "replay".into(),
                    t.display().to_string(),
                    s.clone(),
                    "--rate".into(),
                    "0".into(),
                ],
            ));
        }
        for (what, mut args) in runs {
            args.push(flag.into());
            args.push(s.clone());
            let o = memtide().args(&args).output().expect("runs");
            let err = text(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{what} onto {flag}: {err}");
            assert!(
                err.contains("never overwrites what it reads"),
                "{what} {flag}: {err}"
            );
            assert_eq!(
                std::fs::read(&side).expect("read"),
                bytes,
                "{what} changed the {flag} file"
            );
        }
    }
}

#[test]
fn a_rank_file_is_an_input_of_check_dir_report() {
    let dir = tempfile::tempdir().expect("tmp");
    let job = dir.path().join("job");
    std::fs::create_dir(&job).expect("mkdir");
    for r in 0..2 {
        std::fs::copy(
            sample("train-3steps.jsonl"),
            job.join(format!("rank{r}.jsonl")),
        )
        .expect("copy");
    }
    let rank1 = job.join("rank1.jsonl");
    let before = std::fs::read(&rank1).expect("read");
    let o = memtide()
        .arg("check")
        .arg(&job)
        .args(["--max-peak", "100GiB", "--report"])
        .arg(&rank1)
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert_eq!(std::fs::read(&rank1).expect("read"), before);
}

#[test]
fn a_planted_symlink_at_the_temporary_name_is_never_followed() {
    let dir = tempfile::tempdir().expect("tmp");
    let t = trace_in(dir.path());
    let victim = dir.path().join("victim");
    std::fs::write(&victim, b"precious").expect("write");
    let out = dir.path().join("out.svg");
    // The old temporary name was `.out.svg.memtide-PID.tmp`: plant it for the child's pid
    // while the child is still reading the trace.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_memtide"))
        .arg("plot")
        .arg(&t)
        .arg("-o")
        .arg(&out)
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let planted = dir
        .path()
        .join(format!(".out.svg.memtide-{}.tmp", child.id()));
    std::os::unix::fs::symlink(&victim, &planted).expect("symlink");
    assert!(child.wait().expect("wait").success());
    assert_eq!(std::fs::read(&victim).expect("read"), b"precious");
    assert!(std::fs::read(&out).expect("read").starts_with(b"<svg"));
    // No temporary file is left behind (the planted link is the test's own).
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .expect("ls")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp") && !n.contains("memtide-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_symlink_is_written_through_and_stays_a_link() {
    let dir = tempfile::tempdir().expect("tmp");
    let t = trace_in(dir.path());
    let elsewhere = dir.path().join("pictures");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    let target = elsewhere.join("real.svg");
    std::fs::write(&target, b"old").expect("write");
    let link = dir.path().join("link.svg");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    memtide()
        .arg("plot")
        .arg(&t)
        .arg("-o")
        .arg(&link)
        .assert()
        .success();
    let m = std::fs::symlink_metadata(&link).expect("stat");
    assert!(m.file_type().is_symlink(), "the link was replaced");
    assert_eq!(std::fs::read_link(&link).expect("readlink"), target);
    assert!(std::fs::read(&target).expect("read").starts_with(b"<svg"));
    // The temporary file went beside the target and was renamed; nothing is left over.
    let names: Vec<String> = std::fs::read_dir(&elsewhere)
        .expect("ls")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["real.svg"]);
    // A link to nothing is refused, and nothing is created through it.
    let dangling = dir.path().join("dangling.svg");
    std::os::unix::fs::symlink(dir.path().join("nowhere.svg"), &dangling).expect("symlink");
    memtide()
        .arg("plot")
        .arg(&t)
        .arg("-o")
        .arg(&dangling)
        .assert()
        .code(2);
    assert!(!dir.path().join("nowhere.svg").exists());
}

#[test]
fn special_files_are_written_in_place() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().expect("tmp");
    let t = trace_in(dir.path());
    memtide()
        .arg("plot")
        .arg(&t)
        .args(["-o", "/dev/null"])
        .assert()
        .success();
    let null = std::fs::metadata("/dev/null").expect("stat");
    assert!(null.file_type().is_char_device());
    // A link to this process's standard output: the picture goes down the pipe, the link
    // stays.
    let link = dir.path().join("out.svg");
    std::os::unix::fs::symlink("/proc/self/fd/1", &link).expect("symlink");
    let o = memtide()
        .arg("plot")
        .arg(&t)
        .arg("-o")
        .arg(&link)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(o.stdout.starts_with(b"<svg"), "{}", text(&o.stderr));
    assert!(std::fs::symlink_metadata(&link)
        .expect("stat")
        .file_type()
        .is_symlink());
}

#[test]
fn an_existing_file_keeps_its_mode() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("tmp");
    let t = trace_in(dir.path());
    for (mode, args) in [
        (0o600, vec!["plot", "-o"]),
        (0o640, vec!["check", "--max-peak", "100GiB", "--report"]),
    ] {
        let out = dir.path().join(format!(
            "out{mode:o}.{}",
            if args[0] == "plot" { "svg" } else { "md" }
        ));
        std::fs::write(&out, b"old").expect("write");
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(mode)).expect("chmod");
        memtide()
            .arg(args[0])
            .arg(&t)
            .args(&args[1..])
            .arg(&out)
            .assert()
            .success();
        let m = std::fs::metadata(&out).expect("stat");
        assert_eq!(m.permissions().mode() & 0o777, mode, "{}", out.display());
        assert_ne!(std::fs::read(&out).expect("read"), b"old");
    }
}

#[test]
fn a_dash_is_standard_output() {
    let dir = tempfile::tempdir().expect("tmp");
    let t = trace_in(dir.path());
    let o = memtide()
        .current_dir(dir.path())
        .arg("plot")
        .arg(&t)
        .args(["-o", "-"])
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(o.stdout.starts_with(b"<svg"));
    let o = memtide()
        .current_dir(dir.path())
        .arg("replay")
        .arg(&t)
        .args(["-", "--rate", "0"])
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(o.stdout, std::fs::read(&t).expect("read"));
    let o = memtide()
        .current_dir(dir.path())
        .arg("check")
        .arg(&t)
        .args(["--max-peak", "100GiB", "--report", "-"])
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let so = text(&o.stdout);
    assert!(so.starts_with("## memtide check\n\n- ok: peak"), "{so}");
    assert!(!dir.path().join("-").exists());
}

#[test]
fn the_picture_format_follows_the_extension() {
    let dir = tempfile::tempdir().expect("tmp");
    let t = trace_in(dir.path());
    for name in ["x.jpg", "noext"] {
        let out = dir.path().join(name);
        let o = memtide()
            .arg("plot")
            .arg(&t)
            .arg("-o")
            .arg(&out)
            .output()
            .expect("runs");
        assert_eq!(o.status.code(), Some(2));
        assert!(
            text(&o.stderr).contains(".svg or .png"),
            "{}",
            text(&o.stderr)
        );
        assert!(!out.exists());
    }
    let png = dir.path().join("X.PNG");
    memtide()
        .arg("plot")
        .arg(&t)
        .arg("-o")
        .arg(&png)
        .assert()
        .success();
    assert!(std::fs::read(&png)
        .expect("read")
        .starts_with(b"\x89PNG\r\n\x1a\n"));
}

/// A `summary --json` object whose peak is `peak` (JSON text).
fn summary_with_peak(peak: &str) -> String {
    format!(
        "{{\"source\":\"r.pickle\",\"format\":\"snapshot\",\"device\":\"cuda:0\",\"events\":10,\"peak\":{{\"bytes\":{peak}}}}}"
    )
}

#[test]
fn check_never_passes_a_job_whose_peaks_it_could_not_read() {
    let dir = tempfile::tempdir().expect("tmp");
    for (k, bad) in ["-5", "\"5\"", "1.5", "18446744073709551616"]
        .iter()
        .enumerate()
    {
        let job = dir.path().join(format!("job{k}"));
        std::fs::create_dir(&job).expect("mkdir");
        std::fs::write(job.join("rank0.json"), summary_with_peak(bad)).expect("write");
        std::fs::write(job.join("rank1.json"), summary_with_peak(bad)).expect("write");
        let o = memtide()
            .arg("check")
            .arg(&job)
            .args(["--max-peak", "1GiB"])
            .output()
            .expect("runs");
        assert_eq!(o.status.code(), Some(2), "peak {bad}");
        let err = text(&o.stderr);
        assert!(err.contains("peak.bytes is"), "{err}");
        // One good rank beside the bad one: still not a pass.
        std::fs::write(job.join("rank1.json"), summary_with_peak("1024")).expect("write");
        let o = memtide()
            .arg("check")
            .arg(&job)
            .args(["--max-peak", "1GiB"])
            .output()
            .expect("runs");
        assert_eq!(o.status.code(), Some(2), "peak {bad} beside a good one");
        let so = text(&o.stdout);
        assert!(so.contains("rank0.json: peak.bytes is"), "{so}");
    }
}

#[test]
fn check_refuses_a_snapshot_whose_entries_were_all_ignored() {
    let dir = tempfile::tempdir().expect("tmp");
    let f = dir.path().join("ignored.json");
    std::fs::write(
        &f,
        r#"{"segments": [], "device_traces": [[
            {"action": "alloc_v9", "addr": 4096, "size": 512, "stream": 0, "time_us": 1},
            {"action": "free_v9", "addr": 4096, "size": 512, "stream": 0, "time_us": 2}]]}"#,
    )
    .expect("write");
    for extra in [&[][..], &["--allow-warnings"][..]] {
        let o = memtide()
            .arg("check")
            .arg(&f)
            .args(["--max-peak", "1GiB"])
            .args(extra)
            .output()
            .expect("runs");
        assert_eq!(o.status.code(), Some(2), "{extra:?}");
        let err = text(&o.stderr);
        assert!(err.contains("unknown actions"), "{err}");
        assert!(o.stdout.is_empty(), "{}", text(&o.stdout));
    }
}

#[test]
fn bare_numbers_and_out_of_range_values_are_usage_errors() {
    let t = sample("train-leak.jsonl");
    let cases: [(&[&str], &str); 9] = [
        (&["--max-growth", "1"], "expected a percentage such as 10%"),
        (&["--max-growth=-1%"], "expected a percentage"),
        (&["--max-peak", "1000"], "a size with a unit"),
        (&["--max-peak", "18446744073709551616B"], "below 16 EiB"),
        (&["--max-peak", "16EiB"], "a size with a unit"),
        (&["--max-peak", "1GiB", "--capacity", "0B"], "more than 0 B"),
        (&["--max-peak", "1GiB", "--jobs", "5000"], "--jobs"),
        (&["--max-peak", "1GiB", "-f", "--poll", "0"], "--poll"),
        (
            &["--max-peak", "1GiB", "-f", "--idle-exit=-1"],
            "--idle-exit",
        ),
    ];
    for (args, want) in cases {
        let o = memtide()
            .arg("check")
            .arg(&t)
            .args(args)
            .output()
            .expect("runs");
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // A leak of 15 % is not within "--max-growth 15%" read as 1500 %: the old reading of a
    // bare 1 (100 %) passed it.
    memtide()
        .arg("check")
        .arg(&t)
        .args(["--max-growth", "1%"])
        .assert()
        .code(1);
    for (args, want) in [
        (&["plot", "-o", "-", "--width", "5"][..], "--width"),
        (&["plot", "-o", "-", "--height", "100000"][..], "--height"),
        (&["replay", "-", "--rate", "99999999999"][..], "--rate"),
    ] {
        let o = memtide()
            .arg(args[0])
            .arg(&t)
            .args(&args[1..])
            .output()
            .expect("runs");
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(text(&o.stderr).contains(want), "{args:?}");
    }
}

#[test]
fn idle_exit_out_of_range_is_a_usage_error_not_a_panic() {
    let dir = tempfile::tempdir().expect("tmp");
    let t = trace_in(dir.path());
    for v in ["-1", "NaN", "inf", "1e300", "18446744073709551616"] {
        let o = memtide()
            .arg("check")
            .arg("-f")
            .arg(&t)
            .args(["--max-peak", "100GiB"])
            .arg(format!("--idle-exit={v}"))
            .timeout(std::time::Duration::from_secs(30))
            .output()
            .expect("runs");
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{v}: {err}");
        assert!(err.contains("seconds from 0 to 604800"), "{v}: {err}");
        assert!(!err.contains("panicked"), "{v}: {err}");
    }
}

#[test]
fn a_device_log_year_beyond_9999_is_refused_with_file_line_and_value() {
    let dir = tempfile::tempdir().expect("tmp");
    let log = dir.path().join("smi.csv");
    std::fs::write(
        &log,
        "timestamp, index, memory.used [MiB], memory.total [MiB]\n\
         99999999999999/06/08 09:12:46.756, 0, 1024 MiB, 81559 MiB\n",
    )
    .expect("write");
    let o = memtide()
        .arg("summary")
        .arg(sample("cuda-oom.pickle"))
        .arg("--device-log")
        .arg(&log)
        .output()
        .expect("runs");
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("device log {}: line 2:", log.display())),
        "{err}"
    );
    assert!(err.contains("year 99999999999999 is out of range"), "{err}");
    assert!(
        !err.contains("cannot read") && !err.contains("panicked"),
        "{err}"
    );
}

#[test]
fn an_unroundable_request_is_never_served() {
    let dir = tempfile::tempdir().expect("tmp");
    let f = dir.path().join("huge.jsonl");
    std::fs::write(
        &f,
        "{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\"}\n\
         {\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":18446744073709551615}\n",
    )
    .expect("write");
    let o = memtide()
        .arg("whatif")
        .arg(&f)
        .args(["--alloc-conf", "roundup_power2_divisions:2", "--json"])
        .output()
        .expect("runs");
    let err = text(&o.stderr);
    assert!(o.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    let text = v.to_string();
    // Both settings (the defaults and the two divisions) refuse it; neither rounds it to 0.
    assert!(text.contains("cannot be rounded up"), "{text}");
    assert!(text.contains("request_too_large"), "{text}");
    assert!(!text.contains("\"rounded_bytes\":0"), "{text}");
}

#[test]
fn side_file_errors_name_the_side_file_not_the_trace() {
    let dir = tempfile::tempdir().expect("tmp");
    let rules = dir.path().join("bad-rules.toml");
    std::fs::write(&rules, "[[rule]]\nmatch = 5\n").expect("write");
    let o = memtide()
        .arg("summary")
        .arg(sample("train-3steps.jsonl"))
        .arg("--rules")
        .arg(&rules)
        .output()
        .expect("runs");
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err.contains(&format!("rules file {}", rules.display())),
        "{err}"
    );
    assert!(err.contains("line 2"), "{err}");
    assert!(!err.contains("train-3steps"), "{err}");
    let cat = dir.path().join("cat.json");
    std::fs::write(&cat, "{\"x\": 1}").expect("write");
    let o = memtide()
        .arg("summary")
        .arg(sample("cuda-oom.pt.trace.json.gz"))
        .arg("--categories")
        .arg(&cat)
        .output()
        .expect("runs");
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err.contains(&format!("categories file {}", cat.display())),
        "{err}"
    );
    assert!(!err.contains("cuda-oom"), "{err}");
}

/// A protocol-4 snapshot pickle of one alloc entry whose `time_us` is written by `time`
/// (opcodes) and whose frame's function name is `name`.
fn snapshot_pickle(time: &[u8], name: &str) -> Vec<u8> {
    fn s(p: &mut Vec<u8>, t: &str) {
        if t.len() < 256 {
            p.push(0x8c);
            p.push(t.len() as u8);
        } else {
            p.push(b'X');
            p.extend_from_slice(&(t.len() as u32).to_le_bytes());
        }
        p.extend_from_slice(t.as_bytes());
    }
    fn i(p: &mut Vec<u8>, v: i32) {
        p.push(b'J');
        p.extend_from_slice(&v.to_le_bytes());
    }
    let mut p = vec![0x80, 4, b'}', b'('];
    s(&mut p, "segments");
    p.push(b']');
    s(&mut p, "device_traces");
    p.extend_from_slice(b"](](}(");
    s(&mut p, "action");
    s(&mut p, "alloc");
    for (k, v) in [("addr", 4096), ("size", 512), ("stream", 0)] {
        s(&mut p, k);
        i(&mut p, v);
    }
    s(&mut p, "time_us");
    p.extend_from_slice(time);
    s(&mut p, "frames");
    p.extend_from_slice(b"](}(");
    s(&mut p, "filename");
    s(&mut p, "train.py");
    s(&mut p, "line");
    i(&mut p, 1);
    s(&mut p, "name");
    s(&mut p, name);
    p.extend_from_slice(b"ueueeu.");
    p
}

#[test]
fn a_time_beyond_64_bits_signed_says_what_range_was_expected() {
    let dir = tempfile::tempdir().expect("tmp");
    let f = dir.path().join("t.pickle");
    // LONG1, 9 bytes: 2^63, one more than i64::MAX.
    let two63 = [0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0x80, 0];
    std::fs::write(&f, snapshot_pickle(&two63, "f")).expect("write");
    let o = memtide().arg("summary").arg(&f).output().expect("runs");
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("'time_us' is 9223372036854775808"), "{err}");
    assert!(
        err.contains("-9223372036854775808 to 9223372036854775807"),
        "{err}"
    );
    assert!(!err.contains("must be an int, found int"), "{err}");
    // The same file with time 1 reads (the pickle itself is sound).
    std::fs::write(&f, snapshot_pickle(&[b'J', 1, 0, 0, 0], "f")).expect("write");
    memtide().arg("summary").arg(&f).assert().success();
}

#[test]
fn one_rank_over_the_memory_budget_fails_alone_with_its_own_name() {
    let dir = tempfile::tempdir().expect("tmp");
    let job = dir.path().join("job");
    std::fs::create_dir(&job).expect("mkdir");
    std::fs::copy(sample("train-3steps.jsonl"), job.join("rank0.jsonl")).expect("copy");
    std::fs::copy(sample("train-leak.jsonl"), job.join("rank2.jsonl")).expect("copy");
    // An 8 MiB function name: reading it takes several times the 32 MiB budget's share.
    let big = "n".repeat(8 << 20);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&snapshot_pickle(&[b'J', 1, 0, 0, 0], &big))
        .expect("gzip");
    std::fs::write(job.join("rank1.pickle.gz"), gz.finish().expect("gzip")).expect("write");
    let o = memtide()
        .env("MEMTIDE_MAX_MEMORY", "32M")
        .arg("summary")
        .arg(&job)
        .output()
        .expect("runs");
    let (so, err) = (text(&o.stdout), text(&o.stderr));
    assert_eq!(o.status.code(), Some(0), "{so}\n{err}");
    assert!(so.contains("2 ranks read of 3 files"), "{so}");
    assert!(
        so.contains("rank0.jsonl") && so.contains("rank2.jsonl"),
        "{so}"
    );
    let bad = so
        .lines()
        .find(|l| l.trim_start().starts_with("rank1.pickle.gz:"))
        .unwrap_or_default();
    assert!(
        bad.contains("out of memory") && bad.contains("MEMTIDE_MAX_MEMORY"),
        "{so}"
    );
    assert!(err.is_empty(), "{err}");
}

/// Issue 47 item 10: a newline in a file name never reaches a log raw: not in an error, not
/// in a note, not in a job's lines — no input can forge an `ok:` line of a CI log.
#[test]
fn a_newline_in_a_file_name_is_escaped_in_every_message() {
    let dir = tempfile::tempdir().expect("tmp");
    let forged = "a\nok: peak 1 B is within --max-peak 1 GiB\nx.jsonl";
    let f = dir.path().join(forged);
    std::fs::copy(sample("train-3steps.jsonl"), &f).expect("copy");
    let missing = dir.path().join(format!("{forged}.missing"));
    let runs: Vec<Vec<std::ffi::OsString>> = vec![
        vec![
            "check".into(),
            f.clone().into(),
            "--max-peak".into(),
            "1MiB".into(),
        ],
        vec![
            "check".into(),
            missing.clone().into(),
            "--max-peak".into(),
            "1GiB".into(),
        ],
        vec![
            "check".into(),
            dir.path().into(),
            "--max-peak".into(),
            "1GiB".into(),
        ],
        vec!["summary".into(), f.clone().into()],
        vec!["summary".into(), missing.into()],
        vec![
            "summary".into(),
            f.clone().into(),
            "--rules".into(),
            f.clone().into(),
        ],
    ];
    for args in runs {
        let out = memtide().args(&args).output().expect("run");
        for (what, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            let text = String::from_utf8_lossy(text);
            assert!(
                !text.lines().any(|l| l.starts_with("ok: peak 1 B")),
                "{args:?}: a forged line on {what}: {text}"
            );
        }
    }
}
