"""How sure a measured share is: the Wilson score interval of a proportion.

A held-out accuracy of 0.64 on 28 pairs says little on its own: the interval says which true accuracies would
easily give that count. Wilson's interval (Wilson 1927) stays inside 0..1 and is good for small n, where the normal
approximation p ± z·sqrt(p(1 − p)/n) is not.

Examples
--------
>>> lo, hi = wilson_interval(5, 10)
>>> round(lo, 4), round(hi, 4)
(0.2366, 0.7634)
"""

from __future__ import annotations

import math
from statistics import NormalDist

__all__ = ["wilson_interval"]


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval (low, high) of a proportion ``successes / n``.

    With z the two-sided normal quantile of ``confidence`` and p = successes / n:
    centre = (p + z²/2n) / (1 + z²/n), half-width = z · sqrt(p(1 − p)/n + z²/4n²) / (1 + z²/n).

    Parameters
    ----------
    successes : int
        How many of the ``n`` trials came out right (0..n).
    n : int
        How many trials (at least 1).
    confidence : float
        Coverage of the interval, strictly between 0 and 1 (default 0.95).
    """
    for name, value in (("successes", successes), ("n", n)):
        if isinstance(value, bool) or not hasattr(value, "__index__"):
            raise TypeError(f"{name} must be a whole number, got {value!r}")
    successes, n = int(successes), int(n)
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    if not 0 <= successes <= n:
        raise ValueError(f"successes must be between 0 and n = {n}, got {successes}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence}")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, centre - half)  # exactly 0 and 1 at the ends, not 1e-17 off
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high
