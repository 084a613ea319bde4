"""``memtide.check``: a verdict that is true when the file is within the limits, and whose
text is the one-line reason — so ``assert memtide.check(...)`` fails with that reason."""

from typing import Any, Dict, List, Optional


class CheckResult:
    """What ``memtide check`` decides: ``ok`` (exit 0) or not (exit 1), the lines it prints
    (``reasons``; ``str()`` joins them into one line) and the ``check --json`` document
    (``verdict``: each limit, its figure, the evidence)."""

    def __init__(self, path: str, exit_code: int, reasons: List[str],
                 verdict: Optional[Dict[str, Any]] = None) -> None:
        self.path = path
        self.exit_code = exit_code
        self.reasons = list(reasons)
        self.verdict = verdict or {}

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        return " · ".join(self.reasons) if self.reasons else ("ok" if self.ok else "FAIL")

    def __repr__(self) -> str:
        return f"<memtide.CheckResult {'ok' if self.ok else 'FAIL'}: {self}>"
