"""Rows and columns as plain Python (lists of dicts, dicts of lists) with ``.to_pandas()``
when pandas is installed (it is never required)."""

from typing import Any, Dict, Iterator, List


def _pandas() -> Any:
    try:
        import pandas  # type: ignore[import-not-found]
    except ImportError as e:
        raise ImportError("to_pandas() needs pandas (pip install pandas); the data is "
                          "also here as plain lists and dicts") from e
    return pandas


class Rows(list):
    """A list of dicts (one per row) with ``to_pandas()`` and the instant it describes."""

    def __init__(self, rows: List[Dict[str, Any]], **meta: Any) -> None:
        super().__init__(rows)
        self.meta = meta
        for k, v in meta.items():
            setattr(self, k, v)

    def to_pandas(self) -> Any:
        return _pandas().DataFrame(list(self))


class Columns(dict):
    """A dict of equal-length lists (one per column) with ``to_pandas()``."""

    def to_pandas(self) -> Any:
        return _pandas().DataFrame({k: v for k, v in self.items() if isinstance(v, list)})

    def __len__(self) -> int:  # rows, as a DataFrame counts them
        for v in self.values():
            if isinstance(v, list):
                return len(v)
        return 0

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())
