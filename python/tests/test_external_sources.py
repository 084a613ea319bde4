"""The recorder's sources of memory outside PyTorch (issue 39), driven with fakes on CPU:
NVML's per-process used memory (this pid only: other processes on the GPU are left out),
NCCL's memory_stats() per communicator, pinned host memory. Each source is probed; one that
is missing is reported unavailable in the header and written as nothing, never 0. The
recording's summary splits external memory into the named sources and "unattributed"."""

import json
import types

import torch

import memtide_record as mr
from memtide_record import _sources

MiB = 1 << 20
PID = 4242


def fake_nvml(procs):
    """A pynvml whose running processes are ``procs`` [(pid, used or None)]."""
    def running(handle):
        assert handle == "h0"
        return [types.SimpleNamespace(pid=p, usedGpuMemory=u) for p, u in procs]
    return types.SimpleNamespace(nvmlDeviceGetComputeRunningProcesses=running)


def fake_dist(*stats):
    """torch.distributed with one process group per ``stats`` (a callable's result, or None:
    that group offers no memory_stats())."""
    class Group:  # hashable, as process groups are (pg_map's keys)
        def __init__(self, backend):
            self.backend = backend

        def _get_backend(self, device):
            return self.backend

    groups = []
    for st in stats:
        backend = types.SimpleNamespace()
        if st is not None:
            backend.memory_stats = (lambda st=st: st)
        groups.append(Group(backend))
    world = types.SimpleNamespace(pg_map={g: None for g in groups})
    c10d = types.SimpleNamespace(_get_default_group=lambda: groups[0], _world=world)
    return types.SimpleNamespace(is_available=lambda: True, is_initialized=lambda: True,
                                 distributed_c10d=c10d)


def no_dist():
    return types.SimpleNamespace(is_available=lambda: True, is_initialized=lambda: False)


def test_process_memory_is_this_pid_only():
    nvml = fake_nvml([(999, 5000 * MiB), (PID, 700 * MiB)])
    s = _sources.probe("cuda:0", pynvml=nvml, handle="h0", dist=no_dist(),
                       torch_cuda=types.SimpleNamespace(), pid=PID)
    assert s.status["process"] == "ok"
    assert s.sample() == {"used": 700 * MiB, "scope": "process"}
    assert s.status["nccl"].startswith("unavailable")
    assert s.status["host_pinned"].startswith("unavailable")


def test_a_process_nvml_does_not_list_is_unavailable_never_0():
    for procs in ([(999, 5000 * MiB)], [(PID, None)], [(PID, (1 << 64) - 1)]):
        s = _sources.probe("cuda:0", pynvml=fake_nvml(procs), handle="h0", dist=no_dist(),
                           torch_cuda=types.SimpleNamespace(), pid=PID)
        assert s.status["process"].startswith("unavailable"), procs
        assert s.sample() is None, procs
    s = _sources.probe("cuda:0", pynvml=None, handle=None, dist=no_dist(),
                       torch_cuda=types.SimpleNamespace(), pid=PID)
    assert "not installed" in s.status["process"]
    assert s.sample() is None


def test_nccl_is_summed_over_communicators_that_offer_memory_stats():
    nvml = fake_nvml([(PID, 900 * MiB)])
    dist = fake_dist({"bytes": 128 * MiB}, None, 64 * MiB)
    s = _sources.probe("cuda:0", pynvml=nvml, handle="h0", dist=dist,
                       torch_cuda=types.SimpleNamespace(), pid=PID)
    assert s.status["nccl"] == "ok (2 communicator(s))"
    assert s.sample() == {"used": 900 * MiB, "scope": "process",
                          "sources": {"nccl": 192 * MiB}}
    # A dict memtide cannot read is unavailable, not 0.
    dist = fake_dist({"weird": "x"})
    s = _sources.probe("cuda:0", pynvml=nvml, handle="h0", dist=dist,
                       torch_cuda=types.SimpleNamespace(), pid=PID)
    assert s.status["nccl"].startswith("unavailable")
    assert "sources" not in s.sample()


def test_pinned_host_memory_is_recorded_apart():
    nvml = fake_nvml([(PID, 900 * MiB)])
    cuda = types.SimpleNamespace(host_memory_stats=lambda: {"allocated_bytes.current": 3 * MiB,
                                                            "active_bytes.current": MiB})
    s = _sources.probe("cuda:0", pynvml=nvml, handle="h0", dist=no_dist(), torch_cuda=cuda,
                       pid=PID)
    assert s.status["host_pinned"] == "ok"
    assert s.sample()["host_pinned"] == 3 * MiB
    # An empty dict (no pinned allocation yet, or an older build) is unavailable.
    cuda = types.SimpleNamespace(host_memory_stats=lambda: {})
    s = _sources.probe("cuda:0", pynvml=nvml, handle="h0", dist=no_dist(), torch_cuda=cuda,
                       pid=PID)
    assert s.status["host_pinned"].startswith("unavailable")
    assert "host_pinned" not in s.sample()


def test_a_recording_splits_external_into_nccl_and_unattributed(tmp_path, monkeypatch,
                                                                 summary):
    """The recorder's sample lines through memtide: at the sample, external = the process's
    used − reserved = 600 MiB, NCCL's 256 of it named, 344 unattributed."""
    path = tmp_path / "rec.jsonl"
    reserved = {"v": 0}
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: reserved["v"])
    nvml = fake_nvml([(999, 9000 * MiB), (PID, 700 * MiB)])
    with mr.record(path) as rec:
        rec._sources = _sources.probe("cuda:0", pynvml=nvml, handle="h0",
                                      dist=fake_dist({"bytes": 256 * MiB}),
                                      torch_cuda=types.SimpleNamespace(), pid=PID)
        reserved["v"] = 100 * MiB
        with rec._lock:
            rec._poll_cuda(nvml=True)
        rec.mark("sampled")
    lines = [json.loads(l) for l in open(path, encoding="utf-8")][1:]
    samples = [e for e in lines if e["op"] == "sample"]
    assert samples == [{"t": samples[0]["t"], "op": "sample", "used": 700 * MiB,
                        "scope": "process", "sources": {"nccl": 256 * MiB}}]
    s = summary(path)
    assert s["peak"]["bands"]["external"] == 600 * MiB
    assert s["peak"]["external_by_source"] == {"unattributed": 344 * MiB, "nccl": 256 * MiB}


def test_without_nvml_the_recording_says_external_unavailable(tmp_path, monkeypatch, summary):
    path = tmp_path / "none.jsonl"
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 50 * MiB)
    with mr.record(path) as rec:
        rec._sources = _sources.probe("cuda:0", pynvml=None, dist=no_dist(),
                                      torch_cuda=types.SimpleNamespace(), pid=PID)
        with rec._lock:
            rec._poll_cuda(nvml=True)
    assert not any('"sample"' in l for l in open(path, encoding="utf-8"))
    s = summary(path)
    assert s["peak"]["bands"]["external"] is None
    assert s["peak"]["external_by_source"] is None
