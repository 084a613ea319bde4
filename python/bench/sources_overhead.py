"""Measures what one ``sample`` line of the recorder costs (issue 39): the sources of memory
outside PyTorch read once per ``sample_every`` (64) ops and at marks. With fakes on CPU it is
the recorder's own bookkeeping; on a CUDA machine with nvidia-ml-py it adds the real NVML query
(``nvmlDeviceGetComputeRunningProcesses``), ``memory_stats()`` of the process groups and
``torch.cuda.host_memory_stats()``. Prints µs per sample (the minimum of ``repeats`` runs of
``n`` samples) and that cost spread over the 64 ops between two samples.

    python python/bench/sources_overhead.py [n] [repeats]
"""

import os
import sys
import time
import types

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from memtide_record import _sources  # noqa: E402

SAMPLE_EVERY = 64


def fake_sources():
    pid = os.getpid()
    procs = [types.SimpleNamespace(pid=p, usedGpuMemory=1 << 30) for p in (pid + 1, pid)]
    nvml = types.SimpleNamespace(nvmlDeviceGetComputeRunningProcesses=lambda h: procs)
    dist = types.SimpleNamespace(is_available=lambda: True, is_initialized=lambda: False)
    cuda = types.SimpleNamespace(host_memory_stats=lambda: {"allocated_bytes.current": 1 << 20})
    return _sources.probe("cuda:0", pynvml=nvml, handle="h", dist=dist, torch_cuda=cuda,
                          pid=pid)


def real_sources():
    try:
        import pynvml
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    torch.zeros(1, device="cuda")  # this process must hold a context to be listed
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
    return _sources.probe(torch.device("cuda", torch.cuda.current_device()), pynvml=pynvml,
                          handle=h, dist=torch.distributed, torch_cuda=torch.cuda)


def per_sample_us(src, n, repeats):
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter_ns()
        for _ in range(n):
            src.sample()
        best = min(best, (time.perf_counter_ns() - t) / n / 1000)
    return best


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    for label, src in (("fakes (CPU)", fake_sources()), ("real NVML/CUDA", real_sources())):
        if src is None:
            print(f"{label:16} skipped (no CUDA or no nvidia-ml-py)")
            continue
        us = per_sample_us(src, n, repeats)
        print(f"{label:16} {us:8.2f} µs per sample · {us / SAMPLE_EVERY:6.3f} µs per op at "
              f"sample_every={SAMPLE_EVERY} · status {src.status}")


if __name__ == "__main__":
    main()
