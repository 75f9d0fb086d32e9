"""Corpus statistics over 1,000 sentences on the bundled model: how much do they add to the forward passes?

Prints the ratio of the total time of :func:`attnwidgets.analysis.corpus_stats` (tokenising, forward passes,
moving attention to numpy, every surface statistic and the pattern classes) to the bare forward passes alone
(tokenising + ``Runner.forward`` on the same batches), the goal being <= 1.3, and the peak memory.

Timings alternate bare and full runs and keep the fastest of each, so that other work on the machine biases both
alike; both wall-clock and process CPU time are reported (CPU time is the fairer figure on a shared machine).
Run it with::

    python benchmarks/bench_analysis.py [--n 1000] [--batch-size 32] [--repeats 3] [--threads 1] [--distances]
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="number of sentences")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    parser.add_argument("--distances", action="store_true", help="also time Jensen-Shannon head distances")
    parser.add_argument("--treebank-words", type=int, default=0,
                        help="also time dependency_scores on the UD sample repeated to this many words")
    args = parser.parse_args()

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)

    import attnwidgets as aw
    from attnwidgets.analysis import corpus_stats
    from attnwidgets.data import load_corpus

    runner = aw.get_runner()
    corpus = load_corpus()
    texts = [corpus[i % len(corpus)] for i in range(args.n)]
    bs = args.batch_size

    def bare() -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        for s in range(0, len(texts), bs):
            runner.forward(runner.encode(texts[s : s + bs]))
        return time.perf_counter() - wall, time.process_time() - cpu

    def full(**kwargs: object) -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        corpus_stats(texts, model=runner, batch_size=bs, progress=False, **kwargs)
        return time.perf_counter() - wall, time.process_time() - cpu

    bare()  # warm up
    n_tokens = sum(len(runner.tokenizer(t)["input_ids"]) for t in texts)
    print(f"model: {runner.info.name}, {args.n} sentences, {n_tokens} tokens ({n_tokens / args.n:.1f} per sentence), "
          f"batch size {bs}")
    variants: dict[str, dict[str, object]] = {"stats": {}, "stats+words": {"words": True}}
    if args.distances:
        variants["stats+distances"] = {"distances": True}
    timings: dict[str, list[tuple[float, float]]] = {"bare": [], **{k: [] for k in variants}}
    for _ in range(args.repeats):
        timings["bare"].append(bare())
        for key, kwargs in variants.items():
            timings[key].append(full(**kwargs))
    best = {k: (min(t[0] for t in v), min(t[1] for t in v)) for k, v in timings.items()}
    print(f"{'':26s} {'wall s':>8s} {'cpu s':>8s} {'ratio wall':>11s} {'ratio cpu':>10s}")
    for key, (wall, cpu) in best.items():
        print(f"{key:26s} {wall:8.2f} {cpu:8.2f} {wall / best['bare'][0]:11.2f} {cpu / best['bare'][1]:10.2f}"
              + ("   (goal <= 1.3)" if key == "stats" else ""))

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
    print(f"in-run ratio, corpus_stats cpu time / its own tokenising + forward cpu time: {min(ratios):.2f} "
          f"(runs: {', '.join(f'{r:.2f}' for r in ratios)})")

    tracemalloc.start()
    stats = corpus_stats(texts, model=runner, batch_size=bs, progress=False)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak numpy/python memory during corpus_stats (tracemalloc): {peak / 2**20:.1f} MiB")
    print(f"peak resident set size of the whole process (model included): {rss:.0f} MiB")
    if args.treebank_words:
        from attnwidgets.analysis import dependency_scores, read_conllu
        from attnwidgets.data import ud_sample_path

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
