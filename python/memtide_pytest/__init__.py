"""memtide's pytest plugin: a test's device memory, recorded and gated.

    import pytest

    @pytest.mark.memtide(max_peak="2GiB")           # or bytes: max_peak=2 * 2**30
    def test_forward_fits(model, batch):
        model(batch).sum().backward()

    @pytest.mark.memtide(max_growth="1%")           # needs step marks: memtide_record.step(i)
    def test_no_leak(model, loader):
        ...

A marked test runs inside ``memtide_record.record`` (the device is CUDA's current one when
torch sees a GPU, else the CPU; ``device="cuda:1"`` picks one) and the recording is judged by
``memtide.check`` — the gate ``memtide check`` applies. Over a limit (or on an OOM, or when the
gate cannot judge: ``max_growth`` without step marks), the test fails with the verdict, the
biggest storages live at the peak and the path of the saved trace (``memtide PATH`` opens it in
the explorer). The trace of a passing test is deleted unless ``--memtide-dir DIR`` keeps every
marked test's trace there. Unmarked tests are untouched: the plugin imports neither torch nor
memtide's extension until a marked test runs.

Marker arguments: ``max_peak`` (bytes as an int, or "2GiB"; also the first positional
argument), ``max_growth`` ("1%" or a float fraction 0.01), ``window``, ``allow_warnings``,
``device``; any other keyword goes to ``memtide_record.record`` (``min_bytes``, ``stacks``,
``max_frames``, …).

Installed with the ``memtide-cli`` wheel as the pytest plugin ``memtide`` (entry point
``pytest11``, this module: ``memtide_pytest``); ``-p no:memtide`` turns it off.
"""

import os
import re
import shutil
import tempfile
from typing import Any, Dict, List, Optional

import pytest

MARK = "memtide"

# Keys of the marker that are the gate's; the others are the recorder's.
_GATE = ("max_peak", "max_growth", "window", "allow_warnings")

# Rows of the peak's biggest storages a failure shows.
_OWNERS = 5

def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("memtide", "memtide: device memory of marked tests")
    group.addoption(
        "--memtide-dir", action="store", default=None, metavar="DIR",
        help="keep the memory trace of every test marked @pytest.mark.memtide in DIR (default: "
             "only a failing test's trace is kept, in a temporary directory)")


def pytest_configure(config: Any) -> None:
    config.addinivalue_line(
        "markers",
        "memtide(max_peak=None, max_growth=None, **options): record the test's device memory "
        "with memtide's recorder (CUDA when present, else CPU) and fail the test over the "
        "limits, as `memtide check` would")


def _session(config: Any) -> Dict[str, Any]:
    """Per-session state: where traces go."""
    st = getattr(config, "_memtide_state", None)
    if st is None:
        st = {"dir": None, "keep_all": False, "temporary": False}
        config._memtide_state = st
    return st


def _trace_dir(config: Any) -> str:
    st = _session(config)
    if st["dir"] is None:
        chosen = config.getoption("--memtide-dir")
        if chosen:
            os.makedirs(chosen, exist_ok=True)
            st["dir"], st["keep_all"] = os.path.abspath(chosen), True
        else:
            st["dir"], st["temporary"] = tempfile.mkdtemp(prefix="memtide-pytest-"), True
    return st["dir"]


def pytest_unconfigure(config: Any) -> None:
    st = getattr(config, "_memtide_state", None)
    # A temporary directory that kept nothing (every marked test passed) goes.
    if st and st["temporary"] and st["dir"] and not os.listdir(st["dir"]):
        shutil.rmtree(st["dir"], ignore_errors=True)


def _file_name(nodeid: str) -> str:
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_.") or "test"
    return name[-180:] + ".jsonl"


def _options(marker: Any) -> Dict[str, Any]:
    kw = dict(marker.kwargs)
    if marker.args:
        if len(marker.args) > 1 or "max_peak" in kw:
            raise pytest.UsageError(
                "@pytest.mark.memtide takes one positional argument (max_peak); name the others")
        kw["max_peak"] = marker.args[0]
    if kw.get("max_peak") is None and kw.get("max_growth") is None:
        raise pytest.UsageError(
            "@pytest.mark.memtide needs max_peak (\"2GiB\" or bytes) or max_growth (\"1%\")")
    # A limit of the wrong type fails the test before it runs (the gate would refuse it).
    import memtide

    try:
        memtide._size("max_peak", kw.get("max_peak"))
        memtide._growth("max_growth", kw.get("max_growth"))
    except (TypeError, ValueError) as e:
        raise pytest.UsageError(f"@pytest.mark.memtide: {e}") from None
    return kw


def _device(kw: Dict[str, Any]) -> Any:
    if kw.get("device") is not None:
        return kw["device"]
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


@pytest.hookimpl(hookwrapper=True)
def pytest_pyfunc_call(pyfuncitem: Any) -> Any:
    marker = pyfuncitem.get_closest_marker(MARK)
    if marker is None:
        yield
        return
    kw = _options(marker)
    import memtide_record

    path = os.path.join(_trace_dir(pyfuncitem.config), _file_name(pyfuncitem.nodeid))
    rec_kw = {k: v for k, v in kw.items() if k not in _GATE}
    rec_kw["device"] = _device(kw)
    rec_kw.setdefault("source", pyfuncitem.nodeid)
    with memtide_record.record(path, **rec_kw):
        outcome = yield
    del outcome  # the test's own result is judged by pytest; the memory after it
    pyfuncitem._memtide = {"path": path, "kw": kw}


def _owners(path: str) -> List[str]:
    """The peak's biggest storages, one line each (none when the file cannot say)."""
    import memtide

    try:
        rows = memtide.open(path, progress=False).live_at_peak(limit=_OWNERS)
    except memtide.MemtideError:
        return []
    out = []
    for r in rows:
        where = r.get("user_frame") or r.get("frame") or ""
        label = r.get("label") or r.get("name") or ""
        out.append(f"  {_human(r['bytes']):>10}  {r.get('category', ''):<12} {label}"
                   + (f"  ({where})" if where and where != label else ""))
    return out


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass


def _human(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.3f} {unit}"
    return f"{n} B"


def _judge(info: Dict[str, Any]) -> Any:
    """The gate's verdict on the recorded file: (passed, text)."""
    import memtide

    kw, path = info["kw"], info["path"]
    gate = {k: kw[k] for k in _GATE if kw.get(k) is not None}
    try:
        result = memtide.check(path, **gate)
    except memtide.MemtideError as e:
        return False, f"memtide could not judge the test's memory: {e}"
    return result.ok, "\n".join(result.reasons) or str(result)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    outcome = yield
    info = getattr(item, "_memtide", None)
    if call.when != "call" or info is None:
        return
    report = outcome.get_result()
    path = info["path"]
    keep = _session(item.config)["keep_all"]
    if report.skipped:
        if not keep:
            _remove(path)
        return
    if not report.passed:
        # The test failed by itself: its trace is kept for a look.
        report.sections.append(("memtide", f"trace: {path}  (open it: memtide {path})"))
        return
    passed, verdict = _judge(info)
    if passed:
        report.sections.append(("memtide", verdict + (f"\ntrace: {path}" if keep else "")))
        if not keep:
            _remove(path)
        return
    lines = [f"memtide: {verdict}"]
    owners = _owners(path)
    if owners:
        lines.append("biggest at the peak:")
        lines.extend(owners)
    lines.append(f"trace: {path}")
    lines.append(f"open it: memtide {path}")
    report.outcome = "failed"
    report.longrepr = "\n".join(lines)
