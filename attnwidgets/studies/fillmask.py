"""Fill in the [MASK] with the bundled encoder: BERT's masking rule as code, and a small masked-LM head for it.

The bundled model (all-MiniLM-L6-v2, BERT architecture) ships without a masked-LM head, so it cannot say what belongs
in a ``[MASK]``. This module gives it one, trained offline on the text the package ships, with the encoder frozen:

- :func:`bert_mask` is BERT's 80/10/10 rule (Devlin et al. 2019, §3.1 and Appendix A.1): 15 % of the ordinary tokens
  become targets; of those 80 % are replaced by ``[MASK]``, 10 % by a random vocabulary entry, 10 % kept unchanged.
- :class:`MLMHead` has BERT's head shape: dense hidden→hidden, GELU, LayerNorm, then a decoder whose weight IS the
  encoder's input word-embedding matrix (tied, not copied or stored) plus a per-token bias. Only the dense layer, the
  LayerNorm and the bias are stored, in ``attnwidgets/data/mlm_head.npz`` (float16, ~0.4 MB).
- :func:`fill_mask` returns the top-k fillers of every ``[MASK]`` in a text. ``[MASK]`` may be written in any case,
  and ``<mask>`` (RoBERTa's spelling) is accepted too; ``___`` is not (underscores are ordinary text). A model with its
  own masked-LM head (``BertForMaskedLM`` and the like) uses that head; the bundled model uses the shipped one; any
  other model is an error.
- ``python -m attnwidgets.studies.fillmask --train`` re-trains the head (seeded; a few minutes on 2 CPU cores),
  prints the held-out table and writes the npz.

Train / held-out split: every document (a paragraph of ``corpus.txt``, a line of ``sentences.txt``, a review of
``sentiment.tsv``, a pair of ``sts_pairs.tsv``, a sentence of ``ud_sample.conllu``) goes to the held-out part when the
CRC-32 of its text is 0 mod 10 (about 10 %), before anything is trained; a tenth of the rest (3 mod 10) is the
validation part that chooses between variants.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch

from attnwidgets.data import data_path, load_corpus, load_paragraphs
from attnwidgets.runner.encoding import check_text
from attnwidgets.runner.runner import Runner, get_runner

__all__ = ["HEAD_FILE", "MLMHead", "NoMaskedLMHeadError", "bert_mask", "documents", "fill_mask", "fill_mask_logits",
           "fill_mask_view", "load_head", "normalise_masks", "split_documents"]

HEAD_FILE = "mlm_head.npz"
_MASK_SPELLING = re.compile(r"\[mask\]|<mask>", re.IGNORECASE)


class NoMaskedLMHeadError(ValueError):
    """The model has no masked-LM head, and it is not the bundled model (which has the shipped one)."""


# -- BERT's masking rule ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Masked:
    """One input after BERT's masking: the new ids, the target positions, their original ids and what happened."""

    ids: np.ndarray
    positions: np.ndarray
    targets: np.ndarray
    actions: list[str]


def bert_mask(ids: Sequence[int], special: Sequence[bool], rng: np.random.Generator, *, mask_id: int,
              vocab_size: int, rate: float = 0.15) -> Masked:
    """BERT's masking of one input: round(rate · ordinary tokens) targets (at least one), each replaced by
    ``[MASK]`` with probability 0.8, by a random vocabulary entry with 0.1, kept with 0.1.

    Special tokens ([CLS], [SEP]) are never targets. Targets are single word pieces, as BERT was first trained.

    Examples
    --------
    >>> m = bert_mask([101, 7, 8, 9, 10, 102], [True, False, False, False, False, True], np.random.default_rng(0),
    ...               mask_id=103, vocab_size=50)
    >>> len(m.positions), set(m.actions) <= {"[MASK]", "random token", "unchanged"}
    (1, True)
    """
    ids_arr = np.asarray(ids, dtype=np.int64)
    special_arr = np.asarray(special, dtype=bool)
    if ids_arr.shape != special_arr.shape:
        raise ValueError(f"ids and special must have the same length, got {ids_arr.shape} and {special_arr.shape}")
    if not 0 < rate < 1:
        raise ValueError(f"rate must be in (0, 1), got {rate}")
    candidates = np.flatnonzero(~special_arr)
    if len(candidates) == 0:
        raise ValueError("no ordinary token to mask: the input holds special tokens only")
    n_targets = max(1, round(rate * len(candidates)))
    positions = np.sort(rng.choice(candidates, n_targets, replace=False))
    new = ids_arr.copy()
    actions = []
    for pos in positions:
        u = rng.random()
        if u < 0.8:
            new[pos], action = mask_id, "[MASK]"
        elif u < 0.9:
            new[pos], action = int(rng.integers(vocab_size)), "random token"
        else:
            action = "unchanged"
        actions.append(action)
    return Masked(new, positions.astype(np.int64), ids_arr[positions], actions)


# -- the shipped text, split -----------------------------------------------------------------------------------------

def documents() -> list[str]:
    """Every document the package ships, in a fixed order (see the module docstring for what a document is)."""
    docs = [" ".join(p) for p in load_paragraphs()]
    docs += load_corpus("sentences")
    with open(data_path("sentiment.tsv"), encoding="utf-8") as f:
        docs += [row["text"].strip() for row in csv.DictReader(f, delimiter="\t")]
    with open(data_path("sts_pairs.tsv"), encoding="utf-8") as f:
        docs += [f"{row['sentence_a'].strip()} {row['sentence_b'].strip()}"
                 for row in csv.DictReader(f, delimiter="\t")]
    for line in data_path("ud_sample.conllu").read_text(encoding="utf-8").splitlines():
        if line.startswith("# text = "):
            docs.append(line[len("# text = "):].strip())
    seen: set[str] = set()
    return [d for d in docs if d and not (d in seen or seen.add(d))]  # type: ignore[func-returns-value]


def split_documents(docs: Sequence[str] | None = None) -> dict[str, list[str]]:
    """``{"train", "validation", "held_out"}``: by CRC-32 of each document mod 10 (0 held out, 3 validation)."""
    parts: dict[str, list[str]] = {"train": [], "validation": [], "held_out": []}
    for d in documents() if docs is None else docs:
        r = zlib.crc32(d.encode("utf-8")) % 10
        parts["held_out" if r == 0 else "validation" if r == 3 else "train"].append(d)
    return parts


# -- the head --------------------------------------------------------------------------------------------------------

class MLMHead(torch.nn.Module):
    """BERT's masked-LM head on a frozen encoder: dense → GELU → LayerNorm → tied decoder (+ bias).

    ``embeddings`` is the encoder's word-embedding weight itself (vocab × hidden); it is held by reference, so the
    decoder stays tied to the encoder, and it is not a parameter of this module.
    """

    def __init__(self, embeddings: torch.Tensor, eps: float = 1e-12) -> None:
        super().__init__()
        vocab, hidden = embeddings.shape
        self.embeddings = embeddings
        self.dense = torch.nn.Linear(hidden, hidden)
        self.norm = torch.nn.LayerNorm(hidden, eps=eps)
        self.bias = torch.nn.Parameter(torch.zeros(vocab))

    def transform(self, h: torch.Tensor) -> torch.Tensor:
        return self.norm(torch.nn.functional.gelu(self.dense(h)))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """Logits over the vocabulary for hidden states ``h`` (..., hidden)."""
        return self.transform(h) @ self.embeddings.T + self.bias

    def arrays(self) -> dict[str, np.ndarray]:
        return {"dense_weight": self.dense.weight.detach().numpy(), "dense_bias": self.dense.bias.detach().numpy(),
                "norm_weight": self.norm.weight.detach().numpy(), "norm_bias": self.norm.bias.detach().numpy(),
                "bias": self.bias.detach().numpy()}

    def load_arrays(self, arrays: dict[str, np.ndarray]) -> MLMHead:
        with torch.no_grad():
            for name, param in (("dense_weight", self.dense.weight), ("dense_bias", self.dense.bias),
                                ("norm_weight", self.norm.weight), ("norm_bias", self.norm.bias),
                                ("bias", self.bias)):
                value = torch.from_numpy(np.asarray(arrays[name], dtype=np.float32))
                if value.shape != param.shape:
                    raise ValueError(f"the stored head's {name} has shape {tuple(value.shape)}, the model needs "
                                     f"{tuple(param.shape)}")
                param.copy_(value)
        return self


BUNDLED_NAME = "all-MiniLM-L6-v2 (bundled)"  # the display name runner.loading gives the bundled model


def _is_bundled(runner: Runner) -> bool:
    return runner.head == "base" and runner.info.name == BUNDLED_NAME


_heads: dict[int, MLMHead] = {}


def load_head(runner: Runner | None = None, path: str | Path | None = None) -> MLMHead:
    """The shipped masked-LM head, tied to ``runner``'s (the bundled model's) word embeddings."""
    runner = get_runner(runner)
    if path is None and id(runner) in _heads:
        return _heads[id(runner)]
    file = Path(path) if path is not None else data_path(HEAD_FILE)
    with np.load(file) as z:
        arrays = {k: z[k] for k in z.files}
    emb = cast(Any, runner.model).get_input_embeddings().weight.detach()
    head = MLMHead(emb.float().cpu()).load_arrays(arrays).eval()
    if path is None:
        _heads[id(runner)] = head
    return head


# -- filling in ------------------------------------------------------------------------------------------------------

def normalise_masks(text: object, mask_token: str = "[MASK]") -> str:
    """``text`` with every accepted spelling of the mask (``[MASK]`` in any case, ``<mask>``) as ``mask_token``;
    TypeError or ValueError for a non-string, an empty text or a text without a mask."""
    check_text(text, "text")
    assert isinstance(text, str)
    out = _MASK_SPELLING.sub(mask_token, text)
    if mask_token not in out:
        raise ValueError(f"no [MASK] in the text {text[:80]!r}: write [MASK] (or <mask>) where a word is missing, "
                         "e.g. 'The chef tasted the [MASK].'")
    return out


def fill_mask_logits(text: str, model: str | Runner | None = None) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``(tokens, mask positions, logits (n_masks, vocab))`` for a text with one or more [MASK]."""
    runner = get_runner(model)
    tok = runner.tokenizer
    if tok.mask_token is None:
        raise NoMaskedLMHeadError(f"{runner.info.name!r} has no mask token, so it cannot fill in a [MASK]")
    if runner.head != "masked-lm" and not _is_bundled(runner):
        raise NoMaskedLMHeadError(
            f"{runner.info.name!r} has no masked-LM head (it was loaded as {runner.head!r}), and the shipped head fits "
            "the bundled model only: use model=None, or a model saved with its masked-LM head (e.g. "
            "bert-base-uncased)")
    text = normalise_masks(text, tok.mask_token)
    enc = tok(text, return_tensors="pt", truncation=False)
    n = enc["input_ids"].shape[1]
    limit = runner.info.max_length if getattr(runner.info, "max_length", 0) else 512
    if n > limit:
        raise ValueError(f"the text is {n} tokens long; {runner.info.name!r} reads at most {limit}")
    ids = enc["input_ids"][0]
    positions = torch.nonzero(ids == tok.mask_token_id).flatten()
    inputs = {k: v.to(runner.device) for k, v in enc.items()}
    with torch.inference_mode():
        out = runner.model(**inputs, return_dict=True)
        if runner.head == "masked-lm":
            logits = out.logits[0, positions.to(runner.device)].float().cpu()
        else:
            h = out.last_hidden_state[0, positions.to(runner.device)].float().cpu()
            logits = load_head(runner)(h)
    tokens = tok.convert_ids_to_tokens(ids.tolist())
    return tokens, positions.numpy().astype(np.int64), logits.numpy()


def fill_mask(text: str, k: int = 5, model: str | Runner | None = None) -> Any:
    """The top-``k`` fillers of every [MASK] in ``text``, as a DataFrame.

    Columns: ``mask`` (0 for the first [MASK], 1 for the next, ...), ``position`` (its index among the tokens,
    [CLS] = 0, the same index as ``aw.run(text).tokens``), ``rank`` (1 = most probable), ``token`` and
    ``probability`` (the softmax over the whole vocabulary at that position; the k shown sum to at most 1).

    The bundled model (``model=None``) uses the shipped head (:func:`load_head`); a model with its own masked-LM head
    uses that; any other model raises :class:`NoMaskedLMHeadError`. Each [MASK] is predicted with the others still
    masked (one forward pass, as BERT is trained), not filled in one after another.
    """
    import pandas as pd

    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be a positive whole number, got {k!r}")
    runner = get_runner(model)
    _, positions, logits = fill_mask_logits(text, runner)
    probs = torch.softmax(torch.from_numpy(logits).double(), -1).numpy()
    k = min(int(k), probs.shape[1])
    rows = []
    for m, (pos, p) in enumerate(zip(positions, probs, strict=True)):
        top = np.argsort(-p, kind="stable")[:k]
        for rank, t in enumerate(top, 1):
            rows.append({"mask": m, "position": int(pos), "rank": rank,
                         "token": runner.tokenizer.convert_ids_to_tokens(int(t)), "probability": float(p[t])})
    return pd.DataFrame(rows, columns=["mask", "position", "rank", "token", "probability"])


def fill_mask_view(text: str, k: int = 5, model: Any = None) -> dict[str, Any]:
    """What the widget and its static twin draw for ``text``: ``tokens``, ``positions`` of the masks, ``fills``
    (per mask: ``tokens`` and ``probs`` of the top k) and ``rows`` ((masks, layers, heads, tokens) float32: the
    attention of each [MASK] position over all tokens) and ``model`` (its name).

    Examples
    --------
    >>> v = fill_mask_view("The [MASK] sat on the mat.", k=3)
    >>> v["rows"].shape[:3], len(v["fills"][0]["tokens"])
    ((1, 6, 12), 3)
    """
    runner = get_runner(model)
    table = fill_mask(text, k=k, model=runner)
    clean = normalise_masks(text, runner.tokenizer.mask_token or "[MASK]")
    result = runner.run(clean)
    positions = [int(p) for p in table.drop_duplicates("mask")["position"]]
    att = result.attention                                     # (L, H, n, n); short texts only (the model's limit)
    rows = np.ascontiguousarray(att[:, :, positions, :].transpose(2, 0, 1, 3), dtype=np.float32)
    fills = [{"tokens": [str(t) for t in g["token"]], "probs": [float(p) for p in g["probability"]]}
             for _, g in table.groupby("mask", sort=True)]
    return {"tokens": list(result.tokens), "positions": positions, "fills": fills, "rows": rows,
            "model": result.model.name}


# -- training and measuring (python -m attnwidgets.studies.fillmask --train) ------------------------------------------

def _features(runner: Runner, docs: Sequence[str], draws: int, seed: int, batch: int = 64
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """Frozen final hidden states at the targets of ``draws`` BERT maskings of each document, and the target ids."""
    tok = runner.tokenizer
    rng = np.random.default_rng(seed)
    masked_inputs: list[np.ndarray] = []
    positions: list[np.ndarray] = []
    targets: list[np.ndarray] = []
    for d in docs:
        ids = tok(d, truncation=True, max_length=128)["input_ids"]
        special = tok.get_special_tokens_mask(ids, already_has_special_tokens=True)
        for _ in range(draws):
            m = bert_mask(ids, special, rng, mask_id=tok.mask_token_id, vocab_size=tok.vocab_size)
            masked_inputs.append(m.ids)
            positions.append(m.positions)
            targets.append(m.targets)
    feats = []
    for i in range(0, len(masked_inputs), batch):
        chunk = masked_inputs[i:i + batch]
        width = max(len(c) for c in chunk)
        ids_t = torch.full((len(chunk), width), tok.pad_token_id, dtype=torch.long)
        att = torch.zeros((len(chunk), width), dtype=torch.long)
        for j, c in enumerate(chunk):
            ids_t[j, :len(c)] = torch.from_numpy(c)
            att[j, :len(c)] = 1
        with torch.inference_mode():
            h = runner.model(input_ids=ids_t, attention_mask=att, return_dict=True).last_hidden_state
        for j in range(len(chunk)):
            feats.append(h[j, torch.from_numpy(positions[i + j])].float())
    return torch.cat(feats).clone(), torch.from_numpy(np.concatenate(targets))


def word_cases(runner: Runner, docs: Sequence[str]) -> tuple[list[list[int]], list[list[int]], list[list[int]]]:
    """Evaluation cases: each word with a letter or digit in each document, masked alone (all its pieces).

    Returns per case the masked input ids, the masked positions and the word's piece ids.
    """
    tok = runner.tokenizer
    inputs, positions, pieces = [], [], []
    for d in docs:
        enc = tok(d, truncation=True, max_length=128)
        ids, word_ids = enc["input_ids"], enc.word_ids()
        for w in sorted({w for w in word_ids if w is not None}):
            pos = [i for i, x in enumerate(word_ids) if x == w]
            text = tok.decode([ids[i] for i in pos])
            if not any(ch.isalnum() for ch in text):
                continue
            new = list(ids)
            for i in pos:
                new[i] = tok.mask_token_id
            inputs.append(new)
            positions.append(pos)
            pieces.append([ids[i] for i in pos])
    return inputs, positions, pieces


def _case_features(runner: Runner, inputs: list[list[int]], positions: list[list[int]], batch: int = 64
                   ) -> list[torch.Tensor]:
    tok = runner.tokenizer
    out = []
    for i in range(0, len(inputs), batch):
        chunk = inputs[i:i + batch]
        width = max(len(c) for c in chunk)
        ids_t = torch.full((len(chunk), width), tok.pad_token_id, dtype=torch.long)
        att = torch.zeros((len(chunk), width), dtype=torch.long)
        for j, c in enumerate(chunk):
            ids_t[j, :len(c)] = torch.tensor(c)
            att[j, :len(c)] = 1
        with torch.inference_mode():
            h = runner.model(input_ids=ids_t, attention_mask=att, return_dict=True).last_hidden_state
        out += [h[j, torch.tensor(positions[i + j])].float().clone() for j in range(len(chunk))]
    return out


def word_accuracy(score: Any, feats: list[torch.Tensor], pieces: list[list[int]], ks: Sequence[int] = (1, 5)
                  ) -> dict[int, float]:
    """Share of words whose every piece is in the top-k of its position (k in ``ks``): a word of several pieces
    counts as right only when all of its pieces are."""
    h = torch.cat(feats)
    with torch.no_grad():
        logits = score(h)
    top = torch.topk(logits, max(ks), -1).indices
    target = torch.tensor([p for ps in pieces for p in ps])
    hit = {k: (top[:, :k] == target[:, None]).any(1) for k in ks}
    out = {}
    for k in ks:
        i, right = 0, 0
        for ps in pieces:
            right += bool(hit[k][i:i + len(ps)].all())
            i += len(ps)
        out[k] = right / len(pieces)
    return out


def _train(head: MLMHead, x: torch.Tensor, y: torch.Tensor, epochs: int, seed: int, lr: float = 3e-3,
           batch: int = 64) -> list[float]:
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW([p for p in head.parameters() if p.requires_grad], lr=lr, weight_decay=0.01)
    losses = []
    for _ in range(epochs):
        order = torch.randperm(len(y), generator=gen)
        total = 0.0
        for i in range(0, len(y), batch):
            idx = order[i:i + batch]
            loss = torch.nn.functional.cross_entropy(head(x[idx]), y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(idx)
        losses.append(total / len(y))
    return losses


EPOCHS = (3, 8)
"""The trained variants (epochs over the same precomputed features); the validation part chooses between them."""


def train(seed: int = 0, draws: int = 3, out: str | Path | None = None, verbose: bool = True) -> dict[str, Any]:
    """Train the head variants, choose on validation, report on held-out words, write the chosen head's npz."""
    torch.manual_seed(seed)
    runner = get_runner()
    if not _is_bundled(runner):
        raise RuntimeError("training is for the bundled model")
    tok = runner.tokenizer
    emb = cast(Any, runner.model).get_input_embeddings().weight.detach().float()
    parts = split_documents()
    t0 = time.perf_counter()
    x, y = _features(runner, parts["train"], draws, seed)
    t_feat = time.perf_counter() - t0
    if verbose:
        print(f"{len(y)} training targets from {len(parts['train'])} documents in {t_feat:.1f} s", flush=True)
    cases = {name: word_cases(runner, parts[name]) for name in ("validation", "held_out")}
    feats = {name: _case_features(runner, c[0], c[1]) for name, c in cases.items()}

    counts = np.bincount(y.numpy(), minlength=tok.vocab_size).astype(np.float64)
    for t in tok.all_special_ids:
        counts[t] = 0
    log_freq = torch.from_numpy(np.log((counts + 0.1) / (counts + 0.1).sum())).float()
    # The baseline: how often each piece occurs in the training documents' words (those with a letter or digit,
    # the same words the accuracy counts), so it is not handed "." or "," as its best guess.
    word_counts = np.bincount(np.concatenate([np.asarray(p) for p in word_cases(runner, parts["train"])[2]]),
                              minlength=tok.vocab_size).astype(np.float64)
    freq_logits = torch.from_numpy(np.log((word_counts + 0.1) / (word_counts + 0.1).sum())).float()

    variants: dict[str, Any] = {}
    variants["word frequency (baseline)"] = lambda h: freq_logits.expand(len(h), -1)

    def no_transform(h: torch.Tensor) -> torch.Tensor:
        return h @ emb.T + log_freq
    variants["no transform: h·Eᵀ + log-frequency bias (untrained)"] = no_transform

    heads: dict[str, MLMHead] = {}
    timings: dict[str, float] = {}
    for epochs in EPOCHS:
        torch.manual_seed(seed)
        head = MLMHead(emb)
        with torch.no_grad():
            head.dense.weight.copy_(torch.eye(emb.shape[1]) + 0.02 * torch.randn(emb.shape[1], emb.shape[1]))
            head.dense.bias.zero_()
            head.bias.copy_(log_freq)
        t0 = time.perf_counter()
        _train(head, x, y, epochs, seed)
        name = f"trained head, {epochs} epochs"
        timings[name] = time.perf_counter() - t0
        if verbose:
            print(f"{name}: {timings[name]:.1f} s", flush=True)
        head.eval()
        heads[name] = head
        variants[name] = head

    rows: list[dict[str, Any]] = []
    for name, score in variants.items():
        val = word_accuracy(score, feats["validation"], cases["validation"][2])
        held = word_accuracy(score, feats["held_out"], cases["held_out"][2])
        rows.append({"variant": name, "val top-1": val[1], "val top-5": val[5], "held-out top-1": held[1],
                     "held-out top-5": held[5]})
    chosen = max((r for r in rows if r["variant"] in heads), key=lambda r: (r["val top-1"], r["val top-5"]))
    head = heads[chosen["variant"]]
    arrays = {k: v.astype(np.float16) for k, v in head.arrays().items()}
    half = MLMHead(emb).load_arrays(arrays).eval()
    held16 = word_accuracy(half, feats["held_out"], cases["held_out"][2])
    rows.append({"variant": chosen["variant"] + ", stored float16", "val top-1": float("nan"),
                 "val top-5": float("nan"), "held-out top-1": held16[1], "held-out top-5": held16[5]})
    n_multi = sum(len(p) > 1 for p in cases["held_out"][2])
    report = {"seed": seed, "draws": draws, "n_docs": {k: len(v) for k, v in parts.items()},
              "n_train_targets": len(y), "n_held_out_words": len(cases["held_out"][2]),
              "n_held_out_multi_piece": n_multi, "n_validation_words": len(cases["validation"][2]),
              "feature_seconds": round(t_feat, 1), "train_seconds": {k: round(v, 1) for k, v in timings.items()},
              "chosen": chosen["variant"], "table": rows}
    path = Path(out) if out is not None else data_path("corpus.txt").parent / HEAD_FILE
    np.savez_compressed(path, **arrays, report=np.array(json.dumps(report)))  # type: ignore[arg-type]
    if verbose:
        _print_report(report)
        print(f"wrote {path} ({path.stat().st_size / 1e6:.2f} MB)")
    return report


def _print_report(report: dict[str, Any]) -> None:
    print(f"documents: {report['n_docs']}; training targets (BERT 80/10/10, {report['draws']} draws per document): "
          f"{report['n_train_targets']}; frozen features in {report['feature_seconds']} s; training "
          f"{report['train_seconds']} s")
    print(f"held-out words: {report['n_held_out_words']} ({report['n_held_out_multi_piece']} of several pieces: "
          "right only when every piece is)")
    print(f"{'variant':58s} {'val@1':>6s} {'val@5':>6s} {'held@1':>7s} {'held@5':>7s}")
    for r in report["table"]:
        print(f"{r['variant']:58s} {r['val top-1']:6.3f} {r['val top-5']:6.3f} {r['held-out top-1']:7.3f} "
              f"{r['held-out top-5']:7.3f}")
    print(f"chosen: {report['chosen']}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m attnwidgets.studies.fillmask", description=__doc__.split("\n")[0])
    parser.add_argument("--train", action="store_true", help="train the head and write attnwidgets/data/mlm_head.npz")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--draws", type=int, default=3, help="BERT maskings per training document")
    parser.add_argument("--out", default=None, help="where to write the npz (default: the package's data folder)")
    args = parser.parse_args(argv)
    if args.train:
        train(args.seed, args.draws, args.out)
    else:
        with np.load(data_path(HEAD_FILE)) as z:
            _print_report(json.loads(str(z["report"])))


if __name__ == "__main__":
    main()
