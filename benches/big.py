#!/usr/bin/env python3
"""Big snapshots, side by side with the floor in one run (issue 51): for each shape, the bare
opcode walk (`floor_ops`, best of RUNS), `memtide summary --json` (wall time and peak RSS, best
of RUNS) and the explorer's first screen in a pseudo-terminal (time from exec to the first
timeline screen, peak RSS at that moment), each as a ratio to the walk or to the file's size;
then the middle shape with one OOM entry appended against the same file without it (and its
first screen).

Usage: benches/big.py [--memtide BIN] [--runs N] [--shapes 222,424,1030] [--no-screen] WORKDIR

(`GEN_BIG_SNAPSHOT=PATH` names the generator binary when it is not in target/release/examples.)

The snapshots are written into WORKDIR by `gen_big_snapshot` (deterministic: a file already
there is used as it is). Build first, e.g. with the no-LTO settings of benches/HISTORY.md:
`cargo build --release --example gen_big_snapshot && cargo build --release -p memtide-core
--example floor_ops && cargo build --release`.
"""
import argparse, os, re, subprocess, sys, time

from screen_time import measure  # benches/, the script's folder

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REL = os.path.join(ROOT, "target", "release")
# name (MB): (entries, distinct stacks, fresh frames lists in 1,000 entries)
SHAPES = {
    "222": (2_200_000, 20_000, 630),
    "424": (7_000_000, 4_000, 88),
    "1030": (17_000_000, 4_000, 88),
}


def generate(path, entries, stacks, fresh, oom=False):
    if os.path.exists(path):
        return
    argv = [os.environ.get("GEN_BIG_SNAPSHOT", os.path.join(REL, "examples", "gen_big_snapshot")), path + ".tmp", str(entries),
            str(stacks), str(fresh)] + (["oom"] if oom else [])
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    os.rename(path + ".tmp", path)


def walk(path, runs):
    out = subprocess.run([os.path.join(REL, "examples", "floor_ops"), path, str(runs)],
                         check=True, capture_output=True, text=True).stdout
    return float(re.search(r"([\d.]+) ms,", out).group(1)) / 1e3


def timed(argv):
    """Wall seconds and peak RSS (MiB) of one run, its output thrown away."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if status != 0:
        sys.exit(f"{' '.join(argv)} failed: {p.stderr.read().decode()[-2000:]}")
    return wall, ru.ru_maxrss / 1024.0


def first_screen(memtide, path):
    """Seconds from exec to the first timeline screen and VmHWM (MiB) at that moment."""
    t, _, hwm = measure([memtide, path], b"live at")
    return t, hwm


def best(f, runs):
    got = [f() for _ in range(runs)]
    return min(got, key=lambda x: (x[0] is None, x[0] or 0)), got


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("workdir")
    ap.add_argument("--memtide", default=os.path.join(REL, "memtide"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--shapes", default="222,424,1030")
    ap.add_argument("--no-screen", action="store_true")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    mib = lambda path: os.path.getsize(path) / 2**20
    for name in a.shapes.split(","):
        entries, stacks, fresh = SHAPES[name]
        path = os.path.join(a.workdir, f"big{name}.pickle")
        generate(path, entries, stacks, fresh)
        fw = walk(path, a.runs)
        (st, sr), alls = best(lambda: timed([a.memtide, "summary", "--json", path]), a.runs)
        size = os.path.getsize(path)
        line = (f"{name}: {size / 1e6:.0f} MB, {entries / 1e6:.1f} M entries | walk {fw:.2f} s | "
                f"summary --json {st:.2f} s ({st / fw:.1f}x the walk; runs "
                f"{', '.join(f'{t:.2f}' for t, _ in alls)}), {sr:.0f} MiB ({sr / mib(path):.2f}x the file)")
        if not a.no_screen:
            (ft, fr), alls = best(lambda: first_screen(a.memtide, path), a.runs)
            line += (f" | first screen {ft:.2f} s ({ft / fw:.1f}x the walk), {fr:.0f} MiB "
                     f"({fr / mib(path):.2f}x the file)" if ft else " | first screen never shown")
        print(line, flush=True)
        if name == "424":
            oom = os.path.join(a.workdir, "big424-oom.pickle")
            generate(oom, entries, stacks, fresh, oom=True)
            pairs = []
            for _ in range(a.runs):  # interleaved
                pairs.append((timed([a.memtide, "summary", "--json", path])[0],
                              timed([a.memtide, "summary", "--json", oom])))
            without = min(p[0] for p in pairs)
            with_oom, rss = min(p[1] for p in pairs)
            line = (f"424 + one OOM: summary --json {with_oom:.2f} s, {rss:.0f} MiB, against "
                    f"{without:.2f} s without it ({with_oom / without:.2f}x)")
            if not a.no_screen:
                (ft, fr), _ = best(lambda: first_screen(a.memtide, oom), a.runs)
                line += (f" | first screen {ft:.2f} s ({ft / fw:.1f}x the walk), {fr:.0f} MiB"
                         if ft else " | first screen never shown")
            print(line, flush=True)


if __name__ == "__main__":
    main()
