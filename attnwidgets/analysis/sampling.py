"""How a sampler reshapes one step's next-token distribution: temperature, top-k, top-p (nucleus) and min-p, in the
order Hugging Face's ``generate`` applies them (its logits warpers: temperature, then top-k, top-p, min-p).

With ``p`` the model's probabilities of the candidates (its softmax over the whole vocabulary) and ``ℓ = log p``:

1. temperature T:  ℓ ← ℓ / T  (T < 1 sharpens, T > 1 flattens; T → 0 is greedy);
2. top-k K:        keep the K largest;
3. top-p P:        over the kept, q = softmax(ℓ); keep the fewest most probable tokens whose q add up to at least P
                   (Holtzman et al. 2020; the most probable token always stays);
4. min-p m:        over the kept, keep the tokens with q ≥ m · max q (Nguyen et al. 2024);

and the sampler draws from softmax(ℓ) over what is kept.

A generation keeps only its k most probable candidates per step (:class:`attnwidgets.GenerationResult`), so this is
computed over those k, and top-k may be at most k: every other token of the vocabulary is then cut by top-k anyway,
which makes the result exact, not an approximation (``tests/studies/test_sampling_on_models.py`` checks it against
transformers' own warpers).

Examples
--------
>>> import numpy as np
>>> after, cut = reshape(np.array([0.5, 0.3, 0.1]), temperature=1.0, top_k=3, top_p=0.8)
>>> after.round(3).tolist(), cut
([0.625, 0.375, 0.0], ['', '', 'top-p'])
"""

from __future__ import annotations

import numpy as np

__all__ = ["CUT_BY", "check_sampling", "reshape"]

#: The rule that cut a token, in the order they apply ("" for a token that stays).
CUT_BY = ("top-k", "top-p", "min-p")


def check_sampling(temperature: float, top_k: int, top_p: float, min_p: float, k: int) -> None:
    """Raise a ValueError naming the setting that is out of range (``k``: the candidates kept per step)."""
    for name, value in (("temperature", temperature), ("top_p", top_p), ("min_p", min_p)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) \
                or not np.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
    if not temperature > 0:
        raise ValueError(f"temperature must be above 0 (T → 0 is greedy decoding), got {temperature!r}")
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or not 1 <= top_k <= k:
        raise ValueError(f"top_k must be an integer from 1 to {k} (the candidates this generation kept per step), "
                         f"got {top_k!r}")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1] (1 keeps everything), got {top_p!r}")
    if not 0 <= min_p <= 1:
        raise ValueError(f"min_p must be in [0, 1] (0 keeps everything), got {min_p!r}")


def reshape(probs: np.ndarray, *, temperature: float = 1.0, top_k: int | None = None, top_p: float = 1.0,
            min_p: float = 0.0) -> tuple[np.ndarray, list[str]]:
    """The sampler's distribution over the candidates, float64 (k,) summing to 1, and what cut each token.

    Parameters
    ----------
    probs : np.ndarray
        (k,) the model's probabilities of the candidates, most probable first (a step's ``topk_probs``).
    temperature, top_k, top_p, min_p
        As Hugging Face's ``generate`` takes them; ``top_k`` None keeps all k.
    """
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 1 or p.size == 0 or not np.isfinite(p).all() or (p < 0).any():
        raise ValueError(f"probs must be a non-empty 1-D array of probabilities, got shape {p.shape}")
    k = p.size
    top_k = k if top_k is None else top_k
    check_sampling(temperature, top_k, top_p, min_p, k)
    with np.errstate(divide="ignore"):
        logits = np.log(p) / float(temperature)
    order = np.argsort(-logits, kind="stable")
    cut = [""] * k
    keep = np.zeros(k, dtype=bool)
    keep[order[:top_k]] = True
    for i in order[top_k:]:
        cut[i] = "top-k"

    def softmax_kept() -> np.ndarray:
        z = np.where(keep, logits, -np.inf)
        z = z - z[keep].max()
        e = np.where(keep, np.exp(z), 0.0)
        return e / e.sum()

    if top_p < 1.0:
        q = softmax_kept()
        kept = [i for i in order if keep[i]]
        total = 0.0
        for n, i in enumerate(kept):
            if n > 0 and total >= top_p:
                keep[i] = False
                cut[i] = "top-p"
            total += q[i]
    if min_p > 0.0:
        q = softmax_kept()
        floor = min_p * q[keep].max()
        for i in np.flatnonzero(keep):
            if q[i] < floor:
                keep[i] = False
                cut[i] = "min-p"
    return softmax_kept(), cut
