"""Activation patching per head (Vig et al. 2020; Meng et al. 2022; Wang et al. 2022's IOI circuit): which heads
carry what separates a clean input from a corrupted one.

For every layer × head, run one input with that head's output (its contribution before the output projection)
taken from the other input's run, and score the prediction (:mod:`attnwidgets.runner.patching` says how a head is
patched and what each model is scored by):

- ``direction="noising"`` (default): the clean input with one corrupted head. A head whose patch moves the metric
  far from its clean value carries information the clean prediction needs.
- ``direction="denoising"``: the corrupted input with one clean head. A head whose patch restores the clean value
  is enough on its own to carry it.
- ``what="pattern"`` patches the attention weights only (the head reads the patched run's positions but its own
  run's values); ``what="output"`` (default) the whole head output.
- ``positions=True`` patches one position at a time: [layer, head, position].

Both inputs must tokenise to the same length (patching a position only means something when the positions line up):
a clear error otherwise, with both token lists.

Examples
--------
>>> from attnwidgets.studies import patch_heads
>>> p = patch_heads("The cat sat on the mat.", "The dog sat on the mat.")     # the bundled sentence encoder
>>> p.values.shape, p.metric.split(" of ")[0]
((6, 12), 'cosine similarity')
>>> round(p.clean, 6), bool(p.corrupted < 1)
(1.0, True)
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from ..html_repr import repr_html
from ..runner import Runner, get_runner
from ..runner.patching import (
    Direction,
    PatchingUnavailableError,
    What,
    batch_rows,
    head_outputs,
    metric_values,
    patch_layers,
    resolve_metric,
)

__all__ = ["PatchingResult", "PatchingUnavailableError", "patch_heads"]


@dataclass(frozen=True)
class PatchingResult:
    """The metric with each head patched.

    Attributes
    ----------
    values : np.ndarray
        float64 [layer, head] (or [layer, head, position]): the metric of the patched run.
    clean, corrupted : float
        The metric of the clean and of the corrupted input, unpatched.
    direction : {"noising", "denoising"}
    what : {"output", "pattern"}
    metric : str
        What was measured, in words.
    clean_tokens, corrupted_tokens : list[str]
        The two inputs' tokens (the same length).
    model : str
        The model's name.
    seconds : float
        Wall time of the patched runs.
    clean_text, corrupted_text : str
        The two inputs.
    runner : Runner
        The runner that made it (in memory only: a :class:`~attnwidgets.widgets.PatchingView` runs both texts on it).
    """

    _repr_html_ = repr_html

    values: np.ndarray
    clean: float
    corrupted: float
    direction: str
    what: str
    metric: str
    clean_tokens: list[str]
    corrupted_tokens: list[str]
    model: str
    seconds: float = field(default=0.0, repr=False)
    clean_text: str = ""
    corrupted_text: str = ""
    runner: Runner | None = field(default=None, repr=False, compare=False)

    @property
    def label(self) -> str:
        """What the grid shows, in a few words: the change in which metric, patching which way (:attr:`metric` says
        the metric in full)."""
        short = ("logit difference" if self.metric.startswith("logit(") else
                 "log-probability" if self.metric.startswith("log p(") else "embedding similarity")
        return f"change in {short} ({self.direction} the {self.what})"

    @property
    def normalised(self) -> np.ndarray:
        """(patched − corrupted) / (clean − corrupted): 1 where the patched run scores as the clean input does, 0 as
        the corrupted one. Under noising a head near 0 is one the clean prediction needs; under denoising a head near
        1 restores it on its own. NaN everywhere when the two inputs score the same."""
        gap = self.clean - self.corrupted
        if gap == 0:
            return np.full_like(self.values, np.nan)
        return (self.values - self.corrupted) / gap

    @property
    def effect(self) -> np.ndarray:
        """The patched metric minus the unpatched run's (the clean one under noising, the corrupted under
        denoising): what patching that head changed."""
        base = self.clean if self.direction == "noising" else self.corrupted
        return self.values - base

    def top(self, k: int = 5) -> list[tuple[int, int, float]]:
        """The ``k`` heads whose patch changed the metric most, as (layer, head, effect), largest |effect| first
        (over positions, the largest at any position)."""
        eff = self.effect if self.effect.ndim == 2 else np.take_along_axis(
            self.effect, np.abs(self.effect).argmax(-1)[..., None], -1)[..., 0]
        order = np.argsort(-np.abs(eff), axis=None)[:k]
        return [(int(i // eff.shape[1]), int(i % eff.shape[1]), float(eff.flat[i])) for i in order]


def _tokens(runner: Runner, enc: object) -> list[str]:
    ids = enc.inputs["input_ids"][0].tolist()  # type: ignore[attr-defined]
    return [str(t) for t in runner.tokenizer.convert_ids_to_tokens(ids)]


def patch_heads(clean: str, corrupted: str, *, answer: str | Sequence[str] | None = None,
                model: str | os.PathLike[str] | Runner | None = None, direction: Direction = "noising",
                what: What = "output", positions: bool = False, max_batch: int | None = None) -> PatchingResult:
    """Patch every head of every self-attention layer between ``clean`` and ``corrupted`` and score each run.

    Parameters
    ----------
    clean, corrupted : str
        The two inputs; they must tokenise to the same number of tokens.
    answer : str or (str, str), optional
        For a decoder or a masked LM: one token (its log-probability) or (right, wrong) (their logit difference),
        each exactly one token (a BPE word inside a sentence usually needs its leading space, " Mary"). Leave it
        None for an encoder without an LM head: the metric is then the cosine similarity of the sentence embedding
        (mean of the last hidden states) to the clean run's.
    model : str, path or Runner, optional
        The model (default: the bundled all-MiniLM-L6-v2, a sentence encoder).
    direction : {"noising", "denoising"}
        Clean input with one corrupted head, or corrupted input with one clean head.
    what : {"output", "pattern"}
        Patch the head's whole output, or its attention weights only.
    positions : bool
        Patch one position at a time ([layer, head, position]; T times the runs).
    max_batch : int, optional
        At most this many patched runs go through the model as one batch. Default: as many as fit a budget of
        activation memory (:data:`attnwidgets.runner.patching.PATCH_BUDGET`, 256 MiB by an estimate of one run's
        peak, :func:`~attnwidgets.runner.patching.row_bytes`), between 1 and 64. The numbers do not depend on it; the
        peak memory and the time do (``benchmarks/bench_patching.py --batches``).

    Raises
    ------
    ValueError
        Inputs of different lengths; an answer that is not one token; an answer for a model without an LM head.
    PatchingUnavailableError
        An encoder-decoder, a classifier, or a model whose attention does not run through attnwidgets.

    Examples
    --------
    >>> from attnwidgets.studies import patch_heads
    >>> p = patch_heads("The cat sat.", "The dog sat.", direction="denoising")
    >>> p.top(1)[0][:2] in [(l, h) for l in range(6) for h in range(12)]
    True
    """
    if direction not in ("noising", "denoising"):
        raise ValueError(f"direction must be 'noising' (clean input, one corrupted head) or 'denoising' (corrupted "
                         f"input, one clean head), got {direction!r}")
    if what not in ("output", "pattern"):
        raise ValueError(f"what must be 'output' (the head's whole output) or 'pattern' (its weights only), "
                         f"got {what!r}")
    if not isinstance(positions, bool):
        raise TypeError(f"positions must be True or False, got {positions!r}")
    runner = get_runner(model)
    batch_rows(runner, 1, max_batch)                                    # its clear error before any run
    if runner.info.kind == "encoder-decoder":
        raise PatchingUnavailableError(f"{runner.info.name!r} is an encoder-decoder; patching covers encoders and "
                                       "decoders")
    enc_clean = runner.encode([clean], truncation="error")
    enc_corrupt = runner.encode([corrupted], truncation="error")
    t_clean, t_corrupt = _tokens(runner, enc_clean), _tokens(runner, enc_corrupt)
    if len(t_clean) != len(t_corrupt):
        raise ValueError(f"the clean input is {len(t_clean)} tokens and the corrupted one {len(t_corrupt)}: patching "
                         f"pairs positions, so both must have the same length. clean: {t_clean}; corrupted: "
                         f"{t_corrupt}")
    started = time.perf_counter()
    out_clean, w_clean, run_clean = head_outputs(runner, enc_clean)
    out_corrupt, w_corrupt, run_corrupt = head_outputs(runner, enc_corrupt)
    reference = None
    if runner.head == "base":
        valid = enc_clean.inputs["attention_mask"].bool()
        h = run_clean.last_hidden_state.float()
        reference = ((h * valid.unsqueeze(-1)).sum(1) / valid.sum(1, keepdim=True))[0]
    metric = resolve_metric(runner, enc_clean, answer, reference)
    ones = enc_clean.inputs["attention_mask"].bool()
    clean_value = float(metric_values(run_clean, metric, ones)[0])
    corrupt_value = float(metric_values(run_corrupt, metric, ones)[0])
    if direction == "noising":
        values = patch_layers(runner, enc_clean, out_corrupt, w_corrupt, metric, what=what, positions=positions,
                              max_batch=max_batch)
    else:
        values = patch_layers(runner, enc_corrupt, out_clean, w_clean, metric, what=what, positions=positions,
                              max_batch=max_batch)
    return PatchingResult(values=values, clean=clean_value, corrupted=corrupt_value, direction=direction, what=what,
                          metric=metric.description, clean_tokens=t_clean, corrupted_tokens=t_corrupt,
                          model=runner.info.name, seconds=time.perf_counter() - started, clean_text=clean,
                          corrupted_text=corrupted, runner=runner)
