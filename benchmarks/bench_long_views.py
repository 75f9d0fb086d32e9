"""Heatmap and model view on a lazy result: first payload, one tile, one head switch (CPU seconds), without the
per-head overviews (before: a result loaded from disk, rows rebuilt in numpy) and with them (after:
``attnwidgets.runner.headstats``, made in one torch pass), and a fresh run's first views: the runner leaves the pass
to the first statistic that asks, or to a background thread the first view starts when it opens; that view draws
its head from the same maker run over that head alone (``LazyStack.head_summary``). The fresh run's figures are the
CPU time of the kernel's own thread (``time.thread_time``: the pass runs beside it) and wall time; the pass's own
CPU is the rest of the process's.

Run: PYTHONPATH=. python benchmarks/bench_long_views.py [N or NxLAYERS ...]   (default 512 8192 32768x2). Every size
has 12 heads of width 64 (a 768-wide model) and 12 layers unless ``xLAYERS`` says otherwise: 32k tokens on 12 layers
takes most of an hour on one core, so the default measures 32k on 2 layers (the per-layer figures, head switch and
tile, do not depend on the layer count; the pass and the model view's payload grow with it). Prints a table; asserts
nothing. ``--smoke``: 64 and 256 tokens on 2 layers x 2 heads (that it runs, for CI). ``--against REV [--repeat N]
[--ops] [N ...]``: only the pass / matmul + softmax ratio (default 2048 and 8192 tokens, one layer), REV's pass (a
git revision) and this tree's by turns in one process, N times (default 5), median and range; ``--ops`` adds
torch.profiler's self CPU time per op of both passes. Run with OMP_NUM_THREADS=1 as
well as with all cores; the other figures are CPU time of this process (all threads), which a loaded box inflates
less than wall time. The widgets' imports are paid before the first size (once per kernel; they were counted in the
first payload of a run of one size), and their cost in a fresh process is printed above the table. Issue 26's
targets at 8k: head switch <= 0.1 s, first payload <= 0.5 s (first paint <= 1 s). Issue 33 §7's, printed as ratios
below the table: a head switch before the statistics pass <= 0.1 s, and the pass <= 1.3x one causal matmul + softmax
over the same weights (timed on one layer, in the pass's own blocks).
"""

from __future__ import annotations

import functools
import subprocess
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

import attnwidgets as aw
from attnwidgets.attention_stack import LazyStack
from attnwidgets.runner import headstats
from tests.lazy_helpers import lazy_result


def timed(fn):
    t = time.process_time()
    out = fn()
    return time.process_time() - t, out


def thread_timed(fn):
    """(CPU of the calling thread, wall, result): the kernel's own cost while a background pass runs beside it."""
    t, w = time.thread_time(), time.perf_counter()
    out = fn()
    return time.thread_time() - t, time.perf_counter() - w, out


def _views(r, n: int, layers: int, heads: int) -> dict[str, float]:
    heat_s, w = timed(lambda: aw.AttentionHeatmap(r, head=1))
    mv_s, _ = timed(lambda: aw.ModelView(r))
    q = n // 2
    tile_s, _ = timed(
        lambda: w.answer(
            {
                "what": "region",
                "kind": "self",
                "layer": min(3, layers - 1),
                "head": 1,
                "q0": q,
                "q1": min(n, q + 256),
                "k0": max(0, q - 256),
                "k1": q,
            }
        )
    )
    wall = time.perf_counter()
    head_s, reply = timed(
        lambda: w.answer({"what": "matrix", "kind": "self", "layer": min(5, layers - 1), "head": min(7, heads - 1)})
    )
    head_wall = time.perf_counter() - wall
    return {
        "heatmap first payload": heat_s,
        "model view first payload": mv_s,
        "tile fetch (256 x 256)": tile_s,
        "head switch": head_s,
        "head switch, wall": head_wall,
        "rows read per block (head)": reply[0]["rows_used"],
        "factor": reply[0]["factor"],
    }


def pass_against_softmax(r, layers: int = 1, module=headstats) -> dict[str, float]:
    """CPU and wall of the statistics pass over the first ``layers`` layers, and of what any pass over the weights
    does at least: one causal matmul + softmax per block of the pass's own plan (torch, the same blocks and keys).
    ``module``: the headstats whose pass is timed (another revision's: :func:`headstats_at`)."""
    import torch

    from attnwidgets.runner.headstats import BLOCK_BYTES, _plan

    stack = LazyStack(r.stack().layers[:layers])
    cpu, wall = time.process_time(), time.perf_counter()
    module.summarise(stack, causal=True, special_rows=np.flatnonzero(r.special_mask))
    pass_cpu, pass_wall = time.process_time() - cpu, time.perf_counter() - wall
    cpu, wall = time.process_time(), time.perf_counter()
    with torch.inference_mode():
        for layer in stack.layers:
            rows, _ = _plan(layer, layer.n_keys, 1, BLOCK_BYTES)
            q, k = torch.from_numpy(layer.query.copy()) * layer.scaling, torch.from_numpy(layer.key.copy())
            group = layer.n_heads // layer.n_kv_heads
            for start in range(0, layer.n_queries, rows):
                stop = min(layer.n_queries, start + rows)
                k0, k1 = int(layer.mask.lo[start:stop].min()), int(layer.mask.hi[start:stop].max())
                hidden = torch.from_numpy(~layer.mask.rows(start, stop, layer.n_keys)[:, k0:k1].copy())
                for h in range(layer.n_heads):
                    torch.softmax(torch.mm(q[h, start:stop], k[h // group, k0:k1].T).masked_fill_(hidden, -np.inf), -1)
    return {
        "pass CPU": pass_cpu,
        "pass wall": pass_wall,
        "matmul+softmax CPU": time.process_time() - cpu,
        "matmul+softmax wall": time.perf_counter() - wall,
    }


def headstats_at(rev: str):
    """``attnwidgets.runner.headstats`` as it is at git revision ``rev``, loaded as a module of its own (its relative
    import made absolute), so that a pass before a change and after it are timed by turns in one process."""
    import types

    root = Path(__file__).resolve().parents[1]
    src = subprocess.run(
        ["git", "show", f"{rev}:attnwidgets/runner/headstats.py"], capture_output=True, text=True, check=True, cwd=root
    ).stdout
    src = src.replace("from ..attention_stack", "from attnwidgets.attention_stack")
    module = types.ModuleType(f"headstats_at_{rev}")
    exec(compile(src, f"{rev}:attnwidgets/runner/headstats.py", "exec"), module.__dict__)
    return module


def against(rev: str, sizes: list[tuple[int, int]], repeat: int) -> None:
    """The pass / matmul + softmax ratio of ``rev``'s pass and of this tree's, ``repeat`` times each, by turns with
    the reference in one process (one layer, 12 heads x 64): median and range, and the CPU seconds' medians."""
    import statistics

    import torch

    old = headstats_at(rev)
    print(
        f"one layer, 12 heads x 64; CPU seconds of this process (torch threads: {torch.get_num_threads()}); "
        f"{repeat} runs by turns: {rev}'s pass, this tree's pass, the reference (median, range)"
    )
    print(
        f"| tokens | pass / (matmul + softmax), {rev} | the same, this tree | pass CPU, {rev} -> this tree "
        "| matmul + softmax CPU |"
    )
    print("|---|---|---|---|---|")
    for n, _layers in sizes:
        r = lazy_result(n, layers=1, heads=12, kv_heads=12, head_dim=64)
        got: dict[str, list[float]] = {"old": [], "new": [], "ref": []}
        for _ in range(repeat):
            got["old"].append(pass_against_softmax(r, module=old)["pass CPU"])
            runs = pass_against_softmax(r)
            got["new"].append(runs["pass CPU"])
            got["ref"].append(runs["matmul+softmax CPU"])
        cells = []
        for name in ("old", "new"):
            ratio = [a / b for a, b in zip(got[name], got["ref"])]
            cells.append(f"{statistics.median(ratio):.2f}x ({min(ratio):.2f}-{max(ratio):.2f})")
        med = {k: statistics.median(v) for k, v in got.items()}
        print(
            f"| {n} | {cells[0]} | {cells[1]} | {med['old']:.3f} -> {med['new']:.3f} s | {med['ref']:.3f} s |",
            flush=True,
        )


def ops(rev: str, n: int) -> None:
    """torch.profiler's self CPU time per aten op of one layer's pass at ``n`` tokens, ``rev``'s and this tree's,
    twice each by turns (min-max of the two; a loaded machine inflates every figure)."""
    from torch.profiler import ProfilerActivity, profile

    old = headstats_at(rev)
    r = lazy_result(n, layers=1, heads=12, kv_heads=12, head_dim=64)
    stack, special = LazyStack(r.stack().layers[:1]), np.flatnonzero(r.special_mask)
    tables: dict[str, list[dict[str, tuple[float, int]]]] = {"old": [], "new": []}
    for name, module in [("old", old), ("new", headstats)] * 2:
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            module.summarise(stack, causal=True, special_rows=special)
        tables[name].append({e.key: (e.self_cpu_time_total / 1e3, e.count) for e in prof.key_averages()})

    def cell(name: str, op: str) -> str:
        ms = [t.get(op, (0.0, 0))[0] for t in tables[name]]
        calls = tables[name][0].get(op, (0.0, 0))[1]
        return f"{min(ms):.0f}-{max(ms):.0f} ({calls})" if calls else "-"

    top = lambda op: max(t.get(op, (0.0, 0))[0] for ts in tables.values() for t in ts)  # noqa: E731
    names = sorted({op for ts in tables.values() for t in ts for op in t}, key=lambda op: -top(op))
    print(f"{n} tokens, one layer, 12 heads x 64: self CPU ms (calls) per op, {rev} and this tree")
    print(f"| op | {rev} | this tree |\n|---|---|---|")
    for op in names:
        if top(op) >= 2:
            print(f"| {op} | {cell('old', op)} | {cell('new', op)} |")
    total = {k: [sum(v[0] for v in t.values()) for t in ts] for k, ts in tables.items()}
    print(
        f"| total | {min(total['old']):.0f}-{max(total['old']):.0f} | {min(total['new']):.0f}-{max(total['new']):.0f} |"
    )


def measure(n: int, layers: int = 12, heads: int = 12, head_dim: int = 64) -> dict[str, float]:
    r = lazy_result(n, layers=layers, heads=heads, kv_heads=heads, head_dim=head_dim)
    old = aw.runner.set_dense_budget(0)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            before = _views(r, n, layers, heads)
        # a fresh run: the pass deferred as the runner defers it; the first view starts it in a background thread
        # (LazyStack.warm_summary) and draws its head from that head's own pass (LazyStack.head_summary)
        stack = LazyStack(r.stack().layers)
        fresh = r.replace(attention=stack)
        stack.defer_summary(
            functools.partial(headstats.summarise, causal=True, special_rows=np.flatnonzero(r.special_mask))
        )
        cpu0, wall0 = time.process_time(), time.perf_counter()
        heat_cpu, heat_wall, w = thread_timed(lambda: aw.AttentionHeatmap(fresh, head=1))
        mv_cpu, mv_wall, _ = thread_timed(lambda: aw.ModelView(fresh))
        pending = stack.summary_pending
        wait_cpu, _, _ = thread_timed(lambda: stack.summary)  # waits for the background pass (no second one)
        pass_s = time.process_time() - cpu0 - heat_cpu - mv_cpu - wait_cpu  # the background thread's CPU
        pass_wall = time.perf_counter() - wall0
        after = _views(fresh, n, layers, heads)
    finally:
        aw.runner.set_dense_budget(old)
    out = {f"{k} (before)": v for k, v in before.items()}
    out["fresh run: heatmap first payload, kernel thread CPU (pass in the background)"] = heat_cpu
    out["fresh run: heatmap first payload, wall"] = heat_wall
    out["fresh run: heatmap rows read per block"] = w._payload["rows_used"]
    out["fresh run: model view first payload, kernel thread CPU"] = mv_cpu
    out["fresh run: model view first payload, wall"] = mv_wall
    out["fresh run: pass still pending after both opened (1 = yes)"] = float(pending)
    out["statistics + overview pass (once per result, background thread CPU)"] = pass_s
    out["statistics + overview pass, wall from the first view"] = pass_wall
    out.update({f"{k} (after)": v for k, v in after.items()})
    return out


def _size(arg: str) -> tuple[int, int]:
    n, _, layers = arg.partition("x")
    return int(n), int(layers or 12)


if __name__ == "__main__":
    args = sys.argv[1:]
    if "--against" in args:  # --against REV [--repeat N] [--ops] [sizes]: the ratio before and after, by turns
        at = args.index("--against")
        rev, args = args[at + 1], args[:at] + args[at + 2 :]
        repeat = 5
        if "--repeat" in args:
            at = args.index("--repeat")
            repeat, args = int(args[at + 1]), args[:at] + args[at + 2 :]
        profile_ops = "--ops" in args
        sizes = [_size(a) for a in args if a != "--ops"] or [(2048, 1), (8192, 1)]
        against(rev, sizes, repeat)
        if profile_ops:
            for n, _layers in sizes:
                ops(rev, n)
        sys.exit()
    smoke = "--smoke" in sys.argv[1:]
    given = [_size(a) for a in sys.argv[1:] if a != "--smoke"]
    sizes = given or ([(64, 2), (256, 2)] if smoke else [(512, 12), (8192, 12), (32768, 2)])
    shape = {"heads": 2, "head_dim": 8} if smoke else {}
    rows = {}
    fresh = subprocess.run(
        [
            sys.executable,
            "-c",
            "import time; t = time.process_time(); import attnwidgets.widgets; print(time.process_time() - t)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    imports = float(fresh.stdout)
    aw.AttentionHeatmap(lazy_result(8, layers=1, heads=2, kv_heads=2, head_dim=8))  # the widgets' imports, paid once
    ratios = {}
    for n, layers in sizes:
        rows[n, layers] = measure(n, layers=layers, **shape)
        ratios[n, layers] = pass_against_softmax(
            lazy_result(
                n,
                layers=1,
                heads=shape.get("heads", 12),
                kv_heads=shape.get("heads", 12),
                head_dim=shape.get("head_dim", 64),
            )
        )
        print(f"done {n} tokens x {layers} layers", file=sys.stderr, flush=True)
    names = list(next(iter(rows.values())))
    import torch

    heads = shape.get("heads", 12)
    print(f"importing the views in a fresh process (a fresh kernel's first view pays it once): {imports:.3f} s CPU")
    print(
        f"CPU seconds of this process (torch threads: {torch.get_num_threads()}); {heads} heads of width "
        f"{shape.get('head_dim', 64)}, layers as each column says"
    )
    print("| figure | " + " | ".join(f"{n} tokens, {layers} x {heads}" for n, layers in sizes) + " |")
    print("|---" * (len(sizes) + 1) + "|")
    for name in names:
        vals = [rows[size][name] for size in sizes]
        timed_row = any(w in name for w in ("payload", "fetch", "switch", "pass (", "wall"))
        cells = [f"{v:.3f} s" if timed_row else f"{v:g}" for v in vals]
        print(f"| {name} | " + " | ".join(cells) + " |")
    # issue 33 §7's targets, at 8k on 12 x 12: a head switch before the statistics pass <= 0.1 s; the pass <= 1.3x one
    # causal matmul + softmax over the same weights (one layer here: the ratio does not depend on the layer count)
    print("\n| target | " + " | ".join(f"{n} tokens" for n, _ in sizes) + " |")
    print("|---" * (len(sizes) + 1) + "|")
    switch = [rows[size]["head switch (before)"] for size in sizes]
    print(
        "| head switch before the pass, CPU / 0.1 s | "
        + " | ".join(f"{v:.3f} s = {v / 0.1:.2f}x" for v in switch)
        + " |"
    )
    print(
        "| head switch before the pass, wall | "
        + " | ".join(f"{rows[size]['head switch, wall (before)']:.3f} s" for size in sizes)
        + " |"
    )
    for what in ("CPU", "wall"):
        print(
            f"| statistics pass / causal matmul + softmax, {what} (target 1.3x) | "
            + " | ".join(
                f"{ratios[size][f'pass {what}'] / ratios[size][f'matmul+softmax {what}']:.2f}x "
                f"({ratios[size][f'pass {what}']:.2f} / {ratios[size][f'matmul+softmax {what}']:.2f} s)"
                for size in sizes
            )
            + " |"
        )
    print(f"| importing the views in a fresh process, CPU | {imports:.3f} s (issue 33: 1.1 s) |")
