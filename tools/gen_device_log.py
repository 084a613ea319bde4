#!/usr/bin/env python3
"""Writes a device-usage log for a trace, to try `memtide FILE --device-log LOG`.

The trace is first converted with memtide itself (no unpickling here):

    memtide replay run.pickle /tmp/run.jsonl --rate 100000000
    tools/gen_device_log.py /tmp/run.jsonl --above 1.5GiB --tz +02:00 > gpu.csv
    memtide summary run.pickle --device-log gpu.csv --device-log-tz +02:00

Every `--interval-ms` (default 100) from three intervals before the first event to three
after the last, used = reserved at that instant (the sum of live `reserve` segments after
every event at or before it) + `--above`. nvidia-smi CSV (`--format=csv`: local time
`--tz` ahead of UTC, MiB with units, `memory.total` from `--total-mib`), or with
`--plain` the `time_us,device,used_bytes,total_bytes` CSV (UTC).
"""

import argparse
import datetime
import json
import sys

UNITS = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}


def size(s):
    for u in sorted(UNITS, key=len, reverse=True):
        if s.endswith(u):
            return round(float(s[: -len(u)]) * UNITS[u])
    return int(s)


def tz(s):
    sign = -1 if s.startswith("-") else 1
    h, m = s.lstrip("+-").split(":")
    return sign * (int(h) * 60 + int(m))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("jsonl", help="a memtide JSONL file with a wall clock (from `memtide replay`)")
    ap.add_argument("--above", default="1.5GiB", help="external bytes above reserved")
    ap.add_argument("--tz", default="+02:00", help="local time zone of the nvidia-smi log")
    ap.add_argument("--interval-ms", type=int, default=100)
    ap.add_argument("--total-mib", type=int, default=81559)
    ap.add_argument("--device", type=int, default=0)
    ap.add_argument("--plain", action="store_true", help="time_us,device,used_bytes,total_bytes")
    a = ap.parse_args()

    header = None
    events = []  # (t_ns, delta reserved)
    segs = {}
    with open(a.jsonl) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            d = json.loads(line)
            if header is None:
                header = d
                continue
            mult = {"ns": 1, "us": 1000}.get(header.get("clock", "us"), 1000)
            t = d["t"] * mult
            if d.get("op") == "reserve":
                segs[d["id"]] = d["size"]
                events.append((t, d["size"]))
            elif d.get("op") == "unreserve" and d["id"] in segs:
                events.append((t, -segs.pop(d["id"])))
            else:
                events.append((t, 0))
    if not events:
        sys.exit("no events")
    step = a.interval_ms * 1_000_000
    # Whole milliseconds, as nvidia-smi writes them.
    t0 = (events[0][0] - 3 * step) // 1_000_000 * 1_000_000
    t1 = events[-1][0] + 3 * step
    above, zone = size(a.above), datetime.timedelta(minutes=tz(a.tz))
    out = sys.stdout
    if a.plain:
        out.write("time_us,device,used_bytes,total_bytes\n")
    else:
        out.write("timestamp, index, memory.used [MiB], memory.total [MiB]\n")
    i, reserved, t = 0, 0, t0
    # `replay` writes the segments mapped before the history began at the first event's
    # time (a nanosecond apart): they count from the first sample on.
    first = events[0][0] + 999
    while t <= t1:
        while i < len(events) and events[i][0] <= max(t, first):
            reserved += events[i][1]
            i += 1
        used = reserved + above
        if a.plain:
            out.write(f"{t // 1000},{a.device},{used},{a.total_mib << 20}\n")
        else:
            utc = datetime.datetime(1970, 1, 1) + datetime.timedelta(microseconds=t // 1000)
            local = utc + zone
            stamp = local.strftime("%Y/%m/%d %H:%M:%S.") + f"{local.microsecond // 1000:03d}"
            out.write(f"{stamp}, {a.device}, {used >> 20} MiB, {a.total_mib} MiB\n")
        t += step


if __name__ == "__main__":
    main()
