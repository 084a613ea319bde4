"""The recorded peak agrees with the PyTorch profiler's [memory] events for the same run."""

import json

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity, profile

import memtide_record as mr
from jsonl_replay import Replay


def profiler_peak(trace_path):
    """Peak and final of the running sum of CPU [memory] Bytes, and the max Total Allocated."""
    with open(trace_path, encoding="utf-8") as f:
        events = json.load(f)["traceEvents"]
    mem = [e for e in events if e.get("name") == "[memory]"
           and e["args"].get("Device Type", 0) == 0]
    assert len(mem) > 100
    run = peak = total = 0
    for e in mem:  # file order is allocator order
        run += e["args"]["Bytes"]
        peak = max(peak, run)
        total = max(total, e["args"]["Total Allocated"])
    return peak, run, total


def workload():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                          nn.Linear(512, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    mr.watch(model=model, optimizer=opt)
    for i in range(3):
        mr.step(i)
        opt.zero_grad(set_to_none=True)
        x = torch.randn(256, 128)
        y = torch.randint(0, 10, (256,))
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()


def test_peak_within_10_percent_of_profiler(tmp_path, summary):
    path = tmp_path / "run.jsonl"
    # The model is made inside both, so both see every byte from zero.
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        with mr.record(path):
            workload()
    chrome = tmp_path / "prof.json"
    prof.export_chrome_trace(str(chrome))
    p_peak, p_final, p_total = profiler_peak(chrome)
    s = summary(path)
    ours = s["peak"]["bytes"]
    print("peak", ours, p_peak, p_total, "final", s["final_bytes"], p_final)
    assert abs(ours - p_peak) <= 0.10 * p_peak, (ours, p_peak)
    assert abs(ours - p_total) <= 0.10 * p_total, (ours, p_total)
    assert abs(s["final_bytes"] - p_final) <= 0.10 * p_final, (s["final_bytes"], p_final)
    # Categories were learned from watch(): 16 B/param + step counters at the end.
    r = Replay(path)
    n = 128 * 512 + 512 + 512 * 512 + 512 + 512 * 10 + 10
    c = r.by_cat()
    assert (c["param"], c["grad"], c["optimizer"]) == (4 * n, 4 * n, 8 * n + 6 * 4)
