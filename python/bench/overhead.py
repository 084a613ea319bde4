"""Measures the recorder's overhead on the test model (3-layer MLP, Adam, CPU) and on a small
transformer encoder: CPU time per training step (process time, the minimum over repeats: robust
on a shared machine) without recording, under an empty TorchDispatchMode (the floor any
dispatch-mode recorder pays), and recording with each option set (`phases=False`: without the
phase marks and input labels the default writes from module and optimizer hooks).

    python python/bench/overhead.py [steps] [repeats]
"""

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import memtide_record as mr  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402


class Empty(TorchDispatchMode):
    ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        Empty.ops += 1
        return func(*args, **(kwargs or {}))


def mlp():
    m = nn.Sequential(nn.Linear(128, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                      nn.Linear(512, 10))
    return m, lambda: (torch.randn(256, 128), torch.randint(0, 10, (256,)))


def encoder():
    layer = nn.TransformerEncoderLayer(d_model=128, nhead=4, dim_feedforward=512,
                                       batch_first=True)
    body = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
    m = nn.Sequential(body, nn.Flatten(), nn.Linear(128 * 32, 10))
    return m, lambda: (torch.randn(16, 32, 128), torch.randint(0, 10, (16,)))


def run(make, steps, opts):
    torch.manual_seed(0)
    model, batch = make()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def one():
        opt.zero_grad(set_to_none=True)
        x, y = batch()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    one()  # warm-up: Adam state, lazy inits
    if opts is None or opts == "empty":
        Empty.ops = 0
        with Empty() if opts else _null():
            t = time.process_time()
            for _ in range(steps):
                one()
            return (time.process_time() - t) / steps, (Empty.ops / steps,)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "run.jsonl")
        with mr.record(path, model=model, optimizer=opt, **opts) as rec:
            t = time.process_time()
            for i in range(steps):
                mr.step(i)
                one()
            dt = (time.process_time() - t) / steps
        return dt, (rec.lines_written / steps, os.path.getsize(path) / steps / 1024,
                    rec.overhead_ns / steps / 1e6)


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    torch.set_num_threads(1)
    configs = [("off", None), ("empty mode", "empty"), ("default", {}),
               ("phases=False", {"phases": False}), ("stacks=False", {"stacks": False}),
               ("min_bytes=64KiB", {"min_bytes": 64 << 10})]
    print(f"CPU ms per step, min of {repeats} x {steps} steps; torch {torch.__version__}")
    for name, make in (("mlp (332k params)", mlp), ("encoder (2 layers, d=128)", encoder)):
        base = None
        for label, opts in configs:
            runs = [run(make, steps, opts) for _ in range(repeats)]
            dt, extra = min(runs, key=lambda r: r[0])
            base = base or dt
            line = f"{name:26s} {label:16s} {dt * 1e3:7.2f} ms  x{dt / base:4.2f}"
            if len(extra) == 1:
                line += f"  {extra[0]:5.0f} ops/step" if opts else ""
            else:
                line += (f"  {extra[0]:5.0f} lines/step {extra[1]:6.1f} KiB/step"
                         f"  recorder's own bookkeeping {extra[2]:5.2f} ms/step")
            print(line)


if __name__ == "__main__":
    main()
