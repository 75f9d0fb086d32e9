"""Partial recomputation: an ablation starting at layer l re-runs only layers ≥ l.

The clean run of each input stores what every layer returned (its hidden state, valid positions only) and the clean
result. An ablated run then *replays* the layers below ``l``: their ``forward`` is replaced, for the duration of one
call, by a function that returns the stored output (re-padded to the batch). Why this way rather than calling the
layer modules ourselves: the model's own forward still builds the masks, rotary tables and embeddings exactly as it
always does (one code path for BERT, GPT-2, Llama, BART...), and transformers' output-recording hooks still fire on
the replayed layers, so ``hidden_states`` stay complete. The embedding still runs; it is cheap next to a layer.

The first recomputed layer's self-attention sees the same input as in the clean run, so its weights and head outputs
are handed over from the clean run too (:func:`control.substituted`): only the heads the ablation edits are
recomputed there, which saves the q·kᵀ, softmax and weighted sum of one layer per update.

The attention of the replayed layers is not recomputed, so it is taken from the clean result. Padding positions are
replayed as zeros: no valid query ever attends to a padding key (its weight is exactly 0), so valid positions come out
equal to a full recomputation. A model whose layers return something other than one tensor falls back to a full run.

For an encoder-decoder, the stacks are ordered encoder then decoder: an edit in the encoder at layer l replays
encoder layers < l and recomputes the whole decoder; edits only in the decoder (self or cross) replay the whole
encoder and decoder layers below the first edited one.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

import numpy as np
import torch
from torch import nn

from ..attention_stack import dense_budget
from ..result import AttentionResult
from . import control
from .cache import ByteLRU, Entry, Kept
from .encoding import Encoded

STATE_BYTES = 512 << 20

__all__ = ["CleanState", "ReplayRunner", "ReplayState", "forward_ablated", "layer_modules", "start_layers"]


class ReplayRunner(Protocol):
    """What partial recomputation uses of a :class:`attnwidgets.runner.Runner` (which holds a :class:`ReplayState`
    and calls :func:`forward_ablated`): named here so this module does not import the runner back."""

    @property
    def model(self) -> nn.Module: ...

    info: Any
    cache: ByteLRU[AttentionResult]
    replay: ReplayState

    def forward(self, enc: Encoded, hooks: Sequence[control.AttentionHook] = ()) -> Any: ...

    def cached(self, key: Hashable, budget: int | None = None) -> AttentionResult | None: ...

    def cached_entry(self, key: Hashable, budget: int | None = None) -> Entry[AttentionResult] | None: ...

    def dense_needs(self, enc: Encoded) -> list[int]: ...

    def to_result(self, enc: Encoded, out: Any, row: int, ablation: Any) -> AttentionResult: ...


@dataclass
class CleanState:
    """What the clean run of one input leaves for later partial runs.

    Attributes
    ----------
    result : AttentionResult
        The clean result (its attention fills the replayed layers).
    hidden : dict[str, list[torch.Tensor]]
        Per group ("self", or "encoder"/"decoder"): per layer, the layer's output at valid positions, (n, d).
    heads : dict[AttentionSite, torch.Tensor]
        Per self-attention site, its head outputs at valid positions, (n, H, D).
    result_nbytes : int, optional
        ``result.nbytes``, when the caller knows it (the result cache counted it): not asked of the result again.
    """

    result: AttentionResult
    hidden: dict[str, list[torch.Tensor]]
    heads: dict[control.AttentionSite, torch.Tensor] = field(default_factory=dict)
    result_nbytes: int | None = None

    @property
    def nbytes(self) -> int:
        tensors = [t for ts in self.hidden.values() for t in ts] + list(self.heads.values())
        held = self.result.nbytes if self.result_nbytes is None else self.result_nbytes
        return held + sum(t.numel() * t.element_size() for t in tensors)


@dataclass
class ReplayState:
    """What partial recomputation keeps on a runner (``Runner.replay``) from one ablated run to the next.

    Attributes
    ----------
    enabled : bool
        Replay the layers below the first edited one (default), or always run the whole model. Switched off for good
        when the model's layers turn out not to return one tensor each; ``Runner.partial_recompute`` sets it.
    modules : dict[str, list[nn.Module]] | None
        The layer modules of each group ("self", or "encoder" and "decoder"), in order; None when they could not be
        found (the model then always runs whole).
    searched : bool
        Whether ``modules`` has been looked for yet (it is looked for once, on the first ablated run).
    clean : ByteLRU[CleanState]
        The clean runs' states by their result cache key, within :data:`STATE_BYTES`.
    """

    enabled: bool = True
    modules: dict[str, list[nn.Module]] | None = None
    searched: bool = False
    clean: ByteLRU[CleanState] = field(default_factory=lambda: ByteLRU(STATE_BYTES))


def layer_modules(runner: ReplayRunner) -> dict[str, list[nn.Module]] | None:
    """The layer modules of each group ("self", or "encoder" and "decoder"), in order; None if not found."""
    state = runner.replay
    if state.searched:
        return state.modules
    model = runner.model
    found: dict[str, dict[int, nn.Module]] = {}
    for name, module in model.named_modules():
        site = control.site_of(module)
        if site is None:
            continue
        parts = name.split(".")
        idx = next((k for k, p in enumerate(parts) if p.isdigit()), None)
        if idx is None:
            continue
        group = _group(site.stack)
        found.setdefault(group, {})[int(parts[idx])] = model.get_submodule(".".join(parts[: idx + 1]))
    result: dict[str, list[nn.Module]] | None = {}
    for group, by_layer in found.items():
        if sorted(by_layer) != list(range(len(by_layer))):
            result = None
            break
        assert result is not None
        result[group] = [by_layer[k] for k in range(len(by_layer))]
    state.modules, state.searched = result, True
    return result


def start_layers(runner: ReplayRunner, ablation: Any) -> dict[str, int]:
    """First layer to recompute in each group; layers below it are replayed (the full stack when it equals its size)."""
    modules = layer_modules(runner) or {}
    if runner.info.kind != "encoder-decoder":
        first = ablation.first_layer(["self"])
        return {"self": 0 if first is None else first}
    enc = ablation.first_layer(["encoder"])
    if enc is not None:
        return {"encoder": enc, "decoder": 0}
    dec = ablation.first_layer(["decoder", "cross"])
    return {"encoder": len(modules.get("encoder", [])), "decoder": 0 if dec is None else dec}


def _group(stack: str) -> str:
    """The group of layers an attention stack belongs to."""
    return "decoder" if stack in ("decoder", "cross") else stack


def _readonly_tensor(array: np.ndarray) -> torch.Tensor:
    """A tensor over a cached result's array without a copy; it is only read (results keep their arrays read-only)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch warns that the array is not writable
        return torch.from_numpy(array)


def _valid(enc: Encoded, group: str) -> torch.Tensor:
    """(B, T) bool of the real (non-padding) positions of a group's sequence (read only: it is kept with ``enc``)."""
    return _positions(enc, group)[0]


def _positions(enc: Encoded, group: str) -> tuple[torch.Tensor, list[int] | None]:
    """A group's (B, T) bool of real positions, and per row their number when they are a prefix (right padding,
    else None): worked out once per tokenisation (:meth:`Encoded.memo`), not once per replayed layer."""
    ids = enc.inputs["input_ids"]
    name = "decoder_attention_mask" if group == "decoder" else "attention_mask"
    mask = enc.inputs.get(name)

    def make() -> tuple[torch.Tensor, list[int] | None]:
        valid = mask.bool() if mask is not None else torch.ones_like(ids, dtype=torch.bool)
        return valid, _prefix_lengths(valid)

    return enc.memo(f"replay/{name}", (ids, mask), make)


@contextlib.contextmanager
def _capture(modules: dict[str, list[nn.Module]], store: dict[str, list[Any]]) -> Iterator[None]:
    handles = []
    for group, layers in modules.items():
        store[group] = [None] * len(layers)
        for k, m in enumerate(layers):

            def hook(_m: nn.Module, _a: Any, out: Any, g: str = group, i: int = k) -> None:
                store[g][i] = out

            handles.append(m.register_forward_hook(hook))
    try:
        yield
    finally:
        for h in handles:
            h.remove()


@contextlib.contextmanager
def _replay(modules: dict[str, list[nn.Module]], outputs: dict[str, list[torch.Tensor]]) -> Iterator[None]:
    """Replace the forward of the given layers with one that returns the stored output."""
    patched = []
    try:
        for group, tensors in outputs.items():
            for k, t in enumerate(tensors):
                m = modules[group][k]
                m.forward = lambda *a, _t=t, **kw: _t  # type: ignore[method-assign]
                patched.append(m)
        yield
    finally:
        for m in patched:
            del m.forward


def _prefix_lengths(valid: torch.Tensor) -> list[int] | None:
    """Per row, the number of valid positions when they are a prefix (right padding); None otherwise."""
    n = valid.sum(1)
    prefix = torch.arange(valid.shape[1]).unsqueeze(0) < n.unsqueeze(1)
    return n.tolist() if torch.equal(prefix, valid) else None


class _Clean:
    """The clean attention of a batch's inputs (their cached results' arrays), read from each result once per
    ablated run and then sliced per layer, not asked of the result again for every replayed layer."""

    def __init__(self, states: Sequence[CleanState]) -> None:
        self.states = states
        self._arrays: dict[str, list[torch.Tensor]] = {}

    def __len__(self) -> int:
        return len(self.states)

    def layer(self, which: str, layer: int) -> list[torch.Tensor]:
        """Each input's clean (H, q, k) attention of stack ``which`` in ``layer`` (tensors over the results'
        arrays, no copy)."""
        arrays = self._arrays.get(which)
        if arrays is None:
            arrays = self._arrays[which] = [_readonly_tensor(_result_attention(st.result, which)) for st in self.states]
        return [a[layer] for a in arrays]


def _pad_attention(clean: _Clean, enc: Encoded, which: str, layer: int) -> torch.Tensor:
    """Clean attention of one layer, re-padded to the batch: (B, H, T, S).

    One unpadded row is wrapped without a copy; right-padded batches are filled by slices; anything else (left
    padding) by index.
    """
    qgroup = "decoder" if which in ("decoder", "cross") else "encoder"
    kgroup = "decoder" if which == "decoder" else "encoder"
    (qv, qn), (kv, kn) = _positions(enc, qgroup), _positions(enc, kgroup)
    arrays = clean.layer(which, layer)
    if len(arrays) == 1 and arrays[0].shape[1:] == (qv.shape[1], kv.shape[1]):
        return arrays[0].unsqueeze(0)
    out = torch.zeros(len(clean), arrays[0].shape[0], qv.shape[1], kv.shape[1], dtype=torch.float32)
    for row, a in enumerate(arrays):
        if qn is not None and kn is not None:
            out[row, :, : qn[row], : kn[row]] = a
        else:
            qi, ki = torch.nonzero(qv[row]).flatten(), torch.nonzero(kv[row]).flatten()
            out[row][:, qi[:, None], ki[None, :]] = a
    return out


_STACK_FIELDS = {
    "self": "attention",
    "encoder": "attention",
    "decoder": "decoder_attention",
    "cross": "cross_attention",
}


def _result_attention(res: AttentionResult, which: str) -> np.ndarray:
    """A result's [layer, head, query, key] array of one stack (only that one is read)."""
    arr = getattr(res, _STACK_FIELDS[which])
    assert arr is not None
    return cast(np.ndarray, arr)


def _clean_run(
    runner: ReplayRunner, enc: Encoded, clean_keys: Sequence[Hashable], modules: dict[str, list[nn.Module]]
) -> list[CleanState]:
    """Run the batch without hooks, keep each row's layer outputs and clean result (also cached as a result)."""
    raw: dict[str, list[Any]] = {}
    heads: dict[control.AttentionSite, torch.Tensor] = {}

    def record(site: control.AttentionSite, out: torch.Tensor) -> None:
        if site.stack != "cross":
            heads[site] = out

    with _capture(modules, raw), control.recording(record):
        out = runner.forward(enc, ())
    if any(not isinstance(t, torch.Tensor) for ts in raw.values() for t in ts):
        raise _Unsupported
    states = []
    budget = dense_budget()  # read once for the batch's lookups
    for row, key in enumerate(clean_keys):
        found = runner.cached_entry(key, budget)
        if found is None:
            res = runner.to_result(enc, out, row, None)
            nbytes = res.nbytes
            runner.cache.put(key, res, nbytes, Kept(runner.dense_needs(enc)[row], False))
        else:
            res, nbytes = found.value, found.nbytes
        hidden = {g: [t[row][_valid(enc, g)[row]].clone() for t in ts] for g, ts in raw.items()}
        head_out = {site: t[row][_valid(enc, _group(site.stack))[row]].clone() for site, t in heads.items()}
        st = CleanState(res, hidden, head_out, nbytes)
        runner.replay.clean.put(key, st, st.nbytes)
        states.append(st)
    return states


class _Unsupported(Exception):
    pass


def _pad_rows(rows: Sequence[torch.Tensor], positions: tuple[torch.Tensor, list[int] | None]) -> torch.Tensor:
    """Per batch row, a tensor at valid positions (n_b, ...) -> one (B, T, ...) tensor with zeros at padding
    (``positions``: the group's valid mask and prefix lengths, :func:`_positions`).

    One unpadded row is wrapped without a copy; right-padded batches are filled by slices, anything else by index.
    """
    valid, lengths = positions
    first = rows[0]
    if len(rows) == 1 and first.shape[0] == valid.shape[1]:
        return first.unsqueeze(0)
    x = torch.zeros(valid.shape[0], valid.shape[1], *first.shape[1:], dtype=first.dtype, device=first.device)
    for row, t in enumerate(rows):
        if lengths is not None:
            x[row, : lengths[row]] = t
        else:
            x[row][valid[row]] = t
    return x


def _substitutes(
    runner: ReplayRunner, ready: Sequence[CleanState], clean: _Clean, enc: Encoded, starts: dict[str, int]
) -> control.Substitutes:
    """The clean weights and head outputs of the self-attention that opens each group's first recomputed layer.

    Its input is what it was in the clean run: the layers below it are replayed (or there are none), and an edit in
    the encoder leaves the decoder's own embeddings as they were.
    """
    modules = layer_modules(runner) or {}
    given: control.Substitutes = {}
    for group, start in starts.items():
        if start >= len(modules.get(group, [])):
            continue
        site = control.AttentionSite(group, start)  # type: ignore[arg-type]  # a group is named after its stack
        if any(site not in st.heads for st in ready):
            continue
        weights = _pad_attention(clean, enc, group, start)
        heads = _pad_rows([st.heads[site] for st in ready], _positions(enc, group))
        given[site] = (weights.to(heads.device), heads)  # the weights come from a (CPU) result
    return given


def forward_ablated(
    runner: ReplayRunner,
    enc: Encoded,
    hooks: Sequence[control.AttentionHook],
    ablation: Any,
    clean_keys: Sequence[Hashable],
    fill_attention: bool = True,
) -> Any:
    """Forward ``enc`` with the ablation's hooks, replaying the layers below the first edited one.

    With ``fill_attention=False`` the attention tuples hold only the recomputed layers (for callers that read
    nothing but the final hidden states, such as sweeps).

    Falls back to a full forward when partial recomputation is switched off (``runner.partial_recompute = False``),
    the model's layers cannot be replayed, or the ablation edits layer 0 and no clean run is cached yet (a clean run
    would cost a second forward and save nothing).
    """
    modules = layer_modules(runner)
    starts = start_layers(runner, ablation)
    if not runner.replay.enabled or modules is None or set(modules) != set(starts):
        return runner.forward(enc, hooks)
    store = runner.replay.clean
    states: list[CleanState | None] = [store.get(k) for k in clean_keys]
    try:
        if any(s is None for s in states):
            if not any(starts.values()):
                return runner.forward(enc, hooks)
            states = list(_clean_run(runner, enc, clean_keys, modules))
    except _Unsupported:
        runner.replay.enabled = False
        return runner.forward(enc, hooks)
    ready: list[CleanState] = [s for s in states if s is not None]
    clean = _Clean(ready)
    replay = {
        group: [_pad_rows([st.hidden[group][layer] for st in ready], _positions(enc, group)) for layer in range(start)]
        for group, start in starts.items()
    }
    with _replay(modules, replay), control.substituted(_substitutes(runner, ready, clean, enc, starts)):
        out = runner.forward(enc, hooks)
    if not fill_attention:
        return out
    if runner.info.kind == "encoder-decoder":
        fields = [
            ("encoder_attentions", "encoder", starts["encoder"]),
            ("decoder_attentions", "decoder", starts["decoder"]),
            ("cross_attentions", "cross", starts["decoder"]),
        ]
    else:
        fields = [("attentions", "self", starts["self"])]
    for name, which, start in fields:
        if start == 0:
            continue
        fresh = tuple(getattr(out, name) or ())
        out[name] = tuple(_pad_attention(clean, enc, which, k) for k in range(start)) + fresh
    return out
