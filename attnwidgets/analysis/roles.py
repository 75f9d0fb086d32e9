"""Head roles on repeated random tokens: previous-token, duplicate-token and induction scores per head.

Olsson et al. 2022 (*In-context Learning and Induction Heads*) find induction heads by running a model on a random
token sequence repeated twice, ``[BOS] r r``: on the second copy, an induction head attends from each token to the
token that *followed* that token's earlier occurrence (and so predicts it); a duplicate-token head attends to the
earlier occurrence itself; a previous-token head attends to the position just before it. These are the standard
scores of the interpretability literature (TransformerLens's ``detect_head`` patterns and its induction-score demo).

Numpy only: the arrays come from :func:`attnwidgets.studies.head_roles` (any decoder the runner loads) or from the
teaching kit's toy decoder (:func:`attnwidgets.teaching.induction.train_induction`).

Layout of one sequence (``n`` = ``seq_len``, ``p`` = ``prefix``, 1 with a BOS token and 0 without)::

    position  0      p .. p+n-1     p+n .. p+2n-1
    token     [BOS]  r_0 .. r_n-1   r_0 .. r_n-1

Definitions (A = one head's attention, rows = queries, averaged over the sequences of a batch):

- **previous-token** score: mean of ``A[i, i-1]`` over every position ``i >= 1`` (both copies; with a BOS the first
  token's previous token is the BOS);
- **duplicate-token** score: mean of ``A[i, i-n]`` over the second copy, ``i = p+n .. p+2n-1`` (the earlier
  occurrence of the same token);
- **induction** score: mean of ``A[i, i-n+1]`` over the second copy, ``i = p+n .. p+2n-1`` (the token right after
  the earlier occurrence; for the last query that is the first token of the second copy).

Each is a share of the row's attention, so a head that is exactly that pattern scores 1.0 and a head spreading
uniformly over ``i+1`` keys scores about ``1/(i+1)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..html_repr import repr_html
from ..result import AttentionResult

__all__ = ["ROLES", "ROLE_LABELS", "HeadRoles", "RoleCheck", "role_positions", "role_scores"]

ROLES = ("previous_token", "duplicate_token", "induction")
"""The role names, in the order the grid's menu lists them."""

ROLE_LABELS = {
    "previous_token": "previous-token score",
    "duplicate_token": "duplicate-token score",
    "induction": "induction score",
}
"""Menu and axis label of each role."""


def role_positions(seq_len: int, prefix: int = 1) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(query positions, key positions) each score averages, for one sequence ``[BOS]*prefix + r + r``.

    Examples
    --------
    >>> q, k = role_positions(3)["induction"]        # [BOS] a b c a b c: positions 0..6
    >>> q.tolist(), k.tolist()                       # 2nd 'a' -> 1st 'b', 2nd 'b' -> 1st 'c', 2nd 'c' -> 2nd 'a'
    ([4, 5, 6], [2, 3, 4])
    >>> role_positions(3)["duplicate_token"][1].tolist(), role_positions(3)["previous_token"][0].tolist()
    ([1, 2, 3], [1, 2, 3, 4, 5, 6])
    """
    n, p = _positive(seq_len, "seq_len"), int(prefix)
    if p not in (0, 1):
        raise ValueError(f"prefix must be 0 (no BOS) or 1 (a BOS token first), got {prefix!r}")
    second = np.arange(p + n, p + 2 * n)
    prev = np.arange(1, p + 2 * n)
    return {
        "previous_token": (prev, prev - 1),
        "duplicate_token": (second, second - n),
        "induction": (second, second - n + 1),
    }


def _positive(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{what} must be a positive integer, got {value!r}")
    return int(value)


def role_scores(attention: Any, seq_len: int, prefix: int = 1, rows: Any = None) -> dict[str, np.ndarray]:
    """Per-head role scores of attention on repeated random tokens.

    Parameters
    ----------
    attention : array
        ``[layer, head, query, key]`` of one sequence, or ``[batch, layer, head, query, key]`` of several (the
        scores are averaged over them); the sequence is ``[BOS]*prefix + r + r`` with ``len(r) == seq_len``, so
        ``query == key == prefix + 2 * seq_len``.
    seq_len : int
        Length ``n`` of the repeated block ``r``.
    prefix : int
        1 when a BOS token comes first (default), 0 when not.
    rows : list of int, optional
        Query positions: each score averages only its queries among them (a span of the sequence; NaN for a role
        none of whose queries is selected). Default: every query of the role.

    Returns
    -------
    dict[str, np.ndarray]
        ``"previous_token"``, ``"duplicate_token"``, ``"induction"`` → (layers, heads) float64 (see the module
        docstring for the positions each averages).

    Examples
    --------
    A head that is exactly an induction head: on the second copy each query attends to the key after its earlier
    occurrence; elsewhere to the previous token.

    >>> n = 3; T = 1 + 2 * n
    >>> a = np.zeros((1, 1, T, T)); a[0, 0, 0, 0] = 1
    >>> for i in range(1, T): a[0, 0, i, i - n + 1 if i > n else i - 1] = 1
    >>> {k: float(v[0, 0]) for k, v in role_scores(a, n).items()}
    {'previous_token': 0.5, 'duplicate_token': 0.0, 'induction': 1.0}
    >>> {k: float(v[0, 0]) for k, v in role_scores(a, n, rows=[1, 2]).items()}   # the first copy only
    {'previous_token': 1.0, 'duplicate_token': nan, 'induction': nan}
    """
    a = np.asarray(attention)
    if a.ndim == 4:
        a = a[None]
    if a.ndim != 5:
        raise ValueError(f"attention must be [layer, head, query, key] or [batch, layer, head, query, key], "
                         f"got shape {a.shape}")
    pos = role_positions(seq_len, prefix)
    T = int(prefix) + 2 * int(seq_len)
    if a.shape[-2:] != (T, T):
        raise ValueError(f"attention is {a.shape[-2]} x {a.shape[-1]} positions, but a sequence of "
                         f"{'a BOS and ' if prefix else ''}two copies of {seq_len} tokens has {T}")
    if rows is not None:
        picked = {int(r) for r in rows}
        if not all(0 <= r < T for r in picked):
            raise ValueError(f"rows {sorted(picked)} are not all positions of the sequence (0..{T - 1})")
        keep = {name: np.isin(q, sorted(picked)) for name, (q, _) in pos.items()}
        pos = {name: (q[keep[name]], k[keep[name]]) for name, (q, k) in pos.items()}
    return {name: a[..., q, k].astype(np.float64).mean(axis=(0, -1)) if len(q) else
            np.full(a.shape[1:3], np.nan) for name, (q, k) in pos.items()}


@dataclass(eq=False)
class HeadRoles:
    """Per-head role scores of one model on repeated random token sequences (:func:`attnwidgets.studies.head_roles`).

    Attributes
    ----------
    scores : dict[str, np.ndarray]
        ``"previous_token"``, ``"duplicate_token"``, ``"induction"`` → (layers, heads) float64.
    example : AttentionResult
        The model's attention on the first sequence (the pattern a click on a head opens; the induction stripe is
        the diagonal ``seq_len - 1`` below the main one in the lower-left quarter).
    seq_len, prefix, n_seqs, seed : int
        Length of the repeated block, 1 when a BOS comes first, sequences averaged, random seed.
    model : str
        The model's name.
    extra : dict
        Whatever the producer adds (the induction loss per sequence, the token ids).
    """

    _repr_html_ = repr_html  # the compact table a notebook shows (html_repr.py)

    scores: dict[str, np.ndarray]
    example: AttentionResult
    seq_len: int
    prefix: int
    n_seqs: int
    seed: int
    model: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, int]:
        """(layers, heads)."""
        first = self.scores["induction"]
        return int(first.shape[0]), int(first.shape[1])

    def top(self, role: str = "induction", k: int = 3) -> list[tuple[int, int]]:
        """The ``k`` heads with the highest ``role`` score, best first, as (layer, head).

        Examples
        --------
        >>> r = HeadRoles({"previous_token": np.zeros((2, 2)), "duplicate_token": np.zeros((2, 2)),
        ...                "induction": np.array([[0.1, 0.9], [0.5, 0.2]])}, None, 3, 1, 1, 0)
        >>> r.top("induction", 2)
        [(0, 1), (1, 0)]
        """
        values = self._role(role)
        k = max(0, min(int(k), values.size))
        order = np.argsort(-values, axis=None, kind="stable")[:k]
        return [tuple(int(x) for x in np.unravel_index(i, values.shape)) for i in order]  # type: ignore[misc]

    def _role(self, role: str) -> np.ndarray:
        if role not in self.scores:
            raise ValueError(f"unknown role {role!r}; choose one of {list(self.scores)}")
        return self.scores[role]

    def frame(self) -> Any:
        """A DataFrame with one row per head: layer, head and one column per role score.

        Examples
        --------
        >>> r = HeadRoles({k: np.full((1, 2), 0.5) for k in ROLES}, None, 3, 1, 1, 0)
        >>> list(r.frame().columns), len(r.frame())
        (['layer', 'head', 'previous_token', 'duplicate_token', 'induction'], 2)
        """
        import pandas as pd

        L, H = self.shape
        layer, head = np.divmod(np.arange(L * H), H)
        return pd.DataFrame({"layer": layer, "head": head, **{k: v.reshape(-1) for k, v in self.scores.items()}})

    def __repr__(self) -> str:
        L, H = self.shape
        best = self.top("induction", 1)[0]
        return (f"HeadRoles({self.model!r}, {L} layers x {H} heads, {self.n_seqs} sequences of "
                f"{'[BOS] + ' if self.prefix else ''}2 x {self.seq_len} tokens; best induction head {best} = "
                f"{self.scores['induction'][best]:.2f})")


@dataclass(eq=False)
class RoleCheck:
    """What :func:`confirm_role` measured.

    Attributes
    ----------
    role : str
    heads : list[tuple[int, int]]
        The ablated best heads of the role.
    clean : float
        Induction loss with nothing ablated.
    ablated : float
        Induction loss with ``heads`` ablated.
    random_heads : list[list[tuple[int, int]]]
        The random head sets (same size, drawn from the other heads).
    random : np.ndarray
        Induction loss with each random set ablated.
    """

    _repr_html_ = repr_html  # the compact table a notebook shows (html_repr.py)

    role: str
    heads: list[tuple[int, int]]
    clean: float
    ablated: float
    random_heads: list[list[tuple[int, int]]] = field(default_factory=list)
    random: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def rise(self) -> float:
        """Loss rise from ablating the role's best heads."""
        return self.ablated - self.clean

    @property
    def random_rise(self) -> float:
        """Mean loss rise from ablating random heads (NaN when there were none)."""
        return float(np.mean(self.random) - self.clean) if len(self.random) else float("nan")

    def frame(self) -> Any:
        """One row per run: what was ablated, which heads, the induction loss and its rise over the clean run."""
        import pandas as pd

        rows = [{"ablated": "nothing", "heads": [], "induction_loss": self.clean},
                {"ablated": f"top {len(self.heads)} {self.role}", "heads": self.heads, "induction_loss": self.ablated}]
        rows += [{"ablated": f"random {len(h)} #{i + 1}", "heads": h, "induction_loss": float(v)}
                 for i, (h, v) in enumerate(zip(self.random_heads, self.random))]
        frame = pd.DataFrame(rows)
        frame["rise"] = frame["induction_loss"] - self.clean
        return frame

    def __repr__(self) -> str:
        return (f"RoleCheck({self.role!r}: ablating {self.heads} raises the induction loss by {self.rise:+.3f} "
                f"(from {self.clean:.3f}); {len(self.random)} random sets of {len(self.heads)}: "
                f"{self.random_rise:+.3f} on average)")
