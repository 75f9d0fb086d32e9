"""Tasks with a metric for sweeps and head importance: the shipped labelled sets, scored through the runner.

A :class:`Task` is a list of texts, a ``score(results) -> float`` (higher is better) and, for Michel et al.'s
importance, a differentiable ``loss(pooled, rows)`` on the pooled embeddings of those texts.

- :func:`sentiment_task`: a logistic-regression probe is fitted on the *clean* pooled embeddings of a training split
  and then frozen; the metric is its accuracy on the held-out split as the model is ablated (as Kovaleva et al.
  evaluated a fixed fine-tuned classifier with heads disabled).
- :func:`sts_task`: Spearman correlation between the cosine similarity of the two sentences' pooled embeddings and
  the human score (0-5): the metric a sentence encoder is made for, with nothing fitted. Over all shipped pairs, or
  over the pairs of any frame; :func:`sts_sample` takes pairs spread evenly over the score range (notebook 04's sweep
  task, which the package ships sweeps and pruning curves of: :mod:`attnwidgets.studies.shipped`) and holds the
  others out.

The pooled embedding of an encoder-decoder is its *encoder's* output, which no decoder self- or cross-attention head
can change. So a task says which stacks its metric can depend on (:attr:`Task.stacks`); sweeps and importance refuse
a stack the metric cannot see instead of reporting zero effect everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from ..analysis.outputs import pair_similarities
from ..analysis.probe import Probe, fit_probe
from ..data.labelled import load_sentiment, load_sts_pairs, train_test_split_frame
from ..result import AttentionResult, ModelInfo
from ..runner import Runner
from ..runner.ablation import STACKS, stack_shape

__all__ = ["Task", "pooled_embedding", "sentiment_task", "sts_sample", "sts_task"]

Loss = Callable[[torch.Tensor, np.ndarray], torch.Tensor]


@dataclass
class Task:
    """Texts to run, a metric over their results, and optionally a differentiable loss.

    Attributes
    ----------
    name : str
    metric : str
        Name of what ``score`` returns (higher is better).
    texts : list[str]
    score : callable
        ``score(results) -> float`` over the results of ``texts``, in order.
    loss : callable, optional
        ``loss(pooled, rows) -> scalar tensor``: pooled embeddings (len(rows), d) of ``texts[rows]``, summed over
        examples. Needed for :func:`attnwidgets.studies.importance.head_importance`.
    groups : np.ndarray
        (len(texts),) example id of each text (a sentence pair is one example of two texts). Batches never split an
        example.
    score_embeddings : callable, optional
        The same metric from the pooled embeddings (N, d) alone; lets sweeps skip building full results.
    stacks : tuple[str, ...]
        The attention stacks ``score`` can depend on. The default, ``("self", "encoder")``, fits a metric of pooled
        embeddings (what ``score_embeddings`` and ``loss`` take, and what the shipped tasks use). A task whose
        ``score`` reads decoder outputs of an encoder-decoder (decoder or cross attention, say) adds ``"decoder"``
        and/or ``"cross"``; sweeps of those stacks then score full results with ``score``.
    probe : Probe, optional
        The frozen probe a probe-scored task was fitted with (:func:`sentiment_task`), for inspection.
    gold : np.ndarray, optional
        What the metric compares with, one per example: the human scores of :func:`sts_task`, the held-out labels of
        :func:`sentiment_task` (what a bootstrap over examples resamples).
    """

    name: str
    metric: str
    texts: list[str]
    score: Callable[[Sequence[AttentionResult]], float]
    loss: Loss | None = None
    groups: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    score_embeddings: Callable[[np.ndarray], float] | None = None
    stacks: tuple[str, ...] = ("self", "encoder")
    probe: Probe | None = None
    gold: np.ndarray | None = None

    def __post_init__(self) -> None:
        if len(self.groups) == 0:
            self.groups = np.arange(len(self.texts), dtype=np.int64)
        if len(self.groups) != len(self.texts):
            raise ValueError("groups must give one example id per text")
        self.stacks = tuple(self.stacks)
        for stack in self.stacks:
            if stack not in STACKS:
                raise ValueError(f"unknown stack {stack!r} in stacks: use 'self', 'encoder', 'decoder' or 'cross'")

    def check_stack(self, info: ModelInfo, stack: str, *, needs_loss: bool = False) -> tuple[int, int]:
        """(layers, heads) of ``stack``; ValueError if the model has no such stack or this task cannot see it.

        With ``needs_loss`` (head importance) only encoder-side stacks qualify: ``loss`` takes pooled embeddings.
        """
        shape = stack_shape(info, stack)
        if needs_loss and stack in ("decoder", "cross"):
            raise ValueError(f"head importance of the {stack!r} stack is not defined for task {self.name!r}: its loss "
                             "is computed from the pooled encoder embedding, which no decoder or cross-attention head "
                             "changes. Use stack='encoder'.")
        if stack not in self.stacks:
            raise ValueError(f"task {self.name!r} scores the pooled encoder embedding, which no {stack!r} attention "
                             "head changes (every delta would be 0). Sweep stack='encoder', or give a Task whose "
                             f"score reads decoder outputs and say so with stacks=(..., {stack!r}).")
        return shape

    def batches(self, batch_size: int) -> list[np.ndarray]:
        """Row indices in batches of about ``batch_size`` texts that keep each example whole."""
        out: list[np.ndarray] = []
        current: list[int] = []
        for i in range(len(self.texts)):
            if len(current) >= batch_size and self.groups[i] != self.groups[current[-1]]:
                out.append(np.array(current))
                current = []
            current.append(i)
        if current:
            out.append(np.array(current))
        return out


def pooled_embedding(out: object, mask: torch.Tensor) -> torch.Tensor:
    """Mean of the last hidden state over valid tokens, (B, d) (what ``outputs["embedding"]`` holds), in torch: float32
    on the CPU, whatever the model's device and dtype, so that probes and losses built on the CPU apply (gradients
    flow back through the move)."""
    hidden = getattr(out, "encoder_last_hidden_state", None)
    if hidden is None:
        hidden = getattr(out, "last_hidden_state", None)
    if hidden is None:
        hidden = out.hidden_states[-1]  # type: ignore[attr-defined]
    m = mask.to(hidden.device, hidden.dtype).unsqueeze(-1)
    return ((hidden * m).sum(1) / m.sum(1).clamp_min(1.0)).float().cpu()


def _embeddings(results: Sequence[AttentionResult]) -> np.ndarray:
    return np.stack([r.outputs["embedding"] for r in results])


def sentiment_task(runner: Runner, *, test_size: float = 0.4, seed: int = 0, metric: str = "accuracy",
                   batch_size: int = 64) -> Task:
    """The shipped sentiment set: a probe fitted on clean training embeddings, scored on the held-out split.

    Parameters
    ----------
    metric : {"accuracy", "log_likelihood"}
        Accuracy of the frozen probe, or the mean log-probability it gives the true class (finer-grained).
    """
    if metric not in ("accuracy", "log_likelihood"):
        raise ValueError(f"metric must be 'accuracy' or 'log_likelihood', got {metric!r}")
    train, test = train_test_split_frame(load_sentiment(), test_size=test_size, seed=seed)
    X = _embeddings(runner.run_batch(list(train.text), batch_size=batch_size, progress=False))
    probe: Probe = fit_probe(X, train.label.to_numpy(), seed=seed)
    y = test.label.to_numpy()
    target = torch.from_numpy((y == probe.classes[1]).astype(np.float32))
    w = torch.from_numpy(probe.weight[0].astype(np.float32))
    b = float(probe.bias[0])

    def score_embeddings(E: np.ndarray) -> float:
        return probe.accuracy(E, y) if metric == "accuracy" else probe.log_likelihood(E, y)

    def score(results: Sequence[AttentionResult]) -> float:
        return score_embeddings(_embeddings(results))

    def loss(pooled: torch.Tensor, rows: np.ndarray) -> torch.Tensor:
        logits = pooled.float() @ w + b
        return torch.nn.functional.binary_cross_entropy_with_logits(logits, target[rows], reduction="sum")

    return Task("sentiment probe", metric, list(test.text), score, loss, score_embeddings=score_embeddings,
                probe=probe, gold=y)


STS_COLUMNS = ("sentence_a", "sentence_b", "score")
"""The columns a frame of sentence pairs needs (those of :func:`~attnwidgets.data.labelled.load_sts_pairs`)."""

MIN_PAIRS = 3
"""Fewest pairs a similarity task takes: Spearman's ρ of two pairs is always ±1, of one undefined."""


def sts_task(pairs: pd.DataFrame | None = None, name: str | None = None) -> Task:
    """Sentence similarity: Spearman ρ between the cosine of the two sentences' pooled embeddings and the human score.

    Parameters
    ----------
    pairs : pandas.DataFrame, optional
        Sentence pairs, columns ``sentence_a``, ``sentence_b`` and ``score`` (0-5), one row a pair, e.g. rows of
        :func:`~attnwidgets.data.labelled.load_sts_pairs`. Default: all shipped pairs.
    name : str, optional
        The task's name; default ``"sentence similarity"`` for all shipped pairs, ``"sentence similarity (N pairs)"``
        for a frame.

    Returns
    -------
    Task
        Texts a0, b0, a1, b1, ... (``groups`` keeps each pair in one batch), ``gold`` the human scores, ``loss`` the
        squared error of the cosine against score / 5, summed over the batch's pairs.

    Raises
    ------
    ValueError
        For a frame without those columns, with fewer than :data:`MIN_PAIRS` pairs, with a sentence that is not
        text, or with a score that is not a number from 0 to 5.

    Examples
    --------
    >>> frame = pd.DataFrame({"sentence_a": ["A cat sat.", "It rained.", "He ran."],
    ...                       "sentence_b": ["A cat was sitting.", "The sun shone.", "He was running."],
    ...                       "score": [4.5, 1.0, 4.0]})
    >>> task = sts_task(frame)
    >>> task.name, task.texts[:2], task.gold.tolist(), task.groups.tolist()
    ('sentence similarity (3 pairs)', ['A cat sat.', 'A cat was sitting.'], [4.5, 1.0, 4.0], [0, 0, 1, 1, 2, 2])
    >>> task.score_embeddings(np.array([[1.0, 0], [1, 0.1], [1, 0], [0, 1], [0, 1], [0.2, 1]]))  # cosines .99, 0, .98
    1.0
    """
    from scipy.stats import spearmanr

    if pairs is None:
        df, name = load_sts_pairs(), name or "sentence similarity"
    else:
        df = _check_pairs(pairs)
        name = name or f"sentence similarity ({len(df)} pairs)"
    texts = [str(s) for pair in zip(df.sentence_a, df.sentence_b) for s in pair]
    gold = df.score.to_numpy(np.float64)
    gold_t = torch.from_numpy((gold / 5.0).astype(np.float32))

    def score_embeddings(E: np.ndarray) -> float:
        return float(spearmanr(pair_similarities(E[0::2], E[1::2]), gold).statistic)

    def score(results: Sequence[AttentionResult]) -> float:
        return score_embeddings(_embeddings(results))

    def loss(pooled: torch.Tensor, rows: np.ndarray) -> torch.Tensor:
        if len(rows) % 2 or rows[0] % 2:
            raise ValueError("STS batches must hold whole pairs")
        cos = torch.nn.functional.cosine_similarity(pooled[0::2].float(), pooled[1::2].float(), dim=-1)
        return ((cos - gold_t[rows[0::2] // 2]) ** 2).sum()

    return Task(name, "spearman", texts, score, loss, np.repeat(np.arange(len(df)), 2), score_embeddings,
                gold=gold)


def _check_pairs(pairs: object) -> pd.DataFrame:
    if not isinstance(pairs, pd.DataFrame):
        raise TypeError(f"pairs must be a pandas DataFrame with the columns {', '.join(STS_COLUMNS)}, got "
                        f"{type(pairs).__name__}")
    missing = [c for c in STS_COLUMNS if c not in pairs.columns]
    if missing:
        raise ValueError(f"the frame of pairs has no column {', '.join(map(repr, missing))}: it needs "
                         f"{', '.join(STS_COLUMNS)} (as load_sts_pairs() gives)")
    if len(pairs) < MIN_PAIRS:
        raise ValueError(f"a similarity task needs at least {MIN_PAIRS} pairs (Spearman's rho of fewer is always "
                         f"±1 or undefined), got {len(pairs)}")
    for col in ("sentence_a", "sentence_b"):
        bad = [i for i, s in zip(pairs.index, pairs[col]) if not isinstance(s, str) or not s.strip()]
        if bad:
            raise ValueError(f"the pair at row {bad[0]} has no text in {col!r}")
    try:
        score = pd.to_numeric(pairs["score"], errors="raise").to_numpy(np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"the frame's scores must be numbers from 0 to 5 ({exc})") from None
    bad_at = np.flatnonzero(~((score >= 0) & (score <= 5)))
    if len(bad_at):
        raise ValueError(f"the pair at row {pairs.index[bad_at[0]]} has the score {score[bad_at[0]]:g}, not a "
                         "number from 0 to 5")
    return pairs.assign(score=score)


def sts_sample(n_pairs: int | None = 40) -> tuple[Task, Task | None]:
    """``n_pairs`` of the shipped sentence pairs spread evenly over the score range as a task, and the other pairs as
    a held-out task (None when ``n_pairs`` is None: then the first task is :func:`sts_task`'s, all pairs).

    The pairs are sorted by score (ties in file order) and every ``(len - 1) / (n_pairs - 1)``-th is taken, so the
    lowest and the highest score are always in. A sweep over 40 pairs costs about a quarter of one over all 152;
    notebook 04 sweeps ``sts_sample(40)[0]`` and checks its finding on the held-out pairs, and the package ships
    that sweep and its pruning curves for the bundled model (:mod:`attnwidgets.studies.shipped`).

    Raises
    ------
    ValueError
        Unless ``n_pairs`` is a whole number that leaves at least :data:`MIN_PAIRS` pairs on each side.

    Examples
    --------
    >>> task, held_out = sts_sample(40)
    >>> task.name, len(task.texts), held_out.name, len(held_out.texts)
    ('sentence similarity (40 pairs)', 80, 'similarity (112 other pairs)', 224)
    >>> float(task.gold.min()), float(task.gold.max()), bool((np.diff(task.gold) >= 0).all())
    (0.0, 5.0, True)
    """
    if n_pairs is None:
        return sts_task(), None
    everything = load_sts_pairs()
    most = len(everything) - MIN_PAIRS
    if isinstance(n_pairs, bool) or not isinstance(n_pairs, (int, np.integer)) or not MIN_PAIRS <= n_pairs <= most:
        raise ValueError(f"n_pairs must be a whole number from {MIN_PAIRS} to {most} (the shipped set has "
                         f"{len(everything)} pairs; None takes them all), got {n_pairs!r}")
    by_score = everything.sort_values("score", kind="stable")
    chosen = by_score.index[np.linspace(0, len(by_score) - 1, int(n_pairs)).round().astype(int)]
    rest = everything.drop(chosen)
    return (sts_task(everything.loc[chosen], f"sentence similarity ({n_pairs} pairs)"),
            sts_task(rest, f"similarity ({len(rest)} other pairs)"))
