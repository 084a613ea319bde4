"""fp32 Adam holds 16 B/param: param 4 + grad 4 + exp_avg 4 + exp_avg_sq 4, plus one small
`step` tensor per parameter tensor. The expected numbers come from the model (numel), not from
the recording."""

import torch
import torch.nn as nn

import memtide_record as mr
from jsonl_replay import Replay


def train(path, steps=3):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(),
                          nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with mr.record(path, model=model, optimizer=opt):
        for i in range(steps):
            mr.step(i)
            opt.zero_grad(set_to_none=True)
            x = torch.randn(32, 64)
            y = torch.randint(0, 10, (32,))
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        mr.mark("done")
    return model, opt


def expected(model, opt):
    params = list(model.parameters())
    n = sum(p.numel() for p in params)
    steps = [opt.state[p]["step"] for p in params]
    # Adam's step counters: 0-d float32 tensors on the CPU unless capturable/fused.
    assert all(s.dim() == 0 and s.dtype == torch.float32 for s in steps)
    return n, 4 * len(steps)


def test_persistent_bytes_are_16_per_param(tmp_path, summary):
    path = tmp_path / "adam.jsonl"
    model, opt = train(path)
    n, step_bytes = expected(model, opt)
    r = Replay(path)
    # At "step 2" the gradients of step 1 and the Adam state made in step 0 are all live.
    cats = r.by_cat(r.marks["step 2"])
    assert cats.get("param") == 4 * n
    assert cats.get("grad") == 4 * n
    assert cats.get("optimizer") == 8 * n + step_bytes
    assert cats["param"] + cats["grad"] + cats["optimizer"] == 16 * n + step_bytes
    # The same after the last optimizer step.
    done = r.by_cat(r.marks["done"])
    assert (done["param"], done["grad"], done["optimizer"]) == (4 * n, 4 * n, 8 * n + step_bytes)
    # Each moment is named after its parameter and is exactly as big.
    names = {e.get("name"): e["size"] for e in r.ever.values()}
    for pname, p in model.named_parameters():
        for k in ("exp_avg", "exp_avg_sq"):
            assert names[f"{pname}.{k}"] == 4 * p.numel()
        assert names[pname] == 4 * p.numel()
    # memtide's strict reader accepts the file and agrees on the totals.
    s = summary(path)
    assert s["format"] == "jsonl" and s["devices"] == ["cpu"]
    assert s["final_bytes"] == r.live
    assert s["peak"]["bytes"] == r.peak
    assert s["peak"]["bands_source"] == "recorded"
    assert s["peak"]["bands"]["persistent"] >= 16 * n
    assert s["reserved_peak"] is None  # CPU: no allocator segments, unavailable (not zero)
    assert s["unmatched_frees"] == 0


def test_state_made_before_recording_is_noted_at_start(tmp_path, summary):
    torch.manual_seed(0)
    model = nn.Linear(32, 16)
    opt = torch.optim.Adam(model.parameters())
    model(torch.randn(4, 32)).sum().backward()
    opt.step()  # moments and grads exist before record()
    path = tmp_path / "pre.jsonl"
    with mr.record(path, model=model, optimizer=opt):
        mr.mark("start")
    r = Replay(path)
    n = sum(p.numel() for p in model.parameters())
    cats = r.by_cat(r.marks["start"])
    assert cats == {"param": 4 * n, "grad": 4 * n, "optimizer": 8 * n + 4 * 2}
    # They are the first lines of the file.
    first = [e["op"] for e in r.events[:6]]
    assert first == ["alloc"] * 6
    summary(path)


def test_header_param_count_gives_16_bytes_per_param(tmp_path, summary):
    """The header carries the model's parameter count (sum of numel), and memtide's
    persistent breakdown divides by it: fp32 Adam = 16 B/param plus 4 B per `step` tensor."""
    path = tmp_path / "adam.jsonl"
    model, opt = train(path)
    n, step_bytes = expected(model, opt)
    r = Replay(path)
    assert r.header["param_count"] == n
    s = summary(path)
    p = s["peak"]["persistent"]
    assert p["param_count"] == n
    assert p["source"] == "recorded"
    assert (p["params"], p["grads"], p["optimizer"]) == (4 * n, 4 * n, 8 * n + step_bytes)
    assert abs(p["bytes_per_param"] - (16 * n + step_bytes) / n) < 1e-9
    assert f"{p['bytes_per_param']:.1f}" == "16.0"
    assert p["model"] == "fp32 Adam: 16"


def test_no_model_no_param_count(tmp_path, summary):
    """Without a model or optimizer the count is unknown: the key is absent, never 0."""
    path = tmp_path / "bare.jsonl"
    with mr.record(path):
        torch.randn(64, 64)
        mr.mark("done")
    assert "param_count" not in Replay(path).header
    s = summary(path)
    p = s["peak"]["persistent"]
    assert p is None or p["param_count"] is None
