#!/usr/bin/env python3
"""The GPU side of scripts/gpu-conformance: small CUDA runs whose files memtide reads, each
with PyTorch's own counters for the same window, written as OUT_DIR/cases.json for compare.py.

Usage: run.py OUT_DIR [--quick]

Every workload runs in its own Python process (the allocator reads PYTORCH_CUDA_ALLOC_CONF
once, at CUDA initialisation), writes its files into OUT_DIR and its cases into
OUT_DIR/cases.d/<name>.json. The parent gathers them with the versions (torch, CUDA, driver,
GPU name). A worker that fails is recorded as a failing case, not a crash of the whole run.

Cases (each figure names its counter and window in report.md):
  train_*      a transformer block and an MLP, fp32 and bf16 autocast, Adam, 3 steps, under
               default, expandable_segments:True and max_split_size_mb:64 — snapshot peak vs
               max_memory_allocated(), reserved peak vs max_memory_reserved() (window:
               reset_peak_memory_stats() right after _record_memory_history() until the
               dump), final vs memory_allocated() / memory_reserved(), and memtide's
               allocator model (`whatif`) under the recorded settings vs the recorded
               reserved peak (1 %).
  oom_*        set_per_process_memory_fraction and one oversize request; a fragmented
               segment and a request no hole fits — snapshots taken by an OOM observer;
               memtide's verdicts must be request_too_large and fragmentation.
  kineto       profile_memory=True on CUDA: memtide's peak vs the trace's own largest
               `Total Allocated` for the device.
  recorder     memtide_record on CUDA (NVML when nvidia-ml-py is installed): its peak vs
               max_memory_allocated(), reserved vs max_memory_reserved(), NVML samples
               present, external at the peak ≥ the CUDA context (mem_get_info()).
  recorder_external  memtide_record around one 64 MiB tensor (no matmul: no cuBLAS
               workspace the recorder cannot see): final_bytes vs memory_allocated() + NVML
               per-process used (this pid) − memory_reserved(), 1 % — the recorded external
               figure against NVML read independently; skipped, with the recorder's reason,
               where NVML does not list the process.
  two_ranks    two processes on one GPU (gloo; NCCL refuses two ranks on one device), one
               snapshot each: the ranks overview must name the rank with the larger
               max_memory_allocated().
"""

import argparse
import gc
import json
import os
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import compare  # noqa: E402  (standard library only)

WINDOW = "reset_peak_memory_stats() right after _record_memory_history() .. _dump_snapshot()"
SETTINGS = [("default", ""), ("expandable", "expandable_segments:True"),
            ("split64", "max_split_size_mb:64")]


def write_cases(out_dir, name, cases, skipped=()):
    d = os.path.join(out_dir, "cases.d")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f"{name}.json"), "w", encoding="utf-8") as f:
        json.dump({"cases": cases, "skipped": list(skipped)}, f, indent=1)


def check(figure, path, expected, counter, window=WINDOW, tolerance=0, op="eq"):
    return {"figure": figure, "memtide": path, "expected": expected, "counter": counter,
            "window": window, "tolerance": tolerance, "op": op}


# ---------------------------------------------------------------- workers (need CUDA)

def models(torch, kind):
    nn = torch.nn
    if kind == "mlp":
        m = nn.Sequential(nn.Linear(2048, 8192), nn.GELU(), nn.Linear(8192, 2048))
        return m, lambda b: torch.randn(b, 2048, device="cuda")
    m = nn.TransformerEncoderLayer(d_model=1024, nhead=16, dim_feedforward=4096,
                                   batch_first=True)
    return m, lambda b: torch.randn(b, 256, 1024, device="cuda")


def train_steps(torch, model, batch, bf16, steps=3):
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    for _ in range(steps):
        x = batch()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
            loss = model(x).float().pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        del x, loss
    return opt


def worker_train(out_dir, label, conf):
    import torch
    cases = []
    for kind, bsz in (("mlp", 512), ("block", 16)):
        for bf16 in (False, True):
            name = f"train_{kind}_{'bf16' if bf16 else 'fp32'}_{label}"
            path = os.path.join(out_dir, f"{name}.pickle")
            gc.collect()
            torch.cuda.empty_cache()
            torch.cuda.memory._record_memory_history(max_entries=200_000)
            torch.cuda.reset_peak_memory_stats()
            model, batch = models(torch, kind)
            model = model.cuda()
            opt = train_steps(torch, model, lambda: batch(bsz), bf16)
            torch.cuda.synchronize()
            peak = torch.cuda.max_memory_allocated()
            rpeak = torch.cuda.max_memory_reserved()
            final = torch.cuda.memory_allocated()
            freserved = torch.cuda.memory_reserved()
            torch.cuda.memory._dump_snapshot(path)
            torch.cuda.memory._record_memory_history(enabled=None)
            del model, opt
            what = (f"{'an MLP' if kind == 'mlp' else 'a transformer block'}, "
                    f"{'bf16 autocast' if bf16 else 'fp32'}, Adam, 3 steps, "
                    f"PYTORCH_CUDA_ALLOC_CONF={conf or '(unset)'}")
            cases.append({
                "name": name, "what": what, "file": os.path.basename(path),
                "command": ["summary", "--json", "{file}", "--device", "0"],
                "checks": [
                    check("peak", "peak.bytes", peak, "torch.cuda.max_memory_allocated()"),
                    check("reserved peak", "reserved_peak", rpeak,
                          "torch.cuda.max_memory_reserved()"),
                    check("final", "final_bytes", final, "torch.cuda.memory_allocated()",
                          window="at _dump_snapshot()"),
                    check("reserved at end", "allocator_at_end.reserved", freserved,
                          "torch.cuda.memory_reserved()", window="at _dump_snapshot()"),
                ]})
            cases.append({
                "name": name + "_whatif", "optional": True, "file": os.path.basename(path),
                "what": "memtide's allocator model replaying the file under its own settings",
                "command": ["whatif", "{file}", "--json", "--device", "0"],
                "checks": [check("simulated reserved peak", "runs[0].reserved_peak", rpeak,
                                 "torch.cuda.max_memory_reserved()", tolerance=0.01)]})
    write_cases(out_dir, f"train_{label}", cases)


# Where the next OOM is dumped. PyTorch keeps every observer attached for the life of the
# process, so one observer is attached once and each case points it at its own file (two
# observers would both fire on the second OOM and overwrite the first case's file).
_OOM_DUMP = {"path": None, "attached": False}


def attach_oom_dump(torch, path):
    _OOM_DUMP["path"] = path
    if _OOM_DUMP["attached"]:
        return

    def observer(device, alloc, device_alloc, device_free):
        target = _OOM_DUMP["path"]
        if target is not None:
            torch.cuda.memory._dump_snapshot(target)
            _OOM_DUMP["path"] = None

    torch._C._cuda_attach_out_of_memory_observer(observer)
    _OOM_DUMP["attached"] = True


def worker_oom(out_dir):
    import torch
    MiB = 1 << 20
    free, total = torch.cuda.mem_get_info()
    cases = []

    # 1. one request larger than the device.
    path = os.path.join(out_dir, "oom_too_large.pickle")
    torch.cuda.memory._record_memory_history(max_entries=10_000)
    attach_oom_dump(torch, path)
    keep = torch.empty(64 * MiB, dtype=torch.uint8, device="cuda")
    try:
        torch.empty(total * 2, dtype=torch.uint8, device="cuda")
    except torch.cuda.OutOfMemoryError:
        pass
    del keep
    torch.cuda.memory._record_memory_history(enabled=None)
    cases.append({
        "name": "oom_too_large", "file": os.path.basename(path),
        "what": f"one request of {2 * total} B on a {total} B device",
        "command": ["summary", "--json", "{file}", "--device", "0", "--capacity", f"{total}B"],
        "checks": [check("OOM verdict", "ooms[0].verdict", "request_too_large",
                         "the request is twice torch.cuda.mem_get_info()[1]",
                         window="the OOM"),
                   check("requested", "ooms[0].requested_bytes", 2 * total,
                         "the size passed to torch.empty", window="the OOM")]})

    # 2. fragmentation: one 1 GiB segment split into 16 × 60 MiB blocks, every other one
    # freed (8 holes of 60 MiB and a 64 MiB tail: 544 MiB free), a cap that leaves no room for
    # a new segment, then a 200 MiB request no hole fits.
    gc.collect()
    torch.cuda.empty_cache()
    path = os.path.join(out_dir, "oom_fragmented.pickle")
    torch.cuda.memory._record_memory_history(max_entries=10_000)
    attach_oom_dump(torch, path)
    big = torch.empty(1024 * MiB, dtype=torch.uint8, device="cuda")
    del big
    blocks = [torch.empty(60 * MiB, dtype=torch.uint8, device="cuda") for _ in range(16)]
    for i in range(0, 16, 2):
        blocks[i] = None
    reserved = torch.cuda.memory_reserved()
    torch.cuda.set_per_process_memory_fraction(min(1.0, (reserved + 100 * MiB) / total))
    try:
        torch.empty(200 * MiB, dtype=torch.uint8, device="cuda")
    except torch.cuda.OutOfMemoryError:
        pass
    torch.cuda.memory._record_memory_history(enabled=None)
    torch.cuda.set_per_process_memory_fraction(1.0)
    cases.append({
        "name": "oom_fragmented", "file": os.path.basename(path),
        "what": "8 free holes of 60 MiB in a 1 GiB segment, a cap of reserved + 100 MiB, "
                "then 200 MiB requested",
        "command": ["summary", "--json", "{file}", "--device", "0", "--capacity", f"{total}B"],
        "checks": [check("OOM verdict", "ooms[0].verdict", "fragmentation",
                         "holes < request while free in reserve ≥ request (by construction)",
                         window="the OOM"),
                   check("reserved at the OOM", "ooms[0].reserved", reserved,
                         "torch.cuda.memory_reserved()", window="just before the request")]})
    del blocks
    write_cases(out_dir, "oom", cases)


def worker_kineto(out_dir):
    import torch
    from torch.profiler import ProfilerActivity, profile
    path = os.path.join(out_dir, "kineto_cuda.pt.trace.json")
    model, batch = models(torch, "mlp")
    model = model.cuda()
    torch.cuda.reset_peak_memory_stats()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 profile_memory=True, record_shapes=True) as prof:
        train_steps(torch, model, lambda: batch(256), False, steps=2)
        torch.cuda.synchronize()
    prof.export_chrome_trace(path)
    own = compare.kineto_total_allocated_max(path)
    cases = [{
        "name": f"kineto_{dev.replace(':', '')}", "file": os.path.basename(path),
        "what": "an MLP, 2 Adam steps under torch.profiler(profile_memory=True)",
        "command": ["summary", "--json", "{file}", "--device", dev],
        "checks": [check("peak", "peak.bytes", v,
                         "the trace's own largest `Total Allocated`",
                         window="the profiled steps")]} for dev, v in sorted(own.items())]
    skipped = [] if cases else [{"name": "kineto",
                                 "reason": "the trace has no CUDA [memory] events"}]
    write_cases(out_dir, "kineto", cases, skipped)


def worker_recorder(out_dir):
    import torch
    import memtide_record
    path = os.path.join(out_dir, "recorder_cuda.jsonl")
    model, batch = models(torch, "mlp")
    model = model.cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    torch.cuda.synchronize()
    free, total = torch.cuda.mem_get_info()
    context = (total - free) - torch.cuda.memory_reserved()
    torch.cuda.reset_peak_memory_stats()
    with memtide_record.record(path, model=model, optimizer=opt):
        for i in range(3):
            memtide_record.step(i)
            loss = model(batch(256)).pow(2).mean()
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)
            del loss
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated()
        rpeak = torch.cuda.max_memory_reserved()
    samples = sum(1 for line in open(path, encoding="utf-8") if '"op":"sample"' in
                  line.replace(" ", ""))
    with open(path, encoding="utf-8") as f:
        status = json.loads(f.readline()).get("meta", {}).get("external_sources", {})
    nvml = status.get("process") == "ok"
    window = "reset_peak_memory_stats() before memtide_record.record() .. the end of the block"
    checks = [
        # The recording's peak includes memory outside PyTorch (NVML samples): the
        # framework's part is what max_memory_allocated() counts, less what no tensor holds.
        # The recorder sees tensor storages (a TorchDispatchMode) at their nbytes; the caching
        # allocator also hands out each thread's cuBLAS workspace (32 MiB per handle on
        # Hopper: the forward thread's and the autograd thread's) and the cuBLASLt workspace
        # (1 MiB), and rounds each block to 512 B. On the H200 run that was 68,157,948 B of
        # 739,451,392 (9.2 %; tests/data/gpu-h200/README.md): at most the counter, and no
        # more than 10 % below it.
        check("peak", "peak.bytes - peak.bands.external", peak,
              "torch.cuda.max_memory_allocated()", window, tolerance=0.10, op="le"),
        check("reserved peak", "reserved_peak", rpeak, "torch.cuda.max_memory_reserved()",
              window, tolerance=0.02),
    ]
    skipped = []
    if nvml:
        checks.append(check("external at the peak", "peak.bands.external", context,
                            "(mem_get_info total − free) − memory_reserved(): the CUDA context",
                            "before the block", op="ge"))
        checks.append({"figure": "NVML sample lines", "observed": samples > 0,
                       "expected": True,
                       "counter": "nvmlDeviceGetComputeRunningProcesses (this pid) via the recorder",
                       "window": "the block", "tolerance": 0, "op": "eq"})
    else:
        skipped.append({"name": "recorder_nvml",
                        "reason": "the recorder's per-process NVML source is unavailable: "
                                  + str(status.get("process", "no status in the header"))})
    cases = [{"name": "recorder", "file": os.path.basename(path),
              "what": "memtide_record around an MLP, 3 Adam steps on CUDA",
              "command": ["summary", "--json", "{file}"], "checks": checks}]
    write_cases(out_dir, "recorder", cases, skipped)


def worker_recorder_external(out_dir):
    """The recorded external memory against NVML's used memory of this process − reserved,
    read independently right after the recording's last sample. No matmul runs (no cuBLAS
    workspace the recorder cannot see), so memtide's final bytes are the one 64 MiB tensor
    plus the external memory: final_bytes = memory_allocated() + process used − reserved."""
    import torch
    import memtide_record
    path = os.path.join(out_dir, "recorder_external.jsonl")
    x = torch.zeros(1, device="cuda")  # the CUDA context and a first segment
    del x
    torch.cuda.synchronize()
    with memtide_record.record(path, device="cuda"):
        keep = torch.empty(64 << 20, dtype=torch.uint8, device="cuda")
        torch.cuda.synchronize()
        allocated_end = torch.cuda.memory_allocated()
        reserved_end = torch.cuda.memory_reserved()
    # The recorder's last sample was taken as the block closed; nothing allocates since.
    process_used = nvml_process_used(torch)
    del keep
    with open(path, encoding="utf-8") as f:
        status = json.loads(f.readline()).get("meta", {}).get("external_sources", {})
    if status.get("process") != "ok" or process_used is None:
        write_cases(out_dir, "recorder_external", [], [{
            "name": "recorder_external",
            "reason": "NVML per-process used memory unavailable: "
                      + str(status.get("process", "no status in the header"))}])
        return
    window = "the end of the recording (its last sample) .. right after"
    checks = [check("final bytes (allocated + process used − reserved)", "final_bytes",
                    allocated_end + process_used - reserved_end,
                    "memory_allocated() + NVML per-process used "
                    "(nvmlDeviceGetComputeRunningProcesses, this pid) − memory_reserved()",
                    window, tolerance=0.01)]
    cases = [{"name": "recorder_external", "file": os.path.basename(path),
              "what": "memtide_record around one 64 MiB tensor on CUDA: external memory "
                      "= this process's NVML used − reserved",
              "command": ["summary", "--json", "{file}"], "checks": checks}]
    write_cases(out_dir, "recorder_external", cases)


def nvml_process_used(torch):
    """NVML's used device memory of this process (None: no nvidia-ml-py, or NVML does not
    list this pid, e.g. in a container's pid namespace)."""
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h):
            if p.pid == os.getpid() and isinstance(p.usedGpuMemory, int) \
                    and p.usedGpuMemory < (1 << 63):
                return p.usedGpuMemory
    except Exception:  # noqa: BLE001 - the check is skipped, with the recorder's reason
        return None
    return None


def worker_rank(out_dir, rank):
    import torch
    import torch.distributed as dist
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    dist.init_process_group("gloo", rank=rank, world_size=2)
    d = os.path.join(out_dir, "ranks")
    os.makedirs(d, exist_ok=True)
    torch.cuda.memory._record_memory_history(max_entries=100_000)
    torch.cuda.reset_peak_memory_stats()
    model, batch = models(torch, "mlp")
    model = model.cuda()
    train_steps(torch, model, lambda: batch(256 * (rank + 1)), False, steps=2)
    dist.barrier()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    torch.cuda.memory._dump_snapshot(os.path.join(d, f"rank{rank}.pickle"))
    with open(os.path.join(d, f"rank{rank}.counters.json"), "w") as f:
        json.dump({"rank": rank, "max_memory_allocated": peak}, f)
    dist.destroy_process_group()


# ---------------------------------------------------------------- the parent

def run_worker(out_dir, args, env_extra=None, timeout=300):
    env = dict(os.environ, **(env_extra or {}))
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, os.path.abspath(__file__), out_dir, "--worker", *args],
                       env=env, capture_output=True, text=True, timeout=timeout)
    log = os.path.join(out_dir, "logs")
    os.makedirs(log, exist_ok=True)
    with open(os.path.join(log, "_".join(args) + ".log"), "w", encoding="utf-8") as f:
        f.write(p.stdout + p.stderr)
    print(f"run.py: {' '.join(args)}: exit {p.returncode} in {time.monotonic() - t0:.1f} s",
          flush=True)
    return p


def failed_case(name, p):
    tail = (p.stderr or p.stdout or "").strip().splitlines()[-1:] or ["no output"]
    return {"name": name, "command": ["--version"], "what": "a worker that failed",
            "checks": [{"figure": "worker", "observed": f"exit {p.returncode}: {tail[0]}",
                        "expected": "exit 0", "counter": "the workload itself",
                        "window": "", "tolerance": 0, "op": "eq"}]}


def two_ranks(out_dir):
    env = {"MASTER_PORT": str(29500 + os.getpid() % 400)}
    procs = [subprocess.Popen([sys.executable, os.path.abspath(__file__), out_dir, "--worker",
                               "rank", str(r)], env=dict(os.environ, **env),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in (0, 1)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    d = os.path.join(out_dir, "ranks")
    if any(p.returncode for p in procs):
        why = next(o for p, o in zip(procs, outs) if p.returncode).strip().splitlines()[-1:]
        return [], [{"name": "two_ranks", "reason": f"the two-rank run failed: {why}"}]
    counters = []
    for r in (0, 1):
        with open(os.path.join(d, f"rank{r}.counters.json")) as f:
            counters.append(json.load(f))
        os.remove(os.path.join(d, f"rank{r}.counters.json"))
    worst = max(counters, key=lambda c: c["max_memory_allocated"])["rank"]
    return [{"name": "two_ranks", "optional": True, "file": "ranks",
             "what": "two gloo ranks on one GPU, rank 1 with twice the batch",
             "command": ["summary", "--json", "{file}"],
             "checks": [check("worst rank", "worst_rank", worst,
                              "the rank with the larger torch.cuda.max_memory_allocated()",
                              window="each rank's run")]}], []


def versions():
    import torch
    v = {"torch": torch.__version__, "cuda": str(torch.version.cuda),
         "gpu": torch.cuda.get_device_name(0)}
    try:
        v["driver"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError) as e:
        v["driver"] = f"unavailable ({e})"
    return v


def parent(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    manifest = {"versions": versions(), "cases": [], "skipped": []}
    jobs = [(f"train_{label}", ["train", label, conf],
             {"PYTORCH_CUDA_ALLOC_CONF": conf} if conf else {}) for label, conf in SETTINGS]
    jobs += [("oom", ["oom"], {}), ("kineto", ["kineto"], {}), ("recorder", ["recorder"], {}),
             ("recorder_external", ["recorder_external"], {})]
    for name, args, env in jobs:
        try:
            p = run_worker(out_dir, args, env)
        except subprocess.TimeoutExpired:
            manifest["cases"].append(failed_case(name, subprocess.CompletedProcess(
                args, 124, "", "timed out after 300 s")))
            continue
        if p.returncode != 0:
            manifest["cases"].append(failed_case(name, p))
    try:
        cases, skipped = two_ranks(out_dir)
    except (subprocess.TimeoutExpired, OSError) as e:
        cases, skipped = [], [{"name": "two_ranks", "reason": f"could not run: {e}"}]
    manifest["cases"] += cases
    manifest["skipped"] += skipped
    d = os.path.join(out_dir, "cases.d")
    for f in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        with open(os.path.join(d, f), encoding="utf-8") as fh:
            part = json.load(fh)
        manifest["cases"] += part["cases"]
        manifest["skipped"] += part["skipped"]
    with open(os.path.join(out_dir, "cases.json"), "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--worker", nargs="+")
    a = ap.parse_args()
    out_dir = os.path.abspath(a.out_dir)
    if not a.worker:
        parent(out_dir)
        return 0
    kind, rest = a.worker[0], a.worker[1:]
    try:
        if kind == "train":
            worker_train(out_dir, rest[0], rest[1] if len(rest) > 1 else "")
        elif kind == "oom":
            worker_oom(out_dir)
        elif kind == "kineto":
            worker_kineto(out_dir)
        elif kind == "recorder":
            worker_recorder(out_dir)
        elif kind == "recorder_external":
            worker_recorder_external(out_dir)
        elif kind == "rank":
            worker_rank(out_dir, int(rest[0]))
        else:
            raise SystemExit(f"run.py: unknown worker {kind}")
    except Exception:
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
