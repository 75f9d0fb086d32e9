"""Clark et al.'s attention-based probing classifier (2019, section 5), trained on a treebank.

The probe itself (features, loss, L-BFGS training, UAS, baselines) is numpy in
:mod:`attnwidgets.analysis.attention_probe`; this module runs the treebank's sentences through the model, reads the
model's input-embedding table for the word vectors, splits the sentences (or takes a train and a test set) and
reports the probe beside the paper's comparison rows: the branching baselines and the best single head.

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
    single_head_counts,
    split_sentences,
    weight_frame,
)
from ..analysis.conllu import ParseError, Sentence, TextMode, read_conllu, words_text
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
    best_head : tuple[int, int]
        (layer, head), 0-based, of the best single head: each word's parent read as the word its row attends to most
        (:func:`~attnwidgets.analysis.attention_probe.single_head_counts`), chosen on the training sentences.
    best_head_uas, best_head_train_uas : float
        Its share on the held-out (training) dependents: the paper's "best single head" row beside the probe.
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
    best_head: tuple[int, int] = (-1, -1)
    best_head_uas: float = float("nan")
    best_head_train_uas: float = float("nan")

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
        """One row per scorer (the probe on the held-out and the training sentences, the two baselines, the best
        single head on the held-out sentences): model, uas, split, and the best head's 1-based "layer-head" label."""
        import pandas as pd

        name = "attention + words" if self.words else "attention only"
        layer, head = self.best_head
        return pd.DataFrame({
            "model": [f"{name} (held out)", f"{name} (training sentences)", "right-branching", "left-branching",
                      "best single head"],
            "uas": [self.uas, self.train_uas, self.right_branching, self.left_branching, self.best_head_uas],
            "split": ["test", "train", "test", "test", "test"],
            "head": ["", "", "", "", f"{layer + 1}-{head + 1}"],
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
                f"left-branching {self.left_branching:.3f}, best single head {self.best_head[0] + 1}-"
                f"{self.best_head[1] + 1} {self.best_head_uas:.3f}; trained on {self.n_train_sentences} sentences "
                f"(UAS {self.train_uas:.3f}); largest weight {top['label']} {top['direction']} {top['weight']:.2f})")


def _embedding_table(runner: Any) -> np.ndarray:
    emb = cast(Any, runner.model).get_input_embeddings()
    if emb is None:
        raise ValueError(f"model {runner.info.name!r} has no input-embedding table to stand in for GloVe; use "
                         "words=False")
    return np.asarray(emb.weight.detach().float().cpu().numpy())


def _read(source: str | Path | Sequence[Sentence], role: str, text: TextMode) -> tuple[list[Sentence], str]:
    """The sentences of one source, checked: (sentences, a name for messages)."""
    name = str(source) if isinstance(source, str | Path) and "\n" not in str(source) else role
    sentences = list(source) if not isinstance(source, str | Path) else read_conllu(source)
    if not sentences:
        raise ParseError(f"no sentences with dependency trees in {role}: the probe trains and scores on CoNLL-U "
                         "sentences with their HEAD column filled; check that this is a CoNLL-U treebank", source=name)
    if all((s.heads < 0).all() for s in sentences):
        raise ParseError(f"no sentence has a dependency tree (every HEAD is 0 or '_') in {role}: the probe needs gold "
                         "heads", source=name)
    return ([words_text(s) for s in sentences] if text == "words" else sentences), name


def attention_probe(
    source: str | Path | Sequence[Sentence] | None = None,
    model: Any = None,
    *,
    train: str | Path | Sequence[Sentence] | None = None,
    test: str | Path | Sequence[Sentence] | None = None,
    words: bool = False,
    test_share: float | None = None,
    seed: int | None = None,
    rows: RowMode = "mean",
    text: TextMode = "surface",
    dims: int = 16,
    l2: float = 1e-3,
    max_iter: int = 200,
    punct: bool = False,
    batch_size: int = 16,
) -> ProbeResult:
    """Train Clark et al.'s attention-based probe on a treebank and score it on held-out sentences.

    Either one ``source``, shuffled and split (``test_share``, ``seed``), or a ``train`` and a ``test`` set (a
    treebank's own split: train on one file, score on another), as Clark et al. did on the Penn Treebank.

    Parameters
    ----------
    source : path, CoNLL-U text, or list of Sentence
        E.g. :func:`attnwidgets.data.ud_sample_path` (45 hand-annotated sentences), split into train and test.
    model : Runner, str or None
        A runner, a model id or folder, or None for the bundled model.
    train, test : path, CoNLL-U text, or list of Sentence
        In place of ``source``: the sentences to train on and those to score on (both, and no ``test_share`` or
        ``seed``, which only split one source).
    words : bool
        False: the attention-only probe. True: attention + words, with the model's own input embeddings (averaged
        over a word's pieces, ``dims`` principal components) standing in for the paper's GloVe vectors.
    test_share, seed : float, int
        The split of ``source``: sentences shuffled by ``seed`` (default 0), the last ``test_share`` (default 0.25)
        held out (fixed for a given seed).
    rows : {"mean", "first"}
        A word's row: mean of its pieces (paper) or first piece (their code).
    text : {"surface", "words"}
        What the model reads of each sentence, as in :func:`~attnwidgets.analysis.conllu.read_conllu`: its
        ``# text`` line (multiword tokens whole) or its syntactic words joined by spaces; for every set alike.
    dims, l2, max_iter
        See :func:`~attnwidgets.analysis.attention_probe.fit_attention_probe`.
    punct : bool
        Count punctuation in UAS (the paper leaves it out).

    Returns
    -------
    ProbeResult
        The probe's UAS on the test sentences beside the paper's comparison rows, on the same words: right- and
        left-branching, and the best single head (the layer-head whose most-attended word is the best parent on the
        training sentences, scored on the test sentences).

    Raises
    ------
    ParseError
        A set with no sentences (or no dependency annotation), or a file that is not CoNLL-U.
    ValueError
        Fewer than 2 sentences to split, ``source`` together with ``train``/``test`` (or one of them alone, or a split
        setting with them), the same file as both, or bad settings.

    Examples
    --------
    >>> from attnwidgets.data import ud_sample_path
    >>> r = attention_probe(ud_sample_path(), max_iter=50)
    >>> r.weights.shape                                  # (direction, layer, head) of the bundled 6 x 12 model
    (2, 6, 12)
    >>> r.frame()["model"].tolist()[2:]
    ['right-branching', 'left-branching', 'best single head']
    """
    from ..runner import get_runner

    if text not in ("surface", "words"):
        raise ValueError(f"text must be 'surface' or 'words', got {text!r}")
    if (train is None) != (test is None):
        raise ValueError("give both train= and test= (or neither, and one source to split)")
    if train is not None and test is not None:
        if source is not None:
            raise ValueError("give either one source (split by test_share and seed) or train= and test=, not both")
        if test_share is not None or seed is not None:
            raise ValueError("test_share and seed split one source; with train= and test= there is nothing to split: "
                             "leave them out")
        if isinstance(train, str | Path) and isinstance(test, str | Path) and "\n" not in str(train) \
                and Path(train).resolve() == Path(test).resolve():
            raise ValueError(f"train and test are the same file ({train}): score the probe on sentences it was not "
                             "trained on")
        train_sentences, train_name = _read(train, "the training set", text)
        test_sentences, test_name = _read(test, "the test set", text)
        sentences = train_sentences + test_sentences
        train_idx = np.arange(len(train_sentences))
        test_idx = len(train_sentences) + np.arange(len(test_sentences))
        split: dict[str, Any] = {"train": train_name, "test": test_name}
    elif source is None:
        raise ValueError("no sentences: give a treebank (a CoNLL-U file, text or parsed sentences) to split, or "
                         "train= and test=")
    else:
        test_share = 0.25 if test_share is None else test_share
        seed = 0 if seed is None else seed
        sentences, _ = _read(source, "the treebank", text)
        train_idx, test_idx = split_sentences(len(sentences), test_share, seed)
        split = {"test_share": test_share, "seed": seed}
    runner = get_runner(model)
    # one result at a time: the study keeps each sentence's word-level attention, not the model's token-level results
    results = runner.iter_results([s.text for s in sentences], batch_size=batch_size, progress=False)
    table = _embedding_table(runner) if words else None
    data: list[ProbeSentence] = []
    for result, sentence in zip(results, sentences):
        vectors = None if table is None else table[np.asarray(result.token_ids, np.int64)]
        data.append(probe_sentence(result, sentence, rows, vectors))
    train_data = [data[i] for i in train_idx]
    test_data = [data[i] for i in test_idx]
    probe = fit_attention_probe(train_data, words=words, dims=dims, l2=l2, max_iter=max_iter)

    def rate(right: int, total: int) -> float:
        return right / total if total else float("nan")

    n_test = score_heads([s.heads for s in test_data], test_data, punct)[1]
    branch = {d: rate(*score_heads([branching_heads(s.n_words, d) for s in test_data], test_data, punct))
              for d in ("right", "left")}
    head_train, n_train = single_head_counts(train_data, punct)
    best = np.unravel_index(int(np.argmax(head_train)), head_train.shape)  # chosen on the training sentences
    head_test, _ = single_head_counts(test_data, punct)
    settings = {"words": words, **split, "rows": rows, "text": text, "dims": dims, "l2": l2, "max_iter": max_iter,
                "punct": punct, "word_vectors": "model input embeddings" if words else None}
    return ProbeResult(probe.uas(test_data, punct), probe.uas(train_data, punct), branch["right"], branch["left"],
                       n_test, len(train_data), len(test_data), probe, runner.info.name, settings,
                       (int(best[0]), int(best[1])), rate(int(head_test[best]), n_test),
                       rate(int(head_train[best]), n_train))
