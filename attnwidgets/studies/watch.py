"""Before/after of the outputs a user watches while ablating: the call an AblationWidget makes on every change.

:func:`watch_ablation` runs the texts clean (cached) and ablated (partial recompute), and returns plain data: the
watched numbers as columns of arrays (``.table``, what the widget draws), a tidy DataFrame of them (``.frame``, made
when first asked for) and a JSON-able dict, never tensors. What is watched depends on the model (``kind="auto"``):

=============  ==================================================================================================
``"mlm"``      masked-LM model and a [MASK] in the text: probabilities of the top-k tokens at each [MASK] (the
               union of the before and after top-k, so a token that drops out still shows its new probability)
``"probs"``    classifier: class probabilities
``"pairs"``    ``text_pairs`` given: cosine similarity of the pooled embeddings of ``texts[i]`` and
               ``text_pairs[i]`` (each sentence run on its own, as a sentence encoder is used)
``"ranking"``  ``query`` given: cosine similarity of each text to the query, and its rank (1 = closest)
``"drift"``    otherwise: cosine similarity of each text's pooled embedding after vs before (1 = unchanged)
callable       ``fn(result) -> float | dict``, evaluated before and after on each text
=============  ==================================================================================================

Examples
--------
>>> import attnwidgets as aw
>>> from attnwidgets.runner.ablation import Ablation
>>> w = watch_ablation(aw.runner.get_runner(), ["A man plays the guitar."], Ablation.layers([5]),
...                    text_pairs=["A man is playing a guitar."])
>>> w.kind, list(w.frame.columns)
('pairs', ['item', 'name', 'before', 'after', 'delta'])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from ..analysis.outputs import (
    ValueChanges,
    as_values,
    cosine,
    mask_values,
    pair_similarities,
    rank_candidates,
    value_changes,
)
from ..html_repr import repr_html
from ..result import AttentionResult
from ..runner import Runner
from ..runner.encoding import token_texts

__all__ = ["WatchResult", "watch_ablation"]

_KINDS: tuple[str, ...] = ("auto", "mlm", "probs", "pairs", "ranking", "drift")


@dataclass
class WatchResult:
    """Watched outputs before and after an ablation.

    Attributes
    ----------
    kind : str
        What was watched ("mlm", "probs", "pairs", "ranking", "drift" or "callable").
    table : ValueChanges
        The watched numbers as columns of arrays: ``item`` (which text / mask / pair), ``name`` (token, class, ...),
        ``before``, ``after``, ``delta`` (what the widget draws, read without a DataFrame).
    frame : pandas.DataFrame
        The same numbers as a tidy DataFrame (made from ``table`` when first asked for).
    before, after : list[AttentionResult]
        The clean and ablated results (the widget shows a head's map from ``after``).
    """

    _repr_html_ = repr_html  # the compact table a notebook shows (html_repr.py)

    kind: str
    table: ValueChanges
    before: list[AttentionResult]
    after: list[AttentionResult]

    @cached_property
    def frame(self) -> pd.DataFrame:
        """Tidy: ``item``, ``name``, ``before``, ``after``, ``delta`` (``table`` as a DataFrame)."""
        return self.table.to_frame()

    def to_dict(self) -> dict[str, Any]:
        """JSON-able: ``{"kind": ..., "rows": [{"item", "name", "before", "after", "delta"}, ...]}`` (NaN -> None)."""
        return {"kind": self.kind, "rows": self.table.records()}


def _auto_kind(runner: Runner, texts: Sequence[str], text_pairs: Sequence[str] | None, query: str | None) -> str:
    if text_pairs is not None:
        return "pairs"
    if query is not None:
        return "ranking"
    mask = getattr(runner.tokenizer, "mask_token", None)
    if runner.head == "masked-lm" and mask and any(mask in t for t in texts):
        return "mlm"
    if runner.head == "classification":
        return "probs"
    return "drift"


def _embeddings(results: Sequence[AttentionResult]) -> np.ndarray:
    if "embedding" not in results[0].outputs:
        raise ValueError(
            "these results have no pooled 'embedding' output to compare; watch another output "
            "(kind='mlm' or 'probs') or pass fn="
        )
    return np.stack([r.outputs["embedding"] for r in results])


def watch_ablation(
    runner: Runner,
    texts: Sequence[str],
    ablation: Any,
    *,
    kind: str | Callable[[AttentionResult], Any] = "auto",
    text_pairs: Sequence[str] | None = None,
    query: str | None = None,
    k: int = 5,
    batch_size: int = 32,
    progress: bool = True,
) -> WatchResult:
    """Run ``texts`` clean and with ``ablation`` and tabulate the watched outputs before and after.

    Parameters
    ----------
    runner : Runner
    texts : list of str
        The inputs (for ``"pairs"``: the first sentence of each pair; for ``"ranking"``: the candidates).
    ablation : Ablation or None
        None or an empty ablation gives after == before.
    kind : str or callable
        "auto" (see the module table), "mlm", "probs", "pairs", "ranking", "drift", or ``fn(result)``.
    text_pairs : list of str, optional
        Second sentences, for ``"pairs"``.
    query : str, optional
        The query, for ``"ranking"``.
    k : int
        Top-k for ``"mlm"``.
    progress : bool
        Show a ``tqdm.auto`` bar for each of the two runs once it has lasted a second.
    """
    if isinstance(texts, str):
        raise TypeError("texts must be a list of strings; wrap a single text in a list")
    texts = list(texts)
    fn = kind if callable(kind) else None
    if fn is None and kind not in _KINDS:
        raise ValueError(
            f"unknown kind {kind!r}: use 'auto', 'mlm', 'probs', 'pairs', 'ranking', 'drift' or a "
            "callable result -> float | dict"
        )
    kind_s = (
        "callable"
        if fn is not None
        else (_auto_kind(runner, texts, text_pairs, query) if kind == "auto" else str(kind))
    )
    # every check that needs no forward pass comes before the two runs
    if kind_s == "mlm" and runner.head != "masked-lm":
        raise ValueError(f"{runner.info.name!r} has no masked-LM head; watch 'drift', 'pairs' or a callable")
    if kind_s == "probs" and runner.head != "classification":
        raise ValueError(f"{runner.info.name!r} has no classification head; watch 'drift', 'pairs' or fn=")
    inputs = list(texts)
    if kind_s == "pairs":
        if text_pairs is None or len(text_pairs) != len(texts):
            raise ValueError("kind='pairs' needs text_pairs with one second sentence per text")
        inputs += list(text_pairs)
    elif kind_s == "ranking":
        if query is None:
            raise ValueError("kind='ranking' needs query= (the sentence the texts are ranked against)")
        inputs.append(query)
    before = runner.run_batch(inputs, batch_size=batch_size, progress=progress)
    after = (
        runner.run_batch(inputs, ablation=ablation, batch_size=batch_size, progress=progress) if ablation else before
    )
    n = len(texts)
    parts = _changes(runner, kind_s, fn, texts, before, after, k)
    table = ValueChanges.concat(parts) if parts else value_changes({}, {}, item="")
    return WatchResult(
        kind_s,
        table,
        before[:n] if kind_s in ("pairs", "ranking") else before,
        after[:n] if kind_s in ("pairs", "ranking") else after,
    )


def _changes(
    runner: Runner,
    kind: str,
    fn: Callable[[AttentionResult], Any] | None,
    texts: Sequence[str],
    before: Sequence[AttentionResult],
    after: Sequence[AttentionResult],
    k: int,
) -> list[ValueChanges]:
    """The watched numbers of ``kind``, before and after, as columns (one part per text, mask, or all pairs)."""
    n = len(texts)
    if kind == "mlm":
        return _mlm_changes(runner, before, after, k)
    if kind == "probs":
        labels = getattr(runner.model.config, "id2label", None) or {}
        parts = []
        for t, (b, a) in enumerate(zip(before, after)):
            name = [str(labels.get(i, i)) for i in range(len(b.outputs["probs"]))]
            parts.append(
                value_changes(
                    dict(zip(name, b.outputs["probs"])), dict(zip(name, a.outputs["probs"])), item=f"text {t}"
                )
            )
        return parts
    if kind == "pairs":  # one column of n pairs: the similarities stay the arrays they are
        eb, ea = _embeddings(before), _embeddings(after)
        sb, sa = pair_similarities(eb[:n], eb[n:]), pair_similarities(ea[:n], ea[n:])
        return [ValueChanges(tuple(f"pair {t}" for t in range(n)), ("cosine",) * n, sb, sa, sa - sb)]
    if kind == "ranking":  # per text: its cosine, then its rank
        eb, ea = _embeddings(before), _embeddings(after)
        ob, sb = rank_candidates(eb[n], eb[:n])
        oa, sa = rank_candidates(ea[n], ea[:n])
        rb, ra = np.empty(n, int), np.empty(n, int)
        rb[ob], ra[oa] = np.arange(1, n + 1), np.arange(1, n + 1)
        b_col, a_col = np.column_stack([sb, rb]).ravel(), np.column_stack([sa, ra]).ravel()  # (2n,) float64
        return [
            ValueChanges(tuple(t for t in texts for _ in range(2)), ("cosine", "rank") * n, b_col, a_col, a_col - b_col)
        ]
    if kind == "drift":
        eb, ea = _embeddings(before), _embeddings(after)
        b_col = np.ones(n)
        a_col = np.array([cosine(eb[t], ea[t]) for t in range(n)], dtype=np.float64)
        return [
            ValueChanges(tuple(f"text {t}" for t in range(n)), ("cosine to clean",) * n, b_col, a_col, a_col - b_col)
        ]
    assert fn is not None  # callable
    return [
        value_changes(as_values(fn(b)), as_values(fn(a)), item=f"text {t}")
        for t, (b, a) in enumerate(zip(before, after))
    ]


def _mlm_changes(
    runner: Runner, before: Sequence[AttentionResult], after: Sequence[AttentionResult], k: int
) -> list[ValueChanges]:
    """Per text and [MASK]: the probabilities of the union of the before and after top-k tokens."""
    tok = runner.tokenizer
    special_ids = set(tok.all_special_ids)

    def decode(i: int) -> str:  # a predicted token as the text it stands for (" café", not "ĠcafÃ©")
        return token_texts(tok, [i], [i in special_ids])[0]

    parts = []
    for t, (b, a) in enumerate(zip(before, after)):
        ids_b = np.argsort(-b.outputs.get("mask_logits", np.zeros((0, 1))), axis=-1)[:, :k]
        ids_a = np.argsort(-a.outputs.get("mask_logits", np.zeros((0, 1))), axis=-1)[:, :k]
        for m in range(len(ids_b)):
            ids = list(dict.fromkeys([*ids_b[m].tolist(), *ids_a[m].tolist()]))
            vb = mask_values(b.outputs["mask_logits"][m : m + 1], decode, ids=ids)[0]
            va = mask_values(a.outputs["mask_logits"][m : m + 1], decode, ids=ids)[0]
            parts.append(value_changes(vb, va, item=f"text {t} mask {m}"))
    return parts
