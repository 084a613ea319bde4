#!/usr/bin/env python3
"""Writes the bundled PyTorch-format samples (stdlib only, no torch): one training run, told
as the two files PyTorch would have written for it on a 16 GiB GPU:

  sample-traces/cuda-oom.pickle           torch.cuda.memory._dump_snapshot() after the OOM
  sample-traces/cuda-oom.pt.trace.json.gz torch.profiler trace (profile_memory, with_stack)

Usage: tools/gen_pytorch_samples.py [OUT_DIR]   (default: sample-traces)

The run (sizes chosen round so every figure in sample-traces/README.md is computed by hand):
  setup   two 1 GiB fp32 weights (W0, W1) moved to cuda:0
  step k  input x (256 MiB), forward: a0, a1 (1 GiB each, saved for backward), a 512 B loss;
          backward layer 1 then 0: the weight's gradient (1 GiB, kept from step 0 on), a 1 GiB
          grad-input temp (freed at once), then the layer's activation is freed;
          optimizer (AdamW): exp_avg and exp_avg_sq per weight (1 GiB each, made in step 0)
          and a 1 GiB foreach temp per weight (freed at once); then the batch is freed.
  step 2  the sequence length triples: x 768 MiB, a0 and a1 3 GiB each: a1's 2 GiB request
          cannot be served and the allocator raises OutOfMemoryError.

The allocator is an emulation of PyTorch's caching allocator (large pool only matters here,
the 512 B loss goes to a 2 MiB small-pool segment): 512 B rounding, best fit by (size,
address) among cached free blocks with splitting, a new segment of the rounded size when none
fits (cudaMalloc), coalescing of free neighbours, and on a failing cudaMalloc: release every
fully free cached segment (segment_free), retry, then record `oom` (requested bytes, the free
bytes the driver reports) and raise. The device has 16 GiB; the CUDA context and cuBLAS
workspaces outside the allocator hold 512 MiB, so the allocator can reserve 15.5 GiB.
"""
import gzip
import io
import json
import os
import pickle
import sys

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB
CAPACITY = 16 * GiB
OUTSIDE = 512 * MiB
SITE = "/usr/local/lib/python3.11/site-packages"
PROJ = "/home/alice/llm-train"
T0_US = 1_795_934_512_000_000  # epoch µs of the first event
BASE_ADDR = 0x7F3A_0000_0000


class Frames:
    """Shared frame dicts and shared stack lists, as PyTorch dedups them (pickle memo)."""

    def __init__(self):
        self.frames = {}
        self.stacks = {}

    def stack(self, *specs):
        key = tuple(specs)
        s = self.stacks.get(key)
        if s is None:
            s = []
            for (filename, line, name) in specs:
                k = (filename, line, name)
                f = self.frames.get(k)
                if f is None:
                    f = {"filename": filename, "line": line, "name": name}
                    self.frames[k] = f
                s.append(f)
            self.stacks[key] = s
        return s


F = Frames()
CPP = [("??", 0, "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc"),
       ("??", 0, "at::native::empty_cuda")]


def py(*frames):
    """A captured stack, innermost first: C++ allocator frames, then the Python ones."""
    return F.stack(*CPP, *frames)


MODULE = (f"{SITE}/torch/nn/modules/module.py", 1775, "_call_impl")
LINEAR = (f"{SITE}/torch/nn/modules/linear.py", 134, "forward")
FUNC_RELU = (f"{SITE}/torch/nn/functional.py", 1704, "relu")
TO = (f"{SITE}/torch/nn/modules/module.py", 1369, "convert")
ADAMW_INIT = (f"{SITE}/torch/optim/adamw.py", 144, "_init_group")
ADAMW_FOREACH = (f"{SITE}/torch/optim/adamw.py", 552, "_multi_tensor_adamw")
ADAMW_STEP = (f"{SITE}/torch/optim/optimizer.py", 517, "wrapper")
BACKWARD = (f"{SITE}/torch/autograd/graph.py", 829, "_engine_run_backward")
TENSOR_BWD = (f"{SITE}/torch/_tensor.py", 648, "backward")
CE = (f"{SITE}/torch/nn/functional.py", 3494, "cross_entropy")
MODEL_FWD = (f"{PROJ}/model.py", 31, "forward")
BUILD = (f"{PROJ}/train.py", 22, "build_model")
STEP_FWD = (f"{PROJ}/train.py", 57, "train_step")
STEP_BWD = (f"{PROJ}/train.py", 60, "train_step")
STEP_OPT = (f"{PROJ}/train.py", 61, "train_step")
LOADER = (f"{PROJ}/data.py", 48, "to_device")
MAIN = (f"{PROJ}/train.py", 90, "main")


class OutOfMemory(Exception):
    """torch.cuda.OutOfMemoryError: the run dies, the snapshot is dumped in its handler."""


class Allocator:
    """The emulated caching allocator; every call appends PyTorch's trace entries."""

    def __init__(self, clock):
        self.clock = clock
        self.segments = []  # dicts: address, total_size, pool, blocks [addr, size, req, live, stack]
        self.trace = []
        self.next_addr = BASE_ADDR
        self.kineto = []  # (ts_us, addr, bytes, total_alloc, total_reserved, op, stack)
        self.live = {}  # addr -> (size, requested)

    def reserved(self):
        return sum(s["total_size"] for s in self.segments)

    def allocated(self):
        return sum(b[1] for s in self.segments for b in s["blocks"] if b[3])

    def entry(self, action, addr, size, stack, **extra):
        e = {"action": action, "addr": addr, "size": size, "stream": 0,
             "time_us": self.clock.tick()}
        if stack is not None:
            e["frames"] = stack
        e.update(extra)
        self.trace.append(e)
        return e

    @staticmethod
    def round(n):
        return max(512, (n + 511) // 512 * 512)

    def alloc(self, requested, stack, op):
        size = self.round(requested)
        pool = "small" if size <= MiB else "large"
        best = None
        for s in self.segments:
            if s["pool"] != pool:
                continue
            for i, b in enumerate(s["blocks"]):
                if not b[3] and b[1] >= size and (best is None or (b[1], b[0]) < (best[2][1], best[2][0])):
                    best = (s, i, b)
        if best is None:
            seg_size = 2 * MiB if pool == "small" else (20 * MiB if size < 10 * MiB else (size + 2 * MiB - 1) // (2 * MiB) * (2 * MiB))
            if self.reserved() + seg_size > CAPACITY - OUTSIDE:
                self.release_cached(stack)
                if self.reserved() + seg_size > CAPACITY - OUTSIDE:
                    free = CAPACITY - OUTSIDE - self.reserved()
                    e = {"action": "oom", "device_free": free, "size": requested, "stream": 0,
                         "time_us": self.clock.tick(), "frames": stack}
                    self.trace.append(e)
                    self.kineto_oom = (e["time_us"], requested, op, stack)
                    raise OutOfMemory(requested)
            addr = self.next_addr
            self.next_addr += (seg_size + 2 * MiB - 1) // (2 * MiB) * (2 * MiB) + 2 * MiB
            s = {"address": addr, "total_size": seg_size, "pool": pool, "stack": stack,
                 "blocks": [[addr, seg_size, 0, False, None]]}
            self.segments.append(s)
            self.segments.sort(key=lambda x: x["address"])
            self.entry("segment_alloc", addr, seg_size, stack)
            best = (s, 0, s["blocks"][0])
        s, i, b = best
        if b[1] - size > (MiB if pool == "large" else 0) or (pool == "small" and b[1] - size >= 512):
            rest = [b[0] + size, b[1] - size, 0, False, None]
            s["blocks"].insert(i + 1, rest)
            b[1] = size
        b[2], b[3], b[4] = requested, True, stack
        self.entry("alloc", b[0], size, stack)
        self.live[b[0]] = (size, requested)
        self.kineto.append((self.trace[-1]["time_us"], b[0], size, self.allocated(),
                            self.reserved(), op, stack))
        return b[0]

    def free(self, addr, op):
        for s in self.segments:
            for i, b in enumerate(s["blocks"]):
                if b[0] == addr and b[3]:
                    stack = b[4]
                    self.entry("free_requested", addr, b[1], stack)
                    self.entry("free_completed", addr, b[1], stack)
                    b[3], b[2], b[4] = False, 0, None
                    del self.live[addr]
                    self.kineto.append((self.trace[-1]["time_us"], addr, -b[1],
                                        self.allocated(), self.reserved(), op, None))
                    self.coalesce(s)
                    return
        raise KeyError(hex(addr))

    @staticmethod
    def coalesce(s):
        out = []
        for b in s["blocks"]:
            if out and not out[-1][3] and not b[3]:
                out[-1][1] += b[1]
            else:
                out.append(b)
        s["blocks"] = out

    def release_cached(self, stack):
        for s in list(self.segments):
            if len(s["blocks"]) == 1 and not s["blocks"][0][3]:
                self.entry("segment_free", s["address"], s["total_size"], stack)
                self.segments.remove(s)

    def segment_dump(self):
        out = []
        for s in self.segments:
            blocks = []
            for (addr, size, req, live, stack) in s["blocks"]:
                blocks.append({"address": addr, "size": size, "requested_size": req if live else 0,
                               "state": "active_allocated" if live else "inactive",
                               "frames": stack if live else []})
            alloc = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
            out.append({"device": 0, "address": s["address"], "total_size": s["total_size"],
                        "allocated_size": alloc, "active_size": alloc,
                        "requested_size": sum(b["requested_size"] for b in blocks),
                        "stream": 0, "segment_type": s["pool"], "segment_pool_id": (0, 0),
                        "is_expandable": False, "frames": s["stack"], "blocks": blocks})
        return out


class Clock:
    def __init__(self):
        self.t = T0_US

    def tick(self, us=250):
        self.t += us
        return self.t


def run():
    clock = Clock()
    a = Allocator(clock)
    anns = []
    spans = []  # (name, cat, ts_us, dur_us) for Kineto

    def step_start(k):
        anns.append({"name": f"ProfilerStep#{k}", "stage": "START", "device": 0,
                     "time_us": clock.tick(10)})
        return anns[-1]["time_us"]

    def step_end(k, start):
        t = clock.tick(10)
        anns.append({"name": f"ProfilerStep#{k}", "stage": "END", "device": 0, "time_us": t})
        spans.append((f"ProfilerStep#{k}", "user_annotation", start, t - start))

    for _ in range(2):
        a.alloc(GiB, py(TO, BUILD, MAIN), "aten::empty_strided")
    state = {}
    grads = {}
    for k in range(3):
        start = step_start(k)
        try:
            train_step(a, k, grads, state)
        except OutOfMemory:
            # The profiler closes its step span; the snapshot's annotation stays open (no END).
            spans.append((f"ProfilerStep#{k}", "user_annotation", start, clock.t - start))
            return a, anns, spans
        step_end(k, start)
    return a, anns, spans


def train_step(a, k, grads, state):
    """One step of the schedule in the module docstring."""
    seq = 3 if k == 2 else 1
    x = a.alloc(256 * MiB * seq, py(LOADER, STEP_FWD, MAIN), "aten::_to_copy")
    acts = []
    for layer in range(2):
        acts.append(a.alloc(GiB * seq, py(FUNC_RELU, MODEL_FWD, MODULE, STEP_FWD, MAIN),
                            "aten::relu"))
    loss = a.alloc(512, py(CE, STEP_FWD, MAIN), "aten::nll_loss_forward")
    for layer in (1, 0):
        bwd = py(BACKWARD, TENSOR_BWD, STEP_BWD, MAIN)
        if layer not in grads:
            grads[layer] = a.alloc(GiB, bwd, "aten::mm")
        tmp = a.alloc(GiB, bwd, "aten::mm")
        a.free(tmp, "aten::mm")
        a.free(acts[layer], "autograd::engine::evaluate_function: ReluBackward0")
    a.free(loss, "aten::nll_loss_backward")
    for layer in (0, 1):
        if layer not in state:
            state[layer] = [a.alloc(GiB, py(ADAMW_INIT, ADAMW_STEP, STEP_OPT, MAIN),
                                    "aten::zeros_like") for _ in range(2)]
    for layer in (0, 1):
        tmp = a.alloc(GiB, py(ADAMW_FOREACH, ADAMW_STEP, STEP_OPT, MAIN), "aten::_foreach_mul")
        a.free(tmp, "aten::_foreach_mul")
    a.free(x, "aten::_to_copy")


SETTINGS = {
    "PYTORCH_CUDA_ALLOC_CONF": "",
    "max_split_size": -1,
    "garbage_collection_threshold": 0.0,
    "expandable_segments": False,
    "pinned_num_register_threads": 1,
    "release_lock_on_cudamalloc": False,
    "pinned_use_cuda_host_register": False,
    "roundup_power2_divisions": {"1": 0, "2": 0, "4": 0, "8": 0, "16": 0, "32": 0, "64": 0,
                                 "128": 0, "256": 0, "512": 0, "1024": 0, "2048": 0,
                                 "4096": 0, "8192": 0, "16384": 0, "32768": 0},
}


def snapshot_bytes(a, anns):
    snap = {"segments": a.segment_dump(), "device_traces": [a.trace],
            "allocator_settings": SETTINGS, "external_annotations": anns}
    return pickle.dumps(snap, protocol=4)


def pyname(frame):
    filename, line, name = frame
    short = filename.replace(SITE + "/", "")
    return f"{short}({line}): {name}"


def kineto_bytes(a, anns, spans):
    """The profiler's Chrome trace of the same run: [memory] instants inside their cpu_op,
    python_function spans for the Python stack, ProfilerStep spans, the [OutOfMemory]."""
    pid, tid = 4242, 4242
    base_us = T0_US - 1000
    ev = []

    def rel(t):
        return float(t - base_us)

    for (name, cat, ts, dur) in spans:
        ev.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
                   "ts": rel(ts), "dur": float(dur), "args": {}})
    for (ts, addr, nbytes, total, reserved, op, stack) in a.kineto:
        ev.append({"ph": "X", "cat": "cpu_op", "name": op, "pid": pid, "tid": tid,
                   "ts": rel(ts) - 1.0, "dur": 2.0, "args": {"External id": len(ev)}})
        if stack is not None:
            pyframes = [f for f in stack if f["filename"] != "??"]
            for depth, f in enumerate(reversed(pyframes)):
                ev.append({"ph": "X", "cat": "python_function",
                           "name": pyname((f["filename"], f["line"], f["name"])),
                           "pid": pid, "tid": tid, "ts": rel(ts) - 2.0 - (len(pyframes) - depth),
                           "dur": 4.0 + 2 * (len(pyframes) - depth), "args": {}})
        ev.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
                   "pid": pid, "tid": tid, "ts": rel(ts),
                   "args": {"Total Reserved": reserved, "Total Allocated": total,
                            "Bytes": nbytes, "Device Id": 0, "Device Type": 1, "Addr": addr}})
    ts, requested, op, stack = a.kineto_oom
    ev.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[OutOfMemory]",
               "pid": pid, "tid": tid, "ts": rel(ts),
               "args": {"Total Reserved": a.reserved(), "Total Allocated": a.allocated(),
                        "Bytes": requested, "Device Id": 0, "Device Type": 1}})
    ev.sort(key=lambda e: (e["ts"], 0 if e["ph"] == "X" else 1))
    doc = {"schemaVersion": 1,
           "deviceProperties": [{"id": 0, "name": "Tesla V100-SXM2-16GB",
                                 "totalGlobalMem": CAPACITY, "computeMajor": 7,
                                 "computeMinor": 0}],
           "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},
           "displayTimeUnit": "ms", "baseTimeNanoseconds": base_us * 1000,
           "traceEvents": ev,
           "traceName": "cuda-oom.pt.trace.json"}
    text = json.dumps(doc, indent=1).encode()
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0) as g:
        g.write(text)
    return buf.getvalue()


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "sample-traces"
    a, anns, spans = run()
    with open(os.path.join(out, "cuda-oom.pickle"), "wb") as f:
        f.write(snapshot_bytes(a, anns))
    with open(os.path.join(out, "cuda-oom.pt.trace.json.gz"), "wb") as f:
        f.write(kineto_bytes(a, anns, spans))
    # Figures for the README, from the emulation itself (the README computes them by hand).
    peak = max(k[3] for k in a.kineto)
    res_peak = max(k[4] for k in a.kineto)
    print(f"entries {len(a.trace)} peak {peak} reserved_peak {res_peak} final {a.allocated()} "
          f"final_reserved {a.reserved()} oom {a.kineto_oom[1]} device_free "
          f"{[e for e in a.trace if e['action'] == 'oom'][0]['device_free']}")


if __name__ == "__main__":
    main()
