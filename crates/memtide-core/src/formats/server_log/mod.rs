//! Inference servers' startup logs (`--server-log`): the memory figures vLLM and SGLang print
//! while they start — weights loaded, the profile run, the KV cache, CUDA-graph capture — each
//! with the line it came from, the rank that printed it and how far off its rounding lets it
//! be (docs/serving.md). Only these lines are read; every other line is ignored, and nothing
//! of the log's text is ever echoed (a hostile log cannot put control characters on a
//! terminal through it).
//!
//! The format strings read, as the servers' sources print them (repository, file; the
//! releases are where the wording was found, see docs/serving.md):
//!
//! vLLM (`vllm-project/vllm`; every figure divided by 2^30 — the old "GB" too, `/ float(2**30)`):
//! - `vllm/worker/model_runner.py` (v0.4–v0.6): `"Loading model weights took %.4f GB"`
//! - `vllm/worker/model_runner.py`, `vllm/v1/worker/gpu_model_runner.py` (v0.7):
//!   `"Model loading took %.4f GB and %.6f seconds"`; then (v0.8–v0.10)
//!   `"Model loading took %.4f GiB and %.6f seconds"`; then (v0.11 and later, `format_gib`)
//!   `"Model loading took %s GiB memory and %.6f seconds"`
//! - `vllm/worker/worker.py` (v0.6): `"Memory profiling results: total_gpu_memory=%.2fGiB"
//!   " initial_memory_usage=%.2fGiB peak_torch_memory=%.2fGiB" " memory_usage_post_profile=%.2fGib"
//!   " non_torch_memory=%.2fGiB kv_cache_size=%.2fGiB" " gpu_memory_utilization=%.2f"`
//! - `vllm/worker/worker.py`, `vllm/v1/worker/gpu_worker.py` (v0.7–v0.8), one message over
//!   lines: `f"Memory profiling takes {…:.2f} seconds\nthe current vLLM instance can use
//!   total_gpu_memory ({…:.2f}GiB) x gpu_memory_utilization ({…:.2f}) = {…:.2f}GiB\nmodel
//!   weights take {…:.2f}GiB; non_torch_memory takes {…:.2f}GiB; PyTorch activation peak
//!   memory takes {…:.2f}GiB; the rest of the memory reserved for KV Cache is {…:.2f}GiB."`
//! - `vllm/utils/mem_utils.py` `MemoryProfilingResult.__repr__` (v0.9 and later, logged at
//!   debug level): `f"Memory profiling takes {…:.2f} seconds. Total non KV cache memory:
//!   {…}GiB; torch peak memory increase: {…}GiB; non-torch forward increase memory: {…}GiB;
//!   weights memory: {…}GiB."`
//! - `vllm/v1/worker/gpu_worker.py` (v0.9 and later): `"Available KV cache memory: %.2f GiB"`
//! - `vllm/worker/model_runner.py`, `vllm/v1/worker/gpu_model_runner.py` (v0.5 and later):
//!   `"Graph capturing finished in %.0f secs, took %.2f GiB"`
//! - `vllm/v1/worker/gpu_model_runner.py` (CUDA graph memory profiling, default since v0.21):
//!   `"Estimated CUDA graph memory: %.2f GiB total"`; `vllm/v1/worker/gpu_worker.py`:
//!   `"CUDA graph pool memory: %s GiB (actual), %s GiB (estimated), difference: %s GiB
//!   (%.1f%%)."`
//!
//! SGLang (`sgl-project/sglang`, `sglang/srt/model_executor/model_runner.py` and
//! `mem_cache/memory_pool.py`; "GB" there is GiB: `get_available_gpu_memory` returns
//! `free_gpu_memory / (1 << 30)` and the pool divides by `GB = 1024 * 1024 * 1024`):
//! - `f"Init torch distributed ends. mem usage={…:.2f} GB"`
//! - `f"Load weight end. type={…}, dtype={…}, avail mem={…:.2f} GB, mem usage={…:.2f} GB."`
//!   (older: no `mem usage`; newer: `elapsed=… s, ` first and the quantization named)
//! - `f"KV Cache is allocated. #tokens: {…}, K size: {…:.2f} GB, V size: {…:.2f} GB"`
//!   (older: no `#tokens`; MLA: `KV size: {…:.2f} GB`)
//! - `f"Memory pool end. avail mem={…:.2f} GB"`
//! - `f"Capture cuda graph end. Time elapsed: {…:.2f} s. mem usage={…:.2f} GB. avail
//!   mem={…:.2f} GB."` (older: no memory figures)
//!
//! A line may carry any prefix (`INFO 12-06 10:55:34 [worker.py:241] `, `[2025-03-14
//! 09:20:11 TP3] `, `(VllmWorker rank=1 pid=12) `, `(Worker_TP1 pid=515) `): the phrases are
//! found anywhere in it, and the rank is read from the prefix (`rank=N`, `TPN`).

pub use crate::trace::external::{DeviceServerLog, LogFigure, Logged, Server};
use std::path::{Path, PathBuf};

/// Every memory figure of a server log, in line order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerLog {
    /// The file's name, for reports.
    pub name: String,
    /// The file read (an input no output may overwrite).
    pub path: PathBuf,
    pub figures: Vec<Logged>,
}

/// The largest server log read (a whole job log is fine; a stray huge file is refused).
pub(crate) const SERVER_LOG_MAX: u64 = 256 << 20;

/// What the error says a server log should hold.
const EXPECTED: &str = "no vLLM or SGLang memory line in it (expected e.g. `Model loading took 14.99 GiB …`, `Available KV cache memory: 54.62 GiB`, `Graph capturing finished in 13 secs, took 0.27 GiB`, `Load weight end. … mem usage=15.06 GB`, `KV Cache is allocated. … K size: 12.74 GB, V size: 12.74 GB`)";

/// Reads `--server-log FILE`: bytes that are not UTF-8 read as U+FFFD; past
/// 256 MiB (`SERVER_LOG_MAX`) refused. The error text names what is wrong (the caller names the file).
pub fn read(path: &Path) -> Result<ServerLog, String> {
    let bytes =
        crate::formats::limit::read_file(path, SERVER_LOG_MAX, "a server log").map_err(|e| {
            match crate::formats::limit::too_large(&e) {
                Some(_) => format!("{e}: keep the server's startup lines"),
                None => format!("cannot read it: {e}"),
            }
        })?;
    let mut log = parse(
        &path.display().to_string(),
        &String::from_utf8_lossy(&bytes),
    );
    if log.figures.is_empty() {
        return Err(EXPECTED.into());
    }
    log.path = path.to_path_buf();
    Ok(log)
}

/// Every memory figure of `text` (see the module's list), in line order.
pub fn parse(name: &str, text: &str) -> ServerLog {
    let mut figures = Vec::new();
    for (i, line) in text.split('\n').enumerate() {
        // Every figure is in GiB or GB: a line with neither is skipped at once.
        if !line.contains("GB") && !line.contains("GiB") {
            continue;
        }
        line_figures(line, i + 1, &mut figures);
    }
    ServerLog {
        name: name.to_string(),
        path: PathBuf::from(name),
        figures,
    }
}

impl ServerLog {
    /// The figures for `device` (`cuda:N`): rank N's where the log names ranks and has it,
    /// else the lowest rank's; lines naming no rank always count. The first of each kind.
    pub fn for_device(&self, device: &str) -> DeviceServerLog {
        let mut ranks: Vec<u32> = self.figures.iter().filter_map(|f| f.rank).collect();
        ranks.sort_unstable();
        ranks.dedup();
        let ordinal = device
            .rsplit(':')
            .next()
            .and_then(|n| n.parse::<u32>().ok());
        let rank = match ordinal {
            Some(n) if ranks.contains(&n) => Some(n),
            _ => ranks.first().copied(),
        };
        let mut figures: Vec<Logged> = Vec::new();
        for f in &self.figures {
            if (f.rank.is_none() || f.rank == rank) && !figures.iter().any(|g| g.figure == f.figure)
            {
                figures.push(f.clone());
            }
        }
        DeviceServerLog {
            name: self.name.clone(),
            rank,
            missing_rank: ordinal.filter(|n| !ranks.is_empty() && !ranks.contains(n)),
            figures,
        }
    }
}

/// A figure read from a line: a number and its unit (GiB or GB, both 2^30 bytes).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Value {
    bytes: i64,
    precision: u64,
}

const GIB: f64 = (1u64 << 30) as f64;

/// The number at the start of `s` (after spaces and an opening parenthesis), in GiB or GB:
/// `14.99GiB`, `0.27 GiB`, `12.74 GB`, `-7.83GiB`.
fn value_at(s: &str) -> Option<Value> {
    let s = s.trim_start_matches([' ', '(']);
    let end = s
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || (i == 0 && c == '-')))
        .map_or(s.len(), |(i, _)| i);
    let (num, rest) = s.split_at(end);
    let rest = rest.trim_start_matches(' ');
    if !(rest.starts_with("GiB") || rest.starts_with("GB")) {
        return None;
    }
    number(num)
}

/// A printed number of GiB → bytes and half its last digit; None for what is not one or is
/// past any device's memory.
fn number(num: &str) -> Option<Value> {
    if num.is_empty()
        || num.len() > 24
        || !num
            .trim_start_matches('-')
            .starts_with(|c: char| c.is_ascii_digit())
    {
        return None;
    }
    let v: f64 = num.parse().ok()?;
    if !v.is_finite() || v.abs() > 1e9 {
        return None;
    }
    let decimals = num.split_once('.').map_or(0, |(_, d)| d.len()) as i32;
    let precision = (0.5 * GIB * 10f64.powi(-decimals)).round() as u64;
    Some(Value {
        bytes: (v * GIB).round() as i64,
        precision,
    })
}

/// The number just before `idx` in `line` (`…, 0.80 GiB (estimated)`: `idx` at `GiB`).
fn value_before(line: &str, idx: usize) -> Option<Value> {
    let head = line.get(..idx)?.trim_end_matches(' ');
    let start = head
        .char_indices()
        .rev()
        .find(|&(_, c)| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .map_or(0, |(i, c)| i + c.len_utf8());
    number(&head[start..])
}

/// The value after the first `key` in `line`, searched from `from`.
fn after(line: &str, from: usize, key: &str) -> Option<(usize, Value)> {
    let at = from + line.get(from..)?.find(key)?;
    let v = value_at(line.get(at + key.len()..)?)?;
    Some((at, v))
}

/// The rank a line's prefix (the text before `upto`) names: `rank=N`, or `TPN` after `_`,
/// a space or `[` (`Worker_TP1`, `[… TP3]`, `DP0 TP0 EP0`).
fn rank_of(prefix: &str) -> Option<u32> {
    let digits = |s: &str| -> Option<u32> {
        let d: String = s.chars().take_while(char::is_ascii_digit).take(9).collect();
        d.parse().ok()
    };
    if let Some(i) = prefix.find("rank=") {
        if let Some(r) = digits(&prefix[i + 5..]) {
            return Some(r);
        }
    }
    let b = prefix.as_bytes();
    let mut from = 0;
    while let Some(j) = prefix.get(from..).and_then(|s| s.find("TP")) {
        let i = from + j;
        let before_ok = i == 0 || matches!(b[i - 1], b'_' | b' ' | b'[');
        if before_ok {
            if let Some(r) = digits(&prefix[i + 2..]) {
                return Some(r);
            }
        }
        from = i + 2;
    }
    None
}

/// The figures one line holds, appended to `out`.
fn line_figures(line: &str, no: usize, out: &mut Vec<Logged>) {
    let mut found: Vec<(usize, LogFigure, Value, Server)> = Vec::new();
    let mut push = |at: usize, figure, v: Value, server| found.push((at, figure, v, server));
    use LogFigure as F;
    use Server::{Sglang, Vllm};
    // vLLM: one key phrase, its value right after it.
    for (key, figure) in [
        ("Loading model weights took ", F::Weights),
        ("Model loading took ", F::Weights),
        ("model weights take ", F::Weights),
        ("weights memory: ", F::Weights),
        ("non_torch_memory takes ", F::Outside),
        ("non-torch forward increase memory: ", F::Outside),
        ("PyTorch activation peak memory takes ", F::ActivationPeak),
        ("torch peak memory increase: ", F::ActivationPeak),
        (
            "the rest of the memory reserved for KV Cache is ",
            F::KvCache,
        ),
        ("Available KV cache memory: ", F::KvCache),
        ("total_gpu_memory (", F::Capacity),
        ("total_gpu_memory=", F::Capacity),
        ("non_torch_memory=", F::Outside),
        ("kv_cache_size=", F::KvCache),
        ("Estimated CUDA graph memory: ", F::GraphsEstimate),
    ] {
        if let Some((at, v)) = after(line, 0, key) {
            push(at, figure, v, Vllm);
        }
    }
    if let Some(at) = line.find("Graph capturing finished in ") {
        if let Some((_, v)) = after(line, at, ", took ") {
            push(at, F::Graphs, v, Vllm);
        }
    }
    if let Some((at, v)) = after(line, 0, "CUDA graph pool memory: ") {
        push(at, F::Graphs, v, Vllm);
        if let Some(e) = line[at..].find("GiB (estimated)") {
            if let Some(v) = value_before(line, at + e) {
                push(at, F::GraphsEstimate, v, Vllm);
            }
        }
    }
    // SGLang: a stage's phrase, then `mem usage=` and `avail mem=` anywhere after it.
    for (phrase, usage, avail) in [
        (
            "Init torch distributed ends.",
            Some(F::DistributedInit),
            None,
        ),
        (
            "Load weight end.",
            Some(F::Weights),
            Some(F::FreeAfterWeights),
        ),
        ("Memory pool end.", None, Some(F::FreeAfterKvCache)),
        (
            "Capture cuda graph end.",
            Some(F::Graphs),
            Some(F::FreeAfterGraphs),
        ),
    ] {
        let Some(at) = line.find(phrase) else {
            continue;
        };
        if let (Some(f), Some((_, v))) = (usage, after(line, at, "mem usage=")) {
            push(at, f, v, Sglang);
        }
        if let (Some(f), Some((_, v))) = (avail, after(line, at, "avail mem=")) {
            push(at, f, v, Sglang);
        }
    }
    if let Some(at) = line.find("KV Cache is allocated.") {
        let k = after(line, at, " K size: ");
        let v = after(line, at, " V size: ");
        if let (Some((_, k)), Some((_, v))) = (k, v) {
            let sum = Value {
                bytes: k.bytes.saturating_add(v.bytes),
                precision: k.precision + v.precision,
            };
            push(at, F::KvCache, sum, Sglang);
        } else if let Some((_, kv)) = after(line, at, "KV size: ") {
            push(at, F::KvCache, kv, Sglang);
        }
    }
    found.sort_by_key(|f| f.0);
    for (at, figure, v, server) in found {
        out.push(Logged {
            figure,
            bytes: v.bytes,
            precision: v.precision,
            line: no,
            rank: rank_of(&line[..at]),
            server,
        });
    }
}

#[cfg(test)]
mod tests;
