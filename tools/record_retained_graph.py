#!/usr/bin/env python3
"""Records tests/data/retained-graph/: a real PyTorch profiler trace of a run that keeps its
autograd graphs alive across steps, plus PyTorch's own memory categories for it.

Needs torch (any recent CPU build; made with torch 2.15 from scripts/setup-python-env):

    ~/.cache/memtide/py-env/bin/python tools/record_retained_graph.py tests/data/retained-graph

`--variant outputs` records a second shape (used by a test as a held-out run, not committed):
the model outputs (with their graphs) are kept instead of the losses, SGD with momentum
instead of Adam, and `zero_grad(set_to_none=False)` so the gradients live for the whole run.

The run: a 3-layer MLP (256 -> 512 -> 512 -> 10, 0.4 M parameters), Adam, batch 64, four
steps on the CPU. Every step calls `loss.backward(retain_graph=True)` and appends the loss
(with its graph) to a list that lives for the whole run, the classic "accumulate the loss
for logging without .item()" leak: each step's saved activations survive every later step
boundary, so the baseline rises step by step. PyTorch labels those survivors ACTIVATION.

Writes `trace.json.gz` (export_chrome_trace), `memory_timeline.raw.json.gz` and
`memory_timeline.json` (export_memory_timeline) and `meta.json` (how it was made).
"""

import gzip
import json
import os
import platform
import shutil
import sys
import tempfile
import warnings


def main() -> int:
    args = sys.argv[1:]
    variant = "losses"
    if len(args) == 3 and args[1] == "--variant" and args[2] in ("losses", "outputs"):
        variant = args[2]
        args = args[:1]
    if len(args) != 1:
        print("usage: record_retained_graph.py OUT_DIR [--variant losses|outputs]", file=sys.stderr)
        return 2
    out = args[0]
    os.makedirs(out, exist_ok=True)
    warnings.simplefilter("ignore")
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule

    torch.manual_seed(0)
    torch.set_num_threads(1)
    cfg = {"d_in": 256, "hidden": 512, "n_classes": 10, "batch": 1024, "steps": 4, "lr": 1e-3}
    model = torch.nn.Sequential(
        torch.nn.Linear(cfg["d_in"], cfg["hidden"]),
        torch.nn.ReLU(),
        torch.nn.Linear(cfg["hidden"], cfg["hidden"]),
        torch.nn.ReLU(),
        torch.nn.Linear(cfg["hidden"], cfg["n_classes"]),
    )
    if variant == "losses":
        opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    else:
        opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=0.9)
    xs = [torch.randn(cfg["batch"], cfg["d_in"]) for _ in range(cfg["steps"])]
    ys = [torch.randint(0, cfg["n_classes"], (cfg["batch"],)) for _ in range(cfg["steps"])]
    kept = []  # losses with their graphs: the retained-graph survivors
    # A schedule makes prof.step() write the ProfilerStep#N spans real training traces carry.
    steps = cfg["steps"]
    with profile(
        activities=[ProfilerActivity.CPU],
        schedule=schedule(wait=0, warmup=0, active=steps, repeat=1),
        profile_memory=True,
        record_shapes=True,
        with_stack=True,
    ) as prof:
        for step in range(cfg["steps"]):
            opt.zero_grad(set_to_none=variant == "losses")
            out_t = model(xs[step])
            loss = torch.nn.functional.cross_entropy(out_t, ys[step])
            loss.backward(retain_graph=True)
            opt.step()
            kept.append(loss if variant == "losses" else out_t)
            prof.step()
    tmp = tempfile.mkdtemp()
    try:
        raw = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(raw)
        with open(raw, "rb") as f, gzip.GzipFile(
            os.path.join(out, "trace.json.gz"), "wb", mtime=0
        ) as g:
            shutil.copyfileobj(f, g)
    finally:
        shutil.rmtree(tmp)
    prof.export_memory_timeline(os.path.join(out, "memory_timeline.raw.json.gz"), device="cpu")
    prof.export_memory_timeline(os.path.join(out, "memory_timeline.json"), device="cpu")
    n_params = sum(p.numel() for p in model.parameters())
    meta = {
        "made_by": "tools/record_retained_graph.py",
        "torch_version": torch.__version__,
        "python": platform.python_version(),
        "config": cfg,
        "param_count": n_params,
        "param_bytes": 4 * n_params,
        "variant": variant,
        "optimizer": type(opt).__name__,
        "retained": f"loss.backward(retain_graph=True); kept.append({'loss' if variant == 'losses' else 'output'}) every step",
        "kept": len(kept),
    }
    with open(os.path.join(out, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
