#!/usr/bin/env python3
"""Writes tests/fixtures/serving/capture.kineto.json (stdlib only, deterministic): a profiler
trace of two CUDA-graph captures on an 8 GiB device, with the runtime calls that open and
close each stream capture as Kineto records them, and its figures by hand in
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


if __name__ == "__main__":
    main()
