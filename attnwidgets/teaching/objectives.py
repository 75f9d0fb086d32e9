"""Pre-training objectives, as code a class can read: BERT's masking (Devlin et al. 2019, §3.1 and Appendix A.1) and
T5's span corruption (Raffel et al. 2020, §3.1.4).

BERT picks 15 % of the ordinary tokens as targets; of those, 80 % become ``[MASK]``, 10 % a random vocabulary entry and
10 % stay unchanged (:func:`bert_mask`).

T5 drops 15 % of the tokens in spans of mean length 3. Each dropped span becomes one sentinel in the input
(``<extra_id_0>``, ``<extra_id_1>``, ...), and the target lists the dropped spans, each after its sentinel, ending with
one more sentinel. The paper's example: "Thank you for inviting me to your party last week." becomes the input
"Thank you <X> me to your party <Y> week." and the target "<X> for inviting <Y> last <Z>".
:func:`random_spans_noise_mask` follows T5's released preprocessor (``random_spans_noise_mask`` in
``t5/data/preprocessors.py``): the counts are fixed by the length, and only where the spans fall is random.
Numpy only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["Masked", "SpanCorruption", "bert_mask", "random_spans_noise_mask", "sentinel", "span_corruption"]


def sentinel(k: int) -> str:
    """The k-th sentinel token, as T5's vocabulary spells it."""
    return f"<extra_id_{k}>"


def _random_segmentation(n_items: int, n_segments: int, rng: np.random.Generator) -> np.ndarray:
    """Split ``n_items`` into ``n_segments`` non-empty runs at random: (n_segments,) lengths summing to n_items."""
    first = np.zeros(n_items, np.int64)
    cuts = np.arange(n_items - 1) < n_segments - 1      # n_segments - 1 cut points among the n_items - 1 gaps
    first[1:] = rng.permutation(cuts)
    segment = np.cumsum(first)
    return np.bincount(segment, minlength=n_segments)


def random_spans_noise_mask(length: int, noise_density: float = 0.15, mean_span_length: float = 3.0,
                            rng: np.random.Generator | int | None = 0) -> np.ndarray:
    """(length,) bool: True for the tokens T5's span corruption drops.

    round(length · noise_density) tokens (at least 1, at most length − 1) in round(that / mean_span_length) spans
    (at least 1); the text starts with a kept run, and kept and dropped runs alternate.

    Examples
    --------
    >>> m = random_spans_noise_mask(20, rng=3)
    >>> int(m.sum()), int((np.diff(m.astype(int)) == 1).sum())    # 3 tokens dropped, in 1 span
    (3, 1)
    >>> bool(m[0])                                                # a kept run comes first
    False
    """
    if length < 1:
        raise ValueError("span corruption needs at least one token")
    if not 0 < noise_density < 1 or mean_span_length < 1:
        raise ValueError(f"noise_density must be in (0, 1) and mean_span_length >= 1, got {noise_density} and "
                         f"{mean_span_length}")
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    n = max(length, 2)
    n_noise = min(max(round(n * noise_density), 1), n - 1)
    n_spans = max(round(n_noise / mean_span_length), 1)
    n_keep = n - n_noise
    noise_lengths = _random_segmentation(n_noise, n_spans, rng)
    keep_lengths = _random_segmentation(n_keep, n_spans, rng)
    interleaved = np.stack([keep_lengths, noise_lengths], axis=1).reshape(-1)
    starts = np.cumsum(interleaved)[:-1]
    indicator = np.zeros(n, np.int64)
    indicator[starts] = 1
    return (np.cumsum(indicator) % 2 == 1)[:length]


@dataclass(frozen=True)
class SpanCorruption:
    """One text under span corruption: the tokens, which were dropped, and the model's input and target."""

    tokens: list[str]
    noise: np.ndarray
    inputs: list[str]
    targets: list[str]

    def __str__(self) -> str:
        return f"input:  {' '.join(self.inputs)}\ntarget: {' '.join(self.targets)}"


def span_corruption(text: str | Sequence[str], noise_density: float = 0.15, mean_span_length: float = 3.0, *,
                    seed: int | None = 0, noise: Sequence[bool] | np.ndarray | None = None) -> SpanCorruption:
    """T5's input and target for ``text`` (words split on spaces, or a list of tokens).

    ``noise`` gives the dropped tokens yourself (e.g. to reproduce the paper's figure); otherwise they are drawn by
    :func:`random_spans_noise_mask` with ``seed``.

    Examples
    --------
    >>> words = "Thank you for inviting me to your party last week .".split()
    >>> drop = [w in ("for", "inviting", "last") for w in words]   # the paper's Figure 2
    >>> print(span_corruption(words, noise=drop))
    input:  Thank you <extra_id_0> me to your party <extra_id_1> week .
    target: <extra_id_0> for inviting <extra_id_1> last <extra_id_2>
    """
    tokens = text.split() if isinstance(text, str) else [str(t) for t in text]
    if not tokens:
        raise ValueError("the text is empty: give at least one word")
    if noise is None:
        mask = random_spans_noise_mask(len(tokens), noise_density, mean_span_length, seed)
    else:
        mask = np.asarray(noise, bool)
        if mask.shape != (len(tokens),):
            raise ValueError(f"noise must have one entry per token ({len(tokens)}), got shape {mask.shape}")
    inputs: list[str] = []
    targets: list[str] = []
    k = 0
    for i, (token, dropped) in enumerate(zip(tokens, mask, strict=True)):
        starts = i == 0 or bool(mask[i - 1]) != bool(dropped)
        if dropped:
            if starts:
                inputs.append(sentinel(k))
                targets.append(sentinel(k))
                k += 1
            targets.append(token)
        else:
            inputs.append(token)
    targets.append(sentinel(k))  # the target ends with one more sentinel
    return SpanCorruption(tokens, mask, inputs, targets)


# -- BERT's masking rule ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Masked:
    """One input after BERT's masking: the new ids, the target positions, their original ids and what happened to
    each target ("[MASK]", "random token" or "unchanged")."""

    ids: np.ndarray
    positions: np.ndarray
    targets: np.ndarray
    actions: list[str]


def bert_mask(ids: Sequence[int], special: Sequence[bool], rng: np.random.Generator, *, mask_id: int,
              vocab_size: int, rate: float = 0.15) -> Masked:
    """BERT's masking of one input: round(rate · ordinary tokens) targets (at least one), each replaced by
    ``[MASK]`` with probability 0.8, by a random vocabulary entry with 0.1, kept with 0.1.

    Special tokens ([CLS], [SEP], [PAD]) are never targets. Targets are single word pieces, as BERT was first trained.

    Examples
    --------
    >>> m = bert_mask([101, 7, 8, 9, 10, 102], [True, False, False, False, False, True], np.random.default_rng(0),
    ...               mask_id=103, vocab_size=50)
    >>> len(m.positions), set(m.actions) <= {"[MASK]", "random token", "unchanged"}
    (1, True)
    """
    ids_arr = np.asarray(ids, dtype=np.int64)
    special_arr = np.asarray(special, dtype=bool)
    if ids_arr.shape != special_arr.shape:
        raise ValueError(f"ids and special must have the same length, got {ids_arr.shape} and {special_arr.shape}")
    if not 0 < rate < 1:
        raise ValueError(f"rate must be in (0, 1), got {rate}")
    candidates = np.flatnonzero(~special_arr)
    if len(candidates) == 0:
        raise ValueError("no ordinary token to mask: the input holds special tokens only")
    n_targets = max(1, round(rate * len(candidates)))
    positions = np.sort(rng.choice(candidates, n_targets, replace=False))
    new = ids_arr.copy()
    actions = []
    for pos in positions:
        u = rng.random()
        if u < 0.8:
            new[pos], action = mask_id, "[MASK]"
        elif u < 0.9:
            new[pos], action = int(rng.integers(vocab_size)), "random token"
        else:
            action = "unchanged"
        actions.append(action)
    return Masked(new, positions.astype(np.int64), ids_arr[positions], actions)
