#!/usr/bin/env python3
"""Compare memtide's figures with PyTorch's own counters, case by case, and write report.md.

Usage: compare.py OUT_DIR --memtide BIN

OUT_DIR holds `cases.json` (written by run.py on the GPU, or by a test) and the files it
names. Standard library only: this part needs no GPU and no torch, so the test suite runs it on
the CPU (tests/cli/gpu_conformance.rs).

cases.json:
    {"versions": {"torch": "...", "cuda": "...", "driver": "...", "gpu": "..."},
     "cases": [
       {"name": "mlp_fp32_default",
        "what": "an MLP, fp32, Adam, 3 steps, default allocator settings",
        "command": ["summary", "--json", "{file}", "--device", "0"],   # {file} = OUT_DIR/file
        "file": "mlp_fp32_default.pickle",
        "optional": false,     # true: a memtide that lacks the command skips the case
        "checks": [
          {"figure": "peak", "memtide": "peak.bytes", "expected": 123,
           "counter": "torch.cuda.max_memory_allocated()",
           "window": "reset_peak_memory_stats() after _record_memory_history() .. _dump_snapshot()",
           "tolerance": 0}
        ]}],
     "skipped": [{"name": "two_ranks", "reason": "..."}]}

A check with `observed` instead of `memtide` compares a figure the workload measured itself
(e.g. that the file holds NVML samples); `op` "ge" means memtide's figure must be at least the
expected one; `op` "le" means at most the expected one and, with a tolerance, no further below
it than that (a figure that can only see part of what the counter counts).

`memtide` is a path into memtide's JSON output: keys joined by dots, list items as [i]
(`ooms[0].verdict`, `runs[0].reserved_peak`), or a difference of two such paths
(`peak.bytes - peak.bands.external`: the framework's part of a peak that includes memory
outside it). `tolerance` is relative (0 = exact; 0.01 = 1 %)
and applies to numbers; strings must be equal. A check whose expected value is null is
reported as "unknown" and fails: a conformance figure must be known.

Exit status: 0 when every check passes (skipped cases do not fail), 1 when any fails, 2 when
cases.json cannot be read.
"""

import argparse
import gzip
import json
import os
import re
import subprocess
import sys

PATH_TOKEN = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def lookup(doc, path):
    """The value at `path` in `doc` (or `a - b` of two paths), or raise KeyError naming the
    missing step."""
    if " - " in path:
        a, b = path.split(" - ", 1)
        x, y = lookup(doc, a.strip()), lookup(doc, b.strip())
        if not isinstance(x, (int, float)) or not isinstance(y, (int, float)):
            raise KeyError(f"{path}: not two numbers ({x!r}, {y!r})")
        return x - y
    cur = doc
    for m in PATH_TOKEN.finditer(path):
        key, idx = m.group(1), m.group(2)
        if key is not None:
            if not isinstance(cur, dict) or key not in cur:
                raise KeyError(f"{path}: no key {key!r}")
            cur = cur[key]
        else:
            i = int(idx)
            if not isinstance(cur, list) or i >= len(cur):
                raise KeyError(f"{path}: no item [{i}]")
            cur = cur[i]
    return cur


def judge(expected, got, tolerance, op="eq"):
    """'pass' or 'FAIL' for one figure: equal (within a relative tolerance for numbers), at
    least the expected value (op "ge"), or at most it and within the tolerance below (op
    "le")."""
    if expected is None or got is None:
        return "FAIL"
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool)
                  for v in (expected, got))
    if op == "ge":
        return "pass" if numbers and got >= expected else "FAIL"
    if op == "le":
        floor = expected - tolerance * max(abs(expected), 1)
        return "pass" if numbers and floor <= got <= expected else "FAIL"
    if isinstance(expected, bool) or isinstance(got, bool):
        return "pass" if expected == got else "FAIL"
    if isinstance(expected, (int, float)) and isinstance(got, (int, float)):
        if tolerance == 0:
            return "pass" if got == expected else "FAIL"
        scale = max(abs(expected), 1)
        return "pass" if abs(got - expected) <= tolerance * scale else "FAIL"
    return "pass" if got == expected else "FAIL"


def binary(n):
    """`1.500 GiB (1,610,612,736 B)` for a byte count, the value itself otherwise."""
    if isinstance(n, bool) or not isinstance(n, int):
        return "null" if n is None else str(n)
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    v, u = float(n), 0
    while abs(v) >= 1024 and u < len(units) - 1:
        v /= 1024
        u += 1
    head = f"{n} B" if u == 0 else f"{v:.3f} {units[u]}"
    return f"{head} ({n:,} B)" if u else head


def cell(s):
    """Text safe inside a Markdown table cell: no control characters, no pipes."""
    s = "".join(c if c.isprintable() else " " for c in str(s))
    return s.replace("|", "\\|")


def run_memtide(memtide, command, out_dir, file):
    args = [a.replace("{file}", os.path.join(out_dir, file or "")) for a in command]
    p = subprocess.run([memtide, *args], capture_output=True, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def has_command(memtide, name):
    """Whether `memtide --help` lists `name` among its commands (memtide takes bare file
    arguments, so an unknown command would be read as a file name)."""
    p = subprocess.run([memtide, "--help"], capture_output=True, text=True, timeout=60)
    listed, in_commands = set(), False
    for line in p.stdout.splitlines():
        if line.strip() == "Commands:":
            in_commands = True
        elif in_commands and line.startswith("  ") and line.strip():
            listed.add(line.split()[0])
        elif in_commands and line.strip():
            break
    return name in listed


def evaluate(case, memtide, out_dir):
    """Rows (figure, counter, window, expected, memtide, verdict) for one case."""
    rows = []
    doc, problem = None, None
    if case.get("optional") and not has_command(memtide, case["command"][0]):
        return [], f"memtide has no `{case['command'][0]}` command"
    if all("observed" in c for c in case["checks"]):
        rc, out, err = 0, "{}", ""
    else:
        rc, out, err = run_memtide(memtide, case["command"], out_dir, case.get("file"))
    if rc not in (0, 1):
        problem = f"memtide exited {rc}: {err.strip().splitlines()[0] if err.strip() else ''}"
    else:
        try:
            doc = json.loads(out)
        except ValueError as e:
            problem = f"memtide's output is not JSON: {e}"
    for c in case["checks"]:
        tol = c.get("tolerance", 0)
        if "observed" in c:
            got = c["observed"]
            verdict = judge(c["expected"], got, tol, c.get("op", "eq"))
        elif doc is None:
            got, verdict = problem, "FAIL"
        else:
            try:
                got = lookup(doc, c["memtide"])
                verdict = judge(c["expected"], got, tol, c.get("op", "eq"))
            except KeyError as e:
                got, verdict = f"missing ({e})", "FAIL"
        if c["expected"] is None:
            verdict = "FAIL"
        rows.append({
            "figure": c["figure"], "counter": c["counter"], "window": c.get("window", ""),
            "expected": c["expected"], "memtide": got, "tolerance": tol, "verdict": verdict,
            "op": c.get("op", "eq"),
        })
    return rows, None


def report(manifest, results):
    """report.md: versions, one row per check, skipped cases with their reason."""
    v = manifest.get("versions", {})
    lines = ["# memtide GPU conformance", ""]
    lines += [f"- {cell(k)}: {cell(val)}" for k, val in sorted(v.items())]
    failed = sum(1 for _, rows, _ in results for r in rows if r["verdict"] != "pass")
    total = sum(len(rows) for _, rows, _ in results)
    lines += ["", f"**{total - failed} of {total} checks pass**", ""]
    lines += ["| case | figure | PyTorch counter (window) | expected | memtide | tolerance | verdict |",
              "|---|---|---|---:|---:|---:|---|"]
    for case, rows, _ in results:
        for r in rows:
            counter = r["counter"] + (f" ({r['window']})" if r["window"] else "")
            tol = "exact" if r["tolerance"] == 0 else f"{r['tolerance'] * 100:g} %"
            if r["op"] == "ge":
                tol = "at least"
            elif r["op"] == "le":
                tol = f"at most, {tol} below"
            lines.append(f"| {cell(case['name'])} | {cell(r['figure'])} | {cell(counter)} | "
                         f"{cell(binary(r['expected']))} | {cell(binary(r['memtide']))} | {tol} | "
                         f"{r['verdict']} |")
    skipped = [(c["name"], why) for c, _, why in results if why] + [
        (s["name"], s["reason"]) for s in manifest.get("skipped", [])]
    if skipped:
        lines += ["", "Skipped:", ""] + [f"- {cell(n)}: {cell(w)}" for n, w in skipped]
    whats = [(c["name"], c.get("what", "")) for c, _, _ in results if c.get("what")]
    if whats:
        lines += ["", "Cases:", ""] + [f"- {cell(n)}: {cell(w)}" for n, w in whats]
    return "\n".join(lines) + "\n", failed


def kineto_total_allocated_max(path):
    """The largest `Total Allocated` of a Kineto trace's `[memory]` events, per device
    (`cuda:0`), read from the trace itself: the trace's own figure for its peak."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
    best = {}
    for e in events:
        if not isinstance(e, dict) or e.get("name") != "[memory]":
            continue
        a = e.get("args", {})
        dtype, did = a.get("Device Type"), a.get("Device Id")
        total = a.get("Total Allocated")
        if total is None or did is None or dtype not in (1, "cuda", "CUDA"):
            continue
        key = f"cuda:{did}"
        best[key] = max(best.get(key, total), total)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("--memtide", required=True)
    a = ap.parse_args(argv)
    try:
        with open(os.path.join(a.out_dir, "cases.json"), encoding="utf-8") as f:
            manifest = json.load(f)
        cases = manifest["cases"]
    except (OSError, ValueError, KeyError) as e:
        print(f"compare.py: {a.out_dir}/cases.json: {e}", file=sys.stderr)
        return 2
    results = []
    for case in cases:
        rows, skipped = evaluate(case, a.memtide, a.out_dir)
        results.append((case, rows, skipped))
    text, failed = report(manifest, results)
    with open(os.path.join(a.out_dir, "report.md"), "w", encoding="utf-8") as f:
        f.write(text)
    print(text)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
