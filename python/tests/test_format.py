"""The file itself: header, strictly increasing t, allowed categories, trimmed user stacks
innermost first, lines visible while recording, and the size threshold."""

import json
import os
import re
import subprocess
import time

import torch
import torch.nn as nn

import memtide_record as mr
from jsonl_replay import Replay

CATS = {"param", "grad", "optimizer", "buffer", "activation", "input", "workspace", "temp",
        "external"}


def inner_alloc():
    return torch.empty(12345, dtype=torch.uint8)


def outer_alloc():
    return inner_alloc()


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def test_header_order_categories_and_stacks(tmp_path, summary):
    path = tmp_path / "f.jsonl"
    model = nn.Sequential(nn.Linear(8, 8), nn.BatchNorm1d(8))
    with mr.record(path, model=model):
        keep = outer_alloc()
        model(torch.randn(4, 8)).sum().backward()
    r = Replay(path)
    h = r.header
    assert h["memtide"] == 1 and h["device"] == "cpu" and h["clock"] == "ns"
    assert "capacity" not in h  # unavailable on CPU, never a made-up number
    ts = [e["t"] for e in r.events]
    assert all(a < b for a, b in zip(ts, ts[1:])), "t must strictly increase"
    ops = {e["op"] for e in r.events}
    assert not ops & {"reserve", "unreserve", "sample", "external"}  # CUDA-only sources
    for e in r.events:
        if "cat" in e:
            assert e["cat"] in CATS
        for frame in e.get("stack", []):
            assert re.fullmatch(r"[^/:]+\.py:\d+ \S+", frame), frame
            assert "torch" not in frame and "memtide_record" not in frame
    cats = {e.get("name"): e.get("cat") for e in r.ever.values()}
    assert cats["1.running_mean"] == "buffer" and cats["0.weight"] == "param"
    mine = next(e for e in r.ever.values() if e["size"] == 12345)
    assert mine["stack"][0].startswith("test_format.py:") and mine["stack"][0].endswith(
        " inner_alloc")
    assert mine["stack"][1].endswith(" outer_alloc")
    assert mine["stack"][2].endswith(" test_header_order_categories_and_stacks")
    del keep
    summary(path)


def test_lines_are_visible_while_recording(tmp_path):
    path = tmp_path / "live.jsonl"
    with mr.record(path, max_delay=0.05):
        mr.mark("hello")
        text = read_lines(path)
        assert text.endswith("\n") and '"name":"hello"' in text  # marks are written at once
        t = torch.empty(777, dtype=torch.uint8)
        # An alloc waits at most a few max_delay for its category, even with no further ops.
        deadline = time.time() + 5
        while '"size":777' not in read_lines(path):
            assert time.time() < deadline, "alloc line never written while idle"
            time.sleep(0.02)
        # Every line written so far is whole JSON.
        for line in read_lines(path).splitlines():
            json.loads(line)
        del t


def test_follower_sees_the_peak_before_the_run_ends(tmp_path, memtide_bin):
    path = tmp_path / "follow.jsonl"
    with mr.record(path, max_delay=0.05):
        mr.step(0)
        check = subprocess.Popen(
            [memtide_bin, "check", "-f", str(path), "--max-peak", "32MiB", "--poll", "20"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            time.sleep(0.3)
            assert check.poll() is None  # under the limit: still following
            big = torch.zeros(48 << 20, dtype=torch.uint8)
            mr.step(1)
            out, _ = check.communicate(timeout=10)  # exits while we are still recording
        finally:
            if check.poll() is None:
                check.kill()
        assert check.returncode == 1, out
        assert out.startswith("FAIL: peak"), out
        del big


def test_min_bytes_skips_small_storages(tmp_path, summary):
    path = tmp_path / "min.jsonl"
    with mr.record(path, min_bytes=1 << 20):
        small = [torch.empty(1000) for _ in range(50)]
        big = torch.empty(1 << 20)
        mr.mark("m")
        del small, big
    r = Replay(path)
    assert [e["size"] for e in r.ever.values()] == [4 << 20]
    assert summary(path)["final_bytes"] == 0
