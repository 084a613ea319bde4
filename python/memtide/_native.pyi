"""Type hints for ``memtide._native``, the compiled half (use the ``memtide`` API instead)."""

from typing import Any, Dict, List, Optional, Tuple

__version__: str

def main(argv: List[str]) -> int: ...
def start_open(
    path: str,
    *,
    device: Optional[str] = ...,
    capacity: Optional[str] = ...,
    device_log: Optional[str] = ...,
    device_log_tz: Optional[int] = ...,
    device_log_offset: Optional[int] = ...,
    oom_message: Optional[str] = ...,
    nsys: Optional[str] = ...,
    server_log: Optional[str] = ...,
    categories: Optional[str] = ...,
    rules: Optional[str] = ...,
    lenient: bool = ...,
    cpp_frames: bool = ...,
    single_thread: bool = ...,
    allocator_history: bool = ...,
    max_memory: Optional[str] = ...,
) -> Loading: ...
def check(
    path: str,
    *,
    max_peak: Optional[str] = ...,
    max_growth: Optional[str] = ...,
    window: Optional[str] = ...,
    capacity: Optional[str] = ...,
    device: Optional[str] = ...,
    allow_warnings: bool = ...,
    lenient: bool = ...,
    max_memory: Optional[str] = ...,
) -> Tuple[int, List[str], str]: ...
def diff(
    a: str, b: str, *, device: Optional[str] = ..., lenient: bool = ...,
    max_memory: Optional[str] = ...,
) -> str: ...
def whatif(
    path: str,
    *,
    alloc_conf: List[str] = ...,
    capacity: Optional[str] = ...,
    device: Optional[str] = ...,
    lenient: bool = ...,
    max_memory: Optional[str] = ...,
) -> str: ...

class Loading:
    def progress(self) -> Tuple[int, int]: ...
    def done(self) -> bool: ...
    def cancel(self) -> None: ...
    def finish(self) -> NativeTrace: ...

class NativeTrace:
    @property
    def path(self) -> str: ...
    @property
    def format(self) -> str: ...
    @property
    def devices(self) -> List[str]: ...
    @property
    def device(self) -> str: ...
    @property
    def events(self) -> int: ...
    def summary_json(self, window: Optional[str] = ..., frames: str = ..., fixes: bool = ...) -> str: ...
    def live_rows(
        self, index: Optional[int] = ..., limit: Optional[int] = ...
    ) -> Dict[str, Any]: ...
    def timeline_json(self, points: int) -> str: ...
    def allocator_json(self, index: int) -> str: ...
    def check(
        self,
        *,
        max_peak: Optional[str] = ...,
        max_growth: Optional[str] = ...,
        window: Optional[str] = ...,
        allow_warnings: bool = ...,
    ) -> Tuple[int, List[str], str]: ...
    def svg(self, width: int = ..., height: int = ...) -> str: ...
