"""``memtide.open(f).summary()`` is the document ``memtide summary f --json`` prints, and
``.peak.bytes`` its peak, on every bundled sample, fixture and real H200 file; where the
command refuses a file (exit 2), ``open``/``summary`` raise a ``MemtideError``."""

import json
import os

import memtide
import pytest
from conftest import ROOT, cli, trace_files

FILES = trace_files()


def test_there_are_files_to_compare():
    assert len(FILES) >= 60, [str(p) for p in FILES]
    assert any(p.suffix == ".pickle" and "gpu-h200" in str(p) for p in FILES)


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_summary_equals_cli(path):
    os.chdir(ROOT)  # the document names the source as given
    rel = os.path.relpath(path, ROOT)
    r = cli("summary", "--json", rel)
    if r.returncode != 0:
        assert r.returncode == 2, r.stderr
        with pytest.raises(memtide.MemtideError):
            memtide.open(rel, progress=False).summary()
        return
    want = json.loads(r.stdout)
    t = memtide.open(rel, progress=False)
    got = t.summary()
    assert got == want
    if want["peak"] is not None:
        assert t.peak.bytes == want["peak"]["bytes"]
        assert t.peak.index == want["peak"]["index"]
    assert t.devices == want["devices"]
    assert t.device == want["device"]
