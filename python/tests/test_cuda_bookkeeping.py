"""The CUDA-only sources' bookkeeping, driven without a GPU: reserved-memory deltas become
reserve/unreserve lines whose running total is the reserved figure, and OOM messages give the
oom line's sizes. (On a GPU the numbers come from torch.cuda.memory_reserved and NVML.)"""

import json

import torch

import memtide_record as mr
from memtide_record import _recorder

MiB = 1 << 20


def test_reserved_deltas_replay_to_the_reserved_figure(tmp_path, monkeypatch, summary):
    path = tmp_path / "reserved.jsonl"
    seq = [2, 22, 22, 2, 12, 5, 0, 7]
    now = {"v": 0}
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: now["v"])
    with mr.record(path) as rec:
        for mib in seq:
            now["v"] = mib * MiB
            with rec._lock:
                rec._poll_cuda(nvml=False)
            rec.mark(f"reserved {mib}")
    lines = [json.loads(l) for l in open(path, encoding="utf-8")][1:]
    live = {}
    for e in lines:
        if e["op"] == "reserve":
            live[e["id"]] = e["size"]
        elif e["op"] == "unreserve":
            del live[e["id"]]
        elif e["op"] == "mark":
            assert sum(live.values()) == int(e["name"].split()[1]) * MiB
    s = summary(path)
    assert s["reserved_peak"] == 22 * MiB


def test_oom_message_sizes():
    msg = ("CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of "
           "79.11 GiB of which 6.44 MiB is free. Including non-PyTorch memory, this process "
           "has 79.10 GiB memory in use.")
    assert _recorder._parse_size(_recorder._SIZE_RE.search(msg)) == 20 * MiB
    assert _recorder._parse_size(_recorder._FREE_RE.search(msg)) == int(6.44 * MiB)


def test_reset_peak_calls_become_marks_and_the_wrapper_is_removed(tmp_path, monkeypatch,
                                                                   summary):
    path = tmp_path / "reset.jsonl"
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 0)
    orig = torch.cuda.memory.reset_peak_memory_stats
    with mr.record(path) as rec:
        with rec._lock:
            rec._init_cuda()  # what start() does on a CUDA device (NVML absent here)
        for fn in (torch.cuda.reset_peak_memory_stats, torch.cuda.memory.reset_peak_memory_stats):
            try:
                fn()
            except (RuntimeError, AssertionError):  # no GPU: the real call fails after the mark
                pass
    assert torch.cuda.reset_peak_memory_stats is orig
    assert torch.cuda.memory.reset_peak_memory_stats is orig
    marks = [json.loads(l) for l in open(path, encoding="utf-8") if '"op":"mark"' in l]
    assert [m["kind"] for m in marks] == ["reset_peak", "reset_peak"]
    assert not any('"op":"sample"' in l for l in open(path, encoding="utf-8"))
    summary(path)
