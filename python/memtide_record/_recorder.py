"""The recorder: a TorchDispatchMode that sees every tensor an op returns, weak references that
see tensors and storages die, saved-tensor hooks for activations, and ownership (model,
optimizer) for persistent categories. Writes JSONL v1 through a Writer."""

import os
import re
import sys
import threading
import time
import weakref

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from . import _stacks
from ._sources import probe as probe_sources
from ._writer import Alloc, Writer

from ._version import __version__

_now = time.perf_counter_ns
_OOM = getattr(torch, "OutOfMemoryError", None) or getattr(torch.cuda, "OutOfMemoryError", None)


class _TensorRec:
    __slots__ = ("jid", "srec", "ref")

    def __init__(self, jid, srec):
        self.jid = jid
        self.srec = srec
        self.ref = None


class _StorageRec:
    __slots__ = (
        "skey", "nbytes", "tids", "deferred", "alloc", "saved", "closed", "hint", "ref",
    )

    def __init__(self, skey, nbytes, hint):
        self.skey = skey
        self.nbytes = nbytes
        self.tids = []  # JSONL tensor ids of this storage live in the file, oldest first
        self.deferred = set()  # of those, tensors already dead whose release waits for the storage
        self.alloc = None  # the queued Alloc line while it is not yet written
        self.saved = False  # seen by the saved-tensor pack hook (activation)
        self.closed = False
        self.hint = hint
        self.ref = None


class _Mode(TorchDispatchMode):
    def __init__(self, rec):
        super().__init__()
        self.rec = rec

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        rec = self.rec
        if kwargs is None:
            kwargs = {}
        if rec._suspended:
            return func(*args, **kwargs)
        rec._before_op(args, kwargs)
        try:
            out = func(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - re-raised; only noted when it is an OOM
            if _OOM is not None and isinstance(e, _OOM):
                rec._oom(e)
            raise
        rec._after_op(out)
        return out


_SIZE_RE = re.compile(r"Tried to allocate ([0-9.]+) (B|KiB|MiB|GiB|TiB)")
_FREE_RE = re.compile(r"of which ([0-9.]+) (B|KiB|MiB|GiB|TiB) (?:is )?free")
_UNIT = {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40}


def _parse_size(m):
    return int(float(m.group(1)) * _UNIT[m.group(2)]) if m else None


class Recorder:
    """Records one device's tensor storages to a JSONL v1 file. Use :func:`record`."""

    def __init__(
        self,
        path,
        model=None,
        optimizer=None,
        device=None,
        min_bytes=0,
        stacks=True,
        max_frames=8,
        max_delay=0.25,
        max_pending=1024,
        sample_every=64,
        source=None,
        sync_steps=False,
        phases=True,
    ):
        self.path = os.fspath(path)
        self.models = [model] if model is not None else []
        self.optimizers = [optimizer] if optimizer is not None else []
        self.device = torch.device(device) if device is not None else self._guess_device(model)
        if self.device.type == "cuda" and self.device.index is None:
            self.device = torch.device("cuda", torch.cuda.current_device())
        self.min_bytes = int(min_bytes)
        self.stacks = bool(stacks)
        self.max_frames = int(max_frames)
        self.max_delay_ns = int(max_delay * 1e9)
        self.max_pending = max(8, int(max_pending))
        self.sample_every = max(1, int(sample_every))
        self.source = source or os.path.basename(sys.argv[0] or "python")
        # Step marks written after torch.cuda.synchronize(): the time between two step marks
        # is then the device's time per step, not the host's (CPU ops are synchronous).
        self.sync_steps = bool(sync_steps) and self.device.type in ("cuda", "cpu")
        # Phase marks (forward, backward, Optimizer.step#…) and the batch labelled `input`,
        # from hooks on the models and optimizers: what `memtide diff`'s parity reads.
        self.phases = bool(phases)
        self.sync_ns = 0  # time spent waiting in synchronize() for sync_steps
        self.syncs = 0
        self._lock = threading.RLock()
        self._tensors = {}  # id(tensor) -> _TensorRec (only while the tensor object lives)
        self._storages = {}  # storage _cdata -> _StorageRec (only while the storage lives)
        self._small = {}  # storage _cdata -> weakref, storages under min_bytes (not recorded)
        self._dead = []  # (kind, rec, ns) appended by weakref callbacks, applied at op boundaries
        self._next_jid = 1
        self._op = 0
        self._suspended = False
        self._writer = None
        self._mode = None
        self._hooks = None
        self._handles = []
        self._thread = None
        self._stop = threading.Event()
        self._cuda = self.device.type == "cuda"
        if self.device.type == "cpu":
            self._on_device = lambda t: t.is_cpu
        elif self._cuda:
            idx = self.device.index
            self._on_device = lambda t: t.is_cuda and t.get_device() == idx
        else:
            dev = self.device
            self._on_device = lambda t: t.device == dev
        self._reserved = 0
        self._segments = []  # (jid, size) of reserve lines, newest last
        self._nvml = None
        self._sources = None
        self._orig_reset_peak = None
        self.overhead_ns = 0  # time spent in the recorder's own bookkeeping
        self.lines_written = 0  # set when recording stops

    @staticmethod
    def _guess_device(model):
        if model is not None:
            for p in model.parameters():
                return p.device if p.device.type != "cuda" or p.device.index is not None \
                    else torch.device("cuda", torch.cuda.current_device())
        return torch.device("cpu")

    # ---- lifecycle -------------------------------------------------------------------------
    def start(self):
        header = {"memtide": 1, "device": str(self.device), "clock": "ns", "source": self.source}
        meta = {"recorder": "memtide_record " + __version__, "torch": torch.__version__,
                "min_bytes": self.min_bytes, "categories": "decided when the alloc line is written"}
        if self.sync_steps:
            meta["step_clock"] = "synchronized"
        if self._cuda:
            header["capacity"] = torch.cuda.get_device_properties(self.device).total_memory
            # Probed before the header, which says which sources of external memory exist.
            self._sources = self._probe_sources()
            meta["external_sources"] = self._sources.status
        n = self._param_count()
        if n is not None:
            header["param_count"] = n
        header["meta"] = meta
        self._writer = Writer(self.path, header)
        with self._lock:
            for m in self.models:
                self._note_model(m)
            for o in self.optimizers:
                self._note_optimizer(o)
            if self._cuda:
                self._init_cuda()
            self._flush(0)
        self._mode = _Mode(self)
        self._mode.__enter__()
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, _unpack)
        self._hooks.__enter__()
        self._thread = threading.Thread(target=self._idle_flusher, daemon=True,
                                        name="memtide-record")
        self._thread.start()
        return self

    def stop(self):
        if self._writer is None:
            return
        self._hooks.__exit__(None, None, None)
        self._mode.__exit__(None, None, None)
        self._stop.set()
        self._thread.join()
        with self._lock:
            self._apply_dead()
            if self._cuda:
                self._poll_cuda(nvml=True)
            if self.syncs:
                # The cost of sync_steps, stated in the file itself.
                self._writer.event("mark", kind="note", name=(
                    f"sync_steps: {self.syncs} synchronize() calls waited "
                    f"{self.sync_ns / 1e3:.0f} us in all"))
            self._flush(0)
            self.lines_written = self._writer.lines
            self._writer.close()
            self._writer = None
        for h in self._handles:
            h.remove()
        self._handles.clear()
        if self._orig_reset_peak is not None:
            torch.cuda.reset_peak_memory_stats = self._orig_reset_peak
            torch.cuda.memory.reset_peak_memory_stats = self._orig_reset_peak
        # Drop our weak references: their callbacks must not fire into a closed recorder.
        self._tensors.clear()
        self._storages.clear()
        self._small.clear()
        self._dead.clear()

    def watch(self, model=None, optimizer=None):
        """Adds a model and/or optimizer made after recording started."""
        with self._lock:
            if model is not None:
                self.models.append(model)
                self._note_model(model)
            if optimizer is not None:
                self.optimizers.append(optimizer)
                self._note_optimizer(optimizer)

    def _note_model(self, model):
        if self.phases:
            self._handles.append(
                model.register_forward_pre_hook(self._before_forward, with_kwargs=True))
            self._handles.append(model.register_forward_hook(self._after_forward))
        for name, p in model.named_parameters(remove_duplicate=False):
            self._see(p, cat="param", name=name)
            if p.grad is not None:
                self._see(p.grad, cat="grad", name=name + ".grad")
        for name, b in model.named_buffers(remove_duplicate=False):
            self._see(b, cat="buffer", name=name)

    def _note_optimizer(self, opt):
        names = self._param_names()
        for group in opt.param_groups:
            for p in group["params"]:
                self._see(p, cat="param", name=names.get(id(p)))
        for p, state in opt.state.items():
            for k, v in state.items():
                if isinstance(v, torch.Tensor):
                    base = names.get(id(p))
                    self._see(v, cat="optimizer", name=f"{base}.{k}" if base else k)
        if self.phases:
            self._handles.append(opt.register_step_pre_hook(self._before_optimizer_step))
        self._handles.append(opt.register_step_post_hook(self._after_optimizer_step))

    def _param_count(self):
        """Elements of the parameters the recorder knows at start (the models' and the
        optimizers' parameters, each tensor once); None when it knows none (unknown, not 0).
        Models added later with :meth:`watch` are not counted: the header is the first line."""
        seen = {}
        for m in self.models:
            for p in m.parameters():
                seen[id(p)] = p
        for o in self.optimizers:
            for group in o.param_groups:
                for p in group["params"]:
                    seen[id(p)] = p
        if not seen:
            return None
        return sum(p.numel() for p in seen.values())

    def _param_names(self):
        return {id(p): n for m in self.models for n, p in m.named_parameters()}

    # ---- marks -----------------------------------------------------------------------------
    def mark(self, name, kind="note"):
        if kind not in ("step", "phase", "reset_peak", "note", "annotation"):
            raise ValueError(f"unknown mark kind {kind!r}")
        if kind == "step" and self.sync_steps and self._cuda and self._writer is not None:
            t0 = time.perf_counter_ns()
            torch.cuda.synchronize(self.device)
            self.sync_ns += time.perf_counter_ns() - t0
            self.syncs += 1
        with self._lock:
            if self._writer is None:
                return
            self._apply_dead()
            if self._cuda:
                self._poll_cuda(nvml=True)
            self._writer.event("mark", name=str(name), kind=kind)
            self._flush(0)

    # ---- phases and inputs, from hooks ------------------------------------------------------
    def _before_forward(self, module, args, kwargs):
        """A watched model's forward starts: its tensor arguments that need no gradient are
        the batch (`input`), then the `forward` phase mark."""
        if self._writer is None or self._suspended:
            return None
        with self._lock:
            for t in _tensors_in((args, kwargs)):
                if not t.requires_grad:
                    self._label(t, "input", "input")
        self.mark("forward", kind="phase")
        return None

    def _after_forward(self, module, args, out):
        """Hooks the forward's outputs: the first gradient to reach one starts `backward`."""
        if self._writer is None or self._suspended:
            return None
        outs = [t for t in _tensors_in(out) if t.requires_grad]
        if outs and torch.is_grad_enabled():
            done = []

            def started(_grad):
                if not done:
                    done.append(True)
                    self.mark("backward", kind="phase")

            for t in outs:
                t.register_hook(started)
        return None

    def _before_optimizer_step(self, opt, args, kwargs):
        name = type(opt).__name__
        self.mark(f"Optimizer.step#{name}.step", kind="phase")

    def _label(self, t, cat, name):
        """Gives `t`'s storage category `cat` while its alloc line still waits (a tensor the
        recorder saw made); a tensor it never saw is registered with it."""
        trec = self._tensors.get(id(t))
        if trec is None:
            self._see(t, cat=cat, name=name)
            return
        a = trec.srec.alloc
        if a is not None and a.cat is None:
            a.cat = cat
            if a.name is None:
                a.name = name

    def _after_optimizer_step(self, opt, args, kwargs):
        with self._lock:
            if self._writer is None:
                return
            # State made by this step (Adam's moments) is still queued: name it now.
            self._apply_dead()
            self._flush(0)

    # ---- the dispatch path -----------------------------------------------------------------
    def _before_op(self, args, kwargs):
        t0 = _now()
        with self._lock:
            self._op += 1
            if self._dead:
                self._apply_dead()
            if self._cuda:
                self._poll_cuda(nvml=self._op % self.sample_every == 0)
            for a in args:
                if type(a) in (list, tuple):
                    for x in a:
                        if isinstance(x, torch.Tensor) and id(x) not in self._tensors:
                            self._see(x, hint="input")
                elif isinstance(a, torch.Tensor) and id(a) not in self._tensors:
                    self._see(a, hint="input")
        self.overhead_ns += _now() - t0

    def _after_op(self, out):
        t0 = _now()
        with self._lock:
            if self._dead:
                self._apply_dead()
            if isinstance(out, torch.Tensor):
                self._see(out)
            elif type(out) in (list, tuple):
                for x in out:
                    if isinstance(x, torch.Tensor):
                        self._see(x)
            if self._cuda:
                self._poll_cuda(nvml=False)
            w = self._writer
            if len(w.queue) >= self.max_pending:
                self._flush(self.max_pending // 2)
            elif w.oldest is not None and _now() - w.oldest > self.max_delay_ns:
                self._flush(16)
        self.overhead_ns += _now() - t0

    def _see(self, t, cat=None, name=None, hint=None):
        """Registers tensor ``t`` if new (alloc of a new storage, else a view), or re-checks a
        known one whose storage may have been swapped or resized."""
        if not self._on_device(t):
            return
        try:
            st = t.untyped_storage()
        except (RuntimeError, NotImplementedError):  # sparse, nested, functional wrappers
            return
        skey = st._cdata
        tid = id(t)
        trec = self._tensors.get(tid)
        if trec is not None:
            s = trec.srec
            if not s.closed and s.skey == skey and s.nbytes == st.nbytes():
                return
            # set_() or resize_(): the tensor now holds other bytes.
            self._tensors.pop(tid, None)
            if not s.closed:
                if s.skey == skey:
                    self._close_storage(s, _now())
                    self._storages.pop(skey, None)
                else:
                    self._drop_tensor(trec, _now())
        if skey in self._small:
            return
        srec = self._storages.get(skey)
        jid = self._next_jid
        if srec is None:
            nbytes = st.nbytes()
            if nbytes < self.min_bytes:
                self._small[skey] = weakref.ref(st, _forget(self._small, skey))
                return
            self._next_jid += 1
            if isinstance(t, torch.nn.Parameter):
                hint = "param"  # a parameter of a model the recorder was not told about
            srec = _StorageRec(skey, nbytes, hint)
            srec.ref = weakref.ref(st, _on_storage_death(self._storages, self._dead, skey))
            self._storages[skey] = srec
            w = self._writer
            stack = _stacks.capture(self.max_frames, 3) if self.stacks else None
            a = Alloc(w.now(), jid, nbytes, cat, name, stack, srec)
            srec.alloc = a
            w.push(a)
        else:
            self._next_jid += 1
            if cat is not None and srec.alloc is not None and srec.alloc.cat is None:
                srec.alloc.cat = cat
            of = srec.tids[0]
            size = _view_bytes(t)
            if name is None:
                self._writer.view(jid, of, size)
            else:
                self._writer.event("view", id=jid, of=of, size=size, name=name)
            # Deferred releases can go now: this view keeps the storage.
            for d in sorted(srec.deferred):
                srec.tids.remove(d)
                self._writer.release(d)
            srec.deferred.clear()
        srec.tids.append(jid)
        trec = _TensorRec(jid, srec)
        try:
            trec.ref = weakref.ref(t, _on_tensor_death(self._tensors, self._dead, tid))
        except TypeError:
            return
        self._tensors[tid] = trec

    def _drop_tensor(self, trec, at):
        s = trec.srec
        if s.closed or trec.jid not in s.tids:
            return
        if len(s.tids) - len(s.deferred) > 1:
            s.tids.remove(trec.jid)
            self._writer.release(trec.jid, at)
        else:
            # The last tensor we know of: the storage may still be held (autograd's saved
            # tensors, C++ code), so its release waits for the storage's own death.
            s.deferred.add(trec.jid)

    def _close_storage(self, s, at):
        s.closed = True
        for jid in s.tids:
            self._writer.release(jid, at)
        s.tids = []
        s.deferred.clear()

    def _apply_dead(self):
        dead = self._dead
        while dead:
            # Callbacks may append while we work: take a batch, keep what arrives after it.
            batch = dead[:]
            del dead[: len(batch)]
            for kind, rec, at in batch:
                if kind == 0:
                    self._drop_tensor(rec, at)
                elif not rec.closed:
                    self._close_storage(rec, at)

    def _pack(self, t):
        with self._lock:
            if self._on_device(t):
                try:
                    s = self._storages.get(t.untyped_storage()._cdata)
                except (RuntimeError, NotImplementedError):
                    s = None
                if s is not None:
                    s.saved = True
        # Not the tensor itself: an output saved by its own grad_fn would form a reference
        # cycle through C++ and never be freed.
        self._suspended = True
        try:
            return t.detach()
        finally:
            self._suspended = False

    # ---- categories and writing ------------------------------------------------------------
    def _flush(self, keep):
        owners = None

        def decide(a):
            nonlocal owners
            s = a.storage
            a.storage = None
            s.alloc = None
            if a.cat is not None:
                return
            if not s.closed:
                if owners is None:
                    owners = self._owners()
                o = owners.get(s.skey)
                if o is not None:
                    a.cat = o[0]
                    if a.name is None:
                        a.name = o[1]
                    return
            if s.hint == "param":
                a.cat = "param"
            elif s.saved:
                a.cat = "activation"
            elif s.closed and s.hint is None:
                # Freed while its alloc line still waited (within max_delay or before the
                # next step/optimizer barrier) and never saved for backward: scratch.
                a.cat = "temp"
            elif s.hint is not None:
                a.cat = s.hint  # first seen as an op input, made outside the recorder's view

        self._writer.flush(decide, keep)

    def _owners(self):
        """storage key -> (category, name) for every tensor the model and optimizer own."""
        own = {}
        names = {}

        def put(t, cat, name):
            if isinstance(t, torch.Tensor) and self._on_device(t):
                try:
                    own.setdefault(t.untyped_storage()._cdata, (cat, name))
                except (RuntimeError, NotImplementedError):
                    pass

        for m in self.models:
            for n, p in m.named_parameters():
                names[id(p)] = n
                put(p, "param", n)
                if p.grad is not None:
                    put(p.grad, "grad", n + ".grad")
            for n, b in m.named_buffers():
                put(b, "buffer", n)
        for o in self.optimizers:
            for g in o.param_groups:
                for p in g["params"]:
                    put(p, "param", names.get(id(p)))
                    if p.grad is not None:
                        put(p.grad, "grad", (names.get(id(p)) or "param") + ".grad")
            for p, state in o.state.items():
                base = names.get(id(p))
                for k, v in state.items():
                    put(v, "optimizer", f"{base}.{k}" if base else k)
        return own

    def _idle_flusher(self):
        # Lines wait in the queue for categories; when the program stops calling ops (a long
        # data load, a hang), write them anyway so a follower is never left behind for long.
        period = max(self.max_delay_ns / 1e9, 0.01)
        while not self._stop.wait(period):
            with self._lock:
                w = self._writer
                if w is not None and w.oldest is not None and \
                        _now() - w.oldest > 4 * self.max_delay_ns:
                    self._apply_dead()
                    self._flush(0)

    # ---- CUDA-only sources -----------------------------------------------------------------
    def _probe_sources(self):
        """NVML (this process's used memory), NCCL's memory_stats(), pinned host memory:
        each probed, each optional (see _sources.py)."""
        try:
            import pynvml  # nvidia-ml-py; optional

            pynvml.nvmlInit()
            try:
                uuid = str(torch.cuda.get_device_properties(self.device).uuid)
                h = pynvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-")
                                                     else "GPU-" + uuid)
            except Exception:  # noqa: BLE001 - older drivers / MIG: fall back to the index
                h = pynvml.nvmlDeviceGetHandleByIndex(self.device.index)
            self._nvml = (pynvml, h)
        except Exception:  # noqa: BLE001 - no NVML: external memory stays unavailable
            self._nvml = None
        pynvml, h = self._nvml if self._nvml is not None else (None, None)
        dist = getattr(torch, "distributed", None)
        return probe_sources(self.device, pynvml=pynvml, handle=h, dist=dist,
                             torch_cuda=torch.cuda)

    def _init_cuda(self):
        orig = torch.cuda.memory.reset_peak_memory_stats
        self._orig_reset_peak = orig
        rec = self

        def reset_peak_memory_stats(device=None):
            if rec._writer is not None:
                rec.mark("reset_peak_memory_stats", kind="reset_peak")
            return orig(device)

        # Both names users call: torch.cuda.X and torch.cuda.memory.X.
        torch.cuda.reset_peak_memory_stats = reset_peak_memory_stats
        torch.cuda.memory.reset_peak_memory_stats = reset_peak_memory_stats
        self._poll_cuda(nvml=True)

    def _poll_cuda(self, nvml):
        r = torch.cuda.memory_reserved(self.device)
        w = self._writer
        if r > self._reserved:
            jid = self._next_jid
            self._next_jid += 1
            w.event("reserve", id=jid, size=r - self._reserved)
            self._segments.append((jid, r - self._reserved))
        elif r < self._reserved:
            gone = self._reserved - r
            while gone > 0 and self._segments:
                jid, size = self._segments.pop()
                w.event("unreserve", id=jid)
                gone -= size
            if gone < 0:  # released part of a segment we recorded as one: re-reserve the rest
                jid = self._next_jid
                self._next_jid += 1
                w.event("reserve", id=jid, size=-gone)
                self._segments.append((jid, -gone))
        self._reserved = r
        if nvml and self._sources is not None:
            # This process's used memory (not the device's) and the sources that name parts
            # of it; None when it cannot be read now (external stays unknown, not 0).
            fields = self._sources.sample()
            if fields is not None:
                w.event("sample", **fields)

    def _oom(self, e):
        msg = str(e)
        with self._lock:
            self._apply_dead()
            self._writer.event("oom", size=_parse_size(_SIZE_RE.search(msg)) or 0,
                               free=_parse_size(_FREE_RE.search(msg)))
            self._flush(0)


def _tensors_in(obj, depth=0):
    """The tensors in a forward's arguments or outputs (tuples, lists, dicts, a few deep)."""
    if isinstance(obj, torch.Tensor):
        return [obj]
    if depth > 3:
        return []
    if isinstance(obj, dict):
        obj = list(obj.values())
    if isinstance(obj, (list, tuple)):
        return [t for x in obj for t in _tensors_in(x, depth + 1)]
    return []


def _unpack(t):
    return t


def _on_tensor_death(tensors, dead, tid):
    def cb(ref):
        rec = tensors.get(tid)
        if rec is not None and rec.ref is ref:
            del tensors[tid]
            dead.append((0, rec, _now()))

    return cb


def _on_storage_death(storages, dead, skey):
    def cb(ref):
        rec = storages.get(skey)
        if rec is not None and rec.ref is ref:
            del storages[skey]
            dead.append((1, rec, _now()))

    return cb


def _view_bytes(t):
    """The bytes a view spans (its elements x element size: what memtide compares with the
    storage it keeps alive), or None when the tensor cannot say."""
    try:
        return t.numel() * t.element_size()
    except (RuntimeError, NotImplementedError, TypeError):
        return None


def _forget(d, key):
    def cb(ref):
        if d.get(key) is ref:
            del d[key]

    return cb
