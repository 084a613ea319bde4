#!/usr/bin/env python3
"""Writes tests/fixtures/course/inplace_adam.pickle and replacing_adam.pickle and their
.truth.json (stdlib only, deterministic): a course-style transformer trained three steps with
the course's own modules and its own Adam, recorded allocator-faithfully by
tools/cca_model.py (PyTorch's rules, defaults) with the frames such code leaves in a
snapshot: no torch frame says "parameter" or "optimizer state".

    python3 tools/gen_course_transformer.py --out tests/fixtures/course

The model (fp32; the course's `cs336_basics`-style modules create their `nn.Parameter`s in
their own `__init__`, under `torch.empty` + `trunc_normal_`, so the innermost Python frame is
the module's `__init__` in the user's file):
  embedding 8000 x 512, 4 blocks of (q, k, v, o 512 x 512; w1, w2, w3 512 x 1376; two RMSNorm
  weights of 512), a final RMSNorm 512, an LM head 8000 x 512:
  2 x 16,384,000 + 4 x (4 x 1,048,576 + 3 x 2,818,048 + 2 x 2,048) + 2,048 = 83,380,224 B.
The optimizer (`class MyAdam(torch.optim.Optimizer)`) makes `m` and `v` for every parameter
in its own `__init__` (`torch.zeros_like`): 2 x 83,380,224 = 166,760,448 B, before any step.
Each step: `zero_grad()` (gradients set to None), the forward (per block five activations
kept for backward, then the logits and the loss), `loss.backward()` (a gradient per
parameter, the activations freed as it goes), `opt.step()` under PyTorch's own
`Optimizer.step#MyAdam.step` annotation.
  inplace_adam:   the step updates in place (`m.mul_(b1).add_(...)`, `p.addcdiv_(...)`), with
                  one temporary of each parameter's size (`v.sqrt() + eps`), freed at once.
  replacing_adam: the step makes new tensors and rebinds them (`new_m = b1 * m + ...`;
                  `state["m"] = new_m`; `p.data = p.data - lr * ...`): every step replaces
                  each parameter and both of its states; the old ones are freed right after.
The peak is at the end of a forward (the activations outweigh the step's gradients), where
the live persistent memory is exactly the parameters and the two states.
"""

import argparse
import json
import os
import pickle

from cca_model import Allocator, Conf, GiB
from gen_oom_faithful import SETTINGS

T0 = 1_800_000_000_000_000
USER = "/home/carol/cs336/cs336_basics"
TRAIN = "/home/carol/cs336/cs336_systems/profile_memory.py"
TORCH = "/usr/lib/python3.11/site-packages/torch"

VOCAB, D, FF, LAYERS, BATCH, SEQ, HEADS = 8000, 512, 1376, 4, 16, 256, 8
def frame(filename, line, name):
    return {"filename": filename, "line": line, "name": name}


def main_frames(line):
    return [frame(TRAIN, line, "profile_memory"), frame(TRAIN, 80, "main"),
            frame(TRAIN, 84, "<module>")]


def param_shapes():
    """(name, bytes, file, line) of every parameter, in the order the model makes them."""
    out = [("embedding", VOCAB * D * 4, "modules/embedding.py", 18)]
    for b in range(LAYERS):
        for w in ("q", "k", "v", "o"):
            out.append((f"block{b}.attn.{w}", D * D * 4, "modules/linear.py", 16))
        for w in ("w1", "w2", "w3"):
            out.append((f"block{b}.ffn.{w}", D * FF * 4, "modules/linear.py", 16))
        for n in ("ln1", "ln2"):
            out.append((f"block{b}.{n}", D * 4, "modules/rmsnorm.py", 14))
    out.append(("ln_final", D * 4, "modules/rmsnorm.py", 14))
    out.append(("lm_head", VOCAB * D * 4, "modules/linear.py", 16))
    return out


class Run:
    """The allocator's recording, each entry given the frames of the code that made it."""

    def __init__(self):
        self.trace = []
        self.a = Allocator(Conf(""), 80 * GiB, trace=self.trace)
        self.frames = {}  # block address -> frames of its allocation
        self.marks = []

    def _stamp(self, frames):
        for e in self.trace:
            if "frames" not in e:
                e["frames"] = frames

    def alloc(self, size, frames):
        b = self.a.malloc(size)
        self.frames[b.addr] = frames
        self._stamp(frames)
        return b

    def free(self, b, frames):
        self.a.free_(b)
        self._stamp(frames)

    def mark(self, name, stage):
        self.marks.append({"name": name, "stage": stage, "device": 0,
                           "time_us": T0 + 100 * len(self.trace) - 50})

    def finish(self):
        for i, e in enumerate(self.trace):
            e["time_us"] = T0 + 100 * i
            e["stream"] = 0
        segments = self.a.segments_dump(lambda b: self.frames.get(b.addr, []))
        return self.trace, segments


def record(replacing):
    r = Run()
    shapes = param_shapes()
    params = []
    for name, size, f, line in shapes:
        fr = [frame(f"{USER}/{f}", line, "__init__"),
              frame(f"{USER}/modules/transformer.py", 40, "__init__")] + main_frames(30)
        params.append(r.alloc(size, fr))
    init = [frame(f"{USER}/optimizer.py", 21, "__init__")] + main_frames(40)
    states = []
    for p, (_, size, _, _) in zip(params, shapes):
        states.append([r.alloc(size, init), r.alloc(size, init)])
    data = r.alloc(BATCH * SEQ * 8, main_frames(42))
    labels = r.alloc(BATCH * SEQ * 8, main_frames(43))
    fwd = lambda f, line: [frame(f"{USER}/modules/{f}", line, "forward"),
                           frame(f"{TORCH}/nn/modules/module.py", 1762, "_call_impl"),
                           frame(f"{USER}/modules/transformer.py", 70, "forward"),
                           frame(f"{TORCH}/nn/modules/module.py", 1762, "_call_impl")] + main_frames(47)
    bwd = [frame(f"{TORCH}/autograd/graph.py", 825, "_engine_run_backward"),
           frame(f"{TORCH}/autograd/__init__.py", 347, "backward"),
           frame(f"{TORCH}/_tensor.py", 581, "backward")] + main_frames(49)
    opt = lambda line: [frame(f"{USER}/optimizer.py", line, "step"),
                        frame(f"{TORCH}/optim/optimizer.py", 485, "wrapper")] + main_frames(50)
    grads = []
    act_sizes = [BATCH * SEQ * D * 4, BATCH * HEADS * SEQ * SEQ * 4, BATCH * SEQ * D * 4,
                 BATCH * SEQ * FF * 4, BATCH * SEQ * D * 4]
    for step in range(3):
        r.mark("Optimizer.zero_grad#MyAdam.zero_grad", "START")
        zg = [frame(f"{TORCH}/optim/optimizer.py", 960, "zero_grad")] + main_frames(45)
        for g in grads:
            r.free(g, zg)
        grads = []
        r.mark("Optimizer.zero_grad#MyAdam.zero_grad", "END")
        acts = []
        for b in range(LAYERS):
            for k, size in enumerate(act_sizes):
                acts.append(r.alloc(size, fwd("attention.py" if k < 3 else "ffn.py", 30 + k)))
        logits = r.alloc(BATCH * SEQ * VOCAB * 4, fwd("linear.py", 22))
        loss = r.alloc(512, main_frames(48))
        # backward: the logits' gradient, then a gradient per parameter (last made first),
        # the activations freed as their layer is done
        dlogits = r.alloc(BATCH * SEQ * VOCAB * 4, bwd)
        r.free(logits, bwd)
        per_layer = len(act_sizes)
        for i in reversed(range(len(params))):
            grads.append(r.alloc(shapes[i][1], bwd))
            if i == len(params) - 1:
                r.free(dlogits, bwd)
            layer = (i - 1) // 9 if 1 <= i <= LAYERS * 9 else None
            if layer is not None and (i - 1) % 9 == 0:
                for a in acts[layer * per_layer:(layer + 1) * per_layer]:
                    r.free(a, bwd)
        r.free(loss, bwd)
        r.mark("Optimizer.step#MyAdam.step", "START")
        for i, p in enumerate(params):
            size = shapes[i][1]
            if replacing:
                m, v = states[i]
                new_m = r.alloc(size, opt(51))
                r.free(m, opt(52))
                new_v = r.alloc(size, opt(56))
                r.free(v, opt(57))
                states[i] = [new_m, new_v]
                new_p = r.alloc(size, opt(64))
                r.free(p, opt(64))
                params[i] = new_p
            else:
                r.free(r.alloc(size, opt(44)), opt(44))
        r.mark("Optimizer.step#MyAdam.step", "END")
    trace, segments = r.finish()
    total = sum(s[1] for s in shapes)
    truth = {
        "doc": "tools/gen_course_transformer.py: the parameters and Adam states by hand",
        "params": total,
        "optimizer": 2 * total,
        "param_count": total // 4,
        "tensors": len(shapes),
        "data": [data.size, labels.size],
    }
    snap = {"segments": segments, "device_traces": [trace],
            "allocator_settings": SETTINGS, "external_annotations": r.marks}
    return snap, truth


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    out = ap.parse_args().out
    os.makedirs(out, exist_ok=True)
    for name, replacing in (("inplace_adam", False), ("replacing_adam", True)):
        snap, truth = record(replacing)
        with open(os.path.join(out, f"{name}.pickle"), "wb") as f:
            pickle.dump(snap, f, protocol=4)
        with open(os.path.join(out, f"{name}.truth.json"), "w") as f:
            json.dump(truth, f, indent=1, sort_keys=True)
            f.write("\n")


if __name__ == "__main__":
    main()
