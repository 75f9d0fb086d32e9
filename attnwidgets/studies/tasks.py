"""Tasks with a metric for sweeps and head importance: the shipped labelled sets, scored through the runner.

A :class:`Task` is a list of texts, a ``score(results) -> float`` (higher is better) and, for Michel et al.'s
importance, a differentiable ``loss(pooled, rows)`` on the pooled embeddings of those texts.

- :func:`sentiment_task`: a logistic-regression probe is fitted on the *clean* pooled embeddings of a training split
  and then frozen; the metric is its accuracy on the held-out split as the model is ablated (as Kovaleva et al.
  evaluated a fixed fine-tuned classifier with heads disabled).
- :func:`sts_task`: Spearman correlation between the cosine similarity of the two sentences' pooled embeddings and
  the human score (0-5): the metric a sentence encoder is made for, with nothing fitted.

The pooled embedding of an encoder-decoder is its *encoder's* output, which no decoder self- or cross-attention head
can change. So a task says which stacks its metric can depend on (:attr:`Task.stacks`); sweeps and importance refuse
a stack the metric cannot see instead of reporting zero effect everywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from ..analysis.outputs import pair_similarities
from ..analysis.probe import Probe, fit_probe
from ..data.labelled import load_sentiment, load_sts_pairs, train_test_split_frame
from ..result import AttentionResult, ModelInfo
from ..runner import Runner
from ..runner.ablation import STACKS, stack_shape

__all__ = ["Task", "pooled_embedding", "sentiment_task", "sts_task"]

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
                probe=probe)


def sts_task() -> Task:
    """The shipped sentence pairs: Spearman ρ of embedding cosine vs the human score (texts are a0, b0, a1, b1...)."""
    from scipy.stats import spearmanr

    df = load_sts_pairs()
    texts = [s for pair in zip(df.sentence_a, df.sentence_b) for s in pair]
    gold = df.score.to_numpy()
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

    return Task("sentence similarity", "spearman", texts, score, loss, np.repeat(np.arange(len(df)), 2),
                score_embeddings)
