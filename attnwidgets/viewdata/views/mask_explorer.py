"""MaskExplorer's state (front end: js/src/views/mask_explorer/): the mask drawn and what the panels print about it
and about grouped-query attention (which key/value head each query head reads, the KV-cache sizes), as a pure
function of the view's options. The masks come from :mod:`attnwidgets.viewdata.masks` (numpy).

Examples
--------
>>> state = mask_explorer_state(MaskOptions("causal", length=4, padding=1))
>>> state.payload.mask.astype(int).tolist()[3], state.meta.allowed, state.meta.keys_max, state.meta.variant
([1, 1, 1, 0], 9, 3, 'GQA')
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import masks as M
from ..state import packed_as

__all__ = ["CAPTIONS", "MASKS", "MAX_LENGTH", "PADDING_CAPTION", "MaskExplorerMeta", "MaskExplorerPayload",
           "MaskExplorerState", "MaskOptions", "build_mask", "mask_explorer_state"]

MASKS = ("full", "causal", "sliding_window", "global_local")
MAX_LENGTH = 256

CAPTIONS = {
    "full": "Encoder self-attention (BERT) and cross-attention: every query sees every key. Cost grows as T².",
    "causal": "Decoder self-attention (GPT): query i sees keys j ≤ i, so a token never peeks at the future. "
              "Still about T²/2 pairs.",
    "sliding_window": "Local attention (Mistral, Longformer): each query sees only the last w keys (causal) or "
                      "w/2 on each side. Cost T·w instead of T²; stacking L layers still reaches L·(w − 1) tokens back "
                      "(each layer adds w − 1).",
    "global_local": "Global + local (Longformer, BigBird): a sliding window, plus a few global tokens (e.g. [CLS]) "
                    "that see everything and that everything sees, so information can cross the whole input in "
                    "two hops.",
}

PADDING_CAPTION = (" Padding: the last {p} positions are [PAD] (a short input in a batch of longer ones). Their key "
                   "columns are masked for every query, so padded keys get weight exactly 0; their own rows (hatched) "
                   "are computed and thrown away. Forget the mask and real tokens attend to [PAD].")


def build_mask(mask: str, length: int, *, window: int = 4, causal: bool = True,
               global_tokens: tuple[int, ...] | list[int] = (0,), padding: int = 0) -> np.ndarray:
    """The mask :class:`~attnwidgets.widgets.MaskExplorer` draws, ``[query_pos, key_pos]`` (length, length) bool
    (True: may attend).

    ``padding`` last positions are [PAD] (a short input in a batch of longer ones): their key columns are masked for
    every query, so a padded key gets weight exactly 0. Their query rows are left as the mask has them: the model
    computes them and the caller throws them away.

    Examples
    --------
    >>> build_mask("sliding_window", 5, window=2).astype(int).tolist()[4]
    [0, 0, 0, 1, 1]
    >>> build_mask("global_local", 4, window=1, causal=False, global_tokens=[0]).astype(int).tolist()[2]
    [1, 0, 1, 0]
    >>> build_mask("full", 4, padding=1).astype(int).tolist()[0]      # the last key is [PAD]: nobody attends to it
    [1, 1, 1, 0]
    """
    if not 0 <= padding < length:
        raise ValueError(f"padding must be 0 .. length - 1 = {length - 1} (at least one real token), got {padding}")
    if mask == "full":
        m = M.full_mask(length)
    elif mask == "causal":
        m = M.causal_mask(length)
    elif mask == "sliding_window":
        m = M.sliding_window_mask(length, window, causal=causal)
    elif mask == "global_local":
        m = M.global_local_mask(length, window, [g for g in global_tokens if 0 <= g < length], causal=causal)
    else:
        raise ValueError(f"unknown mask {mask!r}; choose one of {MASKS}")
    if padding:
        m = m.copy()
        m[:, length - padding:] = False
    return m


@dataclass(frozen=True)
class MaskOptions:
    """What the widget's traits choose: the mask and the model whose key/value heads and cache the panel shows."""

    mask: str = "causal"
    length: int = 16
    window: int = 4
    causal: bool = True
    global_tokens: tuple[int, ...] = (0,)
    padding: int = 0
    n_heads: int = 8
    n_kv_heads: int = 2
    n_layers: int = 32
    head_dim: int = 128
    seq_len: int = 4096
    bytes_per_value: int = 2

    def mask_array(self) -> np.ndarray:
        """The mask drawn, ``[query_pos, key_pos]`` (length, length) bool."""
        return build_mask(self.mask, self.length, window=self.window, causal=self.causal,
                          global_tokens=self.global_tokens, padding=self.padding)

    def kv_heads(self) -> np.ndarray:
        """The key/value head each query head reads, (n_heads,) int64."""
        return M.kv_head_for_query_head(self.n_heads, self.n_kv_heads)

    def kv_cache(self) -> dict[str, int]:
        """KV-cache bytes of this model as MHA, GQA (``n_kv_heads``) and MQA."""
        return M.kv_cache_comparison(n_layers=self.n_layers, n_heads=self.n_heads, head_dim=self.head_dim,
                                     seq_len=self.seq_len, n_kv_heads=self.n_kv_heads,
                                     bytes_per_value=self.bytes_per_value)


@dataclass(frozen=True)
class MaskExplorerPayload:
    """``_payload``: the mask, (length, length) uint8, 1 = may attend."""

    mask: np.ndarray = field(metadata=packed_as("uint8"))


@dataclass(frozen=True)
class MaskExplorerMeta:
    """``_meta``: the caption, the counts of allowed cells and of keys per query, the key/value head of every query
    head, the variant (MHA, GQA or MQA) and the KV-cache bytes of each."""

    caption: str
    padding: int  # the last ``padding`` positions are [PAD]
    allowed: int
    total: int
    keys_min: int
    keys_max: int
    kv_heads: list[int]
    variant: str
    cache: dict[str, int]  # variant -> bytes


@dataclass(frozen=True)
class MaskExplorerState:
    payload: MaskExplorerPayload
    meta: MaskExplorerMeta


def mask_explorer_state(options: MaskOptions) -> MaskExplorerState:
    """What the page draws for ``options``."""
    m = options.mask_array()  # (T, T) bool
    per_query = m.sum(1)
    meta = MaskExplorerMeta(
        caption=CAPTIONS[options.mask] + (PADDING_CAPTION.format(p=options.padding) if options.padding else ""),
        padding=int(options.padding), allowed=int(m.sum()), total=int(m.size), keys_min=int(per_query.min()),
        keys_max=int(per_query.max()), kv_heads=[int(k) for k in options.kv_heads()],
        variant=M.attention_variant(options.n_heads, options.n_kv_heads),
        cache={k: int(v) for k, v in options.kv_cache().items()})
    return MaskExplorerState(MaskExplorerPayload(m.astype(np.uint8)), meta)
