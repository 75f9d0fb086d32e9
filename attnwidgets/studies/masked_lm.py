"""Fill in the [MASK]: the bundled encoder's small masked-LM head, filling in, and one held-out accuracy measure.

The bundled model (all-MiniLM-L6-v2, BERT architecture) ships without a masked-LM head, so it cannot say what belongs
in a ``[MASK]`` by itself. The package ships one for it:

- :class:`MLMHead` has BERT's head shape: dense hidden→hidden, GELU, LayerNorm, then a decoder whose weight IS the
  encoder's input word-embedding matrix (tied, not copied or stored) plus a per-token bias. Only the dense layer, the
  LayerNorm and the bias are stored, in ``attnwidgets/data/mlm_head.npz`` (float16). It was trained with the encoder
  frozen by ``python benchmarks/train_mlm_head.py`` (BERT's 80/10/10 rule from
  :func:`attnwidgets.teaching.objectives.bert_mask`, on the train part of :func:`attnwidgets.data.split_documents`).
- :func:`fill_mask` returns the top-k fillers of every ``[MASK]`` in a text. ``[MASK]`` may be written in any case,
  and ``<mask>`` (RoBERTa's spelling) is accepted too; ``___`` is not (underscores are ordinary text). A model with its
  own masked-LM head (``BertForMaskedLM``, ``BertForPreTraining`` and the like) uses that head; the bundled model uses
  the shipped one; any other model is an error.
- :func:`fill_mask_accuracy` is the project's one measure of a masked LM on the shipped text (held-out top-1/top-5 on
  masked words), and :func:`frequency_baseline` the word-frequency baseline on the same positions.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import torch

from attnwidgets.data import data_path, split_documents
from attnwidgets.result import BUNDLED_SOURCE
from attnwidgets.runner.encoding import check_text
from attnwidgets.runner.runner import Runner, get_runner

__all__ = ["HEAD_FILE", "MLMHead", "MaskAccuracy", "MaskCases", "NoMaskedLMHeadError", "fill_mask",
           "fill_mask_accuracy", "fill_mask_lens", "fill_mask_logits", "fill_mask_view", "forget_heads",
           "frequency_baseline", "head_note", "load_head", "mask_cases", "normalise_masks", "shipped_head_scores"]

HEAD_FILE = "mlm_head.npz"
_MASK_SPELLING = re.compile(r"\[mask\]|<mask>", re.IGNORECASE)


class NoMaskedLMHeadError(ValueError):
    """The model has no masked-LM head, and it is not the bundled model (which has the shipped one)."""


# -- the head --------------------------------------------------------------------------------------------------------

class MLMHead(torch.nn.Module):
    """BERT's masked-LM head on a frozen encoder: dense → GELU → LayerNorm → tied decoder (+ bias).

    ``embeddings`` is the encoder's word-embedding weight itself (vocab × hidden); it is held by reference, so the
    decoder stays tied to the encoder, and it is not a parameter of this module. ``layer`` is the encoder layer
    whose output the head reads (``hidden_states[layer]``: 0 the embeddings, the last layer's index its output; None
    the last).
    """

    def __init__(self, embeddings: torch.Tensor, eps: float = 1e-12, layer: int | None = None) -> None:
        super().__init__()
        vocab, hidden = embeddings.shape
        self.embeddings = embeddings
        self.layer = layer
        self.dense = torch.nn.Linear(hidden, hidden)
        self.norm = torch.nn.LayerNorm(hidden, eps=eps)
        self.bias = torch.nn.Parameter(torch.zeros(vocab))

    def transform(self, h: torch.Tensor) -> torch.Tensor:
        return self.norm(torch.nn.functional.gelu(self.dense(h)))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        """Logits over the vocabulary for hidden states ``h`` (..., hidden)."""
        return self.transform(h) @ self.embeddings.T + self.bias

    def read(self, out: Any) -> torch.Tensor:
        """The hidden states this head reads from a model output (run with ``output_hidden_states=True`` when
        ``layer`` is set)."""
        if self.layer is None:
            return cast(torch.Tensor, out.last_hidden_state)
        return cast(torch.Tensor, out.hidden_states[self.layer])

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


def _is_bundled(runner: Runner) -> bool:
    return runner.head == "base" and runner.info.source == BUNDLED_SOURCE


_heads: dict[int, MLMHead] = {}


def forget_heads() -> None:
    """Drop the loaded shipped heads, so the next :func:`load_head` reads the file again (after re-training)."""
    _heads.clear()


def _head_arrays(file: Path, vocab: int, hidden: int) -> dict[str, np.ndarray]:
    """A head file's arrays, each read only after its header declares the shape this model needs (so a file of
    other shapes, or an archive bomb, is refused before anything is decompressed) and checked finite:
    :class:`~attnwidgets.persist.SavedFileError` otherwise. A file from elsewhere is read as untrusted input."""
    import zipfile

    from ..persist import SavedFileError, read_entry

    shapes = {"dense_weight": (hidden, hidden), "dense_bias": (hidden,), "norm_weight": (hidden,),
              "norm_bias": (hidden,), "bias": (vocab,)}
    if not file.is_file() or not zipfile.is_zipfile(file):
        raise SavedFileError(f"{str(file)!r} is not a masked-LM head file (an .npz that "
                             "benchmarks/train_mlm_head.py writes)")
    with zipfile.ZipFile(file) as z:
        names = {n[:-4] for n in z.namelist() if n.endswith(".npy")}
    arrays = {name: read_entry(file, name, shape, "f", what="the masked-LM head") for name, shape in shapes.items()}
    if "layer" in names:
        arrays["layer"] = read_entry(file, "layer", (), "iu", what="the masked-LM head")
    for name, value in arrays.items():
        if not np.isfinite(value).all():
            raise SavedFileError(f"{str(file)!r}: the head's {name} holds NaN or infinity; train it again with "
                                 "benchmarks/train_mlm_head.py")
    return arrays


def load_head(runner: Runner | None = None, path: str | Path | None = None) -> MLMHead:
    """The shipped masked-LM head, tied to ``runner``'s (the bundled model's) word embeddings; ``head.layer`` says
    which layer's output it reads."""
    runner = get_runner(runner)
    emb_now = cast(Any, runner.model).get_input_embeddings().weight
    cached = _heads.get(id(runner)) if path is None else None
    if cached is not None and cached.embeddings.data_ptr() == emb_now.data_ptr():   # ids of freed runners recur
        return cached
    file = Path(path) if path is not None else data_path(HEAD_FILE)
    arrays = _head_arrays(file, *emb_now.shape)
    emb = cast(Any, runner.model).get_input_embeddings().weight.detach()
    layer = int(arrays["layer"]) if "layer" in arrays else None
    if layer is not None and not 0 <= layer <= runner.info.n_layers:
        from ..persist import SavedFileError

        raise SavedFileError(f"{str(file)!r}: the head reads layer {layer}, the model has 0..{runner.info.n_layers}")
    with torch.inference_mode(False):     # loaded during a fill-in: still ordinary tensors, usable with autograd
        head = MLMHead(emb.float().cpu(), layer=layer).load_arrays(arrays).eval()
    if path is None:
        _heads[id(runner)] = head
    return head


def shipped_head_scores(path: str | Path | None = None) -> dict[str, Any]:
    """What the shipped head scored when ``benchmarks/train_mlm_head.py`` made it, read from the report stored in
    its file (nothing typed here): ``layer`` it reads, held-out ``top1``/``top5``, the word-frequency baseline's
    ``baseline_top1``/``baseline_top5`` on the same positions, and ``n`` (how many held-out words).

    Examples
    --------
    >>> s = shipped_head_scores()
    >>> s["top1"] > s["baseline_top1"], s["layer"]
    (True, 6)
    """
    import json

    file = Path(path) if path is not None else data_path(HEAD_FILE)
    from ..persist import read_entry

    report = json.loads(str(read_entry(file, "report", (), "U", limit=1, what="the masked-LM head's report")))
    chosen = next(row for row in report["table"] if row["variant"] == report["chosen"])
    baseline = next(row for row in report["table"] if row["variant"].startswith("word frequency"))
    check = report.get("held_out_check", {})
    return {"layer": int(report["layer"]), "top1": float(check.get("top-1", chosen["held-out top-1"])),
            "top5": float(check.get("top-5", chosen["held-out top-5"])),
            "baseline_top1": float(baseline["held-out top-1"]), "baseline_top5": float(baseline["held-out top-5"]),
            "n": int(check.get("n", chosen.get("n_targets", 0)))}


def head_note(model: Any = None) -> str:
    """One line saying whose guesses a fill-in shows: for the bundled model, the head attnwidgets trained on its
    frozen encoder and how it scores against the word-frequency baseline (read from the head's file); for a model
    with its own masked-LM head, that head.

    Examples
    --------
    >>> head_note().startswith("Not the model's own head (it has none)")
    True
    """
    runner = get_runner(model)
    if not _is_bundled(runner):
        return f"The model's own masked-LM head ({runner.info.name})."
    s = shipped_head_scores()
    return (f"Not the model's own head (it has none): a head attnwidgets trained on its frozen layer-{s['layer']} "
            f"output. Held-out top-1 {100 * s['top1']:.1f} %; always guessing the most frequent word: "
            f"{100 * s['baseline_top1']:.1f} % ({s['n']} words).")


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


def _encode_masks(text: str, runner: Runner) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """The text's inputs (on the runner's device) and its [MASK] positions, after the checks every fill-in makes."""
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
    positions = torch.nonzero(enc["input_ids"][0] == tok.mask_token_id).flatten()
    return {k: v.to(runner.device) for k, v in enc.items()}, positions


def fill_mask_logits(text: str, model: str | Runner | None = None) -> tuple[list[str], np.ndarray, np.ndarray]:
    """``(tokens, mask positions, logits (n_masks, vocab))`` for a text with one or more [MASK]."""
    runner = get_runner(model)
    inputs, positions = _encode_masks(text, runner)
    with torch.inference_mode():
        if runner.head == "masked-lm":
            out = runner.model(**inputs, return_dict=True)
            logits = out.logits[0, positions.to(runner.device)].float().cpu()
        else:
            head = load_head(runner)
            out = runner.model(**inputs, return_dict=True, output_hidden_states=head.layer is not None)
            logits = head(head.read(out)[0, positions.to(runner.device)].float().cpu())
    tokens = runner.tokenizer.convert_ids_to_tokens(inputs["input_ids"][0].tolist())
    return tokens, positions.numpy().astype(np.int64), logits.numpy()


def fill_mask_lens(text: str, k: int = 5, model: str | Runner | None = None) -> dict[str, Any]:
    """The logit lens at every [MASK] (nostalgebraist 2020): the top ``k`` fillers read from the stream after the
    embeddings (row 0) and after each layer, through the same masked-LM head that fills in the last row (the model's
    own, or for the bundled model the head attnwidgets trained on its frozen output, :func:`load_head`).

    Returns ``{"ids": (masks, layers + 1, k) int64, "probs": float32, "tokens": [mask][row][k] str, "rows": a label
    per row, "reader": which head reads the layers}``. The head was trained on the last layer's output, so earlier
    rows are read by a head not made for them: the logit lens's known bias (the tuned lens, Belrose et al. 2023,
    learns a map per layer instead; not here yet).

    Examples
    --------
    >>> lens = fill_mask_lens("The [MASK] sat on the mat.", k=3)
    >>> lens["probs"].shape, lens["rows"][:2]
    ((1, 7, 3), ['embeddings', 'layer 1'])
    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be a positive whole number, got {k!r}")
    runner = get_runner(model)
    inputs, positions = _encode_masks(text, runner)
    where = positions.to(runner.device)
    with torch.inference_mode():
        out = runner.model(**inputs, return_dict=True, output_hidden_states=True)
        if runner.head == "masked-lm":
            from ..runner.logits import lens_readout

            read = lens_readout(runner)
            reader = f"the model's own masked-LM head ({runner.info.name})"
        else:
            head = load_head(runner)
            read = head
            reader = f"the head attnwidgets trained on the frozen layer-{head.layer} output"
        stack = torch.stack([h[0, where] for h in out.hidden_states], 1)         # (masks, layers + 1, hidden)
        probs = torch.softmax(read(stack.float()).double(), -1)
    top = probs.topk(min(int(k), probs.shape[-1]), dim=-1)
    ids = top.indices.cpu().numpy().astype(np.int64)
    names = runner.tokenizer.convert_ids_to_tokens
    tokens = [[[str(t) for t in names(row.tolist())] for row in mask] for mask in ids]
    rows = ["embeddings"] + [f"layer {i}" for i in range(1, ids.shape[1])]
    return {"ids": ids, "probs": top.values.float().cpu().numpy(), "tokens": tokens, "rows": rows,
            "reader": reader}


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
    (per mask: ``tokens`` and ``probs`` of the top k), ``rows`` ((masks, layers, heads, tokens) float32: the
    attention of each [MASK] position over all tokens), ``attention`` ((layers, heads, tokens, tokens) float32: every
    query row, which a selection of query tokens combines), ``model`` (its name), ``head`` (whose guesses these are,
    :func:`head_note`) and ``lens``, the logit lens at each [MASK] (:func:`fill_mask_lens`).

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
            "attention": np.ascontiguousarray(att, dtype=np.float32), "model": result.model.name,
            "head": head_note(runner), "lens": fill_mask_lens(clean, k, runner)}


# -- one measure: held-out top-k accuracy on masked words ------------------------------------------------------------

@dataclass(frozen=True)
class MaskCases:
    """The evaluation positions of some documents: one input per masked word (see :func:`mask_cases`)."""

    inputs: list[list[int]]      # the document's ids with this one word replaced by [MASK]
    positions: list[int]         # where the [MASK] is
    targets: list[int]           # the word's id (a single piece)
    n_docs: int
    n_multi_piece: int           # words with a letter or digit left out because they are several pieces


def mask_cases(tokenizer: Any, docs: Sequence[str], max_length: int = 128) -> MaskCases:
    """Every word of ``docs`` that has a letter or digit and is a single piece of ``tokenizer``'s vocabulary, masked
    alone: one input per word, the rest of its document as written (the first ``max_length`` pieces, [CLS] and [SEP]
    included). A "word" is what the tokenizer's pre-tokenizer splits off (BERT: on spaces and punctuation, so "mat."
    is "mat" and "."; punctuation is never a target).

    Examples
    --------
    >>> import attnwidgets as aw
    >>> c = mask_cases(aw.runner.get_runner().tokenizer, ["The cat sat, unbelievably."])
    >>> [aw.runner.get_runner().tokenizer.decode([t]) for t in c.targets], c.n_multi_piece
    (['the', 'cat', 'sat'], 1)
    """
    if isinstance(docs, str):
        raise TypeError("docs must be a list of texts, not one string")
    mask_id = tokenizer.mask_token_id
    if mask_id is None:
        raise NoMaskedLMHeadError("the tokenizer has no mask token, so nothing can be masked")
    inputs: list[list[int]] = []
    positions: list[int] = []
    targets: list[int] = []
    n_multi = 0
    for d in docs:
        enc = tokenizer(d, truncation=True, max_length=max_length)
        ids, word_ids = list(enc["input_ids"]), enc.word_ids()
        spans: dict[int, list[int]] = {}
        for i, w in enumerate(word_ids):
            if w is not None:
                spans.setdefault(w, []).append(i)
        for pos in spans.values():
            if not any(ch.isalnum() for ch in tokenizer.decode([ids[i] for i in pos])):
                continue
            if len(pos) > 1:
                n_multi += 1
                continue
            new = list(ids)
            new[pos[0]] = mask_id
            inputs.append(new)
            positions.append(pos[0])
            targets.append(ids[pos[0]])
    return MaskCases(inputs, positions, targets, len(docs), n_multi)


@dataclass(frozen=True)
class MaskAccuracy:
    """Top-k accuracy on masked words: ``acc[1]``, ``acc[5]``; ``n`` positions from ``n_docs`` documents."""

    top: dict[int, float]
    n: int
    n_docs: int
    n_multi_piece: int
    model: str
    hits: dict[int, np.ndarray] = field(repr=False, default_factory=dict)   # per position, in mask_cases' order

    def __getitem__(self, k: int) -> float:
        return self.top[k]

    def __str__(self) -> str:
        tops = ", ".join(f"top-{k} {v:.3f}" for k, v in self.top.items())
        return f"{self.model}: {tops} on {self.n} masked words of {self.n_docs} documents"


def _check_ks(k: int | Sequence[int]) -> tuple[int, ...]:
    if isinstance(k, int | np.integer):
        ks: tuple[Any, ...] = (k,)
    elif isinstance(k, Sequence) and not isinstance(k, str):
        ks = tuple(k)
    else:
        ks = ()
    if not ks or any(isinstance(x, bool) or not isinstance(x, int | np.integer) or x < 1 for x in ks):
        raise ValueError(f"k must be a positive whole number or a list of them, got {k!r}")
    return tuple(int(x) for x in ks)


def _default_docs(docs: Sequence[str] | None) -> Sequence[str]:
    return split_documents()["held_out"] if docs is None else docs


def _scorer(model: Any, tokenizer: Any) -> tuple[Any, Any, str]:
    """``(score, tokenizer, name)``: ``score(ids, attention_mask, positions)`` gives logits (n, vocab) at one position
    per row, from a model's own masked-LM head or, for the bundled model, the shipped head."""
    if isinstance(model, torch.nn.Module):
        module = model
        tok = tokenizer if tokenizer is not None else get_runner().tokenizer
        device = next(module.parameters()).device
        name = type(module).__name__

        def score_module(ids: torch.Tensor, att: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
            out = module(input_ids=ids.to(device), attention_mask=att.to(device), return_dict=True)
            logits = getattr(out, "logits", None)
            if logits is None:
                logits = getattr(out, "prediction_logits", None)   # BertForPreTraining
            if logits is None:
                raise NoMaskedLMHeadError(f"{name} gives no masked-LM logits (no .logits or .prediction_logits)")
            return logits[torch.arange(len(pos)), pos.to(device)].float().cpu()
        return score_module, tok, name
    if not isinstance(model, Runner | str | os.PathLike) and model is not None:
        raise TypeError(f"model must be None, a model name or folder, a runner or a torch module, got "
                        f"{type(model).__name__}")
    runner = get_runner(model)
    if runner.head != "masked-lm" and not _is_bundled(runner):
        raise NoMaskedLMHeadError(
            f"{runner.info.name!r} has no masked-LM head (it was loaded as {runner.head!r}), and the shipped head fits "
            "the bundled model only")

    def score_runner(ids: torch.Tensor, att: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        rows = torch.arange(len(pos))
        kw = {"input_ids": ids.to(runner.device), "attention_mask": att.to(runner.device), "return_dict": True}
        if runner.head == "masked-lm":
            return runner.model(**kw).logits[rows, pos.to(runner.device)].float().cpu()
        head = load_head(runner)
        out = runner.model(**kw, output_hidden_states=head.layer is not None)
        return head(head.read(out)[rows, pos.to(runner.device)].float().cpu())
    return score_runner, (tokenizer if tokenizer is not None else runner.tokenizer), runner.info.name


def _hits(ranked: torch.Tensor, targets: torch.Tensor, ks: tuple[int, ...]) -> dict[int, np.ndarray]:
    return {k: (ranked[:, :k] == targets[:, None]).any(1).numpy() for k in ks}


def fill_mask_accuracy(model: Any = None, docs: Sequence[str] | None = None, k: int | Sequence[int] = (1, 5), *,
                       tokenizer: Any = None, batch_size: int = 64, max_length: int = 128) -> MaskAccuracy:
    """Held-out top-k accuracy of a masked LM on masked words: the project's one measure of "fills in sensibly".

    Definition: every word of ``docs`` (default: the held-out part of :func:`attnwidgets.data.split_documents`) that
    has a letter or digit and is a single piece of the model's vocabulary is replaced by ``[MASK]`` alone, one word at
    a time, the rest of its document as written (first ``max_length`` pieces); a word counts as right at k when its
    piece is among the model's k most probable pieces at that position, special tokens ([CLS], [SEP], [PAD], [UNK],
    [MASK]) excluded from the ranking. Words of several pieces are left out and counted (``n_multi_piece``).
    Accuracy = right / positions. :func:`frequency_baseline` scores the same positions.

    ``model``: None (the bundled model with its shipped head), a model name or saved folder with a masked-LM head
    (``BertForMaskedLM``, ``BertForPreTraining``), a runner, or a torch module that returns ``.logits`` or
    ``.prediction_logits`` (then ``tokenizer`` defaults to the bundled model's). Deterministic (no dropout, no
    sampling).

    Examples
    --------
    >>> acc = fill_mask_accuracy(docs=["The cat sat on the mat."])
    >>> acc.n, 0 <= acc[1] <= acc[5] <= 1
    (6, True)
    """
    ks = _check_ks(k)
    docs = _default_docs(docs)
    score, tok, name = _scorer(model, tokenizer)
    cases = mask_cases(tok, docs, max_length)
    n = len(cases.targets)
    if n == 0:
        raise ValueError("no word to mask in docs (a word needs a letter or digit and must be a single piece)")
    special = torch.tensor(sorted(set(tok.all_special_ids)), dtype=torch.long)
    order = np.argsort([len(x) for x in cases.inputs], kind="stable")   # similar lengths batched together
    ranked = torch.empty((n, max(ks)), dtype=torch.long)
    was_training = isinstance(model, torch.nn.Module) and model.training
    if was_training:
        model.eval()
    try:
        with torch.inference_mode():
            for start in range(0, n, batch_size):
                idx = order[start:start + batch_size]
                width = max(len(cases.inputs[i]) for i in idx)
                ids = torch.full((len(idx), width), tok.pad_token_id or 0, dtype=torch.long)
                att = torch.zeros((len(idx), width), dtype=torch.long)
                for j, i in enumerate(idx):
                    ids[j, :len(cases.inputs[i])] = torch.tensor(cases.inputs[i])
                    att[j, :len(cases.inputs[i])] = 1
                logits = score(ids, att, torch.tensor([cases.positions[i] for i in idx]))
                logits[:, special[special < logits.shape[1]]] = -torch.inf
                ranked[torch.from_numpy(idx)] = torch.topk(logits, max(ks), -1).indices
    finally:
        if was_training:
            model.train()
    hits = _hits(ranked, torch.tensor(cases.targets), ks)
    return MaskAccuracy({k_: float(h.mean()) for k_, h in hits.items()}, n, cases.n_docs, cases.n_multi_piece,
                        name, hits)


def frequency_baseline(model: Any = None, docs: Sequence[str] | None = None, k: int | Sequence[int] = (1, 5), *,
                       train_docs: Sequence[str] | None = None, tokenizer: Any = None,
                       max_length: int = 128) -> MaskAccuracy:
    """The word-frequency baseline on :func:`fill_mask_accuracy`'s positions: always guess the k words that are most
    often a target in ``train_docs`` (default: the train part of :func:`attnwidgets.data.split_documents`), counted
    the same way (single-piece words with a letter or digit; ties broken by vocabulary id). ``model`` only supplies
    the tokenizer (None: the bundled model's).

    Examples
    --------
    >>> b = frequency_baseline(docs=["the the cat"], train_docs=["the cat", "the cat dog"], k=(1, 2))
    >>> b[1], b[2]
    (0.6666666666666666, 1.0)
    """
    ks = _check_ks(k)
    docs = _default_docs(docs)
    if tokenizer is None:
        tokenizer = get_runner(None if isinstance(model, torch.nn.Module) else model).tokenizer
    train = split_documents()["train"] if train_docs is None else train_docs
    counts = np.bincount(np.asarray(mask_cases(tokenizer, train, max_length).targets, dtype=np.int64),
                         minlength=len(tokenizer))
    best = np.argsort(-counts, kind="stable")[:max(ks)]
    cases = mask_cases(tokenizer, docs, max_length)
    if not cases.targets:
        raise ValueError("no word to mask in docs (a word needs a letter or digit and must be a single piece)")
    ranked = torch.from_numpy(np.tile(best, (len(cases.targets), 1)))
    hits = _hits(ranked, torch.tensor(cases.targets), ks)
    return MaskAccuracy({k_: float(h.mean()) for k_, h in hits.items()}, len(cases.targets), cases.n_docs,
                        cases.n_multi_piece, "word frequency (train split)", hits)
