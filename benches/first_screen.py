#!/usr/bin/env python3
"""Time to the first real screen and peak RSS: memtide vs ptmem 0.1.2, side by side.

Writes a PyTorch-snapshot-shaped pickle (>= 200 MB: alloc/free_completed pairs, 8 frames
each) and a memtide JSONL with the same events, then runs each viewer on the SAME pickle in a
pseudo-terminal (100x30) and measures the wall time from exec until its first timeline screen
is on the terminal, and the child's peak RSS (memtide on the JSONL is reported too).
ptmem runs without its cache (the .memcache file is removed first).

Usage: benches/first_screen.py MEMTIDE_BIN PTMEM_BIN [EVENTS_PAIRS] [WORKDIR]

A WORKDIR that already holds `snapshot.pickle` (e.g. a link to a generated 220 MB snapshot)
is used as it is: nothing is generated and nothing there is written over; the JSONL run is
then made only if `same_events.jsonl` is there too.
"""
import json, os, pickle, random, sys

memtide, ptmem = sys.argv[1], sys.argv[2]
pairs = int(sys.argv[3]) if len(sys.argv) > 3 else 330_000
work = sys.argv[4] if len(sys.argv) > 4 else "/tmp/first_screen"
os.makedirs(work, exist_ok=True)
pkl, jsonl = os.path.join(work, "snapshot.pickle"), os.path.join(work, "same_events.jsonl")

files = [f"/opt/conda/lib/python3.11/site-packages/torch/nn/modules/{m}.py" for m in
         ("linear", "conv", "activation", "normalization", "module", "container")]
names = ["forward", "_call_impl", "_wrapped_call_impl", "backward", "step", "train_step"]


def frames_for(i):
    r = random.Random(i % 5000)  # 5000 distinct stacks, as in a real training loop
    return [(r.choice(files), r.randrange(1, 2000), r.choice(names)) for _ in range(8)]


def generate():
    events, live, t = [], [], 0
    # "x": never through a link onto, or over, a file that is there.
    with open(jsonl, "x") as jf:
        jf.write('{"memtide":1,"device":"cuda:0","clock":"us","source":"first_screen"}\n')
        addr = 0x7F0000000000
        for i in range(pairs * 2):
            t += 1
            alloc = not live or (len(live) < 3000 and random.random() < 0.5 + 0.1 * ((i // 20000) % 2))
            if alloc:
                addr += 512 * (1 + i % 97)
                size = 512 * (1 + (i * 7919) % 4096)
                fr = frames_for(i)
                events.append({"action": "alloc", "addr": addr, "size": size, "stream": 0, "time_us": t,
                               "frames": [{"filename": f, "line": l, "name": n} for f, l, n in fr]})
                jf.write(json.dumps({"t": t, "op": "alloc", "id": addr, "size": size,
                                     "stack": [f"{f}:{l} {n}" for f, l, n in fr]}, separators=(",", ":")) + "\n")
                live.append((addr, size, fr))
            else:
                a, size, fr = live.pop(random.randrange(len(live)))
                events.append({"action": "free_completed", "addr": a, "size": size, "stream": 0, "time_us": t,
                               "frames": [{"filename": f, "line": l, "name": n} for f, l, n in fr]})
                jf.write(json.dumps({"t": t, "op": "free", "id": a}, separators=(",", ":")) + "\n")
    with open(pkl, "xb") as pf:
        pickle.dump({"segments": [], "device_traces": [events]}, pf, protocol=4)


if os.environ.get("FIRST_SCREEN_GENERATE"):
    generate()
    sys.exit(0)
if not os.path.lexists(pkl) and not os.path.lexists(jsonl):
    # Generate in a separate process: a forked measuring process would otherwise carry the
    # generator's memory into the children's peak RSS (ru_maxrss survives exec).
    import subprocess
    subprocess.run([sys.executable] + sys.argv, env=dict(os.environ, FIRST_SCREEN_GENERATE="1"), check=True)


from screen_time import measure  # noqa: E402 (benches/, the script's folder)


size_mb = os.path.getsize(pkl) / 1e6
cache = os.path.join(work, ".snapshot.pickle.memcache")
if os.path.exists(cache):
    os.remove(cache)
pt = measure([ptmem, pkl], b"PyTorch Memory Profiler")
mt = measure([memtide, pkl], b"live at")
has_jsonl = os.path.exists(jsonl)
mj = measure([memtide, jsonl], b"live at") if has_jsonl else (None, 0.0, 0.0)
jsonl_mb = f"{os.path.getsize(jsonl)/1e6:.0f} MB" if has_jsonl else "not there"
print(f"snapshot pickle {size_mb:.0f} MB; same-events JSONL {jsonl_mb}")
def secs(x):
    return f"{x:.2f} s" if x is not None else "never shown"


print(f"ptmem 0.1.2 (pickle, no cache): first screen {secs(pt[0])}, peak RSS {pt[1]:.0f} MiB (at first screen {pt[2]:.0f} MiB)")
print(f"memtide (same pickle):          first screen {secs(mt[0])}, peak RSS {mt[1]:.0f} MiB (at first screen {mt[2]:.0f} MiB)")
if has_jsonl:
    print(f"memtide (same events, JSONL):   first screen {secs(mj[0])}, peak RSS {mj[1]:.0f} MiB")
if pt[0] and mt[0]:
    print(f"pickle vs pickle: speed-up {pt[0]/mt[0]:.1f}x, RSS ratio {mt[1]/pt[1]:.2f}")
