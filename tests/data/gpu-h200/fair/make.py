"""Made tests/data/gpu-h200/fair/*.pt.trace.json.gz on a loaned NVIDIA H200 (torch 2.11.0+cu130,
2026-12-04), run as `OUT=dir python3 make.py` then `gzip -9 dir/*.json`: 3 profiled Adam steps
of 4 blocks (Linear 1024→4096, GELU, Linear 4096→1024), batch 512, plain and under
`torch.autograd.graph.save_on_cpu(pin_memory=True)` (k_off → kineto_save_on_cpu; k_base →
kineto_base). The checkpointed twin (k_ck) was also made but is not kept: without `with_stack`
a Kineto trace has no checkpoint frames to name the method."""
import os

import torch
import torch.nn as nn
from torch.profiler import ProfilerActivity as A
from torch.profiler import profile, schedule
from torch.utils.checkpoint import checkpoint

d = "cuda"
O = os.environ["OUT"]


def net():
    torch.manual_seed(0)
    return nn.ModuleList(nn.Sequential(nn.Linear(1024, 4096), nn.GELU(), nn.Linear(4096, 1024))
                         for _ in range(4)).to(d)


def fwd(m, x, ck):
    for b in m:
        x = checkpoint(b, x, use_reentrant=False) if ck else b(x)
    return x


def run(name, mode):
    m = net()
    o = torch.optim.Adam(m.parameters())
    f = f"{O}/{name}.pt.trace.json"

    def st():
        x = torch.randn(512, 1024, device=d)
        if mode == "off":
            with torch.autograd.graph.save_on_cpu(pin_memory=True):
                loss = fwd(m, x, 0).pow(2).mean()
        else:
            loss = fwd(m, x, mode == "ck").pow(2).mean()
        loss.backward()
        o.step()
        o.zero_grad(set_to_none=True)

    with profile(activities=[A.CPU, A.CUDA], profile_memory=True, record_shapes=True,
                 schedule=schedule(wait=0, warmup=0, active=3, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(f)) as p:
        for _ in range(4):
            st()
            p.step()


for n, mo in [("k_base", "plain"), ("k_off", "off"), ("k_ck", "ck")]:
    run(n, mo)
