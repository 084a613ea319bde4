"""memtide's Python API on a real GPU: a small CUDA training run recorded as a snapshot, then
``memtide.open`` / ``summary()`` / ``check`` held against PyTorch's own counters and against
the ``memtide`` command of the same wheel.

usage: python python_api.py OUT_DIR   (a python with CUDA torch and the memtide-cli wheel)
Writes OUT_DIR/python_api.md (one row per check) and exits 0 when all pass, 1 on a mismatch,
2 when it cannot run (no CUDA, no memtide module). Ground truth is PyTorch's:
``torch.cuda.max_memory_allocated()`` for the peak (memtide counts the block the allocator
holds, as that counter does), ``memory_stats()`` for the reserved peak.
"""

import json
import os
import subprocess
import sys


def main(out):
    os.makedirs(out, exist_ok=True)
    try:
        import torch
    except ImportError:
        print("python_api: no torch here")
        return 2
    if not torch.cuda.is_available():
        print("python_api: no CUDA device")
        return 2
    try:
        import memtide
    except ImportError as e:
        print(f"python_api: the memtide module is not installed: {e}")
        return 2

    # The workload: an MLP trained three steps with Adam, history recorded from the start.
    torch.cuda.memory._record_memory_history(max_entries=200000)
    torch.manual_seed(0)
    dev = torch.device("cuda:0")
    model = torch.nn.Sequential(
        torch.nn.Linear(2048, 4096), torch.nn.ReLU(), torch.nn.Linear(4096, 2048)
    ).to(dev)
    opt = torch.optim.Adam(model.parameters())
    for _ in range(3):
        x = torch.randn(512, 2048, device=dev)
        loss = model(x).square().mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    reserved_peak = torch.cuda.memory_stats()["reserved_bytes.all.peak"]
    snap = os.path.join(out, "python_api.pickle")
    torch.cuda.memory._dump_snapshot(snap)
    torch.cuda.memory._record_memory_history(enabled=None)

    # From here on no pickle may be read: an audit hook sees every unpickler lookup.
    events = []
    sys.addaudithook(lambda ev, args: events.append(ev) if ev.startswith("pickle.") else None)
    t = memtide.open(snap, progress=False)
    summary = t.summary()
    rows = []

    def row(what, truth, got, ok=None):
        ok = (truth == got) if ok is None else ok
        rows.append((what, truth, got, "pass" if ok else "FAIL"))

    row("open(f).peak.bytes = max_memory_allocated()", peak, t.peak.bytes)
    row("reserved_peak.bytes = reserved_bytes.all.peak", reserved_peak,
        t.reserved_peak.bytes if t.reserved_peak else None)
    # The command of the same wheel (`python -m memtide` runs its entry point).
    exe = [sys.executable, "-m", "memtide"]
    cli = subprocess.run([*exe, "summary", "--json", snap], capture_output=True, text=True)
    if cli.returncode != 0:
        print(cli.stderr)
    row("summary() = memtide summary --json (same wheel)", 0, cli.returncode,
        ok=cli.returncode == 0 and json.loads(cli.stdout) == summary)
    for limit, want in ((peak, True), (peak - 1, False)):
        r = memtide.check(snap, max_peak=f"{limit}B")
        code = subprocess.run([*exe, "check", "--max-peak", f"{limit}B", snap],
                              capture_output=True).returncode
        row(f"check(max_peak={limit} B) is {want}, memtide check exits {0 if want else 1}",
            (want, 0 if want else 1), (bool(r), code))
    row("no pickle audit event while memtide read the snapshot", [], events)

    lines = ["# memtide Python API on a GPU", "",
             f"torch {torch.__version__}, {torch.cuda.get_device_name(0)}, memtide {memtide.__version__}",
             "", "| check | PyTorch / CLI | memtide.open | verdict |", "|---|---|---|---|"]
    lines += [f"| {w} | {a} | {b} | {v} |" for w, a, b, v in rows]
    with open(os.path.join(out, "python_api.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if all(v == "pass" for *_, v in rows) else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
