"""One process vs a local Ray with N workers: corpus statistics over 1,000 sentences and a 72-head sweep.

Both sides use one torch thread per process (``torch.set_num_threads(1)`` here, one thread per Ray worker), so the
ratio says what spreading shards over workers buys, not what a second thread would. The bundled corpus has 293
sentences; it is repeated (293 x 3 + the first 121) to reach ``--n`` = 1,000. The sweep disables each of the bundled
model's 72 heads in turn on the shipped sentiment task (its 80 held-out texts, a probe fitted on the 120 others), plus
the clean baseline: 73 evaluations.

Printed: wall time of each, throughput ratio (one process / Ray, the goal is >= 0.8 x workers), Ray's start-up (``ray
.init`` of a fresh local instance; then the actors, each loading the model), the driver's resident memory, the load
average of the machine before and after (other work on a 2-core machine biases the ratio down), and the per-token
cost of our statistics against a bare forward pass in one process, from which the README's capacity plan is made.

    python benchmarks/bench_scale.py [--n 1000] [--workers 2] [--batch-size 32] [--skip-sweep]
    python benchmarks/bench_scale.py --smoke    # 16 sentences in one process, no Ray, no sweep: that it runs (CI)

Without Ray installed (``pip install ray``, the ``ray`` extra) it prints that and stops.
"""

from __future__ import annotations

import argparse
import os
import resource
import threading
import time
from pathlib import Path
from typing import Any


def rss_mib() -> float:
    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class PeakRSS:
    """The highest resident set size of this process while the block runs, sampled every 20 ms."""

    def __enter__(self) -> PeakRSS:
        self.peak = rss_mib()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            self.peak = max(self.peak, rss_mib())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def load() -> str:
    return "/".join(f"{x:.2f}" for x in os.getloadavg())


def timed(fn: Any) -> tuple[Any, float, float]:
    with PeakRSS() as rss:
        start = time.perf_counter()
        out = fn()
        seconds = time.perf_counter() - start
    return out, seconds, rss.peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--skip-sweep", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="16 sentences, batch 8, 1 worker, no sweep (CI)")
    args = ap.parse_args()
    if args.smoke:
        args.n, args.batch_size, args.workers, args.skip_sweep = 16, 8, 1, True  # and no Ray (see below)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import numpy as np
    import torch

    try:
        import ray
    except ImportError:
        if not args.smoke:  # the smoke run needs no Ray
            print("ray is not installed: skipped (pip install ray, the `ray` extra, for this benchmark)")
            return

    import attnwidgets as aw
    from attnwidgets.data import load_corpus
    from attnwidgets.studies import shards
    from attnwidgets.studies.sweeps import sweep_heads
    from attnwidgets.studies.tasks import sentiment_task

    torch.set_num_threads(1)
    corpus = load_corpus()
    texts = (corpus * (args.n // len(corpus) + 1))[: args.n]
    print(f"load average before: {load()}   cpus: {os.cpu_count()}   corpus: {len(corpus)} sentences repeated to "
          f"{len(texts)}")
    rows: list[tuple[str, str, str, str]] = []

    def local_stats() -> Any:
        return aw.studies.corpus_stats(texts, batch_size=args.batch_size, progress=False)

    if args.smoke:
        # Ray's start (ray.init and an actor loading the model) takes about a minute on a 2-core machine: more than
        # the rest together. The Ray backend itself is tested in tests/test_scale.py; the smoke run keeps the rest.
        print("--smoke: Ray's side skipped (its start alone takes about a minute here; tests/test_scale.py runs it)")
        local, t_local, peak_local = timed(local_stats)
        tok = local.n_tokens
        rows.append((f"corpus statistics, {len(texts):,} sentences", f"{t_local:.1f} s", "skipped (--smoke)", "-"))
        print(f"corpus stats: 1 process {t_local:.1f} s; {tok} tokens; driver RSS peak {peak_local:.0f} MiB")
    else:
        # Ray first, so the driver's memory is measured before this process loads the model itself.
        rss0 = rss_mib()
        start = time.perf_counter()
        ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False,
                 runtime_env={"env_vars": {"PYTHONPATH": str(Path(__file__).resolve().parents[1]),
                                           "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
                                           "HF_HUB_OFFLINE": "1"}})
        ray_init = time.perf_counter() - start
        options = shards.Options(backend="ray", num_workers=args.workers, progress=False)
        with shards.Pool(None, options) as pool:
            start = time.perf_counter()
            pool.start_workers(args.workers)  # timed on its own
            actors = time.perf_counter() - start
        print(f"ray.init: {ray_init:.1f} s; {args.workers} actors loading the model: {actors:.1f} s")

        def ray_stats() -> Any:
            return aw.studies.corpus_stats(texts, batch_size=args.batch_size, progress=False, backend="ray",
                                   num_workers=args.workers)

        remote, t_ray, peak_ray = timed(ray_stats)
        rss_after_ray = rss_mib()

        local, t_local, peak_local = timed(local_stats)
        worst = max(float(np.nanmax(np.abs(local.mean()[k] - remote.mean()[k]))) for k in local.mean())
        tok = local.n_tokens
        rows.append((f"corpus statistics, {len(texts):,} sentences", f"{t_local:.1f} s",
                     f"{t_ray:.1f} s (incl. actors' start)", f"{t_local / t_ray:.2f}"))
        print(f"corpus stats: 1 process {t_local:.1f} s, ray {t_ray:.1f} s, ratio {t_local / t_ray:.2f}; "
              f"largest difference of a mean {worst:.2e}; {tok} tokens")
        print(f"driver RSS: at start {rss0:.0f} MiB, peak during the Ray run {peak_ray:.0f} MiB (after "
              f"{rss_after_ray:.0f}), peak during the 1-process run {peak_local:.0f} MiB")

    # per-token cost: a bare forward (tokenise + forward with attentions, as every run of ours) vs the statistics
    runner = aw.runner.get_runner()
    order = np.argsort([len(t) for t in texts], kind="stable")
    sorted_texts = [texts[i] for i in order]
    start = time.perf_counter()
    n2 = 0
    for b in range(0, len(sorted_texts), args.batch_size):
        enc = runner.encode(sorted_texts[b:b + args.batch_size])
        runner.forward(enc)
        lengths = enc.inputs["attention_mask"].sum(1)
        n2 += int((lengths.double() ** 2).sum())
    t_bare = time.perf_counter() - start
    info = runner.info
    entries = info.n_layers * info.n_heads * n2
    print(f"bare forward {t_bare:.1f} s = {1e3 * t_bare / tok:.3f} ms/token; statistics {1e3 * t_local / tok:.3f} "
          f"ms/token; statistics beyond the forward {1e9 * (t_local - t_bare) / entries:.2f} ns per attention weight "
          f"({entries / 1e6:.0f} M weights)")

    if not args.skip_sweep:
        task = sentiment_task(runner)
        (sw_ray, t_sw_ray, _) = timed(lambda: sweep_heads(runner, task, layers=False, progress=False, backend="ray",
                                                          num_workers=args.workers))
        (sw_local, t_sw_local, _) = timed(lambda: sweep_heads(runner, task, layers=False, progress=False))
        same = np.allclose(sw_ray.heads, sw_local.heads, atol=1e-6)
        rows.append(("sweep, 72 heads + baseline (sentiment, 80 texts)", f"{t_sw_local:.1f} s",
                     f"{t_sw_ray:.1f} s (incl. actors' start)", f"{t_sw_local / t_sw_ray:.2f}"))
        print(f"sweep: 1 process {t_sw_local:.1f} s, ray {t_sw_ray:.1f} s, ratio {t_sw_local / t_sw_ray:.2f}, "
              f"same heads: {same}")
    print(f"load average after: {load()}   peak RSS of the driver (getrusage): "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    print()
    print(f"| work | 1 process, 1 thread | local Ray, {args.workers} workers x 1 thread | throughput ratio |")
    print("|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    if not args.smoke:
        ray.shutdown()


if __name__ == "__main__":
    main()
