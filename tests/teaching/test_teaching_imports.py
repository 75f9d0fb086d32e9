"""The numpy half of the teaching kit must not pull in torch."""

from __future__ import annotations

import subprocess
import sys

import pytest

CHECK = "import sys; import {modules}; print('torch' in sys.modules)"


@pytest.mark.parametrize(
    ("modules", "expect_torch"),
    [
        ("attnwidgets.teaching.positional, attnwidgets.teaching.masks", "False"),
        ("attnwidgets.teaching.tasks, attnwidgets.teaching", "False"),
        ("attnwidgets.teaching.transformer", "True"),  # the control: this check can see torch when it is there
    ],
)
def test_numpy_modules_leave_torch_out(modules, expect_torch):
    out = subprocess.run([sys.executable, "-c", CHECK.format(modules=modules)], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == expect_torch, out.stderr


def test_package_lazily_exposes_training_names():
    out = subprocess.run(
        [sys.executable, "-c", "import sys, attnwidgets.teaching as t; a = 'torch' in sys.modules; t.train; "
         "print(a, 'torch' in sys.modules, callable(t.get_task))"],
        capture_output=True, text=True, check=True,
    )
    assert out.stdout.split() == ["False", "True", "True"], out.stderr


def test_train_is_the_function_whatever_was_imported_first():
    out = subprocess.run(
        [sys.executable, "-c", "import attnwidgets.teaching.training, attnwidgets.teaching.transformer; "
         "from attnwidgets.teaching import train, TrainingRun; print(callable(train), TrainingRun.__name__)"],
        capture_output=True, text=True, check=True,
    )
    assert out.stdout.split() == ["True", "TrainingRun"], out.stderr
