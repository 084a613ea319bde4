//! The allocator settings a simulated run uses: parsed from a `PYTORCH_CUDA_ALLOC_CONF`-style
//! string (`expandable_segments:True,max_split_size_mb:128`) or read from a snapshot's
//! `allocator_settings`, and PyTorch's size rounding under them.
//!
//! Source: pytorch/pytorch `c10/core/AllocatorConfig.cpp` (`AllocatorConfig::lexArgs`,
//! `parseArgs`, `parseMaxSplitSize`, `parseMaxNonSplitRoundingSize`,
//! `parseGarbageCollectionThreshold`, `parseRoundUpPower2Divisions`,
//! `roundup_power2_divisions(size)`) and `c10/cuda/CUDACachingAllocator.cpp`
//! (`DeviceCachingAllocator::round_size`, `roundup_power2_next_division`).

use crate::allocator::rounding::{LARGE_BUFFER, MIN_BLOCK_SIZE};
use serde_json::Value;
use std::fmt;

/// `kRoundUpPowerOfTwoIntervals`: one divisions setting per power-of-two interval from 1 MiB
/// (interval 0, which also covers everything smaller) to 32 GiB and above (interval 15).
pub(crate) const POWER2_INTERVALS: usize = 16;
const MIB: u64 = 1 << 20;

/// A bad `--alloc-conf` string or `allocator_settings` object.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("allocator config {text:?}: {reason}")]
pub struct ConfError {
    pub text: String,
    pub reason: String,
}

/// The settings of PyTorch's native caching allocator that change where memory goes.
#[derive(Clone, Debug, PartialEq)]
pub struct AllocConf {
    /// `expandable_segments`.
    pub expandable_segments: bool,
    /// `max_split_size_mb` in bytes (`u64::MAX`: unset, PyTorch's default).
    pub max_split_size: u64,
    /// `max_non_split_rounding_mb` in bytes (default `kLargeBuffer`, 20 MiB): how much larger
    /// than a request an unsplittable (oversize) cached block may be and still serve it.
    pub max_non_split_rounding: u64,
    /// `roundup_power2_divisions`, per interval (0 or 1: plain 512 B rounding).
    pub roundup_power2_divisions: [u64; POWER2_INTERVALS],
    /// `garbage_collection_threshold` (0: off). PyTorch only collects when a memory fraction
    /// is set; the simulator takes `--capacity` as that limit.
    pub garbage_collection_threshold: f64,
}

impl Default for AllocConf {
    /// PyTorch's defaults (`AllocatorConfig::AllocatorConfig`).
    fn default() -> Self {
        AllocConf {
            expandable_segments: false,
            max_split_size: u64::MAX,
            max_non_split_rounding: LARGE_BUFFER,
            roundup_power2_divisions: [0; POWER2_INTERVALS],
            garbage_collection_threshold: 0.0,
        }
    }
}

fn err(text: &str, reason: impl Into<String>) -> ConfError {
    ConfError {
        text: text.to_string(),
        reason: reason.into(),
    }
}

/// `AllocatorConfig::lexArgs`: `,` `:` `[` `]` are tokens of their own, spaces are dropped.
fn lex(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut buf = String::new();
    for c in s.chars() {
        match c {
            ',' | ':' | '[' | ']' => {
                if !buf.is_empty() {
                    out.push(std::mem::take(&mut buf));
                }
                out.push(c.to_string());
            }
            ' ' => {}
            _ => buf.push(c),
        }
    }
    if !buf.is_empty() {
        out.push(buf);
    }
    out
}

/// Keys PyTorch accepts that do not change the device allocator's placement (pinned host
/// memory, locking): accepted and ignored.
const NO_EFFECT: [&str; 5] = [
    "release_lock_on_cudamalloc",
    "pinned_use_cuda_host_register",
    "pinned_num_register_threads",
    "pinned_use_background_threads",
    "graph_capture_record_stream_reuse",
];

const KEYS: &str = "expandable_segments, max_split_size_mb, max_non_split_rounding_mb, roundup_power2_divisions, garbage_collection_threshold, backend (native), release_lock_on_cudamalloc, pinned_*";

struct Tokens<'a> {
    t: Vec<String>,
    i: usize,
    text: &'a str,
}

impl Tokens<'_> {
    fn next(&mut self, what: &str) -> Result<String, ConfError> {
        let v = self
            .t
            .get(self.i)
            .cloned()
            .ok_or_else(|| err(self.text, format!("expected {what} at the end")))?;
        self.i += 1;
        Ok(v)
    }
    fn expect(&mut self, tok: &str, after: &str) -> Result<(), ConfError> {
        let v = self.next(&format!("'{tok}' after {after}"))?;
        if v == tok {
            Ok(())
        } else {
            Err(err(
                self.text,
                format!("expected '{tok}' after {after}, found {v:?}"),
            ))
        }
    }
    fn peek(&self) -> Option<&str> {
        self.t.get(self.i).map(String::as_str)
    }
}

fn parse_u64(text: &str, key: &str, v: &str) -> Result<u64, ConfError> {
    v.parse::<u64>()
        .map_err(|_| err(text, format!("{key} expects a whole number, found {v:?}")))
}

fn parse_bool(text: &str, key: &str, v: &str) -> Result<bool, ConfError> {
    match v {
        "True" => Ok(true),
        "False" => Ok(false),
        _ => Err(err(
            text,
            format!("{key} expects True or False, found {v:?}"),
        )),
    }
}

impl AllocConf {
    /// Parses a `PYTORCH_CUDA_ALLOC_CONF` string (`AllocatorConfig::parseArgs`): unknown keys
    /// and bad values are errors, as PyTorch's `TORCH_CHECK`s are. An empty string is the
    /// defaults.
    pub fn parse(text: &str) -> Result<AllocConf, ConfError> {
        let mut c = AllocConf::default();
        let mut t = Tokens {
            t: lex(text),
            i: 0,
            text,
        };
        while let Some(key) = t.peek().map(str::to_string) {
            t.i += 1;
            t.expect(":", &key)?;
            match key.as_str() {
                "expandable_segments" => {
                    let v = t.next("True or False")?;
                    c.expandable_segments = parse_bool(text, &key, &v)?;
                }
                "max_split_size_mb" | "max_non_split_rounding_mb" => {
                    let v = t.next("a size in MiB")?;
                    let mb = parse_u64(text, &key, &v)?;
                    // parseMaxSplitSize: "too small, must be >= kLargeBuffer / kMB".
                    if mb < LARGE_BUFFER / MIB {
                        return Err(err(
                            text,
                            format!("{key} too small, must be >= {}", LARGE_BUFFER / MIB),
                        ));
                    }
                    let bytes = mb.min(u64::MAX / MIB) * MIB;
                    if key == "max_split_size_mb" {
                        c.max_split_size = bytes;
                    } else {
                        c.max_non_split_rounding = bytes;
                    }
                }
                "garbage_collection_threshold" => {
                    let v = t.next("a fraction")?;
                    let x: f64 = v
                        .parse()
                        .map_err(|_| err(text, format!("{key} expects a number, found {v:?}")))?;
                    if !(x > 0.0 && x < 1.0) {
                        return Err(err(
                            text,
                            "garbage_collection_threshold is invalid, set it in (0.0, 1.0)",
                        ));
                    }
                    c.garbage_collection_threshold = x;
                }
                "roundup_power2_divisions" => parse_divisions(&mut t, &mut c)?,
                "backend" => {
                    let v = t.next("native or cudaMallocAsync")?;
                    match v.as_str() {
                        "native" => {}
                        "cudaMallocAsync" => {
                            return Err(err(
                                text,
                                "backend:cudaMallocAsync is the driver's allocator, not the caching allocator this simulator models",
                            ))
                        }
                        _ => {
                            return Err(err(
                                text,
                                format!("unknown allocator backend {v:?}: options are native and cudaMallocAsync"),
                            ))
                        }
                    }
                }
                k if NO_EFFECT.contains(&k) || k == "release_lock_on_hipmalloc" => {
                    t.next("a value")?;
                }
                _ => {
                    return Err(err(
                        text,
                        format!("unrecognized CachingAllocator option {key:?}; known: {KEYS}"),
                    ))
                }
            }
            if t.peek().is_some() {
                t.expect(",", "a value")?;
            }
        }
        Ok(c)
    }

    /// The settings a snapshot recorded (`allocator_settings`: `max_split_size` in bytes, −1
    /// when unset; `roundup_power2_divisions` as `{"1": d, "2": d, …}` keyed by interval
    /// start in MiB; `expandable_segments`; `garbage_collection_threshold`). Keys it lacks
    /// keep PyTorch's defaults.
    pub fn from_settings(v: &Value) -> Result<AllocConf, ConfError> {
        let text = v.to_string();
        let Some(m) = v.as_object() else {
            return Err(err(&text, "allocator_settings is not an object"));
        };
        let mut c = AllocConf::default();
        if let Some(x) = m.get("expandable_segments") {
            c.expandable_segments = x
                .as_bool()
                .ok_or_else(|| err(&text, "expandable_segments is not a boolean"))?;
        }
        if let Some(x) = m.get("max_split_size") {
            match x.as_i64() {
                Some(n) if n < 0 => {}
                Some(n) => c.max_split_size = n as u64,
                None => match x.as_u64() {
                    Some(n) => c.max_split_size = n,
                    None => return Err(err(&text, "max_split_size is not an integer")),
                },
            }
        }
        if let Some(n) = m.get("max_non_split_rounding_size").and_then(Value::as_u64) {
            c.max_non_split_rounding = n;
        }
        if let Some(x) = m.get("garbage_collection_threshold") {
            c.garbage_collection_threshold = x
                .as_f64()
                .ok_or_else(|| err(&text, "garbage_collection_threshold is not a number"))?;
        }
        match m.get("roundup_power2_divisions") {
            Some(Value::Object(d)) => {
                for (k, x) in d {
                    let mb: u64 = k
                        .parse()
                        .map_err(|_| err(&text, format!("roundup_power2_divisions key {k:?}")))?;
                    let div = x.as_u64().ok_or_else(|| {
                        err(
                            &text,
                            format!("roundup_power2_divisions[{k}] is not a count"),
                        )
                    })?;
                    if mb.is_power_of_two() {
                        let i = (mb.ilog2() as usize).min(POWER2_INTERVALS - 1);
                        c.roundup_power2_divisions[i] = div;
                    }
                }
            }
            Some(Value::Array(d)) => {
                for (i, x) in d.iter().take(POWER2_INTERVALS).enumerate() {
                    c.roundup_power2_divisions[i] = x.as_u64().unwrap_or(0);
                }
            }
            Some(Value::Number(n)) => {
                c.roundup_power2_divisions = [n.as_u64().unwrap_or(0); POWER2_INTERVALS];
            }
            _ => {}
        }
        Ok(c)
    }

    /// `AllocatorConfig::roundup_power2_divisions(size)`: the interval of `size` is
    /// `log2(size) − log2(1 MiB)`, clamped to `[0, 15]`.
    pub fn divisions_for(&self, size: u64) -> u64 {
        let log = 63 - size.max(1).leading_zeros() as i64;
        let i = (log - 20).clamp(0, POWER2_INTERVALS as i64 - 1) as usize;
        self.roundup_power2_divisions[i]
    }

    /// `DeviceCachingAllocator::round_size`: below 512 B → 512 B; with `divisions > 1` and
    /// `size > 512 × divisions` → `roundup_power2_next_division`; else 512 B steps. None when
    /// the rounded size does not fit 64 bits: the request can never be served.
    pub fn round_size(&self, size: u64) -> Option<u64> {
        if size < MIN_BLOCK_SIZE {
            return Some(MIN_BLOCK_SIZE);
        }
        let div = self.divisions_for(size);
        if div > 1 && size > MIN_BLOCK_SIZE.saturating_mul(div) {
            roundup_power2_next_division(size, div)
        } else {
            size.div_ceil(MIN_BLOCK_SIZE).checked_mul(MIN_BLOCK_SIZE)
        }
    }

    /// Whether these are PyTorch's defaults.
    pub fn is_default(&self) -> bool {
        *self == AllocConf::default()
    }

    /// The settings as a `PYTORCH_CUDA_ALLOC_CONF` string (only what differs from the
    /// defaults; empty for the defaults).
    /// These settings with every one `fix` changes from PyTorch's defaults changed too: a fix
    /// tried on top of the settings in use (adding `max_split_size_mb` keeps
    /// `expandable_segments`).
    pub fn with(&self, fix: &AllocConf) -> AllocConf {
        let d = AllocConf::default();
        let mut c = self.clone();
        if fix.expandable_segments != d.expandable_segments {
            c.expandable_segments = fix.expandable_segments;
        }
        if fix.max_split_size != d.max_split_size {
            c.max_split_size = fix.max_split_size;
        }
        if fix.max_non_split_rounding != d.max_non_split_rounding {
            c.max_non_split_rounding = fix.max_non_split_rounding;
        }
        if fix.roundup_power2_divisions != d.roundup_power2_divisions {
            c.roundup_power2_divisions = fix.roundup_power2_divisions;
        }
        if fix.garbage_collection_threshold != d.garbage_collection_threshold {
            c.garbage_collection_threshold = fix.garbage_collection_threshold;
        }
        c
    }

    /// Whether these settings already have every one `fix` changes (trying it would change
    /// nothing: never offered as a fix).
    pub fn includes(&self, fix: &AllocConf) -> bool {
        self.with(fix) == *self
    }

    pub fn to_conf_string(&self) -> String {
        let d = AllocConf::default();
        let mut parts = Vec::new();
        if self.expandable_segments {
            parts.push("expandable_segments:True".to_string());
        }
        if self.max_split_size != d.max_split_size {
            parts.push(format!("max_split_size_mb:{}", self.max_split_size / MIB));
        }
        if self.max_non_split_rounding != d.max_non_split_rounding {
            parts.push(format!(
                "max_non_split_rounding_mb:{}",
                self.max_non_split_rounding / MIB
            ));
        }
        let r = &self.roundup_power2_divisions;
        if r.iter().all(|&x| x == r[0]) {
            if r[0] != 0 {
                parts.push(format!("roundup_power2_divisions:{}", r[0]));
            }
        } else {
            let items: Vec<String> = r
                .iter()
                .enumerate()
                .map(|(i, x)| format!("{}:{x}", 1u64 << i))
                .collect();
            parts.push(format!("roundup_power2_divisions:[{}]", items.join(",")));
        }
        if self.garbage_collection_threshold > 0.0 {
            parts.push(format!(
                "garbage_collection_threshold:{}",
                self.garbage_collection_threshold
            ));
        }
        parts.join(",")
    }
}

impl fmt::Display for AllocConf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.to_conf_string();
        if s.is_empty() {
            f.write_str("(defaults)")
        } else {
            f.write_str(&s)
        }
    }
}

/// `parseRoundUpPower2Divisions`: a single power of two for every interval, or a list
/// `[256:1,512:2,>:8]` of `interval-start-MiB:divisions` (the first entry also fills the
/// intervals below it; `>` fills the rest).
fn parse_divisions(t: &mut Tokens<'_>, c: &mut AllocConf) -> Result<(), ConfError> {
    let text = t.text;
    let key = "roundup_power2_divisions";
    let v = t.next("a count or a [..] list")?;
    if v != "[" {
        let n = parse_u64(text, key, &v)?;
        if !n.is_power_of_two() {
            return Err(err(text, "For roundups, the divisons has to be power of 2"));
        }
        c.roundup_power2_divisions = [n; POWER2_INTERVALS];
        return Ok(());
    }
    let mut first = true;
    let mut last = 0usize;
    loop {
        let k = t.next("an interval or ']'")?;
        if k == "]" {
            return Ok(());
        }
        t.expect(":", &k)?;
        let dv = t.next("a division count")?;
        let d = parse_u64(text, key, &dv)?;
        if d != 0 && !d.is_power_of_two() {
            return Err(err(
                text,
                "For roundups, the divisons has to be power of 2 or 0 to disable roundup",
            ));
        }
        if k == ">" {
            for x in &mut c.roundup_power2_divisions[last..] {
                *x = d;
            }
        } else {
            let mb = parse_u64(text, key, &k)?;
            if !mb.is_power_of_two() {
                return Err(err(
                    text,
                    "For roundups, the intervals have to be power of 2",
                ));
            }
            let i = (mb.ilog2() as usize).min(POWER2_INTERVALS - 1);
            if first {
                for x in &mut c.roundup_power2_divisions[..i] {
                    *x = d;
                }
                first = false;
            }
            c.roundup_power2_divisions[i] = d;
            last = i;
        }
        match t.peek() {
            Some("]") => {}
            Some(",") => t.i += 1,
            Some(o) => {
                return Err(err(
                    text,
                    format!("expected ',' or ']' in {key}, found {o:?}"),
                ))
            }
            None => return Err(err(text, format!("{key} list is not closed with ']'"))),
        }
    }
}

/// `roundup_power2_next_division`: the next of `divisions` equal steps between the powers of
/// two around `size` (1200 with 4 divisions → 1280); None when that step lies at or beyond
/// 2^64 (PyTorch's `size_t` would wrap to a small size; no allocator can serve it).
pub(crate) fn roundup_power2_next_division(size: u64, divisions: u64) -> Option<u64> {
    if size == 0 || size.is_power_of_two() {
        return Some(size);
    }
    let floor = 1u64 << size.ilog2();
    let step = floor >> divisions.max(1).ilog2();
    if step == 0 {
        return floor.checked_mul(2);
    }
    let down = size & !(step - 1);
    if down == size {
        Some(size)
    } else {
        down.checked_add(step)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_issue_s_example_parses() {
        let c = AllocConf::parse(
            "expandable_segments:True,max_split_size_mb:128,roundup_power2_divisions:4,garbage_collection_threshold:0.8",
        )
        .unwrap();
        assert!(c.expandable_segments);
        assert_eq!(c.max_split_size, 128 << 20);
        assert_eq!(c.roundup_power2_divisions, [4; 16]);
        assert_eq!(c.garbage_collection_threshold, 0.8);
        assert_eq!(
            AllocConf::parse(&c.to_conf_string()).unwrap(),
            c,
            "the canonical string parses back"
        );
        assert_eq!(AllocConf::parse("").unwrap(), AllocConf::default());
        assert_eq!(
            AllocConf::parse(" expandable_segments : False ").unwrap(),
            AllocConf::default()
        );
    }

    #[test]
    fn bad_keys_and_values_are_errors() {
        for bad in [
            "expandable_segment:True",
            "expandable_segments:true",
            "max_split_size_mb:10",
            "max_split_size_mb:x",
            "garbage_collection_threshold:1.0",
            "garbage_collection_threshold:0",
            "roundup_power2_divisions:3",
            "roundup_power2_divisions:[256:3]",
            "roundup_power2_divisions:[256:1",
            "expandable_segments",
            "backend:cudaMallocAsync",
        ] {
            assert!(AllocConf::parse(bad).is_err(), "{bad} must be refused");
        }
        let e = AllocConf::parse("foo:1").unwrap_err();
        assert!(e.to_string().contains("unrecognized"), "{e}");
    }

    #[test]
    fn the_division_list_fills_intervals_as_pytorch_does() {
        let c = AllocConf::parse("roundup_power2_divisions:[256:1,512:2,1024:4,>:8]").unwrap();
        let mut want = [1u64; 16];
        want[9] = 2;
        want[10] = 4;
        for x in &mut want[10..] {
            *x = 8;
        }
        // ">" fills from the last index given (1024 MiB: index 10) on.
        assert_eq!(c.roundup_power2_divisions, want);
    }

    #[test]
    fn power2_rounding_matches_the_comment_s_example() {
        // "if we need to round-up 1200 and number of divisions is 4 … return 1280".
        assert_eq!(roundup_power2_next_division(1200, 4), Some(1280));
        assert_eq!(roundup_power2_next_division(1024, 4), Some(1024));
        assert_eq!(roundup_power2_next_division(1280, 4), Some(1280));
        let c = AllocConf::parse("roundup_power2_divisions:4").unwrap();
        // 1.1 GiB lies in [1, 2) GiB: quarter steps of 256 MiB → 1.25 GiB.
        let g = 1u64 << 30;
        assert_eq!(c.round_size(g + (g / 10)), Some(g + g / 4));
        // Small sizes: 512 × 4 = 2048 is the threshold; 1000 B stays in 512 B steps.
        assert_eq!(c.round_size(1000), Some(1024));
        assert_eq!(c.round_size(3000), Some(3072));
        assert_eq!(AllocConf::default().round_size(g + 1), Some(g + 512));
    }

    #[test]
    fn requests_near_2_pow_64_cannot_be_rounded() {
        // Two divisions of [2^63, 2^64): steps of 2^62, so 2^64 − 1 rounds to 2^64 — beyond
        // 64 bits (the unchecked sum wrapped to 0).
        let c = AllocConf::parse("roundup_power2_divisions:2").unwrap();
        assert_eq!(c.round_size(u64::MAX), None);
        assert_eq!(c.round_size(3 << 62), Some(3 << 62));
        assert_eq!(c.round_size((3 << 62) - 1), Some(3 << 62));
        assert_eq!(c.round_size((3 << 62) + 1), None);
        assert_eq!(AllocConf::default().round_size(u64::MAX), None);
        // More divisions than the interval has bytes: the next power of two.
        assert_eq!(roundup_power2_next_division(1025, 1 << 20), Some(2048));
    }

    #[test]
    fn recorded_settings_are_read() {
        let v: Value = serde_json::from_str(
            r#"{"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "garbage_collection_threshold": 0.0,
                "expandable_segments": false, "roundup_power2_divisions": {"1": 0, "2": 0, "4": 0, "8": 0, "16": 0, "32": 0, "64": 0, "128": 0, "256": 0, "512": 0, "1024": 0, "2048": 0, "4096": 0, "8192": 0, "16384": 0, "32768": 0}}"#,
        )
        .unwrap();
        assert!(AllocConf::from_settings(&v).unwrap().is_default());
        let v: Value = serde_json::from_str(
            r#"{"max_split_size": 209715200, "expandable_segments": true, "roundup_power2_divisions": {"1": 4, "2": 2}}"#,
        )
        .unwrap();
        let c = AllocConf::from_settings(&v).unwrap();
        assert_eq!(c.max_split_size, 200 << 20);
        assert!(c.expandable_segments);
        assert_eq!(&c.roundup_power2_divisions[..3], &[4, 2, 0]);
    }
}
