"""``memtide.check`` agrees with ``memtide check`` in exit meaning (true: 0, false: 1, raises:
2 — but a file of several devices one of which could not be gated is a false result) and says
the command's reason; ``assert memtide.check(...)`` fails with that reason."""

import json
import os
import subprocess
import sys
import textwrap

import memtide
import pytest
from conftest import ROOT, cli

CASES = [
    ("sample-traces/cuda-oom.pickle", {"max_peak": "10GiB"}),
    ("sample-traces/cuda-oom.pickle", {"max_peak": "100GiB"}),
    ("sample-traces/train-3steps.jsonl", {"max_peak": "100GiB"}),
    ("sample-traces/train-3steps.jsonl", {"max_peak": "1GiB"}),
    ("sample-traces/train-3steps.jsonl", {"max_growth": "5%"}),
    ("sample-traces/train-leak.jsonl", {"max_growth": "1%"}),
    ("sample-traces/train-leak.jsonl", {"max_growth": "50%", "max_peak": "70GiB"}),
    ("sample-traces/train-checkpointed.jsonl", {"max_peak": "4GiB"}),
    ("sample-traces/cuda-oom.pt.trace.json.gz", {"max_peak": "70GiB"}),
    ("sample-traces/cuda-oom.pickle", {"max_growth": "5%"}),  # no steps: exit 2
    ("sample-traces/cuda-oom.pickle", {"max_peak": "lots"}),  # bad size: exit 2
    ("tests/data/gpu-h200/train_mlp_fp32_default.pickle", {"max_peak": "1GiB"}),
    ("tests/data/gpu-h200/train_mlp_fp32_default.pickle", {"max_peak": "70GiB"}),
    ("tests/data/gpu-h200/oom_fragmented.pickle", {"max_peak": "70GiB"}),
    ("no-such-file.pickle", {"max_peak": "1GiB"}),
    # Every device is gated: cuda:1 ran out of memory; cuda:0 alone is over 40 MiB.
    ("tests/fixtures/snapshot/two_devices_p4.pickle", {"max_peak": "40MiB"}),
    ("tests/fixtures/snapshot/two_devices_p4.pickle", {"max_peak": "1GiB"}),
    ("tests/fixtures/snapshot/two_devices_p4.pickle", {"max_peak": "1GiB", "device": "cuda:0"}),
]


def flags(kw):
    out = []
    for k, v in kw.items():
        out += ["--" + k.replace("_", "-"), v]
    return out


@pytest.mark.parametrize("path,kw", CASES, ids=[f"{p}-{k}" for p, k in CASES])
def test_check_agrees_with_the_command(path, kw):
    os.chdir(ROOT)
    r = cli("check", path, *flags(kw))
    assert r.returncode in (0, 1, 2), r
    if r.returncode == 2 and not r.stdout:
        with pytest.raises(memtide.MemtideError) as e:
            memtide.check(path, **kw)
        # The command's message after `memtide: error: `.
        assert str(e.value) in r.stderr
        return
    res = memtide.check(path, **kw)
    assert bool(res) == (r.returncode == 0)
    assert res.exit_code == r.returncode
    assert res.reasons == r.stdout.strip().splitlines()
    # The same verdict as `check --json`, and from an opened trace without a second read.
    assert res.verdict == json.loads(cli("check", path, *flags(kw), "--json").stdout)
    opened = {k: kw.pop(k) for k in ["device"] if k in kw}
    again = memtide.check(memtide.open(path, progress=False, **opened), **kw)
    assert (again.exit_code, again.reasons) == (res.exit_code, res.reasons)


def test_failing_assert_shows_the_reason(tmp_path):
    os.chdir(ROOT)
    reason = cli("check", "sample-traces/train-leak.jsonl", "--max-growth", "1%").stdout.strip()
    assert reason.startswith("FAIL: step baseline grew by")
    test = tmp_path / "test_gate.py"
    test.write_text(textwrap.dedent(f"""
        import memtide

        def test_memory_gate():
            assert memtide.check({str(ROOT / 'sample-traces/train-leak.jsonl')!r}, max_growth="1%")
    """))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    # pytest's assertion line shows the result, whose repr is the reason.
    assert "AssertionError" in r.stdout
    assert "step baseline grew by 1.000 GiB (+15.38%) after warm-up, over --max-growth 1.00%" in r.stdout, r.stdout


def test_passing_check_is_true():
    res = memtide.check(ROOT / "sample-traces/train-3steps.jsonl", max_peak="70GiB")
    assert res
    assert str(res).startswith("ok: peak ")


def test_every_device_of_a_file_is_gated():
    """cuda:1 of the two-device fixture ran out of memory: a 1 GiB gate fails on it, though
    cuda:0 (the first device) is within the limit; ``device=`` narrows the gate."""
    path = ROOT / "tests/fixtures/snapshot/two_devices_p4.pickle"
    res = memtide.check(path, max_peak="1GiB")
    assert not res and res.exit_code == 1
    assert res.verdict["kind"] == "devices"
    assert [d["device"] for d in res.verdict["devices"]] == ["cuda:0", "cuda:1"]
    assert any(r.startswith("FAIL: cuda:1: out of memory") for r in res.reasons), res.reasons
    one = memtide.check(path, max_peak="1GiB", device="cuda:0")
    assert one and one.verdict["kind"] == "device"
    t = memtide.open(path, progress=False)
    assert not memtide.check(t, max_peak="1GiB")


def test_sizes_as_python_users_write_them():
    """``max_peak`` takes bytes as an int (``torch.cuda.max_memory_allocated()`` returns one)
    and means what the same bytes with a unit mean; ``max_growth`` takes a float fraction as
    ``verdict["limits"]["max_growth"]`` reports it. Bools, floats for sizes and ints for
    growth are refused: each could be a slip."""
    path = ROOT / "sample-traces/train-3steps.jsonl"
    peak = 9999220736  # sample-traces/README.md
    for limit, ok in [(peak, True), (peak - 1, False), (9 * 2**30, False), (10 * 2**30, True)]:
        as_int = memtide.check(path, max_peak=limit)
        as_text = memtide.check(path, max_peak=f"{limit}B")
        assert bool(as_int) == ok, (limit, as_int)
        assert (as_int.exit_code, as_int.reasons) == (as_text.exit_code, as_text.reasons)
        assert as_int.verdict["limits"]["max_peak"] == limit
    # An opened trace takes them too.
    t = memtide.open(path, progress=False)
    assert memtide.check(t, max_peak=peak) and not memtide.check(t, max_peak=peak - 1)
    leak = ROOT / "sample-traces/train-leak.jsonl"
    frac = memtide.check(leak, max_growth=0.01)
    pct = memtide.check(leak, max_growth="1%")
    assert (frac.exit_code, frac.reasons) == (pct.exit_code, pct.reasons) == (1, pct.reasons)
    assert frac.verdict["limits"]["max_growth"] == 0.01
    assert memtide.check(leak, max_growth=0.5)
    for bad, err in [({"max_peak": True}, TypeError), ({"max_peak": 2.5e9}, TypeError),
                     ({"max_peak": -1}, ValueError), ({"max_growth": 5}, TypeError),
                     ({"max_growth": False}, TypeError), ({"max_growth": -0.1}, ValueError),
                     ({"max_growth": float("nan")}, ValueError)]:
        with pytest.raises(err):
            memtide.check(path, **bad)
