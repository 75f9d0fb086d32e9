"""Head patching: time and peak memory of ``attnwidgets.studies.patch_heads`` vs TransformerLens's own way (when
importable), on the same randomly initialised GPT-2 saved to a folder.

Usage::

    python benchmarks/bench_patching.py            # a GPT-2-small-shaped model (12 x 12, 768) at 32 and 128 tokens
    python benchmarks/bench_patching.py --smoke    # a 2 x 4 GPT-2 at 16 tokens: that it runs (CI), in this process
    python benchmarks/bench_patching.py --words 96 --batches 1 2 4 12 auto
                                                   # attnwidgets at each max_batch: peak RSS and time per batch size

TransformerLens (4.x): ``TransformerBridge.boot_transformers(folder)``, ``run_with_cache`` on the corrupted tokens,
then one ``run_with_hooks`` per layer × head with a hook on ``blocks.{l}.attn.hook_z`` that swaps that head's slice,
scored by the logit difference at the last position: the loop its tutorials write. attnwidgets patches a layer's
heads as one batch of H rows (:mod:`attnwidgets.runner.patching`). Both score the same pair of answer tokens on the
same token ids; the table gives the largest difference of the two grids too. Each side runs in a fresh subprocess, so
peak RSS (Linux's ``/proc/self/clear_refs`` resets it) is its own; figures are CPU seconds of the process (all its
threads) and wall seconds, after loading the model (the load is timed apart). Prints a table; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

CLEAN = ("When Mary and John went to the store, John gave a drink to", "When Mary and John went to the store, Mary "
         "gave a drink to")
ANSWER = (" Mary", " John")


def _rss(key: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1]) * 1024
    return 0


def _measure(fn) -> tuple[float, float, int, object]:
    """(CPU s, wall s, peak RSS over what was resident before, fn's value)."""
    base = _rss("VmRSS:")
    Path("/proc/self/clear_refs").write_text("5")
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn()
    return time.process_time() - c0, time.perf_counter() - t0, _rss("VmHWM:") - base, out


def make_model(folder: Path, layers: int, heads: int, hidden: int, words: int) -> tuple[str, str]:
    """A random GPT-2 with a byte-level BPE tokenizer trained on the package's sample texts, saved to ``folder``;
    returns the (clean, corrupted) pair cut to ``words`` words each (the same token count)."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    import attnwidgets as aw

    texts = [p.read_text(encoding="utf-8") for p in sorted((Path(aw.__file__).parent / "data").glob("*.txt"))]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts + list(CLEAN) * 20, trainers.BpeTrainer(
        vocab_size=2000, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                                  unk_token="<|endoftext|>")
    torch.manual_seed(0)
    cfg = GPT2Config(n_layer=layers, n_head=heads, n_embd=hidden, vocab_size=len(tok), n_positions=words * 4 + 64,
                     bos_token_id=0, eos_token_id=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        GPT2LMHeadModel(cfg).save_pretrained(folder)
        tok.save_pretrained(folder)
    # a long shared prefix (the sample texts' words) before the IOI-style pair, so both inputs have the same length
    prefix = " ".join(" ".join(texts).split()[: max(0, words - len(CLEAN[0].split()))])
    return tuple(f"{prefix} {c}".strip() for c in CLEAN)  # type: ignore[return-value]


def child(side: str, folder: str, clean: str, corrupted: str) -> dict:
    """One side's patching grid, timed in this (fresh) process. ``side`` is "transformer_lens", "attnwidgets" (the
    default batch) or "attnwidgets:<max_batch>"."""
    import numpy as np
    import torch

    from attnwidgets.runner import get_runner

    runner = get_runner(folder)
    ids_clean = runner.encode([clean]).inputs["input_ids"]
    ids_corrupted = runner.encode([corrupted]).inputs["input_ids"]
    right, wrong = (runner.tokenizer.encode(w, add_special_tokens=False)[0] for w in ANSWER)
    batch = None
    if side.startswith("attnwidgets"):
        from attnwidgets.runner.patching import batch_rows
        from attnwidgets.studies import patch_heads

        given = side.partition(":")[2]
        max_batch = int(given) if given not in ("", "auto") else None
        batch = batch_rows(runner, int(ids_clean.shape[1]), max_batch)
        patch_heads(clean[:20], clean[:20], answer=ANSWER, model=runner, max_batch=max_batch)  # warm
        cpu, wall, peak, out = _measure(lambda: patch_heads(clean, corrupted, answer=ANSWER, model=runner,
                                                            max_batch=max_batch).values)
        load = 0.0
    else:
        from transformer_lens.model_bridge import TransformerBridge

        c0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bridge = TransformerBridge.boot_transformers(folder, device="cpu").eval()
        load = time.perf_counter() - c0

        def tl_grid() -> np.ndarray:
            with torch.inference_mode():
                _, cache = bridge.run_with_cache(ids_corrupted)
                grid = np.zeros((bridge.cfg.n_layers, bridge.cfg.n_heads))
                for layer in range(bridge.cfg.n_layers):
                    name = f"blocks.{layer}.attn.hook_z"
                    for head in range(bridge.cfg.n_heads):
                        def swap(z: torch.Tensor, hook: object, name: str = name, head: int = head) -> torch.Tensor:
                            z = z.clone()
                            z[:, :, head] = cache[name][:, :, head]
                            return z

                        logits = bridge.run_with_hooks(ids_clean, fwd_hooks=[(name, swap)])
                        grid[layer, head] = float(logits[0, -1, right] - logits[0, -1, wrong])
            return grid

        with torch.inference_mode():
            bridge(ids_clean[:, :4])  # warm
        cpu, wall, peak, out = _measure(tl_grid)
    return dict(side=side, tokens=int(ids_clean.shape[1]), cpu=cpu, wall=wall, peak=peak, load=load,
                grid=np.asarray(out).tolist(), threads=torch.get_num_threads(), batch=batch)


def transformer_lens_version() -> str | None:
    """TransformerLens's version when its ``TransformerBridge`` (4.x) is importable, else None."""
    from bench_long_context import transformer_lens_version as version_of

    return version_of("transformer_lens.model_bridge")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a 2 x 4 GPT-2 at 16 tokens (CI)")
    parser.add_argument("--words", type=int, nargs="*", help="input lengths in words (default 16 and 96)")
    parser.add_argument("--batches", nargs="*", metavar="N",
                        help="attnwidgets' max_batch values to run ('auto': the memory budget's; default: auto only)")
    parser.add_argument("--no-tl", action="store_true", help="leave TransformerLens out")
    parser.add_argument("--child", nargs=4, metavar=("SIDE", "FOLDER", "CLEAN", "CORRUPTED"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    import numpy as np

    shape = (2, 4, 32) if args.smoke else (12, 12, 768)
    sizes = [12] if args.smoke else (args.words or [16, 96])
    version = None if args.no_tl else transformer_lens_version()
    ours = [f"attnwidgets:{b}" for b in args.batches] if args.batches else ["attnwidgets"]
    sides = ours + (["transformer_lens"] if version else [])
    rows, failed = [], False
    for words in sizes:
        folder = Path(tempfile.mkdtemp())
        clean, corrupted = make_model(folder, *shape, words)
        grids = {}
        for side in sides:
            if args.smoke:  # that it runs: in this process (a fresh child's imports were most of a smoke run)
                row = json.loads(json.dumps(child(side, str(folder), clean, corrupted)))
            else:
                out = subprocess.run([sys.executable, __file__, "--child", side, str(folder), clean, corrupted],
                                     capture_output=True, text=True, check=False, env={**os.environ})
                if out.returncode:
                    print(f"{side} at {words} words: failed\n{out.stderr[-2000:]}")
                    failed = True
                    continue
                row = json.loads(out.stdout.strip().splitlines()[-1])
            grids[side] = np.array(row.pop("grid"))
            rows.append(row)
            print(f"done {side} {row['tokens']} tokens", file=sys.stderr, flush=True)
        first = grids.get(ours[0])
        for side, grid in grids.items():   # every grid against the first of ours
            if side != ours[0] and first is not None:
                next(r for r in rows[::-1] if r["side"] == side)["diff"] = float(np.abs(grid - first).max())
    layers, heads, hidden = shape
    threads = rows[0]["threads"] if rows else 0
    print(f"\nHead patching, every head of a random GPT-2 ({layers} layers x {heads} heads, d={hidden}), logit "
          f"difference at the last position; torch threads: {threads}")
    print(f"| side | tokens | runs | CPU s | wall s | peak RSS | load s | max abs diff vs {ours[0]} |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        ours_row = r["side"].startswith("attnwidgets")
        b = min(r.get("batch") or heads, heads)
        runs = (f"{layers} x {-(-heads // b)} batches of <= {b}" if ours_row else f"{layers * heads} + 1")
        diff = f"{r['diff']:.1e}" if "diff" in r else "-"
        load = f"{r['load']:.2f}" if not ours_row else "(runner)"
        print(f"| {r['side']} | {r['tokens']} | {runs} | {r['cpu']:.2f} | {r['wall']:.2f} | "
              f"{r['peak'] / 2**20:.0f} MiB | {load} | {diff} |")
    if version is None:
        print("transformer_lens: not installed (pip install 'attnwidgets[bench]', or beside the project: pip install "
              "--no-deps --target DIR transformer-lens==4.3.0 and PYTHONPATH=DIR); its row is left out.")
    else:
        print(f"transformer_lens {version}: TransformerBridge.boot_transformers(folder), run_with_cache(corrupted), "
              "then run_with_hooks(clean) with blocks.{l}.attn.hook_z of one head swapped, per head.")
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
