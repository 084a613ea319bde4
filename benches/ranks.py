#!/usr/bin/env python3
"""The ranks overview at scale: a generated job of N rank snapshots against its largest file.

Writes the job with `tools/gen_ranks.py --ranks N --entries E` (unless WORKDIR already holds
it), then measures, each in the same run and on the same files:

  1. `memtide summary DIR --json`   the job's table (every rank read on all cores, rows kept,
                                    traces dropped) — wall time and peak RSS;
  2. `memtide summary LARGEST --json`  the largest rank file alone — wall time and peak RSS;
  3. `memtide DIR` in a pseudo-terminal (100x30): wall time until the overview's header says
     `N/N read` (every row filled in), then `q`; peak RSS;
  4. `memtide LARGEST` in a pseudo-terminal: wall time until its first timeline screen; peak RSS;
  5. (3) again with MEMTIDE_JOBS=1 (one file at a time: the memory floor, the slowest load).

and prints the ratios job / largest file (the issue's target: peak RSS <= 2x the largest
file's). Peak RSS is the child's `ru_maxrss` from wait4.

Usage: benches/ranks.py MEMTIDE_BIN [RANKS=64] [ENTRIES=40000] [WORKDIR=/tmp/ranks_bench]
"""
import codecs
import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time

memtide = os.path.abspath(sys.argv[1])
ranks = int(sys.argv[2]) if len(sys.argv) > 2 else 64
entries = int(sys.argv[3]) if len(sys.argv) > 3 else 40000
work = sys.argv[4] if len(sys.argv) > 4 else "/tmp/ranks_bench"
here = os.path.dirname(os.path.abspath(__file__))


def job_files():
    return sorted(os.path.join(work, f) for f in os.listdir(work) if f.endswith(".pickle"))


def ensure_job():
    if os.path.isdir(work) and len(job_files()) == ranks:
        return
    subprocess.run([sys.executable, os.path.join(here, "..", "tools", "gen_ranks.py"),
                    "--out", work, "--ranks", str(ranks), "--entries", str(entries)], check=True)


def run_plain(args):
    """Runs memtide with args; returns (seconds, peak RSS in MiB)."""
    t0 = time.perf_counter()
    p = subprocess.Popen([memtide] + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    dt = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"memtide {' '.join(args)} failed: {status}")
    return dt, ru.ru_maxrss / 1024


class Screen:
    """Just enough of a terminal for ratatui's output: cursor moves (`ESC[r;cH`), text, and
    everything else ignored; redraws change only the cells that differ, so the text has to be
    read off a grid, not off the byte stream."""

    def __init__(self, rows, cols):
        self.rows, self.cols = rows, cols
        self.grid = [[" "] * cols for _ in range(rows)]
        self.r = self.c = 0
        self.pending = ""
        self.decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def feed(self, data):
        s = self.pending + self.decoder.decode(data)
        self.pending = ""
        i = 0
        while i < len(s):
            ch = s[i]
            if ch == "\x1b":
                m = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])").match(s, i)
                if not m:
                    if len(s) - i < 32:
                        self.pending = s[i:]
                        return
                    i += 1
                    continue
                if m.group(2) == "H":
                    parts = [p for p in m.group(1).split(";") if p]
                    self.r = int(parts[0]) - 1 if parts else 0
                    self.c = int(parts[1]) - 1 if len(parts) > 1 else 0
                elif m.group(2) == "J" and m.group(1) in ("2", ""):
                    self.grid = [[" "] * self.cols for _ in range(self.rows)]
                i = m.end()
                continue
            if ch == "\r":
                self.c = 0
            elif ch == "\n":
                self.r += 1
            elif ch >= " " and 0 <= self.r < self.rows and 0 <= self.c < self.cols:
                self.grid[self.r][self.c] = ch
                self.c += 1
            i += 1

    def text(self):
        return "\n".join("".join(row) for row in self.grid)


def run_pty(args, done, env=None):
    """Runs memtide in a 100x30 pseudo-terminal until the screen text matches `done`, then
    sends q; returns (seconds until the match, peak RSS in MiB)."""
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm-256color"
        os.environ.update(env or {})
        os.execv(memtide, [memtide] + args)
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    t0, screen, hit = time.perf_counter(), Screen(30, 100), None
    while time.perf_counter() - t0 < 600:
        r, _, _ = select.select([fd], [], [], 0.05)
        if r:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:
                break
            screen.feed(chunk)
            if re.search(done, screen.text()):
                hit = time.perf_counter() - t0
                break
    os.write(fd, b"q")
    deadline = time.time() + 10
    while time.time() < deadline:
        wpid, status, ru = os.wait4(pid, os.WNOHANG)
        if wpid:
            break
        try:
            select.select([fd], [], [], 0.05) and os.read(fd, 1 << 16)
        except OSError:
            pass
    else:
        os.kill(pid, 9)
        _, status, ru = os.wait4(pid, 0)
    if hit is None:
        sys.exit(f"memtide {' '.join(args)}: {done!r} never appeared")
    return hit, ru.ru_maxrss / 1024


ensure_job()
files = job_files()
largest = max(files, key=os.path.getsize)
total = sum(os.path.getsize(f) for f in files)
print(f"job: {len(files)} snapshots in {work}, {total / 2**20:.1f} MiB in all; "
      f"largest {os.path.basename(largest)} {os.path.getsize(largest) / 2**20:.2f} MiB; "
      f"{os.cpu_count()} cores")
rows = []
s_job = run_plain(["summary", work, "--json"])
s_one = run_plain(["summary", largest, "--json"])
rows.append(("summary --json", s_job, s_one))
t_job = run_pty([work], r"%d/%d read" % (len(files), len(files)))
t_one = run_pty([largest], r"peak [0-9.]+ [KMG]i?B")
rows.append(("explorer / overview", t_job, t_one))
t_job1 = run_pty([work], r"%d/%d read" % (len(files), len(files)), {"MEMTIDE_JOBS": "1"})
rows.append(("  MEMTIDE_JOBS=1", t_job1, t_one))
print(f"{'':22}{'job':>22}{'largest file':>22}{'ratio':>16}")
for name, (jt, jr), (ot, orss) in rows:
    print(f"{name:22}{jt:>10.2f} s {jr:>7.0f} MiB{ot:>10.2f} s {orss:>7.0f} MiB"
          f"{jt / ot:>7.1f}x time {jr / orss:>4.2f}x RSS")
