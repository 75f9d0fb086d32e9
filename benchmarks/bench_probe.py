"""Clark et al.'s attention probe on a treebank-sized split (issue 33 §6): the packed fit against the padded one it
replaced (kept as the tests' reference, tests/probe_reference.py).

Synthetic sentences stand in for a treebank's: ``--sentences`` (default 1,000) of lengths drawn like a news treebank's
(mean about 24 words, at most ``--max-words``, default 81, one sentence that long), ``--layers`` x ``--heads``
(default 12 x 12 = 144 heads, BERT-base) of random word-level attention in float32, as ``probe_sentence`` keeps it,
and random gold heads. Prints, for each side: the peak memory numpy allocates during the fit and during ``uas`` on
the same sentences (tracemalloc), the wall and CPU seconds of a fit of ``--iterations`` L-BFGS steps, and the peak
over the data's own size (the sentences' attention and special-token shares: the floor a probe that copied nothing
would sit on).

The padded side needs S x 2K x M² float64 values twice (1,000 sentences, 81 words, 144 heads: 15 GB twice), more
than a workstation has, so it runs on the first ``--old-sentences`` (default 100, the longest kept in) and the new
side runs on those too: that row compares the two, the full-size row shows the new side alone, with the padded
side's arrays computed, not run. One BLAS thread (CPU time as well as wall time: idle BLAS threads spin).

    PYTHONPATH=. python benchmarks/bench_probe.py [--sentences 1000] [--old-sentences 100] [--iterations 20]
    PYTHONPATH=. python benchmarks/bench_probe.py --smoke    # 40 sentences of up to 20 words, 2 x 4 heads (CI)
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_name] = "1"  # before numpy starts its pool

import argparse  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import scipy.optimize  # noqa: E402, F401  (imported here, so that no measured fit pays for it)

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from attnwidgets.analysis.attention_probe import ProbeSentence, fit_attention_probe, score_heads  # noqa: E402

MIB = 2**20


def sentences(n: int, max_words: int, layers: int, heads: int, seed: int = 0) -> list[ProbeSentence]:
    rng = np.random.default_rng(seed)
    lengths = np.clip(np.round(rng.gamma(4.0, 6.0, n)), 2, max_words).astype(int)  # mean about 24
    lengths[0] = max_words
    out = []
    for m in lengths:
        raw = rng.random((layers, heads, m, m + 1))  # the last column: the special tokens
        raw /= raw.sum(-1, keepdims=True)
        gold = np.array([rng.choice([h for h in range(-1, m) if h != j]) for j in range(m)])
        raw = raw.astype(np.float32)  # as probe_sentence keeps it
        out.append(ProbeSentence(raw[..., :m], raw[..., m], gold, np.zeros(m, bool)))
    return out


def data_bytes(data: Sequence[ProbeSentence]) -> int:
    return sum(s.attention.nbytes + s.special.nbytes for s in data)


def measure(work: Callable[[], Any]) -> tuple[Any, float, float, float]:
    """(result, peak MiB numpy and Python allocated, wall s, CPU s)."""
    tracemalloc.start()
    wall, cpu = time.perf_counter(), time.process_time()
    out = work()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return out, peak / MIB, wall, cpu


def old_side(data: Sequence[ProbeSentence], iterations: int) -> dict[str, float]:
    from probe_reference import padded_fit, padded_predict

    (params, projection), peak, wall, cpu = measure(lambda: padded_fit(data, max_iter=iterations))
    (_, predict_peak, predict_wall, _) = measure(lambda: padded_predict(params, data, projection))
    right, total = score_heads(padded_predict(params, data, projection), data)
    return {"fit MiB": peak, "fit s": wall, "fit CPU s": cpu, "uas MiB": predict_peak, "uas s": predict_wall,
            "uas": right / total, "weights": params["pair"]}


def new_side(data: Sequence[ProbeSentence], iterations: int) -> dict[str, float]:
    probe, peak, wall, cpu = measure(lambda: fit_attention_probe(data, max_iter=iterations))
    uas, predict_peak, predict_wall, _ = measure(lambda: probe.uas(data))
    return {"fit MiB": peak, "fit s": wall, "fit CPU s": cpu, "uas MiB": predict_peak, "uas s": predict_wall,
            "uas": uas, "weights": probe.params["pair"], "iterations": probe.iterations}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--old-sentences", type=int, default=100)
    parser.add_argument("--max-words", type=int, default=81)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--heads", type=int, default=12)
    parser.add_argument("--iterations", type=int, default=20, help="L-BFGS iterations of each fit")
    parser.add_argument("--smoke", action="store_true", help="40 sentences of up to 20 words, 2 x 4 heads (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.sentences, args.old_sentences, args.max_words, args.layers, args.heads, args.iterations = \
            40, 20, 20, 2, 4, 5
    k = args.layers * args.heads
    full = sentences(args.sentences, args.max_words, args.layers, args.heads)
    print(f"{args.sentences} synthetic sentences of {sum(s.n_words for s in full)} words (at most {args.max_words}), "
          f"{args.layers} x {args.heads} heads, {args.iterations} L-BFGS iterations per fit, one BLAS thread")
    rows = []
    subset = full[:args.old_sentences]
    old, new = old_side(subset, args.iterations), new_side(subset, args.iterations)
    rows.append((len(subset), data_bytes(subset) / MIB, old, new))
    differ = float(np.abs(old["weights"] - new["weights"]).max() / max(np.abs(old["weights"]).max(), 1e-300))
    rows.append((len(full), data_bytes(full) / MIB, None, new_side(full, args.iterations)))
    print()
    print("| sentences | data MiB | side | fit peak MiB | peak / data | fit wall s | fit CPU s | uas peak MiB "
          "| uas s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n, data_mib, o, w in rows:
        if o is None:
            biggest = max(s.n_words for s in full)
            padded = 2 * n * 2 * k * biggest**2 * 8 / MIB
            print(f"| {n} | {data_mib:.1f} | padded (old) | not run: {padded:,.0f} computed | "
                  f"{padded / data_mib:.1f} | | | | |")
        else:
            print(f"| {n} | {data_mib:.1f} | padded (old) | {o['fit MiB']:.1f} | {o['fit MiB'] / data_mib:.2f} | "
                  f"{o['fit s']:.2f} | {o['fit CPU s']:.2f} | {o['uas MiB']:.1f} | {o['uas s']:.2f} |")
        print(f"| {n} | {data_mib:.1f} | packed (new) | {w['fit MiB']:.1f} | {w['fit MiB'] / data_mib:.2f} | "
              f"{w['fit s']:.2f} | {w['fit CPU s']:.2f} | {w['uas MiB']:.1f} | {w['uas s']:.2f} |")
    o, w = rows[0][2], rows[0][3]
    assert o is not None
    print(f"\non the {len(subset)} sentences both fitted: padded / packed peak {o['fit MiB'] / w['fit MiB']:.1f}x "
          f"(fit), {o['uas MiB'] / w['uas MiB']:.1f}x (uas); wall {o['fit s'] / w['fit s']:.1f}x; training UAS "
          f"{o['uas']:.4f} vs {w['uas']:.4f}; largest weight difference / largest weight {differ:.1e}")


if __name__ == "__main__":
    main()
