"""Python stacks of user code: innermost first, "file.py:123 func", skipping torch and the
recorder itself."""

import os
import sys

import torch

_SKIP = tuple(
    os.path.dirname(os.path.abspath(m.__file__)) + os.sep for m in (torch,)
) + (os.path.dirname(os.path.abspath(__file__)) + os.sep,)
_skip_cache = {}


def _skipped(filename):
    r = _skip_cache.get(filename)
    if r is None:
        f = filename
        if not f.startswith("<"):
            f = os.path.abspath(f)
        # contextlib frames come from our own context managers and torch's decorators.
        r = f.startswith(_SKIP) or f.endswith(os.sep + "contextlib.py") or f.startswith("<frozen")
        _skip_cache[filename] = r
    return r


def capture(max_frames, depth=2):
    """The user frames above the caller, at most ``max_frames``."""
    try:
        f = sys._getframe(depth)
    except ValueError:
        return None
    out = []
    while f is not None and len(out) < max_frames:
        co = f.f_code
        if not _skipped(co.co_filename):
            out.append("%s:%d %s" % (os.path.basename(co.co_filename), f.f_lineno, co.co_name))
        f = f.f_back
    return out or None
