"""The test of tests/viewdata/test_view_windows.py that needs a model: GQA groups in the ablation grid."""

from __future__ import annotations

import attnwidgets as aw


def test_gqa_groups_in_the_ablation_grid(tiny_llama, tiny_gpt2):
    ab = aw.AblationWidget(["The cat sat."], model=tiny_llama)
    assert ab._payload["kv_heads"] == {"self": 2} and ab._payload["stacks"]["self"][1] == 4
    assert aw.AblationWidget(["The cat sat."], model=tiny_gpt2)._payload["kv_heads"]["self"] in (0, 2, 4)
