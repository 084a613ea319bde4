"""Shared by the API tests: the checkout's root, the cargo-built ``memtide`` binary the API is
compared with (``MEMTIDE_BIN``, set by tests/python_api.rs), and the trace files to compare on.
The ``memtide`` package under test is the installed wheel, never ./python."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("MEMTIDE_BIN", str(ROOT / "target/debug/memtide"))

# The checkout's python/ must not shadow the installed wheel.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != (ROOT / "python").resolve()]

SKIP_SUFFIXES = (".md", ".expect", ".truth.json", ".toml", ".txt", ".csv", ".py", ".log")


def trace_files():
    """Every bundled sample, fixture and real H200 file memtide reads as a trace."""
    roots = [ROOT / "sample-traces", ROOT / "tests/fixtures", ROOT / "tests/data/gpu-h200"]
    out = []
    found = []
    for r in roots:
        # Fixture folders may be links into crates/memtide-core/tests/fixtures: followed.
        for d, _, names in os.walk(r, followlinks=True):
            found += [Path(d) / n for n in names]
    for p in sorted(found):
        if not p.is_file() or p.name.endswith(SKIP_SUFFIXES) or p.name.startswith("cases"):
            continue
        if "tui" in p.relative_to(ROOT).parts:  # screen snapshots, not traces
            continue
        out.append(p)
    return out


def cli(*args, check=False):
    r = subprocess.run([BIN, *map(str, args)], capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"memtide {args}: exit {r.returncode}: {r.stderr}")
    return r


def cli_json(*args):
    r = cli(*args, check=True)
    return json.loads(r.stdout)


@pytest.fixture(scope="session")
def root():
    return ROOT
