#!/usr/bin/env python3
"""Writes tests/fixtures/oom/truncated_history.pickle and its .truth.json (stdlib only,
deterministic): a run recorded allocator-faithfully by tools/cca_model.py whose trace is cut as
`_record_memory_history(max_entries=N)`'s ring buffer cuts it (the last N entries kept, the
final `segments` whole), with the true peak of the full run it was cut from.

    python3 tools/gen_truncated.py --out tests/fixtures/oom

The run (defaults, 8 GiB, one stream): 1024 MiB of weights; step 0 builds a 3072 MiB
temporary (the run's peak: 4096 MiB live), frees it; steps 1-5 each allocate four 256 MiB
activations and free them (12 entries a step). The ring buffer keeps the last 24 entries:
steps 4 and 5; the weights and the 3072 MiB segment predate it. The recorded peak is 2048 MiB (weights
+ four activations); the true peak, 4096 MiB, lies before the recording, below the reserve at
its start (1024 + 3072 MiB: the temporary's segment stayed cached).
"""

import argparse
import json
import os
import pickle

from cca_model import Allocator, Conf, GiB, MiB

T0 = 1_800_000_000_000_000
KEEP = 24
SETTINGS = {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1, "expandable_segments": False}


def frames(name, line):
    return [{"filename": "/home/alice/train.py", "line": line, "name": name}]


def run():
    trace = []
    a = Allocator(Conf(""), 8 * GiB, trace=trace)
    live = {}
    peak = 0
    steps = []

    def note():
        nonlocal peak
        peak = max(peak, sum(b.requested for b in live.values()))

    def alloc(size):
        b = a.malloc(size)
        live[b.addr] = b
        note()
        return b

    def free(b):
        a.free_(live.pop(b.addr))

    alloc(1024 * MiB)
    for k in range(6):
        start = len(trace)
        if k == 0:
            free(alloc(3072 * MiB))
        else:
            xs = [alloc(256 * MiB) for _ in range(4)]
            for x in xs:
                free(x)
        steps.append((k, start, len(trace)))
    for i, e in enumerate(trace):
        e["time_us"] = T0 + 10 * i
        e["stream"] = 0
        e["frames"] = frames("step", 20 + i % 7)
    return a, trace, steps, peak


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out = ap.parse_args().out
    a, trace, steps, peak = run()
    kept = trace[-KEEP:]
    first = len(trace) - KEEP
    anns = []
    for k, s, e in steps:
        if s >= first:
            anns.append({"name": f"ProfilerStep#{k}", "stage": "START", "time_us": T0 + 10 * s, "device": 0})
            anns.append({"name": f"ProfilerStep#{k}", "stage": "END", "time_us": T0 + 10 * (e - 1), "device": 0})
    segments = a.segments_dump(lambda b: frames("step", 11))
    snap = {"segments": segments, "device_traces": [kept], "allocator_settings": SETTINGS,
            "external_annotations": anns}
    truth = {
        "doc": "tools/gen_truncated.py: a run recorded by tools/cca_model.py, its trace cut to the last entries",
        "entries_full": len(trace),
        "entries_kept": KEEP,
        "true_peak": peak,
        "reserved_at_cut": 1024 * MiB + 3072 * MiB,
        "recorded_peak": 2048 * MiB,
        "step_entries": [e - s for k, s, e in steps],
    }
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "truncated_history.pickle"), "wb") as f:
        pickle.dump(snap, f, protocol=4)
    with open(os.path.join(out, "truncated_history.truth.json"), "w") as f:
        json.dump(truth, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
