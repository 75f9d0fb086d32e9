"""Clark et al.'s attention-based probing classifier (2019, section 5), trained on a treebank.

The probe itself (features, loss, L-BFGS training, UAS, baselines) is numpy in
:mod:`attnwidgets.analysis.attention_probe`; this module runs the treebank's sentences through the model, reads the
model's input-embedding table for the word vectors, splits the sentences and reports.

Word vectors: the paper's attention + words probe uses GloVe. We ship no GloVe, so the model's **own input (token)
embeddings**, averaged over a word's pieces, stand in for them. They are static, context-free vectors like GloVe, but
learned by the model being probed, on its own vocabulary.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..analysis.attention_probe import (
    AttentionProbe,
    ProbeSentence,
    branching_heads,
    fit_attention_probe,
    probe_sentence,
    score_heads,
    split_sentences,
    weight_frame,
)
from ..analysis.conllu import ParseError, Sentence, read_conllu
from ..analysis.intervals import wilson_interval
from ..analysis.words import RowMode
from ..html_repr import repr_html

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["ProbeResult", "attention_probe"]


@dataclass
class ProbeResult:
    """What :func:`attention_probe` measured: held-out UAS of the probe beside the branching baselines.

    Attributes
    ----------
    uas, train_uas : float
        Share of the held-out (training) dependents whose predicted head is their gold head, punctuation left out
        unless ``settings["punct"]``.
    right_branching, left_branching : float
        The same share for "the next word is the head" and "the previous word is the head", on the held-out words.
    n_test : int
        Dependents scored on the held-out sentences (the denominator of ``uas``).
    probe : AttentionProbe
        The trained probe; ``probe.weights`` (2, layers, heads) its per-head weights.
    """

    _repr_html_ = repr_html  # the compact table a notebook shows (html_repr.py)

    uas: float
    train_uas: float
    right_branching: float
    left_branching: float
    n_test: int
    n_train_sentences: int
    n_test_sentences: int
    probe: AttentionProbe
    model: str = ""
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def words(self) -> bool:
        return self.probe.words

    @property
    def weights(self) -> np.ndarray:
        """(2, L, H) learned weight per direction ("head->dependent", "dependent->head"), layer and head."""
        return self.probe.weights

    def interval(self, confidence: float = 0.95) -> tuple[float, float]:
        """Wilson interval of the held-out UAS (few sentences: read it before comparing two probes)."""
        return wilson_interval(round(self.uas * self.n_test), self.n_test, confidence)

    def frame(self) -> pd.DataFrame:
        """One row per scorer (the probe on the held-out and the training sentences, the two baselines): name, uas,
        dependents."""
        import pandas as pd

        name = "attention + words" if self.words else "attention only"
        return pd.DataFrame({
            "model": [f"{name} (held out)", f"{name} (training sentences)", "right-branching", "left-branching"],
            "uas": [self.uas, self.train_uas, self.right_branching, self.left_branching],
            "split": ["test", "train", "test", "test"],
        })

    def weight_frame(self) -> pd.DataFrame:
        """(layer, head, label, direction, weight) of every head's learned weight, largest first; ``label`` is
        1-based "layer-head" as in the paper."""
        return weight_frame(self.probe)

    def __repr__(self) -> str:
        name = "attention + words" if self.words else "attention only"
        lo, hi = self.interval()
        top = self.weight_frame().iloc[0]
        model = f"{self.model!r}, " if self.model else ""
        return (f"ProbeResult({model}{name}: held-out UAS {self.uas:.3f} [95% {lo:.2f}-{hi:.2f}] on {self.n_test} "
                f"dependents of {self.n_test_sentences} sentences; right-branching {self.right_branching:.3f}, "
                f"left-branching {self.left_branching:.3f}; trained on {self.n_train_sentences} sentences "
                f"(UAS {self.train_uas:.3f}); largest weight {top['label']} {top['direction']} {top['weight']:.2f})")


def _embedding_table(runner: Any) -> np.ndarray:
    emb = cast(Any, runner.model).get_input_embeddings()
    if emb is None:
        raise ValueError(f"model {runner.info.name!r} has no input-embedding table to stand in for GloVe; use "
                         "words=False")
    return np.asarray(emb.weight.detach().float().cpu().numpy())


def attention_probe(
    source: str | Path | Sequence[Sentence],
    model: Any = None,
    *,
    words: bool = False,
    test_share: float = 0.25,
    seed: int = 0,
    rows: RowMode = "mean",
    dims: int = 16,
    l2: float = 1e-3,
    max_iter: int = 200,
    punct: bool = False,
    batch_size: int = 16,
) -> ProbeResult:
    """Train Clark et al.'s attention-based probe on a treebank and score it on held-out sentences.

    Parameters
    ----------
    source : path, CoNLL-U text, or list of Sentence
        E.g. :func:`attnwidgets.data.ud_sample_path` (45 hand-annotated sentences).
    model : Runner, str or None
        A runner, a model id or folder, or None for the bundled model.
    words : bool
        False: the attention-only probe. True: attention + words, with the model's own input embeddings (averaged
        over a word's pieces, ``dims`` principal components) standing in for the paper's GloVe vectors.
    test_share, seed : float, int
        The split: sentences shuffled by ``seed``, the last ``test_share`` held out (fixed for a given seed).
    rows : {"mean", "first"}
        A word's row: mean of its pieces (paper) or first piece (their code).
    dims, l2, max_iter
        See :func:`~attnwidgets.analysis.attention_probe.fit_attention_probe`.
    punct : bool
        Count punctuation in UAS (the paper leaves it out).

    Raises
    ------
    ParseError
        A treebank with no sentences (or no dependency annotation), or a file that is not CoNLL-U.
    ValueError
        Fewer than 2 sentences (no train/test split), or bad settings.

    Examples
    --------
    >>> from attnwidgets.data import ud_sample_path
    >>> r = attention_probe(ud_sample_path(), max_iter=50)
    >>> r.weights.shape                                  # (direction, layer, head) of the bundled 6 x 12 model
    (2, 6, 12)
    >>> r.frame().columns.tolist()
    ['model', 'uas', 'split']
    """
    from ..runner import get_runner

    name = str(source) if isinstance(source, str | Path) and "\n" not in str(source) else "the treebank"
    sentences = list(source) if not isinstance(source, str | Path) else read_conllu(source)
    if not sentences:
        raise ParseError("no sentences with dependency trees: the probe trains on CoNLL-U sentences with their HEAD "
                         "column filled; check that this is a CoNLL-U treebank", source=name)
    if all((s.heads < 0).all() for s in sentences):
        raise ParseError("no sentence has a dependency tree (every HEAD is 0 or '_'): the probe needs gold heads",
                         source=name)
    train_idx, test_idx = split_sentences(len(sentences), test_share, seed)
    runner = get_runner(model)
    results = runner.run_batch([s.text for s in sentences], batch_size=batch_size, progress=False)
    table = _embedding_table(runner) if words else None
    data: list[ProbeSentence] = []
    for result, sentence in zip(results, sentences):
        vectors = None if table is None else table[np.asarray(result.token_ids, np.int64)]
        data.append(probe_sentence(result, sentence, rows, vectors))
    train = [data[i] for i in train_idx]
    test = [data[i] for i in test_idx]
    probe = fit_attention_probe(train, words=words, dims=dims, l2=l2, max_iter=max_iter)

    def rate(right_total: tuple[int, int]) -> float:
        right, total = right_total
        return right / total if total else float("nan")

    n_test = score_heads([s.heads for s in test], test, punct)[1]
    branch = {d: rate(score_heads([branching_heads(s.n_words, d) for s in test], test, punct))
              for d in ("right", "left")}
    settings = {"words": words, "test_share": test_share, "seed": seed, "rows": rows, "dims": dims, "l2": l2,
                "max_iter": max_iter, "punct": punct, "word_vectors": "model input embeddings" if words else None}
    return ProbeResult(probe.uas(test, punct), probe.uas(train, punct), branch["right"], branch["left"], n_test,
                       len(train), len(test), probe, runner.info.name, settings)
