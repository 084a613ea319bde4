"""The recorder under its new name: ``memtide.record`` is ``memtide_record``.

    import memtide.record as mr
    with mr.record("run.jsonl", model=model, optimizer=opt):
        ...
"""

import memtide_record as _impl
from memtide_record import __version__, current, mark, record, step, watch

__all__ = ["record", "step", "mark", "watch", "Recorder", "current", "__version__"]


def __getattr__(name):
    # Recorder imports torch: resolved on first use, as in memtide_record.
    if name == "Recorder":
        return _impl.Recorder
    raise AttributeError(f"module 'memtide.record' has no attribute {name!r}")
