"""What the static fallback (attnwidgets.fallback) costs per display: the time to build the display bundle with and
without the picture, and the bytes it adds to the saved notebook, for a heatmap at 128 tokens and a model view.

Run: ``python benchmarks/bench_fallback.py [--smoke]``. Prints times, sizes and the with/without ratio; no
assertions. ``--smoke``: 8 and 16 tokens on 2 x 2 heads, one repeat (that it runs, for CI).
"""

from __future__ import annotations

import argparse
import base64
import json
import time

import numpy as np

import attnwidgets as aw
from attnwidgets import fallback


def result(n_tokens: int, n_layers: int = 6, n_heads: int = 12) -> aw.AttentionResult:
    a = np.random.default_rng(0).random((n_layers, n_heads, n_tokens, n_tokens), dtype=np.float32) ** 8
    tokens = ["[CLS]", *(f"w{i}" for i in range(n_tokens - 2)), "[SEP]"]
    return aw.AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), tokens)


def per_display(widget: aw.widgets.AttnWidget, repeat: int = 3) -> tuple[float, int]:
    """(best seconds, bytes of the bundle as saved in the .ipynb)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        data, _ = widget._repr_mimebundle_()
        best = min(best, time.perf_counter() - start)
    return best, len(json.dumps(data))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes, one repeat: that it runs (CI)")
    args = parser.parse_args()
    if args.smoke:
        cases = {
            "heatmap, 16 tokens": lambda: aw.AttentionHeatmap(result(16, 2, 2), layer=1, head=1),
            "heatmap, 8 tokens": lambda: aw.AttentionHeatmap(result(8, 2, 2), layer=1, head=1),
            "model view, 2x2 heads, 8 tokens": lambda: aw.ModelView(result(8, 2, 2)),
        }
    else:
        cases = {
            "heatmap, 128 tokens": lambda: aw.AttentionHeatmap(result(128), layer=2, head=3),
            "heatmap, 16 tokens": lambda: aw.AttentionHeatmap(result(16), layer=2, head=3),
            "model view, 6x12 heads, 32 tokens": lambda: aw.ModelView(result(32)),
            "model view, 6x12 heads, 128 tokens": lambda: aw.ModelView(result(128)),
        }
    repeat = 2 if args.smoke else 3  # the best of 2: the first display also imports matplotlib
    print(f"dpi {fallback.DPI}, longest side <= {fallback.MAX_PIXELS} px")
    print(f"{'view':36} {'off ms':>8} {'on ms':>8} {'ratio':>7} {'bundle off':>11} {'bundle on':>10} {'png kB':>7}")
    for name, make in cases.items():
        widget = make()
        fallback.set_static_fallback(False)
        t_off, b_off = per_display(widget, repeat)
        fallback.set_static_fallback(True)
        t_on, b_on = per_display(widget, repeat)
        png = len(base64.b64decode(widget._repr_mimebundle_()[0]["image/png"]))
        print(f"{name:36} {1e3 * t_off:8.1f} {1e3 * t_on:8.1f} {t_on / t_off:7.0f} {b_off:11,d} {b_on:10,d} "
              f"{png / 1024:7.1f}")
        widget.close()


if __name__ == "__main__":
    main()
