"""memtide-record: record a PyTorch run's memory timeline as memtide JSONL v1, written live.

    import memtide_record
    with memtide_record.record("run.jsonl", model=model, optimizer=opt):
        for i, batch in enumerate(loader):
            memtide_record.step(i)
            ...

Then ``memtide run.jsonl`` (or ``memtide -f run.jsonl`` while it runs) and
``memtide summary run.jsonl``.
"""

import contextlib

from ._recorder import Recorder, __version__

__all__ = ["record", "step", "mark", "watch", "Recorder", "current", "__version__"]

_active = []


@contextlib.contextmanager
def record(path, model=None, optimizer=None, **options):
    """Records every tensor storage made, viewed and freed on one device while the block runs.

    Options (see ``Recorder``): ``device`` (default: the model's device, else cpu),
    ``min_bytes`` (storages smaller than this are not recorded), ``stacks`` (capture Python
    stacks, default True), ``max_frames`` (8), ``max_delay`` (seconds an alloc line may wait
    for its category, 0.25), ``max_pending`` (lines that may wait, 1024), ``sample_every``
    (ops between NVML samples on CUDA, 64), ``source`` (header source name).
    """
    rec = Recorder(path, model=model, optimizer=optimizer, **options)
    rec.start()
    _active.append(rec)
    try:
        yield rec
    finally:
        _active.remove(rec)
        rec.stop()


def current():
    """The innermost active recorder, or None."""
    return _active[-1] if _active else None


def step(n):
    """Marks the start of training step ``n`` (a ``step`` mark named "step N")."""
    rec = current()
    if rec is not None:
        rec.mark(f"step {n}", kind="step")


def mark(name, kind="note"):
    """Writes a mark: kind is one of step, phase, reset_peak, note, annotation."""
    rec = current()
    if rec is not None:
        rec.mark(name, kind=kind)


def watch(model=None, optimizer=None):
    """Tells the active recorder about a model or optimizer made inside the block."""
    rec = current()
    if rec is not None:
        rec.watch(model=model, optimizer=optimizer)
