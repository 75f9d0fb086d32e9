"""attnwidgets: see, measure, ablate and probe what a transformer's attention heads do.

>>> import attnwidgets as aw
>>> result = aw.run("The cat sat on the mat because it was tired.")   # bundled all-MiniLM-L6-v2
>>> aw.AttentionHeatmap(result)                                        # doctest: +SKIP

The package is split the way data flows: ``runner`` (torch) -> ``AttentionResult`` (numpy) -> ``analysis`` (numpy)
-> ``widgets`` (anywidget) and ``plots`` (matplotlib); ``studies`` (sweeps, head importance, fine-tuning, gradients,
corpus runs) drive the runner many times and hand what comes back to analysis. Importing ``attnwidgets`` itself
imports neither torch nor the widgets; they load when first used.
"""

from __future__ import annotations

from typing import Any

from .lazy import attach
from .result import AttentionResult

# name -> module that defines it; resolved on first use so `import attnwidgets` stays light. What a lecture or a first
# notebook types: running a model, the results, the views, saving, the theme, the errors. Everything else lives in a
# subpackage, reached as ``aw.plots``, ``aw.analysis``, ``aw.studies``, ``aw.teaching``, ``aw.runner``, ``aw.widgets``.
_LAZY: dict[str, str] = {
    # running a model
    "run": "attnwidgets.runner",
    "run_batch": "attnwidgets.runner",
    "generate": "attnwidgets.runner",
    # results
    "GenerationResult": "attnwidgets.generation_result",
    # views
    "AblationWidget": "attnwidgets.widgets",
    "AttentionCompare": "attnwidgets.widgets",
    "AttentionHeatmap": "attnwidgets.widgets",
    "AttentionProfile": "attnwidgets.widgets",
    "EntropyBars": "attnwidgets.widgets",
    "FillMask": "attnwidgets.widgets",
    "QKSpaceView": "attnwidgets.widgets",
    "GenerationView": "attnwidgets.widgets",
    "HeadClusterMap": "attnwidgets.widgets",
    "HeadRolesView": "attnwidgets.widgets",
    "HeadStatsGrid": "attnwidgets.widgets",
    "HeadView": "attnwidgets.widgets",
    "MaskExplorer": "attnwidgets.widgets",
    "ModelView": "attnwidgets.widgets",
    "PositionalExplorer": "attnwidgets.widgets",
    "QKStepThrough": "attnwidgets.widgets",
    "RouterView": "attnwidgets.widgets",
    # saving, showing
    "save": "attnwidgets.studies.saved",
    "load": "attnwidgets.studies.saved",
    "save_html": "attnwidgets.export",
    "set_theme": "attnwidgets.widgets",
    # errors
    "ModelLoadError": "attnwidgets.runner",
    "AttentionUnavailableError": "attnwidgets.runner",
    "AttentionTooLargeError": "attnwidgets.attention_stack",
    "SavedFileError": "attnwidgets.persist",
}

#: The subpackages, imported on first use as attributes (``aw.plots.plot_heatmap``).
_SUBPACKAGES = ("analysis", "plots", "runner", "studies", "teaching", "widgets")

__all__ = ["AttentionResult", "__version__", *_LAZY]

_getattr, __dir__ = attach("attnwidgets", _LAZY, ["AttentionResult", "load_ipython_extension", *_SUBPACKAGES])


def __getattr__(name: str) -> Any:
    if name == "__version__":  # read on first use: the distribution lookup costs a fresh process ~30-80 ms
        from ._version import __version__

        globals()["__version__"] = __version__
        return __version__
    if name in _SUBPACKAGES:
        import importlib

        return importlib.import_module(f"attnwidgets.{name}")
    try:
        return _getattr(name)
    except AttributeError:
        raise AttributeError(f"module 'attnwidgets' has no attribute {name!r}: the top level keeps the runs, results, "
                             "views, save/load and errors; plots, statistics, studies and the teaching kit are in "
                             f"attnwidgets.{', attnwidgets.'.join(_SUBPACKAGES)}") from None


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext attnwidgets``: the ``%attention``, ``%%attention`` and ``%attention_model`` magics."""
    from .magics import load_ipython_extension as load

    load(ipython)
