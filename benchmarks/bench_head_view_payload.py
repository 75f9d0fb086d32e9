"""HeadView: bytes one layer sends, dense (the old payload) against sparse rows of the weights >= min_weight.

Usage::

    python benchmarks/bench_head_view_payload.py

Two setups, as in bench_views.py: the bundled all-MiniLM-L6-v2 (6 x 12) at 128 tokens, and a randomly initialised
``BertConfig()`` (12 x 12) at 512 tokens. Prints, per setup, the median and largest layer in bytes and the ratio;
asserts nothing.
"""

from __future__ import annotations

import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_views import _random_bert, _text

import attnwidgets as aw
from attnwidgets.viewdata.lines import dense_layer, layer_payload, payload_bytes


def measure(name: str, r: aw.AttentionResult, min_weight: float = 0.02) -> None:
    dense, sparse, formats = [], [], set()
    for layer in r.attention:  # [head, query, key]
        dense.append(len(dense_layer(layer)["buffer"]))
        p = layer_payload(layer, min_weight)
        sparse.append(payload_bytes(p))
        formats.add(p["format"])
    d, s = np.array(dense), np.array(sparse)
    print(f"| {name} | {r.attention.shape[1]} x {len(r.tokens)} | {np.median(d) / 1e3:,.1f} kB | "
          f"{np.median(s) / 1e3:,.1f} kB (max {s.max() / 1e3:,.1f}) | {np.median(d / s):,.0f}x | "
          f"{'/'.join(sorted(formats))} |")


def main() -> None:
    print("| setup | heads x tokens | dense layer (before) | sparse layer (after) | ratio | format |")
    print("|---|---|---|---|---|---|")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        measure("bundled MiniLM, 128 tokens", aw.run(_text(128)))
        with tempfile.TemporaryDirectory() as tmp:
            folder = _random_bert(Path(tmp) / "bert")
            measure("random BertConfig(), 512 tokens", aw.run(_text(512), model=folder))
        measure("bundled MiniLM, 512 tokens", aw.run(_text(512)))


if __name__ == "__main__":
    main()
