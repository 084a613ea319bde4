#!/usr/bin/env python3
"""Writes a hostile snapshot pickle: one 1 MiB file name shared (pickle memo) by 100,000
frames with different line numbers (issue 16, item 2). memtide must keep the name once.

    python3 tools/gen_shared_filename.py /tmp/shared.pickle
    /usr/bin/time -v target/release/memtide summary /tmp/shared.pickle
"""
import pickle
import sys

FILE = "/very/long/" + "d" * (1 << 20) + "/train.py"
ENTRIES, FRAMES = 1000, 100
traces = []
for e in range(ENTRIES):
    frames = [{"filename": FILE, "line": e * FRAMES + j, "name": "forward"} for j in range(FRAMES)]
    traces.append({"action": "alloc", "addr": 4096 * (e + 1), "size": 512, "stream": 0,
                   "time_us": e, "frames": frames})
snap = {"segments": [], "device_traces": [traces]}
with open(sys.argv[1], "wb") as f:
    pickle.dump(snap, f, protocol=4)
