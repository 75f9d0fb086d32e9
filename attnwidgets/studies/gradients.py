"""Loss gradients with respect to attention weights, |∂L/∂A|, per head and kind of key (Clark et al. 2019, §3).

Clark et al. argue that attention to [SEP] is a "no-op": from the middle layers on, changing how much a head attends
to [SEP] barely changes the loss. We measure the same thing: run a batch with gradients on, keep the gradient of the
objective with respect to every attention weight (``retain_grad`` on the returned attention maps, which are the very
tensors the head outputs are computed from), and average its magnitude per head over the (query, key) cells whose
key is [CLS], [SEP], punctuation or any other token. Padding never counts.

The objective is the masked-LM loss when the model has an MLM head (15 % of the non-special tokens of each input are
replaced by [MASK], seeded, at least one per input), or any scalar the caller computes from the outputs, e.g. the
cosine similarity between a sentence's embedding and its paraphrase's (:func:`embedding_similarity`).

With ``words=True`` the cells are (word, word), as for the other statistics' ``words=True``: the gradient is taken with
respect to the word-level attention ``W = R A C`` of :func:`~attnwidgets.analysis.words.word_level` (from a word: the
mean of its pieces' rows; to a word: the sum of its pieces' columns). By the chain rule that gradient is
``C^T (∂L/∂A) R^T`` — a word's row *sums* its pieces' gradient rows and a word's column *averages* its pieces' columns,
the transpose of how the attention itself is aggregated: raising ``W[i, j]`` by δ raises the attention of every piece
of word i by δ, spread evenly over the pieces of word j. When the loss depends on the attention only through W this is
exactly ∂L/∂W (``R C`` is the identity). The magnitude is taken after aggregating: two pieces of one word pulled in
opposite directions cancel, since that change leaves W as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ..analysis.tokens import KEY_KINDS, key_kind_index, token_kinds
from ..analysis.words import word_groups, word_matrices
from ..html_repr import repr_html
from ..runner import Encoded, Runner, get_runner

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["GradientStats", "attention_gradients", "embedding_similarity", "mean_pooled"]

Objective = Callable[[Any, Encoded], torch.Tensor]
"""``objective(outputs, enc) -> scalar tensor``: outputs of :meth:`Runner.forward` with gradients on."""


class GradientStats:
    """Mean |∂L/∂A| per layer, head and key kind, accumulated over inputs.

    Attributes
    ----------
    sums : np.ndarray
        (L, H, 4) sum of |∂L/∂A[i, j]| over cells whose key j is of each kind of :data:`KEY_KINDS`.
    counts : np.ndarray
        (4,) number of such cells (the same for every head).
    objective : str
        "masked-lm" or the name of the user's objective.
    words : bool
        True when the cells are (word, word): the gradient with respect to word-level attention.
    """

    _repr_html_ = repr_html  # the compact table a notebook shows (html_repr.py)

    def __init__(self, n_layers: int, n_heads: int, objective: str, words: bool = False) -> None:
        self.sums = np.zeros((n_layers, n_heads, len(KEY_KINDS)))
        self.counts = np.zeros(len(KEY_KINDS))
        self.objective = objective
        self.words = words
        self.n_inputs = 0

    def mean(self) -> np.ndarray:
        """(L, H, 4) mean |∂L/∂A| per key kind ([CLS], [SEP], punctuation, other); NaN for kinds never seen."""
        with np.errstate(invalid="ignore", divide="ignore"):
            return self.sums / np.where(self.counts > 0, self.counts, np.nan)

    def frame(self) -> pd.DataFrame:
        """Tidy DataFrame (layer, head, statistic, value) with statistics ``grad_cls``, ``grad_sep``, ``grad_punct``,
        ``grad_other``."""
        from ..analysis.surface import stats_to_frame

        m = self.mean()
        return stats_to_frame({f"grad_{k}": m[..., i] for i, k in enumerate(KEY_KINDS)})

    def __repr__(self) -> str:
        return f"GradientStats({self.objective!r}, {self.n_inputs} inputs, words={self.words})"


def _to_words(g: np.ndarray, kind: np.ndarray, word_ids: np.ndarray, special: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray]:
    """Signed piece gradients (L, H, n, n) and piece key kinds (n,) -> word gradients (L, H, u, u) and word kinds (u,).

    The word gradient is ``C^T g R^T`` with (R, C) of :func:`~attnwidgets.analysis.words.word_matrices` (see the
    module docstring). A word's kind is the largest of its pieces' kind indices: [CLS] (0) and [SEP] (1) are units of
    their own, so a word is punctuation (2) when all its pieces are, and other (3) as soon as one piece is.
    """
    units = word_groups(word_ids, special)
    r, c = word_matrices(units, "mean")  # (u, n), (n, u)
    word_kind = np.zeros(c.shape[1], dtype=np.int64)
    np.maximum.at(word_kind, units, kind)
    return np.matmul(np.matmul(c.T, g), r.T), word_kind


def mean_pooled(outputs: Any, enc: Encoded) -> torch.Tensor:
    """(B, hidden) mean of the last hidden state over each input's real tokens (sentence-transformers pooling)."""
    hidden = getattr(outputs, "last_hidden_state", None)
    if hidden is None:
        hidden = outputs.hidden_states[-1]
    mask = enc.inputs["attention_mask"].unsqueeze(-1).to(hidden.device, hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)


def embedding_similarity(runner: Runner, references: Mapping[str, str] | Sequence[tuple[str, str]]) -> Objective:
    """An objective for sentence encoders: cosine similarity of each text's pooled embedding to its reference's.

    Parameters
    ----------
    runner : Runner
    references : mapping text -> reference, or (text, reference) pairs
        E.g. a sentence and its paraphrase. Reference embeddings are computed once, without gradients.

    Returns
    -------
    Objective
        Sum over the batch of the cosine similarities (a scalar).
    """
    table = dict(references)
    refs = list(dict.fromkeys(table.values()))
    embedded: dict[str, torch.Tensor] = {}
    for start in range(0, len(refs), 32):
        chunk = refs[start : start + 32]
        enc = runner.encode(chunk)
        out = runner.forward(enc)
        for text, vec in zip(chunk, mean_pooled(out, enc)):
            embedded[text] = vec.detach().clone()

    def objective(outputs: Any, enc: Encoded) -> torch.Tensor:
        try:
            target = torch.stack([embedded[table[t]] for t in enc.texts])
        except KeyError as exc:
            raise KeyError(f"no reference for text {exc.args[0]!r}: pass it in references") from exc
        return torch.nn.functional.cosine_similarity(mean_pooled(outputs, enc), target, dim=-1).sum()

    objective.__name__ = "embedding_similarity"
    return objective


def _mask_tokens(runner: Runner, enc: Encoded, rate: float, generator: torch.Generator) -> torch.Tensor:
    """Replace ``rate`` of each row's non-special tokens by [MASK] in place; return MLM labels (-100 elsewhere)."""
    tok = runner.tokenizer
    if tok.mask_token_id is None:
        raise ValueError(f"{runner.info.name!r} has an MLM head but its tokenizer has no mask token")
    ids = enc.inputs["input_ids"]
    special = torch.zeros_like(ids, dtype=torch.bool)
    for sid in tok.all_special_ids:
        special |= ids == sid
    if "attention_mask" in enc.inputs:
        special |= enc.inputs["attention_mask"] == 0
    chosen = (torch.rand(ids.shape, generator=generator) < rate) & ~special
    for row in range(ids.shape[0]):  # at least one masked token per input
        candidates = torch.nonzero(~special[row]).flatten()
        if not chosen[row].any() and len(candidates):
            pick = candidates[torch.randint(len(candidates), (1,), generator=generator)]
            chosen[row, pick] = True
    labels = torch.where(chosen, ids, torch.full_like(ids, -100))
    enc.inputs["input_ids"] = torch.where(chosen, torch.full_like(ids, tok.mask_token_id), ids)
    return labels


def attention_gradients(
    texts: Sequence[str],
    pairs: Sequence[str | None] | None = None,
    *,
    model: Runner | str | None = None,
    objective: Objective | None = None,
    mask_rate: float = 0.15,
    seed: int = 0,
    batch_size: int = 8,
    progress: bool = True,
    words: bool = False,
) -> GradientStats:
    """Mean |∂L/∂A| per head, split by key kind, over ``texts``.

    Parameters
    ----------
    texts, pairs : sequences of str
        Inputs (and optional segment B of each).
    model : Runner, str or None
        The bundled model when None.
    objective : callable, optional
        ``objective(outputs, enc) -> scalar tensor``. Required unless the model has a masked-LM head, in which case
        the default is the MLM loss on ``mask_rate`` of the tokens.
    mask_rate : float
        Share of non-special tokens masked for the MLM loss.
    seed : int
        Seed of the masking.
    batch_size : int
    progress : bool
        Show a ``tqdm.auto`` progress bar.
    words : bool
        The gradient with respect to word-level attention, over (word, word) cells (see the module docstring).

    Returns
    -------
    GradientStats
        ``.mean()`` is (L, H, 4) over [CLS], [SEP], punctuation, other; ``.frame()`` is tidy.

    Examples
    --------
    >>> import attnwidgets as aw
    >>> r = aw.runner.get_runner()                                      # the bundled sentence encoder: no MLM head
    >>> obj = embedding_similarity(r, [("The cat sat.", "A cat was sitting.")])
    >>> g = attention_gradients(["The cat sat."], model=r, objective=obj)
    >>> g.mean().shape                                           # (layer, head, key kind)
    (6, 12, 4)
    >>> g.frame().statistic.unique().tolist()
    ['grad_cls', 'grad_sep', 'grad_punct', 'grad_other']
    >>> attention_gradients(["The cat sat."], model=r, objective=obj, words=True)
    GradientStats('embedding_similarity', 1 inputs, words=True)
    """
    runner = get_runner(model)
    if runner.info.kind == "encoder-decoder":
        raise ValueError("attention gradients are implemented for encoders and decoders, not encoder-decoders")
    if objective is None and runner.head != "masked-lm":
        raise ValueError(
            f"{runner.info.name!r} has no masked-LM head, so there is no default loss: pass objective=, e.g. "
            "embedding_similarity(runner, [(sentence, paraphrase), ...])"
        )
    texts = list(texts)
    pair_list = list(pairs) if pairs is not None else [None] * len(texts)
    name = "masked-lm" if objective is None else getattr(objective, "__name__", "objective")
    stats = GradientStats(runner.info.n_layers, runner.info.n_heads, name, words=words)
    generator = torch.Generator().manual_seed(seed)
    bar: Any = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(texts), desc="attention gradients", unit="text", delay=1.0)
    try:
        for start in range(0, len(texts), batch_size):
            enc = runner.encode(texts[start : start + batch_size], pair_list[start : start + batch_size])
            kinds_rows, words_rows = [], []
            for row in range(enc.batch_size):  # key kinds and words from the unmasked tokens
                fields = runner.token_fields(enc, row)
                kinds_rows.append(key_kind_index(token_kinds(fields["tokens"], fields["special_mask"])))
                words_rows.append((fields["word_ids"], fields["special_mask"]))
            kwargs: dict[str, Any] = {}
            if objective is None:
                kwargs["labels"] = _mask_tokens(runner, enc, mask_rate, generator)
            runner.model.zero_grad(set_to_none=True)
            out = runner.forward(enc, grad=True, **kwargs)
            attentions = out.attentions
            for a in attentions:
                a.retain_grad()
            loss = out.loss if objective is None else objective(out, enc)
            if loss.dim() != 0:
                raise ValueError(f"the objective must return a scalar, got shape {tuple(loss.shape)}")
            loss.backward()
            # a layer the objective does not reach has no gradient: it is 0 there
            stacked = torch.stack([a.grad if a.grad is not None else torch.zeros_like(a) for a in attentions], dim=1)
            grads = stacked.detach().float().cpu().numpy()  # (B, L, H, T, S), signed until the cells are final
            valid = enc.inputs.get("attention_mask", torch.ones_like(enc.inputs["input_ids"])).bool().numpy()
            for row, kind in enumerate(kinds_rows):
                g: np.ndarray = grads[row][..., valid[row]][..., valid[row], :]  # (L, H, n, n), padding removed
                if runner.info.kind == "decoder":  # future keys have no weight to change
                    g = g * np.tril(np.ones(g.shape[-2:], dtype=g.dtype))
                if words:
                    g, kind = _to_words(g, kind, *words_rows[row])  # (L, H, u, u), (u,)
                g = np.abs(g)
                # word i sees word j exactly when j <= i: a piece of j comes before a piece of i only if j <= i
                cells = np.tril(np.ones(g.shape[-2:])) if runner.info.kind == "decoder" else np.ones(g.shape[-2:])
                onehot = np.eye(len(KEY_KINDS))[kind]  # (n, 4) or (u, 4)
                stats.sums += g.sum(-2) @ onehot
                stats.counts += cells.sum(0) @ onehot
                stats.n_inputs += 1
            if bar is not None:
                bar.update(enc.batch_size)
    finally:
        runner.model.zero_grad(set_to_none=True)
        if bar is not None:
            bar.close()
    return stats
