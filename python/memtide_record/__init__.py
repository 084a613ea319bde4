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

from ._version import __version__

__all__ = ["record", "step", "mark", "watch", "Recorder", "current", "__version__"]

_active = []

_NO_TORCH = ("memtide_record records with PyTorch, which this Python cannot import: install the "
             "torch build you train with (or, from a memtide checkout, `pip install '.[record]'`, "
             "which pulls a default torch)")


def _load_recorder():
    """The recorder module, imported on first use so that ``import memtide_record`` (and the
    viewer's wheel) works where torch is not installed."""
    try:
        from . import _recorder as mod
    except ModuleNotFoundError as e:
        if e.name == "torch":
            raise ModuleNotFoundError(_NO_TORCH, name="torch") from e
        raise
    return mod


def __getattr__(name):
    if name == "Recorder":
        return _load_recorder().Recorder
    raise AttributeError(f"module 'memtide_record' has no attribute {name!r}")


@contextlib.contextmanager
def record(path, model=None, optimizer=None, **options):
    """Records every tensor storage made, viewed and freed on one device while the block runs.

    Options (see ``Recorder``): ``device`` (default: the model's device, else cpu),
    ``min_bytes`` (storages smaller than this are not recorded), ``stacks`` (capture Python
    stacks, default True), ``max_frames`` (8), ``max_delay`` (seconds an alloc line may wait
    for its category, 0.25), ``max_pending`` (lines that may wait, 1024), ``sample_every``
    (ops between NVML samples on CUDA, 64), ``source`` (header source name), ``sync_steps``
    (write each step mark after ``torch.cuda.synchronize()``: step times are the device's,
    ``"step_clock": "synchronized"`` in the header; default False), ``phases`` (hooks on the
    model and optimizer write ``forward`` / ``backward`` / ``Optimizer.step#…`` phase marks
    and label the model's gradient-free tensor arguments ``input``; default True).
    """
    rec = _load_recorder().Recorder(path, model=model, optimizer=optimizer, **options)
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
