"""Measures the recorder's overhead on the test model (3-layer MLP, Adam, CPU) and on a small
transformer encoder: wall time per training step without and with recording, per option set.

    python python/bench/overhead.py [steps]
"""

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import memtide_record as mr  # noqa: E402


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
    if opts is None:
        t = time.perf_counter()
        for _ in range(steps):
            one()
        return (time.perf_counter() - t) / steps, None
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "run.jsonl")
        with mr.record(path, model=model, optimizer=opt, **opts) as rec:
            t = time.perf_counter()
            for i in range(steps):
                mr.step(i)
                one()
            dt = (time.perf_counter() - t) / steps
        return dt, (rec.lines_written, os.path.getsize(path), rec.overhead_ns / steps / 1e6)


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    torch.set_num_threads(1)
    configs = [("off", None), ("default", {}), ("stacks=False", {"stacks": False}),
               ("min_bytes=64KiB", {"min_bytes": 64 << 10})]
    for name, make in (("mlp (332k params)", mlp), ("encoder (2 layers, d=128)", encoder)):
        base = None
        for label, opts in configs:
            dt, extra = run(make, steps, opts)
            base = base or dt
            line = f"{name:28s} {label:16s} {dt * 1e3:8.2f} ms/step  x{dt / base:5.2f}"
            if extra:
                line += f"  {extra[0] / steps:7.0f} lines/step  {extra[1] / steps / 1024:7.1f} KiB/step"
            print(line)


if __name__ == "__main__":
    main()
