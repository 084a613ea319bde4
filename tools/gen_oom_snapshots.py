#!/usr/bin/env python3
"""Writes the OOM fixture snapshots of tests/fixtures/oom/ (stdlib only, deterministic).

    python3 tools/gen_oom_snapshots.py --out tests/fixtures/oom

Each scenario is scripted by hand on a tiny model of PyTorch's caching allocator (explicit
addresses; 512 B rounding; one block per alloc, placed by the script), ends in an `oom` entry
as `DeviceCachingAllocator::malloc` records it (`device_free` = what the driver had free,
`size` = the rounded request), and is dumped the way `_dump_snapshot` writes it: `segments`
(blocks tiling each segment, free gaps as `inactive` blocks), `device_traces`,
`allocator_settings`. Beside each `.pickle` a `.truth.json` holds the figures computed here,
from this script's own state (not by memtide): the OOM's request, driver free, allocated (sum
of the live allocations' block sizes — each request rounded to 512 B, as
`memory_allocated()` counts it and the timeline shows it; no scenario leaves a remainder
that PyTorch's `should_split` would keep with a block), reserved, free in the
reserve, the largest free block of the pool the request needs, the memory outside the
allocator for the capacity the test passes, the verdict a person gives, and
`allocator_at_end` computed from the dumped `segments`.
"""

import argparse
import json
import os
import pickle

MiB = 1 << 20
GiB = 1 << 30
T0 = 1_700_000_000_000_000


def round_size(n):
    return 512 if n < 512 else (n + 511) // 512 * 512


class Sim:
    def __init__(self, capacity, outside, device=0):
        self.capacity = capacity
        self.outside = outside
        self.device = device
        self.segs = {}  # start -> dict(size, stream, type, expandable)
        self.blocks = {}  # addr -> (size, requested)
        self.trace = []
        self.t = T0

    def _entry(self, **kw):
        self.t += 10
        kw.setdefault("stream", 0)
        kw["time_us"] = self.t
        kw["frames"] = [{"filename": "train.py", "line": 10 + len(self.trace), "name": "step"}]
        self.trace.append(kw)

    def reserved(self):
        return sum(s["size"] for s in self.segs.values())

    def device_free(self):
        return self.capacity - self.outside - self.reserved()

    def segment(self, addr, size, kind="large", record=True, expandable=False):
        if expandable:
            # Grows the expandable segment that ends at addr, or starts one.
            prev = [a for a, s in self.segs.items() if a + s["size"] == addr and s["expandable"]]
            if prev:
                self.segs[prev[0]]["size"] += size
            else:
                self.segs[addr] = dict(size=size, type=kind, expandable=True)
            if record:
                self._entry(action="segment_map", addr=addr, size=size)
        else:
            self.segs[addr] = dict(size=size, type=kind, expandable=False)
            if record:
                self._entry(action="segment_alloc", addr=addr, size=size)

    def alloc(self, addr, requested, record=True):
        self.blocks[addr] = (round_size(requested), requested)
        if record:
            self._entry(action="alloc", addr=addr, size=requested)

    def free(self, addr):
        size, req = self.blocks.pop(addr)
        self._entry(action="free_requested", addr=addr, size=req)
        self._entry(action="free_completed", addr=addr, size=req)

    def oom(self, requested):
        rounded = round_size(requested)
        self._entry(action="oom", device_free=self.device_free(), size=rounded)
        return len(self.trace) - 1

    def pool_free(self, kind):
        free, largest = 0, 0
        for s in self.segments():
            if s["segment_type"] != kind:
                continue
            for b in s["blocks"]:
                if b["state"] == "inactive":
                    free += b["size"]
                    largest = max(largest, b["size"])
        return free, largest

    def segments(self):
        out = []
        for start in sorted(self.segs):
            s = self.segs[start]
            end = start + s["size"]
            blocks, cur = [], start
            for a in sorted(b for b in self.blocks if start <= b < end):
                size, req = self.blocks[a]
                if a > cur:
                    blocks.append(dict(address=cur, size=a - cur, requested_size=0, state="inactive", frames=[]))
                blocks.append(dict(address=a, size=size, requested_size=req, state="active_allocated",
                                   frames=[{"filename": "model.py", "line": 7, "name": "forward"}]))
                cur = a + size
            if cur < end:
                blocks.append(dict(address=cur, size=end - cur, requested_size=0, state="inactive", frames=[]))
            alloc = sum(b["size"] for b in blocks if b["state"] != "inactive")
            out.append(dict(device=self.device, address=start, total_size=s["size"], allocated_size=alloc,
                            active_size=alloc,
                            requested_size=sum(b["requested_size"] for b in blocks if b["state"] != "inactive"),
                            stream=0, segment_type=s["type"], segment_pool_id=(0, 0),
                            is_expandable=s["expandable"], frames=[], blocks=blocks))
        return out

    def dump(self):
        return {
            "segments": self.segments(),
            "device_traces": [self.trace],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1},
            "external_annotations": [],
        }


def at_end(segs):
    r = dict(segments=len(segs), reserved=0, allocated=0, requested=0, free_in_reserve=0, largest_free_block=0)
    for s in segs:
        r["reserved"] += s["total_size"]
        for b in s["blocks"]:
            if b["state"] == "active_allocated":
                r["allocated"] += b["size"]
                r["requested"] += b["requested_size"]
            elif b["state"] == "inactive":
                r["free_in_reserve"] += b["size"]
                r["largest_free_block"] = max(r["largest_free_block"], b["size"])
    return r


def truth(sim, idx, requested, verdict, doc):
    rounded = round_size(requested)
    kind = "small" if rounded <= MiB else "large"
    pool_free, largest = sim.pool_free(kind)
    snap = sim.dump()
    return {
        "doc": doc,
        "capacity": sim.capacity,
        "ooms": [{
            "index": idx,
            "requested_bytes": rounded,
            "rounded_bytes": rounded,
            "pool": kind,
            "device_free": sim.device_free(),
            "allocated": sum(size for size, _ in sim.blocks.values()),
            "reserved": sim.reserved(),
            "free_in_reserve": at_end(snap["segments"])["free_in_reserve"],
            "largest_free_block": largest,
            "pool_free": pool_free,
            "capacity": sim.capacity,
            "outside_allocator": sim.outside,
            "verdict": verdict,
        }],
        "allocator_at_end": at_end(snap["segments"]),
    }


def live_tensors():
    s = Sim(8 * GiB, 512 * MiB)
    base = 0x7F00_0000_0000
    # Weights made before the history began: segment and block known from the dump only.
    s.segment(base, 2048 * MiB, record=False)
    s.alloc(base, 2048 * MiB - 100, record=False)
    for i in (1, 2):
        a = base + i * 2048 * MiB
        s.segment(a, 2048 * MiB)
        s.alloc(a, 2048 * MiB - 100)
    # A small-pool segment with one small tensor: its free bytes cannot serve a large request.
    small = base + 0x1000_0000_00
    s.segment(small, 2 * MiB, kind="small")
    s.alloc(small, 4000)
    s.alloc(small + 4096, 8192)
    s.free(small + 4096)
    idx = s.oom(2048 * MiB)
    return s, truth(s, idx, 2048 * MiB, "live_tensors",
                    "three 2 GiB tensors fill 6 GiB of segments; 512 MiB outside; a 2 GiB request needs a new segment, the driver has 1.5 GiB")


def fragmentation():
    s = Sim(8 * GiB, 512 * MiB)
    base = 0x7E00_0000_0000
    s.segment(base, 7168 * MiB)
    for i in range(14):
        s.alloc(base + i * 512 * MiB, 512 * MiB)
    for i in range(1, 14, 2):
        s.free(base + i * 512 * MiB)
    idx = s.oom(1024 * MiB)
    return s, truth(s, idx, 1024 * MiB, "fragmentation",
                    "a 7 GiB segment, every other 512 MiB block freed: 3.5 GiB free, largest 512 MiB; 1 GiB requested, the driver has 512 MiB")


def outside_allocator():
    s = Sim(8 * GiB, 4096 * MiB)
    base = 0x7D00_0000_0000
    # Expandable segments: one segment grows by three maps.
    for i in range(3):
        s.segment(base + i * 1024 * MiB, 1024 * MiB, expandable=True)
        s.alloc(base + i * 1024 * MiB, 1024 * MiB)
    idx = s.oom(2048 * MiB)
    return s, truth(s, idx, 2048 * MiB, "outside_allocator",
                    "4 GiB of the 8 GiB device held by another process; 3 GiB reserved (one expandable segment, full); 2 GiB requested, the driver has 1 GiB")


def request_too_large():
    s = Sim(8 * GiB, 512 * MiB)
    base = 0x7C00_0000_0000
    s.segment(base, 1024 * MiB)
    s.alloc(base, 1024 * MiB)
    idx = s.oom(16 * GiB)
    return s, truth(s, idx, 16 * GiB, "request_too_large",
                    "a single 16 GiB request on an 8 GiB device")


def second_device():
    """Two GPUs of one process: cuda:0 trains without trouble, cuda:1 runs out of memory (the
    live-tensors scenario on it). The snapshot lists cuda:0 first, as `_dump_snapshot` does."""
    calm = Sim(8 * GiB, 512 * MiB, device=0)
    base = 0x7B00_0000_0000
    calm.segment(base, 1024 * MiB)
    calm.alloc(base, 256 * MiB)
    calm.alloc(base + 256 * MiB, 512 * MiB)
    calm.free(base + 256 * MiB)
    s, t = live_tensors()
    s.device = 1
    snap = s.dump()
    snap["segments"] = calm.segments() + snap["segments"]
    snap["device_traces"] = [calm.trace, s.trace]
    t["doc"] = "cuda:0 holds 256 MiB and never runs short; on cuda:1 " + t["doc"]
    t["ooms"][0]["device"] = "cuda:1"
    # The dump's own figures of the device that ran out (the first device's are its own).
    t["allocator_at_end"] = at_end(s.segments())
    return snap, t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for name, f in [("oom_live", live_tensors), ("oom_fragmented", fragmentation),
                    ("oom_outside", outside_allocator), ("oom_too_large", request_too_large),
                    ("oom_second_device", second_device)]:
        snap, t = f()
        if isinstance(snap, Sim):
            snap = snap.dump()
        with open(os.path.join(a.out, name + ".pickle"), "wb") as fh:
            pickle.dump(snap, fh, protocol=4)
        with open(os.path.join(a.out, name + ".truth.json"), "w") as fh:
            json.dump(t, fh, indent=1, sort_keys=True)
            fh.write("\n")


if __name__ == "__main__":
    main()
