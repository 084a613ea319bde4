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
        """A DataFrame with a column per key, built column by column (one list of the rows'
        values each), not from the dicts at once."""
        pd = _pandas()
        keys: Dict[str, None] = dict.fromkeys(self[0]) if self else {}
        first = self[0].keys() if self else None
        for r in self:
            if r.keys() != first:  # rows of other shapes: every key any row has
                keys.update(dict.fromkeys(r))
        return pd.DataFrame({k: [r.get(k) for r in self] for k in keys}, columns=list(keys))


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
