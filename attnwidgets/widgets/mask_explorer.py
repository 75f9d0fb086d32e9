"""MaskExplorer: which keys each query may see, and how MQA/GQA share key/value heads (front end:
js/src/views/mask_explorer/).

The masks come from :mod:`attnwidgets.viewdata.masks` (numpy): full (encoder), causal (decoder), sliding window
(local attention) and global + local (Longformer/BigBird). A second panel shows grouped-query attention: which
key/value head every query head reads, and what that does to a decoder's KV cache.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import traitlets

from ..viewdata.views.mask_explorer import MASKS, MAX_LENGTH, MaskOptions, mask_explorer_state
from ._base import AttnWidget


class MaskExplorer(AttnWidget):
    """Attention masks as a query x key grid, and a panel on how MQA/GQA share key/value heads.

    In the page: a menu picks the mask, sliders set the length and the window, a checkbox makes the window causal,
    and a box lists the global tokens; hover a cell to read which keys that query sees. The second panel draws
    query heads above their shared key/value heads and compares the KV-cache size of MHA, GQA and MQA.

    Parameters
    ----------
    mask : str
        "full", "causal", "sliding_window" or "global_local".
    length, window, causal, global_tokens, n_heads, n_kv_heads, n_layers, head_dim, seq_len, bytes_per_value, theme
        See the traits.

    Notes
    -----
    The first argument is what the view shows, a mask (it draws no model's attention, so it takes no result). No
    ``layer``, ``head``, ``kind`` or ``words``: the masks are computed for a length, not read from a model; no
    ``colormap``: a cell is allowed or not (two colours, the theme's).

    Examples
    --------
    >>> w = MaskExplorer("sliding_window", length=8, window=3)
    >>> int(w.mask_array().sum(1).max())                     # no query sees more than 3 keys
    3
    >>> w.kv_cache()["GQA"] / w.kv_cache()["MHA"]            # 8 query heads reading 2 kv heads
    0.25
    """

    _bundle = "mask_explorer"

    mask = traitlets.Unicode("causal").tag(sync=True)
    """str, default "causal": the mask drawn ("full", "causal", "sliding_window", "global_local"). Two-way: the
    page's menu sets it."""

    length = traitlets.Int(16).tag(sync=True)
    """int, default 16: sequence length (2 .. 256). A slider in the page; two-way."""

    window = traitlets.Int(4).tag(sync=True)
    """int, default 4: the sliding window w (1 .. length): the query and the w − 1 keys before it (causal), or w // 2
    keys on each side. A slider in the page; two-way."""

    causal = traitlets.Bool(True).tag(sync=True)
    """bool, default True: sliding window and global + local as in a decoder (keys j ≤ i only) rather than both
    sides. A checkbox in the page; two-way."""

    global_tokens = traitlets.List(traitlets.Int(), default_value=[0]).tag(sync=True)
    """list of int, default [0]: positions of the global tokens of "global_local" (their rows and columns are full).
    A text box in the page ("0, 8"); two-way."""

    padding = traitlets.Int(0).tag(sync=True)
    """int, default 0: how many of the last positions are [PAD] (0 .. length − 1), as for a short input padded to a
    batch's longest: the padding mask hides their key columns from every query. A slider in the page; two-way."""

    n_heads = traitlets.Int(8).tag(sync=True)
    """int, default 8: query heads of the GQA panel. A menu in the page; two-way."""

    n_kv_heads = traitlets.Int(2).tag(sync=True)
    """int, default 2: key/value heads; must divide ``n_heads`` (= n_heads: MHA, 1: MQA, between: GQA). A menu in the
    page offering the divisors; two-way."""

    n_layers = traitlets.Int(32).tag(sync=True)
    """int, default 32: layers, for the KV-cache size (32 layers of 128-wide heads, as in Llama-2-7B)."""

    head_dim = traitlets.Int(128).tag(sync=True)
    """int, default 128: width of one head, for the KV-cache size."""

    seq_len = traitlets.Int(4096).tag(sync=True)
    """int, default 4096: tokens held in the KV cache. A menu in the page; two-way."""

    bytes_per_value = traitlets.Int(2).tag(sync=True)
    """int, default 2: bytes per cached number (2: float16/bfloat16, 4: float32)."""

    _payload = traitlets.Dict().tag(sync=True)
    """dict: {mask}: the mask ``[query_pos, key_pos]`` as a binary uint8 buffer (1: may attend), recomputed when the
    mask traits change."""

    _meta = traitlets.Dict().tag(sync=True)
    """dict: caption, allowed pairs, keys per query, kv head of every query head, variant name and KV-cache bytes of
    MHA, GQA and MQA."""

    def __init__(self, mask: str = "causal", **kwargs: Any) -> None:
        super().__init__(mask=mask, **kwargs)
        self._refresh()

    def mask_array(self) -> np.ndarray:
        """The mask drawn, ``[query_pos, key_pos]`` (length, length) bool."""
        return self._options().mask_array()

    def kv_heads(self) -> np.ndarray:
        """The key/value head each query head reads, (n_heads,) int64."""
        return self._options().kv_heads()

    def kv_cache(self) -> dict[str, int]:
        """KV-cache bytes of this model as MHA, GQA (``n_kv_heads``) and MQA."""
        return self._options().kv_cache()

    @traitlets.validate("mask")
    def _valid_mask(self, proposal: dict[str, Any]) -> str:
        if proposal["value"] not in MASKS:
            raise traitlets.TraitError(f"unknown mask {proposal['value']!r}; choose one of {MASKS}")
        return str(proposal["value"])

    @traitlets.validate("length", "window", "n_layers", "head_dim", "seq_len", "bytes_per_value", "n_heads")
    def _valid_positive(self, proposal: dict[str, Any]) -> int:
        name, v = proposal["trait"].name, int(proposal["value"])
        if v < 1 or (name == "length" and not 2 <= v <= MAX_LENGTH):
            raise traitlets.TraitError(f"{name} must be >= 1" + (f" and <= {MAX_LENGTH}" if name == "length" else "")
                                       + f", got {v}")
        if name == "n_heads" and v % self.n_kv_heads:
            self.set_trait("n_kv_heads", 1)  # keep the pair valid; the menu then offers the new divisors
        if name == "length" and self.padding >= v:
            self.set_trait("padding", v - 1)  # a shorter input keeps at least one real token
        return v

    @traitlets.validate("padding")
    def _valid_padding(self, proposal: dict[str, Any]) -> int:
        v = int(proposal["value"])
        if not 0 <= v < self.length:
            raise traitlets.TraitError(f"padding must be 0 .. length - 1 = {self.length - 1} (at least one real "
                                       f"token), got {v}")
        return v

    @traitlets.validate("n_kv_heads")
    def _valid_kv(self, proposal: dict[str, Any]) -> int:
        v = int(proposal["value"])
        if v < 1 or self.n_heads % v:
            divisors = [k for k in range(1, self.n_heads + 1) if self.n_heads % k == 0]
            raise traitlets.TraitError(f"n_kv_heads ({v}) must divide n_heads ({self.n_heads}); try one of {divisors}")
        return v

    @traitlets.observe("mask", "length", "window", "causal", "global_tokens", "padding", "n_heads", "n_kv_heads",
                       "n_layers", "head_dim", "seq_len", "bytes_per_value")
    def _on_change(self, _change: dict[str, Any]) -> None:
        self._refresh()

    def _options(self) -> MaskOptions:
        return MaskOptions(mask=self.mask, length=self.length, window=self.window, causal=self.causal,
                           global_tokens=tuple(self.global_tokens), padding=self.padding, n_heads=self.n_heads,
                           n_kv_heads=self.n_kv_heads, n_layers=self.n_layers, head_dim=self.head_dim,
                           seq_len=self.seq_len, bytes_per_value=self.bytes_per_value)

    def _refresh(self) -> None:
        self._show(mask_explorer_state(self._options()))
