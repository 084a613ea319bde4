#!/usr/bin/env python3
"""Writes tests/fixtures/oom/oom_expandable_saves.pickle, oom_horizon.pickle,
oom_split_in_use.pickle, oom_leak.pickle and their .truth.json (stdlib only,
deterministic): a run recorded allocator-faithfully by tools/cca_model.py (PyTorch's rules,
defaults) that dies of fragmentation an expandable segment would have avoided, and the
figures of replaying its recording under other settings with that same independent model.

    python3 tools/gen_oom_faithful.py --out tests/fixtures/oom

The run, on an 8 GiB device whose CUDA context and libraries hold 512 MiB outside the
allocator (so the allocator can reserve at most 7680 MiB):
  W    2048 MiB of weights (kept)                      -> a 2048 MiB segment
  loss 512 B (kept)                                    -> a 2 MiB small-pool segment
  A    a 4096 MiB activation, freed                    -> a 4096 MiB segment, cached
  X1, X2, X3  1200 MiB each from the cached 4096 MiB block (split), then X1 and X3 freed:
       free 1200 + 1696 MiB, X2 pins the middle
  Y    2000 MiB: no free block that large, a new 2000 MiB segment would make 8146 MiB >
       7680 MiB, nothing unsplit to release: OutOfMemoryError, the driver reports
       7680 - 6146 = 1534 MiB free.
Under expandable segments the same requests tile one growing segment (20 MiB pages); Y
extends the free 1712 MiB tail by 300 MiB of pages: the reserve peaks at 6462 MiB.

oom_horizon.pickle: the same device, two steps annotated as `_record_memory_history` users
do (`record_function("step0")`, `"forward"`), where a fix serves the failed request but leaves
less room than the step already needed:
  W 2048 MiB and 512 B kept; step0/forward: A 4096 MiB and Z 1000 MiB, both freed (cached)
  step1/forward: X1, X2, X3 1200 MiB each split from A's cached block, X1 and X3 freed;
  Y 2000 MiB: no block that large; releasing Z's unsplit segment leaves 6146 + 2000 > 7680:
  OutOfMemoryError, driver free 1534 MiB.
Replayed under 7680 MiB, expandable segments and max_split_size_mb:128 both serve Y, with
7680 - 7162 = 518 and 7680 - 7146 = 534 MiB left: less than the 4096 MiB the same phase of
step0 allocated at once, so the rest of step1 will likely run out again.
"""

import argparse
import json
import os
import pickle

from cca_model import Allocator, Conf, GiB, MiB, Oom, replay

T0 = 1_800_000_000_000_000
CAPACITY = 8 * GiB
OUTSIDE = 512 * MiB
SETTINGS = {
    "PYTORCH_CUDA_ALLOC_CONF": "",
    "max_split_size": -1,
    "garbage_collection_threshold": 0.0,
    "expandable_segments": False,
    "roundup_power2_divisions": {str(1 << k): 0 for k in range(16)},
}
REPLAYS = ["", "expandable_segments:True", "max_split_size_mb:128"]


def frames_of(name, line):
    return [{"filename": "/home/alice/train.py", "line": line, "name": name},
            {"filename": "/usr/lib/python3.11/site-packages/torch/nn/modules/module.py",
             "line": 1527, "name": "_call_impl"}]


class Run:
    """One run recorded by the model allocator: the trace entries it records, what each block
    is (name and line), and the `record_function` annotations around them."""

    def __init__(self, conf=""):
        self.trace = []
        self.a = Allocator(Conf(conf), CAPACITY - OUTSIDE, trace=self.trace)
        self.names = {}
        self.marks = []

    def alloc(self, name, size, line):
        b = self.a.malloc(size)
        self.names[b.addr] = (name, line)
        return b

    def free(self, b):
        self.a.free_(b)

    def mark(self, name, stage):
        # An annotation sits between the entries around it (entries are 100 µs apart).
        self.marks.append({"name": name, "stage": stage, "device": 0,
                           "time_us": T0 + 100 * len(self.trace) - 50})

    def alloc_or_oom(self, name, size, line):
        """The block, or None and the OOM's facts after recording PyTorch's `oom` entry."""
        try:
            return self.alloc(name, size, line), None
        except Oom as x:
            self.trace.append(dict(action="oom", addr=x.device_free, size=x.size,
                                   device_free=x.device_free))
            return None, {"index": len(self.trace) - 1, "request": x.size,
                          "device_free": x.device_free, "reserved": self.a.reserved,
                          "allocated": self.a.allocated()}

    def oom(self, name, size, line):
        """Asks for `size`, which must run out of memory: the OOM's facts."""
        _, facts = self.alloc_or_oom(name, size, line)
        assert facts is not None, f"{name} should run out of memory"
        return facts

    def finish(self, frames_by_block=False):
        """The trace entries (times, stream, frames: each block's own name and line, else
        `step` at the entry's position) and the final segments."""
        segments = self.a.segments_dump(lambda b: frames_of(*self.names.get(b.addr, ("?", 0))))
        for i, e in enumerate(self.trace):
            e["time_us"] = T0 + 100 * i
            e["stream"] = 0
            at = ("step", 10 + i)
            e["frames"] = frames_of(*(self.names.get(e["addr"], at) if frames_by_block else at))
        return self.trace, segments


def record():
    """The recorded run: its trace entries, final segments and OOM facts."""
    r = Run()
    r.alloc("weights", 2048 * MiB, 12)
    r.alloc("loss", 512, 40)
    r.free(r.alloc("activation", 4096 * MiB, 20))
    xs = [r.alloc(f"x{i}", 1200 * MiB, 30 + i) for i in (1, 2, 3)]
    r.free(xs[0])
    r.free(xs[2])
    oom = r.oom("y", 2000 * MiB, 35)
    large = [b for b in r.a.free["large"]]
    oom["pool_free"] = sum(b.size for b in large)
    oom["largest_free_block"] = max(b.size for b in large)
    oom["free_in_reserve"] = sum(b.size for p in r.a.free.values() for b in p)
    trace, segments = r.finish()
    return trace, segments, oom


def record_horizon():
    """The two-step run whose fixes leave less room than the step needs: its trace entries,
    final segments, annotations and OOM facts."""
    r = Run()
    r.alloc("weights", 2048 * MiB, 12)
    r.alloc("loss", 512, 40)
    r.mark("step0", "START")
    r.mark("forward", "START")
    act = r.alloc("activation", 4096 * MiB, 20)
    r.free(r.alloc("logits", 1000 * MiB, 21))
    r.free(act)
    r.mark("forward", "END")
    r.mark("step0", "END")
    r.mark("step1", "START")
    r.mark("forward", "START")
    xs = [r.alloc(f"x{i}", 1200 * MiB, 30 + i) for i in (1, 2, 3)]
    r.free(xs[0])
    r.free(xs[2])
    oom = r.oom("y", 2000 * MiB, 35)
    oom["largest_earlier_in_phase"] = 4096 * MiB
    trace, segments = r.finish()
    return trace, segments, r.marks, oom


def record_split_in_use():
    """A run already under max_split_size_mb:128 that still dies of fragmentation: fifty
    100 MiB blocks (each a segment of its own), freed; fifty 60 MiB tensors each split one
    (a request below max_split_size takes no larger block, so each leaves 40 MiB free); then
    3000 MiB: no block, 5000 + 3000 > 7680, nothing unsplit to release: OOM with 2000 MiB free
    in 40 MiB pieces and 2680 MiB on the driver. Expandable segments on top of the setting in
    use tile one growing segment and serve it (reserve 6000 MiB)."""
    r = Run(IN_USE)
    for b in [r.alloc("buffer", 100 * MiB, 50) for _ in range(50)]:
        r.free(b)
    for _ in range(50):
        r.alloc("hidden", 60 * MiB, 51)
    oom = r.oom("gather", 3000 * MiB, 52)
    trace, segments = r.finish(frames_by_block=True)
    return trace, segments, [], oom


IN_USE = "max_split_size_mb:128"


def record_leak():
    """A leak that fills the card: W 2048 MiB kept; each annotated step (`stepK`, `forward`)
    allocates a 3000 MiB activation, keeps a 256 MiB tensor it should have freed, and frees
    the activation. The reserve grows 256 MiB a step (the activation's segment is reused):
    2048 + 3000 + 10 x 256 = 7608 MiB after ten leaks; the eleventh needs a new 256 MiB segment
    while the activation is live: 7864 > 7680, nothing to release: OOM 184 MiB short, the
    driver reporting 72 MiB free. No allocator setting can serve it: the live tensors, grown by
    2560 MiB of leaks, are the cause."""
    r = Run()
    r.alloc("weights", 2048 * MiB, 12)
    oom = None
    for k in range(12):
        r.mark(f"step{k}", "START")
        r.mark("forward", "START")
        act = r.alloc("activation", 3000 * MiB, 20)
        _, oom = r.alloc_or_oom("cached_logits", 256 * MiB, 21)
        if oom is not None:
            oom["leaked_steps"] = k
            break
        r.free(act)
        r.mark("forward", "END")
        r.mark(f"step{k}", "END")
    assert oom is not None, "the leak should run out of memory"
    trace, segments = r.finish(frames_by_block=True)
    return trace, segments, r.marks, oom


def write(out, name, trace, segments, marks, oom, settings=None, replays=None):
    """The snapshot and its truth: the recording replayed by the model under the ceiling the
    run had (its reserve plus the driver's free bytes at the OOM)."""
    snap = {"segments": segments, "device_traces": [trace],
            "allocator_settings": settings or SETTINGS, "external_annotations": marks}
    ceiling = oom["reserved"] + oom["device_free"]
    truth = {
        "doc": "tools/gen_oom_faithful.py: recorded and replayed by tools/cca_model.py, an allocator model independent of memtide's",
        "capacity": CAPACITY,
        "outside_allocator": OUTSIDE,
        "ceiling": ceiling,
        "oom": oom,
        "replays": {conf or "defaults": replay(trace, conf, ceiling)
                    for conf in (replays or REPLAYS)},
    }
    with open(os.path.join(out, f"{name}.pickle"), "wb") as f:
        pickle.dump(snap, f, protocol=4)
    with open(os.path.join(out, f"{name}.truth.json"), "w") as f:
        json.dump(truth, f, indent=1, sort_keys=True)
        f.write("\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out = ap.parse_args().out
    os.makedirs(out, exist_ok=True)
    trace, segments, oom = record()
    write(out, "oom_expandable_saves", trace, segments, [], oom)
    write(out, "oom_horizon", *record_horizon())
    write(out, "oom_leak", *record_leak())
    in_use = dict(SETTINGS, PYTORCH_CUDA_ALLOC_CONF=IN_USE, max_split_size=128 * MiB)
    write(out, "oom_split_in_use", *record_split_in_use(), settings=in_use,
          replays=[IN_USE, IN_USE + ",expandable_segments:True"])


if __name__ == "__main__":
    main()
