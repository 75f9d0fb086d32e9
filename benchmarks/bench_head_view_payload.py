"""HeadView: bytes one layer sends, dense (the old payload) against sparse rows of the weights >= min_weight.

Usage::

    python benchmarks/bench_head_view_payload.py [--smoke]

Two setups, as in bench_views.py: the bundled all-MiniLM-L6-v2 (6 x 12) at 128 tokens, and a randomly initialised
``BertConfig()`` (12 x 12) at 512 tokens. Prints, per setup, the median and largest layer in bytes and the ratio;
asserts nothing. ``--smoke``: 16 and 32 tokens, the random BERT 2 x 2 (that it runs, for CI).
"""

from __future__ import annotations

import argparse
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="16 and 32 tokens, a 2 x 2 random BERT (CI)")
    args = parser.parse_args()
    small, large = (16, 32) if args.smoke else (128, 512)
    config = dict(num_hidden_layers=2, num_attention_heads=2, hidden_size=32, intermediate_size=64) if args.smoke \
        else {}
    print("| setup | heads x tokens | dense layer (before) | sparse layer (after) | ratio | format |")
    print("|---|---|---|---|---|---|")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        measure(f"bundled MiniLM, {small} tokens", aw.run(_text(small)))
        with tempfile.TemporaryDirectory() as tmp:
            folder = _random_bert(Path(tmp) / "bert", **config)
            name = "random BertConfig(2 x 2)" if args.smoke else "random BertConfig()"
            measure(f"{name}, {large} tokens", aw.run(_text(large), model=folder))
        measure(f"bundled MiniLM, {large} tokens", aw.run(_text(large)))


if __name__ == "__main__":
    main()
