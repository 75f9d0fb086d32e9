"""What a widget and its static twin both compute, one public module per concept, below ``widgets/`` and ``plots/``:

- :mod:`~attnwidgets.viewdata.checks`: one validator for layer, head, kind and query arguments;
- :mod:`~attnwidgets.viewdata.display`: causal masks as NaN, block-max overviews, regions, thumbnails;
- :mod:`~attnwidgets.viewdata.lines`: HeadView's line sets (sentence filters) and its sparse layer payload;
- :mod:`~attnwidgets.viewdata.head_stats`: per-head statistic tables from any source the per-head views take;
- :mod:`~attnwidgets.viewdata.labels`: token labels, and the tokens and segments of each attention kind's axes;
- :mod:`~attnwidgets.viewdata.wire`: the wire format (``{buffer, dtype, shape}``, uint8 with a masked byte) and
  the built front-end bundles, shared by the live widgets and the saved HTML pages;
- :mod:`~attnwidgets.viewdata.positional` and :mod:`~attnwidgets.viewdata.masks`: the positional encodings and
  attention masks PositionalExplorer and MaskExplorer draw (the teaching kit re-exports them).
- :mod:`~attnwidgets.viewdata.selection`: a selection of query tokens (a span or any set) and its combined row, the
  mean or sum of their attention rows, read a block of rows at a time.

It imports numpy, :mod:`attnwidgets.result` and :mod:`attnwidgets.analysis` only: no widget, no matplotlib, no
torch, no anywidget or traitlets, so widgets and plots both build on it and never on each other.

>>> import numpy as np
>>> from attnwidgets.viewdata import check_layer, mask_future
>>> check_layer(1, 2), mask_future(np.ones((2, 2))).tolist()
(1, [[1.0, nan], [1.0, 1.0]])
"""

from . import masks, positional
from .checks import (
    COLORMAPS,
    DIVERGING_COLORMAPS,
    KINDS,
    THEMES,
    check_colormap,
    check_head,
    check_int,
    check_kind,
    check_layer,
    check_query,
    check_theme,
    check_view,
)
from .display import block_reduce, is_causal, mask_future, overview, region, thumbnails
from .head_stats import HeadStats, head_stats, stat_labels, takes_attention
from .labels import axis_segments, axis_tokens, kind_tokens, token_label
from .lines import SENTENCE_FILTERS, filter_mask, layer_payload, payload_reply
from .wire import MASKED_BYTE, bundle, bundle_text, pack, quantise_uint8

__all__ = [
    "COLORMAPS",
    "DIVERGING_COLORMAPS",
    "KINDS",
    "MASKED_BYTE",
    "SENTENCE_FILTERS",
    "THEMES",
    "HeadStats",
    "axis_segments",
    "axis_tokens",
    "block_reduce",
    "bundle",
    "bundle_text",
    "check_colormap",
    "check_head",
    "check_int",
    "check_kind",
    "check_layer",
    "check_query",
    "check_theme",
    "check_view",
    "filter_mask",
    "head_stats",
    "is_causal",
    "kind_tokens",
    "layer_payload",
    "mask_future",
    "masks",
    "overview",
    "pack",
    "payload_reply",
    "positional",
    "quantise_uint8",
    "region",
    "stat_labels",
    "takes_attention",
    "thumbnails",
    "token_label",
]
