"""BERT's input, taken apart: the token, segment and position embeddings of every token, their sum, and the sum
after the embedding LayerNorm: what the first layer reads.

Devlin et al. (2019, §3, Figure 2): "the input embeddings are the sum of the token embeddings, the segmentation
embeddings and the position embeddings". :func:`input_embeddings` reads the three tables of a BERT-like model's
embedding module (``word_embeddings``, ``token_type_embeddings``, ``position_embeddings`` and ``LayerNorm``, found by
name, wherever the module sits), looks up the rows a sentence pair uses, adds them, and applies the model's own
LayerNorm. What it returns is what ``model.embeddings(...)`` computes
(``tests/teaching/test_teaching_embeddings.py`` checks it to 1e-5), in pieces.

Models without segment embeddings are handled and said so: RoBERTa-like models have a segment table of one row (the
same vector is added to every token, so it cannot tell A from B); DistilBERT has none (A and B differ only by the
[SEP] between them). A model whose embedding module is not BERT's (GPT-2's ``wte``/``wpe`` without a LayerNorm,
rotary models with no position table) is refused with a :class:`ValueError` that says why.

The model comes from the runner (the teaching kit does not import it): pass a runner
(``aw.runner.get_runner(MODEL)``), or
a model with its tokenizer.

Examples
--------
>>> import attnwidgets as aw
>>> parts = input_embeddings(aw.runner.get_runner(None), "The kettle clicked off.", "Mara poured the water.")
>>> parts.tokens[:3], parts.segment_ids.tolist()[-3:], parts.token.shape
(['[CLS]', 'the', 'kettle'], [1, 1, 1], (13, 384))
>>> bool(np.allclose(parts.total, parts.token + parts.segment + parts.position))
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import torch
from torch import nn

__all__ = ["InputEmbeddings", "embedding_module", "input_embeddings"]

#: The parts of the input, in the order they are drawn.
PARTS = ("token", "segment", "position")


@dataclass(frozen=True, eq=False)
class InputEmbeddings:
    """A sentence (pair)'s input vectors, part by part; every array is (n_tokens, d) float32.

    Attributes
    ----------
    tokens : list[str]
        The pieces, [CLS] and [SEP] included.
    part : np.ndarray
        (n,) int: 0 for sentence A (with [CLS] and the [SEP] after it), 1 for sentence B (with its [SEP]), as read
        from the tokenizer: which sentence each piece belongs to, whatever the model does with it.
    segment_ids : np.ndarray
        (n,) int: the rows of the segment table the model adds (all 0 when its table has one row).
    position_ids : np.ndarray
        (n,) int: the rows of the position table (RoBERTa's start after its padding row, at 2).
    token, segment, position : np.ndarray
        The rows looked up. ``segment`` is zeros for a model with no segment table (``has_segments`` says which).
    total : np.ndarray
        ``token + segment + position``: what goes into the LayerNorm.
    normed : np.ndarray
        ``LayerNorm(total)``: what the first layer reads (the model's embedding output; dropout is off in eval).
    model : str
        The model's name, for titles.
    segment_rows : int
        Rows of the segment table: 2 for BERT, 1 for RoBERTa-like models, 0 when there is none.
    note : str
        What this model's segment embedding can tell, in one sentence.
    """

    tokens: list[str]
    part: np.ndarray
    segment_ids: np.ndarray
    position_ids: np.ndarray
    token: np.ndarray
    segment: np.ndarray
    position: np.ndarray
    total: np.ndarray
    normed: np.ndarray
    model: str
    segment_rows: int
    note: str

    @property
    def has_segments(self) -> bool:
        """Whether the segment embedding tells A from B (a table of two rows or more)."""
        return self.segment_rows >= 2

    def norms(self) -> Any:
        """A pandas DataFrame, one row per token: its sentence (A/B) and the Euclidean norm of each part, of the sum
        and of the sum after the LayerNorm."""
        import pandas as pd

        return pd.DataFrame({
            "token": self.tokens, "sentence": np.where(self.part == 0, "A", "B"),
            **{f"‖{name}‖": np.linalg.norm(getattr(self, name), axis=-1) for name in PARTS},
            "‖sum‖": np.linalg.norm(self.total, axis=-1), "‖LayerNorm(sum)‖": np.linalg.norm(self.normed, axis=-1),
        })

    def __repr__(self) -> str:
        return (f"InputEmbeddings({self.model!r}, {len(self.tokens)} tokens x {self.token.shape[1]} dims, "
                f"segment table of {self.segment_rows} row(s))")


def embedding_module(model: nn.Module) -> nn.Module:
    """The BERT-style embedding module inside ``model``: the first submodule with ``word_embeddings``,
    ``position_embeddings`` (both ``nn.Embedding``) and a ``LayerNorm``; a :class:`ValueError` naming what the model
    has instead when there is none."""
    for module in model.modules():
        word, pos, norm = (getattr(module, k, None) for k in ("word_embeddings", "position_embeddings", "LayerNorm"))
        if isinstance(word, nn.Embedding) and isinstance(pos, nn.Embedding) and isinstance(norm, nn.Module):
            return module
    config = getattr(model, "config", None)
    kind = getattr(config, "model_type", type(model).__name__)
    raise ValueError(
        f"input_embeddings reads BERT's embedding module (word_embeddings + token_type_embeddings + "
        f"position_embeddings, then a LayerNorm); this model ({kind}) has none: a GPT-2-style model adds wte + wpe "
        "without a LayerNorm, rotary and ALiBi models have no position table at all. Pass a BERT-like encoder "
        "(BERT, RoBERTa, DistilBERT, ELECTRA, ALBERT, MiniLM)."
    )


def _split(model: Any, tokenizer: Any) -> tuple[nn.Module, Any, str]:
    if tokenizer is None:
        inner, tokenizer = getattr(model, "model", None), getattr(model, "tokenizer", None)
        if not isinstance(inner, nn.Module) or tokenizer is None:
            raise TypeError("input_embeddings needs a runner (aw.runner.get_runner(MODEL)) or a model with its "
                            "tokenizer "
                            f"(input_embeddings(model, a, b, tokenizer=tok)); got {type(model).__name__}")
        info = getattr(model, "info", None)
        return inner, tokenizer, str(getattr(info, "name", type(inner).__name__))
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch model when a tokenizer is given, got {type(model).__name__}")
    config = getattr(model, "config", None)
    return model, tokenizer, str(getattr(config, "name_or_path", "") or type(model).__name__)


def _parts_of(enc: Any, n: int) -> np.ndarray:
    """Which sentence each piece belongs to (0 = A, 1 = B); special pieces go with the sentence before them
    ([CLS] with A)."""
    try:
        seq = enc.sequence_ids(0)
    except (AttributeError, ValueError):  # a slow tokenizer: its token_type_ids, if any
        tt = enc.get("token_type_ids")
        return np.asarray(tt[0] if tt is not None else np.zeros(n), dtype=np.int64)
    part, last = np.zeros(n, np.int64), 0
    for i, s in enumerate(seq):
        last = last if s is None else int(s)
        part[i] = last
    return part


@torch.no_grad()
def input_embeddings(model: Any, a: str, b: str | None = None, *, tokenizer: Any = None) -> InputEmbeddings:
    """The input of ``a`` (and ``b``, as a pair) as BERT builds it: token + segment + position, summed, normalised.

    Parameters
    ----------
    model : Runner | torch.nn.Module
        A runner (``aw.runner.get_runner(MODEL)``: its model and tokenizer), or a BERT-like model with ``tokenizer=``.
    a, b : str
        Sentence A, and optionally sentence B.
    tokenizer : optional
        The model's tokenizer, when ``model`` is a model rather than a runner.

    Returns
    -------
    InputEmbeddings
        Per token the three rows, their sum and the LayerNorm of the sum, with the ids that chose the rows.

    Raises
    ------
    ValueError
        For a model whose embedding module is not BERT's (see :func:`embedding_module`), or an input longer than
        the position table.
    """
    net, tok, name = _split(model, tokenizer)
    emb = embedding_module(net)
    if not isinstance(a, str) or not (b is None or isinstance(b, str)):
        raise TypeError("input_embeddings takes one or two sentences as strings")
    enc = tok(a, b) if b is not None else tok(a)
    ids = torch.tensor([enc["input_ids"]], dtype=torch.long)  # (1, n)
    n = ids.shape[1]
    word = cast(nn.Embedding, emb.word_embeddings)
    pos_table = cast(nn.Embedding, emb.position_embeddings)
    types = getattr(emb, "token_type_embeddings", None)
    # Position ids as the model makes them: RoBERTa's family counts from its padding row + 1, BERT's from 0.
    make = getattr(emb, "create_position_ids_from_input_ids", None)
    if make is not None and getattr(emb, "padding_idx", None) is not None:
        position_ids = make(ids, emb.padding_idx)
    else:
        position_ids = torch.arange(n, dtype=torch.long)[None]
    if int(position_ids.max()) >= pos_table.num_embeddings:
        raise ValueError(f"the input has {n} pieces, more than the model's position table holds "
                         f"({pos_table.num_embeddings} rows): shorten the sentences")
    part = _parts_of(enc, n)
    dev = word.weight.device
    token = word(ids.to(dev))[0]
    position = pos_table(position_ids.to(dev))[0]
    if isinstance(types, nn.Embedding):
        rows = types.num_embeddings
        given = enc.get("token_type_ids")  # what the tokenizer hands the model (BERT: 0 for A, 1 for B)
        chosen = np.asarray(given, np.int64) if given is not None and rows >= 2 else np.zeros(n, np.int64)
        segment_ids = torch.from_numpy(chosen)[None]
        segment = types(segment_ids.to(dev))[0]
        note = ("the segment embedding has one row per sentence: it adds one vector to every piece of A and another "
                "to every piece of B" if rows >= 2 else
                "the segment table has a single row: the same vector is added to every piece, so it cannot tell A "
                "from B (RoBERTa dropped next-sentence prediction and with it the segments); only [SEP] separates them")
    else:
        rows, segment_ids = 0, torch.zeros((1, n), dtype=torch.long)
        segment = torch.zeros_like(token)
        note = ("this model has no segment embeddings at all (DistilBERT dropped them): A and B differ only by the "
                "[SEP] between them")
    total = token + segment + position
    normed = cast(nn.Module, emb.LayerNorm)(total)

    def out(t: torch.Tensor) -> np.ndarray:
        return t.detach().to(torch.float32).cpu().numpy()

    return InputEmbeddings(
        tokens=list(tok.convert_ids_to_tokens(enc["input_ids"])), part=part, segment_ids=segment_ids[0].numpy(),
        position_ids=position_ids[0].cpu().numpy(), token=out(token), segment=out(segment), position=out(position),
        total=out(total), normed=out(normed), model=name, segment_rows=rows, note=note,
    )
