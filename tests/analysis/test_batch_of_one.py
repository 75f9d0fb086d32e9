"""One dense input batched (what surface_stats, pattern_features and head_distances do with one result): its batch
is a view of the result's attention, not a padded copy, and the statistics are those of the same input in a padded
batch of several."""

from __future__ import annotations

import subprocess
import sys

import numpy as np

from attnwidgets.analysis.batch import AttentionBatch
from attnwidgets.analysis.surface import surface_stats_batch
from attnwidgets.result import AttentionResult


def _result(n: int, seed: int) -> AttentionResult:
    a = np.random.default_rng(seed).random((2, 3, n, n), dtype=np.float32) ** 4
    tokens = ["[CLS]", *(f"w{i}" for i in range(n - 3)), ".", "[SEP]"]
    return AttentionResult.from_arrays(a / a.sum(-1, keepdims=True), tokens)


def test_a_batch_of_one_is_a_view_with_the_statistics_of_a_padded_batch() -> None:
    r, longer = _result(7, 0), _result(11, 1)
    one = AttentionBatch.from_results([r])
    assert np.shares_memory(one.attention, r.attention) and not one.attention.flags.writeable
    padded = AttentionBatch.from_results([r, longer])  # r padded from 7 to 11 tokens
    assert not np.shares_memory(padded.attention, r.attention)
    alone, among = surface_stats_batch(one), surface_stats_batch(padded)
    for key in alone:
        np.testing.assert_allclose(alone[key][0], among[key][0], rtol=1e-6, atol=1e-7, err_msg=key)
    np.testing.assert_array_equal(one.valid, padded.valid[:1, :7])
    for kind in one.kinds:
        np.testing.assert_array_equal(one.kinds[kind], padded.kinds[kind][:1, :7])


def test_head_stats_of_a_result_import_no_pandas() -> None:
    """pandas (half a second) is imported only when a DataFrame could be the source: when something imported it."""
    code = ("import sys, numpy as np\n"
            "from attnwidgets.result import AttentionResult\n"
            "from attnwidgets.viewdata.head_stats import head_stats\n"
            "r = AttentionResult.from_arrays(np.full((1, 2, 3, 3), 1 / 3, np.float32), ['[CLS]', 'hi', '[SEP]'])\n"
            "s = head_stats(r)\n"
            "print('pandas' in sys.modules, round(float(s.values['sep'][0, 1]), 4))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "0.3333"]
