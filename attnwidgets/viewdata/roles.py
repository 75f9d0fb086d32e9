"""What the head-roles grid and its static twin both show: a :class:`~attnwidgets.analysis.roles.HeadRoles` as the
per-head statistics table the grid widgets take (one statistic per role), and its checks."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..analysis.roles import ROLES, HeadRoles, role_scores
from .head_stats import HeadStats
from .selection import check_selection, span_tokens

__all__ = ["check_roles", "role_stats"]


def check_roles(roles: Any, who: str) -> HeadRoles:
    """``roles`` if it is a :class:`HeadRoles`, else a TypeError saying where one comes from."""
    if not isinstance(roles, HeadRoles):
        raise TypeError(f"{who} takes the HeadRoles that aw.studies.head_roles(model) (or an InductionRun's .roles()) "
                        f"returns, got {type(roles).__name__}")
    return roles


def role_stats(roles: HeadRoles, who: str = "this view", rows: Any = None) -> HeadStats:
    """The role scores as a :class:`HeadStats` (statistics ``previous_token``, ``duplicate_token``, ``induction``).

    With ``rows`` (query positions of ``roles.example``, not empty), the scores of those rows of the example
    sequence alone (:func:`~attnwidgets.analysis.roles.role_scores`' ``rows``), not the mean over ``roles.n_seqs``
    sequences: what the head-roles view shows for rows selected in its heatmap.

    Examples
    --------
    >>> r = HeadRoles({k: np.full((1, 2), 0.5) for k in ROLES}, None, 4, 1, 3, 0, "m")
    >>> s = role_stats(r)
    >>> s.names(), s.causal, s.title
    (['previous_token', 'duplicate_token', 'induction'], True, 'm · 3 x [BOS] + 2 x 4 random tokens')
    """
    roles = check_roles(roles, who)
    name = roles.model.rsplit("/", 1)[-1] if "/" in roles.model and len(roles.model) > 40 else roles.model
    bos = "[BOS] + " if roles.prefix else ""
    n = roles.prefix + 2 * roles.seq_len
    title = f"{name} · {roles.n_seqs} x {bos}2 x {roles.seq_len} random tokens"
    scores = roles.scores
    if rows is not None and len(rows):
        picked = check_selection(rows, n)
        scores = role_scores(roles.example.attention, roles.seq_len, roles.prefix, rows=picked)
        title = f"{name} · rows {span_tokens(list(roles.example.tokens), picked)} of the example"
    return HeadStats({k: np.asarray(scores[k], dtype=np.float64) for k in ROLES}, title, causal=True, n_tokens=n)
