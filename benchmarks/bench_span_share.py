"""GenerationResult.span_share on a long generation: a random Llama-style model (GQA, RoPE) continues a prompt of
about 2,000 tokens for 1,000 greedy steps (attention recorded as queries and keys), then the share of every step's
attention on the prompt's first half is read for every layer and head. Prints the generation time, the span-share
time, the peak memory the span share allocates (tracemalloc: numpy's buffers), the bytes the queries and keys take
and what the dense attention would have taken.

    PYTHONPATH=. python benchmarks/bench_span_share.py [--smoke]

``--smoke``: a 64-token prompt and 16 steps (that it runs, for CI).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def _model(root: Path, positions: int) -> str:
    from conftest import _bpe_tokenizer
    from transformers import LlamaConfig, LlamaForCausalLM

    tok = _bpe_tokenizer()
    torch.manual_seed(0)
    cfg = LlamaConfig(num_hidden_layers=4, num_attention_heads=8, num_key_value_heads=2, hidden_size=128,
                      intermediate_size=256, vocab_size=len(tok), max_position_embeddings=positions,
                      bos_token_id=0, eos_token_id=0, pad_token_id=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        LlamaForCausalLM(cfg).save_pretrained(root)
        tok.save_pretrained(root)
    return str(root)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()
    prompt_tokens, steps = (64, 16) if args.smoke else (2000, 1000)
    from attnwidgets.runner.generation import generate

    with tempfile.TemporaryDirectory() as tmp:
        path = _model(Path(tmp), prompt_tokens + steps + 64)
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(path)
        words = "The cat sat on the mat because it was tired . " * 2000
        ids = tok(words)["input_ids"][:prompt_tokens - 1]
        prompt = tok.decode(ids)
        t0 = time.perf_counter()
        g = generate(prompt, path, max_new_tokens=steps, min_new_tokens=steps)
        t_gen = time.perf_counter() - t0
        P, N = g.prompt_length, g.n_steps
        L, H, T, S = g.result.attention_shape()
        span = (0, P // 2)
        g.span_share(span, heads=0, layers=0)  # warm up
        tracemalloc.start()
        t0 = time.perf_counter()
        share = g.span_share(span)
        t_share = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        held = g.result.stack("self").nbytes
        dense = L * H * T * S * 4
        print(f"prompt {P} tokens, {N} generated, {L} layers x {H} heads (lazy: {g.result.is_lazy})")
        print(f"generate: {t_gen:.1f} s")
        print(f"span_share{span}: {t_share:.2f} s, result {share.shape} {share.dtype}, peak allocated "
              f"{peak / 2**20:.1f} MiB; queries and keys held {held / 2**20:.1f} MiB; dense attention would be "
              f"{dense / 2**30:.2f} GiB")
        print(f"share on the prompt's first half, mean over layers and heads: step 0 {share[0].mean():.3f}, "
              f"last step {share[-1].mean():.3f}")


if __name__ == "__main__":
    main()
