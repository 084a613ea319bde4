#!/usr/bin/env python3
"""Writes tests/fixtures/fair/*.jsonl: pairs of toy training runs for `memtide diff`'s fair
comparison (parity, boundary, bought and cost, methods). Every figure is a round MiB so the
expected reports in tests/fixtures/fair/README.md are computed by hand from this schedule.

    python3 tools/gen_fair_fixtures.py tests/fixtures/fair
"""
import json
import os
import sys

MiB = 1 << 20
LAYER_PARAMS = 16 * MiB  # 16,777,216 fp32 weights = 64 MiB per layer


class Run:
    def __init__(self, name, layers=2, meta=None, labels=True, batch_once=False):
        self.labels = labels
        self.batch_once = batch_once
        self.lines = []
        self.next_id = 1
        self.name = name
        self.layers = layers
        head = {"memtide": 1, "device": "cuda:0", "clock": "us", "source": "tools/gen_fair_fixtures.py",
                "param_count": layers * LAYER_PARAMS, "meta": {"variant": name, **(meta or {})}}
        self.lines.append(json.dumps(head, separators=(",", ":")))

    def op(self, t, op, **kw):
        d = {"t": t, "op": op}
        d.update(kw)
        self.lines.append(json.dumps(d, separators=(",", ":")))

    def alloc(self, t, size_mib, cat, name, stack):
        i = self.next_id
        self.next_id += 1
        if self.labels:
            self.op(t, "alloc", id=i, size=size_mib * MiB, cat=cat, name=name, stack=stack)
        else:
            self.op(t, "alloc", id=i, size=size_mib * MiB, name=name, stack=stack)
        return i

    def free(self, t, i):
        self.op(t, "free", id=i)

    def write(self, out):
        with open(os.path.join(out, self.name + ".jsonl"), "w") as f:
            f.write("\n".join(self.lines) + "\n")

    def write_snapshot(self, out):
        """The same run as a CUDA snapshot (`_dump_snapshot()`'s JSON: entries with frames,
        `record_function` annotations for the steps), whose categories are inferred: no entry
        says what it is. Each storage gets its own 1 GiB-aligned address."""
        t0 = 1_800_000_000_000_000
        entries, marks, sizes, last_step = [], [], {}, None

        def frames(stack):
            out = []
            for f in stack:
                if f.startswith("autograd: "):
                    # the autograd engine's frames in a snapshot, for the backward of a layer
                    out.append({"filename": "torch/autograd/graph.py", "line": 825,
                                "name": "_engine_run_backward"})
                    continue
                head, _, name = f.partition(" ")
                file, _, line = head.rpartition(":")
                if not line.isdigit():
                    file, line, name = "", "0", f
                out.append({"filename": file, "line": int(line), "name": name})
            return out

        for text in self.lines[1:]:
            d = json.loads(text)
            t = t0 + d["t"]
            if d["op"] == "alloc" and d.get("name") == "batch" and self.batch_once:
                continue  # made before the recording began: the snapshot never sees it
            if d["op"] == "alloc":
                sizes[d["id"]] = (d["size"], frames(d.get("stack", [])))
                entries.append({"action": "alloc", "addr": d["id"] << 30, "size": d["size"],
                                "stream": 0, "time_us": t, "frames": sizes[d["id"]][1]})
            elif d["op"] == "free":
                size, fr = sizes[d["id"]]
                entries.append({"action": "free_completed", "addr": d["id"] << 30,
                                "size": size, "stream": 0, "time_us": t, "frames": fr})
            elif d["op"] == "mark" and d.get("kind") == "step":
                if last_step is not None:
                    marks.append({"name": last_step, "stage": "END", "device": 0, "time_us": t - 1})
                last_step = "ProfilerStep#%d" % (d["t"] // 1000)
                marks.append({"name": last_step, "stage": "START", "device": 0, "time_us": t})
                # PyTorch's own annotation of the optimizer step (t0 + 690 … t0 + 770)
                for stage, dt in (("START", 690), ("END", 770)):
                    marks.append({"name": "Optimizer.step#Adam.step", "stage": stage,
                                  "device": 0, "time_us": t + dt})
        if last_step is not None:
            marks.append({"name": last_step, "stage": "END", "device": 0,
                          "time_us": entries[-1]["time_us"] + 1})
        snap = {"segments": [], "device_traces": [entries], "external_annotations": marks}
        with open(os.path.join(out, self.name + ".snapshot.json"), "w") as f:
            json.dump(snap, f, separators=(",", ":"))
            f.write("\n")


def train(name, steps=3, step_us=1000, inp=4, act=256, temp=32, reserved=1280, layers=2,
          mode="plain", forward_only=False, cut_last=False, meta=None, labels=True,
          batch_once=False):
    """`mode`: plain, checkpoint (32 MiB kept per layer, recomputed in backward), amp (half-size
    activations plus a 32 MiB bf16 weight copy per layer), offload (activations moved to the
    host in forward, staged back in backward), offload_copies (the same schedule with no frame
    naming offloading: the staging buffers come from `aten::_to_copy` under the backward node,
    as a profiler trace records a saved tensor brought back from the host), checkpoint_real
    (each layer's activation made in the forward as without checkpointing, then freed under
    the checkpoint, which keeps 32 MiB; recomputed in backward). `labels=False` writes no
    `cat` (the categories are inferred); `batch_once` makes the batch once, before the steps,
    and uses it in every step (no allocation per step names the inputs)."""
    r = Run(name, layers, meta, labels, batch_once)
    r.op(1, "reserve", id=10_000, size=reserved * MiB)
    r.op(2, "mark", name="setup", kind="phase")
    params = [r.alloc(10 + k, 64, "param", f"layers.{k}.weight", ["model.py:12 __init__", "train.py:30 build"])
              for k in range(layers)]
    grads = []
    once = None
    if batch_once:
        once = r.alloc(500, inp, "input", "batch", ["data.py:10 __next__", "train.py:40 main"])
    n_steps = steps + (1 if cut_last else 0)
    for k in range(n_steps):
        t0 = 1000 + k * step_us
        partial = cut_last and k == steps
        r.op(t0, "mark", name=f"step {k}", kind="step")
        x = None if batch_once else r.alloc(t0 + 10, inp, "input", "batch",
                                            ["data.py:10 __next__", "train.py:50 train_step"])
        kept = []
        casts = []
        for i in range(layers):
            t = t0 + 100 + i * 100
            fwd = [f"model.py:20 forward (layers.{i})", "train.py:51 train_step"]
            if mode == "checkpoint":
                kept.append(r.alloc(t, 32, "activation", f"checkpoint layers.{i}",
                                    ["model.py:20 forward (layers.{})".format(i), "torch/utils/checkpoint.py:488 checkpoint",
                                     "train.py:51 train_step"]))
            elif mode == "checkpoint_real":
                a = r.alloc(t, act, "activation", f"act layers.{i}",
                            [f"model.py:20 forward (layers.{i})", "torch/utils/checkpoint.py:488 checkpoint",
                             "train.py:51 train_step"])
                kept.append(r.alloc(t + 5, 32, "activation", f"checkpoint layers.{i}",
                                    [f"model.py:20 forward (layers.{i})", "torch/utils/checkpoint.py:488 checkpoint",
                                     "train.py:51 train_step"]))
                r.free(t + 10, a)
            elif mode == "amp":
                casts.append(r.alloc(t, 32, "activation", f"layers.{i}.weight (bf16 copy)",
                                     ["at::autocast::cached_cast", f"model.py:20 forward (layers.{i})"]))
                kept.append(r.alloc(t + 5, act // 2, "activation", f"act layers.{i} (bf16)", fwd))
            elif mode in ("offload", "offload_copies"):
                a = r.alloc(t, act, "activation", f"act layers.{i}", fwd)
                r.free(t + 20, a)  # copied to the host by save_on_cpu's pack hook
                kept.append(None)
            else:
                kept.append(r.alloc(t, act, "activation", f"act layers.{i}", fwd))
            if forward_only:
                r.free(t + 50, kept[-1])
        if partial:
            break  # the recording stops after the forward
        if not forward_only:
            for j, i in enumerate(reversed(range(layers))):
                t = t0 + 400 + j * 100
                bwd = [f"autograd: layers.{i} backward", "train.py:52 train_step"]
                extra = None
                if mode in ("checkpoint", "checkpoint_real"):
                    extra = r.alloc(t - 5, act, "activation", f"recomputed act layers.{i}",
                                    ["torch/utils/checkpoint.py:320 recompute_fn", f"autograd: layers.{i} backward"])
                elif mode == "offload":
                    extra = r.alloc(t - 5, act, "activation", f"offload staging layers.{i}",
                                    ["torch/autograd/graph.py:330 unpack_from_cpu (save_on_cpu)",
                                     f"autograd: layers.{i} backward"])
                elif mode == "offload_copies":
                    extra = r.alloc(t - 5, act, "activation", f"act layers.{i} (back on the device)",
                                    ["aten::empty_strided", "aten::_to_copy", "aten::to",
                                     "autograd::engine::evaluate_function: MmBackward0"])
                if k == 0:
                    grads.append(r.alloc(t, 64, "grad", f"layers.{i}.weight.grad", ["AccumulateGrad"] + bwd))
                tmp = r.alloc(t + 10, temp, "temp", "grad_input temp", bwd)
                r.free(t + 20, tmp)
                if kept[i] is not None:
                    r.free(t + 30, kept[i])
                if extra is not None:
                    r.free(t + 30, extra)
            opt = ["torch/optim/adam.py:200 _init_group", "train.py:53 train_step"]
            if k == 0:
                for i in range(layers):
                    r.alloc(t0 + 700 + 2 * i, 64, "optimizer", f"exp_avg[layers.{i}]", opt)
                    r.alloc(t0 + 701 + 2 * i, 64, "optimizer", f"exp_avg_sq[layers.{i}]", opt)
            tmp = r.alloc(t0 + 750, 64, "temp", "adam foreach temp",
                          ["torch/optim/adam.py:540 _multi_tensor_adam", "train.py:53 train_step"])
            r.free(t0 + 760, tmp)
        for c in casts:
            r.free(t0 + 790, c)
        if x is not None:
            r.free(t0 + 800, x)
    return r


def main(out):
    os.makedirs(out, exist_ok=True)
    runs = [
        train("base"),
        train("checkpointed", step_us=1250, reserved=1024, mode="checkpoint"),
        train("seq2x", inp=8, act=512, temp=64, reserved=2048),
        train("forward-only", forward_only=True),
        train("amp", mode="amp", step_us=900),
        train("offload", mode="offload", step_us=1500),
        train("offload-copies", mode="offload_copies", step_us=1500),
        train("one-step", steps=1),
        train("cut", cut_last=True),
        train("three-layers", layers=3, reserved=1600),
        train("two-steps", steps=2),
        train("base-synced", step_us=1100, meta={"step_clock": "synchronized"}),
    ]
    for r in runs:
        r.write(out)
    # Unlabelled twins as snapshots, whose categories are inferred (a JSONL file's are the
    # recorder's): the batch made once before the steps, no allocation names the inputs.
    for r in (train("unlabelled", labels=False, batch_once=True),
              train("unlabelled-checkpointed", step_us=1250, reserved=1024,
                    mode="checkpoint_real", labels=False, batch_once=True),
              train("unlabelled-seq2x", inp=8, act=512, temp=64, reserved=2048, labels=False,
                    batch_once=True)):
        r.write_snapshot(out)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/fair")
