"""``memtide.Trace``: one device of an opened file, answering from the Rust core — the
summary document of ``memtide summary --json`` and the parts of it as attributes, the live
set at any event, the timeline, the allocator's state, and in Jupyter the plot."""

import html
import json
import operator
import sys
from types import SimpleNamespace
from typing import Any, Dict, List, Optional

from memtide._table import Columns, Rows

#: Rows ``live_at``/``live_at_peak`` return unless asked (``limit=None``: all of them).
DEFAULT_ROWS = 100_000
#: The most columns ``timeline`` returns (and never more than the trace has events).
MAX_POINTS = 100_000


def _count(v: Any) -> Optional[int]:
    """``v`` as an int (numpy's too), or None when it is not a whole number."""
    if isinstance(v, bool):
        return None
    try:
        return operator.index(v)
    except TypeError:
        return None


def _limit(limit: Optional[int]) -> Optional[int]:
    if limit is None:
        return None
    n = _count(limit)
    if n is None or n < 0:
        raise ValueError(f"limit={limit!r}: expected a count of rows (0 or more), or None for all")
    return min(n, sys.maxsize)


def _ns(d: Any) -> Any:
    """Dicts as attribute namespaces (``peak.bands.activation``), lists kept."""
    if isinstance(d, dict):
        return SimpleNamespace(**{k: _ns(v) for k, v in d.items()})
    if isinstance(d, list):
        return [_ns(v) for v in d]
    return d


def _human(n: Optional[int]) -> str:
    if n is None:
        return "unavailable"
    x = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(x) < 1024 or unit == "TiB":
            return f"{int(x)} B" if unit == "B" else f"{x:.2f} {unit}"
        x /= 1024
    return f"{n} B"


class Trace:
    """A file opened by :func:`memtide.open` (one device of it: ``device``)."""

    def __init__(self, native: Any) -> None:
        self._native = native
        self._summary: Optional[Dict[str, Any]] = None

    # -- the file -----------------------------------------------------------------------------
    @property
    def path(self) -> str:
        return self._native.path

    @property
    def format(self) -> str:
        return self._native.format

    @property
    def devices(self) -> List[str]:
        return list(self._native.devices)

    @property
    def device(self) -> str:
        return self._native.device

    @property
    def events(self) -> int:
        return self._native.events

    # -- the summary --------------------------------------------------------------------------
    def summary(
        self, window: Optional[str] = None, frames: str = "user", fixes: bool = False
    ) -> Dict[str, Any]:
        """The document ``memtide summary FILE --json`` prints, as a dict (a fresh copy).
        ``fixes=True``: as ``--fixes``, each OOM's fix list replayed whatever the history's
        length (by default only histories of at most 1,000,000 entries get theirs)."""
        if window is None and frames == "user" and not fixes:
            if self._summary is None:
                self._summary = json.loads(self._native.summary_json())
            return json.loads(json.dumps(self._summary))
        return json.loads(self._native.summary_json(window=window, frames=frames, fixes=fixes))

    def _s(self) -> Dict[str, Any]:
        if self._summary is None:
            self._summary = json.loads(self._native.summary_json())
        return self._summary

    @property
    def peak(self) -> Any:
        """The peak: ``bytes``, ``index``, ``time_us``, ``bands``, ``persistent`` split, ``live``
        (top rows), … as in ``summary --json``'s ``peak`` (None for a trace with no events)."""
        p = self._s().get("peak")
        if p is None:
            return None
        return _ns(p)

    @property
    def reserved_peak(self) -> Any:
        """``bytes`` and ``index`` of the highest reserved memory (None where not recorded)."""
        s = self._s()
        if s.get("reserved_peak") is None:
            return None
        return SimpleNamespace(bytes=s.get("reserved_peak"), index=s.get("reserved_peak_index"),
                               source_index=s.get("reserved_peak_source_index"))

    @property
    def ooms(self) -> List[Any]:
        """Each out-of-memory event explained: ``verdict``, ``reasoning``, ``advice``, figures."""
        return _ns(self._s().get("ooms") or [])

    @property
    def steps(self) -> List[Any]:
        """Per step: ``name``, ``baseline`` (bytes live at its start), ``peak``, …"""
        return _ns(self._s().get("steps") or [])

    @property
    def budget(self) -> Optional[Dict[str, Any]]:
        """The serving budget (docs/serving.md) as a dict with the keys of ``summary --json``'s
        ``budget``: ``before_trace``, ``weights``, ``kv_cache``, ``graphs``,
        ``activation_peak``, ``outside``, ``capacity``, ``headroom`` (bytes, None where the
        trace cannot say), ``stages`` and ``captures``; None when nothing in the trace is
        serving memory (no stream capture, private pool or KV cache). A fresh copy."""
        b = self._s().get("budget")
        if b is None:
            return None
        return json.loads(json.dumps(b))

    # -- questions at an instant ---------------------------------------------------------------
    def live_at(self, index: int, limit: Optional[int] = DEFAULT_ROWS) -> Rows:
        """The storages live after event ``index`` (numbered as ``peak.index``), biggest first:
        size, band, category, user frame, stack (a tuple, shared by the rows with that
        stack), lifetime (``allocated_at``/``freed_at``), views. At most ``limit`` rows
        (100,000 unless given; ``None``: all): ``.total`` is how many were live, ``.truncated``
        whether rows were left out."""
        return self._rows(int(index), limit)

    def live_at_peak(self, limit: Optional[int] = DEFAULT_ROWS) -> Rows:
        """:meth:`live_at` at the peak (also when the peak is the initial state)."""
        return self._rows(None, limit)

    def _rows(self, index: Optional[int], limit: Optional[int]) -> Rows:
        d = self._native.live_rows(index=index, limit=_limit(limit))
        rows = d["rows"]
        return Rows(rows, index=d["index"], at_start=d["at_start"], time_us=d["time_us"],
                    device=d["device"], total=d["total"], truncated=d["total"] > len(rows))

    def timeline(self, points: int = 1000) -> Columns:
        """The bands over the run in ``points`` columns (each at the highest instant of its
        range, so the peak is never averaged away): ``index``, ``time_us``, ``total``, one list
        per band, ``reserved``. ``points`` is 1 to 100,000 (else ``ValueError``); a trace with
        fewer events gives one column per event at most."""
        n = _count(points)
        if n is None or not 1 <= n <= MAX_POINTS:
            raise ValueError(f"points={points!r}: expected 1 to {MAX_POINTS:,} columns")
        return Columns(json.loads(self._native.timeline_json(n)))

    def allocator_at(self, index: int) -> Any:
        """The caching allocator's ``segments`` (each with its ``blocks``) and ``totals`` after
        event ``index`` (snapshots opened with ``allocator_history=True``)."""
        d = json.loads(self._native.allocator_json(int(index)))
        blocks = [dict(b, segment=s["address"]) for s in d["segments"] for b in s["blocks"]]
        return SimpleNamespace(index=d["index"], device=d["device"], totals=d["totals"],
                               segments=Rows(d["segments"]), blocks=Rows(blocks))

    # -- pictures -----------------------------------------------------------------------------
    def svg(self, width: int = 1200, height: int = 480) -> str:
        """The stacked timeline ``memtide plot FILE -o out.svg`` draws, peak marked."""
        return self._native.svg(width, height)

    def _repr_svg_(self) -> Optional[str]:
        try:
            return self.svg()
        except Exception:
            return None

    def _repr_html_(self) -> str:
        """Jupyter: the one-line summary over the stacked timeline picture (peak marked)."""
        line = html.escape(repr(self))
        pic = self._repr_svg_()
        return f"<div><code>{line}</code></div>" + (f"<div>{pic}</div>" if pic else "")

    def __repr__(self) -> str:
        try:
            s = self._s()
        except Exception as e:  # a trace with no events still shows itself
            return f"<memtide.Trace {self.path} · {self.format} · {self.device} · {e}>"
        p = s.get("peak")
        at = "" if p is None else f" at #{p['index']}" if p.get("at") != "start" else " at start"
        peak = "no events" if p is None else f"peak {_human(p['bytes'])}{at}"
        extra = f" · {len(s.get('ooms') or [])} OOM" if s.get("ooms") else ""
        return (f"<memtide.Trace {self.path} · {self.format} · {self.device} · "
                f"{s.get('events')} events · {peak}{extra}>")
