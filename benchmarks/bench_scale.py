"""One process vs the kept Ray workers: corpus statistics over ``--n`` sentences and a 72-head sweep.

Both sides use one torch thread per process (``torch.set_num_threads(1)`` here, one thread per Ray worker), so the
ratio says what spreading shards over workers buys, not what a second thread would. The bundled corpus has 293
sentences; it is repeated to reach ``--n`` (default 7,000: more than 30 s in one process). The sweep disables each
of the bundled model's 72 heads in turn on the shipped sentiment task (its 80 held-out texts, a probe fitted on the 120
others), plus the clean baseline: 73 evaluations.

Printed, for the Ray side:

- its start, paid once per session: ``ray.init`` of a fresh local instance, then the workers, each loading the model;
- the first call on the kept workers and a second one, which starts no worker: its whole wall time on 2 sentences
  (one shard) is the overhead of a call (the target is 2 s);
- wall time and CPU time. A loaded 2-core machine cannot show what N free cores would give, so the CPU seconds of
  every process are counted (this process, Ray's own processes and the workers, from /proc through psutil): ``CPU
  efficiency`` = one process's CPU seconds / all CPU seconds the Ray run spent (1.0: Ray costs nothing beyond the
  work), and ``N free cores`` = one process's CPU seconds / the busiest worker's (what the wall ratio would be with a
  core per worker and the driver idle; the target is 0.8 x N);
- the load average before and after, and the driver's resident memory.

Also the per-token cost of our statistics against a bare forward pass in one process, from which the README's
capacity plan is made.

    python benchmarks/bench_scale.py [--n 7000] [--workers 2] [--batch-size 32] [--skip-sweep]
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


def cpu_seconds() -> dict[int, float]:
    """CPU seconds (user + system) so far of this process and every process under it (Ray's and its workers)."""
    import psutil

    me = psutil.Process()
    out = {}
    for proc in [me, *me.children(recursive=True)]:
        try:
            t = proc.cpu_times()
            out[proc.pid] = t.user + t.system
        except psutil.Error:
            continue
    return out


class Measured:
    """Wall time, CPU seconds of this process and of every process under it, and the peak RSS of this one."""

    def __init__(self, fn: Any) -> None:
        before = cpu_seconds()
        with PeakRSS() as rss:
            start = time.perf_counter()
            self.out = fn()
            self.wall = time.perf_counter() - start
        after = cpu_seconds()
        self.per_pid = {pid: t - before.get(pid, 0.0) for pid, t in after.items()}
        self.cpu = sum(self.per_pid.values())
        self.own_cpu = self.per_pid.get(os.getpid(), 0.0)
        self.peak = rss.peak


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=7000)
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
        import ray  # noqa: F401
    except ImportError:
        if not args.smoke:  # the smoke run needs no Ray
            print("ray is not installed: skipped (pip install ray, the `ray` extra, for this benchmark)")
            return

    import attnwidgets as aw
    from attnwidgets.data import load_corpus
    from attnwidgets.studies import corpus_stats, shutdown_pool
    from attnwidgets.studies import pool as ray_pool
    from attnwidgets.studies.shards import ModelSpec
    from attnwidgets.studies.sweeps import sweep_heads
    from attnwidgets.studies.tasks import sentiment_task

    torch.set_num_threads(1)
    corpus = load_corpus()
    texts = (corpus * (args.n // len(corpus) + 1))[: args.n]
    print(f"load average before: {load()}   cpus: {os.cpu_count()}   corpus: {len(corpus)} sentences repeated to "
          f"{len(texts)}")
    rows: list[tuple[str, ...]] = []
    n = args.workers

    def local_stats() -> Any:  # the model is loaded before it is timed, as the kept workers have theirs
        aw.runner.get_runner()
        return Measured(lambda: corpus_stats(texts, batch_size=args.batch_size, progress=False))

    def ray_stats(some: list[str]) -> Any:
        return corpus_stats(some, batch_size=args.batch_size, progress=False, backend="ray", num_workers=n)

    if args.smoke:
        # Ray's start (ray.init and a worker loading the model) takes a minute on a busy 2-core machine: more than
        # the rest together. The Ray backend itself is tested in tests/studies/test_pool.py and
        # tests/studies/test_scale.py.
        print("--smoke: Ray's side skipped (its start alone takes about a minute here; "
              "tests/studies/test_pool.py runs it)")
        local = local_stats()
        tok = local.out.n_tokens
        rows.append((f"corpus statistics, {len(texts):,} sentences", f"{local.wall:.1f} s / {local.own_cpu:.1f} s",
                     "skipped (--smoke)", "-", "-", "-"))
        print(f"corpus stats: 1 process {local.wall:.1f} s wall, {local.own_cpu:.1f} CPU s; {tok} tokens; driver RSS "
              f"peak {local.peak:.0f} MiB")
        t_local_cpu = local.own_cpu
    else:
        # Ray first, so the driver's memory is measured before this process loads the model itself.
        rss0 = rss_mib()
        spec = ModelSpec.of(None)
        started = time.perf_counter()
        workers = ray_pool.get_pool(spec, num_workers=n)  # starts a local Ray: timed on its own
        ray_init = time.perf_counter() - started
        started = time.perf_counter()
        workers.ensure(n)
        actors = time.perf_counter() - started
        print(f"start, once per session: ray.init {ray_init:.1f} s; {n} workers loading the model {actors:.1f} s")
        first = Measured(lambda: ray_stats(texts[:2]))
        second = Measured(lambda: ray_stats(texts[:2]))
        print(f"calls on the kept workers, 2 sentences each: first {first.wall:.2f} s, second {second.wall:.2f} s "
              f"(target <= 2 s); workers started by them: {workers.started - n}")
        remote = Measured(lambda: ray_stats(texts))
        rss_after_ray = rss_mib()
        worker_pids = workers.worker_pids()
        worker_cpu = [remote.per_pid.get(pid, 0.0) for pid in worker_pids]
        ray_other = remote.cpu - sum(worker_cpu) - remote.own_cpu

        local = local_stats()
        t_local_cpu = local.own_cpu
        diffs = [np.abs(local.out.mean()[k] - remote.out.mean()[k]) for k in local.out.mean()]
        worst = max(float(d[~np.isnan(d)].max(initial=0.0)) for d in diffs)  # NaN: a statistic no head has
        tok = local.out.n_tokens
        # the one process's own CPU seconds: Ray's idle processes, still running beside it, are not its work
        efficiency = local.own_cpu / remote.cpu
        free_cores = local.own_cpu / max(worker_cpu)
        rows.append((f"corpus statistics, {len(texts):,} sentences", f"{local.wall:.1f} s / {local.own_cpu:.1f} s",
                     f"{remote.wall:.1f} s / {remote.cpu:.1f} s", f"{local.wall / remote.wall:.2f}",
                     f"{efficiency:.2f}", f"{free_cores:.2f} (target {0.8 * n:.1f})"))
        print(f"corpus stats: 1 process {local.wall:.1f} s wall / {local.own_cpu:.1f} CPU s; Ray {remote.wall:.1f} s "
              f"wall / {remote.cpu:.1f} CPU s (workers {', '.join(f'{c:.1f}' for c in worker_cpu)}; driver "
              f"{remote.own_cpu:.1f}; Ray's own processes {ray_other:.1f}); largest difference of a mean "
              f"{worst:.2e}; {tok} tokens")
        print(f"driver RSS: at start {rss0:.0f} MiB, peak during the Ray run {remote.peak:.0f} MiB (after "
              f"{rss_after_ray:.0f}), peak during the 1-process run {local.peak:.0f} MiB")
        rows.append(("second call on the kept workers (2 sentences, whole call)", "", f"{second.wall:.2f} s", "", "",
                     "target <= 2 s"))
        rows.append(("start, once per session", "", f"ray.init {ray_init:.1f} s + {n} workers {actors:.1f} s", "",
                     "", ""))

    # per-token cost: a bare forward (tokenise + forward with attentions, as every run of ours) vs the statistics
    runner = aw.runner.get_runner()
    order = np.argsort([len(t) for t in texts], kind="stable")
    sorted_texts = [texts[i] for i in order]
    start = time.process_time()
    n2 = 0
    for b in range(0, len(sorted_texts), args.batch_size):
        enc = runner.encode(sorted_texts[b:b + args.batch_size])
        runner.forward(enc)
        lengths = enc.inputs["attention_mask"].sum(1)
        n2 += int((lengths.double() ** 2).sum())
    t_bare = time.process_time() - start
    info = runner.info
    entries = info.n_layers * info.n_heads * n2
    print(f"bare forward {t_bare:.1f} CPU s = {1e3 * t_bare / tok:.3f} ms/token; statistics "
          f"{1e3 * t_local_cpu / tok:.3f} ms/token ({t_local_cpu / t_bare:.2f} x the forward); statistics beyond "
          f"the forward "
          f"{1e9 * (t_local_cpu - t_bare) / entries:.2f} ns per attention weight ({entries / 1e6:.0f} M weights)")

    if not args.skip_sweep:
        task = sentiment_task(runner)
        sw_ray = Measured(lambda: sweep_heads(runner, task, layers=False, progress=False, backend="ray",
                                              num_workers=n))
        sweep_workers = [sw_ray.per_pid.get(pid, 0.0) for pid in workers.worker_pids()]
        sweep_worker_cpu = max(sweep_workers)
        sw_local = Measured(lambda: sweep_heads(runner, task, layers=False, progress=False))
        same = np.allclose(sw_ray.out.heads, sw_local.out.heads, atol=1e-6)
        rows.append(("sweep, 72 heads + baseline (sentiment, 80 texts)",
                     f"{sw_local.wall:.1f} s / {sw_local.own_cpu:.1f} s", f"{sw_ray.wall:.1f} s / {sw_ray.cpu:.1f} s",
                     f"{sw_local.wall / sw_ray.wall:.2f}", f"{sw_local.own_cpu / sw_ray.cpu:.2f}",
                     f"{sw_local.own_cpu / sweep_worker_cpu:.2f} (target {0.8 * n:.1f})"))
        print(f"sweep: 1 process {sw_local.wall:.1f} s wall / {sw_local.own_cpu:.1f} CPU s; Ray {sw_ray.wall:.1f} s "
              f"wall / {sw_ray.cpu:.1f} CPU s (workers {', '.join(f'{c:.1f}' for c in sweep_workers)}; driver "
              f"{sw_ray.own_cpu:.1f}; Ray's own processes {sw_ray.cpu - sum(sweep_workers) - sw_ray.own_cpu:.1f}); "
              f"same heads: {same}")
    print(f"load average after: {load()}   peak RSS of the driver (getrusage): "
          f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")
    print()
    print(f"| work | 1 process, 1 thread: wall / CPU | kept Ray, {n} workers x 1 thread: wall / CPU | wall ratio | "
          f"CPU efficiency | {n} free cores |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    if not args.smoke:
        shutdown_pool()


if __name__ == "__main__":
    main()
