"""One rule for progress bars: every public function that loops over many inputs takes ``progress=True`` and shows a
``tqdm.auto`` bar once the work has lasted a second; ``progress=False`` shows none. Loading a model prints nothing."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import attnwidgets
from attnwidgets.runner import get_runner
from attnwidgets.runner.loading import load

PACKAGES = ["attnwidgets.runner", "attnwidgets.studies", "attnwidgets.analysis"]
LOOPING = {  # functions over many inputs: each must take progress=
    "attnwidgets.runner.runner.run_batch", "attnwidgets.runner.runner.Runner.run_batch",
    "attnwidgets.runner.runner.Runner.iter_results", "attnwidgets.runner.ablation.mean_pattern",
    "attnwidgets.studies.corpus.corpus_stats", "attnwidgets.studies.dependency.dependency_scores",
    "attnwidgets.studies.gradients.attention_gradients", "attnwidgets.studies.sweeps.sweep_heads",
    "attnwidgets.studies.pruning.pruning_curve", "attnwidgets.studies.importance.head_importance",
    "attnwidgets.studies.finetune.finetune_classifier", "attnwidgets.studies.finetune.compare_finetuning",
    "attnwidgets.studies.watch.watch_ablation", "attnwidgets.analysis.dependency.score_dependencies",
}


def _public_functions() -> dict[str, object]:
    found: dict[str, object] = {}
    for package in PACKAGES:
        pkg = importlib.import_module(package)
        for info in pkgutil.iter_modules(pkg.__path__):
            module = importlib.import_module(f"{package}.{info.name}")
            for name, obj in vars(module).items():
                if name.startswith("_") or getattr(obj, "__module__", None) != module.__name__:
                    continue
                if inspect.isfunction(obj):
                    found[f"{module.__name__}.{name}"] = obj
                elif inspect.isclass(obj):
                    for meth_name, meth in vars(obj).items():
                        if inspect.isfunction(meth) and not meth_name.startswith("_"):
                            found[f"{module.__name__}.{name}.{meth_name}"] = meth
    return found


def test_every_progress_parameter_defaults_to_true():
    functions = _public_functions()
    with_progress = {name for name, fn in functions.items() if "progress" in inspect.signature(fn).parameters}
    assert LOOPING <= with_progress, sorted(LOOPING - with_progress)
    wrong = {name: inspect.signature(functions[name]).parameters["progress"].default for name in with_progress
             if inspect.signature(functions[name]).parameters["progress"].default is not True}
    assert not wrong, wrong


def test_bar_waits_a_second_and_progress_false_makes_none(tiny_bert, monkeypatch):
    import tqdm.auto

    made: list[dict] = []

    class Recorder:
        def __init__(self, **kwargs):
            made.append(kwargs)

        def update(self, n):
            pass

        def close(self):
            pass

    monkeypatch.setattr(tqdm.auto, "tqdm", Recorder)
    runner = get_runner(tiny_bert)
    runner.run_batch(["One text here.", "Another one."])
    assert len(made) == 1 and made[0]["delay"] == 1.0 and made[0]["total"] == 2
    runner.run_batch(["A third text."], progress=False)
    runner.run("A single text runs with no bar.")
    assert len(made) == 1


def test_loading_a_model_prints_nothing_and_keeps_global_settings(tiny_gpt2, capfd):
    from transformers.utils import logging as hf_logging

    hf_logging.enable_progress_bar()
    verbosity = hf_logging.get_verbosity()
    capfd.readouterr()
    load(tiny_gpt2)
    out, err = capfd.readouterr()
    assert out == "" and err == ""
    assert hf_logging.is_progress_bar_enabled() and hf_logging.get_verbosity() == verbosity
    hf_logging.disable_progress_bar()
    load(tiny_gpt2)
    assert not hf_logging.is_progress_bar_enabled()
    hf_logging.enable_progress_bar()


@pytest.mark.parametrize("verbosity", ["info"])
def test_loading_is_quiet_even_when_transformers_is_verbose(tiny_bert, capfd, verbosity):
    from transformers.utils import logging as hf_logging

    before = hf_logging.get_verbosity()
    hf_logging.set_verbosity(hf_logging.INFO)
    try:
        capfd.readouterr()
        load(tiny_bert)
        out, err = capfd.readouterr()
        assert out == "" and err == "", (out, err)
        assert hf_logging.get_verbosity() == hf_logging.INFO
    finally:
        hf_logging.set_verbosity(before)
    assert attnwidgets  # the package imports with no output of its own
