"""Opening a file from Python against the CLI's ``summary``, in the same run (issue 41).

    python python/bench/open_vs_cli.py FILE [--cli target/release/memtide] [--runs 5]

Times ``memtide.open(FILE)`` (in this process: the Rust reader on its thread, the GIL free)
and ``memtide summary FILE --json`` (a subprocess, output discarded), interleaved run by run
(a shared machine drifts), and prints both medians and their ratio; then whether the
``pickle`` module was imported or any ``pickle.*`` audit event fired (``sys.addaudithook``)
while Python opened the file. Run it with the ``memtide`` from a release wheel and the
release binary of the same checkout.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

PICKLE_EVENTS = []


def _audit(event, args):
    if event.startswith("pickle"):
        PICKLE_EVENTS.append(event)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--cli", default="target/release/memtide")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--summary", action="store_true",
                    help="also time Trace.summary() after open (the CLI's whole work)")
    a = ap.parse_args()
    pickled_before = "pickle" in sys.modules or "_pickle" in sys.modules
    sys.addaudithook(_audit)
    import memtide

    py_times, py_sum_times, cli_times = [], [], []
    for i in range(a.runs):
        t0 = time.perf_counter()
        with open(os.devnull, "wb") as null:
            r = subprocess.run([a.cli, "summary", "--json", a.file], stdout=null)
        cli_times.append(time.perf_counter() - t0)
        if r.returncode != 0:
            print(f"memtide summary failed: exit {r.returncode}", file=sys.stderr)
            return 2
        t0 = time.perf_counter()
        t = memtide.open(a.file, progress=False)
        py_times.append(time.perf_counter() - t0)
        if a.summary:
            t.summary()
            py_sum_times.append(time.perf_counter() - t0)
        del t
        print(f"run {i + 1}: cli summary {cli_times[-1]:.3f} s, memtide.open {py_times[-1]:.3f} s"
              + (f", open+summary {py_sum_times[-1]:.3f} s" if a.summary else ""), flush=True)
    cli_m, py_m = statistics.median(cli_times), statistics.median(py_times)
    size = os.path.getsize(a.file)
    print(f"file: {a.file} ({size / 1e6:.1f} MB), {a.runs} interleaved runs, medians:")
    print(f"  memtide summary --json (CLI): {cli_m:.3f} s")
    print(f"  memtide.open (Python):        {py_m:.3f} s")
    print(f"  ratio open / CLI summary:     {py_m / cli_m:.3f} (limit 1.1)")
    if a.summary:
        s_m = statistics.median(py_sum_times)
        print(f"  open + summary() (Python):    {s_m:.3f} s, ratio {s_m / cli_m:.3f}")
    imported = "pickle" in sys.modules or "_pickle" in sys.modules
    print(f"pickle imported: {imported} (before memtide: {pickled_before}); "
          f"pickle audit events: {len(PICKLE_EVENTS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
