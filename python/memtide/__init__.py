"""memtide: the memory-timeline explorer for PyTorch runs, as installed by pip.

The wheel puts the ``memtide`` binary on PATH (``memtide FILE``, ``memtide summary FILE``);
this package adds the recorder under its new name, ``memtide.record`` (the same module as the
older ``memtide_record``, which keeps working), and ``python -m memtide`` for environments
whose scripts directory is not on PATH.
"""

from memtide_record import __version__

__all__ = ["__version__"]
