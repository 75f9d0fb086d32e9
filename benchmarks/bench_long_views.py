"""Heatmap and model view on a lazy 12-layer x 12-head result: first payload, one tile, one head switch (seconds).

Run: PYTHONPATH=. python benchmarks/bench_long_views.py [n ...]   (default 512 8192). Prints a table; asserts nothing.
``--smoke``: 64 and 256 tokens on 2 layers x 2 heads (that it runs, for CI).
Issue 13's targets at 8k: first paint <= 1 s, tile fetch / head switch <= 100 ms.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import attnwidgets as aw
from tests.lazy_helpers import lazy_result


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def measure(n: int, layers: int = 12, heads: int = 12) -> dict[str, float]:
    r = lazy_result(n, layers=layers, heads=heads, kv_heads=heads, head_dim=64 if layers == 12 else 8)
    old = aw.runner.set_dense_budget(0)
    try:
        heat_s, w = timed(lambda: aw.AttentionHeatmap(r, head=1))
        mv_s, _ = timed(lambda: aw.ModelView(r))
        q = n // 2
        tile_s, _ = timed(lambda: w.answer({"what": "region", "kind": "self", "layer": min(3, layers - 1),
                                            "head": 1, "q0": q, "q1": min(n, q + 256), "k0": max(0, q - 256),
                                            "k1": q}))
        head_s, reply = timed(lambda: w.answer({"what": "matrix", "kind": "self", "layer": min(5, layers - 1),
                                                "head": min(7, heads - 1)}))
    finally:
        aw.runner.set_dense_budget(old)
    return {"heatmap first payload": heat_s, "model view first payload": mv_s, "tile fetch (256 x 256)": tile_s,
            "head switch": head_s, "rows read per block (head)": reply[0]["rows_used"],
            "factor": reply[0]["factor"]}


if __name__ == "__main__":
    smoke = "--smoke" in sys.argv[1:]
    sizes = [int(a) for a in sys.argv[1:] if a != "--smoke"] or ([64, 256] if smoke else [512, 8192])
    shape = {"layers": 2, "heads": 2} if smoke else {}
    rows = {n: measure(n, **shape) for n in sizes}
    names = list(next(iter(rows.values())))
    print("| figure | " + " | ".join(f"{n} tokens" for n in sizes) + (" | ratio |" if len(sizes) == 2 else " |"))
    print("|---" * (len(sizes) + 1 + (len(sizes) == 2)) + "|")
    for name in names:
        vals = [rows[n][name] for n in sizes]
        cells = [f"{v:.3f} s" if "payload" in name or "fetch" in name or "switch" in name else f"{v:g}" for v in vals]
        ratio = f" | {vals[1] / vals[0]:.1f}x" if len(sizes) == 2 and vals[0] else (" | " if len(sizes) == 2 else "")
        print(f"| {name} | " + " | ".join(cells) + ratio + " |")
