"""Watching an induction head form: the toy decoder trained on repeated random tokens, seeded."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attnwidgets.analysis.roles import role_scores
from attnwidgets.teaching.induction import random_repeats, train_induction


@pytest.fixture(scope="module")
def run():
    return train_induction(seed=0, progress=False)  # the defaults the notebook uses


def test_the_induction_head_forms_with_the_loss_bump(run):
    best = run.max_induction
    steps = run.eval_steps.tolist()
    assert best[0] < 0.2  # measured: 0.07 before training
    assert best[steps.index(100)] < 0.2  # measured: 0.08 at step 100, still on the plateau
    assert best[-1] > 0.6  # measured: 0.89 after 500 steps (seed 0)
    # the bump: the second-copy loss sits on the log(vocab) plateau, then falls far below it as the head forms
    assert run.eval_loss[steps.index(100)] > 0.9 * np.log(16)  # measured: 2.80 (log 16 = 2.77)
    assert run.eval_loss[-1] < 0.5 * np.log(16)  # measured: 0.20


def test_ablating_the_induction_head_undoes_the_copying(run):
    layer, head = np.unravel_index(np.argmax(run.induction[-1]), run.induction[-1].shape)
    clean = run.induction_loss()
    assert clean == pytest.approx(run.eval_loss[-1], rel=1e-5)
    ablated = run.induction_loss([(int(layer), int(head))])
    other = run.induction_loss([(int(layer), (int(head) + 1) % 4)])
    assert ablated > clean + 1.0 and ablated > other
    assert run.induction_loss() == pytest.approx(clean)  # the weights came back


def test_scores_recorded_are_the_scores_of_the_result(run):
    r = run.result(0)
    assert r.tokens[0] == "<bos>" and r.attention.shape == (2, 4, 21, 21)
    roles = run.roles()
    assert roles.shape == (2, 4) and roles.example.tokens == r.tokens
    # one probe row's scores equal the hand definition on its attention
    one = role_scores(r.attention, 10)["induction"]
    q = np.arange(11, 21)
    np.testing.assert_allclose(one, r.attention[:, :, q, q - 9].mean(-1), atol=1e-6)
    frame = run.frame()
    assert list(frame.columns) == ["step", "loss", "second_copy_loss", "max_induction", "best_head"]
    assert frame["step"].tolist() == run.eval_steps.tolist() and np.isnan(frame["loss"].iloc[0])


def test_seeded_and_callback():
    seen = []
    a = train_induction(steps=20, eval_every=10, seed=3, progress=False,
                        callback=lambda step, loss, ind: seen.append((step, loss, ind)))
    b = train_induction(steps=20, eval_every=10, seed=3, progress=False)
    np.testing.assert_array_equal(a.losses, b.losses)
    assert [s for s, _, _ in seen] == [0, 10, 20] and seen[-1][2].shape == (2, 4)
    assert seen[-1][1] == pytest.approx(a.eval_loss[-1])


def test_data_and_bad_input():
    g = torch.Generator().manual_seed(0)
    x = random_repeats(64, 10, 12, g)
    assert all(len(set(row)) == 10 for row in x[:, 1:11].tolist())
    with pytest.raises(ValueError, match="cannot make a block"):
        train_induction(seq_len=20, vocab=10, progress=False)
    with pytest.raises(ValueError, match="steps must be an integer"):
        train_induction(steps=-1, progress=False)
    run = train_induction(steps=0, progress=False)
    with pytest.raises(ValueError, match=r"no head \(2, 0\)"):
        run.induction_loss([(2, 0)])


def test_confirm_role_on_the_toy(run):
    check = run.confirm_role(k=1, n_random=4)
    assert check.heads == run.roles().top("induction", 1)
    assert check.rise > 1.0 and check.rise > 2 * check.random_rise  # measured in the report
    assert len(check.random) == 4 and all(check.heads[0] not in s for s in check.random_heads)
