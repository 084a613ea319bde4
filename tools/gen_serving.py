#!/usr/bin/env python3
"""Writes tests/fixtures/serving/capture.kineto.json (stdlib only, deterministic): a profiler
trace of two CUDA-graph captures on an 8 GiB device, with the runtime calls that open and
close each stream capture as Kineto records them; and compiled.kineto.json: a server's
trace of 600 calls of two compiled graphs (`## Call CompiledFxGraph … ##` annotations),
the repeated phases `summary` folds. Their figures by hand in
tests/fixtures/serving/README.md.

    python3 tools/gen_serving.py --out tests/fixtures/serving
"""

import argparse
import json
import os

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


if __name__ == "__main__":
    main()
