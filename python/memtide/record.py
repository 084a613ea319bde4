"""The recorder under its new name: ``from memtide import record`` is ``memtide_record``.

    import memtide.record as mr
    with mr.record("run.jsonl", model=model, optimizer=opt):
        ...
"""

from memtide_record import Recorder, __version__, current, mark, record, step, watch

__all__ = ["record", "step", "mark", "watch", "Recorder", "current", "__version__"]
