"""Corpus statistics over 1,000 sentences on the bundled model: how much do they add to the forward passes?

Prints the ratio of the total time of :func:`attnwidgets.studies.corpus_stats` (tokenising, forward passes,
moving attention to numpy, every surface statistic and the pattern classes) to two references on the same batches:

- **bare**: tokenising + ``Runner.forward``, our runner's forward pass, which already asks the model for every
  layer's attention weights and hidden states (``output_attentions=True, output_hidden_states=True``), as every run
  of ours does. The goal is stats / bare <= 1.3: what the statistics add on top of what any of our views costs.
- **plain**: tokenising + the same model called without ``output_attentions`` / ``output_hidden_states``, for
  reference: what a user pays who wants no attention at all (the model still runs the eager attention the runner
  loads it with, so this is not a comparison with fused SDPA kernels).

Memory: tracemalloc's peak covers numpy arrays and Python objects only. Torch's tensors are not traced, and neither
is the attention batch handed over as ``tensor.numpy()`` (a view on torch's memory). So the script also prints the
resident set size sampled during the call, and the process's peak RSS.

Timings alternate the runs and keep the fastest of each, so that other work on the machine biases all alike; both
wall-clock and process CPU time are reported (CPU time is the fairer figure on a shared machine). Run it with::

    python benchmarks/bench_analysis.py [--n 1000] [--batch-size 32] [--repeats 3] [--threads 1] [--distances]
    python benchmarks/bench_analysis.py --smoke    # 16 sentences, batch 8, one repeat: that it runs (CI)
"""

from __future__ import annotations

import argparse
import resource
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _rss_mib() -> float | None:
    """Resident set size of this process now, from /proc (None where there is no /proc)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return pages * resource.getpagesize() / 2**20


def _peak_rss(fn: Callable[[], object], every: float = 0.005) -> tuple[float | None, float | None]:
    """(RSS before, peak RSS while ``fn`` runs) in MiB, sampling every ``every`` seconds in a thread."""
    before = _rss_mib()
    if before is None:
        fn()
        return None, None
    peak = [before]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            now = _rss_mib()
            if now is not None and now > peak[0]:
                peak[0] = now
            done.wait(every)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        fn()
    finally:
        done.set()
        thread.join()
    after = _rss_mib()
    return before, max(peak[0], after or 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="number of sentences")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--distances", action="store_true", help="also time Jensen-Shannon head distances")
    parser.add_argument("--treebank-words", type=int, default=0,
                        help="also time dependency_scores on the UD sample repeated to this many words")
    parser.add_argument("--smoke", action="store_true", help="16 sentences, batch 8, one repeat (CI)")
    args = parser.parse_args()
    if args.smoke:
        args.n, args.batch_size, args.repeats = 16, 8, 1

    import torch

    if args.threads:
        torch.set_num_threads(args.threads)

    import attnwidgets as aw
    from attnwidgets.data import load_corpus
    from attnwidgets.studies import corpus_stats

    runner = aw.runner.get_runner()
    corpus = load_corpus()
    texts = [corpus[i % len(corpus)] for i in range(args.n)]
    bs = args.batch_size

    def bare() -> tuple[float, float]:  # our forward: attentions and hidden states come back
        wall, cpu = time.perf_counter(), time.process_time()
        for s in range(0, len(texts), bs):
            runner.forward(runner.encode(texts[s : s + bs]))
        return time.perf_counter() - wall, time.process_time() - cpu

    def plain() -> tuple[float, float]:  # the same model asked for no attentions and no hidden states
        wall, cpu = time.perf_counter(), time.process_time()
        for s in range(0, len(texts), bs):
            enc = runner.encode(texts[s : s + bs])
            with torch.inference_mode():
                out = runner.model(**enc.inputs, output_attentions=False, output_hidden_states=False,
                                   return_dict=True)
            assert getattr(out, "attentions", None) is None
        return time.perf_counter() - wall, time.process_time() - cpu

    def full(**kwargs: Any) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        corpus_stats(texts, model=runner, batch_size=bs, progress=False, **kwargs)
        return time.perf_counter() - wall, time.process_time() - cpu

    bare()  # warm up
    plain()
    n_tokens = sum(len(runner.tokenizer(t)["input_ids"]) for t in texts)
    print(f"model: {runner.info.name}, {args.n} sentences, {n_tokens} tokens ({n_tokens / args.n:.1f} per sentence), "
          f"batch size {bs}")
    variants: dict[str, dict[str, Any]] = {"stats": {}, "stats+words": {"words": True}}
    if args.distances:
        variants["stats+distances"] = {"distances": True}
    timings: dict[str, list[tuple[float, float]]] = {"plain": [], "bare": [], **{k: [] for k in variants}}
    for _ in range(args.repeats):
        timings["plain"].append(plain())
        timings["bare"].append(bare())
        for key, kwargs in variants.items():
            timings[key].append(full(**kwargs))
    best = {k: (min(t[0] for t in v), min(t[1] for t in v)) for k, v in timings.items()}
    print("bare  = tokenising + Runner.forward, which returns every layer's attentions and hidden states")
    print("plain = tokenising + the same model without output_attentions / output_hidden_states (reference)")
    print(f"{'':16s} {'wall s':>8s} {'cpu s':>8s}   {'/ bare: wall':>12s} {'cpu':>5s}   "
          f"{'/ plain: wall':>13s} {'cpu':>5s}")
    for key, (wall, cpu) in best.items():
        print(f"{key:16s} {wall:8.2f} {cpu:8.2f}   {wall / best['bare'][0]:12.2f} {cpu / best['bare'][1]:5.2f}   "
              f"{wall / best['plain'][0]:13.2f} {cpu / best['plain'][1]:5.2f}"
              + ("   (goal: / bare <= 1.3)" if key == "stats" else ""))

    # The same ratio measured inside one run: time spent tokenising and in forward passes vs the whole call. Both
    # parts see the same load from other work on the machine, so this ratio is the steadier of the two.
    inside = {"model": 0.0}
    encode, forward = runner.encode, runner.forward

    def timed(fn):  # type: ignore[no-untyped-def]
        def wrapper(*a, **k):  # type: ignore[no-untyped-def]
            start = time.process_time()
            try:
                return fn(*a, **k)
            finally:
                inside["model"] += time.process_time() - start
        return wrapper

    runner.encode, runner.forward = timed(encode), timed(forward)  # type: ignore[method-assign]
    ratios = []
    try:
        for _ in range(args.repeats):
            inside["model"] = 0.0
            start = time.process_time()
            corpus_stats(texts, model=runner, batch_size=bs, progress=False)
            ratios.append((time.process_time() - start) / inside["model"])
    finally:
        del runner.encode, runner.forward
    print(f"in-run ratio, corpus_stats cpu time / its own tokenising + (bare) forward cpu time: {min(ratios):.2f} "
          f"(runs: {', '.join(f'{r:.2f}' for r in ratios)})")

    before, during = _peak_rss(lambda: corpus_stats(texts, model=runner, batch_size=bs, progress=False))
    tracemalloc.start()
    stats = corpus_stats(texts, model=runner, batch_size=bs, progress=False)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory traced by tracemalloc during corpus_stats: {peak / 2**20:.1f} MiB (numpy arrays and Python "
          "objects only; not torch tensors, nor the attention batch, which is a numpy view on torch's memory)")
    if before is not None and during is not None:
        print(f"resident set size during corpus_stats (sampled every 5 ms): {before:.0f} MiB before, {during:.0f} MiB "
              f"peak (+{during - before:.0f} MiB, torch and numpy together)")
    print(f"peak resident set size of the whole process so far (getrusage; model, warm-up and every run above): "
          f"{rss:.0f} MiB")
    if args.treebank_words:
        from attnwidgets.analysis import read_conllu
        from attnwidgets.data import ud_sample_path
        from attnwidgets.studies import dependency_scores

        sample = read_conllu(ud_sample_path())
        per_copy = sum(len(x.words) for x in sample)
        sentences = sample * max(1, -(-args.treebank_words // per_copy))
        wall = time.perf_counter()
        dependency_scores(sentences, model=runner, progress=False)
        n_words = sum(len(x.words) for x in sentences)
        print(f"dependency_scores: {len(sentences)} sentences, {n_words} words in {time.perf_counter() - wall:.1f} s")

    mean = stats.mean()
    print("mean share of attention by layer (averaged over heads):")
    print("layer  [CLS]  [SEP]  punct  entropy  uniform")
    for layer in range(mean["cls"].shape[0]):
        print(f"{layer + 1:5d}  {mean['cls'][layer].mean():.2f}   {mean['sep'][layer].mean():.2f}   "
              f"{mean['punct'][layer].mean():.2f}   {mean['entropy'][layer].mean():.2f}     "
              f"{mean['entropy_uniform'][layer].mean():.2f}")


if __name__ == "__main__":
    main()
