//! Hostile inputs of issue 16 (items 2, 4, 5 and part of 9), each generated here: bounded
//! memory for shared long file names, declared lengths refused before allocation, a memory
//! budget that errors instead of aborting, checked byte sums and refused negative sizes.

use crate::support::pickle_writer;

use pickle_writer::{snapshot, P};
use std::io::Write as _;
use std::path::Path;

use crate::support::repo::memtide_unlimited as memtide;

/// Runs `memtide summary` on `path`; returns (exit code, stderr). A signal (abort) fails.
fn summary(path: &Path, budget: Option<&str>) -> (i32, String) {
    let mut c = memtide();
    if let Some(b) = budget {
        c.env("MEMTIDE_MAX_MEMORY", b);
    }
    let out = c.arg("summary").arg(path).output().expect("run");
    let code = out
        .status
        .code()
        .unwrap_or_else(|| panic!("killed by a signal: {:?}", out.status));
    (code, String::from_utf8_lossy(&out.stderr).into_owned())
}

fn write(dir: &tempfile::TempDir, name: &str, bytes: &[u8]) -> std::path::PathBuf {
    let p = dir.path().join(name);
    std::fs::File::create(&p)
        .and_then(|mut f| f.write_all(bytes))
        .expect("write");
    p
}

/// Item 2: one 1 MiB file name shared (memo) by 1,000 frames of distinct lines. Formatting
/// each frame as its own text would need 1 GB; under a 300 MB budget it must succeed.
#[test]
fn shared_long_file_name_stays_shared() {
    let file = format!("/long/{}/train.py", "d".repeat(1 << 20));
    let pk = snapshot(40, |p, i| {
        p.s("action").s("alloc").s("addr").i(4096 * (i as i32 + 1));
        p.s("size").i(512).s("frames").op(b']').op(b'(');
        for j in 0..25 {
            p.op(b'}').op(b'(').s("filename");
            if i == 0 && j == 0 {
                p.s(&file).put(0);
            } else {
                p.get(0);
            }
            p.s("line")
                .i((i * 25 + j) as i32)
                .s("name")
                .s("forward")
                .op(b'u');
        }
        p.op(b'e');
    });
    assert!(pk.len() < 4 << 20);
    let dir = tempfile::tempdir().expect("tmp");
    let path = write(&dir, "shared.pickle", &pk);
    let (code, err) = summary(&path, Some("300M"));
    assert_eq!(code, 0, "{err}");
}

/// Item 4: a BINUNICODE8 declaring 1 TiB in a 30-byte file errors before allocating.
#[test]
fn declared_huge_string_is_refused_with_its_offset() {
    let mut b = vec![0x80, 4, 0x8d];
    b.extend_from_slice(&(1u64 << 40).to_le_bytes());
    b.extend_from_slice(b"abc.");
    let dir = tempfile::tempdir().expect("tmp");
    let (code, err) = summary(&write(&dir, "s.pickle", &b), None);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("byte offset 2"), "{err}");
    assert!(err.contains("exceeds the limit of 64 MiB"), "{err}");
}

/// Item 4: a real string over 64 MiB (the bytes exist) is refused the same way.
#[test]
fn real_string_over_the_limit_is_refused() {
    let n = (64 << 20) + 1;
    let mut b = vec![0x80, 4, b'X'];
    b.extend_from_slice(&(n as u32).to_le_bytes());
    b.resize(b.len() + n, b'a');
    b.push(b'.');
    let dir = tempfile::tempdir().expect("tmp");
    let (code, err) = summary(&write(&dir, "s.pickle", &b), None);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("exceeds the limit"), "{err}");
}

/// Item 4: more trace entries than the memory budget holds end in a clear error, exit 2,
/// not `memory allocation of N bytes failed` (SIGABRT).
#[test]
fn memory_budget_is_an_error_not_an_abort() {
    let pk = snapshot(60_000, |p, i| {
        p.s("action")
            .s("alloc")
            .s("addr")
            .i(i as i32 * 16)
            .s("size")
            .i(16);
    });
    let dir = tempfile::tempdir().expect("tmp");
    let path = write(&dir, "many.pickle", &pk);
    let (code, err) = summary(&path, Some("8M"));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("exceeds the memory budget"), "{err}");
    assert!(err.contains("many.pickle"), "{err}");
    // The same file reads with room to spare.
    let (code, err) = summary(&path, Some("2G"));
    assert_eq!(code, 0, "{err}");
}

/// Item 4: Kineto memory events beyond the memory budget end in a clear error, exit 2.
#[test]
fn kineto_over_budget_is_an_error_not_an_abort() {
    let mut t = String::from(r#"{"traceEvents":["#);
    for i in 1..=150_000u64 {
        if i > 1 {
            t.push(',');
        }
        t.push_str(&format!(
            r#"{{"ph":"i","name":"[memory]","pid":1,"tid":1,"ts":{i},"args":{{"Total Reserved":0,"Total Allocated":{},"Bytes":512,"Device Id":0,"Device Type":1,"Addr":{}}}}}"#,
            i * 512,
            i * 4096
        ));
    }
    t.push_str("]}");
    let dir = tempfile::tempdir().expect("tmp");
    // 150,000 events need about 30 MiB (the times and totals in 4 bytes an event): 16 MiB
    // is well under.
    let (code, err) = summary(&write(&dir, "k.json", t.as_bytes()), Some("16M"));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("k.json"), "{err}");
    assert!(err.contains("exceeds the memory budget"), "{err}");
}

/// Item 5: 16 allocations of 2^62 B would wrap the total; refused, naming the event.
#[test]
fn overflowing_byte_sum_is_refused() {
    let mut t = String::from("{\"memtide\":1,\"device\":\"cuda:0\",\"clock\":\"us\"}\n");
    for i in 1..=16 {
        t.push_str(&format!(
            "{{\"t\":{i},\"op\":\"alloc\",\"id\":{i},\"size\":{},\"cat\":\"param\"}}\n",
            1u64 << 62
        ));
    }
    let dir = tempfile::tempdir().expect("tmp");
    let (code, err) = summary(&write(&dir, "o.jsonl", t.as_bytes()), None);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("pass 2^64"), "{err}");
    assert!(err.contains("event #3"), "{err}");
}

/// Item 5: a negative size in a snapshot pickle is an error at its offset.
#[test]
fn negative_pickle_size_is_refused() {
    let pk = snapshot(1, |p, _| {
        p.s("action").s("alloc").s("addr").i(4096).s("size").i(-5);
    });
    let dir = tempfile::tempdir().expect("tmp");
    let (code, err) = summary(&write(&dir, "n.pickle", &pk), None);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("byte offset"), "{err}");
    assert!(err.contains("'size' is negative (-5)"), "{err}");
}

/// Item 5: a negative size in a snapshot JSON is an error naming the entry.
#[test]
fn negative_json_size_is_refused() {
    let j = br#"{"segments":[],"device_traces":[[{"action":"alloc","addr":4096,"size":-5,"frames":[]}]]}"#;
    let dir = tempfile::tempdir().expect("tmp");
    let (code, err) = summary(&write(&dir, "n.json", j), None);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("device_traces[0][0].size is negative (-5)"),
        "{err}"
    );
}

/// Item 9: a size of 2^64 or more says so (not "must be an int, found int").
#[test]
fn integer_beyond_64_bits_is_named() {
    let pk = snapshot(1, |p, _| {
        p.s("action").s("alloc").s("addr").i(4096).s("size");
        p.op(0x8a).op(9);
        p.0.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 1]);
    });
    let dir = tempfile::tempdir().expect("tmp");
    let (code, err) = summary(&write(&dir, "b.pickle", &pk), None);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("integer too large for 64 bits"), "{err}");
    assert!(err.contains("byte offset"), "{err}");
}

/// `memtide summary PATH`, killed after 30 s (a bound that only a quadratic or endless read
/// reaches).
fn summary_within_30_s(path: &Path) -> std::process::Output {
    memtide()
        .arg("summary")
        .arg(path)
        .timeout(std::time::Duration::from_secs(30))
        .output()
        .expect("run")
}

/// A kept field that holds the list that holds it (the pickle's memo allows it): a bare
/// segment list of 40 segments whose `segment_pool_id` is `(0, the list)`. Copying the
/// value at every reference would need 40^8 steps; the kept value is bounded instead, and the
/// file reads at once.
#[test]
fn self_referential_kept_value_is_bounded() {
    let mut p = P::new();
    p.op(b']').put(0).op(b'(');
    for i in 0..40 {
        p.op(b'}').op(b'(');
        p.s("address").i((i + 1) << 22);
        p.s("total_size").i(2 << 20).s("allocated_size").i(0);
        p.s("active_size").i(0).s("stream").i(0);
        p.s("segment_type").s("large").s("blocks").op(b']');
        p.s("segment_pool_id").i(0).get(0).op(0x86);
        p.op(b'u');
    }
    p.op(b'e').op(b'.');
    let dir = tempfile::tempdir().expect("tmp");
    let path = write(&dir, "selfref.pickle", &p.0);
    let out = summary_within_30_s(&path);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A snapshot JSON whose device trace and pinned host trace are both `entries`.
fn same_on_device_and_host<S: AsRef<str>>(entries: &[S]) -> String {
    let list: Vec<&str> = entries.iter().map(AsRef::as_ref).collect();
    let list = list.join(",");
    format!(
        r#"{{"segments":[],"device_traces":[[{list}]],"host_segments":[],"host_traces":[{list}],"allocator_settings":{{}},"external_annotations":[]}}"#
    )
}

/// Segments mapped again and again, each shifted by a byte (a fuzz case of the 1,000,000-case
/// run: 34,908 such `segment_alloc` entries of pinned host memory read in 10.5 s, 9,305 of a
/// device's 1.0 s): every mapping walked every piece mapped inside it. Now what a mapping
/// leaves unmapped is found in the merged union: 20,000 of each read at once (quadratic, this
/// took over a minute), and the bytes mapped again are counted exactly (the sum of the
/// overlaps, computed here).
#[test]
fn segments_mapped_again_shifted_by_a_byte_read_at_once() {
    let n: u64 = 20_000;
    let size: u64 = 2 << 20;
    let base: u64 = 0x7f00_0000_0000;
    let entry = |i: u64| {
        format!(
            r#"{{"action":"segment_alloc","addr":{},"size":{size},"stream":0,"time_us":{}}}"#,
            base + i,
            1000 + i
        )
    };
    let entries: Vec<String> = (0..n).map(entry).collect();
    let snap = same_on_device_and_host(&entries);
    let dir = tempfile::tempdir().expect("tmp");
    let path = write(&dir, "shifted.json", snap.as_bytes());
    let out = summary_within_30_s(&path);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.code().is_some(), "killed by the time limit");
    // Mapping i overlaps the union of the ones before it on size − 1 bytes (i ≥ 1).
    let again = (n - 1) * (size - 1);
    assert!(
        text.contains(&format!("{again} B were mapped again while already mapped")),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A segment of size 0 (`segment_alloc`, `segment_map`, their frees, on a device and on the
/// host): nothing is mapped, the file reads, and nothing panics. (A proptest case of the
/// snapshot reader found the merged range set asked for the gaps of an empty range.)
#[test]
fn a_segment_of_size_zero_maps_nothing() {
    let entries = [
        r#"{"action":"segment_alloc","addr":4194304,"size":0,"stream":0,"time_us":1}"#,
        r#"{"action":"segment_map","addr":4194304,"size":0,"stream":0,"time_us":2}"#,
        r#"{"action":"segment_alloc","addr":8388608,"size":2097152,"stream":0,"time_us":3}"#,
        r#"{"action":"segment_map","addr":8388608,"size":0,"stream":0,"time_us":4}"#,
        r#"{"action":"segment_unmap","addr":8388608,"size":0,"stream":0,"time_us":5}"#,
        r#"{"action":"segment_free","addr":4194304,"size":0,"stream":0,"time_us":6}"#,
    ];
    let snap = same_on_device_and_host(&entries);
    let dir = tempfile::tempdir().expect("tmp");
    let path = write(&dir, "empty-segments.json", snap.as_bytes());
    let out = summary_within_30_s(&path);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("reserved peak    2.000 MiB (2,097,152 B)"),
        "the one real segment is reserved: {text}"
    );
}
