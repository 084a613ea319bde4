"""Sources of memory outside PyTorch's allocator, probed once and sampled by the recorder.

Each source is optional: a probe that fails leaves it *unavailable* (its reason kept for the
file's header), never 0.

- ``process``: the device memory NVML says this process uses
  (``nvmlDeviceGetComputeRunningProcesses`` filtered by our pid — not the whole device, so
  other processes on the GPU are left out). external = process used − PyTorch's reserved.
- ``nccl``: NCCL's memory, summed over the communicators whose process group (backend)
  offers ``memory_stats()``.
- ``host_pinned``: PyTorch's pinned host memory (``torch.cuda.host_memory_stats()``): host
  memory, written for the record but never counted on the device.

The part of external memory no source names (the CUDA context, cuDNN/cuBLAS workspaces,
other libraries) is "unattributed" — memtide computes it as external − the named sources.
"""

import os

# Keys a memory_stats()/host_memory_stats() dict may give its current bytes under, in the
# order they are preferred.
_NCCL_KEYS = ("bytes", "total_bytes", "allocated_bytes", "used_bytes", "memory_bytes",
              "allocated_bytes.all.current", "reserved_bytes.all.current")
# torch.cuda.host_memory_stats(): "allocated_bytes" are the pinned blocks the host
# allocator holds (its cache included), "active_bytes" those in use.
_HOST_KEYS = ("allocated_bytes.current", "active_bytes.current")


def _bytes_of(stats, keys):
    """The current bytes in a stats result: an int, or a dict with one of ``keys``."""
    if isinstance(stats, bool):
        return None
    if isinstance(stats, int):
        return stats if stats >= 0 else None
    if isinstance(stats, dict):
        for k in keys:
            v = stats.get(k)
            if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                return v
    return None


class ProcessMemory:
    """NVML's used device memory of one process on one device."""

    name = "process"

    def __init__(self, pynvml, handle, pid):
        self._nvml, self._h, self._pid = pynvml, handle, pid
        fn = getattr(pynvml, "nvmlDeviceGetComputeRunningProcesses_v3", None) or \
            getattr(pynvml, "nvmlDeviceGetComputeRunningProcesses")
        self._list = fn

    def read(self):
        """Bytes, or None when NVML does not list this process (another pid namespace, MIG
        without per-process accounting) or does not know its memory."""
        for p in self._list(self._h):
            if getattr(p, "pid", None) == self._pid:
                used = getattr(p, "usedGpuMemory", None)
                # NVML_VALUE_NOT_AVAILABLE is (unsigned long long)-1.
                if isinstance(used, int) and 0 <= used < (1 << 63):
                    return used
                return None
        return None


class NcclMemory:
    """NCCL's bytes, summed over the communicators that offer ``memory_stats()``."""

    name = "nccl"

    def __init__(self, stats_fns):
        self._fns = stats_fns

    def read(self):
        total = 0
        for fn in self._fns:
            b = _bytes_of(fn(), _NCCL_KEYS)
            if b is None:
                return None
            total += b
        return total


class HostPinned:
    """PyTorch's pinned host memory (host memory: recorded, not counted on the device)."""

    name = "host_pinned"

    def __init__(self, stats_fn):
        self._fn = stats_fn

    def read(self):
        return _bytes_of(self._fn(), _HOST_KEYS)


class Sources:
    """The probed sources; ``status`` names each with "ok" or why it is unavailable."""

    def __init__(self, process=None, nccl=None, host=None, status=None):
        self.process, self.nccl, self.host = process, nccl, host
        self.status = dict(status or {})

    def sample(self):
        """The fields of one ``sample`` line, or None when the process's own used memory
        cannot be read now (then nothing is written: external stays unknown, not 0)."""
        if self.process is None:
            return None
        try:
            used = self.process.read()
        except Exception:  # noqa: BLE001 - a failing NVML query loses one sample
            return None
        if used is None:
            return None
        fields = {"used": int(used), "scope": "process"}
        named = {}
        for src in (self.nccl,):
            if src is None:
                continue
            try:
                b = src.read()
            except Exception:  # noqa: BLE001 - a failing source is unknown in this sample
                b = None
            if b is not None:
                named[src.name] = int(b)
        if named:
            fields["sources"] = named
        if self.host is not None:
            try:
                h = self.host.read()
            except Exception:  # noqa: BLE001
                h = None
            if h is not None:
                fields["host_pinned"] = int(h)
        return fields


def _probe_process(pynvml, handle, pid, status):
    if pynvml is None or handle is None:
        status["process"] = "unavailable: nvidia-ml-py (pynvml) is not installed or NVML failed"
        return None
    try:
        src = ProcessMemory(pynvml, handle, pid)
    except AttributeError:
        status["process"] = "unavailable: NVML has no nvmlDeviceGetComputeRunningProcesses"
        return None
    try:
        used = src.read()
    except Exception as e:  # noqa: BLE001
        status["process"] = f"unavailable: nvmlDeviceGetComputeRunningProcesses failed ({e})"
        return None
    if used is None:
        status["process"] = (f"unavailable: NVML does not list pid {pid} with its memory on this "
                             "device (a container's pid namespace, or MIG)")
        return None
    status["process"] = "ok"
    return src


def _process_groups(dist):
    """Every process group this process belongs to (the default first)."""
    groups = []
    try:
        c10d = dist.distributed_c10d
        default = c10d._get_default_group()
        groups.append(default)
        world = getattr(c10d, "_world", None)
        for pg in list(getattr(world, "pg_map", {}) or {}):
            if all(pg is not g for g in groups):
                groups.append(pg)
    except Exception:  # noqa: BLE001 - private API moved: the default group only
        pass
    return groups


def _probe_nccl(dist, device, status):
    if dist is None or not dist.is_available() or not dist.is_initialized():
        status["nccl"] = "unavailable: torch.distributed is not initialised"
        return None
    fns = []
    for pg in _process_groups(dist):
        backend = pg
        try:
            backend = pg._get_backend(device)
        except Exception:  # noqa: BLE001 - older PyTorch: the group is its backend
            pass
        fn = getattr(backend, "memory_stats", None) or getattr(pg, "memory_stats", None)
        if callable(fn):
            fns.append(fn)
    if not fns:
        status["nccl"] = "unavailable: no process group offers memory_stats()"
        return None
    src = NcclMemory(fns)
    try:
        b = src.read()
    except Exception as e:  # noqa: BLE001
        status["nccl"] = f"unavailable: memory_stats() failed ({e})"
        return None
    if b is None:
        status["nccl"] = "unavailable: memory_stats() gives no byte count memtide knows"
        return None
    status["nccl"] = f"ok ({len(fns)} communicator(s))"
    return src


def _probe_host(torch_cuda, status):
    fn = getattr(torch_cuda, "host_memory_stats", None)
    if not callable(fn):
        status["host_pinned"] = "unavailable: torch.cuda.host_memory_stats() (PyTorch >= 2.6)"
        return None
    src = HostPinned(fn)
    try:
        b = src.read()
    except Exception as e:  # noqa: BLE001
        status["host_pinned"] = f"unavailable: host_memory_stats() failed ({e})"
        return None
    if b is None:
        status["host_pinned"] = "unavailable: host_memory_stats() gives no byte count"
        return None
    status["host_pinned"] = "ok"
    return src


def probe(device, pynvml=None, handle=None, dist=None, torch_cuda=None, pid=None):
    """Probes each source for ``device``; the modules are passed in (tests give fakes)."""
    status = {}
    pid = os.getpid() if pid is None else pid
    process = _probe_process(pynvml, handle, pid, status)
    nccl = _probe_nccl(dist, device, status)
    host = _probe_host(torch_cuda, status)
    return Sources(process, nccl, host, status)
