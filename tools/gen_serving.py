#!/usr/bin/env python3
"""Writes tests/fixtures/serving/ (stdlib only, deterministic), the figures of each worked out
by hand in tests/fixtures/serving/README.md:

- capture.kineto.json: a profiler trace of two CUDA-graph captures on an 8 GiB device, with
  the runtime calls that open and close each stream capture as Kineto records them;
- compiled.kineto.json: a server's trace of 600 calls of two compiled graphs
  (`## Call CompiledFxGraph … ##` annotations), the repeated phases `summary` folds;
- pools.pickle: an allocator-faithful CUDA snapshot of a server's start: weights, a profile
  run, the KV cache made in one piece, two CUDA-graph private pools (two captured sizes), a
  failed capture's pool released (as PyTorch 2.13 releases it), and a user MemPool;
- pools.vllm.log, capture.sglang.log: server startup logs in vLLM's and SGLang's wording
  for `--server-log`.

    python3 tools/gen_serving.py --out tests/fixtures/serving
"""

import argparse
import json
import os
import pickle

MiB = 1 << 20
GiB = 1 << 30


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out = ap.parse_args().out
    ev = []
    state = {"alloc": 3072 * MiB, "res": 3200 * MiB}

    def mem(ts, addr, nbytes, grow=0):
        state["alloc"] += nbytes
        state["res"] += grow
        ev.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
                   "pid": 7, "tid": 1, "ts": float(ts),
                   "args": {"Total Reserved": state["res"], "Total Allocated": state["alloc"],
                            "Bytes": nbytes, "Device Id": 0, "Device Type": 1,
                            "Addr": addr}})

    def span(cat, name, ts, dur):
        ev.append({"ph": "X", "cat": cat, "name": name, "pid": 7, "tid": 1,
                   "ts": float(ts), "dur": float(dur)})

    # A warm-up forward outside any capture: 4 MiB made under aten::mm, freed after it.
    span("cpu_op", "aten::mm", 9, 1.5)
    mem(10, 0x100, 4 * MiB)
    mem(11, 0x100, -4 * MiB)
    # Capture of batch size 16: the pool grows 20 MiB; the 10 MiB reuses cached memory.
    span("user_annotation", "capture_16_FULL", 20, 40)
    span("cuda_runtime", "cudaStreamBeginCapture", 21, 1)
    mem(25, 0x200, 20 * MiB, grow=20 * MiB)
    mem(26, 0x300, 10 * MiB)
    mem(27, 0x200, -20 * MiB)
    span("cuda_runtime", "cudaStreamEndCapture", 30, 1)
    # Capture of batch size 8: 6 MiB from the pool's cache, 40 MiB of new segment.
    span("user_annotation", "capture_8_FULL", 70, 30)
    span("cuda_runtime", "cudaStreamBeginCapture", 71, 1)
    mem(75, 0x400, 6 * MiB)
    mem(76, 0x500, 40 * MiB, grow=40 * MiB)
    span("cuda_runtime", "cudaStreamEndCapture", 80, 1)
    # After the captures: 2 MiB more, outside any capture.
    mem(110, 0x600, 2 * MiB, grow=2 * MiB)
    doc = {"schemaVersion": 1, "baseTimeNanoseconds": 0,
           "deviceProperties": [{"id": 0, "name": "fixture GPU", "totalGlobalMem": 8 * GiB}],
           "traceEvents": ev, "traceName": "capture.kineto.json"}
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "capture.kineto.json"), "w") as f:
        json.dump(doc, f)
        f.write("\n")
    write_compiled(out)
    pools(out)
    logs(out)


# The two compiled graphs' annotations, as Inductor names its calls.
GRAPH_A = "## Call CompiledFxGraph fa1b2c3 ##"
GRAPH_B = "## Call CompiledFxGraph fd4e5f6 ##"


def write_compiled(out):
    """compiled.kineto.json: 1024 MiB live before the trace, a `setup` phase that keeps
    8 MiB, then 600 calls (i = 0..599: GRAPH_B when i % 3 == 2, else GRAPH_A), each
    allocating a block and freeing it: 1 MiB, except call 300 (A: 6 MiB) and calls 200 and
    500 (B: 3 MiB each)."""
    ev = []
    state = {"alloc": 1024 * MiB}

    def mem(ts, addr, nbytes):
        state["alloc"] += nbytes
        ev.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
                   "pid": 7, "tid": 1, "ts": float(ts),
                   "args": {"Total Reserved": 2048 * MiB, "Total Allocated": state["alloc"],
                            "Bytes": nbytes, "Device Id": 0, "Device Type": 1,
                            "Addr": addr}})

    def span(name, ts, dur):
        ev.append({"ph": "X", "cat": "user_annotation", "name": name, "pid": 7, "tid": 1,
                   "ts": float(ts), "dur": float(dur)})

    span("setup", 1, 4)
    mem(2, 0x10, 8 * MiB)
    for i in range(600):
        ts = 100 + 10 * i
        span(GRAPH_B if i % 3 == 2 else GRAPH_A, ts, 8)
        size = {300: 6 * MiB, 200: 3 * MiB, 500: 3 * MiB}.get(i, MiB)
        mem(ts + 2, 0x1000 + i, size)
        mem(ts + 4, 0x1000 + i, -size)
    doc = {"schemaVersion": 1, "baseTimeNanoseconds": 0,
           "deviceProperties": [{"id": 0, "name": "fixture GPU", "totalGlobalMem": 8 * GiB}],
           "traceEvents": ev, "traceName": "compiled.kineto.json"}
    with open(os.path.join(out, "compiled.kineto.json"), "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")


def frame(filename, line, name):
    return {"filename": filename, "line": line, "name": name}


def pools(out):
    """A snapshot as PyTorch's caching allocator writes it (`_snapshot()`): every segment
    made with `segment_alloc` and given back with `segment_free`, blocks split from their
    segment, the final `segments` exactly what the history leaves."""
    vllm = "/usr/lib/python3/site-packages/vllm"
    runner = vllm + "/v1/worker/gpu_model_runner.py"
    load = [frame(vllm + "/model_executor/model_loader/default_loader.py", 270, "load_weights"),
            frame(runner, 1800, "load_model"),
            frame("/workspace/serve.py", 10, "<module>")]
    profile = [frame("/usr/lib/python3/site-packages/torch/nn/functional.py", 2200, "linear"),
               frame(vllm + "/model_executor/models/llama.py", 300, "forward"),
               frame(runner, 2400, "profile_run"),
               frame("/workspace/serve.py", 11, "<module>")]
    kv = [frame(runner, 3100, "_allocate_kv_cache_tensors"),
          frame(runner, 3200, "initialize_kv_cache"),
          frame("/workspace/serve.py", 12, "<module>")]
    capture = [frame(vllm + "/model_executor/models/llama.py", 300, "forward"),
               frame(runner, 2600, "capture_model"),
               frame("/workspace/serve.py", 13, "<module>")]
    symm = [frame("/workspace/comm.py", 40, "make_symmetric_buffer"),
            frame("/workspace/serve.py", 14, "<module>")]
    t = [1_800_000_000_000_000]
    trace = []

    def e(action, addr, size, frames, pool=(0, 0)):
        t[0] += 10
        trace.append({"action": action, "addr": addr, "size": size, "stream": 0,
                      "time_us": t[0], "frames": frames, "pool_id": pool,
                      "compile_context": "N/A", "user_metadata": ""})

    W, A, K = 0x7F0000000000, 0x7F0100000000, 0x7F0200000000
    P1, P2, P3, M = 0x7F0300000000, 0x7F0400000000, 0x7F0500000000, 0x7F0600000000
    # Load weights: one segment, one block.
    e("segment_alloc", W, 2048 * MiB, load)
    e("alloc", W, 2048 * MiB, load)
    # The profile run: 512 MiB of activation kept across the run's layers, a 64 MiB
    # intermediate made and freed three times beside it (short-lived: workspace), then all
    # freed and the segment given back (`empty_cache`).
    e("segment_alloc", A, 576 * MiB, profile)
    e("alloc", A, 512 * MiB, profile)
    for _ in range(3):
        e("alloc", A + 512 * MiB, 64 * MiB, profile)
        e("free_requested", A + 512 * MiB, 64 * MiB, profile)
        e("free_completed", A + 512 * MiB, 64 * MiB, profile)
    e("free_requested", A, 512 * MiB, profile)
    e("free_completed", A, 512 * MiB, profile)
    e("segment_free", A, 576 * MiB, profile)
    # The KV cache made in one piece.
    e("segment_alloc", K, 4096 * MiB, kv)
    e("alloc", K, 4096 * MiB, kv)
    # Capture of size 8 into graph pool (1, 0): a 64 MiB segment; 40 MiB of intermediates
    # freed inside the capture, the 24 MiB output kept (the pool holds the memory).
    g1 = (1, 0)
    e("segment_alloc", P1, 64 * MiB, capture, g1)
    e("alloc", P1, 40 * MiB, capture, g1)
    e("alloc", P1 + 40 * MiB, 24 * MiB, capture, g1)
    e("free_requested", P1, 40 * MiB, capture, g1)
    e("free_completed", P1, 40 * MiB, capture, g1)
    # Capture of size 4 into graph pool (2, 0): a 32 MiB segment, 16 MiB kept.
    g2 = (2, 0)
    e("segment_alloc", P2, 32 * MiB, capture, g2)
    e("alloc", P2, 16 * MiB, capture, g2)
    # A capture that failed, in pool (3, 0): its 20 MiB freed and the pool released
    # (PyTorch 2.13 releases a failed capture's pool: `segment_free` of its segment).
    g3 = (3, 0)
    e("segment_alloc", P3, 20 * MiB, capture, g3)
    e("alloc", P3, 20 * MiB, capture, g3)
    e("free_requested", P3, 20 * MiB, capture, g3)
    e("free_completed", P3, 20 * MiB, capture, g3)
    e("segment_free", P3, 20 * MiB, capture, g3)
    # A user MemPool (`torch.cuda.MemPool()`: id (0, 1)): a 10 MiB buffer made in it.
    mp = (0, 1)
    e("segment_alloc", M, 10 * MiB, symm, mp)
    e("alloc", M, 10 * MiB, symm, mp)

    def seg(addr, total, pool, blocks, frames):
        live = sum(b[1] for b in blocks if b[2] == "active_allocated")
        out = []
        a = addr
        for size_, state in [(b[1], b[2]) for b in blocks]:
            out.append({"address": a, "size": size_,
                        "requested_size": size_ if state == "active_allocated" else 0,
                        "state": state, "frames": frames if state == "active_allocated" else []})
            a += size_
        return {"device": 0, "address": addr, "total_size": total, "allocated_size": live,
                "active_size": live, "requested_size": live, "stream": 0,
                "segment_type": "large", "segment_pool_id": pool, "is_expandable": False,
                "frames": frames, "blocks": out}

    segments = [
        seg(W, 2048 * MiB, (0, 0), [(W, 2048 * MiB, "active_allocated")], load),
        seg(K, 4096 * MiB, (0, 0), [(K, 4096 * MiB, "active_allocated")], kv),
        seg(P1, 64 * MiB, g1, [(P1, 40 * MiB, "inactive"),
                               (P1 + 40 * MiB, 24 * MiB, "active_allocated")], capture),
        seg(P2, 32 * MiB, g2, [(P2, 16 * MiB, "active_allocated"),
                               (P2 + 16 * MiB, 16 * MiB, "inactive")], capture),
        seg(M, 10 * MiB, mp, [(M, 10 * MiB, "active_allocated")], symm),
    ]
    snap = {"segments": segments, "device_traces": [trace],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "expandable_segments": False},
            "external_annotations": []}
    with open(os.path.join(out, "pools.pickle"), "wb") as f:
        f.write(pickle.dumps(snap, protocol=4))


def logs(out):
    """Startup logs in the servers' wording (the format strings docs/serving.md quotes), with
    the prefixes their loggers write: rank 0's and rank 1's lines interleaved."""
    vllm = [
        "INFO 12-06 10:00:00 [__init__.py:239] Automatically detected platform cuda.",
        "(VllmWorker rank=0 pid=101) INFO 12-06 10:00:05 [gpu_model_runner.py:1289] "
        "Model loading took 2.0000 GiB and 3.204526 seconds",
        "(VllmWorker rank=1 pid=102) INFO 12-06 10:00:05 [gpu_model_runner.py:1289] "
        "Model loading took 2.0625 GiB and 3.311112 seconds",
        "(VllmWorker rank=0 pid=101) DEBUG 12-06 10:00:09 [gpu_worker.py:298] Memory profiling "
        "takes 3.10 seconds. Total non KV cache memory: 2.75GiB; torch peak memory increase: "
        "0.50GiB; non-torch forward increase memory: 0.25GiB; weights memory: 2.00GiB.",
        "(VllmWorker rank=0 pid=101) INFO 12-06 10:00:12 [gpu_model_runner.py:6365] "
        "Estimated CUDA graph memory: 0.25 GiB total",
        "(VllmWorker rank=0 pid=101) INFO 12-06 10:00:12 [gpu_worker.py:466] "
        "Available KV cache memory: 4.00 GiB",
        "(VllmWorker rank=1 pid=102) INFO 12-06 10:00:12 [gpu_worker.py:466] "
        "Available KV cache memory: 3.90 GiB",
        "INFO 12-06 10:00:13 [kv_cache_utils.py:634] GPU KV cache size: 32,768 tokens",
        "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|##########| 2/2",
        "(VllmWorker rank=0 pid=101) INFO 12-06 10:00:15 [gpu_model_runner.py:2700] "
        "Graph capturing finished in 2 secs, took 0.09 GiB",
    ]
    sglang = [
        "[2026-12-06 10:00:00 TP0] Init torch distributed ends. mem usage=0.13 GB",
        "[2026-12-06 10:00:04 TP0] Load weight end. type=LlamaForCausalLM, "
        "dtype=torch.bfloat16, avail mem=5.37 GB, mem usage=2.50 GB.",
        "[2026-12-06 10:00:05 TP0] KV Cache is allocated. #tokens: 4096, K size: 0.25 GB, "
        "V size: 0.25 GB",
        "[2026-12-06 10:00:05 TP0] Memory pool end. avail mem=4.87 GB",
        "[2026-12-06 10:00:07 TP0] Capture cuda graph begin. This can take up to several "
        "minutes. avail mem=4.87 GB",
        "[2026-12-06 10:00:09 TP0] Capture cuda graph end. Time elapsed: 2.00 s. "
        "mem usage=0.06 GB. avail mem=4.81 GB.",
    ]
    for name, lines in (("pools.vllm.log", vllm), ("capture.sglang.log", sglang)):
        with open(os.path.join(out, name), "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
