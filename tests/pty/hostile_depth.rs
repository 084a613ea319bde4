//! Hostile inputs of issue 34, each generated here: stacks of 150,000 and 1,000,000 frames
//! through every report, a rank directory and the explorer (no abort: the stack tree folds
//! runs of one frame and keeps a long path's ends); one memo-shared 1 MiB function name or
//! action (held once, shortened to `TEXT_CAP` bytes wherever shown); millions of step marks
//! (`windows` listed at its ends, memory and output linear); events all at one `t`.

#![allow(clippy::unwrap_used)]

use crate::support::pickle_writer;

use crate::support::pty as support;

use pickle_writer::snapshot;

use assert_cmd::Command;
use memtide::tui::testing::Harness;
use std::io::Write as _;
use std::path::{Path, PathBuf};

/// The cap on one-line texts (`memtide_core::clip::TEXT_CAP`), restated: the tests check the
/// documented figure, not whatever the constant says.
const CAP: usize = 1024;

/// Two allocations whose stacks are `depth` copies of one frame dict (shared by memo).
fn deep_pickle(depth: usize) -> Vec<u8> {
    snapshot(2, |p, i| {
        p.s("action").s("alloc").s("addr").i(4096 * (i as i32 + 1));
        p.s("size")
            .i(512 << i)
            .s("stream")
            .i(0)
            .s("time_us")
            .i(i as i32 + 1);
        p.s("frames").op(b']').op(b'(');
        if i == 0 {
            p.op(b'}')
                .op(b'(')
                .s("filename")
                .s("train.py")
                .s("line")
                .i(3);
            p.s("name").s("f").op(b'u').put(0);
        } else {
            p.get(0);
        }
        for _ in 1..depth {
            p.get(0);
        }
        p.op(b'e');
    })
}

/// A JSONL trace of two allocations whose stacks are `depth` copies of `train.py:3 f`.
fn deep_jsonl(depth: usize) -> Vec<u8> {
    let mut t = String::from("{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\"}\n");
    for id in 1..=2 {
        let stack = vec!["\"train.py:3 f\""; depth].join(",");
        t.push_str(&format!(
            "{{\"t\":{id},\"op\":\"alloc\",\"id\":{id},\"size\":{},\"stack\":[{stack}]}}\n",
            512 * id
        ));
    }
    t.into_bytes()
}

/// A snapshot JSON of one allocation whose stack is `depth` copies of one frame.
fn deep_snapshot_json(depth: usize) -> Vec<u8> {
    let frame = r#"{"filename":"train.py","line":3,"name":"f"}"#;
    let frames = vec![frame; depth].join(",");
    format!(
        r#"{{"segments":[],"device_traces":[[{{"action":"alloc","addr":4096,"size":512,"stream":0,"time_us":1,"frames":[{frames}]}}]]}}"#
    )
    .into_bytes()
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::File::create(&p)
        .and_then(|mut f| f.write_all(bytes))
        .unwrap();
    p
}

fn memtide() -> Command {
    let mut c = Command::cargo_bin("memtide").unwrap();
    c.env_remove("MEMTIDE_MAX_MEMORY");
    c
}

/// Runs memtide with `args` (and a memory budget); returns (exit code, stdout, stderr). A
/// signal (an abort) fails the test.
fn run(args: &[&str], budget: Option<&str>) -> (i32, String, String) {
    let mut c = memtide();
    if let Some(b) = budget {
        c.env("MEMTIDE_MAX_MEMORY", b);
    }
    let out = c
        .args(args)
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .unwrap();
    let code = out
        .status
        .code()
        .unwrap_or_else(|| panic!("{args:?}: killed by a signal: {:?}", out.status));
    (
        code,
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Every report of `path` succeeds; returns the `summary --json` document and the text
/// report with its tree.
fn every_report(path: &Path) -> (serde_json::Value, String) {
    let p = path.to_str().unwrap();
    let (code, text, err) = run(&["summary", "--tree", p], None);
    assert_eq!(code, 0, "{err}");
    let (code, json, err) = run(&["summary", "--json", p], None);
    assert_eq!(code, 0, "{err}");
    let (code, md, err) = run(&["summary", "--markdown", p], None);
    assert_eq!(code, 0, "{err}");
    assert!(md.contains("Peak"), "{md}");
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.md");
    let (code, _, err) = run(
        &[
            "check",
            p,
            "--max-peak",
            "1GiB",
            "--report",
            report.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read_to_string(&report).unwrap().contains("Peak"));
    (serde_json::from_str(&json).unwrap(), text)
}

/// The tree of `summary --json` as (depth, frame) rows, depth-first.
fn tree_rows(v: &serde_json::Value) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut todo = vec![(0usize, &v["peak"]["tree"])];
    while let Some((d, n)) = todo.pop() {
        out.push((d, n["frame"].as_str().unwrap().to_string()));
        for c in n["children"].as_array().unwrap().iter().rev() {
            todo.push((d + 1, c));
        }
    }
    out
}

/// Item 1: a stack of 150,000 identical frames in each format (a 2 KB pickle through its
/// memo, a 2 MB JSONL, a 6 MB snapshot JSON) reads; the tree holds it as one level
/// `train.py:3 f (×150,000)`. Every report of the pickle reads too.
#[test]
fn stacks_of_150k_frames_fold_into_one_level_in_every_report() {
    let dir = tempfile::tempdir().unwrap();
    let pickle = write(dir.path(), "deep.pickle", &deep_pickle(150_000));
    let (v, text) = every_report(&pickle);
    assert!(text.contains("train.py:3 f (×150,000)"), "{text}");
    let files = [
        write(dir.path(), "deep.jsonl", &deep_jsonl(150_000)),
        write(dir.path(), "deep.json", &deep_snapshot_json(150_000)),
    ];
    let others = files.iter().map(|f| {
        let (code, json, err) = run(&["summary", "--json", f.to_str().unwrap()], None);
        assert_eq!(code, 0, "{}: {err}", f.display());
        serde_json::from_str::<serde_json::Value>(&json).unwrap()
    });
    for v in std::iter::once(v).chain(others) {
        let rows = tree_rows(&v);
        assert_eq!(
            rows[1],
            (1, "train.py:3 f (×150,000)".to_string()),
            "{rows:?}"
        );
        assert!(rows.len() <= 3, "{rows:?}");
        assert_eq!(v["peak"]["live"][0]["user_frame"], "train.py:3 f");
    }
}

/// Item 1: a JSONL stack of a million frames (one 12 MB line) reads too.
#[test]
fn a_stack_of_a_million_frames_reads() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = String::from("{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\"}\n");
    let stack = vec!["\"a.py:1 f\""; 1_000_000].join(",");
    t.push_str(&format!(
        "{{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":512,\"stack\":[{stack}]}}\n"
    ));
    let path = write(dir.path(), "million.jsonl", t.as_bytes());
    let (code, json, err) = run(&["summary", "--json", path.to_str().unwrap()], None);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(tree_rows(&v)[1].1, "a.py:1 f (×1,000,000)");
}

/// Item 1: a rank directory of two deep ranks: the overview, its JSON and `check` read both
/// (the loader threads have smaller stacks than the main thread).
#[test]
fn a_rank_directory_of_deep_stacks_reads() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "rank0.pickle", &deep_pickle(150_000));
    write(dir.path(), "rank1.jsonl", &deep_jsonl(150_000));
    let d = dir.path().to_str().unwrap();
    for args in [
        vec!["summary", d],
        vec!["summary", "--json", d],
        vec!["check", d, "--max-peak", "1GiB"],
    ] {
        let (code, out, err) = run(&args, None);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(!out.contains("failed"), "{out}");
    }
    let mut h = Harness::open_ranks(&[dir.path().to_path_buf()], 120, 30);
    let s = h.screen();
    assert!(
        s.contains("rank0.pickle") && s.contains("rank1.jsonl"),
        "{s}"
    );
    h.press("<Enter>");
    assert!(!h.screen().is_empty());
}

/// Item 1: the explorer's first screens on a stack of 150,000 frames: the timeline, the live
/// set at the peak, its stack tree (one folded level, expanded) and the inspector.
#[test]
fn the_explorer_shows_a_deep_stack() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "deep.jsonl", &deep_jsonl(150_000));
    let mut h = Harness::open(&path, 120, 40);
    assert!(h.screen().contains("deep.jsonl"), "{}", h.screen());
    h.press("p");
    assert!(h.screen().contains("train.py:3 f"), "{}", h.screen());
    h.press("ggg");
    let rows = &h.explorer().live.tree_rows;
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0].frame, "train.py:3 f (×150,000)");
    h.press("<Enter>");
    assert!(h.screen().contains("(×150,000)"), "{}", h.screen());
    h.press("g<Enter>");
    assert!(!h.screen().is_empty());
}

/// Frames of distinct lines: nothing folds, and the path keeps its 64 outermost and 64
/// innermost levels with `… 149,872 frames …` between (the tree stays 129 levels deep).
#[test]
fn a_deep_stack_of_distinct_frames_keeps_its_ends() {
    let dir = tempfile::tempdir().unwrap();
    let mut t = String::from("{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\"}\n");
    // Innermost first: line 0 is the innermost frame, line 149,999 the outermost.
    let stack: Vec<String> = (0..150_000).map(|i| format!("\"a.py:{i} f\"")).collect();
    t.push_str(&format!(
        "{{\"t\":1,\"op\":\"alloc\",\"id\":1,\"size\":512,\"stack\":[{}]}}\n",
        stack.join(",")
    ));
    let path = write(dir.path(), "distinct.jsonl", t.as_bytes());
    let mut h = Harness::open(&path, 120, 40);
    h.press("pggg");
    // Open every level: Enter on the last row, then down to the next.
    for _ in 0..140 {
        let n = h.explorer().live.tree_rows.len();
        h.press(&format!("{}<Enter>", "j".repeat(n)));
    }
    let frames: Vec<String> = h
        .explorer()
        .live
        .tree_rows
        .iter()
        .map(|r| r.frame.clone())
        .collect();
    assert_eq!(frames.len(), 129, "{:?}", &frames[..5]);
    assert_eq!(frames[0], "a.py:149999 f");
    assert_eq!(frames[63], "a.py:149936 f");
    assert_eq!(frames[64], "… 149,872 frames …");
    assert_eq!(frames[65], "a.py:63 f");
    assert_eq!(frames[128], "a.py:0 f");
}

/// Item 2: one 1 MiB function name shared (memo) by 1,000 frames of distinct lines, one
/// per allocation. Held once and never re-expanded: the report reads under a 300 MB budget,
/// its JSON is small and no string in it passes the cap (which names the full length).
/// 1,000 allocations, each with one frame of its own line whose function name is one 1 MiB
/// string (shared by memo).
fn bigname_pickle() -> Vec<u8> {
    let name = "n".repeat(1 << 20);
    snapshot(1000, |p, i| {
        p.s("action").s("alloc").s("addr").i(4096 * (i as i32 + 1));
        p.s("size").i(512).s("stream").i(0).s("time_us").i(i as i32);
        p.s("frames").op(b']').op(b'(');
        p.op(b'}')
            .op(b'(')
            .s("filename")
            .s("train.py")
            .s("line")
            .i(i as i32);
        p.s("name");
        if i == 0 {
            p.s(&name).put(0);
        } else {
            p.get(0);
        }
        p.op(b'u').op(b'e');
    })
}

#[test]
fn a_shared_long_function_name_is_held_once_and_shortened() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "bigname.pickle", &bigname_pickle());
    let p = path.to_str().unwrap();
    let (code, json, err) = run(&["summary", "--json", p], Some("300M"));
    assert_eq!(code, 0, "{err}");
    assert!(json.len() < 200_000, "{} bytes", json.len());
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let mut strings = Vec::new();
    collect_strings(&v, &mut strings);
    assert!(strings.iter().all(|s| s.len() <= CAP));
    let inner = v["peak"]["live"][0]["innermost"].as_str().unwrap();
    assert!(inner.starts_with("nnnn") && inner.ends_with("n… (1,048,576 bytes)"));
    let user = v["peak"]["live"][0]["user_frame"].as_str().unwrap();
    assert!(user.starts_with("train.py:") && user.ends_with("… (1,048,576 bytes)"));
    for args in [
        vec!["summary", "--tree", p],
        vec!["summary", "--markdown", p],
    ] {
        let (code, out, err) = run(&args, Some("300M"));
        assert_eq!(code, 0, "{err}");
        assert!(out.len() < 100_000, "{args:?}: {} bytes", out.len());
        assert!(out.contains("… (1,048,576 bytes)"));
    }
    // The explorer's live set at the peak: 1,000 rows and the tree, each text shortened.
    let mut h = Harness::open(&path, 120, 40);
    h.press("p");
    let lv = &h.explorer().live;
    assert_eq!(lv.rows.len(), 1000);
    assert!(lv
        .rows
        .iter()
        .all(|e| e.user_frame.len() <= CAP && e.innermost.len() <= CAP && e.frame.len() <= CAP));
    h.press("ggg");
    assert!(h
        .explorer()
        .live
        .tree_rows
        .iter()
        .all(|r| r.frame.len() <= CAP));
}

fn collect_strings<'a>(v: &'a serde_json::Value, out: &mut Vec<&'a str>) {
    let mut todo = vec![v];
    while let Some(v) = todo.pop() {
        match v {
            serde_json::Value::String(s) => out.push(s),
            serde_json::Value::Array(a) => todo.extend(a),
            serde_json::Value::Object(o) => {
                out.extend(o.keys().map(String::as_str));
                todo.extend(o.values());
            }
            _ => {}
        }
    }
}

/// Item 2: an unknown action that is one memo-shared 1 MiB string, on 5,000 entries: one
/// entry in the unknown-action table, the warning shortened, and a 64 MB budget suffices.
#[test]
fn a_shared_long_action_is_counted_once() {
    let act = "a".repeat(1 << 20);
    let pk = snapshot(5000, |p, i| {
        p.s("action");
        if i == 0 {
            p.s(&act).put(0);
        } else {
            p.get(0);
        }
        p.s("addr").i(4096 * (i as i32 + 1)).s("size").i(512);
    });
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "bigaction.pickle", &pk);
    let (code, json, err) = run(&["summary", "--json", path.to_str().unwrap()], Some("64M"));
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let w = v["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|w| w.as_str())
        .find(|w| w.contains("unknown actions"))
        .unwrap();
    assert!(
        w.starts_with("5000 trace entries with unknown actions"),
        "{w}"
    );
    assert!(w.len() <= CAP, "{w}");
    assert!(w.contains("file-wide: aaaa"), "{w}");
    assert!(w.contains("a… (1,048,576 bytes) ×5000)"), "{w}");
}

/// Item 3: 1,200 step marks: `steps` lists every step, `windows` the first and last 250
/// and the peak's (here the first step's), `windows_omitted` the other 700; the text and
/// Markdown tables list their ends and say what they leave out.
#[test]
fn many_steps_list_every_step_and_the_ends_of_the_windows() {
    let mut t = String::from("{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\"}\n");
    for i in 0..1200 {
        t.push_str(&format!(
            "{{\"t\":{},\"op\":\"mark\",\"name\":\"step {i}\",\"kind\":\"step\"}}\n",
            3 * i
        ));
        t.push_str(&format!(
            "{{\"t\":{},\"op\":\"alloc\",\"id\":{i},\"size\":{}}}\n",
            3 * i + 1,
            if i == 600 { 1 << 20 } else { 512 }
        ));
        t.push_str(&format!(
            "{{\"t\":{},\"op\":\"free\",\"id\":{i}}}\n",
            3 * i + 2
        ));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "steps.jsonl", t.as_bytes());
    let p = path.to_str().unwrap();
    let (code, json, err) = run(&["summary", "--json", p], None);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["steps"].as_array().unwrap().len(), 1200);
    assert_eq!(v["steps"][600]["peak"], 1 << 20);
    let names: Vec<&str> = v["windows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), 501);
    assert_eq!((names[0], names[249]), ("step 0", "step 249"));
    assert_eq!(names[250], "step 600", "the peak's window");
    assert_eq!((names[251], names[500]), ("step 950", "step 1199"));
    assert_eq!(v["windows_omitted"], 699);
    let (code, text, err) = run(&["summary", p], None);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains("… 699 more windows not listed"), "{text}");
    assert!(text.contains("… 700 steps not shown"), "{text}");
    assert!(text.contains("step 1199") && !text.contains("step 700 "));
    let (code, md, err) = run(&["summary", "--markdown", p], None);
    assert_eq!(code, 0, "{err}");
    assert!(md.contains("… 700 steps not shown") && md.contains("… 699 more windows"));
}

/// Item 3: 100,000 allocations, views, frees and marks all at one `t`: one equal-`t` group,
/// read under a 96 MB budget.
#[test]
fn events_all_at_one_t_read_within_a_budget() {
    let mut t = String::from("{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\"}\n");
    for i in 0..25_000 {
        t.push_str(&format!(
            "{{\"t\":5,\"op\":\"alloc\",\"id\":{i},\"size\":512}}\n"
        ));
        t.push_str(&format!(
            "{{\"t\":5,\"op\":\"view\",\"id\":{},\"of\":{i}}}\n",
            100_000 + i
        ));
        t.push_str("{\"t\":5,\"op\":\"mark\",\"name\":\"m\",\"kind\":\"phase\"}\n");
    }
    for i in 0..25_000 {
        t.push_str(&format!("{{\"t\":5,\"op\":\"free\",\"id\":{i}}}\n"));
    }
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "onet.jsonl", t.as_bytes());
    let (code, json, err) = run(&["summary", "--json", path.to_str().unwrap()], Some("96M"));
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["final_bytes"], 0);
}

/// Item 2: the explorer (the real binary in a terminal) loads the shared 1 MiB name and
/// shows the live set at the peak under a 300 MB budget, then quits cleanly.
#[cfg(unix)]
#[test]
fn the_explorer_loads_a_shared_long_name_within_300_mb() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "bigname.pickle", &bigname_pickle());
    let bin = Path::new(env!("CARGO_BIN_EXE_memtide"));
    let mut p = support::Pty::spawn(
        Path::new("/usr/bin/env"),
        &[
            "MEMTIDE_MAX_MEMORY=300M",
            bin.to_str().unwrap(),
            path.to_str().unwrap(),
        ],
        30,
        120,
    );
    p.wait_for("cursor #", support::timeout());
    p.send(b"p");
    p.wait_for("nnnnnnnn", support::timeout());
    p.send(b"q");
    assert_eq!(p.wait_exit(support::timeout()), Some(0), "{}", p.screen());
}

/// The explorer's abort path: a `SIGABRT` (what a stack overflow in any thread ends in)
/// leaves the alternate screen and turns mouse reporting off before the process ends.
#[cfg(unix)]
#[test]
fn an_abort_gives_the_terminal_back() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("sample-traces/train-3steps.jsonl");
    let bin = Path::new(env!("CARGO_BIN_EXE_memtide"));
    let mut p = support::Pty::spawn(bin, &[file.to_str().unwrap()], 30, 120);
    p.wait_for("cursor #", support::timeout());
    assert!(p.alternate_screen());
    let killed = std::process::Command::new("kill")
        .args(["-ABRT", &p.pid().to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert!(p.wait_exit(support::timeout()).is_some());
    // The reader thread may still be parsing the last bytes.
    let start = std::time::Instant::now();
    while p.alternate_screen() && start.elapsed() < support::timeout() {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(!p.alternate_screen(), "still in the alternate screen");
}

/// Kineto stacks come from nesting: 1,500 nested `python_function` spans with an allocation
/// at each depth would store 1,500 × 1,500 / 2 frames (a 6 MB file of 20,000 took 27 s and
/// 1.6 GB). Past 512 open spans an allocation keeps its innermost 256 and a last frame saying
/// the outer ones were left out.
#[test]
fn deeply_nested_kineto_spans_keep_their_innermost_256() {
    let n = 1500;
    let mut ev: Vec<String> = (0..n)
        .map(|i| {
            format!(
                r#"{{"ph":"X","cat":"python_function","name":"train.py({i}): f","ts":{i},"dur":{},"pid":1,"tid":1}}"#,
                4 * n - 2 * i
            )
        })
        .collect();
    ev.extend((0..n).map(|i| {
        format!(
            r#"{{"ph":"i","name":"[memory]","pid":1,"tid":1,"ts":{i}.5,"args":{{"Total Reserved":0,"Total Allocated":{},"Bytes":512,"Device Id":0,"Device Type":1,"Addr":{}}}}}"#,
            (i + 1) * 512,
            4096 * (i + 1)
        )
    }));
    let text = format!(r#"{{"traceEvents":[{}]}}"#, ev.join(","));
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "nested.json", text.as_bytes());
    let p = path.to_str().unwrap();
    let (code, json, err) = run(&["summary", "--json", "--frames", "all", p], None);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let top: Vec<&str> = v["peak"]["tree"]["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["frame"].as_str().unwrap())
        .collect();
    // 988 allocations sit under more than 512 spans: their outermost level is the cut.
    assert!(
        top.contains(&"(outer spans not kept: nested too deep)"),
        "{top:?}"
    );
    assert_eq!(v["peak"]["live_count"], 1500);
    // The innermost span still names each allocation.
    assert_eq!(v["peak"]["live"][5]["label"], "train.py(5): f");
}

/// Issue 47 item 4: `n` live allocations, one frame each, of distinct lines; the file name
/// is `file`, written once and shared by memo (a reader holds it once).
fn distinct_lines_pickle(n: usize, file: &str) -> Vec<u8> {
    snapshot(n, |p, i| {
        p.s("action").s("alloc").s("addr").i(4096 * (i as i32 + 1));
        p.s("size").i(512).s("stream").i(0).s("time_us").i(i as i32);
        p.s("frames").op(b']').op(b'(');
        p.op(b'}').op(b'(').s("filename");
        if i == 0 {
            p.s(file).put(0);
        } else {
            p.get(0);
        }
        p.s("line")
            .i(i as i32)
            .s("name")
            .s("forward")
            .op(b'u')
            .op(b'e');
    })
}

/// The stack tree of `summary --json`: the root holds every byte, lists its 5 biggest
/// children (ties by text) and counts the rest as omitted.
fn assert_wide_tree(v: &serde_json::Value, n: u64) {
    let tree = &v["peak"]["tree"];
    assert_eq!(tree["bytes"], n * 512);
    let kids = tree["children"].as_array().unwrap();
    assert_eq!(kids.len(), 5);
    assert!(kids.iter().all(|k| k["bytes"] == 512));
    assert_eq!(tree["omitted_bytes"], (n - 5) * 512);
}

/// Issue 47 item 4: 100,000 live allocations from distinct lines (a sibling scan took
/// 10–33 s in a release build) and 30,000 of one shared 1 MiB file name (the siblings'
/// texts share their first 1,000 bytes): `summary --json`, and the explorer's tree of
/// 30,000 rows and its filter. Each took minutes in this (debug) build before, each child
/// found by scanning its siblings' texts; the complexity itself is counted by the core's
/// and the explorer's unit tests.
#[test]
fn many_distinct_lines_build_the_tree_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let short = write(
        dir.path(),
        "lines.pickle",
        &distinct_lines_pickle(100_000, "/p/train.py"),
    );
    let (code, json, err) = run(&["summary", "--json", short.to_str().unwrap()], None);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_wide_tree(&v, 100_000);
    // Ties by text: `train.py:0 forward`, `:1`, `:10`, `:100`, `:1000`.
    let first: Vec<&str> = v["peak"]["tree"]["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["frame"].as_str().unwrap())
        .collect();
    assert_eq!(
        first,
        [
            "train.py:0 forward",
            "train.py:1 forward",
            "train.py:10 forward",
            "train.py:100 forward",
            "train.py:1000 forward"
        ]
    );
    let file = format!("/long/{}/train.py", "d".repeat(1 << 20));
    let long = write(
        dir.path(),
        "shared.pickle",
        &distinct_lines_pickle(30_000, &file),
    );
    let (code, json, err) = run(&["summary", "--json", long.to_str().unwrap()], None);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_wide_tree(&v, 30_000);
    let mut h = Harness::open(&long, 120, 40);
    h.press("pggg");
    let rows = &h.explorer().live.tree_rows;
    assert_eq!(rows.len(), 30_000);
    assert!(rows.iter().all(|r| r.frame.len() <= CAP && r.depth == 0));
    // A filter on one line's number: the one row whose frame holds ":29999 ".
    h.press("/:29999 <Enter>");
    let rows = &h.explorer().live.tree_rows;
    assert_eq!(rows.len(), 1, "{}", h.screen());
    assert!(rows[0].matched && rows[0].frame.ends_with(":29999 forward"));
}
