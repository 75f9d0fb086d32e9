"""On a CUDA machine: the runner's numbers on the GPU equal the CPU's, and the long-input costs on the GPU.

Usage::

    python benchmarks/gpu_check.py            # the checks, then 1k / 4k / 8k tokens on a 12 x 12 BERT-shaped model
    python benchmarks/gpu_check.py --quick    # the checks and 1k tokens
    python benchmarks/gpu_check.py --smoke    # without CUDA: the checks run CPU against CPU (that the script runs)

It needs only numpy, torch, tokenizers and transformers (the runner's own imports), so it runs under a GPU image's
Python without the widget stack. Tiny random models (GPT-2, Llama with grouped-query attention, Mistral with a
sliding window, Gemma 2 with soft-capping, BERT with an MLM head, Mixtral) are built from configs in a temporary
folder with a byte-level BPE tokenizer trained on a few sentences, then run through ``attnwidgets.runner`` on the
CPU (float32) and on CUDA (float32 and bfloat16):

* attention weights of ``Runner.run`` (largest difference; rows sum to 1);
* ``capture_qk`` (the step-through's softmax), with the RoPE step on rotary models;
* ``studies.patch_heads`` (noising, every head) and ``studies.logit_attribution`` (each head's share; the parts add up);
* greedy ``generate`` (the same tokens) and ``runner.route`` (the same experts).

Then the long-input table: CUDA time (events, after a warm-up) and peak GPU memory of a plain SDPA forward, of our
capture run (queries and keys kept) and of transformers' eager attention with ``output_attentions``, at each size.
Prints tables; exits non-zero when a check differs by more than its tolerance.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import torch

SENTENCES = [
    "The cat sat on the mat because it was warm.",
    "When Mary and John went to the store, John gave a drink to Mary.",
    "A quick brown fox jumps over the lazy dog near the river bank.",
    "Attention heads look at earlier tokens and copy what followed them before.",
]
TEXT = "When Mary and John went to the store, John gave a drink to"
CORRUPT = "When Mary and John went to the store, Mary gave a drink to"
#: float32 on two devices: different kernels and reduction orders
TOL32 = 1e-4
#: bfloat16 weights (attention still computed in float32) against float32
TOL16 = 3e-2


def bpe_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<|endoftext|>", "[MASK]"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(SENTENCES * 10, trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        unk_token="<|endoftext|>",
        mask_token="[MASK]",
        pad_token="<|endoftext|>",
    )


def build(root: Path, only: tuple[str, ...] | None = None) -> dict[str, str]:
    """Tiny seeded random models saved under ``root``: name -> folder."""
    import transformers as tf

    tok = bpe_tokenizer()
    v = len(tok)
    common = dict(vocab_size=v, max_position_embeddings=128, bos_token_id=0, eos_token_id=0, pad_token_id=0)
    specs = {
        "gpt2": (
            tf.GPT2LMHeadModel,
            tf.GPT2Config(
                n_layer=2, n_head=4, n_embd=32, vocab_size=v, n_positions=128, bos_token_id=0, eos_token_id=0
            ),
        ),
        "llama-gqa": (
            tf.LlamaForCausalLM,
            tf.LlamaConfig(
                num_hidden_layers=2,
                num_attention_heads=4,
                num_key_value_heads=2,
                hidden_size=32,
                intermediate_size=64,
                **common,
            ),
        ),
        "mistral-window": (
            tf.MistralForCausalLM,
            tf.MistralConfig(
                num_hidden_layers=2,
                num_attention_heads=4,
                num_key_value_heads=2,
                hidden_size=32,
                intermediate_size=64,
                sliding_window=4,
                **common,
            ),
        ),
        "gemma2-softcap": (
            tf.Gemma2ForCausalLM,
            tf.Gemma2Config(
                num_hidden_layers=2,
                num_attention_heads=4,
                num_key_value_heads=2,
                head_dim=8,
                hidden_size=32,
                intermediate_size=64,
                sliding_window=4,
                attn_logit_softcapping=0.5,
                query_pre_attn_scalar=8,
                **common,
            ),
        ),
        "bert-mlm": (
            tf.BertForMaskedLM,
            tf.BertConfig(
                num_hidden_layers=2,
                num_attention_heads=4,
                hidden_size=32,
                intermediate_size=64,
                vocab_size=v,
                max_position_embeddings=128,
                pad_token_id=0,
                architectures=["BertForMaskedLM"],
            ),
        ),
        "mixtral": (
            tf.MixtralForCausalLM,
            tf.MixtralConfig(
                num_hidden_layers=2,
                num_attention_heads=4,
                num_key_value_heads=2,
                hidden_size=32,
                intermediate_size=64,
                num_local_experts=4,
                num_experts_per_tok=2,
                **common,
            ),
        ),
    }
    out = {}
    for i, (name, (cls, cfg)) in enumerate(specs.items()):
        if only is not None and name not in only:
            continue
        torch.manual_seed(100 + i)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = cls(cfg)
            model.save_pretrained(root / name)
            tok.save_pretrained(root / name)
        out[name] = str(root / name)
    return out


ROWS: list[tuple[str, str, str, float, float, bool]] = []


def check(model: str, what: str, device: str, diff: float, tol: float) -> None:
    ROWS.append((model, what, device, diff, tol, bool(diff <= tol)))


def maxdiff(a, b) -> float:
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        return float("inf")
    return float(np.max(np.abs(a - b))) if a.size else 0.0


def checks(models: dict[str, str], gpu: str) -> None:
    for name, path in models.items():
        try:
            check_model(name, path, gpu)
        except Exception as exc:  # a failure is a row of the table, and the other models still run
            ROWS.append((name, f"raised {type(exc).__name__}: {str(exc)[:120]}", gpu, float("inf"), 0.0, False))


def check_model(name: str, path: str, gpu: str) -> None:
    from attnwidgets.runner import capture_qk, generate, get_runner, route
    from attnwidgets.studies import logit_attribution, patch_heads

    cpu = get_runner(path)
    targets = [(gpu, "float32", TOL32), (gpu, "bfloat16", TOL16)]
    text = TEXT.replace(" to", " [MASK] to") if name == "bert-mlm" else TEXT
    base = cpu.run(text)
    for device, dtype, tol in targets:
        other = get_runner(path, device=device, dtype=dtype)
        res = other.run(text)
        label = f"{device}/{dtype}"
        check(name, "run: attention", label, maxdiff(res.attention, base.attention), tol)
        check(name, "run: rows sum to 1", label, float(np.max(np.abs(res.attention.sum(-1) - 1))), 1e-4)
        if name == "bert-mlm" or dtype != "float32":
            continue
        rope = name in ("llama-gqa", "mistral-window")
        q0 = capture_qk(text, model=cpu, layer=1, rope=rope or None)
        q1 = capture_qk(text, model=other, layer=1, rope=rope or None)
        check(name, "capture_qk: weights", label, maxdiff(q1.weights, q0.weights), tol)
        if name == "mixtral":
            r0, r1 = route(text, model=cpu), route(text, model=other)
            same = np.array_equal(r0.experts, r1.experts)
            check(name, "route: same experts", label, 0.0 if same else 1.0, 0.0)
            continue
        p0 = patch_heads(text, CORRUPT, answer=[" Mary", " John"], model=cpu)
        p1 = patch_heads(text, CORRUPT, answer=[" Mary", " John"], model=other)
        check(name, "patch_heads: effects", label, maxdiff(p1.values, p0.values), 1e-3)
        if name != "gemma2-softcap":
            a0 = logit_attribution(base, " Mary", model=cpu)
            a1 = logit_attribution(text, " Mary", model=other)
            check(name, "logit_attribution: heads", label, maxdiff(a1.heads, a0.heads), 1e-3)
        g0 = generate(text, model=cpu, max_new_tokens=6)
        g1 = generate(text, model=other, max_new_tokens=6)
        check(name, "generate: same tokens", label, 0.0 if g0.result.tokens == g1.result.tokens else 1.0, 0.0)


def long_inputs(sizes: list[int], gpu: str, tiny: bool = False) -> list[dict]:
    """A 12 x 12 BERT-shaped random model (2 x 2, hidden 32, when ``tiny``): time and peak GPU memory at each size."""
    import transformers as tf

    from attnwidgets.runner import get_runner

    rows = []
    cuda = torch.device(gpu).type == "cuda"

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize()

    with tempfile.TemporaryDirectory() as tmp:
        tok = bpe_tokenizer()
        torch.manual_seed(0)
        cfg = tf.BertConfig(
            num_hidden_layers=2 if tiny else 12,
            num_attention_heads=2 if tiny else 12,
            hidden_size=32 if tiny else 768,
            intermediate_size=64 if tiny else 3072,
            vocab_size=len(tok),
            max_position_embeddings=max(sizes) + 8,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tf.BertModel(cfg).save_pretrained(tmp)
            tok.save_pretrained(tmp)
        words = " ".join((" ".join(SENTENCES) + " ").split() * (max(sizes) // 8 + 2))
        ours = get_runner(tmp, device=gpu)
        refs = {
            impl: tf.BertModel.from_pretrained(tmp, attn_implementation=impl).to(gpu).eval()
            for impl in ("sdpa", "eager")
        }
        for n in sizes:
            ids = tok(words, truncation=True, max_length=n, return_tensors="pt")["input_ids"][:, :n].to(gpu)
            text = tok.decode(ids[0])
            row: dict = {"tokens": n}
            for label, fn in (
                ("sdpa", lambda ids=ids: refs["sdpa"](ids)),
                ("eager", lambda ids=ids: refs["eager"](ids, output_attentions=True)),
                ("ours", lambda text=text: (ours.cache.clear(), ours.run(text))),
            ):
                try:
                    with torch.inference_mode():
                        fn()
                        sync()
                        if cuda:
                            torch.cuda.reset_peak_memory_stats()
                        start = time.perf_counter()
                        if PROFILER and label == "ours":
                            PROFILER[0].runcall(fn)
                        else:
                            fn()
                        sync()
                        row[label] = time.perf_counter() - start
                        row[label + "_peak"] = torch.cuda.max_memory_allocated() / 2**30 if cuda else float("nan")
                except torch.OutOfMemoryError:
                    row[label] = float("nan")
                    row[label + "_peak"] = float("nan")
            rows.append(row)
    return rows


def profile(n: int, gpu: str) -> int:
    import cProfile
    import pstats

    prof = cProfile.Profile()
    PROFILER.append(prof)
    long_inputs([n], gpu)
    pstats.Stats(prof).sort_stats("cumulative").print_stats(25)
    pstats.Stats(prof).sort_stats("tottime").print_stats(15)
    return 0


PROFILER: list = []


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--smoke", action="store_true", help="no CUDA: compare the CPU with itself (that it runs)")
    ap.add_argument("--profile", type=int, default=0, metavar="N",
                    help="only: where our run's time goes at N tokens (cProfile, the 25 largest cumulative)")
    args = ap.parse_args()
    has_cuda = torch.cuda.is_available()
    if not has_cuda and not args.smoke:
        print("no CUDA device: run with --smoke for the CPU-only run, or on a GPU machine")
        return 2
    gpu = "cuda" if has_cuda else "cpu"
    if args.profile:
        return profile(args.profile, gpu)
    print(f"torch {torch.__version__}, device {torch.cuda.get_device_name() if has_cuda else 'cpu'}")
    import transformers

    print(f"transformers {transformers.__version__}")
    with tempfile.TemporaryDirectory() as tmp:
        models = build(Path(tmp), ("gpt2",) if args.smoke else None)
        checks(models, gpu)
    print("\n| model | check | device/dtype | max difference | tolerance | ok |\n|---|---|---|---:|---:|---|")
    for model, what, device, diff, tol, ok in ROWS:
        print(f"| {model} | {what} | {device} | {diff:.2e} | {tol:.0e} | {'yes' if ok else 'NO'} |")
    failed = [r for r in ROWS if not r[5]]
    if has_cuda or args.smoke:
        sizes = [128] if args.smoke else [1024] if args.quick else [1024, 4096, 8192]
        rows = long_inputs(sizes, gpu, tiny=args.smoke)
        shape = "2 x 2" if args.smoke else "12 x 12"
        print(f"\n{shape} BERT-shaped random model on {gpu} (one forward after a warm-up; synchronised wall time)")
        print("| tokens | SDPA s | ours s | eager s | ours / SDPA | peak GiB: SDPA | ours | eager |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            print(
                f"| {r['tokens']} | {r['sdpa']:.4f} | {r['ours']:.4f} | {r['eager']:.4f} | "
                f"{r['ours'] / r['sdpa']:.2f}x | {r['sdpa_peak']:.2f} | {r['ours_peak']:.2f} | "
                f"{r['eager_peak']:.2f} |"
            )
    print(f"\n{len(ROWS) - len(failed)} of {len(ROWS)} checks within tolerance")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
