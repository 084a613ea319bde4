"""memtide: the memory-timeline explorer for PyTorch runs, from Python.

    import memtide
    t = memtide.open("snapshot.pickle")       # any format memtide reads; pickle never runs
    t.peak.bytes, t.peak.bands.activation      # the same figures as `memtide summary --json`
    t.summary()                                # that whole document, as a dict
    t.live_at_peak().to_pandas()               # who holds the memory (pandas optional)
    assert memtide.check("run.pickle", max_peak="70GiB")   # fails with the reason

The wheel (``memtide-cli``) also installs the ``memtide`` command (the explorer, ``summary``,
``check``, …) and the recorder, ``memtide.record`` (the same module as ``memtide_record``).
"""

import json
import operator
import os
from decimal import Decimal
from typing import Any, Dict, List, Optional, Sequence, Union

from memtide_record import __version__

from memtide import _native
from memtide._check import CheckResult
from memtide._errors import (Cancelled, DeviceError, FormatError, MemtideError, OutOfMemory,
                             ReadError)
from memtide._progress import wait as _wait
from memtide._trace import Trace

PathLike = Union[str, "os.PathLike[str]"]

__all__ = [
    "__version__",
    "open",
    "check",
    "diff",
    "whatif",
    "Trace",
    "CheckResult",
    "MemtideError",
    "FormatError",
    "ReadError",
    "DeviceError",
    "OutOfMemory",
    "Cancelled",
]

MaxMemory = Union[int, str, None]
Size = Union[int, str, None]
Growth = Union[float, str, None]

# The largest growth a gate takes, as a fraction (the command's 100000%).
_MAX_GROWTH = 1000.0


def _path(p: Any) -> str:
    if isinstance(p, Trace):
        return p.path
    return os.fspath(p)


def _bytes(name: str, v: Any, expected: str, what: str) -> int:
    """``v`` as bytes: an int (``operator.index``: numpy's too), never a bool, 0 or more;
    ``TypeError`` says what was ``expected``, ``ValueError`` names ``what`` it is."""
    try:
        if isinstance(v, bool):
            raise TypeError
        n = operator.index(v)
    except TypeError:
        raise TypeError(f"{name}={v!r}: expected {expected}") from None
    if n < 0:
        raise ValueError(f"{name}={n}: {what} is 0 bytes or more")
    return n


def _budget(max_memory: MaxMemory) -> Optional[str]:
    """``max_memory`` as the extension takes it: bytes (an int) or a size text ("4GiB",
    "512M"); None leaves ``MEMTIDE_MAX_MEMORY`` (or no budget)."""
    if max_memory is None or isinstance(max_memory, str):
        return max_memory
    return str(_bytes("max_memory", max_memory,
                      "bytes (an int) or a size such as \"4GiB\" or \"512M\"", "a budget"))


def _size(name: str, v: Size) -> Optional[str]:
    """A size limit as the gate reads it: bytes (an int: ``8 * 2**30``,
    ``torch.cuda.max_memory_allocated()``) or a size with a unit ("2GiB", "1.5GB")."""
    if v is None or isinstance(v, str):
        return v
    n = _bytes(name, v, "bytes (an int, e.g. 8 * 2**30) or a size with a unit such as \"2GiB\"",
               "a size")
    return f"{n}B"


def _growth(name: str, v: Growth) -> Optional[str]:
    """A growth limit as the gate reads it: a percentage ("5%") or a fraction (a float: 0.05
    is 5%, as ``CheckResult.verdict["limits"]["max_growth"]`` reports it). An int is refused:
    ``5`` could mean 5% or 500%."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, bool) or not isinstance(v, float):
        raise TypeError(f"{name}={v!r}: expected a percentage such as \"5%\" or a fraction "
                        f"(a float: 0.05 is 5%)")
    if not (0.0 <= v <= _MAX_GROWTH):
        raise ValueError(f"{name}={v!r}: a fraction from 0.0 to {_MAX_GROWTH:g} (0.05 is 5%)")
    # Exactly the decimal the float prints as, times 100: 0.05 -> "5.00%".
    return f"{Decimal(repr(v)) * 100}%"


def open(path: PathLike, device: Optional[str] = None, capacity: Optional[str] = None,
         device_log: Optional[PathLike] = None, *, device_log_tz: Optional[int] = None,
         device_log_offset: Optional[int] = None, oom_message: Optional[PathLike] = None,
         nsys: Optional[PathLike] = None, server_log: Optional[PathLike] = None,
         categories: Optional[PathLike] = None, rules: Optional[PathLike] = None, lenient: bool = False, cpp_frames: bool = False,
         single_thread: bool = False, allocator_history: bool = False,
         progress: Optional[bool] = None, max_memory: MaxMemory = None) -> Trace:
    """Reads ``path`` (memtide JSONL, a CUDA memory snapshot pickle/JSON, a Kineto trace,
    an ``export_memory_timeline`` file; ``.gz`` too) with memtide's own readers — no
    ``pickle.load`` — on a thread, the GIL free. The options are the CLI's flags
    (``device="cuda:1"``, ``capacity="80GiB"``, ``device_log="smi.csv"``,
    ``server_log="vllm.log"``: the serving budget reconciled with vLLM's or SGLang's startup
    memory lines, …); without ``device``, the trace's device is the first that ran out of
    memory, else the first that held memory, else the first with events;
    ``allocator_history=True`` keeps the allocator history for :meth:`Trace.allocator_at`.
    ``progress``: None shows a bar when interactive (tqdm if installed), False never.
    ``max_memory``: the most memory the reading may add (bytes, or "4GiB", "512M"; default
    ``MEMTIDE_MAX_MEMORY``, else none), also the budget of every later question to the trace.
    Ctrl-C stops the reading and raises ``KeyboardInterrupt`` at once.
    Raises :class:`FormatError` (with ``path``, ``offset``/``line``, ``reason``),
    :class:`ReadError`, :class:`DeviceError`, :class:`OutOfMemory` (also a ``MemoryError``) or
    :class:`MemtideError`."""
    p = os.fspath(path)

    def opt(v: Any) -> Optional[str]:
        return None if v is None else os.fspath(v)

    loading = _native.start_open(
        p, device=device, capacity=capacity, device_log=opt(device_log),
        device_log_tz=device_log_tz, device_log_offset=device_log_offset,
        oom_message=opt(oom_message), nsys=opt(nsys), server_log=opt(server_log),
        categories=opt(categories),
        rules=opt(rules), lenient=lenient, cpp_frames=cpp_frames, single_thread=single_thread,
        allocator_history=allocator_history, max_memory=_budget(max_memory))
    native = _wait(loading, progress, f"memtide: reading {os.path.basename(p)}")
    return Trace(native)


def check(path: Union[PathLike, Trace], max_peak: Size = None,
          max_growth: Growth = None, *, window: Optional[str] = None,
          capacity: Optional[str] = None, device: Optional[str] = None,
          allow_warnings: bool = False, lenient: bool = False,
          max_memory: MaxMemory = None) -> CheckResult:
    """``memtide check``: true when the peak is within ``max_peak`` and the step baseline grows
    by at most ``max_growth`` on every device of the file with events (``device`` names one).
    ``max_peak``: bytes as an int (``8 * 2**30``, ``torch.cuda.max_memory_allocated()``) or a
    size with a unit ("70GiB"); ``max_growth``: a percentage ("5%") or a fraction as a float
    (0.05); a bool, or an int growth, raises ``TypeError``. ``str()`` is the reason,
    ``.verdict`` the ``check --json``
    document. What the command exits 2 on (bad input, figures the reader doubts) raises
    :class:`MemtideError`, except a file of several devices of which one could not be gated
    while none failed: a false result with ``exit_code`` 2 whose reasons say which. An
    opened :class:`Trace` is judged as it was opened (no second read;
    ``capacity``/``device``/``lenient``/``max_memory`` are then the opening's)."""
    if isinstance(path, Trace):
        if capacity is not None or device is not None or lenient or max_memory is not None:
            raise MemtideError("capacity, device, lenient and max_memory are memtide.open's for "
                               "an opened Trace: open it with them")
        code, lines, doc = path._native.check(max_peak=_size("max_peak", max_peak),
                                              max_growth=_growth("max_growth", max_growth),
                                              window=window, allow_warnings=allow_warnings)
        return CheckResult(path.path, code, lines, json.loads(doc))
    p = os.fspath(path)
    code, lines, doc = _native.check(p, max_peak=_size("max_peak", max_peak),
                                     max_growth=_growth("max_growth", max_growth), window=window,
                                     capacity=capacity, device=device,
                                     allow_warnings=allow_warnings, lenient=lenient,
                                     max_memory=_budget(max_memory))
    return CheckResult(p, code, lines, json.loads(doc))


def diff(a: Union[PathLike, Trace], b: Union[PathLike, Trace], *, device: Optional[str] = None,
         lenient: bool = False, max_memory: MaxMemory = None) -> Dict[str, Any]:
    """``memtide diff A B --json`` as a dict: both peaks, band deltas, steps aligned, what
    grew and shrank, whether the runs did the same work."""
    return json.loads(_native.diff(_path(a), _path(b), device=device, lenient=lenient,
                                   max_memory=_budget(max_memory)))


def whatif(trace: Union[PathLike, Trace], alloc_conf: Union[str, Sequence[str], None] = None, *,
           capacity: Optional[str] = None, device: Optional[str] = None,
           lenient: bool = False, max_memory: MaxMemory = None) -> Dict[str, Any]:
    """``memtide whatif FILE --alloc-conf CONF… --json`` as a dict: the run replayed through
    PyTorch's caching allocator under its own settings and each ``alloc_conf``
    ("expandable_segments:True")."""
    confs: List[str] = [] if alloc_conf is None else (
        [alloc_conf] if isinstance(alloc_conf, str) else list(alloc_conf))
    return json.loads(_native.whatif(_path(trace), alloc_conf=confs, capacity=capacity,
                                     device=device, lenient=lenient,
                                     max_memory=_budget(max_memory)))
