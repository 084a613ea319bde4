#!/usr/bin/env python3
"""A small model of PyTorch's CUDA caching allocator (stdlib only), written from the rules of
`c10/cuda/CUDACachingAllocator.cpp` (DeviceCachingAllocator: malloc, get_free_block,
alloc_block, try_allocate_expandable_block, find_expandable_block, map_block, should_split,
alloc_found_block, free_block, release_available_cached_blocks, release_cached_blocks) for
one device and one stream, without CUDA graphs, garbage collection or power-of-two rounding.

It is memtide's *independent* replay: it shares no code with memtide's Rust simulator
(crates/memtide-core/src/allocator/sim/), so a fixture whose figures it computes checks that
simulator from outside. Used by tools/gen_oom_faithful.py (which records a run with it and
replays the recording under other settings) and runnable on any snapshot:

    python3 tools/cca_model.py SNAPSHOT.pickle CEILING_BYTES [expandable_segments:True] ...

prints, for each setting, whether the snapshot's allocations replay under the ceiling and,
if not, the first request that does not fit ("OOM at #N").

The rules, with the names of the functions they follow:
- round_size: below 512 B -> 512 B, else a multiple of 512 B.
- get_allocation_size: <= 1 MiB -> a 2 MiB small segment; < 10 MiB -> 20 MiB; else the size
  rounded up to 2 MiB.
- get_free_block: the smallest free block of the pool (small <= 1 MiB < large) of at least
  the size, lowest address first among equals; with max_split_size set, a request below it
  takes no block at or above it, and a request at or above it takes no block 20 MiB or more
  larger than itself. With expandable segments a block of an expandable segment counts as
  its size plus the unmapped range after it, and the search moves on to blocks whose such
  size is smaller.
- alloc_block: a new cudaMalloc segment of get_allocation_size bytes when the reserve plus
  it stays under the ceiling; with expandable segments, try_allocate_expandable_block maps
  pages (2 MiB small, 20 MiB large) at the lowest unmapped range (with the free block just
  before it) that has room, or in a new segment whose address space holds the ceiling.
- malloc: get_free_block; else alloc_block; else (max_split_size set)
  release_available_cached_blocks and alloc_block; else release_cached_blocks and alloc_block;
  else OOM, recording the driver's free bytes (ceiling - reserved).
- should_split: small pool or expandable segments: a remainder of at least 512 B; large pool:
  the size below max_split_size and a remainder above 1 MiB.
- free_block: merge with free neighbours of the same mapped state.
- release_cached_blocks: cudaFree every unsplit free cudaMalloc segment; unmap the whole free
  pages of expandable segments.
"""

import pickle
import sys

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB
SMALL_SIZE = 1 * MiB
SMALL_BUFFER = 2 * MiB
LARGE_BUFFER = 20 * MiB
MIN_LARGE_ALLOC = 10 * MiB
ROUND_LARGE = 2 * MiB
UNSET = None


def round_size(n):
    return 512 if n < 512 else (n + 511) // 512 * 512


def allocation_size(size):
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return (size + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE


class Conf:
    """`expandable_segments` and `max_split_size_mb` (bytes; None: unset)."""

    def __init__(self, text=""):
        self.text = text
        self.expandable = False
        self.max_split = UNSET
        for part in filter(None, text.split(",")):
            key, value = part.split(":")
            if key == "expandable_segments":
                self.expandable = value == "True"
            elif key == "max_split_size_mb":
                self.max_split = int(value) * MiB
            else:
                raise ValueError(f"this model does not know {key}")


class Block:
    def __init__(self, addr, size, pool, seg, mapped=True):
        self.addr, self.size, self.pool, self.seg = addr, size, pool, seg
        self.mapped = mapped
        self.allocated = False
        self.requested = 0
        self.prev = None
        self.next = None

    def is_split(self):
        return self.prev is not None or self.next is not None


class Segment:
    def __init__(self, sid, base, expandable, page):
        self.sid, self.base, self.expandable, self.page = sid, base, expandable, page


class Oom(Exception):
    def __init__(self, size, needed, reserved, device_free):
        super().__init__(f"OOM: {size} B")
        self.size, self.needed, self.reserved, self.device_free = size, needed, reserved, device_free


class Allocator:
    """One device, one stream. `ceiling`: the most the reserve may hold (None: unlimited).
    `trace`: a list the allocator appends PyTorch's trace entries to (dicts), or None."""

    def __init__(self, conf, ceiling, base=0x7F00_0000_0000, trace=None):
        self.conf, self.ceiling = conf, ceiling
        self.free = {"small": [], "large": []}  # free mapped blocks
        self.segments = []
        self.heads = []  # first block of each segment
        self.reserved = 0
        self.next_addr = base
        self.trace = trace
        self.last_need = 0

    # -- bookkeeping ------------------------------------------------------------------------
    def _record(self, action, addr, size, **extra):
        if self.trace is not None:
            self.trace.append(dict(action=action, addr=addr, size=size, **extra))

    def _fits(self, extra):
        return self.ceiling is None or self.reserved + extra <= self.ceiling

    def _insert(self, b):
        self.free[b.pool].append(b)

    def _remove(self, b):
        self.free[b.pool].remove(b)

    # -- get_free_block ---------------------------------------------------------------------
    def _get_free_block(self, size, pool):
        cands = sorted((b for b in self.free[pool] if b.size >= size), key=lambda b: (b.size, b.addr))
        if not cands:
            return None
        k = 0
        b = cands[0]
        if self.segments[b.seg].expandable:
            if self.conf.expandable:
                def expandable_size(x):
                    return x.size + (x.next.size if x.next is not None and not x.next.mapped else 0)
                while (self.segments[cands[k].seg].expandable and k + 1 < len(cands)
                       and expandable_size(cands[k + 1]) < expandable_size(cands[k])):
                    k += 1
            else:
                rest = [c for c in cands if not self.segments[c.seg].expandable]
                if not rest:
                    return None
                cands, k = rest, 0
        b = cands[k]
        ms = self.conf.max_split
        if ms is not None:
            if size < ms and b.size >= ms:
                return None
            if size >= ms and b.size >= size + LARGE_BUFFER:
                return None
        self._remove(b)
        return b

    # -- alloc_block ------------------------------------------------------------------------
    def _new_segment(self, size, pool, expandable, page):
        sid = len(self.segments)
        base = (self.next_addr + page - 1) // page * page
        self.segments.append(Segment(sid, base, expandable, page))
        self.next_addr = base + size
        return sid, base

    def _alloc_block(self, size, pool):
        if self.conf.expandable:
            return self._try_allocate_expandable_block(size, pool)
        alloc = allocation_size(size)
        self.last_need = alloc
        if not self._fits(alloc):
            return None
        sid, base = self._new_segment(alloc, pool, False, SMALL_BUFFER)
        b = Block(base, alloc, pool, sid)
        self.heads.append(b)
        self.reserved += alloc
        self._record("segment_alloc", base, alloc)
        return b

    def _find_expandable_block(self, size, pool):
        unmapped = sorted((b for b in self._all_blocks() if not b.mapped and b.pool == pool),
                          key=lambda b: b.addr)
        for u in unmapped:
            c = u.prev if (u.prev is not None and not u.prev.allocated) else u
            room, x = 0, c
            while x is not None and not x.allocated and room < size:
                room += x.size
                x = x.next
            if room >= size:
                return c
        page = SMALL_BUFFER if pool == "small" else LARGE_BUFFER
        span = self.ceiling if self.ceiling is not None else 1 << 40
        span = (span + span // 8 + page - 1) // page * page
        sid, base = self._new_segment(span, pool, True, page)
        b = Block(base, span, pool, sid, mapped=False)
        self.heads.append(b)
        return b

    def _pages_for(self, c, size):
        covered, need, x = 0, 0, c
        while covered < size and x is not None:
            if x.mapped:
                covered += x.size
            else:
                page = self.segments[x.seg].page
                m = min((size - covered + page - 1) // page * page, x.size)
                need += m
                covered += m
            x = x.next
        return need + max(0, size - covered)

    def _map_block(self, b, size):
        """Maps whole pages from the start of the unmapped block `b` to cover `size`."""
        page = self.segments[b.seg].page
        mapped = min((size + page - 1) // page * page, b.size)
        if not self._fits(mapped):
            return False
        if mapped < b.size:
            rest = Block(b.addr + mapped, b.size - mapped, b.pool, b.seg, mapped=False)
            rest.prev, rest.next = b, b.next
            if b.next is not None:
                b.next.prev = rest
            b.next = rest
        b.size = mapped
        b.mapped = True
        self.reserved += mapped
        self._record("segment_map", b.addr, mapped)
        b = self._merge(b, b.prev)
        b = self._merge(b, b.next)
        self._insert(b)
        return True

    def _try_allocate_expandable_block(self, size, pool):
        c = self._find_expandable_block(size, pool)
        self.last_need = self._pages_for(c, size)
        if not c.mapped:
            if not self._map_block(c, min(c.size, size)):
                return None
            c = self._containing(c.addr)
        while c.size < size:
            n = c.next
            if n is None or n.mapped:
                return None
            if not self._map_block(n, min(size - c.size, n.size)):
                return None
            c = self._containing(c.addr)
        self._remove(c)
        return c

    def _containing(self, addr):
        for b in self._all_blocks():
            if b.addr <= addr < b.addr + b.size:
                return b
        raise AssertionError("no block holds that address")

    # -- release ----------------------------------------------------------------------------
    def _release_block(self, b):
        self._remove(b)
        self.reserved -= b.size
        self.heads.remove(b)
        self._record("segment_free", b.addr, b.size)

    def release_available_cached_blocks(self, size, pool):
        ms = self.conf.max_split
        if ms is None:
            return False
        want = max(size, ms)
        free = sorted(self.free[pool], key=lambda b: (b.size, b.addr))
        for b in free:
            if b.size >= want:
                if b.is_split() or self.segments[b.seg].expandable:
                    return False
                self._release_block(b)
                return True
        released = 0
        for b in reversed(free):
            if b.size < ms or released >= want:
                break
            if not b.is_split() and not self.segments[b.seg].expandable:
                released += b.size
                self._release_block(b)
        return released >= want

    def release_cached_blocks(self):
        for pool in ("small", "large"):
            for b in list(self.free[pool]):
                seg = self.segments[b.seg]
                if seg.expandable:
                    self._unmap(b)
                elif not b.is_split():
                    self._release_block(b)

    def _unmap(self, b):
        seg = self.segments[b.seg]
        start = (b.addr - seg.base + seg.page - 1) // seg.page * seg.page + seg.base
        end = (b.addr + b.size - seg.base) // seg.page * seg.page + seg.base
        if start >= end:
            return
        self._remove(b)
        pieces = []
        if start > b.addr:
            pieces.append((b.addr, start - b.addr, True))
        pieces.append((start, end - start, False))
        if end < b.addr + b.size:
            pieces.append((end, b.addr + b.size - end, True))
        prev, nxt = b.prev, b.next
        blocks = []
        for (a, s, mapped) in pieces:
            x = Block(a, s, b.pool, b.seg, mapped=mapped)
            blocks.append(x)
        for i, x in enumerate(blocks):
            x.prev = blocks[i - 1] if i > 0 else prev
            x.next = blocks[i + 1] if i + 1 < len(blocks) else nxt
        if prev is not None:
            prev.next = blocks[0]
        else:
            self.heads[self.heads.index(b)] = blocks[0]
        if nxt is not None:
            nxt.prev = blocks[-1]
        self.reserved -= end - start
        self._record("segment_unmap", start, end - start)
        for x in blocks:
            if x.mapped:
                self._insert(x)
            else:
                x = self._merge(x, x.prev)
                self._merge(x, x.next)

    # -- malloc / free ----------------------------------------------------------------------
    def malloc(self, requested):
        size = round_size(requested)
        pool = "small" if size <= SMALL_SIZE else "large"
        b = self._get_free_block(size, pool)
        if b is None:
            b = self._alloc_block(size, pool)
            if b is None and self.release_available_cached_blocks(size, pool):
                b = self._alloc_block(size, pool)
            if b is None:
                self.release_cached_blocks()
                b = self._alloc_block(size, pool)
        if b is None:
            device_free = None if self.ceiling is None else self.ceiling - self.reserved
            raise Oom(size, self.last_need, self.reserved, device_free)
        if self._should_split(b, size):
            rest = Block(b.addr + size, b.size - size, b.pool, b.seg)
            rest.prev, rest.next = b, b.next
            if b.next is not None:
                b.next.prev = rest
            b.next = rest
            b.size = size
            self._insert(rest)
        b.allocated = True
        b.requested = requested
        self._record("alloc", b.addr, requested)
        return b

    def _should_split(self, b, size):
        remaining = b.size - size
        if b.pool == "small" or self.conf.expandable:
            return remaining >= 512
        ms = self.conf.max_split
        return (ms is None or size < ms) and remaining > SMALL_SIZE

    def free_(self, b):
        self._record("free_requested", b.addr, b.requested)
        self._record("free_completed", b.addr, b.requested)
        b.allocated = False
        b.requested = 0
        b = self._merge(b, b.prev)
        b = self._merge(b, b.next)
        self._insert(b)

    def _merge(self, dst, src):
        """`dst` (out of the free lists) absorbs its free neighbour `src` of the same mapped
        state; returns the block that remains."""
        if src is None or src.allocated or src.mapped != dst.mapped:
            return dst
        if src.mapped:
            self._remove(src)
        if src is dst.prev:
            dst.addr = src.addr
            dst.prev = src.prev
            if src.prev is not None:
                src.prev.next = dst
            else:
                self.heads[self.heads.index(src)] = dst
        else:
            dst.next = src.next
            if src.next is not None:
                src.next.prev = dst
        dst.size += src.size
        return dst

    # -- views ------------------------------------------------------------------------------
    def _all_blocks(self):
        for h in self.heads:
            x = h
            while x is not None:
                yield x
                x = x.next

    def allocated(self):
        return sum(b.size for b in self._all_blocks() if b.allocated)

    def segments_dump(self, frames):
        """`segments` as `_dump_snapshot` writes them: one per cudaMalloc segment, one per
        contiguous mapped range of an expandable segment."""
        out = []
        for h in sorted(self.heads, key=lambda b: b.addr):
            run = []
            x = h
            while x is not None:
                if x.mapped:
                    run.append(x)
                if (not x.mapped or x.next is None) and run:
                    out.append(self._segment(run, frames))
                    run = []
                x = x.next
        return out

    def _segment(self, run, frames):
        blocks = []
        for b in run:
            live = b.allocated
            blocks.append({"address": b.addr, "size": b.size,
                           "requested_size": b.requested if live else 0,
                           "state": "active_allocated" if live else "inactive",
                           "frames": frames(b) if live else []})
        alloc = sum(x["size"] for x in blocks if x["state"] == "active_allocated")
        return {"device": 0, "address": run[0].addr, "total_size": sum(b.size for b in run),
                "allocated_size": alloc, "active_size": alloc,
                "requested_size": sum(x["requested_size"] for x in blocks), "stream": 0,
                "segment_type": run[0].pool, "segment_pool_id": (0, 0),
                "is_expandable": self.segments[run[0].seg].expandable, "frames": [],
                "blocks": blocks}


def replay(entries, conf, ceiling):
    """Replays a snapshot's trace entries (alloc, free_completed, oom) under `conf` below
    `ceiling`. Segment events are the recording allocator's own and are not replayed (the
    model makes its own). Returns a dict: outcome `would_have_fit` or `oom`, the entry index
    and request of the first refusal, the shortfall (reserve + what the request needed -
    ceiling), and the reserved peak."""
    a = Allocator(Conf(conf), ceiling)
    live = {}
    peak = 0
    for i, e in enumerate(entries):
        act = e["action"]
        try:
            if act == "alloc":
                live[e["addr"]] = a.malloc(e["size"])
            elif act == "free_completed" and e["addr"] in live:
                a.free_(live.pop(e["addr"]))
            elif act == "oom":
                b = a.malloc(e["size"])
                peak = max(peak, a.reserved)
                a.free_(b)
        except Oom as x:
            return {"outcome": "oom", "index": i, "request": x.size,
                    "shortfall": x.reserved + x.needed - ceiling, "reserved_peak": max(peak, a.reserved)}
        peak = max(peak, a.reserved)
    return {"outcome": "would_have_fit", "index": None, "request": None, "shortfall": None,
            "reserved_peak": peak}


def file_settings(snap):
    """The settings the snapshot's run used, as this model's conf text (`""`: defaults).
    Raises ValueError for a setting the model does not know."""
    st = snap.get("allocator_settings") or {}
    parts = []
    if st.get("expandable_segments"):
        parts.append("expandable_segments:True")
    split = st.get("max_split_size", -1)
    if isinstance(split, int) and 0 < split < (1 << 62):
        parts.append(f"max_split_size_mb:{split // MiB}")
    if st.get("garbage_collection_threshold"):
        raise ValueError("this model does not know garbage_collection_threshold")
    if any(v for v in (st.get("roundup_power2_divisions") or {}).values()):
        raise ValueError("this model does not know roundup_power2_divisions")
    return ",".join(parts)


def main():
    """SNAPSHOT CEILING_BYTES [CONF ...] [--device=N] [--on-file-settings]: each CONF (and the
    defaults) replayed under the ceiling; with --on-file-settings each on top of the settings
    the snapshot's run used, as memtide replays its fixes. A .json snapshot is read as JSON."""
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    flags = [a for a in sys.argv[1:] if a.startswith("--")]
    if len(args) < 2:
        sys.exit(__doc__)
    device = 0
    for f in flags:
        if f.startswith("--device="):
            device = int(f.split("=", 1)[1])
    path = args[0]
    if path.endswith(".json"):
        import json
        with open(path) as f:
            snap = json.load(f)
    else:
        with open(path, "rb") as f:
            snap = pickle.load(f)
    ceiling = int(args[1])
    entries = snap["device_traces"][device]
    own = file_settings(snap) if "--on-file-settings" in flags else ""
    for conf in [""] + args[2:]:
        full = ",".join(filter(None, [own, conf]))
        r = replay(entries, full, ceiling)
        name = conf or ("file's settings" if own else "defaults")
        if r["outcome"] == "oom":
            print(f"{name}: OOM at #{r['index']}: {r['request']} B, {r['shortfall']} B short; reserved peak {r['reserved_peak']} B")
        else:
            print(f"{name}: would have fit; reserved peak {r['reserved_peak']} B")


if __name__ == "__main__":
    main()
