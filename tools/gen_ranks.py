#!/usr/bin/env python3
"""Writes a small distributed job, one file per rank (stdlib only, deterministic), for the
ranks overview (`memtide DIR`, `memtide summary DIR`, `memtide check DIR`):

    python3 tools/gen_ranks.py --out tests/fixtures/ranks          # the committed 8-rank job
    python3 tools/gen_ranks.py --out /tmp/job64 --ranks 64 --entries 40000   # benchmark input

The committed job (8 ranks, any mix of formats):
  rank0.pickle … rank5.pickle  snapshots (tools/gen_snapshots.py's allocator and workload),
                               each rank with its own model size, so the peaks differ; rank 2
                               hosts the embedding (the highest peak); rank 4 has a capped
                               device and ends in an OOM;
  node1_worker.pt.trace.json   a Kineto trace whose `distributedInfo.rank` is 6 (its name
                               gives no rank);
  rank7.pickle                 a snapshot cut short (unreadable: the reader's error is listed);
  README.md                    not a trace (skipped with a note).

With `--ranks N` the job is N snapshots `rankK.pickle` of about `--entries` trace entries each
(for the benchmark; no Kineto, OOM or broken file). The figures are memtide's to compute:
the tests compare the overview with each file's own `memtide summary --json`.
"""
import argparse
import json
import os
import pickle
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_snapshots as gs  # noqa: E402

MB = 1024 * 1024


def rank_snapshot(rank, steps, layers, cap=None, embedding=0, seed_base=1000):
    """One rank's snapshot dict: a workload of `layers` layers over `steps` steps on
    cuda:0, plus an `embedding` table of that many bytes allocated first."""
    g = gs.Gen(seed_base + rank)
    a = gs.Allocator(g, 0, 0x7F0000000000 + rank * (1 << 36), cap=cap)
    anns = []
    if embedding:
        a.alloc(embedding, g.stack("param"))
    gs.workload(g, a, steps, layers, anns)
    return gs.snapshot([(a, anns)])


def kineto_rank(rank, world, steps=3, seed=77):
    """A Kineto trace with `distributedInfo` and [memory] events over ProfilerStep spans."""
    rng = random.Random(seed + rank)
    ev = []
    t = 1000.0
    total = 0
    reserved = 0
    addr = 0x1000
    live = []

    def mem(delta, a):
        nonlocal total, reserved, t
        total += delta
        reserved = max(reserved, (total + 2 * MB - 1) // (2 * MB) * 2 * MB)
        t += rng.randrange(1, 9)
        ev.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
                   "pid": 7, "tid": 1, "ts": t,
                   "args": {"Total Reserved": reserved, "Total Allocated": total,
                            "Bytes": delta, "Device Id": 0, "Device Type": 1, "Addr": a}})

    for _ in range(4):  # parameters
        n = rng.randrange(1, 4) * MB
        mem(n, addr)
        addr += n
    for step in range(steps):
        start = t + 0.5
        for _ in range(6):  # activations
            n = rng.randrange(256, 2048) * 1024
            mem(n, addr)
            live.append((addr, n))
            addr += n
        while live:
            a_, n = live.pop()
            mem(-n, a_)
        ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % step,
                   "pid": 7, "tid": 1, "ts": start, "dur": t - start + 0.5, "args": {}})
    return {"schemaVersion": 1,
            "deviceProperties": [{"id": 0, "name": "NVIDIA H100",
                                  "totalGlobalMem": 85899345920}],
            "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": world},
            "displayTimeUnit": "ms",
            "baseTimeNanoseconds": 1790857026000000000,
            "traceEvents": ev}


def write_pickle(path, snap):
    with open(path, "wb") as f:
        pickle.dump(snap, f, protocol=4)


def committed(out):
    os.makedirs(out, exist_ok=True)
    world = 8
    # (layers, steps, cap, embedding bytes) per rank: uneven stages.
    plan = {
        0: (6, 3, None, 0),
        1: (8, 3, None, 0),
        2: (6, 3, None, 64 * MB),  # hosts the embedding: the worst rank
        3: (5, 3, None, 0),
        4: (10, 3, 120 * MB, 0),  # a capped device: ends in an OOM
        5: (7, 3, None, 0),
    }
    for r, (layers, steps, cap, emb) in plan.items():
        write_pickle(os.path.join(out, "rank%d.pickle" % r),
                     rank_snapshot(r, steps, layers, cap=cap, embedding=emb))
    with open(os.path.join(out, "node1_worker.pt.trace.json"), "w") as f:
        json.dump(kineto_rank(6, world), f, indent=None, separators=(",", ":"))
    # Rank 7's dump was cut short (the job died while writing it).
    body = pickle.dumps(rank_snapshot(7, 3, 6), protocol=4)
    with open(os.path.join(out, "rank7.pickle"), "wb") as f:
        f.write(body[: len(body) // 2])
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write("An 8-rank job written by tools/gen_ranks.py (see its docstring).\n"
                "rank7.pickle is cut short on purpose; this file is not a trace.\n")


def bench(out, ranks, entries):
    """`ranks` snapshots of about `entries` trace entries each, peaks differing by rank."""
    os.makedirs(out, exist_ok=True)
    # gen_snapshots' workload writes ~ (6 * layers + 2) entries per step, plus params.
    layers = 40
    steps = max(1, entries // (6 * layers + 2))
    for r in range(ranks):
        snap = rank_snapshot(r, steps, layers + (r % 5), embedding=(r % 7) * MB)
        write_pickle(os.path.join(out, "rank%d.pickle" % r), snap)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--ranks", type=int, help="write N benchmark snapshots instead")
    ap.add_argument("--entries", type=int, default=40000)
    a = ap.parse_args()
    if a.ranks:
        bench(a.out, a.ranks, a.entries)
    else:
        committed(a.out)


if __name__ == "__main__":
    main()
