"""aw.generate (attention recorded as queries and keys, top-k per step) against plain ``model.generate``, same model.

Random GPT-2- and Llama-style configs (6 layers, hidden 384; the Llama one with 2 KV heads), a 32-token prompt, 64
new tokens, greedy, CPU. Prints one row per model: median seconds of each and their ratio (target <= 1.3x).

    PYTHONPATH=. python benchmarks/bench_generation.py [--smoke]

``--smoke``: 2 layers, hidden 32, an 8-token prompt, 4 new tokens, one repeat (that it runs, for CI).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

NEW = 64
REPEATS = 5


def _models(root: Path, layers: int = 6, hidden: int = 384, heads: int = 6) -> dict[str, str]:
    from conftest import _bpe_tokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

    tok = _bpe_tokenizer()
    torch.manual_seed(0)
    made = {
        f"gpt2 {layers}x{heads}, hidden {hidden}": GPT2LMHeadModel(GPT2Config(
            n_layer=layers, n_head=heads, n_embd=hidden, vocab_size=len(tok), n_positions=256, bos_token_id=0,
            eos_token_id=0)),
        f"llama {layers}x{heads} (2 kv), hidden {hidden}": LlamaForCausalLM(LlamaConfig(
            num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=2, hidden_size=hidden,
            intermediate_size=hidden * 8 // 3, vocab_size=len(tok), max_position_embeddings=256, bos_token_id=0,
            eos_token_id=0, pad_token_id=0)),
    }
    out = {}
    for name, model in made.items():
        path = root / name.split()[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.save_pretrained(path)
            tok.save_pretrained(path)
        out[name] = str(path)
    return out


def _median(fn) -> float:
    fn()  # warm up
    times = []
    for _ in range(REPEATS):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    global NEW, REPEATS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny models, 4 new tokens, one repeat (CI)")
    args = parser.parse_args()
    prompt_len, sizes = 32, {}
    if args.smoke:
        NEW, REPEATS, prompt_len, sizes = 4, 1, 8, {"layers": 2, "hidden": 32, "heads": 4}
    from transformers import AutoModelForCausalLM

    import attnwidgets as aw

    prompt = "The cat sat on the mat because it was tired, and the dog barked at it. " * 2
    print(f"| model | aw.generate ({NEW} tokens, attention + top-5) | plain model.generate | ratio |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in _models(Path(tmp), **sizes).items():
            runner = aw.runner.get_runner(path)
            ids = runner.tokenizer([prompt], return_tensors="pt")["input_ids"][:, :prompt_len]
            text = runner.tokenizer.decode(ids[0])
            plain = AutoModelForCausalLM.from_pretrained(path, attn_implementation="sdpa").eval()
            kw = dict(max_new_tokens=NEW, min_new_tokens=NEW, do_sample=False, pad_token_id=0)

            def ours(text=text, path=path):
                aw.generate(text, path, max_new_tokens=NEW, min_new_tokens=NEW)

            def theirs(plain=plain, ids=ids, kw=kw):
                with torch.inference_mode():
                    plain.generate(ids, attention_mask=torch.ones_like(ids), **kw)

            a, b = _median(ours), _median(theirs)
            print(f"| {name} | {a * 1000:.0f} ms | {b * 1000:.0f} ms | {a / b:.2f}x |")


if __name__ == "__main__":
    main()
