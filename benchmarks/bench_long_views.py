"""Heatmap and model view on a lazy 12-layer x 12-head result: first payload, one tile, one head switch (CPU seconds),
without the runner's per-head overviews (before: a result loaded from disk, rows rebuilt in numpy) and with them
(after: ``attnwidgets.runner.headstats``, made in one torch pass; the pass's own time is printed too).

Run: PYTHONPATH=. python benchmarks/bench_long_views.py [n ...]   (default 512 8192). Prints a table; asserts nothing.
``--smoke``: 64 and 256 tokens on 2 layers x 2 heads (that it runs, for CI). Run with OMP_NUM_THREADS=1 as well as
with all cores; the figures are CPU time of this process (all threads), which a loaded box inflates less than wall time.
Issue 26's targets at 8k: head switch <= 0.1 s, first payload <= 0.5 s (first paint <= 1 s).
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import attnwidgets as aw
from attnwidgets.attention_stack import LazyStack
from attnwidgets.runner import headstats
from tests.lazy_helpers import lazy_result


def timed(fn):
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def _views(r, n: int, layers: int, heads: int) -> dict[str, float]:
    heat_s, w = timed(lambda: aw.AttentionHeatmap(r, head=1))
    mv_s, _ = timed(lambda: aw.ModelView(r))
    q = n // 2
    tile_s, _ = timed(lambda: w.answer({"what": "region", "kind": "self", "layer": min(3, layers - 1),
                                        "head": 1, "q0": q, "q1": min(n, q + 256), "k0": max(0, q - 256),
                                        "k1": q}))
    head_s, reply = timed(lambda: w.answer({"what": "matrix", "kind": "self", "layer": min(5, layers - 1),
                                            "head": min(7, heads - 1)}))
    return {"heatmap first payload": heat_s, "model view first payload": mv_s, "tile fetch (256 x 256)": tile_s,
            "head switch": head_s, "rows read per block (head)": reply[0]["rows_used"], "factor": reply[0]["factor"]}


def measure(n: int, layers: int = 12, heads: int = 12) -> dict[str, float]:
    r = lazy_result(n, layers=layers, heads=heads, kv_heads=heads, head_dim=64 if layers == 12 else 8)
    old = aw.runner.set_dense_budget(0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            before = _views(r, n, layers, heads)
        stack = r.stack()
        fresh = r.replace(attention=LazyStack(stack.layers))
        pass_s, _ = timed(lambda: headstats.attach_summary(fresh))
        after = _views(fresh, n, layers, heads)
    finally:
        aw.runner.set_dense_budget(old)
    out = {f"{k} (before)": v for k, v in before.items()}
    out["statistics + overview pass (once per run)"] = pass_s
    out.update({f"{k} (after)": v for k, v in after.items()})
    return out


if __name__ == "__main__":
    smoke = "--smoke" in sys.argv[1:]
    sizes = [int(a) for a in sys.argv[1:] if a != "--smoke"] or ([64, 256] if smoke else [512, 8192])
    shape = {"layers": 2, "heads": 2} if smoke else {}
    rows = {n: measure(n, **shape) for n in sizes}
    names = list(next(iter(rows.values())))
    import torch

    print(f"CPU seconds of this process (torch threads: {torch.get_num_threads()})")
    print("| figure | " + " | ".join(f"{n} tokens" for n in sizes) + " |")
    print("|---" * (len(sizes) + 1) + "|")
    for name in names:
        vals = [rows[n][name] for n in sizes]
        timed_row = any(w in name for w in ("payload", "fetch", "switch", "pass"))
        cells = [f"{v:.3f} s" if timed_row else f"{v:g}" for v in vals]
        print(f"| {name} | " + " | ".join(cells) + " |")
