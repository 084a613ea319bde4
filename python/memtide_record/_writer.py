"""JSONL v1 line writer: header, strictly increasing ``t``, and a bounded queue of lines whose
alloc categories may still be amended before they are written."""

import json
import os
import time

_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


class Alloc:
    """A queued alloc line; ``cat`` can change until the line is written."""

    __slots__ = ("t", "jid", "size", "cat", "name", "stack", "storage")

    def __init__(self, t, jid, size, cat, name, stack, storage):
        self.t = t
        self.jid = jid
        self.size = size
        self.cat = cat
        self.name = name
        self.stack = stack
        self.storage = storage  # the StorageRec, for category decisions at write time

    def render(self):
        parts = ['{"t":%d,"op":"alloc","id":%d,"size":%d' % (self.t, self.jid, self.size)]
        if self.cat:
            parts.append(',"cat":"%s"' % self.cat)
        if self.name:
            parts.append(',"name":' + _dumps(self.name))
        if self.stack:
            parts.append(',"stack":' + _dumps(self.stack))
        parts.append("}")
        return "".join(parts)


class Writer:
    """Owns the file. Every event gets a strictly increasing ``t`` (ns since start), so the
    reader never reorders equal-``t`` groups (a view and its base's release stay in order).

    Lines are queued and written in order; a write is one ``os.write`` of whole lines, so a
    follower sees complete lines as soon as they are written."""

    def __init__(self, path, header):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        self.t0 = time.perf_counter_ns()
        self.last_t = -1
        self.queue = []  # str or Alloc, in t order
        self.oldest = None  # perf_counter_ns when the oldest queued line was made
        self.lines = 0
        self.bytes = 0
        self._write([_dumps(header)])

    def now(self, at=None):
        """The ``t`` for an event that happened at perf_counter_ns ``at`` (default: now)."""
        t = (time.perf_counter_ns() if at is None else at) - self.t0
        if t <= self.last_t:
            t = self.last_t + 1
        self.last_t = t
        return t

    def push(self, item):
        if not self.queue:
            self.oldest = time.perf_counter_ns()
        self.queue.append(item)

    def event(self, op, **fields):
        """Queues a non-alloc line with a fresh ``t``."""
        t = self.now(fields.pop("at", None))
        body = ",".join('"%s":%s' % (k, _dumps(v)) for k, v in fields.items() if v is not None)
        self.push('{"t":%d,"op":"%s"%s%s}' % (t, op, "," if body else "", body))

    def release(self, jid, at=None):
        # The two most frequent lines skip the generic encoder.
        self.push('{"t":%d,"op":"release","id":%d}' % (self.now(at), jid))

    def view(self, jid, of, size=None):
        if size is None:
            self.push('{"t":%d,"op":"view","id":%d,"of":%d}' % (self.now(), jid, of))
        else:
            line = '{"t":%d,"op":"view","id":%d,"of":%d,"size":%d}'
            self.push(line % (self.now(), jid, of, size))

    def flush(self, decide, keep=0):
        """Writes all but the newest ``keep`` queued lines; ``decide(alloc)`` fixes each alloc's
        category just before it is written."""
        n = len(self.queue) - keep
        if n <= 0:
            return
        out = []
        for item in self.queue[:n]:
            if isinstance(item, Alloc):
                decide(item)
                out.append(item.render())
            else:
                out.append(item)
        del self.queue[:n]
        self.oldest = time.perf_counter_ns() if self.queue else None
        self._write(out)

    def _write(self, lines):
        data = ("\n".join(lines) + "\n").encode("utf-8")
        view = memoryview(data)
        while view:
            k = os.write(self.fd, view)
            view = view[k:]
        self.lines += len(lines)
        self.bytes += len(data)

    def close(self):
        os.close(self.fd)
