"""The rest of the API, each answer held to an independent figure: the live rows at the peak
add up to the peak's bytes, the timeline's highest column is the peak, the allocator's
totals match the file's reserved memory, diff and whatif equal their commands' JSON, errors
carry the file, offset and reason, and no pickle code runs."""

import gzip
import json
import os
import subprocess
import sys

import memtide
import pytest
from conftest import ROOT, cli_json

OOM = str(ROOT / "sample-traces/cuda-oom.pickle")
STEPS = str(ROOT / "sample-traces/train-3steps.jsonl")
H200 = str(ROOT / "tests/data/gpu-h200/train_mlp_fp32_default.pickle")


def test_live_at_peak_adds_up_to_the_peak():
    t = memtide.open(H200, progress=False)
    rows = t.live_at_peak()
    assert rows.index == t.peak.index
    assert sum(r["bytes"] for r in rows) == t.peak.bytes
    assert len(rows) == rows.total == t.peak.live_count and not rows.truncated
    top = rows[0]
    for key in ("bytes", "band", "category", "user_frame", "stack", "allocated_at", "freed_at",
                "views"):
        assert key in top
    # One tuple per distinct stack, shared by the rows that have it.
    assert isinstance(top["stack"], tuple)
    by_text = {}
    for r in rows:
        assert by_text.setdefault(r["stack"], r["stack"]) is r["stack"]
    # A storage live at the peak was allocated at or before it and freed after it (or never).
    for r in rows:
        assert r["allocated_at"] is None or r["allocated_at"] <= t.peak.index
        assert r["freed_at"] is None or r["freed_at"] > t.peak.index
    # live_at at the peak's event is the same set.
    again = t.live_at(t.peak.index)
    assert sorted(r["bytes"] for r in again) == sorted(r["bytes"] for r in rows)


def test_live_at_band_sums_match_the_bands():
    t = memtide.open(STEPS, progress=False)
    rows = t.live_at_peak()
    bands = vars(t.peak.bands)
    for band in ("persistent", "activation", "workspace"):
        assert sum(r["bytes"] for r in rows if r["band"] == band) == bands[band]


def test_timeline_keeps_the_peak():
    t = memtide.open(STEPS, progress=False)
    tl = t.timeline(points=7)
    assert len(tl["total"]) == len(tl["index"]) <= 7
    assert max(tl["total"]) == t.peak.bytes
    i = tl["total"].index(max(tl["total"]))
    assert tl["index"][i] == t.peak.index
    for k in ("persistent", "activation", "workspace", "unknown"):
        assert len(tl[k]) == len(tl["total"])


def test_allocator_at_the_end_matches_the_file():
    t = memtide.open(OOM, progress=False, allocator_history=True)
    s = t.summary()
    last = s["events"] - 1
    a = t.allocator_at(last)
    end = s["allocator_at_end"]
    assert a.totals["reserved"] == end["reserved"]
    assert a.totals["segments"] == end["segments"]
    assert sum(seg["size"] for seg in a.segments) == end["reserved"]
    assert sum(b["size"] for b in a.blocks) == end["reserved"]


def test_allocator_at_needs_the_history():
    # Without an OOM to explain, summary's reading keeps only the final segments.
    t = memtide.open(H200, progress=False)
    with pytest.raises(memtide.MemtideError, match="allocator_history=True"):
        t.allocator_at(3)


def test_diff_and_whatif_equal_their_commands():
    os.chdir(ROOT)
    a, b = "sample-traces/train-3steps.jsonl", "sample-traces/train-checkpointed.jsonl"
    assert memtide.diff(a, b) == cli_json("diff", "--json", a, b)
    assert memtide.diff(memtide.open(a, progress=False), b) == cli_json("diff", "--json", a, b)
    f = "sample-traces/cuda-oom.pickle"
    want = cli_json("whatif", f, "--alloc-conf", "expandable_segments:True", "--json")
    assert memtide.whatif(f, alloc_conf="expandable_segments:True") == want


def test_format_error_carries_path_offset_and_reason(tmp_path):
    bad = tmp_path / "cut.pickle"
    data = open(OOM, "rb").read()
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(memtide.FormatError) as e:
        memtide.open(bad, progress=False)
    assert e.value.path == str(bad)
    assert isinstance(e.value.offset, int) and 0 < e.value.offset <= len(data) // 2
    assert e.value.reason and e.value.reason in str(e.value)
    assert str(bad) in str(e.value)


def test_jsonl_error_has_a_line(tmp_path):
    bad = tmp_path / "bad.jsonl"
    lines = open(STEPS).read().splitlines()
    lines[3] = "{not json"
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(memtide.FormatError) as e:
        memtide.open(bad, progress=False)
    assert e.value.line == 4


def test_missing_file_and_unknown_device(tmp_path):
    with pytest.raises(memtide.ReadError) as e:
        memtide.open(tmp_path / "nope.pickle", progress=False)
    assert isinstance(e.value, OSError) and e.value.errno == 2
    with pytest.raises(memtide.DeviceError) as d:
        memtide.open(OOM, device="cuda:5", progress=False)
    assert d.value.devices == ["cuda:0"] and d.value.wanted == "cuda:5"


def test_server_log_reconciles_the_budget(tmp_path):
    """`server_log=` is `--server-log`: the summary's budget equals the command's, its
    figures those of tests/fixtures/serving/README.md."""
    serving = ROOT / "tests/fixtures/serving"
    pools, log = str(serving / "pools.pickle"), str(serving / "pools.vllm.log")
    b = memtide.open(pools, server_log=log, progress=False).summary()["budget"]
    assert b == cli_json("summary", "--json", "--server-log", log, pools)["budget"]
    assert [(r["figure"], r["line"], r["rank"]) for r in b["reconcile"]] == [
        ("weights", 2, 0), ("activation_peak", 4, 0), ("outside", 4, 0),
        ("graphs_estimate", 5, 0), ("kv_cache", 6, 0), ("graphs", 10, 0)]
    assert b["reconcile"][0]["logged"] == 2 << 30
    bad = tmp_path / "server.log"
    bad.write_text("no memory here\n")
    with pytest.raises(memtide.MemtideError) as e:
        memtide.open(pools, server_log=bad, progress=False)
    assert "server.log" in str(e.value) and "no vLLM or SGLang memory line" in str(e.value)


def test_jupyter_picture_and_repr():
    t = memtide.open(OOM, progress=False)
    svg = t._repr_svg_()
    assert svg.startswith("<svg") and "</svg>" in svg
    # The plot command's picture, byte for byte.
    out = subprocess.run([os.environ.get("MEMTIDE_BIN", str(ROOT / "target/debug/memtide")),
                          "plot", OOM, "-o", "-"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert svg == out.stdout.rstrip("\n") or svg == out.stdout
    r = repr(t)
    assert "\n" not in r and "14.75 GiB" in r and "#79" in r
    page = t._repr_html_()
    assert "14.75 GiB" in page and svg in page


def test_no_pickle_runs():
    code = (
        "import sys, memtide\n"
        "calls = []\n"
        "sys.addaudithook(lambda ev, args: calls.append(ev) if ev.startswith('pickle') else None)\n"
        f"t = memtide.open({OOM!r}, progress=False)\n"
        "t.summary()\n"
        "print('pickle' in sys.modules, '_pickle' in sys.modules, len(calls))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False", "False", "0"]


def test_to_pandas_is_optional(monkeypatch):
    t = memtide.open(STEPS, progress=False)
    rows = t.live_at_peak()
    assert isinstance(rows, list) and isinstance(rows[0], dict)
    # Without pandas (an import that fails as a missing package does): a clear ImportError.
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pandas"):
        rows.to_pandas()
    with pytest.raises(ImportError, match="pandas"):
        t.timeline(points=8).to_pandas()


def test_to_pandas_holds_the_same_rows_and_columns():
    pd = pytest.importorskip("pandas")
    t = memtide.open(STEPS, progress=False)
    rows = t.live_at_peak()
    df = rows.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert len(df) == len(rows)
    assert list(df.columns) == list(rows[0].keys())
    assert [int(b) for b in df["bytes"]] == [r["bytes"] for r in rows]
    assert int(df["bytes"].sum()) == t.peak.bytes
    tl = t.timeline(points=8)
    frame = tl.to_pandas()
    assert len(frame) == len(tl)
    for k, v in tl.items():
        if isinstance(v, list):
            assert list(frame[k]) == v


def test_the_command_from_the_wheel(tmp_path):
    exe = os.path.join(os.path.dirname(sys.executable), "memtide")
    r = subprocess.run([exe, "check", STEPS, "--max-peak", "1KiB"], capture_output=True, text=True)
    want = subprocess.run([os.environ.get("MEMTIDE_BIN", str(ROOT / "target/debug/memtide")),
                           "check", STEPS, "--max-peak", "1KiB"], capture_output=True, text=True)
    assert (r.returncode, r.stdout, r.stderr) == (want.returncode, want.stdout, want.stderr)
    gz = tmp_path / "t.jsonl.gz"
    gz.write_bytes(gzip.compress(open(STEPS, "rb").read()))
    assert memtide.open(gz, progress=False).peak.bytes == json.loads(
        subprocess.run([exe, "summary", "--json", STEPS], capture_output=True, text=True).stdout
    )["peak"]["bytes"]


CAPTURE = str(ROOT / "tests/fixtures/serving/capture.kineto.json")


def test_budget_is_the_summary_budget_and_the_hand_figures():
    """``Trace.budget``: ``summary --json``'s ``budget`` as a dict, its figures those of
    tests/fixtures/serving/README.md worked out by hand; None without serving memory."""
    mib = 1 << 20
    t = memtide.open(CAPTURE, progress=False)
    b = t.budget
    assert b == cli_json("summary", CAPTURE, "--json")["budget"]
    assert b["before_trace"] == 3072 * mib
    assert b["graphs"] == 60 * mib
    assert b["activation_peak"] == 4 * mib
    assert b["weights"] is None and b["kv_cache"] is None and b["outside"] is None
    assert b["capacity"] == 8192 * mib
    assert b["headroom"] == (8192 - 3262) * mib
    assert [(c["size"], c["bytes_added"]) for c in b["captures"]] == [(16, 20 * mib),
                                                                       (8, 40 * mib)]
    assert [s["name"] for s in b["stages"]] == ["before trace", "activation peak",
                                                "graph capture"]
    # A fresh copy: changing it changes nothing the trace holds.
    b["graphs"] = 0
    assert t.budget["graphs"] == 60 * mib
    assert memtide.open(STEPS, progress=False).budget is None


def test_summary_fixes_is_the_fixes_flag():
    """``summary(fixes=True)`` is ``summary --fixes --json``; on a history of fewer than a
    million entries the fix list is replayed either way, so both equal the plain document."""
    got = memtide.open(OOM, progress=False).summary(fixes=True)
    want = cli_json("summary", "--json", "--fixes", OOM)
    assert got == want
    assert got == cli_json("summary", "--json", OOM)
    assert got["ooms"][0]["fixes"], got["ooms"][0]
    assert "fixes_deferred" not in got["ooms"][0]
