"""The exceptions ``memtide`` raises: every one a ``MemtideError``, each with the fields its
kind knows (the file, the byte offset or line, the reason, the devices)."""

from typing import List, Optional


class MemtideError(Exception):
    """Anything memtide refuses: a bad file, a bad argument, a question the file cannot answer."""

    def __init__(self, message: str, **fields: object) -> None:
        super().__init__(message)
        for k, v in fields.items():
            setattr(self, k, v)


class FormatError(MemtideError):
    """The file (or a side file) is not what memtide reads: ``path`` (None for a side file,
    which the message names), ``offset`` (byte offset into the decompressed stream, or into
    the file for damaged gzip) or ``line`` (1-based) where known, and ``reason``."""

    path: Optional[str]
    offset: Optional[int]
    line: Optional[int]
    reason: str

    def __init__(self, message: str, path: Optional[str] = None, offset: Optional[int] = None,
                 line: Optional[int] = None, reason: str = "") -> None:
        super().__init__(message, path=path, offset=offset, line=line, reason=reason or message)


class ReadError(MemtideError, OSError):
    """The file cannot be read at all (missing, a directory, no permission): also an
    ``OSError`` with ``errno``."""

    def __init__(self, message: str, path: Optional[str] = None, reason: str = "",
                 errno: Optional[int] = None) -> None:
        OSError.__init__(self, errno, message) if errno is not None else OSError.__init__(self, message)
        self.args = (message,)
        self.path = path
        self.reason = reason or message
        self.errno = errno
        self.filename = path

    def __str__(self) -> str:
        return self.args[0]


class DeviceError(MemtideError):
    """``device=`` names no device of the file: ``wanted`` and the file's ``devices``."""

    wanted: str
    devices: List[str]

    def __init__(self, message: str, wanted: str = "", devices: Optional[List[str]] = None) -> None:
        super().__init__(message, wanted=wanted, devices=list(devices or []))


class OutOfMemory(MemtideError, MemoryError):
    """A call needed more memory than its budget allows (``max_memory=`` or
    ``MEMTIDE_MAX_MEMORY``) or than the system gave: also a ``MemoryError``. ``path`` (the
    file, where one is known), ``budget`` (the call's budget in bytes; None when the system ran
    out) and ``reason``. The interpreter, and every trace opened before, are unharmed."""

    path: Optional[str]
    budget: Optional[int]
    reason: str

    def __init__(self, message: str, path: Optional[str] = None, budget: Optional[int] = None,
                 reason: str = "") -> None:
        MemoryError.__init__(self, message)
        self.path = path
        self.budget = budget
        self.reason = reason or message


class Cancelled(MemtideError, KeyboardInterrupt):
    """Reading was interrupted (Ctrl-C while the file loaded)."""

    def __init__(self, message: str = "cancelled", **fields: object) -> None:
        KeyboardInterrupt.__init__(self, message)
        for k, v in fields.items():
            setattr(self, k, v)


__all__ = ["MemtideError", "FormatError", "ReadError", "DeviceError", "OutOfMemory", "Cancelled"]
