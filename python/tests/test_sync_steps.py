"""sync_steps: the header says the step marks are synchronized (so `memtide diff` reports
synchronized step times), and without it the key is absent (trace time)."""

import json

import torch
import torch.nn as nn

import memtide_record as mr


def header(path):
    with open(path, encoding="utf-8") as f:
        return json.loads(f.readline())


def steps(path, sync):
    model = nn.Linear(16, 16)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with mr.record(path, model=model, optimizer=opt, sync_steps=sync) as rec:
        for i in range(3):
            mr.step(i)
            model(torch.randn(4, 16)).sum().backward()
            opt.step()
            opt.zero_grad()
    return rec


def test_sync_steps_marks_the_clock(tmp_path):
    rec = steps(tmp_path / "s.jsonl", True)
    assert header(tmp_path / "s.jsonl")["meta"]["step_clock"] == "synchronized"
    # CPU ops are synchronous: nothing to wait for, no synchronize() call made.
    assert rec.syncs == 0
    steps(tmp_path / "t.jsonl", False)
    assert "step_clock" not in header(tmp_path / "t.jsonl")["meta"]
