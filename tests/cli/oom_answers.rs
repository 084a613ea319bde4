//! Helper A2's integration tests: a job directory's skipped files summarised with a count
//! (issue 35); the what-if replay under the ceiling the allocator really had (issue 42); OOM
//! verdicts from what the file holds (issue 38).

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use crate::support::repo::memtide;

fn repo(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

// ---------------------------------------------------------------- issue 35: skipped files

/// A job directory: one rank file (the bundled sample), `notes` text files, one subdirectory.
fn noisy_job(notes: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        repo("sample-traces/cuda-oom.pickle"),
        dir.path().join("rank0.pickle"),
    )
    .unwrap();
    for i in 0..notes {
        std::fs::write(
            dir.path().join(format!("note{i:03}.md")),
            format!("notes {i}\n"),
        )
        .unwrap();
    }
    std::fs::create_dir(dir.path().join("logs")).unwrap();
    dir
}

#[test]
fn summary_dir_summarises_hundreds_of_skipped_files_in_one_line() {
    let job = noisy_job(615);
    let out = memtide().arg("summary").arg(job.path()).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains(
            "615 files that are not traces nor memtide summaries: note000.md, note001.md, \
             note002.md, … and 612 more"
        ),
        "{text}"
    );
    assert!(text.contains("logs/: a directory"), "{text}");
    assert!(
        !text.contains("note003.md"),
        "names past the third are counted: {text}"
    );
    assert!(text.lines().count() < 20, "{} lines", text.lines().count());
    // The JSON keeps every file (it is for programs).
    let out = memtide()
        .arg("summary")
        .arg(job.path())
        .arg("--json")
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["skipped"].as_array().unwrap().len(), 616);
}

#[test]
fn markdown_and_check_report_summarise_skipped_files_too() {
    let job = noisy_job(40);
    let md = memtide()
        .arg("summary")
        .arg(job.path())
        .arg("--markdown")
        .output()
        .unwrap();
    let md = String::from_utf8(md.stdout).unwrap();
    assert_eq!(md.matches("skipped").count(), 2, "{md}");
    assert!(md.contains("40 files that are not traces"), "{md}");
    let report = memtide()
        .arg("check")
        .arg(job.path())
        .args(["--max-peak", "100GiB", "--report", "-"])
        .output()
        .unwrap();
    let report = String::from_utf8(report.stdout).unwrap();
    assert!(report.contains("… and 37 more"), "{report}");
    assert!(!report.contains("note039.md"), "{report}");
}

#[test]
fn a_single_skipped_file_keeps_its_reason() {
    let job = noisy_job(1);
    let out = memtide().arg("summary").arg(job.path()).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("note000.md: not a trace nor a memtide summary (it starts with bytes 6e 6f 74 65 73 20 30"),
        "{text}"
    );
}

#[test]
fn the_ranks_screen_counts_skipped_files() {
    use memtide::tui::testing::Harness;
    let job = noisy_job(615);
    let h = Harness::open_ranks(&[job.path().to_path_buf()], 120, 30);
    let screen = h.screen();
    assert!(
        screen.contains(
            "skipped 616 (not traces): note000.md, note001.md, note002.md, … and 613 more"
        ),
        "{screen}"
    );
}

// ------------------------------------------------ issue 42: what-if under the real ceiling

const MIB: u64 = 1 << 20;

fn fixture(rel: &str) -> PathBuf {
    repo("tests/fixtures").join(rel)
}

fn whatif_json(args: &[&str]) -> serde_json::Value {
    let o = memtide()
        .arg("whatif")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn whatif_text(args: &[&str]) -> String {
    let o = memtide().arg("whatif").args(args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

fn truth(rel: &str) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(fixture(rel)).unwrap()).unwrap()
}

/// The allocator-faithful fixture: memtide's replays match tools/cca_model.py's, an
/// independent model of PyTorch's allocator (the truth file), under the ceiling the run had.
#[test]
fn expandable_segments_would_have_fit_where_the_defaults_ran_out_as_the_independent_replay_says() {
    let f = fixture("oom/oom_expandable_saves.pickle");
    let t = truth("oom/oom_expandable_saves.truth.json");
    let f = f.to_str().unwrap();
    let v = whatif_json(&[
        f,
        "--alloc-conf",
        "expandable_segments:True",
        "--alloc-conf",
        "max_split_size_mb:128",
    ]);
    // The ceiling: reserved + driver free at the file's OOM, the file's own figures.
    assert_eq!(v["ceiling"]["source"], "oom_figures");
    assert_eq!(v["ceiling"]["bytes"], t["ceiling"]);
    assert_eq!(t["ceiling"], 7680 * MIB, "the README's figure");
    let runs = v["runs"].as_array().unwrap();
    // The file's settings reproduce the OOM at its event, short by what the model says.
    let d = &t["replays"]["defaults"];
    assert_eq!(runs[0]["outcome"], "oom");
    assert_eq!(runs[0]["oom"]["index"], d["index"]);
    assert_eq!(runs[0]["oom"]["requested_bytes"], d["request"]);
    assert_eq!(runs[0]["oom_shortfall"], d["shortfall"]);
    assert_eq!(runs[0]["model_check"]["result"], "reproduced");
    assert_eq!(runs[0]["oom"]["verdict"], "fragmentation");
    // Expandable segments and max_split_size_mb:128 would have fit, with the same peaks.
    for (k, conf) in [
        (1, "expandable_segments:True"),
        (2, "max_split_size_mb:128"),
    ] {
        let x = &t["replays"][conf];
        assert_eq!(x["outcome"], "would_have_fit", "{conf}");
        assert_eq!(runs[k]["outcome"], "would_have_fit", "{conf}");
        assert!(runs[k]["oom"].is_null(), "{conf}");
        assert_eq!(runs[k]["reserved_peak"], x["reserved_peak"], "{conf}");
    }
    assert_eq!(runs[1]["reserved_peak"], 6462 * MIB, "the README's figure");
    // The text says which ceiling, before the table, and each row's result.
    let s = whatif_text(&[f, "--alloc-conf", "expandable_segments:True"]);
    let ceiling = s.find("ceiling: 7.500 GiB = reserved 6.002 GiB + driver free 1.498 GiB at the file's OOM (#15)").expect(&s);
    let table = s.find("settings ").unwrap();
    assert!(ceiling < table, "{s}");
    let row = |name: &str| s.lines().find(|l| l.starts_with(name)).unwrap().to_string();
    assert!(
        row("file's settings (defaults)")
            .ends_with("OOM at #15: 1.953 GiB, 466.0 MiB short (as recorded)"),
        "{s}"
    );
    assert!(
        row("expandable_segments:True").ends_with("would have fit"),
        "{s}"
    );
    assert!(
        s.contains("model check: the model reproduces the file's OOM at #15"),
        "{s}"
    );
    assert!(!s.contains("would have been served"), "{s}");
}

/// Live tensors: no setting helps, and the report says OOM for each, never "fits".
#[test]
fn a_setting_that_cannot_help_is_reported_as_oom() {
    for (f, at) in [
        (fixture("oom/oom_live.pickle"), 9),
        (repo("sample-traces/cuda-oom.pickle"), 80),
    ] {
        let f = f.to_str().unwrap();
        let v = whatif_json(&[
            f,
            "--alloc-conf",
            "expandable_segments:True",
            "--alloc-conf",
            "max_split_size_mb:128",
        ]);
        for r in v["runs"].as_array().unwrap() {
            assert_eq!(r["outcome"], "oom", "{f}: {}", r["alloc_conf"]);
            assert_eq!(r["oom"]["index"], at, "{f}: {}", r["alloc_conf"]);
            assert!(r["oom_shortfall"].as_u64().unwrap() > 0);
        }
        assert_eq!(v["runs"][0]["model_check"]["result"], "reproduced", "{f}");
        let s = whatif_text(&[f, "--alloc-conf", "expandable_segments:True"]);
        assert!(!s.contains("would have"), "{f}: {s}");
    }
    // The sample's ceiling is its README's: 15,362 MiB reserved + 510 MiB driver free.
    let v = whatif_json(&[repo("sample-traces/cuda-oom.pickle").to_str().unwrap()]);
    assert_eq!(v["ceiling"]["bytes"], 15872 * MIB);
    assert_eq!(
        v["runs"][0]["oom_shortfall"],
        514 * MIB,
        "1 GiB − 510 MiB free"
    );
}

/// No OOM and no capacity: said once, reserved peaks only, no result column.
#[test]
fn without_a_ceiling_only_reserved_peaks_are_compared() {
    // Two allocations, no OOM, no capacity in the header.
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("plain.jsonl");
    let lines = [
        r#"{"memtide":1,"device":"cuda:0","clock":"us"}"#.to_string(),
        format!(
            r#"{{"t":1,"op":"alloc","id":1,"size":{},"cat":"activation"}}"#,
            100 * MIB
        ),
        r#"{"t":2,"op":"free","id":1}"#.to_string(),
        format!(
            r#"{{"t":3,"op":"alloc","id":2,"size":{},"cat":"activation"}}"#,
            102 * MIB
        ),
    ];
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    let f = p.to_str().unwrap();
    let s = whatif_text(&[f, "--alloc-conf", "expandable_segments:True"]);
    assert_eq!(s.matches("no ceiling").count(), 1, "{s}");
    assert!(s.contains("compares reserved peaks only"), "{s}");
    assert!(!s.contains("would have"), "{s}");
    assert!(!s.contains("OOM at"), "{s}");
    let head = s.lines().find(|l| l.starts_with("settings")).unwrap();
    assert!(!head.contains("result"), "{head}");
    let v = whatif_json(&[f, "--alloc-conf", "expandable_segments:True"]);
    assert!(v["ceiling"].is_null());
    assert!(v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["outcome"] == "no_ceiling"));
    // With a capacity (no OOM in the file): the capacity is the ceiling, outside unknown.
    let v = whatif_json(&[f, "--capacity", "9GiB"]);
    assert_eq!(v["ceiling"]["source"], "capacity");
    assert_eq!(v["ceiling"]["bytes"], 9u64 << 30);
    assert!(v["ceiling"]["outside"].is_null());
    assert!(v["ceiling"]["text"]
        .as_str()
        .unwrap()
        .contains("not subtracted"));
}

/// A JSONL trace's OOM mark is replayed too: the file's own request meets the ceiling.
#[test]
fn a_jsonl_oom_is_replayed_under_its_own_ceiling() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("oom.jsonl");
    // 600 MiB live in a 600 MiB reserve, then a 200 MiB request with 100 MiB free on the
    // device: the ceiling is 700 MiB, and the replay needs a new 200 MiB segment: 100 short.
    let lines = [
        r#"{"memtide":1,"device":"cuda:0","clock":"us"}"#.to_string(),
        format!(
            r#"{{"t":1,"op":"alloc","id":1,"size":{},"cat":"activation"}}"#,
            600 * MIB
        ),
        format!(r#"{{"t":2,"op":"reserve","id":100,"size":{}}}"#, 600 * MIB),
        format!(
            r#"{{"t":3,"op":"oom","size":{},"free":{}}}"#,
            200 * MIB,
            100 * MIB
        ),
    ];
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    let v = whatif_json(&[p.to_str().unwrap()]);
    assert_eq!(v["ceiling"]["bytes"], 700 * MIB, "{v}");
    assert_eq!(v["runs"][0]["outcome"], "oom", "{v}");
    assert_eq!(v["runs"][0]["model_check"]["result"], "reproduced", "{v}");
    assert_eq!(v["runs"][0]["oom_shortfall"], 100 * MIB, "{v}");
}

fn summary_json(args: &[&str]) -> serde_json::Value {
    let o = memtide()
        .arg("summary")
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// `summary`'s fix list replays under the same ceiling as `whatif` and agrees with the
/// independent model's replays (the truth file); the pinner is X2, which splits the
/// 4096 MiB block's free space (1200 + 1200 + 1696 MiB by hand, tools/gen_oom_faithful.py).
#[test]
fn the_fix_list_is_checked_by_replay_under_whatif_s_ceiling() {
    let f = fixture("oom/oom_expandable_saves.pickle");
    let f = f.to_str().unwrap();
    let t = truth("oom/oom_expandable_saves.truth.json");
    let v = summary_json(&[f]);
    let o = &v["ooms"][0];
    assert_eq!(o["verdict"], "fragmentation");
    assert_eq!(
        o["reasoning"],
        "1.953 GiB requested ≤ 2.828 GiB free in the large pool, but its largest free block is 1.656 GiB: no block large enough"
    );
    assert_eq!(
        o["pool_free"],
        serde_json::Value::Null,
        "not a key of ooms[]"
    );
    let w = whatif_json(&[f]);
    let fixes = o["fixes"].as_array().unwrap();
    assert!(fixes
        .iter()
        .all(|x| x["ceiling"]["bytes"] == w["ceiling"]["bytes"]
            && x["ceiling"]["source"] == "oom_figures"));
    assert!(o["fixes_ceiling"].as_str().unwrap().starts_with(
        "7.500 GiB = reserved 6.002 GiB + driver free 1.498 GiB at the file's OOM (#15)"
    ));
    let fix = |s: &str| fixes.iter().find(|x| x["setting"] == s).unwrap();
    for conf in ["expandable_segments:True", "max_split_size_mb:128"] {
        let x = &t["replays"][conf];
        assert_eq!(fix(conf)["result"], "fits", "{conf}");
        assert_eq!(fix(conf)["would_have_fit"], true, "{conf}");
        assert_eq!(fix(conf)["reserved_peak"], x["reserved_peak"], "{conf}");
        // What is left under the ceiling once the request is served.
        assert_eq!(
            fix(conf)["headroom_after"].as_u64().unwrap(),
            t["ceiling"].as_u64().unwrap() - x["reserved_peak"].as_u64().unwrap(),
            "{conf}"
        );
    }
    // roundup_power2_divisions:4 rounds 2000 MiB up to 2048 MiB: still out at #15.
    let r = fix("roundup_power2_divisions:4");
    assert_eq!(
        (
            r["result"].clone(),
            r["would_have_fit"].clone(),
            r["oom_at"].clone()
        ),
        ("does_not_fit".into(), false.into(), 15.into())
    );
    assert_eq!(r["shortfall"], 514 * MIB, "6146 + 2048 − 7680 MiB");
    let p = o["pinners"].as_array().unwrap();
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0]["size"], 1200 * MIB);
    assert_eq!(p[0]["largest_free_without"], 4096 * MIB);
    assert_eq!(p[0]["allocated_at"], 9);
    // The text names them alike.
    let s = String::from_utf8(memtide().args(["summary", f]).output().unwrap().stdout).unwrap();
    assert!(
        s.contains("  pinner            1.172 GiB train.py:19 step (allocated at #9): without it the largest free run would be 4.000 GiB"),
        "{s}"
    );
    assert!(
        s.contains("  fix               expandable_segments:True: fits under 7.500 GiB (reserved peak 6.311 GiB, 1.189 GiB headroom left after the failed request; the rest of the step is not in the file)"),
        "{s}"
    );
    // check's FAIL line says which setting replay found would have fit.
    let o = memtide()
        .args(["check", "--max-peak", "100GiB", f])
        .output()
        .unwrap();
    let first = String::from_utf8(o.stdout).unwrap();
    assert!(
        first.lines().next().unwrap().contains(
            "checked by replay: expandable_segments:True, max_split_size_mb:128 fits under the memory the run surely had"
        ),
        "{first}"
    );
}

/// The bundled sample: `live_tensors` without --capacity (issue 38; it was `unknown`), the
/// reasoning in numbers from its README (1 GiB requested; 258 MiB free in the reserve, 510 MiB
/// driver free), and no setting that would have saved it.
#[test]
fn the_sample_oom_gets_a_definite_verdict_without_a_capacity() {
    let v = summary_json(&[repo("sample-traces/cuda-oom.pickle").to_str().unwrap()]);
    let o = &v["ooms"][0];
    assert_eq!(o["verdict"], "live_tensors");
    assert_eq!(o["capacity"], serde_json::Value::Null);
    assert_eq!(o["capacity_source"], serde_json::Value::Null);
    let r = o["reasoning"].as_str().unwrap();
    assert!(
        r.starts_with("1.000 GiB requested > 258.0 MiB free in the reserve + 510.0 MiB driver free = 768.0 MiB"),
        "{r}"
    );
    assert!(o["fixes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|x| x["result"] == "does_not_fit"
            && x["would_have_fit"] == false
            && x["oom_at"] == 80));
    assert!(o["pinners"].as_array().unwrap().is_empty());
    // The estimates for live tensors: the 2 × 3 GiB saved at model.py:31 forward, and half
    // of the 6.75 GiB of activations (3 + 3 GiB + 768 MiB + 512 B), against the one shortfall:
    // no free block holds 1 GiB (the largest is 256 MiB), so the request needs a new 1024 MiB
    // segment and the driver had 510 MiB: 514 MiB short under the file's own settings, as the
    // replay reproduces it.
    let s = o["savings"].as_array().unwrap();
    assert_eq!(s.len(), 2, "{s:?}");
    assert_eq!(
        s[0]["change"],
        "activation checkpointing of the tensors saved at model.py:31 forward"
    );
    assert_eq!(s[0]["saving"], 6 * GIB);
    assert_eq!(o["shortfall"], 514 * MIB);
    assert_eq!(s[0]["shortfall"], 514 * MIB);
    assert_eq!(s[0]["covers_shortfall"], true);
    assert_eq!(s[1]["live_bytes"], 6 * GIB + 768 * MIB + 512);
    assert_eq!(s[1]["saving"], (6 * GIB + 768 * MIB + 512) / 2);
}

/// A free block large enough for the request contradicts a plain OOM: `unknown`, never a
/// made-up verdict; the fixes are not judged where the file's own settings do not reproduce
/// its OOM.
#[test]
fn figures_that_contradict_the_oom_are_said_so() {
    let v = summary_json(&[repo("tests/fixtures/snapshot/two_devices_p4.pickle")
        .to_str()
        .unwrap()]);
    let per = v["per_device"].as_array().unwrap();
    let o = per
        .iter()
        .find_map(|d| d["ooms"].as_array().and_then(|a| a.first()).cloned())
        .unwrap();
    assert_eq!(o["verdict"], "unknown");
    assert!(o["reasoning"]
        .as_str()
        .unwrap()
        .contains("could hold the 6.001 MiB requested"));
    assert!(o["fixes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|x| x["would_have_fit"].is_null()));
    assert!(o["fixes_ceiling"]
        .as_str()
        .unwrap()
        .contains("the model is off"));
}

// ------------------------------------------ issue 38: PyTorch's OOM message as a capacity

const GIB: u64 = 1 << 30;

/// The sample's OOM (README: 1 GiB requested, 510 MiB driver free, 14.75 GiB allocated,
/// 15 GiB reserved) as each PyTorch 2.x wording prints it, on a 15.77 GiB card. The format
/// lines of `DeviceCachingAllocator::malloc` (c10/cuda/CUDACachingAllocator.cpp) each
/// follows are quoted above it.
fn messages() -> Vec<(&'static str, String)> {
    vec![
        (
            // 2.0 (and 1.x):
            //   "CUDA out of memory. Tried to allocate ", format_size(alloc_size),
            //   " (GPU ", device, "; ", format_size(device_total), " total capacity; ",
            //   format_size(...allocated_bytes...), " already allocated; ",
            //   format_size(device_free), " free; ", allowed_info,
            //   format_size(...reserved_bytes...), " reserved in total by PyTorch)",
            //   " If reserved memory is >> allocated memory try setting max_split_size_mb ..."
            "2.0",
            "RuntimeError: CUDA out of memory. Tried to allocate 1.00 GiB (GPU 0; 15.77 GiB total capacity; 14.75 GiB already allocated; 510.00 MiB free; 15.00 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF".into(),
        ),
        (
            // 2.1 (note PyTorch's own typo "capacty"):
            //   "CUDA out of memory. Tried to allocate ", format_size(alloc_size), ". GPU ",
            //   device, " has a total capacty of ", format_size(device_total), " of which ",
            //   format_size(device_free), " is free. ", proc_info, "Of the allocated memory ",
            //   format_size(allocated_bytes), " is allocated by PyTorch, and ",
            //   format_size(reserved_bytes - allocated_bytes),
            //   " is reserved by PyTorch but unallocated.", ...
            // proc_info (reportProcessMemoryInfo): per process
            //   "Process " << pid  |  "Including non-PyTorch memory, this process",
            //   then " has " << format_size(proc.usedGpuMemory) << " memory in use. "
            "2.1",
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacty of 15.77 GiB of which 510.00 MiB is free. Process 4242 has 15.26 GiB memory in use. Of the allocated memory 14.75 GiB is allocated by PyTorch, and 258.00 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF".into(),
        ),
        (
            // 2.2 and later:
            //   ". GPU ", device, " has a total capacity of ", format_size(device_total),
            //   " of which ", format_size(device_free), " is free. ", proc_info,
            //   allowed_info, "Of the allocated memory ",
            //   format_size(allocated_bytes + allocated_in_private_pools),
            //   " is allocated by PyTorch, ", private_pool_msg, "and ",
            //   format_size(reserved_bytes - allocated_bytes - allocated_in_private_pools),
            //   " is reserved by PyTorch but unallocated.", " If reserved but unallocated
            //   memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True ..."
            "2.2+",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 15.77 GiB of which 510.00 MiB is free. Including non-PyTorch memory, this process has 15.26 GiB memory in use. Of the allocated memory 14.75 GiB is allocated by PyTorch, and 258.00 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)".into(),
        ),
        (
            // 2.3 and later, with CUDA graphs' private pools and a memory fraction:
            //   private_pool_msg = "with " + format_size(allocated_in_private_pools) +
            //     " allocated in private pools (e.g., CUDA Graphs), "
            //   allowed_info = format_size(allowed_memory_maximum) + " allowed; "
            // and a job log that wrapped the message over lines.
            "2.2+",
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB.\nGPU 0 has a total capacity of 15.77 GiB of which 510.00 MiB is free.\nProcess 77 has 1.00 GiB memory in use. Including non-PyTorch memory, this process has 15.26 GiB memory in use. 15.50 GiB allowed; Of the allocated memory 14.75 GiB is allocated by PyTorch, with 104.00 MiB\nallocated in private pools (e.g., CUDA Graphs), and 258.00 MiB is reserved by\nPyTorch but unallocated.".into(),
        ),
    ]
}

/// Every wording gives the same capacity (15.77 GiB, to ± 0.005 GiB as printed), named as
/// the source, and the outside memory 15.77 GiB − 15,362 MiB − 510 MiB = 276.5 MiB; the verdict
/// stays live_tensors (276.5 MiB could not have covered the 514 MiB the segment lacked).
#[test]
fn every_pytorch_2_oom_wording_gives_the_capacity() {
    let d = tempfile::tempdir().unwrap();
    let sample = repo("sample-traces/cuda-oom.pickle");
    let capacity = (1577 * GIB + 50) / 100;
    for (i, (wording, text)) in messages().into_iter().enumerate() {
        let p = d.path().join(format!("oom{i}.txt"));
        std::fs::write(&p, &text).unwrap();
        let o = memtide()
            .args(["summary", "--json", "--oom-message"])
            .arg(&p)
            .arg(&sample)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{wording}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            o.stderr.is_empty(),
            "{wording}: figures agree: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let x = &v["ooms"][0];
        assert_eq!(x["capacity"], capacity, "{wording}");
        let src = x["capacity_source"].as_str().unwrap();
        assert!(src.starts_with("PyTorch's OOM message "), "{src}");
        assert!(
            src.ends_with("(\"total capacity of 15.77 GiB\", ± 5.120 MiB)"),
            "{src}"
        );
        // The sample's README: 15,362 MiB reserved.
        assert_eq!(
            x["outside_allocator"],
            capacity - 15362 * MIB - 510 * MIB,
            "{wording}"
        );
        assert_eq!(x["verdict"], "live_tensors", "{wording}");
    }
}

/// A message of another OOM is used but said so; one memtide cannot read exits 2 naming
/// the file, the offset and what was expected.
#[test]
fn a_message_that_disagrees_or_cannot_be_read_is_said_so() {
    let d = tempfile::tempdir().unwrap();
    let sample = repo("sample-traces/cuda-oom.pickle");
    let p = d.path().join("other.txt");
    std::fs::write(&p, "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 15.77 GiB of which 1.00 GiB is free. Of the allocated memory 1.00 GiB is allocated by PyTorch, and 0 bytes is reserved by PyTorch but unallocated.").unwrap();
    let o = memtide()
        .args(["summary", "--oom-message"])
        .arg(&p)
        .arg(&sample)
        .output()
        .unwrap();
    assert!(o.status.success());
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        err.contains("its driver free 1.00 GiB differs from the file's 510.0 MiB at the OOM #80"),
        "{err}"
    );
    assert!(
        err.contains(
            "it tried to allocate 2.00 GiB, the file's OOM #80 needed a 1.000 GiB segment"
        ),
        "{err}"
    );
    let bad = d.path().join("bad.txt");
    std::fs::write(
        &bad,
        "CUDA out of memory. Tried to allocate 1.00 GiB; GPU 0",
    )
    .unwrap();
    let o = memtide()
        .args(["summary", "--oom-message"])
        .arg(&bad)
        .arg(&sample)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(err.contains("bad.txt"), "{err}");
    assert!(
        err.contains("offset 46 of the message: expected \". GPU \""),
        "{err}"
    );
}

// ------------------------------------------------- issue 38: a history that starts late

/// tests/fixtures/oom/truncated_history.pickle: a run recorded by tools/cca_model.py, cut as
/// a 24-entry ring buffer cuts it. Its true peak (4096 MiB, before the recording) lies within
/// the bounds; the recorded peak is the floor; a step is 12 entries.
#[test]
fn a_truncated_history_gets_bounds_that_contain_the_true_peak() {
    let f = fixture("oom/truncated_history.pickle");
    let t = truth("oom/truncated_history.truth.json");
    let v = summary_json(&[f.to_str().unwrap()]);
    let b = &v["history_bounds"];
    let (lo, hi) = (
        b["peak_at_least"].as_u64().unwrap(),
        b["peak_at_most"].as_u64().unwrap(),
    );
    let true_peak = t["true_peak"].as_u64().unwrap();
    assert!(
        lo <= true_peak && true_peak <= hi,
        "{lo} ≤ {true_peak} ≤ {hi}"
    );
    assert_eq!(b["peak_at_least"], t["recorded_peak"]);
    assert_eq!(b["peak_at_most"], t["reserved_at_cut"]);
    assert_eq!(b["events_per_step"], 12);
    assert_eq!(b["max_entries_for_a_step"], 24);
    assert_eq!(b["predating_blocks"], 1);
    let s = String::from_utf8(memtide().arg("summary").arg(&f).output().unwrap().stdout).unwrap();
    assert!(
        s.contains("history bounds: the history starts after 1 block (1.000 GiB) was allocated: the run's peak was at least 2.000 GiB (recorded) and at most 4.000 GiB"),
        "{s}"
    );
    // A history that reaches back to the start has none.
    let v = summary_json(&[fixture("oom/oom_expandable_saves.pickle").to_str().unwrap()]);
    assert!(v.get("history_bounds").is_none());
}

/// A capped run (`set_per_process_memory_fraction`) full of live tensors (32 × 128 MiB in a
/// 4 GiB reserve): the driver had 10 GiB free, room for the 1 GiB segment, so the cap refused
/// it; nothing in the reserve could hold 1 GiB: live_tensors, not fragmentation; whatif
/// replays under the cap it implies (below 4 GiB + 1 GiB) and reproduces the OOM.
#[test]
fn a_capped_run_is_told_by_the_driver_s_room() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("capped.jsonl");
    let mut lines = vec![r#"{"memtide":1,"device":"cuda:0","clock":"us"}"#.to_string()];
    lines.push(format!(
        r#"{{"t":1,"op":"reserve","id":100,"size":{}}}"#,
        4 * GIB
    ));
    for i in 0..32u64 {
        lines.push(format!(
            r#"{{"t":{},"op":"alloc","id":{},"size":{},"cat":"activation"}}"#,
            2 + i,
            1 + i,
            128 * MIB
        ));
    }
    lines.push(format!(
        r#"{{"t":50,"op":"oom","size":{},"free":{}}}"#,
        GIB,
        10 * GIB
    ));
    std::fs::write(&p, lines.join("\n") + "\n").unwrap();
    let f = p.to_str().unwrap();
    let v = summary_json(&[f]);
    let o = &v["ooms"][0];
    assert_eq!(o["verdict"], "live_tensors", "{o}");
    assert!(o["reasoning"]
        .as_str()
        .unwrap()
        .starts_with("the driver had 10.00 GiB free, room for the new 1.000 GiB segment, so the allocator's own limit"));
    let w = whatif_json(&[f]);
    assert_eq!(w["ceiling"]["source"], "oom_cap");
    assert_eq!(w["ceiling"]["bytes"], 5 * GIB - 1);
    assert_eq!(w["runs"][0]["model_check"]["result"], "reproduced", "{w}");
}

/// The bundled Kineto trace records no driver free at its OOM (`unknown` alone); PyTorch's
/// message supplies it, and the verdict follows: 1 GiB > 258 MiB free in the reserve
/// (reserved − allocated) + 510 MiB.
#[test]
fn the_oom_message_completes_a_kineto_oom() {
    let k = repo("sample-traces/cuda-oom.pt.trace.json.gz");
    let k = k.to_str().unwrap();
    assert_eq!(summary_json(&[k])["ooms"][0]["verdict"], "unknown");
    let m = fixture("oom/cuda_oom_message.txt");
    let v = summary_json(&[k, "--oom-message", m.to_str().unwrap()]);
    let o = &v["ooms"][0];
    assert_eq!(o["verdict"], "live_tensors", "{o}");
    assert_eq!(o["device_free"], 510 * MIB);
    assert_eq!(o["capacity"], 16 * GIB);
    assert!(o["capacity_source"]
        .as_str()
        .unwrap()
        .ends_with("the driver free at the OOM, 510.00 MiB, from it too (the file records none)"));
}

/// A whole job log with bytes that are not UTF-8 around the message is read.
#[test]
fn the_oom_message_may_sit_in_a_job_log_that_is_not_utf8() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("job.log");
    let mut bytes = b"epoch 3 \xff\xfe progress\n".to_vec();
    bytes.extend(std::fs::read(fixture("oom/cuda_oom_message.txt")).unwrap());
    bytes.extend(b"\n\xc3 trailing\n");
    std::fs::write(&p, bytes).unwrap();
    let v = summary_json(&[
        repo("sample-traces/cuda-oom.pickle").to_str().unwrap(),
        "--oom-message",
        p.to_str().unwrap(),
    ]);
    assert_eq!(v["ooms"][0]["capacity"], 16 * GIB);
}

// ------------------------------------------------- issue 49: the fix a user acts on is right

/// A fix that serves the failed request but leaves less than the same phase of an earlier step
/// allocated at once says the run will likely fail again (tools/gen_oom_faithful.py: 534 MiB
/// left under max_split_size_mb:128, 518 MiB under expandable segments; step0's forward held a
/// 4096 MiB activation).
#[test]
fn a_fix_that_leaves_too_little_for_the_step_says_so() {
    let f = fixture("oom/oom_horizon.pickle");
    let t = truth("oom/oom_horizon.truth.json");
    let v = summary_json(&[f.to_str().unwrap()]);
    let o = &v["ooms"][0];
    assert_eq!(o["verdict"], "fragmentation");
    let ceiling = t["ceiling"].as_u64().unwrap();
    for conf in ["expandable_segments:True", "max_split_size_mb:128"] {
        let x = o["fixes"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["setting"] == conf)
            .unwrap();
        let peak = t["replays"][conf]["reserved_peak"].as_u64().unwrap();
        assert_eq!(x["result"], "fits", "{conf}");
        assert_eq!(x["reserved_peak"], peak, "{conf}");
        assert_eq!(x["headroom_after"], ceiling - peak, "{conf}");
    }
    let h = o["horizon"].as_str().unwrap();
    assert!(
        h.starts_with("the best fix leaves 534.0 MiB after the failed request, less than the largest allocation of 4.000 GiB in phase forward of an earlier step"),
        "{h}"
    );
    assert!(
        o["advice"]
            .as_str()
            .unwrap()
            .contains("will likely run out again later in this step"),
        "{o}"
    );
    assert!(
        !o["savings"].as_array().unwrap().is_empty(),
        "savings under every verdict"
    );
}

/// A leak that filled the card: every setting runs out (the model's shortfall, 184 MiB, is the
/// one shortfall), the verdict is the live tensors and the advice names the leak per step.
#[test]
fn a_leak_that_filled_the_card_is_named_as_such() {
    let f = fixture("oom/oom_leak.pickle");
    let t = truth("oom/oom_leak.truth.json");
    let v = summary_json(&[f.to_str().unwrap()]);
    let o = &v["ooms"][0];
    assert_eq!(o["verdict"], "live_tensors");
    assert_eq!(o["shortfall"], t["replays"]["defaults"]["shortfall"]);
    assert_eq!(o["shortfall"], 184 * MIB);
    assert!(o["fixes"]
        .as_array()
        .unwrap()
        .iter()
        .all(|x| x["result"] == "does_not_fit"));
    let a = o["advice"].as_str().unwrap();
    assert!(
        a.starts_with("a leak of 256.0 MiB per step (+2.250 GiB after warm-up) filled the card"),
        "{a}"
    );
    assert!(!a.contains("expandable_segments"), "{a}");
}

/// A setting in use is never offered: under max_split_size_mb:128 the fix list leaves it out,
/// and expandable segments on top of it serve the request as the independent model says.
#[test]
fn the_setting_in_use_is_never_offered() {
    let f = fixture("oom/oom_split_in_use.pickle");
    let t = truth("oom/oom_split_in_use.truth.json");
    let v = summary_json(&[f.to_str().unwrap()]);
    let o = &v["ooms"][0];
    let fixes = o["fixes"].as_array().unwrap();
    assert!(
        fixes.iter().all(|x| !x["setting"]
            .as_str()
            .unwrap()
            .starts_with("max_split_size_mb")),
        "{fixes:?}"
    );
    let e = fixes
        .iter()
        .find(|x| x["setting"] == "expandable_segments:True")
        .unwrap();
    assert_eq!(e["result"], "fits");
    assert_eq!(
        e["reserved_peak"],
        t["replays"]["max_split_size_mb:128,expandable_segments:True"]["reserved_peak"]
    );
    assert_eq!(o["verdict"], "fragmentation");
    let a = o["advice"].as_str().unwrap();
    assert!(
        a.contains("set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"),
        "{a}"
    );
    assert!(!a.contains("max_split_size_mb"), "{a}");
    assert_eq!(
        o["shortfall"],
        t["replays"]["max_split_size_mb:128"]["shortfall"]
    );
}

/// The profiler trace of the bundled OOM records no driver free bytes: what the run surely had
/// is its 15 GiB reserve, at most the 16 GiB card. No setting "fits" from that upper bound:
/// two depend on the memory outside the allocator (the samples' README: 512 MiB lay outside,
/// so both fail there), whatif says the same.
#[test]
fn no_fix_fits_from_an_upper_bound() {
    let f = repo("sample-traces/cuda-oom.pt.trace.json.gz");
    let f = f.to_str().unwrap();
    let v = summary_json(&[f]);
    let o = &v["ooms"][0];
    for x in o["fixes"].as_array().unwrap() {
        assert_ne!(x["result"], "fits", "{x}");
        assert_ne!(x["would_have_fit"], true, "{x}");
    }
    let e = o["fixes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["setting"] == "expandable_segments:True")
        .unwrap();
    assert_eq!(e["result"], "depends");
    assert_eq!(e["ceiling"]["source"], "capacity");
    let outside = e["outside_below"].as_u64().unwrap();
    assert!(
        outside < 512 * MIB,
        "the README's 512 MiB outside decides: {outside}"
    );
    assert_eq!(
        outside,
        16 * GIB - e["needs"].as_u64().unwrap(),
        "the capacity less the reserve it needs"
    );
    let w = whatif_text(&[f, "--alloc-conf", "expandable_segments:True"]);
    assert!(!w.contains("would have fit"), "{w}");
    assert!(w.contains("depends: fits only if less than"), "{w}");
}

/// The failed request's own stack, in every report: `--json` (`stack`, `user_frame`), the
/// text, `--markdown` and `check`'s FAIL line (the sample's OOM comes from
/// the backward at train.py:60 in its generator, tools/gen_pytorch_samples.py: `STEP_BWD`).
#[test]
fn the_failed_request_s_stack_is_in_every_report() {
    let f = repo("sample-traces/cuda-oom.pickle");
    let f = f.to_str().unwrap();
    let v = summary_json(&[f]);
    let o = &v["ooms"][0];
    assert_eq!(o["user_frame"], "train.py:60 train_step");
    let stack: Vec<&str> = o["stack"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap())
        .collect();
    assert!(stack.contains(&"train.py:60 train_step"), "{stack:?}");
    assert_eq!(
        o["module"],
        serde_json::Value::Null,
        "the stack names no module"
    );
    let text = String::from_utf8(memtide().args(["summary", f]).output().unwrap().stdout).unwrap();
    assert!(
        text.contains("  requested at      train.py:60 train_step"),
        "{text}"
    );
    let md = String::from_utf8(
        memtide()
            .args(["summary", "--markdown", f])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert!(
        md.contains("| requested at | train.py:60 train\\_step |"),
        "{md}"
    );
    let check = memtide()
        .args(["check", "--max-peak", "100GiB", f])
        .output()
        .unwrap();
    let line = String::from_utf8(check.stdout).unwrap();
    assert!(
        line.contains("(requested at train.py:60 train_step)")
            && line.contains("514.0 MiB short under the file's own settings")
            && line
                .contains("no allocator setting fits, even under the most the run could have had"),
        "{line}"
    );
    // A Kineto trace records no stack for its OOM: null, never empty made-up frames.
    let k = summary_json(&[repo("sample-traces/cuda-oom.pt.trace.json.gz")
        .to_str()
        .unwrap()]);
    assert_eq!(k["ooms"][0]["stack"], serde_json::Value::Null);
    assert_eq!(k["ooms"][0]["user_frame"], serde_json::Value::Null);
}

/// PyTorch's message alone (`memtide oom`), where no trace was kept: the figures it prints,
/// judged by the same rules; the bytes PyTorch calls "reserved but unallocated" after its
/// retries are free blocks too small for the request, so a request that fits in them plus the
/// driver's free bytes is fragmentation — unless the margin is within the message's rounding.
#[test]
fn a_message_alone_gets_the_verdict_its_figures_give() {
    let o = memtide()
        .args(["oom", "--json"])
        .arg(fixture("oom/cuda_oom_message.txt"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["oom"]["verdict"], "live_tensors");
    // 1.00 GiB requested, 510.00 MiB free on the driver: the new segment lacks 514 MiB.
    assert_eq!(v["oom"]["shortfall"], 514 * MIB);
    assert_eq!(v["oom"]["stack"], serde_json::Value::Null);
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, tried: &str, free: &str, unalloc: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, format!(
            "Traceback (most recent call last):\n  ...\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate {tried}. GPU 0 has a total capacity of 23.65 GiB of which {free} is free. Including non-PyTorch memory, this process has 22.38 GiB memory in use. Of the allocated memory 12.00 GiB is allocated by PyTorch, and {unalloc} is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n"
        )).unwrap();
        p
    };
    let verdict = |p: &Path| {
        let o = memtide().args(["oom", "--json"]).arg(p).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["oom"].clone()
    };
    // 8.00 GiB ≤ 8.50 GiB unallocated + 1.25 GiB free, and no block held it: in pieces.
    let x = verdict(&write("frag.txt", "8.00 GiB", "1.25 GiB", "8.50 GiB"));
    assert_eq!(x["verdict"], "fragmentation", "{x}");
    assert!(
        x["advice"]
            .as_str()
            .unwrap()
            .contains("no setting is called fit"),
        "{x}"
    );
    assert!(
        x["fixes"].as_array().unwrap().is_empty(),
        "nothing replayed: {x}"
    );
    // 9.74 GiB against 8.50 + 1.25 = 9.75 GiB: decided by less than the printed rounding.
    let x = verdict(&write("edge.txt", "9.74 GiB", "1.25 GiB", "8.50 GiB"));
    assert_eq!(x["verdict"], "unknown", "{x}");
    // The driver reported 1.25 GiB free for a 20 MiB request, and no memory fraction is named
    // ("allowed"): the driver refused it itself; no cap, no shortfall.
    let x = verdict(&write("wddm.txt", "20.00 MiB", "1.25 GiB", "8.50 GiB"));
    assert_eq!(x["verdict"], "unknown", "{x}");
    assert!(
        x["reasoning"]
            .as_str()
            .unwrap()
            .contains("the driver refused the allocation itself"),
        "{x}"
    );
    assert_eq!(x["shortfall"], serde_json::Value::Null);
    // A message that cannot be read is said so, with the offset.
    let bad = dir.path().join("cut.txt");
    std::fs::write(&bad, "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 MiB. GPU 0 has a total capacity of 44.53 GiB of which 448.00 KiB is free.").unwrap();
    let o = memtide().arg("oom").arg(&bad).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("offset"), "{o:?}");
    assert!(
        err.contains("cannot read ") && !err.contains("--oom-message"),
        "memtide oom names its own argument: {err}"
    );
}
