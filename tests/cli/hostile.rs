//! Hostile input, end to end through the binary: what a file says never drives the terminal,
//! never destroys a file, and never hangs or aborts (issue 16's findings, one test each).

use std::path::Path;

use crate::support::repo::memtide;

/// Bytes a terminal would act on: C0 controls except newline and tab, DEL, and C1 controls
/// (raw or UTF-8 encoded).
fn terminal_controls(out: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(out);
    text.chars()
        .filter(|&c| {
            (c.is_control() && c != '\n' && c != '\t') || ('\u{80}'..='\u{9f}').contains(&c)
        })
        .map(|c| u32::from(c) as u8)
        .collect()
}

/// A JSONL trace whose source, names, frames and marks carry OSC 52 (clipboard), a title
/// change, a screen clear, BEL, CR and a C1 CSI.
fn poisoned_jsonl(dir: &Path) -> std::path::PathBuf {
    let evil = r"\u001b]52;c;cm0gLXJmIH4=\u0007\u001b]0;pwned\u0007\u001b[2J\r\u009b31m";
    let text = format!(
        concat!(
            "{{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\",\"source\":\"train{e}.py\"}}\n",
            "{{\"t\":1,\"op\":\"mark\",\"name\":\"step {e}0\",\"kind\":\"step\"}}\n",
            "{{\"t\":2,\"op\":\"alloc\",\"id\":1,\"size\":1048576,\"cat\":\"activation\",\"name\":\"act{e}\",\"stack\":[\"model{e}.py:1 f{e}\"]}}\n",
            "{{\"t\":3,\"op\":\"alloc\",\"id\":2,\"size\":4096,\"name\":\"w{e}\"}}\n",
            "{{\"t\":4,\"op\":\"mark\",\"name\":\"step {e}1\",\"kind\":\"step\"}}\n",
            "{{\"t\":5,\"op\":\"free\",\"id\":2}}\n",
        ),
        e = evil
    );
    let p = dir.join("poisoned.jsonl");
    std::fs::write(&p, text).expect("write");
    p
}

#[test]
fn text_output_never_carries_terminal_controls() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = poisoned_jsonl(dir.path());
    for args in [
        vec!["summary"],
        vec!["check", "--max-peak", "1KiB"],
        vec!["check", "--max-peak", "1GiB"],
        vec!["diff"],
    ] {
        let mut cmd = memtide();
        cmd.args(&args).arg(&p);
        if args[0] == "diff" {
            cmd.arg(&p);
        }
        let out = cmd.output().expect("runs");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("pwned"),
            "{args:?} shows the (escaped) names: {text}"
        );
        assert_eq!(
            terminal_controls(&out.stdout),
            Vec::<u8>::new(),
            "{args:?} stdout: {text}"
        );
        assert_eq!(
            terminal_controls(&out.stderr),
            Vec::<u8>::new(),
            "{args:?} stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // The escapes are shown, so a reader sees what the file holds.
        if args[0] == "summary" {
            assert!(text.contains("\\x1b]52;c;"), "{text}");
        }
    }
}

#[test]
fn json_output_stays_exact() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = poisoned_jsonl(dir.path());
    let out = memtide()
        .args(["summary", "--json"])
        .arg(&p)
        .output()
        .expect("runs");
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let names: Vec<&str> = v["peak"]["live"]
        .as_array()
        .expect("live list")
        .iter()
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with("act\u{1b}]52;c;")),
        "the name round-trips exactly: {names:?}"
    );
}

#[test]
fn error_messages_quoting_the_file_are_escaped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let p = dir.path().join("bad\x1b]0;title\x07.jsonl");
    std::fs::write(
        &p,
        "{\"memtide\":1,\"device\":\"cuda:0\"}\n{\"t\":1,\"op\":\"alloc\x1b[2J\"}\n",
    )
    .expect("write");
    let out = memtide().arg("summary").arg(&p).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        terminal_controls(&out.stderr),
        Vec::<u8>::new(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn replay_never_overwrites_its_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/train-3steps.jsonl");
    let x = dir.path().join("x.jsonl");
    std::fs::copy(&src, &x).expect("copy");
    let before = std::fs::read(&x).expect("read");
    let link = dir.path().join("link.jsonl");
    std::fs::hard_link(&x, &link).expect("hard link");
    for out in [&x, &link] {
        let o = memtide()
            .args(["replay", "--rate", "0"])
            .arg(&x)
            .arg(out)
            .timeout(std::time::Duration::from_secs(20))
            .output()
            .expect("runs");
        assert_eq!(o.status.code(), Some(2), "replay X X must refuse");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("overwrite"), "{err}");
        assert_eq!(std::fs::read(&x).expect("read"), before, "X intact");
    }
    // Another file is fine.
    let y = dir.path().join("y.jsonl");
    let o = memtide()
        .args(["replay", "--rate", "0"])
        .arg(&x)
        .arg(&y)
        .output()
        .expect("runs");
    assert!(o.status.success());
    assert!(std::fs::metadata(&y).expect("y").len() > 0);
}

#[cfg(unix)]
#[test]
fn special_files_are_refused_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let samples = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces");
    let (snapshot, kineto) = (
        samples.join("cuda-oom.pickle"),
        samples.join("cuda-oom.pt.trace.json.gz"),
    );
    let cases: Vec<(Vec<std::ffi::OsString>, &str)> = vec![
        (vec!["summary".into(), fifo.clone().into()], "FIFO"),
        (
            vec![
                "check".into(),
                "--max-peak".into(),
                "1GiB".into(),
                fifo.clone().into(),
            ],
            "FIFO",
        ),
        (
            vec!["summary".into(), "/dev/zero".into()],
            "character device",
        ),
        // A directory is a job of ranks: its only file is the FIFO, named unreadable.
        (vec!["summary".into(), dir.path().into()], "FIFO"),
        (
            vec![
                "summary".into(),
                snapshot.into(),
                "--rules".into(),
                fifo.clone().into(),
            ],
            "FIFO",
        ),
        (
            vec![
                "summary".into(),
                kineto.into(),
                "--categories".into(),
                fifo.clone().into(),
            ],
            "FIFO",
        ),
    ];
    for (args, what) in cases {
        let start = std::time::Instant::now();
        let o = memtide()
            .args(&args)
            .timeout(std::time::Duration::from_secs(10))
            .output()
            .expect("runs");
        assert!(
            start.elapsed() < std::time::Duration::from_secs(1),
            "{args:?} took {:?}",
            start.elapsed()
        );
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains(what) && err.contains("not a regular file"),
            "{args:?}: {err}"
        );
    }
}

fn summary_json(p: &Path) -> serde_json::Value {
    let o = memtide()
        .args(["summary", "--json"])
        .arg(p)
        .output()
        .expect("runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("json")
}

#[test]
fn a_torn_last_line_is_a_line_still_being_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/train-3steps.jsonl");
    let whole = std::fs::read_to_string(&src).expect("sample");
    let full = summary_json(&src);
    // Cut inside a line appended after the last complete one.
    let torn = dir.path().join("torn.jsonl");
    std::fs::write(
        &torn,
        format!("{whole}{{\"t\":99999,\"op\":\"alloc\",\"id\":999,\"si"),
    )
    .expect("write");
    let v = summary_json(&torn);
    assert_eq!(v["peak"]["bytes"], full["peak"]["bytes"]);
    assert_eq!(v["events"], full["events"]);
    let warnings = v["warnings"].to_string();
    assert!(warnings.contains("still being written"), "{warnings}");
    // check agrees, and does not count it as a doubt.
    let o = memtide()
        .args(["check", "--max-peak", "100GiB"])
        .arg(&torn)
        .output()
        .expect("runs");
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // A whole last line without its newline is an event like any other.
    let nonl = dir.path().join("nonl.jsonl");
    let extra = "{\"t\":99999,\"op\":\"alloc\",\"id\":999,\"size\":1048576,\"cat\":\"activation\"}";
    std::fs::write(&nonl, format!("{whole}{extra}")).expect("write");
    let v = summary_json(&nonl);
    assert_eq!(v["events"].as_u64(), full["events"].as_u64().map(|n| n + 1));
    // A cut line in the middle (followed by more lines) is still an error with its line.
    let mid = dir.path().join("mid.jsonl");
    std::fs::write(&mid, format!("{whole}{{\"t\":99999,\"op\":\"al\n{extra}\n")).expect("write");
    let o = memtide().arg("summary").arg(&mid).output().expect("runs");
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("line "));
}

#[test]
fn kineto_bytes_that_are_not_numbers_are_left_out_and_counted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ev = |ts: u32, bytes: &str, addr: u32| {
        format!("{{\"ph\":\"i\",\"name\":\"[memory]\",\"ts\":{ts},\"tid\":1,\"pid\":1,\"args\":{{\"Bytes\":{bytes},\"Addr\":{addr},\"Device Type\":1,\"Device Id\":0}}}}")
    };
    let events = [
        ev(1, "\"5\"", 1),
        ev(2, "1e400", 2),
        ev(3, "null", 3),
        ev(4, "1.5", 4),
        ev(5, "1024", 5),
        ev(6, "2048.0", 6),
    ];
    let p = dir.path().join("k.json");
    std::fs::write(&p, format!("{{\"traceEvents\":[{}]}}", events.join(","))).expect("write");
    let v = summary_json(&p);
    assert_eq!(v["peak"]["bytes"], 3072, "only the integer counts: {v}");
    let w = v["doubtful_warnings"].to_string();
    assert!(
        w.contains("4 [memory] event(s) left out") && w.contains("traceEvents[0]"),
        "{w}"
    );
    // A doubt: check refuses to vouch for the figures.
    let o = memtide()
        .args(["check", "--max-peak", "1GiB"])
        .arg(&p)
        .output()
        .expect("runs");
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn byte_order_marks_duplicate_keys_and_the_array_form() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // A UTF-8 BOM before JSONL and before a Kineto trace is accepted.
    let jsonl = std::fs::read(root.join("sample-traces/train-3steps.jsonl")).expect("sample");
    let bom = dir.path().join("bom.jsonl");
    std::fs::write(&bom, [b"\xef\xbb\xbf".as_slice(), &jsonl].concat()).expect("write");
    let plain = summary_json(&root.join("sample-traces/train-3steps.jsonl"));
    assert_eq!(summary_json(&bom)["peak"], plain["peak"]);
    let mut kineto = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(
            std::fs::File::open(root.join("sample-traces/cuda-oom.pt.trace.json.gz"))
                .expect("open"),
        ),
        &mut kineto,
    )
    .expect("gunzip");
    let kbom = dir.path().join("bom.json");
    std::fs::write(&kbom, [b"\xef\xbb\xbf".as_slice(), &kineto].concat()).expect("write");
    let kplain = summary_json(&root.join("sample-traces/cuda-oom.pt.trace.json.gz"));
    assert_eq!(
        summary_json(&kbom)["peak"]["bytes"],
        kplain["peak"]["bytes"]
    );
    // The Chrome trace JSON array format: the events alone.
    let doc: serde_json::Value = serde_json::from_slice(&kineto).expect("json");
    let arr = dir.path().join("array.json");
    std::fs::write(&arr, doc["traceEvents"].to_string()).expect("write");
    let a = summary_json(&arr);
    assert_eq!(a["format"], "kineto");
    assert_eq!(a["peak"]["bytes"], kplain["peak"]["bytes"]);
    // A repeated key in a JSONL line is an error naming the line, as in snapshot JSON.
    let dup = dir.path().join("dup.jsonl");
    std::fs::write(
        &dup,
        "{\"memtide\":1,\"device\":\"cuda:0\"}\n{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":5,\"size\":7}\n",
    )
    .expect("write");
    let o = memtide().arg("summary").arg(&dup).output().expect("runs");
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("line 2") && err.contains("duplicate key \"size\""),
        "{err}"
    );
}

#[test]
fn jsonl_errors_name_their_own_line_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cases = [
        (
            "{\"t\":1,\"op\":\"view\",\"id\":2,\"of\":99}\n{\"t\":5,\"op\":\"free\",\"id\":1}\n",
            "line 3: view 2",
        ),
        (
            "{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":5}\n{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":5}\n{\"t\":5,\"op\":\"free\",\"id\":1}\n",
            "line 4: id 1 is already live",
        ),
        (
            "{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":18446744073709551616}\n",
            "line 3: \"size\" is too large",
        ),
    ];
    for (body, want) in cases {
        let p = dir.path().join("x.jsonl");
        std::fs::write(
            &p,
            format!("{{\"memtide\":1,\"device\":\"cuda:0\"}}\n# comment\n{body}"),
        )
        .expect("write");
        let o = memtide().arg("summary").arg(&p).output().expect("runs");
        assert_eq!(o.status.code(), Some(2));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want), "want {want:?} in {err}");
        assert_eq!(err.matches("line ").count(), 1, "one line number: {err}");
    }
}

#[test]
fn a_damaged_gzip_around_a_pickle_is_an_error() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().expect("tempdir");
    let pickle = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/snapshot-baseline/baseline.pickle"),
    )
    .expect("baseline");
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&pickle).expect("gzip");
    let good = enc.finish().expect("gzip");
    assert!(
        good.len() > 64 * 1024,
        "bigger than the detection head, so only the end tells"
    );
    let mut bad_crc = good.clone();
    let n = bad_crc.len();
    bad_crc[n - 8] ^= 0xff;
    let cut = good[..good.len() - 6].to_vec();
    for (name, bytes, ok) in [
        ("good", good, true),
        ("crc", bad_crc, false),
        ("cut", cut, false),
    ] {
        let p = dir.path().join(format!("{name}.pickle.gz"));
        std::fs::write(&p, bytes).expect("write");
        let o = memtide().arg("summary").arg(&p).output().expect("runs");
        if ok {
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        } else {
            assert_eq!(o.status.code(), Some(2), "{name}");
            assert!(
                String::from_utf8_lossy(&o.stderr).contains("gzip"),
                "{name}"
            );
        }
    }
}
