"""Hostile input and impatient users (issue 47): the extension never ends or hangs the
interpreter. A memory budget (``max_memory=``, ``MEMTIDE_MAX_MEMORY``) raises
``memtide.OutOfMemory`` (a ``MemoryError``) and the interpreter goes on; Ctrl-C raises
``KeyboardInterrupt`` within a second in a load that would take minutes and in every long
call; rows and columns have bounds; a 1 MiB name or a 1,000-frame stack shared by many rows
is held once. The figures asserted come from the generated files (sizes, counts, frames)."""

import gzip
import json
import os
import pickle
import select
import signal
import subprocess
import sys
import time

import memtide
import pytest
from conftest import ROOT, cli_json

STEPS = str(ROOT / "sample-traces/train-3steps.jsonl")
OOM = str(ROOT / "sample-traces/cuda-oom.pickle")
HEADER = {"memtide": 1, "device": "cuda:0", "clock": "us"}
#: The most bytes a one-line text holds (crates/memtide-core/src/clip.rs TEXT_CAP).
TEXT_CAP = 1024


def write_jsonl(path, sizes, **fields):
    """One live allocation per size (ids 1…), with ``fields`` on every row."""
    with open(path, "w") as f:
        f.write(json.dumps(HEADER) + "\n")
        extra = json.dumps(fields)[1:-1]
        extra = "," + extra if extra else ""
        for i, size in enumerate(sizes, 1):
            f.write(f'{{"t":{i},"op":"alloc","id":{i},"size":{size}{extra}}}\n')
    return str(path)


def write_snapshot(path, n, frames):
    """A snapshot pickle of ``n`` live 512 B blocks whose frames are one list object (pickled
    once, by the memo); gzipped when ``path`` ends in ``.gz``."""
    traces = [{"action": "alloc", "addr": 4096 * (e + 1), "size": 512, "stream": 0,
               "time_us": e, "frames": frames} for e in range(n)]
    with (gzip.open if str(path).endswith(".gz") else open)(path, "wb") as f:
        pickle.dump({"segments": [], "device_traces": [traces]}, f, protocol=4)
    return path


def run_child(code, env=None):
    """``code`` in a fresh interpreter with the installed memtide: (exit status, stdout, stderr)."""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=600)
    return r.returncode, r.stdout, r.stderr


class Child:
    """A fresh interpreter running ``code`` whose output lines are read with a deadline."""

    def __init__(self, code):
        self.p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE)
        self.buf = b""

    def line(self, timeout):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.p.stdout], [], [], left)[0]:
                return None
            chunk = os.read(self.p.stdout.fileno(), 4096)
            if not chunk:
                return None
            self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return line.decode()

    def interrupt(self, timeout):
        """Sends SIGINT; returns the next line and the seconds it took to come."""
        t0 = time.monotonic()
        self.p.send_signal(signal.SIGINT)
        line = self.line(timeout)
        return line, time.monotonic() - t0

    def finish(self):
        """Waits for the end: (exit status, the rest of stdout, stderr)."""
        try:
            out, err = self.p.communicate(timeout=60)
        finally:
            if self.p.poll() is None:
                self.p.kill()
        return self.p.returncode, (self.buf + out).decode(), err.decode()


# -- memory budgets ----------------------------------------------------------------------------

def test_out_of_memory_is_a_memory_error_and_a_memtide_error():
    assert issubclass(memtide.OutOfMemory, MemoryError)
    assert issubclass(memtide.OutOfMemory, memtide.MemtideError)
    e = memtide.OutOfMemory("x: out of memory", path="x", budget=10, reason="r")
    assert (e.path, e.budget, e.reason, str(e)) == ("x", 10, "r", "x: out of memory")


def test_max_memory_raises_and_is_lifted_after_the_call():
    want = cli_json("summary", "--json", STEPS)["peak"]["bytes"]
    with pytest.raises(MemoryError) as e:
        memtide.open(STEPS, progress=False, max_memory=4096)
    assert isinstance(e.value, memtide.OutOfMemory) and e.value.budget == 4096
    assert e.value.path == STEPS and "4,096 B (max_memory=)" in str(e.value)
    # No limit is left behind: the same process reads the file without one.
    assert memtide.open(STEPS, progress=False).peak.bytes == want
    # A budget that is enough changes nothing; sizes as the CLI writes them.
    for budget in ("1GiB", "512M", 1 << 30):
        assert memtide.open(STEPS, progress=False, max_memory=budget).peak.bytes == want
    with pytest.raises(memtide.OutOfMemory):
        memtide.check(STEPS, max_peak="70GiB", max_memory="4K")
    with pytest.raises(memtide.OutOfMemory):
        memtide.whatif(STEPS, max_memory=1000)
    with pytest.raises(memtide.OutOfMemory):
        memtide.diff(STEPS, STEPS, max_memory=1000)
    assert memtide.check(STEPS, max_peak="70GiB", max_memory="1GiB")


def test_max_memory_values_are_checked():
    with pytest.raises(ValueError, match="not a size"):
        memtide.open(STEPS, max_memory="lots")
    with pytest.raises(ValueError):
        memtide.open(STEPS, max_memory=-1)
    with pytest.raises(TypeError):
        memtide.open(STEPS, max_memory=1.5)


def test_questions_run_under_the_budget(monkeypatch):
    want = cli_json("summary", "--json", STEPS)
    t = memtide.open(STEPS, progress=False)
    roomy = memtide.open(STEPS, progress=False, max_memory="1GiB")
    # MEMTIDE_MAX_MEMORY is read at each call: the questions to `t` run under it; `roomy`
    # keeps the budget it was opened with.
    monkeypatch.setenv("MEMTIDE_MAX_MEMORY", "1K")
    for ask in (lambda: t.timeline(points=100), t.live_at_peak, t.summary, t.svg):
        with pytest.raises(memtide.OutOfMemory):
            ask()
    assert roomy.summary() == want
    assert sum(r["bytes"] for r in roomy.live_at_peak()) == want["peak"]["bytes"]
    monkeypatch.delenv("MEMTIDE_MAX_MEMORY")
    assert t.summary() == want
    assert len(t.live_at_peak()) == t.peak.live_count


def test_memtide_max_memory_raises_and_the_interpreter_goes_on():
    code = (
        "import os, memtide\n"
        f"try:\n    memtide.open({STEPS!r}, progress=False)\n"
        "except MemoryError as e:\n"
        "    print('raised', type(e).__name__, e.budget)\n"
        "del os.environ['MEMTIDE_MAX_MEMORY']\n"
        f"print('after', memtide.open({STEPS!r}, progress=False).peak.bytes)\n"
    )
    env = dict(os.environ, MEMTIDE_MAX_MEMORY="64K")
    rc, out, err = run_child(code, env)
    assert rc == 0, err
    want = cli_json("summary", "--json", STEPS)["peak"]["bytes"]
    assert out.split("\n")[:2] == ["raised OutOfMemory 65536", f"after {want}"], out + err


def test_allocation_failure_is_an_exception_not_an_exit():
    # /dev/zero as the OOM message never ends; with 1.5 GiB of address space the read runs
    # out (or the reader refuses the device first): an exception either way, never exit(2).
    code = (
        "import resource, memtide\n"
        "resource.setrlimit(resource.RLIMIT_AS, (3 << 29, 3 << 29))\n"
        f"try:\n    memtide.open({OOM!r}, oom_message='/dev/zero', progress=False)\n"
        "except memtide.MemtideError as e:\n"
        "    print('raised', isinstance(e, (memtide.OutOfMemory, memtide.FormatError,"
        " memtide.ReadError)) or 'dev/zero' in str(e))\n"
        f"print('after', memtide.open({OOM!r}, progress=False).peak.bytes)\n"
    )
    rc, out, err = run_child(code)
    assert rc == 0, err
    want = cli_json("summary", "--json", OOM)["peak"]["bytes"]
    assert out.split("\n")[:2] == ["raised True", f"after {want}"], out + err


# -- Ctrl-C --------------------------------------------------------------------------------------

def test_ctrl_c_stops_a_load_within_a_second(tmp_path):
    # 10 GB of comment lines in 10 MB: 10,000 copies of one gzip member of 1 MB each.
    bomb = tmp_path / "endless.jsonl.gz"
    member = gzip.compress((b"#" + b"x" * 1022 + b"\n") * 1024, compresslevel=9)
    with open(bomb, "wb") as f:
        f.write(gzip.compress((json.dumps(HEADER) + "\n").encode()))
        for _ in range(10_000):
            f.write(member)
    c = Child(
        "import memtide\n"
        "print('ready', flush=True)\n"
        f"try:\n    memtide.open({str(bomb)!r}, progress=False)\n    print('finished', flush=True)\n"
        "except KeyboardInterrupt as e:\n    print('interrupted', type(e).__name__, flush=True)\n"
        f"print('alive', memtide.open({STEPS!r}, progress=False).events, flush=True)\n"
    )
    assert c.line(60) == "ready"
    time.sleep(1.0)
    line, took = c.interrupt(10)
    assert line == "interrupted KeyboardInterrupt", (line, c.finish())
    assert took < 1.0, took
    rc, out, err = c.finish()
    assert rc == 0 and out.startswith("alive"), (out, err)


def test_ctrl_c_stops_a_load_blocked_in_the_system(tmp_path):
    # An OOM message file that is a pipe nobody writes: opening it blocks in the kernel, where
    # no cancel flag is seen. Ctrl-C must not wait for it (the reading thread is left blocked
    # until the process ends); a reader that refuses a pipe at once is fine too.
    fifo = tmp_path / "oom-message"
    os.mkfifo(fifo)
    c = Child(
        "import memtide\n"
        "print('ready', flush=True)\n"
        f"try:\n    memtide.open({OOM!r}, oom_message={str(fifo)!r}, progress=False)\n"
        "    print('finished', flush=True)\n"
        "except KeyboardInterrupt as e:\n    print('interrupted', type(e).__name__, flush=True)\n"
        "except memtide.MemtideError as e:\n    print('refused', flush=True)\n"
        f"print('alive', memtide.open({STEPS!r}, progress=False).events, flush=True)\n"
    )
    assert c.line(60) == "ready"
    early = c.line(1.0)
    if early is None:
        line, took = c.interrupt(10)
        assert line == "interrupted KeyboardInterrupt", (line, c.finish())
        assert took < 1.0, took
    else:
        assert early == "refused", (early, c.finish())
    rc, out, err = c.finish()
    assert rc == 0 and out.startswith("alive"), (out, err)


@pytest.fixture(scope="module")
def million(tmp_path_factory):
    """A million storages live at the end, 1 B to 1,000,000 B."""
    path = tmp_path_factory.mktemp("big") / "million.jsonl"
    return write_jsonl(path, range(1, 1_000_001), stack=["train.py:1 step"])


def test_ctrl_c_stops_every_long_call_within_a_second(million):
    calls = {
        "summary": "t.summary(frames='all')",
        "rows": "t.live_at_peak(limit=None)",
        "whatif": "memtide.whatif(t)",
        "check": f"memtide.check({million!r}, max_peak='1GiB')",
        "diff": "memtide.diff(t, t)",
    }
    # Lambdas, not eval(): CPython marks a KeyboardInterrupt leaving eval'd code as unhandled
    # and ends the process with SIGINT at exit, even when it was caught.
    table = ", ".join(f"({name!r}, lambda: {call})" for name, call in calls.items())
    c = Child(
        "import memtide\n"
        f"t = memtide.open({million!r}, progress=False)\n"
        f"for name, call in [{table}]:\n"
        "    print('go', name, flush=True)\n"
        "    try:\n        call()\n        print('finished', name, flush=True)\n"
        "    except KeyboardInterrupt:\n        print('interrupted', name, flush=True)\n"
        "print('alive', t.peak.bytes, flush=True)\n"
    )
    for name in calls:
        assert c.line(300) == f"go {name}", c.finish()
        time.sleep(0.3)
        line, took = c.interrupt(10)
        assert line == f"interrupted {name}", (line, c.finish())
        assert took < 1.0, (name, took)
    rc, out, err = c.finish()
    # The peak: every storage live, 1 + 2 + … + 1,000,000 B.
    assert rc == 0 and out.split("\n")[0] == f"alive {1_000_000 * 1_000_001 // 2}", (out, err)


# -- bounds --------------------------------------------------------------------------------------

def test_timeline_points_are_bounded():
    t = memtide.open(OOM, progress=False)
    events = cli_json("summary", "--json", OOM)["events"]
    tl = t.timeline(points=100_000)
    assert 0 < len(tl["total"]) <= events == 81
    assert max(tl["total"]) == t.peak.bytes
    for points in (0, 100_001, 1_000_000, -5):
        with pytest.raises(ValueError, match="points"):
            t.timeline(points=points)


def test_rows_have_a_default_bound(tmp_path):
    n = 150_001
    t = memtide.open(write_jsonl(tmp_path / "many.jsonl", range(1, n + 1)), progress=False)
    rows = t.live_at_peak()
    assert len(rows) == 100_000 and rows.total == n and rows.truncated
    # The biggest first: n, n - 1, …
    assert [r["bytes"] for r in rows[:3]] == [n, n - 1, n - 2]
    assert rows[-1]["bytes"] == n - 99_999
    everything = t.live_at_peak(limit=None)
    assert len(everything) == n and not everything.truncated
    assert sum(r["bytes"] for r in everything) == n * (n + 1) // 2
    assert len(t.live_at(t.peak.index, limit=10)) == 10
    assert t.live_at_peak(limit=0) == [] and t.live_at_peak(limit=0).total == n
    with pytest.raises(ValueError, match="limit"):
        t.live_at_peak(limit=-1)
    pd = pytest.importorskip("pandas")
    df = everything.to_pandas()
    assert isinstance(df, pd.DataFrame) and df.shape == (n, len(rows[0]))
    assert int(df["bytes"].sum()) == n * (n + 1) // 2


def test_to_pandas_of_a_million_rows(million):
    # In 2.5 GiB of address space (the rows as JSON text and a tree of JSON values needed
    # several times that, and glibc aborted when memory ran out).
    pytest.importorskip("pandas")
    rc, out, err = run_child(
        "import resource, memtide\n"
        "resource.setrlimit(resource.RLIMIT_AS, (5 << 29, 5 << 29))\n"
        f"rows = memtide.open({million!r}, progress=False).live_at_peak(limit=None)\n"
        "df = rows.to_pandas()\n"
        "print(len(rows), rows.total, rows[0]['stack'] is rows[-1]['stack'], rows[0]['stack'])\n"
        "print(df.shape[0], int(df['bytes'].sum()))\n"
    )
    assert rc == 0, err
    assert out.split("\n")[:2] == [
        "1000000 1000000 True ('train.py:1 step',)",
        f"1000000 {1_000_000 * 1_000_001 // 2}",
    ], (out, err)


def strings(row):
    for v in row.values():
        if isinstance(v, str):
            yield v
        elif isinstance(v, tuple):
            yield from v


def test_a_1mib_name_on_every_row_is_held_short(tmp_path):
    big = "n" * (1 << 20)
    path = tmp_path / "names.jsonl.gz"
    with gzip.open(path, "wt") as f:
        f.write(json.dumps(HEADER) + "\n")
        for i in range(1, 17):
            f.write(json.dumps({"t": i, "op": "alloc", "id": i, "size": 512, "name": big}) + "\n")
    assert path.stat().st_size < 20_000
    t = memtide.open(path, progress=False)
    rows = t.live_at_peak()
    assert len(rows) == 16 and sum(r["bytes"] for r in rows) == 16 * 512
    for r in rows:
        assert r["name"].startswith("nnnn") and r["name"].endswith("… (1,048,576 bytes)")
        assert all(len(s.encode()) <= TEXT_CAP for s in strings(r))
    assert len(json.dumps(t.summary())) < 1 << 20


def test_a_1mib_frame_name_shared_by_1000_rows(tmp_path):
    big = "f" * (1 << 20)
    frames = [{"filename": "train.py", "line": 7, "name": big}]
    path = write_snapshot(tmp_path / "shared-name.pickle.gz", 1000, frames)
    assert path.stat().st_size < 20_000  # the pickle memo holds the name once
    rows = memtide.open(path, progress=False).live_at_peak()
    assert len(rows) == 1000 and sum(r["bytes"] for r in rows) == 1000 * 512
    (frame,) = rows[0]["stack"]
    assert frame.startswith("train.py:7:fff") and frame.endswith(f"… ({len('train.py:7:') + len(big):,} bytes)")
    assert all(r["stack"] is rows[0]["stack"] for r in rows)
    assert all(len(s.encode()) <= TEXT_CAP for r in rows for s in strings(r))


def test_a_1000_frame_stack_shared_by_100k_rows(tmp_path):
    frames = [{"filename": f"m{i}.py", "line": i, "name": f"f{i}"} for i in range(1000)]
    n = 100_000
    path = write_snapshot(tmp_path / "shared-stack.pickle", n, frames)
    t = memtide.open(path, progress=False)
    rows = t.live_at_peak(limit=None)
    assert len(rows) == n and sum(r["bytes"] for r in rows) == n * 512
    stack = rows[0]["stack"]
    assert stack == tuple(f"m{i}.py:{i}:f{i}" for i in range(1000))
    assert all(r["stack"] is stack for r in rows)
