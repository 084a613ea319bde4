"""A small, independent replay of memtide JSONL v1 for the tests: which storages are live after
each event line, by category. Only what the recorder writes (no equal-t reordering: the
recorder's t is strictly increasing, which the tests check first)."""

import json


class Replay:
    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            lines = [json.loads(l) for l in f if l.strip() and not l.startswith("#")]
        self.header = lines[0]
        self.events = lines[1:]
        self.tensor_storage = {}  # tensor id -> storage id (the alloc's id)
        self.storages = {}  # storage id -> dict(size, cat, name, refs)
        self.live = 0
        self.peak = 0
        self.peak_index = None
        self.marks = {}  # mark name -> snapshot of live storages at that mark
        self.ever = {}  # storage id -> alloc line
        for i, e in enumerate(self.events):
            self._apply(i, e)

    def _apply(self, i, e):
        op = e["op"]
        if op == "alloc":
            assert e["id"] not in self.tensor_storage, f"alloc of live id {e['id']}"
            self.tensor_storage[e["id"]] = e["id"]
            self.storages[e["id"]] = {"size": e["size"], "cat": e.get("cat"),
                                      "name": e.get("name"), "refs": 1, "id": e["id"]}
            self.ever[e["id"]] = e
            self.live += e["size"]
            if self.live > self.peak:
                self.peak, self.peak_index = self.live, i
        elif op == "view":
            sid = self.tensor_storage[e["of"]]
            self.tensor_storage[e["id"]] = sid
            self.storages[sid]["refs"] += 1
        elif op in ("release", "free"):
            sid = self.tensor_storage.pop(e["id"])
            s = self.storages[sid]
            s["refs"] -= 1
            if op == "free":
                for t in [t for t, x in self.tensor_storage.items() if x == sid]:
                    del self.tensor_storage[t]
                s["refs"] = 0
            if s["refs"] == 0:
                del self.storages[sid]
                self.live -= s["size"]
        elif op == "mark":
            self.marks[e["name"]] = {k: dict(v) for k, v in self.storages.items()}

    def by_cat(self, storages=None):
        out = {}
        for s in (self.storages if storages is None else storages).values():
            out[s["cat"]] = out.get(s["cat"], 0) + s["size"]
        return out
