//! The mutation engine shared by the `fuzz_readers` example and the `fuzz_slice` test: seeds
//! from the repository's fixtures, deterministic mutants, every reader run in-process on a
//! worker thread with panics caught and a per-case time limit.
#![allow(dead_code)]

#[path = "nsys_case.rs"]
mod nsys_case;

use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use memtide_core::formats::{
    detect, Format, FormatError, Input, JsonlDecoder, JsonlOptions, LoadOptions, Progress,
};
use memtide_core::trace::Trace;
use std::cell::RefCell;
use std::io::{Cursor, Read, Write};
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// The readers, by the names `--reader` takes.
pub const READERS: [&str; 9] = [
    "pickle",
    "snapshot",
    "kineto",
    "jsonl",
    "timeline",
    "theme",
    "rules",
    "device_log",
    "nsys",
];

/// The `nsys` reader's index in [`READERS`]: Nsight Systems exports ([`nsys_case`]).
pub const NSYS: usize = 8;

/// The largest case fed to a reader (a mutant is cut to it).
pub const MAX_CASE: usize = 4 << 20;

/// Seeds whose (decompressed) content is larger are left out: they would slow every case.
pub const MAX_SEED: usize = 256 << 10;

/// Rules TOML seeds (the repository holds no rules file of its own).
const RULES_SEEDS: [&str; 3] = [
    "[[rule]]\nmatch = \"optimizer.py\"\nband = \"persistent\"\n[[rule]]\nmatch = \"attn\"\ncategory = \"activation\"\n",
    "[[rule]]\nmatch = \"functional.py\"\nband = \"workspace\"\n",
    "# rules\n[[rule]]\nmatch = \"x\"\nband = \"external\"\n\n[[rule]]\nmatch = \"torch/nn\"\ncategory = \"parameter\"\n",
];

/// Device-log seeds (`--device-log`: nvidia-smi's CSV, with and without units, and
/// memtide's own columns); the repository's tests build theirs at run time.
const DEVICE_LOG_SEEDS: [&str; 3] = [
    "timestamp, index, memory.used [MiB], memory.total [MiB]\n2024/05/01 12:00:00.000, 0, 512 MiB, 81559 MiB\n2024/05/01 12:00:00.100, 0, 1536 MiB, 81559 MiB\n2024/05/01 12:00:00.200, 1, 300 MiB, 81559 MiB\n",
    "index, memory.total [MiB], memory.used [MiB], timestamp\n0, 81559, 512, 2024/05/01 12:00:00.000\n0, 81559, 2048, 2024/05/01 12:00:01.500\n",
    "time_us,device,used_bytes,total_bytes\n0,0,1048576,85520809984\n2000,0,2097152,85520809984\n4000,1,4096,\n",
];

/// What one reader made of one case.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ok,
    Err,
    Panic(String),
    Hang,
}

/// Per-reader seed pools (decompressed) plus every seed, for splicing across formats.
pub struct Seeds {
    pub per_reader: Vec<Vec<Vec<u8>>>,
    pub all: Vec<Vec<u8>>,
}

/// Which readers a seed feeds, from its content (or its name, for TOML).
fn readers_for(path: &Path, bytes: &[u8]) -> Vec<usize> {
    if path.extension().is_some_and(|e| e == "toml") {
        return vec![5, 6];
    }
    match detect(bytes) {
        Some(Format::SnapshotPickle) => vec![0, 1],
        Some(Format::SnapshotJson) => vec![1],
        Some(Format::Kineto) => vec![2],
        Some(Format::Jsonl) => vec![3],
        Some(Format::MemoryTimeline) => vec![4, 2],
        None => Vec::new(),
    }
}

fn gunzip(bytes: &[u8], cap: usize) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    MultiGzDecoder::new(bytes)
        .take(cap as u64 + 1)
        .read_to_end(&mut out)
        .ok()?;
    (out.len() <= cap).then_some(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else if p.is_file() {
            out.push(p);
        }
    }
}

/// Loads the seeds under `root` (the repository): `tests/fixtures/**`, `sample-traces/*`,
/// `tests/data/**` and `themes/*`, at most `max_seed` bytes each once decompressed.
pub fn load_seeds(root: &Path, max_seed: usize) -> Seeds {
    let mut files = Vec::new();
    for d in ["tests/fixtures", "sample-traces", "tests/data", "themes"] {
        walk(&root.join(d), &mut files);
    }
    let mut per_reader = vec![Vec::new(); READERS.len()];
    let mut all = Vec::new();
    for f in files {
        let Ok(meta) = std::fs::metadata(&f) else {
            continue;
        };
        if meta.len() > max_seed as u64 {
            continue;
        }
        let Ok(raw) = std::fs::read(&f) else {
            continue;
        };
        let bytes = if raw.starts_with(&[0x1f, 0x8b]) {
            match gunzip(&raw, max_seed) {
                Some(b) => b,
                None => continue,
            }
        } else {
            raw
        };
        for r in readers_for(&f, &bytes) {
            per_reader[r].push(bytes.clone());
        }
        all.push(bytes);
    }
    for s in RULES_SEEDS {
        per_reader[6].push(s.as_bytes().to_vec());
        all.push(s.as_bytes().to_vec());
    }
    for s in DEVICE_LOG_SEEDS {
        per_reader[7].push(s.as_bytes().to_vec());
        all.push(s.as_bytes().to_vec());
    }
    // Nsight Systems exports are built here (the repository's tests write theirs at run
    // time); kept out of `all`, so the other readers' cases stay as they were.
    per_reader[NSYS] = nsys_case::seeds();
    Seeds { per_reader, all }
}

/// SplitMix64: small, fast and reproducible.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }
    pub fn chance(&mut self, one_in: u64) -> bool {
        self.next().is_multiple_of(one_in)
    }
}

/// A 64-bit hash of bytes (FNV-1a), for knobs derived from a case alone.
pub fn hash(bytes: &[u8]) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
    }
    h
}

const INTERESTING: [u64; 10] = [
    0,
    u64::MAX, // -1
    1 << 31,
    (1 << 31) - 1,
    1 << 32,
    1 << 63,
    u64::MAX, // 2^64 - 1
    0x7fff_ffff_ffff_ffff,
    0xffff,
    0x100,
];

const INTERESTING_TEXT: [&str; 14] = [
    "0",
    "-1",
    "2147483648",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775809",
    "1e400",
    "-1e400",
    "1.5",
    "null",
    "99999999999999999999999999999",
];

const TOKENS: [&[u8]; 16] = [
    b"[",
    b"]",
    b"{",
    b"}",
    b"\"",
    b",",
    b":",
    b"\n",
    b"\\u0000",
    b"\\ud800",
    b"\xef\xbb\xbf",
    b"\x1b]52;c;",
    b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
    b"{\"a\":{\"a\":{\"a\":{\"a\":{\"a\":",
    b"\xff\xfe",
    b"\0",
];

/// Pickle opcodes followed by a length, index or integer: (opcode, width in bytes).
const PICKLE_ARGS: [(u8, usize); 18] = [
    (b'X', 4), // BINUNICODE
    (0x8c, 1), // SHORT_BINUNICODE
    (0x8d, 8), // BINUNICODE8
    (b'B', 4), // BINBYTES
    (b'C', 1), // SHORT_BINBYTES
    (0x8e, 8), // BINBYTES8
    (b'J', 4), // BININT
    (b'K', 1), // BININT1
    (b'M', 2), // BININT2
    (0x8a, 1), // LONG1
    (0x8b, 4), // LONG4
    (b'h', 1), // BINGET
    (b'j', 4), // LONG_BINGET
    (b'q', 1), // BINPUT
    (b'r', 4), // LONG_BINPUT
    (0x95, 8), // FRAME
    (0x80, 1), // PROTO
    (b'G', 8), // BINFLOAT
];

fn put_int(b: &mut [u8], at: usize, width: usize, v: u64) {
    let le = v.to_le_bytes();
    for k in 0..width {
        if let Some(x) = b.get_mut(at + k) {
            *x = le[k.min(7)];
        }
    }
}

/// Replaces a run of digits near a random position with an interesting number.
fn mutate_number(b: &mut Vec<u8>, rng: &mut Rng) -> bool {
    if b.is_empty() {
        return false;
    }
    let start = rng.below(b.len());
    let Some(off) = b[start..].iter().position(u8::is_ascii_digit) else {
        return false;
    };
    let mut s = start + off;
    if s > 0 && b[s - 1] == b'-' {
        s -= 1;
    }
    let mut e = start + off;
    while e < b.len() && (b[e].is_ascii_digit() || matches!(b[e], b'.' | b'e' | b'E' | b'+')) {
        e += 1;
    }
    let v = INTERESTING_TEXT[rng.below(INTERESTING_TEXT.len())].as_bytes();
    b.splice(s..e, v.iter().copied());
    true
}

/// Writes an interesting integer after a pickle opcode that takes a length or an index.
fn mutate_pickle_arg(b: &mut [u8], rng: &mut Rng) -> bool {
    if b.len() < 2 {
        return false;
    }
    let start = rng.below(b.len());
    for k in 0..b.len() {
        let i = (start + k) % b.len();
        if let Some(&(_, w)) = PICKLE_ARGS.iter().find(|(op, _)| *op == b[i]) {
            let v = if rng.chance(4) {
                rng.next() >> rng.below(64)
            } else {
                INTERESTING[rng.below(INTERESTING.len())]
            };
            put_int(b, i + 1, w, v);
            return true;
        }
    }
    false
}

/// How many copies fit in what is left of a case: at most `want`.
fn copies_that_fit(len: usize, unit: usize, want: usize) -> usize {
    want.min(MAX_CASE.saturating_sub(len) / unit.max(1))
}

/// The end of the JSON value starting at `at` (a string, an object or an array, or a scalar
/// up to the next `,`, `]` or `}`), by bracket depth outside strings.
fn json_value_end(b: &[u8], at: usize) -> Option<usize> {
    let (mut depth, mut in_str, mut esc) = (0usize, false, false);
    for (i, &c) in b.iter().enumerate().skip(at) {
        if in_str {
            match (esc, c) {
                (true, _) => esc = false,
                (false, b'\\') => esc = true,
                (false, b'"') => {
                    in_str = false;
                    if depth == 0 {
                        return Some(i + 1);
                    }
                }
                _ => {}
            }
            continue;
        }
        match c {
            b'"' => in_str = true,
            b'[' | b'{' => depth += 1,
            b']' | b'}' if depth == 0 => return Some(i),
            b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            b',' if depth == 0 => return Some(i),
            _ => {}
        }
    }
    None
}

/// Deep stacks: the first element of a `stack` or `frames` array (JSON), or a memo fetch
/// (pickle: how a snapshot shares one frame), repeated up to 200,000 times in place.
fn deepen_stack(b: &mut Vec<u8>, rng: &mut Rng) -> bool {
    let want = if rng.chance(2) {
        150_000
    } else {
        1 + rng.below(200_000)
    };
    for key in [&b"\"stack\":["[..], b"\"frames\":[", b"\"frames\": ["] {
        let Some(k) = memchr::memmem::find(b, key) else {
            continue;
        };
        let start = k + key.len();
        let Some(end) = json_value_end(b, start).filter(|&e| e > start) else {
            continue;
        };
        let mut elem = vec![b','];
        elem.extend_from_slice(&b[start..end]);
        let n = copies_that_fit(b.len(), elem.len(), want);
        let rep: Vec<u8> = elem.iter().copied().cycle().take(elem.len() * n).collect();
        b.splice(end..end, rep);
        return true;
    }
    // Pickle: a BINGET (`h` + index) repeated where it stands.
    let from = rng.below(b.len().max(1));
    let Some(i) = (from..b.len())
        .chain(0..from)
        .find(|&i| b[i] == b'h' && i + 1 < b.len())
    else {
        return false;
    };
    let get = [b'h', b[i + 1]];
    let n = copies_that_fit(b.len(), 2, want);
    let rep: Vec<u8> = get.iter().copied().cycle().take(2 * n).collect();
    b.splice(i..i, rep);
    true
}

/// A shared long string: a pickle string that is memoized (then fetched wherever the file
/// shares it) made 64 KiB to 1 MiB long; in text, a string value made as long.
fn share_long_string(b: &mut Vec<u8>, rng: &mut Rng) -> bool {
    let len = (64 << 10) << rng.below(5);
    let long: Vec<u8> =
        std::iter::repeat_n(b'n', len.min(MAX_CASE.saturating_sub(b.len() + 16))).collect();
    if b.first() == Some(&0x80) {
        // SHORT_BINUNICODE n bytes, then MEMOIZE or BINPUT.
        let from = rng.below(b.len().max(1));
        let found = (from..b.len()).chain(0..from).find(|&i| {
            b[i] == 0x8c
                && i + 2 + usize::from(*b.get(i + 1).unwrap_or(&0)) < b.len()
                && matches!(b[i + 2 + usize::from(b[i + 1])], 0x94 | b'q')
        });
        let Some(i) = found else {
            return false;
        };
        let end = i + 2 + usize::from(b[i + 1]);
        let mut op = vec![b'X'];
        op.extend_from_slice(&(long.len() as u32).to_le_bytes());
        op.extend_from_slice(&long);
        b.splice(i..end, op);
        return true;
    }
    let from = rng.below(b.len().max(1));
    let Some(q) = (from..b.len()).chain(0..from).find(|&i| b[i] == b'"') else {
        return false;
    };
    let Some(end) = json_value_end(b, q) else {
        return false;
    };
    let mut s = vec![b'"'];
    s.extend_from_slice(&long);
    s.push(b'"');
    b.splice(q..end, s);
    true
}

/// Many devices: every device number in the text (`"Device Id": N`, `"device": "cuda:N"`,
/// `"device": N`) rewritten to one of up to 10,000 distinct values.
fn many_devices(b: &mut Vec<u8>, rng: &mut Rng) -> bool {
    let spread = 1 + rng.below(10_000);
    let mut changed = false;
    for key in [
        &b"\"Device Id\": "[..],
        b"\"device\":\"cuda:",
        b"\"device\": \"cuda:",
        b"\"device\": ",
    ] {
        let mut at = 0;
        while let Some(k) = memchr::memmem::find(&b[at..], key) {
            let s = at + k + key.len();
            let e = s + b[s..].iter().take_while(|c| c.is_ascii_digit()).count();
            if e == s {
                at = s;
                continue;
            }
            let v = rng.below(spread).to_string();
            b.splice(s..e, v.bytes());
            at = s + v.len();
            changed = true;
            if b.len() > MAX_CASE {
                return changed;
            }
        }
    }
    changed
}

/// Deep nesting: up to 200,000 nested brackets (text), or nested lists (pickle: EMPTY_LIST
/// then APPEND, so each list holds the next), inserted anywhere.
fn deep_nesting(b: &mut Vec<u8>, rng: &mut Rng) -> bool {
    let n = copies_that_fit(b.len(), 2, 1 + rng.below(200_000));
    let at = rng.below(b.len() + 1);
    let nest: Vec<u8> = if b.first() == Some(&0x80) {
        std::iter::repeat_n(b']', n)
            .chain(std::iter::repeat_n(b'a', n - n.min(1)))
            .collect()
    } else if rng.chance(2) {
        std::iter::repeat_n(b'[', n)
            .chain(std::iter::repeat_n(b']', n))
            .collect()
    } else {
        let open = b"{\"a\":";
        let k = n / open.len().max(1);
        let mut v: Vec<u8> = open.iter().copied().cycle().take(open.len() * k).collect();
        v.push(b'1');
        v.extend(std::iter::repeat_n(b'}', k));
        v
    };
    b.splice(at..at, nest);
    true
}

/// Many siblings (issue 47): one element of an array or JSONL line, an object, repeated up
/// to 100,000 times in place, copy k with k added to its line numbers, ids and addresses
/// (`"line": N`, `"id": N`, `"addr": N`, `file.py:N`): distinct allocations of distinct
/// lines under one parent, a wide stack tree; after `share_long_string`, siblings whose
/// texts share a long head. Text only.
pub fn many_siblings(b: &mut Vec<u8>, rng: &mut Rng) -> bool {
    if b.first() == Some(&0x80) || b.is_empty() {
        return false;
    }
    let from = rng.below(b.len());
    let Some(start) = (from..b.len())
        .chain(1..from)
        .find(|&i| i > 0 && b[i] == b'{' && matches!(b[i - 1], b'[' | b',' | b'\n' | b' '))
    else {
        return false;
    };
    let Some(end) = json_value_end(b, start).filter(|&e| e > start) else {
        return false;
    };
    let elem = b[start..end].to_vec();
    let sep: &[u8] = if b[start - 1] == b'\n' { b"\n" } else { b"," };
    let n = copies_that_fit(b.len(), elem.len() + sep.len() + 8, 1 + rng.below(100_000));
    let mut rep = Vec::with_capacity(n * (elem.len() + sep.len() + 8));
    for k in 1..=n as u64 {
        rep.extend_from_slice(sep);
        let mut i = 0;
        while i < elem.len() {
            let run = elem[i..].iter().take_while(|c| c.is_ascii_digit()).count();
            let keyed = [&b"\"line\":"[..], b"\"id\":", b"\"addr\":", b".py:"]
                .iter()
                .any(|key| elem[..i].trim_ascii_end().ends_with(key));
            if run > 0 && keyed {
                let v = std::str::from_utf8(&elem[i..i + run])
                    .ok()
                    .and_then(|t| t.parse::<u64>().ok())
                    .unwrap_or(0);
                rep.extend_from_slice(v.saturating_add(k).to_string().as_bytes());
                i += run;
            } else {
                rep.push(elem[i]);
                i += 1;
            }
        }
    }
    b.splice(end..end, rep);
    true
}

/// A structure-aware mutation (issue classes found by hand): deep stacks, shared long
/// strings, many devices, deep nesting, many siblings.
fn mutate_structure(b: &mut Vec<u8>, rng: &mut Rng) -> bool {
    match rng.below(5) {
        0 => deepen_stack(b, rng),
        1 => share_long_string(b, rng),
        2 => many_devices(b, rng),
        3 => many_siblings(b, rng),
        _ => deep_nesting(b, rng),
    }
}

fn range(rng: &mut Rng, len: usize) -> (usize, usize) {
    let a = rng.below(len + 1);
    let max = (len - a).min(if rng.chance(4) { 4096 } else { 64 });
    (a, a + rng.below(max + 1))
}

/// One mutation of `b`; `pool` supplies splice material.
fn mutate_once(b: &mut Vec<u8>, pool: &[Vec<u8>], all: &[Vec<u8>], rng: &mut Rng) {
    let len = b.len();
    if rng.chance(32) && mutate_structure(b, rng) {
        return;
    }
    match rng.below(14) {
        0 | 1 if len > 0 => {
            let i = rng.below(len);
            b[i] ^= 1 << rng.below(8);
        }
        2 if len > 0 => {
            let i = rng.below(len);
            b[i] = rng.next() as u8;
        }
        3 => {
            let i = rng.below(len + 1);
            b.insert(i, rng.next() as u8);
        }
        4 if len > 0 => {
            let (s, e) = range(rng, len);
            b.drain(s..e);
        }
        5 if len > 0 => {
            // Duplicate a chunk somewhere else.
            let (s, e) = range(rng, len);
            let chunk = b[s..e].to_vec();
            let at = rng.below(b.len() + 1);
            b.splice(at..at, chunk);
        }
        6 => {
            // Splice: a piece of another seed replaces a piece of this one.
            let src = if rng.chance(4) { all } else { pool };
            if let Some(o) = src.get(rng.below(src.len())) {
                let (s, e) = range(rng, o.len());
                let (ds, de) = range(rng, len);
                b.splice(ds..de, o[s..e].iter().copied());
            }
        }
        7 => {
            if !mutate_number(b, rng) {
                let i = rng.below(len + 1);
                b.splice(i..i, INTERESTING_TEXT[0].bytes());
            }
        }
        8 => {
            if !mutate_pickle_arg(b, rng) && len >= 8 {
                let i = rng.below(len - 7);
                let v = INTERESTING[rng.below(INTERESTING.len())];
                put_int(b, i, 1 << rng.below(4), v);
            }
        }
        9 => {
            let cut = rng.below(len + 1);
            b.truncate(cut);
        }
        10 if len > 0 => {
            // Repetition: a chunk repeated many times in place.
            let (s, e) = range(rng, len);
            let chunk = b[s..e].to_vec();
            let most = if rng.chance(8) { 4096 } else { 32 };
            let times = 1 + rng.below(most);
            let mut rep = Vec::with_capacity(chunk.len() * times);
            for _ in 0..times {
                if rep.len() + chunk.len() > MAX_CASE {
                    break;
                }
                rep.extend_from_slice(&chunk);
            }
            b.splice(e..e, rep);
        }
        11 => {
            let t = TOKENS[rng.below(TOKENS.len())];
            let i = rng.below(len + 1);
            b.splice(i..i, t.iter().copied());
        }
        12 if len > 0 => {
            // Swap two bytes.
            let (i, j) = (rng.below(len), rng.below(len));
            b.swap(i, j);
        }
        _ => {
            if len > 0 {
                let i = rng.below(len);
                b[i] = b[i].wrapping_add(rng.next() as u8 % 5).wrapping_sub(2);
            }
        }
    }
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::fast());
    // Writing into a Vec cannot fail.
    if enc.write_all(bytes).is_err() {
        return bytes.to_vec();
    }
    enc.finish().unwrap_or_else(|_| bytes.to_vec())
}

/// Case `index` of `reader` for run seed `seed`: the same arguments always give the same bytes.
pub fn make_case(seeds: &Seeds, reader: usize, seed: u64, index: u64) -> Vec<u8> {
    let mut rng = Rng::new(
        seed ^ (reader as u64).wrapping_mul(0xa24b_aed4_963e_e407)
            ^ index.wrapping_mul(0x9fb2_1c65_1e98_df25),
    );
    rng.next();
    let pool = &seeds.per_reader[reader];
    let base = if pool.is_empty() || rng.chance(64) {
        &seeds.all
    } else {
        pool
    };
    let mut b = base.get(rng.below(base.len())).cloned().unwrap_or_default();
    if reader == NSYS {
        return nsys_case::make(b, pool, &seeds.all, &mut rng);
    }
    let n = match rng.below(16) {
        0..=7 => 1,
        8..=11 => 2,
        12 | 13 => 4,
        14 => 8,
        _ => 32,
    };
    for _ in 0..n {
        mutate_once(&mut b, pool, &seeds.all, &mut rng);
        if b.len() > MAX_CASE {
            b.truncate(MAX_CASE);
        }
    }
    let text = reader >= 5;
    if !text && rng.chance(16) {
        b = gzip(&b);
        if rng.chance(3) {
            // A damaged container: flipped bytes (CRC, header, deflate) or a cut trailer.
            mutate_once(&mut b, &[], &[], &mut rng);
        }
        b.truncate(MAX_CASE);
    }
    b
}

/// The in-memory counterpart of `formats::open_input` (the same `from_reader`).
pub fn input(bytes: &[u8]) -> Result<Input, FormatError> {
    memtide_core::formats::from_reader(Cursor::new(bytes.to_vec()), bytes.len() as u64)
}

/// Index and query every trace a reader produced (what a command would do next).
fn exercise(traces: &[Trace], summary: bool) {
    for t in traces {
        // What loading refuses (a live sum past 2^64 − 1 B) no analysis ever sees.
        if t.check_byte_sums().is_err() {
            continue;
        }
        let ix = memtide_core::index::Index::build(t);
        if !ix.is_empty() {
            let _ = memtide_core::analysis::global_peak(t, &ix);
            // Small files, and files of few events however large (deep stacks, long
            // strings): the whole summary, as `summary --json` writes it.
            if !summary && t.len() > 4096 {
                // The explorer's stack tree of the peak's live set, whatever its width.
                if let Some(p) = memtide_core::analysis::global_peak(t, &ix) {
                    let view = memtide_core::analysis::FrameView::new(t, &Default::default());
                    let live = p.live(t, &ix);
                    let _ = memtide_core::analysis::stack_tree(
                        t,
                        &live,
                        &view,
                        memtide_core::analysis::TreeFrames::User,
                    );
                }
            }
            if summary || t.len() <= 4096 {
                let s = memtide_core::analysis::Summary::build(t, &ix);
                let devices = [t.device.to_string()];
                let doc = memtide_core::analysis::document_json(
                    &s,
                    std::slice::from_ref(&s),
                    &devices,
                    false,
                );
                let _ = serde_json::to_vec(&doc);
            }
        }
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs reader `reader` on `bytes`: `true` for a result, `false` for an error.
pub fn run_reader(reader: usize, bytes: &[u8]) -> bool {
    let opts = LoadOptions::default();
    let progress = Progress::new();
    let knob = hash(bytes);
    match reader {
        0 => input(bytes)
            .and_then(|i| {
                memtide_core::formats::unpickle(i.into_reader(), &mut memtide_core::formats::NoHook)
            })
            .is_ok(),
        1 => {
            let Ok(i) = input(bytes) else {
                return false;
            };
            let format = match detect(&i.head) {
                Some(f @ (Format::SnapshotPickle | Format::SnapshotJson)) => f,
                _ if i.head.first() == Some(&0x80) => Format::SnapshotPickle,
                _ => Format::SnapshotJson,
            };
            match memtide_core::formats::snapshot::read("fuzz", i, format, &opts, &progress) {
                Ok(memtide_core::formats::snapshot::Snapshot {
                    histories,
                    mut traces,
                    ..
                }) => {
                    // The allocator model must take any decoded file without panicking.
                    for h in histories {
                        let m = memtide_core::allocator::Model::build(h);
                        let _ = m.after(m.len() / 2).totals();
                        let _ = memtide_core::allocator::allocator_at_end(&m.history().segments);
                    }
                    memtide_core::open::infer_missing(&mut traces, &Default::default());
                    exercise(&traces, bytes.len() < 64 << 10);
                    true
                }
                Err(_) => false,
            }
        }
        2 | 4 => {
            let format = if reader == 2 {
                Format::Kineto
            } else {
                Format::MemoryTimeline
            };
            let read = input(bytes).and_then(|i| {
                memtide_core::formats::read_kineto("fuzz", i, format, &opts, &progress)
            });
            match read {
                Ok(mut traces) => {
                    memtide_core::open::infer_missing(&mut traces, &Default::default());
                    exercise(&traces, bytes.len() < 64 << 10);
                    true
                }
                Err(_) => false,
            }
        }
        3 => {
            let Ok(i) = input(bytes) else {
                return false;
            };
            let mut all = Vec::new();
            if i.into_reader().read_to_end(&mut all).is_err() {
                return false;
            }
            let mut t = Trace::new("cuda:0", "fuzz", "jsonl");
            let mut d = JsonlDecoder::new(JsonlOptions {
                lenient: knob & 1 == 1,
                has_external_spans: match (knob >> 1) % 3 {
                    0 => None,
                    1 => Some(false),
                    _ => Some(true),
                },
            });
            // Fed in up to three pieces split anywhere, as a follower sees a growing file.
            let a = ((knob >> 8) as usize) % (all.len() + 1);
            let b = a + ((knob >> 32) as usize) % (all.len() - a + 1);
            let fed = d
                .feed(&mut t, &all[..a])
                .and_then(|_| d.feed(&mut t, &all[a..b]))
                .and_then(|_| d.feed(&mut t, &all[b..]));
            let done = if knob & 0x10 == 0 {
                fed.and_then(|_| d.finish(&mut t))
            } else {
                fed.and_then(|_| d.flush(&mut t))
            };
            exercise(std::slice::from_ref(&t), bytes.len() < 64 << 10);
            done.is_ok()
        }
        5 => {
            let base = memtide::tui::theme::Theme::default();
            let base = (knob & 1 == 1).then_some(&base);
            memtide::tui::theme::Theme::from_toml(&text(bytes), base).is_ok()
        }
        6 => memtide_core::analysis::Rules::parse(&text(bytes)).is_ok(),
        7 => memtide_core::formats::parse_device_log("fuzz", &text(bytes), knob & 1 == 1).is_ok(),
        NSYS => nsys_case::run(bytes, knob),
        _ => false,
    }
}

thread_local! {
    static LAST_PANIC: RefCell<String> = const { RefCell::new(String::new()) };
}

/// Silences the panic hook on the case worker threads, keeping each panic's message and
/// location for the report; other threads keep the previous hook.
pub fn quiet_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let prev = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() != Some(WORKER) {
                prev(info);
                return;
            }
            let msg = if let Some(s) = info.payload().downcast_ref::<&str>() {
                (*s).to_string()
            } else if let Some(s) = info.payload().downcast_ref::<String>() {
                s.clone()
            } else {
                "panic".to_string()
            };
            let at = info
                .location()
                .map(|l| format!("{}:{}", l.file(), l.line()))
                .unwrap_or_default();
            LAST_PANIC.with(|p| *p.borrow_mut() = format!("{msg} at {at}"));
        }));
    });
}

/// The name of the thread cases run on.
const WORKER: &str = "fuzz-case";

/// Runs one case with panics caught.
pub fn run_caught(reader: usize, bytes: &[u8]) -> Outcome {
    match panic::catch_unwind(AssertUnwindSafe(|| run_reader(reader, bytes))) {
        Ok(true) => Outcome::Ok,
        Ok(false) => Outcome::Err,
        Err(_) => Outcome::Panic(LAST_PANIC.with(|p| p.borrow().clone())),
    }
}

type Job = (usize, Vec<u8>);

/// A worker thread that runs cases; a case that outlives the time limit abandons it.
pub struct Worker {
    tx: mpsc::Sender<Job>,
    rx: mpsc::Receiver<Outcome>,
}

impl Worker {
    pub fn spawn() -> Worker {
        let (tx, jobs) = mpsc::channel::<Job>();
        let (done, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name(WORKER.into())
            .stack_size(64 << 20)
            .spawn(move || {
                while let Ok((r, b)) = jobs.recv() {
                    let out = run_caught(r, &b);
                    drop(b);
                    if done.send(out).is_err() {
                        break;
                    }
                }
            })
            .expect("spawn the fuzz worker thread");
        Worker { tx, rx }
    }

    /// Runs a case; `Hang` when it takes longer than `limit` (the worker is then replaced).
    pub fn run(&mut self, reader: usize, bytes: Vec<u8>, limit: Duration) -> Outcome {
        if self.tx.send((reader, bytes)).is_err() {
            *self = Worker::spawn();
            return Outcome::Panic("fuzz worker thread died".into());
        }
        match self.rx.recv_timeout(limit) {
            Ok(o) => o,
            Err(_) => {
                *self = Worker::spawn();
                Outcome::Hang
            }
        }
    }
}

/// Counts for one reader.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub cases: u64,
    pub ok: u64,
    pub err: u64,
    pub panics: u64,
    pub hangs: u64,
    pub bytes: u64,
    pub time: Duration,
    /// The slowest case: its time and index.
    pub slowest: (Duration, u64),
}

/// A failing case: reader, case index, outcome and where its reproducer went.
#[derive(Clone, Debug)]
pub struct Failure {
    pub reader: usize,
    pub index: u64,
    pub outcome: Outcome,
    pub file: Option<PathBuf>,
}

/// Called with the stats so far and the time elapsed.
pub type ProgressFn = Box<dyn FnMut(&[Stats], Duration)>;

/// What a run is told to do.
pub struct Config {
    pub readers: Vec<usize>,
    /// Cases per reader, indexed like [`READERS`].
    pub cases: Vec<u64>,
    pub first: u64,
    pub seed: u64,
    pub limit: Duration,
    pub out: Option<PathBuf>,
    /// Stop after this many hangs (each abandoned worker may keep a core busy).
    pub max_hangs: u64,
    /// Stop (and report) at this time even if cases remain.
    pub deadline: Option<Instant>,
    /// Called every few seconds with the stats so far.
    pub progress: Option<ProgressFn>,
}

/// Runs `cfg.cases[r]` cases of each chosen reader `r`, interleaved; returns per-reader stats (indexed
/// like [`READERS`]) and the failures.
pub fn run(seeds: &Seeds, mut cfg: Config) -> (Vec<Stats>, Vec<Failure>) {
    quiet_panics();
    let mut stats = vec![Stats::default(); READERS.len()];
    let mut failures = Vec::new();
    let mut worker = Worker::spawn();
    let start = Instant::now();
    let mut last_report = Instant::now();
    let mut hangs = 0u64;
    let most = cfg
        .readers
        .iter()
        .map(|&r| cfg.cases.get(r).copied().unwrap_or(0))
        .max()
        .unwrap_or(0);
    'outer: for i in cfg.first..cfg.first + most {
        if cfg.deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        for &r in &cfg.readers {
            if i - cfg.first >= cfg.cases.get(r).copied().unwrap_or(0) {
                continue;
            }
            let case = make_case(seeds, r, cfg.seed, i);
            let len = case.len() as u64;
            if let Some(d) = &cfg.out {
                // A case that aborts the process (a stack overflow) cannot be caught: this
                // names it for `--replay` (written before the case, removed after the run).
                let _ = std::fs::create_dir_all(d).and_then(|_| {
                    std::fs::write(d.join("in-flight"), format!("{} {i}\n", READERS[r]))
                });
            }
            let t0 = Instant::now();
            let out = worker.run(r, case, cfg.limit);
            let s = &mut stats[r];
            let took = t0.elapsed();
            s.time += took;
            if took > s.slowest.0 {
                s.slowest = (took, i);
            }
            s.cases += 1;
            s.bytes += len;
            match &out {
                Outcome::Ok => s.ok += 1,
                Outcome::Err => s.err += 1,
                Outcome::Panic(_) => s.panics += 1,
                Outcome::Hang => s.hangs += 1,
            }
            if matches!(out, Outcome::Panic(_) | Outcome::Hang) {
                let file = cfg.out.as_ref().and_then(|d| {
                    let p = d.join(format!("{}-case{i}.bin", READERS[r]));
                    std::fs::create_dir_all(d).ok()?;
                    std::fs::write(&p, make_case(seeds, r, cfg.seed, i)).ok()?;
                    Some(p)
                });
                if out == Outcome::Hang {
                    hangs += 1;
                }
                failures.push(Failure {
                    reader: r,
                    index: i,
                    outcome: out,
                    file,
                });
                if hangs >= cfg.max_hangs {
                    break 'outer;
                }
            }
        }
        if last_report.elapsed() > Duration::from_secs(10) {
            last_report = Instant::now();
            if let Some(p) = cfg.progress.as_mut() {
                p(&stats, start.elapsed());
            }
        }
    }
    if let Some(d) = &cfg.out {
        let _ = std::fs::remove_file(d.join("in-flight"));
    }
    (stats, failures)
}
