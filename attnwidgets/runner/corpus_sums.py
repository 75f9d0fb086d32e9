"""Corpus sums made in the forward: each layer's weights summed, per input and head, while the layer computes them.

Corpus statistics over short texts used to return every layer's weights from the forward (``output_attentions``),
pad them into one (B, L, H, T, T) numpy array and measure that. Here our attention function computes each layer's
weights as it always does (eager attention, the head outputs ``P @ V`` from those same weights, so nothing is
computed twice) and an attention hook (:func:`~attnwidgets.runner.control.attention_hooks`) reduces them at once, on
the model's device, in float32, to a few numbers per input and head; the weights are dropped with the layer, and
only the (B, L, H) sums reach numpy.

This module knows no statistic by its name in the analysis: it is told, per input, which positions are in which set
(``cls``, ``sep``, ``punct``, ``first``, ``sink``, ``words``, and each position's ``segment``), and sums, over the
valid rows of each input (padding never counts):

- ``<set>``: the weight the rows put on the keys of each set, and ``sep_from_sep``: on [SEP] keys from [SEP] rows;
- ``self``, ``prev``, ``next``: ``A[i, i]``, ``A[i, i - 1]``, ``A[i, i + 1]``; ``prev_words``, ``next_words``: the
  same on keys in ``words`` only;
- ``entropy``: each row's entropy in nats over the keys it may see (valid, and not ahead under a causal mask), with
  Clark et al.'s ``smoothing``; ``entropy_first`` and ``entropy_last``: the first and the last row's;
- ``own_segment``: over the ``words`` rows, the share of each row's mass on ``words`` keys that stays in its own
  segment (rows with no such mass add nothing).

:mod:`attnwidgets.analysis.corpus` (``CorpusStats.add_sums``) turns these into the statistics, the numpy path's
numbers to float32 rounding.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

__all__ = ["KEY_SETS", "SUMS", "CorpusSums"]

KEY_SETS = ("cls", "sep", "punct", "first", "sink", "words")
"""The key sets each input names (as (n,) bool arrays, with its ``segment`` (n,) int)."""

SUMS = (*KEY_SETS, "sep_from_sep", "self", "prev", "next", "prev_words", "next_words", "entropy", "entropy_first",
        "entropy_last", "own_segment")
"""The sums :meth:`CorpusSums.sums` hands back, each (B, L, H)."""

_TINY = float(torch.finfo(torch.float32).tiny)
_ELEMENTS = 1 << 24
"""Weights per chunk of inputs: the few temporaries of a layer's sums stay near 64 MiB each, whatever the batch."""
_ROWS_AT_ONCE = 1 << 16
"""Weights whose entropy terms are made at a time (256 KiB of float32: a block stays in the cache)."""


class CorpusSums:
    """An attention hook that sums each self-attention layer's weights for a padded batch (see the module docstring).

    Parameters
    ----------
    valid : torch.Tensor
        (B, T) bool, the batch's real tokens (in one contiguous run per row, on either side of the padding).
    sets : sequence of mapping
        Per input, ``KEY_SETS`` and ``segment``, each (n,) over its n real tokens in order.
    n_layers, n_heads : int
    causal : bool
        Rows see no key ahead of them (decoder self-attention): the entropy's visible keys.
    smoothing : float
        Clark et al.'s entropy smoothing (``A <- (1 - e) A + e / m`` over the m keys a row may see).
    has_sinks : bool
        The model's rows may sum to less than 1 (attention sinks): checked as at most 1.
    """

    def __init__(self, valid: torch.Tensor, sets: Sequence[Mapping[str, np.ndarray]], *, n_layers: int, n_heads: int,
                 causal: bool, smoothing: float = 0.0, has_sinks: bool = False) -> None:
        dev = valid.device
        b, t = valid.shape
        self.valid = valid
        self.causal = causal
        self.smoothing = float(smoothing)
        self.has_sinks = has_sinks
        columns = np.zeros((b, t, len(KEY_SETS) + 3), np.float32)  # the sets, words of segment 0 / 1, valid
        segment = np.zeros((b, t), np.int64)
        valid_np = valid.cpu().numpy()
        if len(sets) != b or any(len(named["segment"]) != n for named, n in zip(sets, valid_np.sum(1), strict=False)):
            raise ValueError("sets must name, for each input, one value per valid token of its row")
        # the valid positions in row-major order are the inputs' tokens one after the other: every set at once
        for j, name in enumerate(KEY_SETS):
            columns[valid_np, j] = np.concatenate([np.asarray(named[name]) for named in sets]) if b else []
        words = np.concatenate([np.asarray(named["words"], bool) for named in sets]) if b else np.zeros(0, bool)
        seg = np.concatenate([np.asarray(named["segment"], np.int64) for named in sets]) if b else \
            np.zeros(0, np.int64)
        columns[valid_np, len(KEY_SETS)] = words & (seg == 0)
        columns[valid_np, len(KEY_SETS) + 1] = words & (seg == 1)
        columns[valid_np, -1] = 1.0
        segment[valid_np] = seg
        self.keys = torch.from_numpy(columns).to(dev)  # (B, T, K)
        self.segment = torch.from_numpy(segment).to(dev)
        self.first = torch.argmax(valid.to(torch.int64), dim=1)  # (B,) first real row
        self.last = self.first + valid.sum(1) - 1
        self.out = torch.zeros((b, n_layers, n_heads, len(SUMS)), dtype=torch.float32, device=dev)
        self.worst = torch.zeros((), dtype=torch.float32, device=dev)  # most a valid row's sum is off
        self.layers_seen: set[int] = set()
        self._held: dict[tuple[int, int, int, int], dict[str, Any]] = {}
        self._buffer: torch.Tensor | None = None

    def __call__(self, call: Any, weights: torch.Tensor) -> None:
        """The hook: sum the weights of a self-attention call; never edits them (returns None)."""
        site = call.site
        if site.stack != "self":
            return None
        w = weights.detach()
        if w.dtype != torch.float32:
            w = w.float()
        step = max(1, _ELEMENTS // max(1, math.prod(w.shape[1:])))
        for start in range(0, w.shape[0], step):
            self._chunk(site.layer, start, w[start:start + step])
        self.layers_seen.add(site.layer)
        return None

    def _entropy_terms(self, p: torch.Tensor) -> torch.Tensor:
        """Σ p ln p over the last axis of ``p`` (b, H, T, S), ``_ROWS_AT_ONCE`` weights at a time.

        The same operations on every row as on the whole at once (the same numbers), but a block's ln, product and sum
        run while it is in the cache, into a buffer kept from block to block and layer to layer: on long inputs, a
        fresh tensor of every weight (its pages faulted in) and three passes over it through memory cost more than
        the ln itself.
        """
        if p.numel() <= 4 * _ROWS_AT_ONCE:  # short inputs: one pass is quicker than a loop of small ones
            return p.clamp_min(_TINY).log_().mul_(p).sum(-1)
        rows = p.reshape(-1, p.shape[-1])
        out = torch.empty(rows.shape[0], dtype=torch.float32, device=p.device)
        step = max(1, _ROWS_AT_ONCE // max(1, rows.shape[1]))
        held = self._buffer
        if held is None or held.shape != (min(step, rows.shape[0]), rows.shape[1]) or held.device != p.device:
            held = self._buffer = torch.empty((min(step, rows.shape[0]), rows.shape[1]), dtype=torch.float32,
                                              device=p.device)
        for start in range(0, rows.shape[0], step):
            block = rows[start:start + step]
            scratch = held[:block.shape[0]]
            torch.sum(torch.clamp_min(block, _TINY, out=scratch).log_().mul_(block), -1, out=out[start:start + step])
        return out.view(p.shape[:-1])

    def _masks(self, b0: int, b: int, t: int, s: int, dev: torch.device) -> dict[str, Any]:
        """What every layer of inputs ``b0..b0 + b`` shares (masks of rows, keys and diagonals), made once."""
        key = (b0, b, t, s)
        held = self._held.get(key)
        if held is not None:
            return held
        b1 = b0 + b
        n_sets = len(KEY_SETS)
        valid = self.valid[b0:b1, :t]
        kvalid = self.valid[b0:b1, :s]
        keys = self.keys[b0:b1, :s]
        m: dict[str, Any] = {"rows": valid[:, None, :], "hide_rows": ~valid[:, None, :], "keys": keys,
                             "sep_rows": (keys[:, :t, 1] > 0)[:, None],
                             "word_rows": (keys[:, :t, n_sets - 1] > 0)[:, None],
                             "seg1": (self.segment[b0:b1, :t] == 1)[:, None],
                             "first": self.first[b0:b1], "last": self.last[b0:b1],
                             "idx": torch.arange(b, device=dev)}
        words_k = keys[..., n_sets - 1]  # (b, S)
        for offset in (0, -1, 1):  # A[i, i + offset] counts when row i and key i + offset are real tokens
            r0 = max(0, -offset)
            n_diag = min(t - r0, s - r0 - offset)
            both = valid[:, r0:r0 + n_diag] & kvalid[:, r0 + offset:r0 + offset + n_diag]
            m[f"hide_diag{offset}"] = ~both[:, None]
            m[f"words{offset}"] = words_k[:, r0 + offset:r0 + offset + n_diag][:, None]
        if self.smoothing:
            visible = valid[:, None, :, None] & kvalid[:, None, None, :]  # (b, 1, T, S)
            if self.causal:
                visible = visible & torch.ones((t, s), dtype=torch.bool, device=dev).tril(s - t)
            m["visible"] = visible
            m["per_key"] = self.smoothing / visible.sum(-1, keepdim=True).clamp_min(1).to(torch.float32)
        self._held = {key: m}  # one batch shape at a time
        return m

    def _chunk(self, layer: int, b0: int, w: torch.Tensor) -> None:
        b, _h, t, s = w.shape
        m = self._masks(b0, b, t, s, w.device)
        # Masks are applied with masked_fill, not multiplied (NaN * 0 is NaN) and not torch.where with a number (a
        # scalar tensor and a type promotion each time): on short inputs each operation's fixed cost is most of it.
        hide_rows = m["hide_rows"]  # (b, 1, T): padding
        per_row = torch.bmm(w.reshape(b, -1, s), m["keys"]).reshape(b, _h, t, -1)  # (b, H, T, K): mass on each set
        per_row = per_row.masked_fill_(hide_rows[..., None], 0.0)  # padded rows never count
        n_sets = len(KEY_SETS)
        cols = [per_row[..., :n_sets].sum(2)]  # (b, H, n_sets), then (b, H, 1) each in the order of SUMS
        cols.append((per_row[..., 1] * m["sep_rows"]).sum(-1, keepdim=True))
        diags, words = [], []
        for offset in (0, -1, 1):  # self, prev, next; then prev and next on word keys
            d = torch.diagonal(w, offset=offset, dim1=-2, dim2=-1)  # (b, H, m): A[i, i + offset]
            d = d.masked_fill(m[f"hide_diag{offset}"], 0.0)  # padding never counts
            diags.append(d.sum(-1, keepdim=True))
            if offset:
                words.append((d * m[f"words{offset}"]).sum(-1, keepdim=True))
        cols += diags + words
        # entropy over the visible keys, -Σ p ln p; ln of at least the smallest normal float, so 0 ln 0 is 0 (hidden
        # keys' weights are 0 already; a NaN stays NaN). A quarter of xlogy's time, which tests for 0 per weight.
        p = torch.where(m["visible"], w * (1.0 - self.smoothing) + m["per_key"], 0.0) if self.smoothing else w
        h = self._entropy_terms(p)  # (b, H, T): Σ p ln p of each row
        del p
        h = h.masked_fill_(hide_rows, 0.0).neg_()
        cols += [h.sum(-1, keepdim=True), h[m["idx"], :, m["first"]][..., None], h[m["idx"], :, m["last"]][..., None]]
        # own segment: per word row, the share of its mass on word keys that stays in its segment
        own = torch.where(m["seg1"], per_row[..., n_sets + 1], per_row[..., n_sets])
        mass = per_row[..., n_sets] + per_row[..., n_sets + 1]
        share = (own / mass).masked_fill_(~(m["word_rows"] & (mass > 0)), 0.0)  # no mass: 0/0 masked, adds nothing
        cols.append(share.sum(-1, keepdim=True))
        self.out[b0:b0 + b, layer] = torch.cat(cols, -1)
        # the check the numpy path makes: each valid row sums to 1 (at most 1 with sinks); a NaN or inf weight
        # makes its row's sums NaN or inf, which checked() reads off the sums
        total = per_row[..., -1]
        off = (total - 1.0).clamp_min(0.0) if self.has_sinks else (total - 1.0).masked_fill_(hide_rows, 0.0).abs_()
        self.worst = torch.maximum(self.worst, off.amax())

    def sums(self) -> dict[str, np.ndarray]:
        """Every sum of :data:`SUMS`, each (B, L, H) float32 numpy."""
        out = self.out.cpu().numpy()
        return {name: out[..., i] for i, name in enumerate(SUMS)}

    def checked(self, n_layers: int, tol: float) -> bool:
        """Whether every layer was seen and every valid row was finite and summed to 1 within ``tol``."""
        worst = float(self.worst)
        finite = bool(torch.isfinite(self.out).all())
        return self.layers_seen == set(range(n_layers)) and finite and np.isfinite(worst) and worst <= tol
