"""Type hints for the ``memtide`` package (the Python API of the memtide-cli wheel)."""

import os
from typing import Any, Dict, List, Optional, Sequence, Union

from memtide._check import CheckResult as CheckResult
from memtide._errors import Cancelled as Cancelled
from memtide._errors import DeviceError as DeviceError
from memtide._errors import FormatError as FormatError
from memtide._errors import MemtideError as MemtideError
from memtide._errors import OutOfMemory as OutOfMemory
from memtide._errors import ReadError as ReadError
from memtide._trace import Trace as Trace

__version__: str
PathLike = Union[str, "os.PathLike[str]"]
MaxMemory = Union[int, str, None]

def open(
    path: PathLike,
    device: Optional[str] = ...,
    capacity: Optional[str] = ...,
    device_log: Optional[PathLike] = ...,
    *,
    device_log_tz: Optional[int] = ...,
    device_log_offset: Optional[int] = ...,
    oom_message: Optional[PathLike] = ...,
    nsys: Optional[PathLike] = ...,
    server_log: Optional[PathLike] = ...,
    categories: Optional[PathLike] = ...,
    rules: Optional[PathLike] = ...,
    lenient: bool = ...,
    cpp_frames: bool = ...,
    single_thread: bool = ...,
    allocator_history: bool = ...,
    progress: Optional[bool] = ...,
    max_memory: MaxMemory = ...,
) -> Trace: ...
def check(
    path: Union[PathLike, Trace],
    max_peak: Union[int, str, None] = ...,
    max_growth: Union[float, str, None] = ...,
    *,
    window: Optional[str] = ...,
    capacity: Optional[str] = ...,
    device: Optional[str] = ...,
    allow_warnings: bool = ...,
    lenient: bool = ...,
    max_memory: MaxMemory = ...,
) -> CheckResult: ...
def diff(
    a: Union[PathLike, Trace],
    b: Union[PathLike, Trace],
    *,
    device: Optional[str] = ...,
    lenient: bool = ...,
    max_memory: MaxMemory = ...,
) -> Dict[str, Any]: ...
def whatif(
    trace: Union[PathLike, Trace],
    alloc_conf: Union[str, Sequence[str], None] = ...,
    *,
    capacity: Optional[str] = ...,
    device: Optional[str] = ...,
    lenient: bool = ...,
    max_memory: MaxMemory = ...,
) -> Dict[str, Any]: ...

__all__: List[str]
