#!/usr/bin/env python3
"""Generates PyTorch-memory-snapshot-shaped fixtures with plain `pickle` (no torch) and,
beside each, a `.truth.json` computed by an independent brute-force replay (MemoryViz
convention).

Shape, as `torch.cuda.memory._dump_snapshot()` writes it: {"segments", "device_traces",
"allocator_settings", "external_annotations"}; frame dicts are shared objects, and an
alloc's frame list is the same list object as its block's in `segments` (pickle memo).

Usage:
  tools/gen_snapshots.py --out tests/fixtures/snapshot           # the committed fixtures
  tools/gen_snapshots.py --big /tmp/big.pickle --entries 1000000 # benchmark input (no truth)
  tools/gen_snapshots.py --big /tmp/big.json --entries 12000     # the same as JSON (~60 MB)

MemoryViz convention used by the truth replay (every trace entry is one position):
  alloc opens a block; free_completed closes the block at that addr;
  a free_completed with no open block is an unmatched free: live from before position 0
  until (excluding) its own position; active_allocated blocks in `segments` whose address
  is not open at the end are ghosts, live at every position.
  A block counts its block size, what torch.cuda.memory_allocated() counts (pinned host
  memory counts the entry's 'size'): an alloc entry's 'size' is the request (orig_size in
  PyTorch's record_trace(TraceEntry::ALLOC, ...)); allocated_bytes grows by block->size
  (alloc_found_block, c10/cuda/CUDACachingAllocator.cpp). block = round_size(size) (512 B
  steps, min 512 B; roundup_power2_divisions from allocator_settings), except that a
  large-pool request (rounded > 1 MiB) with expandable_segments off, in a segment not
  mapped by segment_map / not is_expandable, whose address starts a free run (the
  segment's start or the end of a live block) of `run` bytes (to the next live block or the
  segment's end) gets the whole run when should_split refuses (run - rounded <= 1 MiB, or
  rounded >= max_split_size). Segments: the final ones (boundaries kept) with the trace's
  segment events undone, then replayed. An alloc still open at the end whose address holds
  an active final block of the same requested_size: that block's size. Ghosts: their
  block's size; unmatched frees: round_size(size).
  bytes(p) = sum of sizes live after applying entry p; the initial state (p = -1: before
  the first entry, everything live from the start) is a candidate too and comes first;
  peak = max, at the first instant reaching it ("start" or the entry index).
  reserved: the measure of the union of mapped address ranges. Initial ranges = the final
  segments' [address, address + total_size) with the trace's segment events undone newest
  first (segment_alloc/map removes its range, segment_free/unmap adds it back); then
  segment_alloc/map adds its range and segment_free/unmap removes whatever it overlaps;
  reserved_peak = max(initial, running), first instant reaching it.
  A device without history (no entries) is one instant, the dump: entry #0, where its
  active_allocated blocks (their block size; host memory: requested_size) and its
  segments appear.
"""
import argparse
import gzip
import json
import os
import pickle
import random

KB = 1024
MB = 1024 * 1024
SMALL_SEG = 2 * MB
LARGE_SEG = 20 * MB

PY = "/usr/local/lib/python3.11/site-packages/torch"


class FramePool:
    """Shared frame dict objects, as PyTorch dedups them."""

    def __init__(self):
        self.cache = {}

    def f(self, filename, line, name):
        k = (filename, line, name)
        d = self.cache.get(k)
        if d is None:
            d = {"filename": filename, "line": line, "name": name}
            self.cache[k] = d
        return d


class Gen:
    def __init__(self, seed, frames_extra=0):
        self.rng = random.Random(seed)
        self.fp = FramePool()
        self.frames_extra = frames_extra
        self.t = 1_795_934_490_000_000 + self.rng.randrange(10**6)

    def stack(self, kind, layer=0):
        f = self.fp.f
        base = [f("/workspace/train.py", 600, "<module>"), f("/workspace/train.py", 500, "main")]
        base += [f("/workspace/deep.py", 10 + i, "wrapper%d" % i) for i in range(self.frames_extra)]
        if kind == "param":
            s = [f("??", 0, "aten::empty"), f(PY + "/nn/modules/linear.py", 109, "__init__"),
                 f("/workspace/train.py", 70, "__init__")]
        elif kind == "opt":
            s = [f("??", 0, "aten::zeros_like"), f(PY + "/optim/adam.py", 170, "_init_group"),
                 f(PY + "/optim/adam.py", 230, "step"), f(PY + "/optim/optimizer.py", 480, "wrapper")]
        elif kind == "optstep":
            s = [f("??", 0, "aten::mul"), f(PY + "/optim/adam.py", 400, "_single_tensor_adam"),
                 f(PY + "/optim/adam.py", 230, "step")]
        elif kind == "input":
            s = [f("??", 0, "aten::randn"), f("/workspace/train.py", 520, "make_batch")]
        elif kind == "act":
            s = [f("??", 0, "aten::addmm"), f(PY + "/nn/functional.py", 1777 + layer, "relu"),
                 f("/workspace/train.py", 40, "forward"),
                 f(PY + "/nn/modules/module.py", 1750, "_call_impl")]
        elif kind == "grad":
            s = [f("??", 0, "autograd::engine::evaluate_function: AddmmBackward0"),
                 f(PY + "/autograd/graph.py", 1113, "_engine_run_backward"),
                 f(PY + "/_tensor.py", 620, "backward")]
        else:  # temp
            s = [f("??", 0, "aten::empty"), f(PY + "/nn/functional.py", 2900 + layer, "softmax"),
                 f("/workspace/train.py", 41, "forward")]
        return s + base[::-1]


class Allocator:
    """A small caching-allocator emulation: 512-byte rounding, small/large segments,
    exact-size reuse of freed blocks, segment_free of empty segments on empty_cache()."""

    def __init__(self, g, device, base_addr, cap=None):
        self.g = g
        self.device = device
        self.next_addr = base_addr
        self.segs = {}  # base -> dict(size, live=count, blocks={addr:[size,req,state,frames]}, pool)
        self.free = {}  # rounded size -> list of (addr, seg_base)
        self.trace = []
        self.cap = cap
        self.reserved = 0
        self.owner = {}  # live block addr -> segment base

    def now(self):
        self.g.t += self.g.rng.randrange(1, 40)
        return self.g.t

    def entry(self, action, addr, size, frames):
        e = {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": self.now(),
             "compile_context": "N/A", "user_metadata": ""}
        if frames is not None:
            e["frames"] = frames
        self.trace.append(e)
        return e

    def alloc(self, req, frames):
        size = max(512, (req + 511) // 512 * 512)
        lst = self.free.get(size)
        while lst:
            addr, base = lst.pop()
            if base in self.segs:
                break
        else:
            segsize = SMALL_SEG if size <= MB else max(LARGE_SEG, (size + 2 * MB - 1) // (2 * MB) * 2 * MB)
            if self.cap is not None and self.reserved + segsize > self.cap:
                self.empty_cache()
                if self.reserved + segsize > self.cap:
                    e = {"action": "oom", "device_free": self.cap - self.reserved, "size": req,
                         "stream": 0, "time_us": self.now(), "compile_context": "N/A",
                         "user_metadata": "", "frames": frames}
                    self.trace.append(e)
                    return None
            base = self.next_addr
            self.next_addr += segsize + 64 * MB
            self.segs[base] = {"size": segsize, "live": 0, "blocks": {}, "frames": frames}
            self.reserved += segsize
            self.entry("segment_alloc", base, segsize, frames)
            # Carve the segment into blocks of this size class (the rest is cached).
            n = max(1, segsize // size)
            for i in range(n - 1, 0, -1):
                self.free.setdefault(size, []).append((base + i * size, base))
            seg = self.segs[base]
            seg["class"] = size
            addr = base
        seg = self.segs[base]
        seg["live"] += 1
        seg["blocks"][addr] = [size, req, "active_allocated", frames]
        self.owner[addr] = base
        self.entry("alloc", addr, req, frames)
        return addr

    def seg_of(self, addr):
        return self.owner[addr]

    def free_block(self, addr, frames, delayed=None):
        base = self.seg_of(addr)
        seg = self.segs[base]
        size, req, _, _ = seg["blocks"][addr]
        self.entry("free_requested", addr, req, frames)
        if delayed is not None:
            seg["blocks"][addr][2] = "active_pending_free"
            delayed.append((addr, frames))
            return
        self.complete(addr, frames)

    def complete(self, addr, frames):
        base = self.seg_of(addr)
        seg = self.segs[base]
        size, req, _, _ = seg["blocks"].pop(addr)
        del self.owner[addr]
        seg["live"] -= 1
        self.entry("free_completed", addr, req, frames)
        self.free.setdefault(size, []).append((addr, base))

    def empty_cache(self):
        for base in [b for b, s in self.segs.items() if s["live"] == 0]:
            s = self.segs.pop(base)
            self.reserved -= s["size"]
            self.entry("segment_free", base, s["size"], s["frames"])

    def segments(self):
        out = []
        for base in sorted(self.segs):
            s = self.segs[base]
            blocks, off = [], 0
            cls = s["class"]
            live = s["blocks"]
            while off < s["size"]:
                a = base + off
                if a in live:
                    size, req, state, frames = live[a]
                    blocks.append({"address": a, "size": size, "requested_size": req,
                                   "state": state, "frames": frames})
                    off += size
                else:
                    # coalesce the free run up to the next live block
                    end = off
                    while end < s["size"] and (base + end) not in live:
                        end += cls
                    end = min(end, s["size"])
                    blocks.append({"address": a, "size": end - off, "requested_size": 0,
                                   "state": "inactive", "frames": []})
                    off = end
            alloc = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
            active = sum(b["size"] for b in blocks if b["state"] != "inactive")
            out.append({"device": self.device, "address": base, "total_size": s["size"],
                        "allocated_size": alloc, "active_size": active,
                        "requested_size": sum(b["requested_size"] for b in blocks),
                        "stream": 0, "segment_type": "small" if s["size"] == SMALL_SEG else "large",
                        "segment_pool_id": (0, 0), "is_expandable": False,
                        "frames": s["frames"], "blocks": blocks})
        return out


def workload(g, a, steps, layers, anns, big=False):
    """Params, inputs, then steps of forward / backward / optimizer with temporaries."""
    rng = g.rng
    sizes = [rng.choice([4096, 65536, 262144, 1 << 20, 3 << 20]) + rng.randrange(0, 2048, 4)
             for _ in range(layers)]
    ann = lambda name, stage: anns.append({"stage": stage, "name": name, "device": a.device,
                                           "time_us": g.t})
    params = [a.alloc(s, g.stack("param")) for s in sizes]
    inp = a.alloc(rng.randrange(100_000, 400_000), g.stack("input"))
    opt_state = []
    delayed = []
    for step in range(steps):
        ann("ProfilerStep#%d" % step, "START")
        ann("## forward ##", "START")
        acts = []
        for li in range(layers):
            acts.append(a.alloc(sizes[li] * 2 + rng.randrange(512), g.stack("act", li)))
            t = a.alloc(rng.randrange(512, 200_000), g.stack("temp", li))
            if t is not None:
                a.free_block(t, g.stack("temp", li))
        ann("## forward ##", "END")
        ann("## backward ##", "START")
        grads = []
        for li in reversed(range(layers)):
            grads.append(a.alloc(sizes[li], g.stack("grad")))
            if acts[li] is not None:
                # some frees complete later (record_stream on another stream)
                a.free_block(acts[li], g.stack("act", li),
                             delayed if (not big and rng.random() < 0.1) else None)
            if delayed and rng.random() < 0.5:
                ad, fr = delayed.pop(0)
                a.complete(ad, fr)
        ann("## backward ##", "END")
        ann("## optimizer ##", "START")
        if step == 0:
            opt_state = [a.alloc(s, g.stack("opt")) for s in sizes for _ in (0, 1)]
        for li in range(layers):
            t = a.alloc(sizes[li], g.stack("optstep"))
            if t is not None:
                a.free_block(t, g.stack("optstep"))
        for gr in grads:
            if gr is not None:
                a.free_block(gr, g.stack("grad"))
        while delayed:
            ad, fr = delayed.pop(0)
            a.complete(ad, fr)
        ann("## optimizer ##", "END")
        ann("ProfilerStep#%d" % step, "END")
        if step % 3 == 2:
            a.empty_cache()
    return params, inp, opt_state


def snapshot(gens):
    segs, traces, anns = [], [], []
    for a, ann in gens:
        segs += a.segments()
        traces.append(a.trace)
        anns += ann
    return {"segments": segs, "device_traces": traces,
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                                   "garbage_collection_threshold": 0.0,
                                   "expandable_segments": False,
                                   "roundup_power2_divisions": {"1": 0}},
            "external_annotations": anns}


def ring_cut(a, keep):
    """Keeps only the last `keep` entries (the ring buffer of `max_entries`)."""
    a.trace = a.trace[-keep:]


# ------------------------------------------------------------------- truth (brute force)

def iv_add(ivs, a, b):
    """Union of a list of disjoint [s, e) intervals with [a, b), rebuilt from scratch."""
    if a >= b:
        return ivs
    pts = sorted(ivs + [(a, b)])
    out = []
    for s_, e_ in pts:
        if out and s_ <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e_))
        else:
            out.append((s_, e_))
    return out


def iv_sub(ivs, a, b):
    """A list of disjoint intervals minus [a, b)."""
    out = []
    for s_, e_ in ivs:
        if e_ <= a or s_ >= b:
            out.append((s_, e_))
            continue
        if s_ < a:
            out.append((s_, a))
        if e_ > b:
            out.append((b, e_))
    return out


def measure(ivs):
    return sum(e_ - s_ for s_, e_ in ivs)


def round_size(n, settings):
    """PyTorch's round_size (with roundup_power2_divisions when the settings give any)."""
    if n < 512:
        return 512
    table = [0] * 16
    for k, v in (settings.get("roundup_power2_divisions") or {}).items():
        mb = int(k)
        if mb > 0 and mb & (mb - 1) == 0:
            table[min(mb.bit_length() - 1, 15)] = int(v)
    div = table[min(max(n.bit_length() - 21, 0), 15)]
    if div > 1 and n > 512 * div and n & (n - 1):
        floor = 1 << (n.bit_length() - 1)
        step = floor >> (div.bit_length() - 1)
        return floor * 2 if step == 0 else -(-n // step) * step
    return -(-n // 512) * 512


def seg_cut(segs, a, b):
    """Segments [start, end, expandable] minus [a, b), boundaries kept."""
    out = []
    for s_, e_, x in segs:
        if e_ <= a or s_ >= b:
            out.append((s_, e_, x))
        else:
            out += [(s_, a, x)] * (s_ < a) + [(b, e_, x)] * (e_ > b)
    return out


def seg_put(segs, a, b, x):
    """Segments plus the uncovered parts of [a, b), each its own segment."""
    out = list(segs)
    for s_, e_, _ in sorted(t for t in segs if t[0] < b and t[1] > a):
        if s_ > a:
            out.append((a, s_, x))
        a = max(a, e_)
    if a < b:
        out.append((a, b, x))
    return out


def block_sizes(trace, segments, intervals, settings):
    """Sets each interval's size (index 2) to its block size, brute force: every alloc looks
    at the segments and live blocks just before its position."""
    max_split = settings.get("max_split_size", -1)
    max_split = 1 << 64 if max_split is None or max_split < 0 else max_split
    segs = [(t["address"], t["address"] + t["total_size"], bool(t.get("is_expandable")))
            for t in segments]
    for e in reversed(trace):
        a, b = e.get("addr", 0), e.get("addr", 0) + e.get("size", 0)
        if e["action"] in ("segment_alloc", "segment_map"):
            segs = seg_cut(segs, a, b)
        elif e["action"] in ("segment_free", "segment_unmap"):
            segs = seg_put(segs, a, b, e["action"] == "segment_unmap")
    segs_at = []  # segments just before each position
    for e in trace:
        segs_at.append(segs)
        a, b = e.get("addr", 0), e.get("addr", 0) + e.get("size", 0)
        if e["action"] in ("segment_alloc", "segment_map"):
            segs = seg_put(segs, a, b, e["action"] == "segment_map")
        elif e["action"] in ("segment_free", "segment_unmap"):
            segs = seg_cut(segs, a, b)
    finals = {}
    for t in segments:
        addr = t["address"]
        for b in t["blocks"]:
            if b["state"] in ("active_allocated", "active_pending_free"):
                finals[addr] = (b["requested_size"], b["size"])
            addr += b["size"]
    for iv in intervals:
        if iv[3] and iv[1] is not None:  # unmatched free: only its request is known
            iv[2] = round_size(iv[2], settings)
    for iv in sorted((iv for iv in intervals if not iv[3]), key=lambda iv: iv[0]):
        p, req, addr = iv[0], iv[2], iv[5]
        rounded = round_size(req, settings)
        iv[2] = rounded
        if iv[1] is None and finals.get(addr, (None,))[0] == req:
            iv[2] = finals[addr][1]
            continue
        if rounded <= MB or settings.get("expandable_segments") is True:
            continue
        live = [(o[5], o[2]) for o in intervals if o is not iv and (o[3] or o[0] < p)
                and (o[1] is None or o[1] > p)]
        home = [t for t in segs_at[p] if t[0] <= addr < t[1]]
        if not home or home[0][2] or any(a <= addr < a + n for a, n in live):
            continue
        if addr != home[0][0] and not any(a + n == addr for a, n in live):
            continue
        run = min([a for a, _ in live if addr < a < home[0][1]] + [home[0][1]]) - addr
        if run >= rounded and not (rounded < max_split and run - rounded > MB):
            iv[2] = run


def truth_device(trace, segments, device=None, settings=None):
    """One device. `device` None: every segment belongs (host memory), counted at the
    entries' sizes; else `settings` are the snapshot's allocator_settings."""
    segments = [s for s in segments if device is None or s["device"] == device]
    history_less = len(trace) == 0
    n = len(trace) if not history_less else 1  # no history: one instant, the dump (#0)
    intervals = []  # [start, end, size, from_start, frames, addr]
    live = {}
    unmatched = 0
    for i, e in enumerate(trace):
        act = e["action"]
        if act == "alloc":
            if e["addr"] in live:
                pass  # MemoryViz keeps the earlier element live
            live[e["addr"]] = len(intervals)
            intervals.append([i, None, e["size"], False, e.get("frames", []), e["addr"]])
        elif act == "free_completed":
            k = live.pop(e["addr"], None)
            if k is None:
                unmatched += 1
                intervals.append([-1, i, e["size"], True, e.get("frames", []), e["addr"]])
            else:
                intervals[k][1] = i
    ghosts = 0
    for s in segments:
        addr = s["address"]
        for b in s["blocks"]:
            if b["state"] == "active_allocated" and addr not in live:
                # without history the blocks appear at the dump (#0), else before the start
                size = b["requested_size"] if settings is None else b["size"]
                intervals.append([0 if history_less else -1, None, size,
                                  not history_less, b.get("frames", []), addr])
                ghosts += 1
            addr += b["size"]
    if settings is not None and not history_less:
        block_sizes(trace, segments, intervals, settings)

    def alive(iv, p):
        # p = -1 is the initial state: before the first event
        st, en = iv[0], iv[1]
        if p < 0:
            return iv[3]
        return (iv[3] or st <= p) and (en is None or p < en)

    # the initial state is the first candidate; later instants must exceed it
    best_p = -1
    best = sum(iv[2] for iv in intervals if alive(iv, -1))
    for p in range(n):
        tot = sum(iv[2] for iv in intervals if alive(iv, p))
        if tot > best:
            best, best_p = tot, p
    final = sum(iv[2] for iv in intervals if alive(iv, n - 1))
    live_at = sorted((iv[2] for iv in intervals if alive(iv, best_p)), reverse=True)

    # reserved: the union of mapped ranges. Initial ranges = final segments with the trace's
    # segment events undone newest first; then map/alloc adds a range, unmap/free removes it.
    seg_acts = ("segment_alloc", "segment_map", "segment_free", "segment_unmap")
    ranges = []
    for s in segments:
        ranges = iv_add(ranges, s["address"], s["address"] + s["total_size"])
    final_ranges = list(ranges)
    for e in reversed(trace):
        a, b = e.get("addr", 0), e.get("addr", 0) + e.get("size", 0)
        if e["action"] in ("segment_alloc", "segment_map"):
            ranges = iv_sub(ranges, a, b)
        elif e["action"] in ("segment_free", "segment_unmap"):
            ranges = iv_add(ranges, a, b)
    has_reserved = bool(segments) or any(e["action"] in seg_acts for e in trace)
    if history_less:
        rstart, rpeak, rpeak_p = 0, measure(final_ranges), 0
        if rpeak == 0:
            rpeak_p = -1
    else:
        rstart = measure(ranges)
        rpeak, rpeak_p = rstart, -1
        for i, e in enumerate(trace):
            a, b = e.get("addr", 0), e.get("addr", 0) + e.get("size", 0)
            if e["action"] in ("segment_alloc", "segment_map"):
                ranges = iv_add(ranges, a, b)
            elif e["action"] in ("segment_free", "segment_unmap"):
                ranges = iv_sub(ranges, a, b)
            if measure(ranges) > rpeak:
                rpeak, rpeak_p = measure(ranges), i
    ooms = [e for e in trace if e["action"] == "oom"]
    return {
        "events": n,
        "peak_bytes": best,
        "peak_at": "start" if best_p < 0 else "event",
        "peak_index": None if best_p < 0 else best_p,
        "peak_time_us": trace[best_p]["time_us"] if best_p >= 0 and not history_less else None,
        "peak_live_count": len(live_at),
        "peak_live_sizes_top20": live_at[:20],
        "start_bytes": sum(iv[2] for iv in intervals if alive(iv, -1)),
        "final_bytes": final,
        "reserved_peak": rpeak if has_reserved else None,
        "reserved_peak_index": (None if rpeak_p < 0 else rpeak_p) if has_reserved else None,
        "reserved_start": rstart if has_reserved else None,
        "unmatched_frees": unmatched,
        "ghost_blocks": ghosts,
        "ooms": [{"index": trace.index(o), "size": o["size"], "device_free": o["device_free"]}
                 for o in ooms],
    }


def truth(snap, encoding):
    if isinstance(snap, list):  # torch.cuda.memory_snapshot(): the bare segment list
        segs, traces, settings = snap, [], {}
    else:
        segs, traces = snap.get("segments", []), snap.get("device_traces", [])
        settings = snap.get("allocator_settings") or {}
    ndev = max([len(traces)] + [s["device"] + 1 for s in segs])
    per = {}
    for d in range(ndev):
        tr = traces[d] if d < len(traces) else []
        if not tr and not any(s["device"] == d for s in segs):
            continue
        per["cuda:%d" % d] = truth_device(tr, segs, d, settings)
    if isinstance(snap, dict) and (snap.get("host_traces") or snap.get("host_segments")):
        per["host:pinned"] = truth_device(snap.get("host_traces") or [],
                                          snap.get("host_segments") or [], None)
    return {
        "doc": __doc__.split("MemoryViz convention used by the truth replay")[1].strip(),
        "encoding": encoding,
        "devices": per,
    }


def write(path, snap, encoding, proto=None, as_json=False, gz=False):
    if as_json:
        data = json.dumps(snap).encode()
    else:
        data = pickle.dumps(snap, protocol=proto)
    if gz:
        data = gzip.compress(data, mtime=0)
    with open(path, "wb") as f:
        f.write(data)
    base = path
    for ext in (".gz", ".pickle", ".json"):
        if base.endswith(ext):
            base = base[: -len(ext)]
    with open(base + ".truth.json", "w") as f:
        json.dump(truth(snap, encoding), f, indent=1)
    print("%s: %d bytes" % (path, len(data)))


def fixtures(out):
    os.makedirs(out, exist_ok=True)

    # 1. two devices, full history, protocol 4; device 1 hits an OOM under a small cap.
    g = Gen(1)
    a0, an0 = Allocator(g, 0, 0x7F3C00000000), []
    workload(g, a0, steps=4, layers=12, anns=an0)
    a1, an1 = Allocator(g, 1, 0x7E1000000000, cap=60 * MB), []
    workload(g, a1, steps=3, layers=6, anns=an1)
    # a 9-byte LONG1 (2**64-1) as real files have: a stream pointer read from -1
    a0.trace[5]["stream"] = 2**64 - 1
    snap = snapshot([(a0, an0), (a1, an1)])
    write(os.path.join(out, "two_devices_p4.pickle"), snap, "pickle protocol 4", proto=4)

    # 2. ring-buffer cut (max_entries): unmatched frees, ghost blocks, lost segment_allocs.
    g = Gen(2)
    a, an = Allocator(g, 0, 0x7F0000000000), []
    workload(g, a, steps=6, layers=10, anns=an)
    ring_cut(a, 900)
    snap = snapshot([(a, an)])
    write(os.path.join(out, "ring_p2.pickle"), snap, "pickle protocol 2", proto=2)
    write(os.path.join(out, "ring_p5.pickle.gz"), snap, "pickle protocol 5, gzip", proto=5, gz=True)

    # 3. JSON form (frames are not shared in JSON).
    g = Gen(3)
    a, an = Allocator(g, 0, 0x7F5000000000), []
    workload(g, a, steps=2, layers=4, anns=an)
    ring_cut(a, 150)
    snap = snapshot([(a, an)])
    write(os.path.join(out, "small.json"), snap, "json", as_json=True)
    write(os.path.join(out, "small.json.gz"), snap, "json, gzip", as_json=True, gz=True)

    late_start(out)
    no_history(out)
    expandable(out)
    fields(out)


def late_start(out):
    """History began after the weights existed, and its first entry frees one of them (the
    peak is the initial state); the ring buffer overflowed (allocator_settings says so)."""
    g = Gen(4)
    a, an = Allocator(g, 0, 0x7F2000000000), []
    weights = [a.alloc(s, g.stack("param")) for s in (30 * MB, 12 * MB, 6 * MB + 100)]
    keep_from = len(a.trace)
    a.free_block(weights[0], g.stack("param"))  # the first recorded entries free 30 MiB
    workload(g, a, steps=2, layers=4, anns=an)
    a.trace = a.trace[keep_from:]
    snap = snapshot([(a, an)])
    snap["allocator_settings"].update({"trace_alloc_max_entries": len(a.trace),
                                       "trace_alloc_overflowed": True})
    write(os.path.join(out, "late_start.pickle"), snap, "pickle protocol 4", proto=4)


def no_history(out):
    """`_dump_snapshot` without `_record_memory_history`: segments only, empty device traces
    (two devices); and the bare list `torch.cuda.memory_snapshot()` returns."""
    g = Gen(5)
    a0, an0 = Allocator(g, 0, 0x7F4000000000), []
    workload(g, a0, steps=1, layers=5, anns=an0)
    a1, an1 = Allocator(g, 1, 0x7E4000000000), []
    workload(g, a1, steps=1, layers=3, anns=an1)
    snap = snapshot([(a0, an0), (a1, an1)])
    snap["device_traces"] = [[], []]
    snap["external_annotations"] = []
    write(os.path.join(out, "no_history.pickle"), snap, "pickle protocol 4", proto=4)
    write(os.path.join(out, "segments_list.pickle"), snap["segments"], "pickle protocol 4",
          proto=4)
    write(os.path.join(out, "segments_list.json"), snap["segments"], "json", as_json=True)


def expandable(out):
    """Expandable segments: maps per piece, an unmap spanning two maps, an unmap of the
    middle of one map, and a range mapped before the history whose middle is unmapped."""
    g = Gen(6)
    fp = g.fp
    fr = [fp.f("/workspace/train.py", 40, "forward"), fp.f("??", 0, "aten::empty")]
    B, B3 = 0x7F6000000000, 0x7F6800000000
    tr = []

    def e(action, addr, size, frames=None):
        g.t += 7
        d = {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": g.t}
        if frames is not None:
            d["frames"] = frames
        tr.append(d)

    e("segment_map", B, 20 * MB, fr)            # 0: reserved 30 + 20
    e("alloc", B, 8 * MB, fr)                   # 1
    e("segment_map", B + 20 * MB, 20 * MB, fr)  # 2: 70
    e("alloc", B + 20 * MB, 15 * MB, fr)        # 3
    for ad in (B, B + 20 * MB):
        e("free_requested", ad, 8 * MB if ad == B else 15 * MB)
        e("free_completed", ad, 8 * MB if ad == B else 15 * MB)
    e("segment_unmap", B, 40 * MB)              # 8: spans both maps: 30
    e("segment_map", B, 60 * MB, fr)            # 9: 90
    e("alloc", B, 50 * MB, fr)                  # 10: the allocated peak
    e("free_requested", B, 50 * MB)
    e("free_completed", B, 50 * MB)
    e("segment_unmap", B + 20 * MB, 20 * MB)    # 13: the middle of the 60 MiB map: 70
    e("alloc", B + 40 * MB, 10 * MB, fr)        # 14
    e("alloc", B, 4 * MB, fr)                   # 15
    e("segment_unmap", B3 + 10 * MB, 10 * MB)   # 16: part of a range mapped before: 60

    def seg(addr, total, blocks):
        out_blocks, off = [], 0
        for size, state in blocks:
            out_blocks.append({"address": addr + off, "size": size,
                               "requested_size": size if state != "inactive" else 0,
                               "state": state, "frames": fr if state != "inactive" else []})
            off += size
        alloc = sum(b["size"] for b in out_blocks if b["state"] == "active_allocated")
        return {"device": 0, "address": addr, "total_size": total, "allocated_size": alloc,
                "active_size": alloc, "requested_size": alloc, "stream": 0,
                "segment_type": "large", "segment_pool_id": (0, 0), "is_expandable": True,
                "frames": fr, "blocks": out_blocks}

    segs = [
        seg(B, 20 * MB, [(4 * MB, "active_allocated"), (16 * MB, "inactive")]),
        seg(B + 40 * MB, 20 * MB, [(10 * MB, "active_allocated"), (10 * MB, "inactive")]),
        seg(B3, 10 * MB, [(10 * MB, "inactive")]),
        seg(B3 + 20 * MB, 10 * MB, [(2 * MB, "active_allocated"), (8 * MB, "inactive")]),
    ]
    snap = {"segments": segs, "device_traces": [tr],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True",
                                   "expandable_segments": True},
            "external_annotations": []}
    write(os.path.join(out, "expandable.pickle"), snap, "pickle protocol 4", proto=4)


def fields(out):
    """Fields PyTorch 2.4-2.14 writes: stream, pool_id, compile_context, forward_frames,
    FX frame fields, annotate (adds to user_metadata), user_defined (a mark), allocator
    settings, pinned host memory; in JSON also an object user_metadata and string frames."""
    g = Gen(8)
    fp = g.fp
    fx = dict(fp.f("/tmp/torchinductor/xy/cxy.py", 12, "call"))
    fx.update({"fx_node_op": "call_function", "fx_node_name": "addmm",
               "fx_node_target": "aten.addmm.default",
               "fx_original_trace": "File \"/workspace/model.py\", line 9, in forward\n    y = self.fc(x)"})
    fr = [fp.f("??", 0, "aten::addmm"), fx, fp.f("/workspace/train.py", 40, "forward")]
    A = 0x7F7000000000
    tr = []

    def e(action, addr, size, frames=None, **kw):
        g.t += 5
        d = {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": g.t,
             "compile_context": "N/A", "user_metadata": ""}
        if frames is not None:
            d["frames"] = frames
        d.update(kw)
        tr.append(d)

    e("segment_alloc", A, 20 * MB, fr, pool_id=(1, 2), stream=94_000_000)      # 0
    e("alloc", A, 4 * MB, fr, user_metadata="stepA", pool_id=(1, 2),
      stream=94_000_000, compile_context="Torch-Compiled Region: 0/1",
      forward_frames=["File \"/workspace/model.py\", line 9, in forward"])       # 1
    e("annotate", A, 0, [fp.f("/workspace/train.py", 44, "label")], user_metadata="layer1")
    e("annotate", A, 0, None, user_metadata="extra")                              # 3
    e("user_defined", 0, 0, None, user_metadata="checkpoint-1")                   # 4
    e("alloc", A + 4 * MB, 2 * MB, fr)                                            # 5
    e("annotate", A + 12 * MB, 0, None, user_metadata="nobody")                   # 6: no live alloc
    e("free_requested", A + 4 * MB, 2 * MB)
    e("free_completed", A + 4 * MB, 2 * MB)                                       # 8
    e("some_future_action", 0, 0, None, future_field={"x": 1})                    # 9: unknown
    segs = [{"device": 0, "address": A, "total_size": 20 * MB, "allocated_size": 4 * MB,
             "active_size": 4 * MB, "requested_size": 4 * MB, "stream": 94_000_000,
             "segment_type": "large", "segment_pool_id": (1, 2), "is_expandable": False,
             "frames": fr, "future_segment_field": [1, 2],
             "blocks": [{"address": A, "size": 4 * MB, "requested_size": 4 * MB,
                         "state": "active_allocated", "frames": fr},
                        {"address": A + 4 * MB, "size": 16 * MB, "requested_size": 0,
                         "state": "inactive", "frames": []}]}]
    H = 0x7F0000100000
    host_tr = []
    for act, addr, size in (("segment_alloc", H, 2 * MB), ("alloc", H, 1 * MB),
                            ("alloc", H + MB, 512 * KB), ("free_requested", H, 1 * MB),
                            ("free_completed", H, 1 * MB)):
        g.t += 3
        host_tr.append({"action": act, "addr": addr, "size": size, "stream": 0,
                        "time_us": g.t})
    host_segs = [{"device": 0, "address": H, "total_size": 2 * MB, "allocated_size": 512 * KB,
                  "active_size": 512 * KB, "requested_size": 512 * KB, "stream": 0,
                  "blocks": [{"address": H, "size": MB, "requested_size": 0,
                              "state": "inactive", "frames": []},
                             {"address": H + MB, "size": 512 * KB,
                              "requested_size": 512 * KB, "state": "active_allocated",
                              "frames": []},
                             {"address": H + MB + 512 * KB, "size": 512 * KB,
                              "requested_size": 0, "state": "inactive", "frames": []}]}]
    settings = {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128", "max_split_size": 134217728,
                "expandable_segments": False, "roundup_power2_divisions": {"1": 0},
                "trace_alloc_max_entries": 100000, "trace_alloc_overflowed": False,
                "a_future_setting": {"k": [1, 2]}}
    snap = {"segments": segs, "device_traces": [tr], "allocator_settings": settings,
            "external_annotations": [], "host_segments": host_segs, "host_traces": host_tr}
    write(os.path.join(out, "fields.pickle"), snap, "pickle protocol 4", proto=4)
    # JSON-only shapes: an object user_metadata and a plain-string frame
    tr[5]["user_metadata"] = {"tag": "x", "n": 1}
    tr[5]["frames"] = ["compiled_fn.py:12", fp.f("/workspace/train.py", 41, "forward")]
    write(os.path.join(out, "fields.json"), snap, "json", as_json=True)


def big(path, entries, proto):
    g = Gen(7, frames_extra=48)
    a, an = Allocator(g, 0, 0x7F0000000000), []
    # one run with a bounded live set (about 600 entries per step at 50 layers)
    workload(g, a, steps=entries // 600 + 1, layers=50, anns=an, big=True)
    snap = snapshot([(a, an)])
    if path.endswith(".json"):
        # The JSON form (frames written out in every entry, as json.dump does)
        with open(path, "w") as f:
            json.dump(snap, f)
    else:
        with open(path, "wb") as f:
            pickle.dump(snap, f, protocol=proto)
    print("%s: %d entries, %d bytes" % (path, len(a.trace), os.path.getsize(path)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="tests/fixtures/snapshot")
    ap.add_argument("--big", help="write one big snapshot here (no truth) and exit; "
                    "JSON when the name ends in .json")
    ap.add_argument("--entries", type=int, default=1_000_000)
    ap.add_argument("--protocol", type=int, default=4)
    a = ap.parse_args()
    if a.big:
        big(a.big, a.entries, a.protocol)
    else:
        fixtures(a.out)


if __name__ == "__main__":
    main()
