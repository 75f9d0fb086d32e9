"""Train the bundled encoder's masked-LM head (attnwidgets/data/mlm_head.npz) and measure the variants.

The encoder (all-MiniLM-L6-v2) stays frozen; the head (:class:`attnwidgets.studies.masked_lm.MLMHead`: dense, GELU,
LayerNorm, decoder tied to the word embeddings, a bias) reads the hidden state of one layer at each masked position.
Training targets come from BERT's 80/10/10 rule as the students see it,
:func:`attnwidgets.teaching.objectives.bert_mask`, applied ``--draws`` times to each training text. Training
texts: the train part of
:func:`attnwidgets.data.split_documents` ("shipped"), optionally plus English prose found offline on this machine
("docstrings": paragraphs of the module docstrings of Python's standard library, of the Python running this script).
Only the head's weights are shipped, never that text.

Variants are chosen on the validation part; the held-out part is reported with
:func:`attnwidgets.studies.masked_lm.fill_mask_accuracy`'s definition (single-piece words masked one at a time, top-k,
special tokens excluded), beside :func:`attnwidgets.studies.masked_lm.frequency_baseline`. Seeded; features are cached.

    python benchmarks/train_mlm_head.py [--layers 3 4 5 6] [--extra docstrings] [--write]
    python benchmarks/train_mlm_head.py --smoke    # 4 documents per part, layer 6, one epoch: that it runs (CI)
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

import attnwidgets as aw
from attnwidgets.data import data_path, split_documents
from attnwidgets.studies.masked_lm import HEAD_FILE, MLMHead, fill_mask_accuracy, frequency_baseline, mask_cases
from attnwidgets.teaching.objectives import bert_mask

CACHE = Path("/tmp/attnwidgets_mlm_features")


def docstring_paragraphs(limit: int) -> list[str]:
    """Prose paragraphs (>= 12 words, letters mostly, no code) of the standard library's module docstrings."""
    out: list[str] = []
    stdlib = Path(sys.base_prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}"
    for path in sorted(stdlib.glob("*.py")) + sorted(stdlib.glob("*/*.py")):
        if "test" in path.parts or "idlelib" in path.parts:
            continue
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef):
                continue
            doc = ast.get_docstring(node)
            if not doc:
                continue
            for para in re.split(r"\n\s*\n", doc):
                text = " ".join(para.split())
                words = text.split()
                if len(words) < 12 or re.search(r"[{}\[\]<>=_*`|\\#@$]|\(\)|>>>|::", text):
                    continue
                if sum(ch.isalpha() or ch == " " for ch in text) / len(text) < 0.9:
                    continue
                out.append(text)
    rng = np.random.default_rng(0)
    rng.shuffle(out)
    return out[:limit]


def hidden_at(runner: Any, inputs: list[np.ndarray], positions: list[np.ndarray], batch: int = 32
              ) -> torch.Tensor:
    """Hidden states of every layer (embeddings = 0 .. last) at the given positions: (targets, layers + 1, hidden)."""
    tok = runner.tokenizer
    order = np.argsort([len(x) for x in inputs], kind="stable")
    feats: list[torch.Tensor | None] = [None] * len(inputs)
    for s in range(0, len(inputs), batch):
        idx = order[s:s + batch]
        width = max(len(inputs[i]) for i in idx)
        ids = torch.full((len(idx), width), tok.pad_token_id, dtype=torch.long)
        att = torch.zeros((len(idx), width), dtype=torch.long)
        for j, i in enumerate(idx):
            ids[j, :len(inputs[i])] = torch.as_tensor(inputs[i])
            att[j, :len(inputs[i])] = 1
        with torch.inference_mode():
            hs = runner.model(input_ids=ids, attention_mask=att, output_hidden_states=True,
                              return_dict=True).hidden_states
        stack = torch.stack(hs, 1)                                   # (batch, layers + 1, width, hidden)
        for j, i in enumerate(idx):
            feats[i] = stack[j, :, torch.as_tensor(positions[i])].permute(1, 0, 2).clone()
    return torch.cat([f for f in feats if f is not None])


def training_features(runner: Any, texts: list[str], draws: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    tok = runner.tokenizer
    rng = np.random.default_rng(seed)
    inputs, positions, targets = [], [], []
    for d in texts:
        ids = tok(d, truncation=True, max_length=128)["input_ids"]
        special = tok.get_special_tokens_mask(ids, already_has_special_tokens=True)
        for _ in range(draws):
            m = bert_mask(ids, special, rng, mask_id=tok.mask_token_id, vocab_size=tok.vocab_size)
            inputs.append(m.ids)
            positions.append(m.positions)
            targets.append(m.targets)
    return hidden_at(runner, inputs, positions), torch.from_numpy(np.concatenate(targets))


def _cached(name: str, make: Any) -> Any:
    CACHE.mkdir(exist_ok=True)
    path = CACHE / f"{name}.pt"
    if path.exists():
        return torch.load(path)
    t0 = time.perf_counter()
    value = make()
    torch.save(value, path)
    print(f"  {name}: {time.perf_counter() - t0:.0f} s", flush=True)
    return value


def eval_features(runner: Any, docs: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    c = mask_cases(runner.tokenizer, docs)
    return hidden_at(runner, [np.asarray(x) for x in c.inputs], [np.asarray([p]) for p in c.positions]), \
        torch.tensor(c.targets)


def accuracy(score: Any, x: torch.Tensor, y: torch.Tensor, special: list[int], ks: tuple[int, ...] = (1, 5)
             ) -> dict[int, float]:
    """fill_mask_accuracy's rule on precomputed hidden states (checked against it for the chosen head)."""
    with torch.no_grad():
        logits = score(x)
    logits[:, special] = -torch.inf
    top = torch.topk(logits, max(ks), -1).indices
    return {k: float((top[:, :k] == y[:, None]).any(1).float().mean()) for k in ks}


def train_head(emb: torch.Tensor, x: torch.Tensor, y: torch.Tensor, log_freq: torch.Tensor, epochs: int, seed: int,
               lr: float = 2e-3, batch: int = 128) -> MLMHead:
    torch.manual_seed(seed)
    head = MLMHead(emb)
    with torch.no_grad():
        head.dense.weight.copy_(torch.eye(emb.shape[1]) + 0.02 * torch.randn(emb.shape[1], emb.shape[1]))
        head.dense.bias.zero_()
        head.bias.copy_(log_freq)
        # A closed vocabulary: the softmax is trained over the pieces that are ever a target (a few thousand, not
        # 30,522: several times faster on a CPU); every other piece keeps a bias far below, so it is never guessed,
        # as the frequency baseline never guesses it.
        seen = torch.unique(y)
        head.bias[torch.ones(len(head.bias), dtype=torch.bool).index_fill_(0, seen, False)] = log_freq[seen].min() - 20
    local = torch.full((len(head.bias),), -1, dtype=torch.long)
    local[seen] = torch.arange(len(seen))
    y_local, emb_seen = local[y], emb[seen]
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW([p for p in head.parameters() if p.requires_grad], lr=lr, weight_decay=0.01)
    for _ in range(epochs):
        order = torch.randperm(len(y), generator=gen)
        for i in range(0, len(y), batch):
            idx = order[i:i + batch]
            logits = head.transform(x[idx]) @ emb_seen.T + head.bias[seen]
            loss = torch.nn.functional.cross_entropy(logits, y_local[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
    return head.eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--layers", type=int, nargs="+", default=[3, 4, 5, 6])
    parser.add_argument("--extra", choices=["none", "docstrings"], nargs="+", default=["none", "docstrings"])
    parser.add_argument("--n-extra", type=int, default=1500)
    parser.add_argument("--draws", type=int, default=3)
    parser.add_argument("--epochs", type=int, nargs="+", default=[4])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", action="store_true", help="write the chosen head to attnwidgets/data/mlm_head.npz")
    parser.add_argument("--smoke", action="store_true",
                        help="4 documents per part, layer 6, shipped text only, one draw and epoch, no feature cache: "
                             "that the script runs (CI); its numbers mean nothing")
    args = parser.parse_args()
    if args.smoke:
        if args.write:
            parser.error("--smoke trains on 4 documents: never --write its head")
        args.layers, args.extra, args.draws, args.epochs = [6], ["none"], 1, [1]

    torch.manual_seed(args.seed)
    runner = aw.runner.get_runner()
    tok = runner.tokenizer
    emb = runner.model.get_input_embeddings().weight.detach().float()
    special = sorted(set(tok.all_special_ids))
    parts = split_documents()
    if args.smoke:
        parts = {name: docs[:4] for name, docs in parts.items()}
    print("features (cached in /tmp):" if not args.smoke else "features (smoke: not cached):", flush=True)
    cached = _cached if not args.smoke else lambda _name, make: make()
    x_s, y_s = cached(f"shipped_d{args.draws}_s{args.seed}",
                      lambda: training_features(runner, parts["train"], args.draws, args.seed))
    extra: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
    if "docstrings" in args.extra:
        texts = docstring_paragraphs(args.n_extra)
        words = sum(len(t.split()) for t in texts)
        print(f"  docstrings: {len(texts)} paragraphs, {words} words", flush=True)
        extra["docstrings"] = cached(f"docstrings_{args.n_extra}_s{args.seed}",
                                     lambda: training_features(runner, texts, 1, args.seed))
    val = cached("validation", lambda: eval_features(runner, parts["validation"]))
    held = cached("held_out", lambda: eval_features(runner, parts["held_out"]))

    base = {name: frequency_baseline(docs=parts[name]) for name in ("validation", "held_out")}
    rows: list[dict[str, Any]] = [{"variant": "word frequency (baseline)", "layer": None,
                                   "val top-1": base["validation"][1], "val top-5": base["validation"][5],
                                   "held-out top-1": base["held_out"][1], "held-out top-5": base["held_out"][5]}]
    heads: dict[str, tuple[MLMHead, int]] = {}
    for data in args.extra:
        x, y = x_s, y_s
        if data != "none":
            x, y = torch.cat([x_s, extra[data][0]]), torch.cat([y_s, extra[data][1]])
        counts = np.bincount(y.numpy(), minlength=tok.vocab_size).astype(np.float64)
        counts[special] = 0
        log_freq = torch.from_numpy(np.log((counts + 0.1) / (counts + 0.1).sum())).float()
        for layer in args.layers:
            for epochs in args.epochs:
                t0 = time.perf_counter()
                head = train_head(emb, x[:, layer], y, log_freq, epochs, args.seed)
                name = f"head on layer {layer}, shipped{' + ' + data if data != 'none' else ''}, {epochs} epochs"
                v = accuracy(head, val[0][:, layer], val[1], special)
                h = accuracy(head, held[0][:, layer], held[1], special)
                rows.append({"variant": name, "layer": layer, "n_targets": len(y), "val top-1": v[1],
                             "val top-5": v[5], "held-out top-1": h[1], "held-out top-5": h[5],
                             "seconds": round(time.perf_counter() - t0, 1)})
                heads[name] = (head, layer)
                print(f"  {name}: val {v[1]:.3f}/{v[5]:.3f} held-out {h[1]:.3f}/{h[5]:.3f} "
                      f"({rows[-1]['seconds']} s)", flush=True)
    chosen = max((r for r in rows if r["variant"] in heads), key=lambda r: (r["val top-1"] + r["val top-5"]))
    head, layer = heads[chosen["variant"]]
    arrays = {k: v.astype(np.float16) for k, v in head.arrays().items()}
    print(f"{'variant':60s} {'val@1':>6s} {'val@5':>6s} {'held@1':>7s} {'held@5':>7s}")
    for r in rows:
        print(f"{r['variant']:60s} {r['val top-1']:6.3f} {r['val top-5']:6.3f} {r['held-out top-1']:7.3f} "
              f"{r['held-out top-5']:7.3f}")
    print(f"chosen on validation: {chosen['variant']}")
    if args.write:
        path = data_path("corpus.txt").parent / HEAD_FILE
        report = {"seed": args.seed, "draws": args.draws, "chosen": chosen["variant"], "layer": layer,
                  "n_docs": {k: len(v) for k, v in parts.items()}, "table": rows}
        np.savez_compressed(path, **arrays, layer=np.array(layer),  # type: ignore[arg-type]
                            report=np.array(json.dumps(report)))
        from attnwidgets.studies import masked_lm
        masked_lm.forget_heads()
        check = fill_mask_accuracy()
        report["held_out_check"] = {"top-1": check[1], "top-5": check[5], "n": check.n}
        np.savez_compressed(path, **arrays, layer=np.array(layer),  # type: ignore[arg-type]
                            report=np.array(json.dumps(report)))
        print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB); fill_mask_accuracy on held-out: {check}")


if __name__ == "__main__":
    main()
