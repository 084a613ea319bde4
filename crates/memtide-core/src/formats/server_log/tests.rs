//! The parser on lines in each release's wording (docs/serving.md lists the format strings),
//! with the prefixes real logs put before them. Expected bytes: the printed value × 2^30.

use super::*;

const GIB: i64 = 1 << 30;

/// `x` GiB as printed with `decimals` decimals: (bytes, precision).
fn gib(x: f64, decimals: i32) -> (i64, u64) {
    (
        (x * GIB as f64).round() as i64,
        (0.5 * GIB as f64 * 10f64.powi(-decimals)).round() as u64,
    )
}

/// The figures of `text`: (figure, bytes, precision, line, rank).
fn figures(text: &str) -> Vec<(LogFigure, i64, u64, usize, Option<u32>)> {
    parse("log", text)
        .figures
        .into_iter()
        .map(|f| (f.figure, f.bytes, f.precision, f.line, f.rank))
        .collect()
}

fn one(text: &str) -> (LogFigure, i64, u64) {
    let f = figures(text);
    assert_eq!(f.len(), 1, "{text:?}: {f:?}");
    (f[0].0, f[0].1, f[0].2)
}

use LogFigure as F;

#[test]
fn vllm_weights_in_every_wording() {
    // v0.4–v0.6: "Loading model weights took %.4f GB" (GB: / float(2**30)).
    let (b, p) = gib(8.5107, 4);
    assert_eq!(
        one("INFO 12-22 10:55:34 model_runner.py:1097] Loading model weights took 8.5107 GB"),
        (F::Weights, b, p)
    );
    // v0.7: "Model loading took %.4f GB and %.6f seconds".
    let (b, p) = gib(8.6253, 4);
    assert_eq!(
        one("    INFO 07-02 17:08:01 [model_runner.py:1146] Model loading took 8.6253 GB and 7.670299 seconds"),
        (F::Weights, b, p)
    );
    // v0.8–v0.10: "Model loading took %.4f GiB and %.6f seconds".
    let (b, p) = gib(14.9888, 4);
    assert_eq!(
        one("INFO 03-14 09:12:55 [gpu_model_runner.py:1289] Model loading took 14.9888 GiB and 13.204526 seconds"),
        (F::Weights, b, p)
    );
    // v0.11 and later: "Model loading took %s GiB memory and %.6f seconds".
    let (b, p) = gib(1.19, 2);
    assert_eq!(
        one("(EngineCore pid=1501) INFO [gpu_model_runner.py:5187] Model loading took 1.19 GiB memory and 1.919768 seconds"),
        (F::Weights, b, p)
    );
}

#[test]
fn vllm_profiling_messages_of_each_release() {
    // v0.6: one line of `key=value`.
    let f = figures("INFO 11-02 08:01:12 worker.py:232] Memory profiling results: total_gpu_memory=44.53GiB initial_memory_usage=18.31GiB peak_torch_memory=19.73GiB memory_usage_post_profile=18.95Gib non_torch_memory=0.62GiB kv_cache_size=17.11GiB gpu_memory_utilization=0.85");
    let got: Vec<(LogFigure, i64)> = f.iter().map(|f| (f.0, f.1)).collect();
    assert_eq!(
        got,
        [
            (F::Capacity, gib(44.53, 2).0),
            (F::Outside, gib(0.62, 2).0),
            (F::KvCache, gib(17.11, 2).0)
        ]
    );
    // v0.7–v0.8: one message over three lines, each with the logger's prefix.
    let text = "INFO 08-12 22:32:11 [worker.py:295] Memory profiling takes 1.73 seconds\n\
INFO 08-12 22:32:11 [worker.py:295] the current vLLM instance can use total_gpu_memory (47.50GiB) x gpu_memory_utilization (0.78) = 37.18GiB\n\
INFO 08-12 22:32:11 [worker.py:295] model weights take 0.52GiB; non_torch_memory takes 0.08GiB; PyTorch activation peak memory takes 1.78GiB; the rest of the memory reserved for KV Cache is 34.81GiB.";
    let got: Vec<(LogFigure, i64, usize)> = figures(text).iter().map(|f| (f.0, f.1, f.3)).collect();
    assert_eq!(
        got,
        [
            (F::Capacity, gib(47.50, 2).0, 2),
            (F::Weights, gib(0.52, 2).0, 3),
            (F::Outside, gib(0.08, 2).0, 3),
            (F::ActivationPeak, gib(1.78, 2).0, 3),
            (F::KvCache, gib(34.81, 2).0, 3),
        ]
    );
    // A negative KV-cache budget (vLLM prints it before refusing to start).
    let f = figures("22:12:16  INFO [worker.py:295] model weights take 6.59GiB; non_torch_memory takes 8.29GiB; PyTorch activation peak memory takes 4.93GiB; the rest of the memory reserved for KV Cache is -7.83GiB.");
    assert_eq!(f[3].0, F::KvCache);
    assert_eq!(f[3].1, -gib(7.83, 2).0);
    // v0.9 and later, at debug level: `MemoryProfilingResult.__repr__`.
    let got: Vec<(LogFigure, i64)> = figures("DEBUG 07-17 01:02:45 [gpu_worker.py:298] Memory profiling takes 11.20 seconds. Total non KV cache memory: 20.19GiB; torch peak memory increase: 1.42GiB; non-torch forward increase memory: 0.51GiB; weights memory: 18.26GiB.")
        .iter()
        .map(|f| (f.0, f.1))
        .collect();
    assert_eq!(
        got,
        [
            (F::ActivationPeak, gib(1.42, 2).0),
            (F::Outside, gib(0.51, 2).0),
            (F::Weights, gib(18.26, 2).0)
        ]
    );
}

#[test]
fn vllm_kv_cache_and_graph_lines_with_worker_prefixes() {
    let text = "\
(Worker_TP0 pid=514) INFO 07-12 02:35:26 [gpu_model_runner.py:6639] Estimated CUDA graph memory: 1.58 GiB total
(Worker_TP1 pid=515) INFO 07-12 02:35:26 [gpu_model_runner.py:6639] Estimated CUDA graph memory: 1.58 GiB total
(Worker_TP0 pid=514) INFO 07-12 02:35:26 [gpu_worker.py:538] Available KV cache memory: 10.29 GiB
(VllmWorker rank=1 pid=12) INFO Available KV cache memory: 10.50 GiB
INFO 12-22 10:55:51 model_runner.py:1527] Graph capturing finished in 13 secs, took 0.27 GiB
(EngineCore pid=7) INFO [gpu_worker.py:621] CUDA graph pool memory: 0.5 GiB (actual), 0.8 GiB (estimated), difference: 0.3 GiB (37.5%).";
    let got = figures(text);
    let (e, ep) = gib(1.58, 2);
    assert_eq!(got[0], (F::GraphsEstimate, e, ep, 1, Some(0)));
    assert_eq!(got[1], (F::GraphsEstimate, e, ep, 2, Some(1)));
    let (k, kp) = gib(10.29, 2);
    assert_eq!(got[2], (F::KvCache, k, kp, 3, Some(0)));
    assert_eq!(got[3].4, Some(1), "rank=1");
    let (g, gp) = gib(0.27, 2);
    assert_eq!(got[4], (F::Graphs, g, gp, 5, None));
    let (a, ap) = gib(0.5, 1);
    let (s, sp) = gib(0.8, 1);
    assert_eq!(got[5], (F::Graphs, a, ap, 6, None));
    assert_eq!(got[6], (F::GraphsEstimate, s, sp, 6, None));
    assert_eq!(got.len(), 7);
}

#[test]
fn sglang_stages_in_each_wording() {
    let text = "\
[2025-03-14 09:20:10 TP0] Init torch distributed ends. mem usage=0.13 GB
[2025-03-14 09:20:11 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem=63.12 GB, mem usage=15.06 GB.
[2025-03-14 09:20:12 TP0] KV Cache is allocated. #tokens: 371661, K size: 12.74 GB, V size: 12.74 GB
[2025-03-14 09:20:12 TP0] Memory pool end. avail mem=8.10 GB
[2025-03-14 09:20:20 TP0] Capture cuda graph end. Time elapsed: 7.00 s. mem usage=0.42 GB. avail mem=7.68 GB.";
    let got: Vec<(LogFigure, i64, usize, Option<u32>)> =
        figures(text).iter().map(|f| (f.0, f.1, f.3, f.4)).collect();
    assert_eq!(
        got,
        [
            (F::DistributedInit, gib(0.13, 2).0, 1, Some(0)),
            (F::Weights, gib(15.06, 2).0, 2, Some(0)),
            (F::FreeAfterWeights, gib(63.12, 2).0, 2, Some(0)),
            (F::KvCache, 2 * gib(12.74, 2).0, 3, Some(0)),
            (F::FreeAfterKvCache, gib(8.10, 2).0, 4, Some(0)),
            (F::Graphs, gib(0.42, 2).0, 5, Some(0)),
            (F::FreeAfterGraphs, gib(7.68, 2).0, 5, Some(0)),
        ]
    );
    // K + V: the precision of both.
    let kv = parse("l", text).figures[3].clone();
    assert_eq!(kv.figure, F::KvCache);
    assert_eq!(kv.precision, 2 * gib(0.0, 2).1);
    // Newer: `elapsed=` first, DP/TP/EP in the prefix; MLA's one `KV size`.
    let got: Vec<(LogFigure, i64, Option<u32>)> = figures(
        "[2025-01-22 10:00:01 DP0 TP3 EP3] Load weight end. elapsed=12.31 s, type=DeepseekV3ForCausalLM, quant=fp8, avail mem=75.11 GB, mem usage=107.07 GB.\n\
[2025-01-22 10:00:02 DP0 TP3 EP3] KV Cache is allocated. #tokens: 524288, KV size: 17.16 GB",
    )
    .iter()
    .map(|f| (f.0, f.1, f.4))
    .collect();
    assert_eq!(
        got,
        [
            (F::Weights, gib(107.07, 2).0, Some(3)),
            (F::FreeAfterWeights, gib(75.11, 2).0, Some(3)),
            (F::KvCache, gib(17.16, 2).0, Some(3)),
        ]
    );
    // Older: no `mem usage` (only what is free), no `#tokens`, a capture without figures.
    let got: Vec<LogFigure> = figures(
        "[2024-09-01 12:01:19] Load weight end. type=LlamaForCausalLM, dtype=torch.float16, avail mem=77.39 GB\n\
[2024-09-01 12:01:20] KV Cache is allocated. K size: 2.12 GB, V size: 2.12 GB.\n\
[2024-09-01 12:01:32] Capture cuda graph end. Time elapsed: 7.00 s",
    )
    .iter()
    .map(|f| f.0)
    .collect();
    assert_eq!(got, [F::FreeAfterWeights, F::KvCache]);
}

#[test]
fn a_device_gets_its_rank_or_the_lowest() {
    let log = parse(
        "l",
        "[x TP1] Load weight end. avail mem=10.00 GB, mem usage=5.00 GB.\n\
[x TP0] Load weight end. avail mem=11.00 GB, mem usage=4.00 GB.\n\
Graph capturing finished in 3 secs, took 0.25 GiB\n\
[x TP0] Load weight end. type=Draft, avail mem=9.00 GB, mem usage=1.00 GB.",
    );
    let d = log.for_device("cuda:1");
    assert_eq!(d.rank, Some(1));
    assert_eq!(d.get(F::Weights).map(|f| f.bytes), Some(5 * GIB));
    assert_eq!(
        d.get(F::Graphs).map(|f| f.bytes),
        Some(GIB / 4),
        "no rank: every device's"
    );
    let d = log.for_device("cuda:7");
    assert_eq!(d.rank, Some(0), "not in the log: the lowest rank");
    assert_eq!(d.missing_rank, Some(7), "said, not hidden");
    assert_eq!(log.for_device("cuda:1").missing_rank, None);
    assert_eq!(
        d.get(F::Weights).map(|f| f.bytes),
        Some(4 * GIB),
        "the first of a kind (the main model, not the draft)"
    );
    assert_eq!(d.servers(), [Server::Sglang, Server::Vllm]);
}

#[test]
fn other_lines_and_hostile_text_are_ignored() {
    let text = "\
INFO 12-22 10:55:35 gpu_executor.py:76] # GPU blocks: 715, # CPU blocks: 1310
Model loading took GiB
Model loading took 1e999 GiB
Model loading took 99999999999999999999999.0 GiB
Available KV cache memory: .5 GiB
Available KV cache memory: 3.5 MiB
\u{1b}[31mAvailable KV cache memory: \u{0}\u{7}12 GiB
Estimated CUDA graph memory: -- GiB total
KV Cache is allocated. K size: 1 GB";
    assert_eq!(figures(text), []);
    // Binary junk and a huge line: nothing, no panic.
    let junk: String = (0..200_000u32)
        .map(|i| char::from_u32(i % 0x2FF).unwrap_or('?'))
        .collect();
    assert_eq!(figures(&junk), []);
    let long = format!(
        "{}Available KV cache memory: 1.00 GiB",
        "GB ".repeat(1 << 20)
    );
    assert_eq!(figures(&long).len(), 1);
    // Multi-byte text around the phrases: never split inside a character.
    assert_eq!(
        one("é€ Graph capturing finished in 1 secs, took 0.50 GiB é").1,
        GIB / 2
    );
    assert_eq!(rank_of("é TP"), None);
    assert_eq!(rank_of("[TP12] "), Some(12));
    assert_eq!(rank_of("STP3 "), None, "TP inside a word is no rank");
}
