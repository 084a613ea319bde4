"""Shared fixtures: the memtide binary (MEMTIDE_BIN, set by tests/slow/recorder.rs) and a runner for
`memtide summary --json`."""

import json
import os
import subprocess
import sys

import pytest

# The package from this working tree, not a possibly stale installed copy.
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="session")
def memtide_bin():
    path = os.environ.get("MEMTIDE_BIN") or os.path.join(REPO, "target", "debug", "memtide")
    if not os.path.exists(path):
        pytest.fail(f"memtide binary not found at {path}: run `cargo build` or set MEMTIDE_BIN")
    return path


@pytest.fixture
def summary(memtide_bin):
    """Runs the strict reader (no --lenient) and returns the parsed `summary --json`."""

    def run(path):
        p = subprocess.run([memtide_bin, "summary", str(path), "--json"],
                           capture_output=True, text=True, timeout=60)
        assert p.returncode == 0, f"memtide rejected {path}: {p.stderr}"
        return json.loads(p.stdout)

    return run
