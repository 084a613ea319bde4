"""phases=True (the default): hooks on the model and optimizer label the batch `input` and write
forward / backward / Optimizer.step phase marks, so `memtide diff` can check parity on inputs
and phases of two recorder files; phases=False writes neither (inputs then unknown)."""

import json
import subprocess

import torch
import torch.nn as nn

import memtide_record as mr


def train(path, batch, phases=True, steps=3):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 256))
    opt = torch.optim.Adam(model.parameters())
    with mr.record(path, model=model, optimizer=opt, phases=phases, min_bytes=1024):
        for i in range(steps):
            mr.step(i)
            x = torch.randn(batch, 256)
            model(x).pow(2).mean().backward()
            opt.step()
            opt.zero_grad()


def lines(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(l) for l in f]


def diff(memtide_bin, a, b):
    p = subprocess.run([memtide_bin, "diff", "--json", str(a), str(b)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_phase_marks_and_the_input_batch(tmp_path):
    train(tmp_path / "a.jsonl", 64)
    ev = lines(tmp_path / "a.jsonl")[1:]
    marks = [e["name"] for e in ev if e["op"] == "mark"]
    # Each step: its mark, then forward, backward, the optimizer step, in that order.
    want = []
    for i in range(3):
        want += [f"step {i}", "forward", "backward", "Optimizer.step#Adam.step"]
    assert marks == want
    # One input per step: the 64 × 256 fp32 batch (64 KiB), made before its forward mark.
    inputs = [e for e in ev if e["op"] == "alloc" and e.get("cat") == "input"]
    assert [e["size"] for e in inputs] == [64 * 256 * 4] * 3
    # Each batch is made before its step's forward: the next mark after it is `forward`.
    for k, e in enumerate(ev):
        if e in inputs:
            nxt = next(m for m in ev[k + 1:] if m["op"] == "mark")
            assert nxt["name"] == "forward", nxt


def test_diff_checks_inputs_and_phases_of_recorder_files(tmp_path, memtide_bin):
    train(tmp_path / "a.jsonl", 64)
    train(tmp_path / "b.jsonl", 128)
    train(tmp_path / "c.jsonl", 64)
    same = diff(memtide_bin, tmp_path / "a.jsonl", tmp_path / "c.jsonl")
    assert same["parity"]["verdict"] == "same_work", same["parity"]
    assert same["parity"]["lines"]["inputs"]["a"]["source"] == "recorded"
    assert same["parity"]["lines"]["phases"]["state"] == "same"
    assert same["boundary"]["a"]["kind"] == "full_update"
    other = diff(memtide_bin, tmp_path / "a.jsonl", tmp_path / "b.jsonl")
    assert other["parity"]["verdict"] == "different_work"
    assert other["parity"]["differs"] == ["inputs"]
    per = other["parity"]["lines"]["inputs"]
    assert per["a"]["per_step"][0]["sizes"] == [64 * 256 * 4]
    assert per["b"]["per_step"][0]["sizes"] == [128 * 256 * 4]


def test_phases_off_writes_no_phase_marks_and_no_input(tmp_path, memtide_bin):
    train(tmp_path / "a.jsonl", 64, phases=False)
    ev = lines(tmp_path / "a.jsonl")[1:]
    assert [e["kind"] for e in ev if e["op"] == "mark"] == ["step"] * 3
    assert not any(e.get("cat") == "input" for e in ev)
    v = diff(memtide_bin, tmp_path / "a.jsonl", tmp_path / "a.jsonl")
    # No allocation names the inputs: they are judged from evidence (the first forward's
    # allocations, the same file on both sides), never from a label.
    inputs = v["parity"]["lines"]["inputs"]
    assert inputs["state"] == "same"
    assert inputs["words"].startswith("same (inferred: the first forward allocates")
    assert inputs["a"]["source"] is None
    # A batch twice as large: the evidence disagrees, and the inputs cannot be told.
    train(tmp_path / "b.jsonl", 128, phases=False)
    w = diff(memtide_bin, tmp_path / "a.jsonl", tmp_path / "b.jsonl")
    assert w["parity"]["lines"]["inputs"]["state"] == "unknown"
    assert "the evidence disagrees" in w["parity"]["lines"]["inputs"]["words"]
