#!/usr/bin/env python3
"""Writes tests/fixtures/jsonl/recorder_adam.jsonl: a real memtide_record run on the CPU
(torch from scripts/setup-python-env) of a two-layer fp32 MLP trained by Adam for two steps,
without stacks (no local paths in the file). Its header carries `param_count`.

Figures by hand (tests/cli/param_count.rs): Linear(64, 32) + Linear(32, 8) =
64*32 + 32 + 32*8 + 8 = 2,344 parameters in 4 tensors; after the first optimizer step,
params 4 B + grads 4 B + Adam's exp_avg and exp_avg_sq 8 B per parameter, plus one 4-byte
`step` tensor per parameter tensor: (16 * 2344 + 4 * 4) / 2344 = 16.0068 B/param.

Usage: ~/.cache/memtide/py-env/bin/python tools/gen_recorder_fixture.py [OUT]
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "python"))

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

import memtide_record as mr  # noqa: E402


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        HERE, "..", "tests", "fixtures", "jsonl", "recorder_adam.jsonl")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 8))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    with mr.record(out, model=model, optimizer=opt, stacks=False, source="gen_recorder_fixture.py"):
        for i in range(2):
            mr.step(i)
            opt.zero_grad(set_to_none=True)
            x = torch.randn(16, 64)
            y = torch.randint(0, 8, (16,))
            nn.functional.cross_entropy(model(x), y).backward()
            opt.step()
        mr.mark("done")
    print(f"wrote {out}: {sum(p.numel() for p in model.parameters())} parameters")


if __name__ == "__main__":
    main()
