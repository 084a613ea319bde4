"""Waiting for a file to load: polls the reading thread (which holds no GIL) for bytes read,
draws a bar (tqdm when installed, else a plain one on a terminal's stderr; none when stderr
is not a terminal or ``progress=False``), and turns Ctrl-C into a cancelled read and an
immediate ``KeyboardInterrupt``."""

import sys
import time
from typing import Any, Optional


def _interactive() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython  # type: ignore[import-not-found]
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class _PlainBar:
    """A one-line bar on stderr, redrawn at most 10 times a second."""

    def __init__(self, label: str) -> None:
        self.label = label
        self.last = 0.0
        self.drawn = False

    def update(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.last < 0.1:
            return
        self.last = now
        pct = 100.0 * done / total if total else 0.0
        width = 30
        fill = int(width * pct / 100)
        sys.stderr.write(f"\r{self.label} [{'#' * fill}{'.' * (width - fill)}] {pct:5.1f}% "
                         f"{done / 1e6:.1f}/{total / 1e6:.1f} MB")
        sys.stderr.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


class _TqdmBar:
    def __init__(self, tqdm: Any, label: str) -> None:
        self.bar = tqdm(total=0, unit="B", unit_scale=True, desc=label, leave=False)

    def update(self, done: int, total: int) -> None:
        if total and self.bar.total != total:
            self.bar.total = total
        self.bar.n = done
        self.bar.refresh()

    def close(self) -> None:
        self.bar.close()


def _bar(progress: Optional[bool], label: str) -> Optional[Any]:
    if progress is False:
        return None
    if progress is None and not (_interactive() or _in_notebook()):
        return None
    try:
        if _in_notebook():
            from tqdm.auto import tqdm  # type: ignore[import-not-found]
        else:
            from tqdm import tqdm  # type: ignore[import-not-found]
        return _TqdmBar(tqdm, label)
    except ImportError:
        return _PlainBar(label) if _interactive() else None


def wait(loading: Any, progress: Optional[bool], label: str) -> Any:
    """Waits for ``loading`` (a ``_native.Loading``) and returns its trace; Ctrl-C cancels
    the read and raises ``KeyboardInterrupt`` at once (a read blocked in the system, e.g. on
    a pipe nobody writes, is not waited for: its thread ends when the read returns)."""
    bar = None
    started = time.monotonic()
    try:
        while not loading.done():
            # No bar for a file that loads in a blink.
            if bar is None and time.monotonic() - started > 0.25:
                bar = _bar(progress, label)
                progress = False if bar is None else progress
            if bar is not None:
                bar.update(*loading.progress())
            time.sleep(0.02)
    except KeyboardInterrupt:
        loading.cancel()
        raise
    finally:
        if bar is not None:
            bar.close()
    return loading.finish()
