"""Ablation specs: which heads to disable or scale, and how. Frozen and hashable, so they key the result cache.

A head's output is ``A_h V_h``. Every mode edits the weights ``A_h`` (B, H, T, S) in the attention function of
:mod:`attnwidgets.runner.control`; the head output is then recomputed from the edited weights:

- ``"zero"``: ``A_h ← 0``, the head's output is removed (Michel et al.'s gate ξ_h = 0).
- ``"scale"``: ``A_h ← s · A_h`` with ``0 ≤ s ≤ 1``, the head's output scaled by ``s`` (``s = 1`` is no edit).
- ``"uniform"``: ``A_h[i, j] ← 1/n_i`` over the keys query ``i`` may see (not padding; not the future in a causal
  stack); Kovaleva et al.'s way of disabling a head.
- ``"mean"``: ``A_h ←`` the head's average pattern over a reference corpus (:func:`mean_pattern`).

A whole layer is all of its heads (``head=None``), and it is applied after the edits of its single heads, whatever the
order they were combined in: a layer disabled by ``"zero"``, ``"uniform"`` or ``"mean"`` has every head disabled
that way (an edit of one of its heads has no effect, but is kept, so that it is back when the layer is enabled
again), and a scaled layer scales every head on top of its head edit (head ``0.5`` in a layer at ``0.5`` gives
``0.25``; a disabled head stays disabled, then scaled).

Sites are ``(stack, layer)``: stack ``"self"`` for encoders and decoders, ``"encoder"``, ``"decoder"`` or ``"cross"``
for encoder-decoders.

Examples
--------
>>> from attnwidgets.runner.ablation import Ablation
>>> ab = Ablation.heads({(2, 5): "zero", (3, 0): 0.5}) | Ablation.layers([4], mode="uniform")
>>> ab.first_layer()
2
>>> ab == Ablation.from_dict(ab.to_dict()), hash(ab) == hash(Ablation.from_dict(ab.to_dict()))
(True, True)
>>> bool(Ablation()), bool(Ablation.heads({(0, 0): 1.0}))   # scale 1 is no edit
(False, False)
"""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import torch

from ..result import ModelInfo
from .control import AttentionCall, AttentionHook

if TYPE_CHECKING:
    from .runner import Runner

Mode = Literal["zero", "uniform", "mean", "scale"]
MODES: tuple[str, ...] = ("zero", "uniform", "mean", "scale")
STACKS: tuple[str, ...] = ("self", "encoder", "decoder", "cross")

__all__ = ["MODES", "Ablation", "HeadEdit", "MeanPattern", "mean_pattern", "stack_shape"]


@dataclass(frozen=True)
class HeadEdit:
    """One edit: a head (or a whole layer when ``head`` is None) at ``(stack, layer)``, with a mode.

    Attributes
    ----------
    stack : {"self", "encoder", "decoder", "cross"}
    layer : int
        0-based layer.
    head : int | None
        0-based query head; None for every head of the layer.
    mode : {"zero", "uniform", "mean", "scale"}
    scale : float
        The factor for mode ``"scale"``. The mode decides it for the others, whatever is passed: 0 for ``"zero"``,
        1 for ``"uniform"`` and ``"mean"`` (they replace the weights, they do not scale them). A ``"scale"`` edit of
        0 becomes ``"zero"``. So equal edits compare and hash equal however they were written.

    Examples
    --------
    >>> HeadEdit("self", 0, 0, "zero")
    HeadEdit(stack='self', layer=0, head=0, mode='zero', scale=0.0)
    >>> HeadEdit("self", 0, 0, "scale", 0.0) == HeadEdit("self", 0, 0, "zero", 1.0)
    True
    """

    stack: str
    layer: int
    head: int | None
    mode: str
    scale: float = 1.0

    def __post_init__(self) -> None:
        _check_stack(self.stack)
        object.__setattr__(self, "layer", _index(self.layer, "layer"))
        object.__setattr__(self, "head", None if self.head is None else _index(self.head, "head"))
        if self.layer < 0 or (self.head is not None and self.head < 0):
            raise ValueError(f"layer and head are 0-based and non-negative, got layer={self.layer}, head={self.head}")
        if self.mode not in MODES:
            raise ValueError(f"unknown ablation mode {self.mode!r}: use one of {MODES}")
        if isinstance(self.scale, bool) or not isinstance(self.scale, (int, float, np.integer, np.floating)):
            raise TypeError(f"scale must be a number between 0 and 1, got {self.scale!r}")
        mode, scale = self.mode, float(self.scale)
        if not np.isfinite(scale):
            raise ValueError(f"scale must be a finite number between 0 and 1, got {scale}")
        if mode == "scale" and not 0.0 <= scale <= 1.0:
            raise ValueError(f"scale must be between 0 and 1, got {scale} (head {self.head} of layer {self.layer})")
        if mode == "scale" and scale == 0.0:
            mode = "zero"
        if mode != "scale":
            scale = 0.0 if mode == "zero" else 1.0
        object.__setattr__(self, "mode", mode)
        object.__setattr__(self, "scale", scale)

    @property
    def address(self) -> tuple[str, int, int]:
        """Sort/dedupe key: (stack, layer, head) with -1 for a whole layer."""
        return (self.stack, self.layer, -1 if self.head is None else self.head)


def _parse_mode(value: str | float) -> tuple[str, float]:
    """``"zero"`` / ``"uniform"`` / ``"mean"`` or a number 0..1 (a scale) -> (mode, scale)."""
    if isinstance(value, bool):
        raise TypeError("a head's mode is 'zero', 'uniform', 'mean' or a scale between 0 and 1, not a bool")
    if isinstance(value, (int, float, np.floating, np.integer)):
        s = float(value)
        if not 0.0 <= s <= 1.0:
            raise ValueError(f"scale must be between 0 and 1, got {s}")
        return ("zero", 0.0) if s == 0.0 else ("scale", s)
    if value == "scale":
        raise ValueError("give the scale as a number (e.g. 0.5) instead of the word 'scale'")
    if value not in ("zero", "uniform", "mean"):
        raise ValueError(f"unknown ablation mode {value!r}: use 'zero', 'uniform', 'mean' or a number 0..1")
    return str(value), 0.0 if value == "zero" else 1.0


def _index(value: Any, what: str) -> int:
    """A layer or head index as an int: ints and numpy integers pass, anything else (1.7, 1.0, "1", True) is refused
    rather than truncated, as Python's own indexing does."""
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what} must be an integer, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{what} must be an integer, got {value!r} ({type(value).__name__})") from None


def _check_stack(stack: str) -> str:
    if stack not in STACKS:
        raise ValueError(f"unknown stack {stack!r}: use 'self' (encoders, decoders) or 'encoder'/'decoder'/'cross'")
    return stack


def stack_shape(info: ModelInfo, stack: str) -> tuple[int, int]:
    """(layers, heads) of one attention stack of a model; ValueError if the model has no such stack.

    Examples
    --------
    >>> import attnwidgets as aw
    >>> stack_shape(aw.runner.get_runner().info, "self")
    (6, 12)
    """
    _check_stack(stack)
    encdec = info.kind == "encoder-decoder"
    if encdec and stack == "self":
        raise ValueError(f"{info.name!r} is an encoder-decoder: say which attention with stack='encoder', "
                         "'decoder' or 'cross'")
    if not encdec and stack != "self":
        raise ValueError(f"{info.name!r} has one attention stack: use stack='self', not {stack!r}")
    if stack in ("decoder", "cross"):
        return info.n_decoder_layers, info.n_decoder_heads
    return info.n_layers, info.n_heads


class MeanPattern:
    """Average attention pattern of every head over a reference corpus, by absolute position.

    ``patterns[stack]`` is ``[layer, head, query, key]`` (L, H, T_max, S_max) float32: cell ``(i, j)`` is the mean of
    ``A[i, j]`` over the reference texts long enough to have both positions i and j. Texts of different lengths are
    aligned at their first token (so ``[CLS]`` / BOS always lines up; the closing ``[SEP]`` does not). When applied to
    an input of n tokens, the top-left block is taken, masked to the keys each query may see, and rows renormalised;
    rows beyond ``T_max`` (or with no mass left) fall back to uniform.

    Hashable by content, so an ablation that holds one can key the cache.
    """

    def __init__(self, patterns: Mapping[str, np.ndarray], n_texts: int = 0) -> None:
        self.patterns = {k: np.ascontiguousarray(v, dtype=np.float32) for k, v in patterns.items()}
        for stack, arr in self.patterns.items():
            _check_stack(stack)
            if arr.ndim != 4:
                raise ValueError(f"pattern of stack {stack!r} must be [layer, head, query, key], got {arr.shape}")
        self.n_texts = int(n_texts)
        h = hashlib.sha1()
        for k in sorted(self.patterns):
            h.update(k.encode())
            h.update(str(self.patterns[k].shape).encode())
            h.update(self.patterns[k].tobytes())
        self.digest = h.hexdigest()
        self._torch: dict[tuple[str, int], torch.Tensor] = {}

    def __hash__(self) -> int:
        return hash(self.digest)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MeanPattern) and other.digest == self.digest

    def __repr__(self) -> str:
        shapes = ", ".join(f"{k}: {v.shape}" for k, v in self.patterns.items())
        return f"MeanPattern({shapes}, over {self.n_texts} texts)"

    def layer(self, stack: str, layer: int) -> torch.Tensor:
        """(H, T_max, S_max) pattern of one layer as a torch tensor (converted once)."""
        key = (stack, layer)
        if key not in self._torch:
            if stack not in self.patterns:
                raise ValueError(f"the mean pattern has no {stack!r} stack (it has {sorted(self.patterns)})")
            self._torch[key] = torch.from_numpy(self.patterns[stack][layer])
        return self._torch[key]


@dataclass(frozen=True)
class Ablation:
    """A set of head/layer edits; frozen and hashable (it is part of the runner's cache key).

    Build one with :meth:`heads` / :meth:`layers`, combine with ``|`` (the right side wins on the same head), and
    pass it as ``runner.run(text, ablation=...)``. Edits with scale 1 are dropped, so an ablation of only scale-1
    heads equals ``Ablation()`` (no edit). A whole-layer edit is applied after the edits of that layer's heads (see
    the module docstring): ``Ablation.layers([1]) | Ablation.heads({(1, 2): "uniform"})`` runs exactly as
    ``Ablation.layers([1])``, though the two are not equal (the head edit is kept for when the layer is enabled).

    Attributes
    ----------
    edits : tuple[HeadEdit, ...]
        Sorted by (stack, layer, head), one per address.
    reference : MeanPattern | None
        Needed by ``"mean"`` edits.
    """

    edits: tuple[HeadEdit, ...] = ()
    reference: MeanPattern | None = field(default=None, compare=True)

    def __post_init__(self) -> None:
        latest: dict[tuple[str, int, int], HeadEdit] = {}
        for e in self.edits:
            if not isinstance(e, HeadEdit):
                raise TypeError(f"edits must be HeadEdit objects, got {type(e).__name__}")
            if e.mode == "scale" and e.scale == 1.0:
                latest.pop(e.address, None)
                continue
            latest[e.address] = e
        object.__setattr__(self, "edits", tuple(latest[k] for k in sorted(latest)))
        if any(e.mode == "mean" for e in self.edits) and self.reference is None:
            raise ValueError("'mean' ablation needs a reference pattern: ref = mean_pattern(runner, texts), "
                             "then pass reference=ref")

    # -- constructors --------------------------------------------------------------------------------------------

    @classmethod
    def heads(
        cls,
        spec: Mapping[Any, str | float] | Iterable[Any],
        mode: str | float = "zero",
        *,
        stack: str = "self",
        reference: MeanPattern | None = None,
    ) -> Ablation:
        """Edit single heads.

        Parameters
        ----------
        spec : mapping or iterable
            ``{(layer, head): mode}`` (mode ``"zero"``, ``"uniform"``, ``"mean"`` or a scale 0..1), or an iterable
            of ``(layer, head)`` that all get ``mode``. A key may also be ``(stack, layer, head)``.
        mode : str or float
            Mode for an iterable ``spec``.
        stack : str
            Stack of ``(layer, head)`` keys: "self" (default), or "encoder"/"decoder"/"cross".
        reference : MeanPattern, optional
            For ``"mean"``.
        """
        items = spec.items() if isinstance(spec, Mapping) else ((k, mode) for k in spec)
        edits = []
        for key, m in items:
            st, layer, head = _address(key, stack)
            md, s = _parse_mode(m)
            edits.append(HeadEdit(st, layer, head, md, s))
        return cls(tuple(edits), reference)

    @classmethod
    def layers(
        cls,
        layers: Iterable[int | tuple[str, int]],
        mode: str | float = "zero",
        *,
        stack: str = "self",
        reference: MeanPattern | None = None,
    ) -> Ablation:
        """Edit every head of whole layers (``[3]`` or ``[("cross", 1)]``)."""
        md, s = _parse_mode(mode)
        edits = []
        for item in layers:
            st, layer = (item[0], item[1]) if isinstance(item, tuple) else (stack, item)
            edits.append(HeadEdit(_check_stack(st), layer, None, md, s))
        return cls(tuple(edits), reference)

    def __or__(self, other: Ablation) -> Ablation:
        if not isinstance(other, Ablation):
            return NotImplemented
        return Ablation(self.edits + other.edits, other.reference or self.reference)

    def with_head(self, layer: int, head: int | None, mode: str | float = "zero", *, stack: str = "self") -> Ablation:
        """A copy with one more edit (replacing any edit of the same head); ``head=None`` for the whole layer."""
        md, s = _parse_mode(mode)
        return Ablation((*self.edits, HeadEdit(_check_stack(stack), layer, head, md, s)), self.reference)

    def without_head(self, layer: int, head: int | None, *, stack: str = "self") -> Ablation:
        """A copy without the edit of this head (or whole layer when ``head`` is None)."""
        edits = tuple(e for e in self.edits if (e.stack, e.layer, e.head) != (stack, layer, head))
        return Ablation(edits, self.reference)

    # -- reading -------------------------------------------------------------------------------------------------

    def __bool__(self) -> bool:
        return bool(self.edits)

    def __len__(self) -> int:
        return len(self.edits)

    def first_layer(self, stacks: Sequence[str] | None = None) -> int | None:
        """The lowest layer any edit touches (in the given stacks), or None when nothing is edited."""
        layers = [e.layer for e in self.edits if stacks is None or e.stack in stacks]
        return min(layers) if layers else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-able description (what a widget syncs); the mean reference is not included."""
        return {"edits": [dict(stack=e.stack, layer=e.layer, head=e.head, mode=e.mode, scale=e.scale)
                          for e in self.edits]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], reference: MeanPattern | None = None) -> Ablation:
        """Inverse of :meth:`to_dict`. ``scale`` may be left out except for mode ``"scale"`` (the mode sets it)."""
        edits = []
        for d in data.get("edits", []):
            if d["mode"] == "scale" and d.get("scale") is None:
                raise ValueError(f"a 'scale' edit needs its scale (a number 0..1): {dict(d)}")
            edits.append(HeadEdit(str(d["stack"]), d["layer"], d.get("head"), str(d["mode"]), d.get("scale", 1.0)))
        return cls(tuple(edits), reference)

    def __repr__(self) -> str:
        if not self.edits:
            return "Ablation()"
        parts = []
        for e in self.edits:
            where = f"{e.layer}" + ("" if e.head is None else f".{e.head}")
            where = where if e.stack == "self" else f"{e.stack}:{where}"
            parts.append(f"{where}={e.mode if e.mode != 'scale' else round(e.scale, 4)}")
        return f"Ablation({', '.join(parts)})"

    # -- applying ------------------------------------------------------------------------------------------------

    def validate(self, info: ModelInfo) -> None:
        """Raise ValueError if an edit does not exist in this model (wrong stack, layer or head)."""
        for e in self.edits:
            n_layers, n_heads = stack_shape(info, e.stack)
            if e.layer >= n_layers:
                raise ValueError(f"layer {e.layer} does not exist: {info.name!r} has {n_layers} layers (0-based)")
            if e.head is not None and e.head >= n_heads:
                raise ValueError(f"head {e.head} does not exist: {info.name!r} has {n_heads} heads per layer")

    def hooks(self, info: ModelInfo) -> list[AttentionHook]:
        """Attention hooks that apply the edits (empty for an empty ablation)."""
        if not self.edits:
            return []
        self.validate(info)
        by_site: dict[tuple[str, int], list[HeadEdit]] = {}
        for e in self.edits:
            by_site.setdefault((e.stack, e.layer), []).append(e)
        reference = self.reference

        def hook(call: AttentionCall, weights: torch.Tensor) -> torch.Tensor | None:
            edits = by_site.get((call.site.stack, call.site.layer))
            if not edits:
                return None
            return apply_edits(call, weights, edits, reference)

        return [hook]


def _address(key: Any, stack: str) -> tuple[str, int, int]:
    if isinstance(key, tuple) and len(key) == 3:
        return _check_stack(str(key[0])), _index(key[1], "layer"), _index(key[2], "head")
    if isinstance(key, tuple) and len(key) == 2:
        return _check_stack(stack), _index(key[0], "layer"), _index(key[1], "head")
    raise TypeError(f"a head is addressed as (layer, head) or (stack, layer, head), got {key!r}")


def apply_edits(call: AttentionCall, weights: torch.Tensor, edits: Sequence[HeadEdit],
                reference: MeanPattern | None) -> torch.Tensor:
    """New weights (B, H, T, S) with the edits of one site applied; a whole-layer edit last, over the head edits."""
    w = weights.clone()
    n_heads = w.shape[1]
    valid: torch.Tensor | None = None
    for e in sorted(edits, key=lambda e: e.head is None):
        heads = list(range(n_heads)) if e.head is None else [e.head]
        if e.mode == "zero":
            w[:, heads] = 0.0
            continue
        if e.mode == "scale":
            w[:, heads] = w[:, heads] * e.scale
            continue
        if valid is None:
            valid = call.valid_keys(weights).to(w.dtype)  # (B, H, T, S) 1 where the query may see the key
        v = valid[:, heads]
        if e.mode == "uniform":
            w[:, heads] = v / v.sum(-1, keepdim=True).clamp_min(1.0)
        else:  # mean
            assert reference is not None
            ref = reference.layer(call.site.stack, call.site.layer)[heads]  # (h, T_max, S_max)
            t, s = min(w.shape[2], ref.shape[1]), min(w.shape[3], ref.shape[2])
            block = torch.zeros(len(heads), w.shape[2], w.shape[3], dtype=w.dtype, device=w.device)
            block[:, :t, :s] = ref[:, :t, :s].to(device=w.device, dtype=w.dtype)
            m = block.unsqueeze(0) * v
            total = m.sum(-1, keepdim=True)
            uniform = v / v.sum(-1, keepdim=True).clamp_min(1.0)
            w[:, heads] = torch.where(total > 0, m / total.clamp_min(1e-30), uniform)
    return w


def mean_pattern(runner: Runner, texts: Sequence[str], *, max_tokens: int = 128, batch_size: int = 16,
                 progress: bool = True) -> MeanPattern:
    """Average every head's attention over ``texts`` by absolute position (see :class:`MeanPattern`).

    Parameters
    ----------
    runner : Runner
    texts : list of str
        The reference corpus (clean runs; cached).
    max_tokens : int
        Keep positions below this (longer texts contribute their first ``max_tokens`` rows/columns).

    Examples
    --------
    >>> import attnwidgets as aw
    >>> ref = mean_pattern(aw.runner.get_runner(), ["The cat sat.", "A dog barked at the moon."])
    >>> ref.patterns["self"].shape[:2]
    (6, 12)
    """
    sums: dict[str, np.ndarray] = {}
    counts: dict[str, np.ndarray] = {}
    for res in runner.iter_results(list(texts), batch_size=batch_size, progress=progress):
        arrays = {"self": res.attention} if res.cross_attention is None else {
            "encoder": res.attention, "decoder": res.decoder_attention, "cross": res.cross_attention}
        for stack, a in arrays.items():
            assert a is not None
            a = a[:, :, :max_tokens, :max_tokens]
            t, s = a.shape[2:]
            if stack not in sums:
                sums[stack] = np.zeros((*a.shape[:2], max_tokens, max_tokens), np.float64)
                counts[stack] = np.zeros((max_tokens, max_tokens), np.float64)
            sums[stack][:, :, :t, :s] += a
            counts[stack][:t, :s] += 1
    if not sums:
        raise ValueError("mean_pattern needs at least one reference text")
    patterns = {}
    for stack, total in sums.items():
        c = counts[stack]
        rows = int(np.max(np.nonzero(c.any(1))[0])) + 1
        cols = int(np.max(np.nonzero(c.any(0))[0])) + 1
        mean = total / np.maximum(c, 1)
        patterns[stack] = mean[:, :, :rows, :cols].astype(np.float32)
    return MeanPattern(patterns, n_texts=len(texts))
