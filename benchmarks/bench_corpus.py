"""Corpus statistics over short texts: CPU time of ``aw.studies.corpus_stats`` against the forward passes it rests on.

Usage::

    python benchmarks/bench_corpus.py                 # the shipped corpus (293 sentences), bundled 6 x 12 and 12 x 12
    python benchmarks/bench_corpus.py --n 100         # the first 100 sentences
    python benchmarks/bench_corpus.py --smoke         # 8 sentences on a 2 x 2 BERT: that it runs (CI)

Per model, over the same N sentences cut into the same batches (sorted by length, ``--batch-size`` a batch, the
shards ``corpus_stats`` makes), each row is the CPU time (``time.process_time``: on a shared, loaded box wall time
measures the neighbours) of

- a plain SDPA forward of the same weights (``attn_implementation="sdpa"``, no weights returned): the floor, since
  statistics of attention need at least the forward that makes it;
- transformers' eager attention with ``output_attentions=True`` (what a forward that returns the weights costs);
- corpus statistics before issue 26: the padded maps of every layer returned and measured in numpy
  (``CorpusWork(in_forward=False)``, still the path of ``words=`` and ``distances=``);
- corpus statistics now: the weights summed in the forward by our attention function's hook
  (``CorpusWork()``, and ``corpus_stats(...)`` itself, planning and merging shards included),

each as a ratio to the SDPA forward. Every row covers the same N sentences, so the ratio is the ratio per sentence.
The forwards are timed on inputs encoded beforehand; the statistics rows include tokenising, which a study from texts
cannot skip (its own row says what it costs: SDPA + tokenising is the floor of a study from texts). It runs with one
thread (OMP, MKL and torch set to 1 before torch starts), the median of ``--repeat`` runs, the rows interleaved.

Issue 26's target: corpus statistics <= 1.15x a plain SDPA forward. Prints a table; asserts nothing.
"""

from __future__ import annotations

import os

for _name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ[_name] = "1"  # before torch and numpy start their pools

import argparse  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from pathlib import Path  # noqa: E402

TARGET = 1.15


def _random_bert(layers: int, heads: int, hidden: int, ffn: int) -> str:
    """A randomly initialised BERT of this shape with the bundled WordPiece tokenizer, saved to a temp folder."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    from attnwidgets.runner.loading import default_model_path

    torch.manual_seed(0)
    tok = AutoTokenizer.from_pretrained(default_model_path())
    cfg = BertConfig(num_hidden_layers=layers, num_attention_heads=heads, hidden_size=hidden, intermediate_size=ffn,
                     vocab_size=tok.vocab_size, max_position_embeddings=512)
    folder = Path(tempfile.mkdtemp())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        BertModel(cfg).save_pretrained(folder)
        tok.save_pretrained(folder)
    return str(folder)


def _documents(sentences: list[str], tokens: int) -> list[str]:
    """Consecutive sentences joined while the bundled tokenizer counts at most ``tokens`` tokens (with [CLS], [SEP])."""
    from transformers import AutoTokenizer

    from attnwidgets.runner.loading import default_model_path

    tok = AutoTokenizer.from_pretrained(default_model_path())
    docs, current = [], ""
    for sentence in sentences:
        joined = f"{current} {sentence}".strip()
        if current and len(tok(joined)["input_ids"]) > tokens:
            docs.append(current)
            joined = sentence
        current = joined
    return [*docs, current] if current else docs


def _cpu(fn) -> float:
    c0 = time.process_time()
    fn()
    return time.process_time() - c0


def measure(name: str, folder: str | None, texts: list[str], batch_size: int, repeat: int
            ) -> tuple[list[tuple[str, float]], int]:
    """(row label, median CPU seconds) for one model, and the tokens of the N texts (after truncation)."""
    import torch

    import attnwidgets as aw
    from attnwidgets.runner.loading import default_model_path
    from attnwidgets.studies import shards
    from attnwidgets.studies.corpus import CorpusWork

    runner = aw.runner.get_runner(folder)
    path = folder if folder is not None else default_model_path()
    items = [(t, None) for t in texts]
    plan = shards.plan(items, per_shard=batch_size, lengths=[len(t) for t in texts])
    batches = [shard.items for shard in plan]
    ordered = [it for b in batches for it in b]
    encoded = [runner.encode([t for t, _ in b], [None] * len(b), None, "warn").inputs for b in batches]
    cls = type(runner.model)
    sdpa = cls.from_pretrained(path, attn_implementation="sdpa").eval()
    eager = cls.from_pretrained(path, attn_implementation="eager").eval()

    def tokenise() -> None:
        for b in batches:
            runner.encode([t for t, _ in b], [None] * len(b), None, "warn")

    def sdpa_forward() -> None:
        with torch.inference_mode():
            for inputs in encoded:
                sdpa(**inputs)

    def eager_forward() -> None:
        with torch.inference_mode():
            for inputs in encoded:
                eager(**inputs, output_attentions=True)

    def before() -> None:
        CorpusWork(batch_size=batch_size, in_forward=False)(runner, ordered)

    def after() -> None:
        CorpusWork(batch_size=batch_size)(runner, ordered)

    def public() -> None:
        aw.studies.corpus_stats(texts, model=runner, batch_size=batch_size, progress=False)

    rows = {"plain SDPA forward (the floor)": sdpa_forward, "tokenising the batches (runner.encode)": tokenise,
            "eager forward + output_attentions": eager_forward,
            "corpus_stats before (maps padded, numpy)": before, "corpus_stats now (summed in the forward)": after,
            "aw.studies.corpus_stats(...) now, shards and merge": public}
    for fn in rows.values():  # warm: first calls allocate and load kernels
        fn()
    times: dict[str, list[float]] = {k: [] for k in rows}
    for _ in range(repeat):
        for label, fn in rows.items():
            times[label].append(_cpu(fn))
    tokens = sum(int(e["attention_mask"].sum()) for e in encoded)
    return [(label, statistics.median(v)) for label, v in times.items()], tokens


def main() -> None:
    import torch

    torch.set_num_threads(1)
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=None, help="sentences of the shipped corpus (default: all)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--only", choices=["bundled", "bert-12x12"], default=None)
    parser.add_argument("--doc-tokens", type=int, default=None,
                        help="join consecutive sentences into documents of up to this many tokens (e.g. 512)")
    parser.add_argument("--smoke", action="store_true", help="8 sentences on a 2 x 2 BERT, one repeat")
    args = parser.parse_args()

    from attnwidgets.data import load_corpus

    corpus = load_corpus()
    if args.doc_tokens:
        corpus = _documents(corpus, args.doc_tokens)
    n = 8 if args.smoke else (args.n or len(corpus))
    texts = [corpus[i % len(corpus)] for i in range(n)]
    if args.smoke:
        models = {"bert-2x2 (random)": _random_bert(2, 2, 32, 64)}
        repeat, batch_size = 1, 4
    else:
        models = {}
        if args.only in (None, "bundled"):
            models["bundled all-MiniLM-L6-v2, 6 x 12"] = None
        if args.only in (None, "bert-12x12"):
            models["bert-base-shaped 12 x 12 (random)"] = _random_bert(12, 12, 768, 3072)
        repeat, batch_size = args.repeat, args.batch_size
    words = sum(len(t.split()) for t in texts)
    what = f"documents of up to {args.doc_tokens} tokens joined from" if args.doc_tokens else "sentences of"
    print(f"corpus statistics, N = {n} {what} the shipped corpus ({words / n:.1f} words each on average), "
          f"batches of {batch_size}, 1 thread, CPU s (median of {repeat}); the ratio to SDPA is the ratio per "
          f"sentence (every row covers the same N). Target: <= {TARGET}x SDPA.")
    for name, folder in models.items():
        rows, tokens = measure(name, folder, texts, batch_size, repeat)
        floor = rows[0][1]
        print(f"\n{name}: {tokens / n:.1f} tokens per text")
        print("| path | CPU s | ms / sentence | / SDPA fwd |")
        print("|---|---|---|---|")
        for label, cpu in rows:
            print(f"| {label} | {cpu:.3f} | {1000 * cpu / n:.2f} | {cpu / floor:.2f}x |")


if __name__ == "__main__":
    main()
