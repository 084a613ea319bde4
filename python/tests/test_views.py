"""Views share storage: a slice of a big tensor keeps the whole storage live after its base is
released, until the view itself dies."""

import torch

import memtide_record as mr
from jsonl_replay import Replay

BIG = 1 << 20  # floats: 4 MiB


def big_storage_id(r):
    ids = [i for i, e in r.ever.items() if e["size"] == 4 * BIG]
    assert len(ids) == 1, ids
    return ids[0]


def index_of(r, pred):
    return next(i for i, e in enumerate(r.events) if pred(e))


def test_slice_keeps_storage_after_base_release(tmp_path, summary):
    path = tmp_path / "view.jsonl"
    with mr.record(path):
        # Under inference mode a view holds no reference to its base tensor object, so
        # deleting the base really drops it (as in tensors made by C++ code).
        with torch.inference_mode():
            base = torch.randn(BIG)
            v = base[:10]
            del base
            mr.mark("base deleted")
            assert float(v.sum()) == float(v.sum())
            del v
            mr.mark("view deleted")
    r = Replay(path)
    sid = big_storage_id(r)
    view = next(e for e in r.events if e["op"] == "view" and e["of"] == sid)
    assert view["size"] == 10 * 4  # base[:10] of float32: the view's own bytes
    base_rel = index_of(r, lambda e: e["op"] == "release" and e["id"] == sid)
    view_rel = index_of(r, lambda e: e["op"] == "release" and e["id"] == view["id"])
    m1 = index_of(r, lambda e: e.get("name") == "base deleted")
    m2 = index_of(r, lambda e: e.get("name") == "view deleted")
    assert base_rel < m1 < view_rel < m2
    assert sid in r.marks["base deleted"]  # bytes still live: retained by the view
    assert sid not in r.marks["view deleted"]
    s = summary(path)
    assert s["final_bytes"] == 0 and s["peak"]["bytes"] >= 4 * BIG


def test_autograd_view_keeps_storage_until_it_dies(tmp_path, summary):
    path = tmp_path / "view2.jsonl"
    with mr.record(path):
        base = torch.randn(BIG)
        v = base[5:15]
        del base  # the view still references its base (v._base): nothing may be freed
        mr.mark("base deleted")
        del v
        mr.mark("view deleted")
    r = Replay(path)
    sid = big_storage_id(r)
    assert sid in r.marks["base deleted"]
    assert sid not in r.marks["view deleted"]
    summary(path)


def test_storage_held_only_by_autograd_stays_live(tmp_path):
    # x's storage is saved for backward by exp: dropping every Python tensor of it frees
    # nothing until the graph is gone.
    path = tmp_path / "saved.jsonl"
    with mr.record(path):
        x = torch.randn(BIG, requires_grad=True)
        h = x * 2
        y = h.exp()  # saves its output
        del h
        mr.mark("h dropped")
        loss = y.sum()
        del y
        mr.mark("y dropped")
        loss.backward()
        del loss
        mr.mark("graph freed")
    r = Replay(path)
    sizes = lambda m: sorted(s["size"] for s in r.marks[m].values() if s["size"] == 4 * BIG)
    # "h dropped": x, y (exp's output, saved) — h is freed (exp needs only its output).
    assert len(sizes("h dropped")) == 2
    # "y dropped": x and exp's saved output, still held by the graph.
    assert len(sizes("y dropped")) == 2
    saved = [s for s in r.marks["y dropped"].values()
             if s["size"] == 4 * BIG and s["cat"] == "activation"]
    assert len(saved) == 1
    # After backward: x and x.grad.
    assert len(sizes("graph freed")) == 2


def test_resize_is_written_as_free_and_new_alloc(tmp_path, summary):
    path = tmp_path / "resize.jsonl"
    with mr.record(path):
        x = torch.empty(10)
        mr.mark("small")
        x.resize_(BIG)
        mr.mark("big")
        del x
        mr.mark("gone")
    r = Replay(path)
    assert sorted(s["size"] for s in r.marks["small"].values()) == [40]
    assert sorted(s["size"] for s in r.marks["big"].values()) == [4 * BIG]
    assert r.marks["gone"] == {}
    summary(path)
