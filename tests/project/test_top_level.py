"""The top level is small (what a lecture or a first notebook types) and the rest is one attribute away.

``import attnwidgets as aw`` gives the runs, the results, the views, save/load, the theme and the errors; plots,
statistics, studies, the teaching kit and the runner's tools are ``aw.plots``, ``aw.analysis``, ``aw.studies``,
``aw.teaching``, ``aw.runner``, ``aw.widgets``, imported when first touched.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import attnwidgets as aw

#: 30 names and ``load_ipython_extension`` (``%load_ext attnwidgets``): the 17th view, RouterView (issue 34 §5), took
#: the last place, as the views are what a first notebook types.
BUDGET = 31
SUBPACKAGES = {"analysis", "plots", "runner", "studies", "teaching", "widgets"}


def public(names: list[str]) -> list[str]:
    return sorted(n for n in names if not n.startswith("__") and n not in SUBPACKAGES)


def test_the_top_level_is_within_its_budget() -> None:
    assert len(public(aw.__all__)) <= BUDGET, public(aw.__all__)
    assert len(public(dir(aw))) <= BUDGET, public(dir(aw))
    assert set(public(aw.__all__)) <= set(dir(aw))


def test_every_top_level_name_resolves() -> None:
    for name in [*aw.__all__, *dir(aw)]:
        assert getattr(aw, name) is not None, name


@pytest.mark.parametrize("name", sorted(SUBPACKAGES))
def test_each_subpackage_is_an_attribute_imported_on_first_use(name: str) -> None:
    code = (f"import sys, attnwidgets as aw\nbefore = 'attnwidgets.{name}' in sys.modules\n"
            f"mod = aw.{name}\nprint(before, mod is sys.modules['attnwidgets.{name}'], 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out[:2] == ["False", "True"], out
    if name in {"analysis", "plots"}:  # numpy/matplotlib layers: reaching them loads no model code
        assert out[2] == "False", f"aw.{name} imported torch"


def test_a_view_loads_no_table_or_sparse_library() -> None:
    """Opening the first view in a fresh kernel pays for importing the views: pandas and scipy load only when a table
    or a word map is made (they were ~0.22 s of the ~0.55 s of CPU that import took)."""
    code = ("import sys, attnwidgets as aw\naw.AttentionHeatmap\n"
            "print(sorted(m for m in ('pandas', 'scipy', 'sklearn', 'matplotlib', 'torch') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", out


def test_a_view_imports_its_own_module_not_every_view() -> None:
    """``aw.AttentionHeatmap`` imports the heatmap's widget and view-state modules, not the other views' (importing
    all of them was most of what the views' import cost in a fresh kernel); the others load when first named."""
    code = ("import sys, attnwidgets as aw\naw.AttentionHeatmap\n"
            "print(sorted(m for m in ('attnwidgets.widgets.heatmap', 'attnwidgets.viewdata.views.heatmap',"
            " 'attnwidgets.widgets.head_view', 'attnwidgets.viewdata.views.head_view',"
            " 'attnwidgets.widgets.ablation', 'attnwidgets.viewdata.views.generation') if m in sys.modules))\n"
            "from attnwidgets.widgets import HeadView\n"
            "print(HeadView.__module__, 'attnwidgets.viewdata.views.head_view' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.splitlines()
    assert out == ["['attnwidgets.viewdata.views.heatmap', 'attnwidgets.widgets.heatmap']",
                   "attnwidgets.widgets.head_view True"], out


def test_every_name_of_the_widgets_package_resolves_to_its_module() -> None:
    import attnwidgets.viewdata.views as views
    import attnwidgets.widgets as widgets

    assert set(widgets.__all__) <= set(dir(widgets))
    for name in widgets.__all__:
        value = getattr(widgets, name)
        assert value is not None, name
        assert getattr(value, "__module__", "").startswith("attnwidgets.widgets"), name
    with pytest.raises(AttributeError, match="no attribute 'NoSuchView'"):
        widgets.NoSuchView  # noqa: B018
    names = {v.name for v in views.VIEWS}
    assert set(views.STATES) == names, sorted(set(views.STATES) ^ names)
    assert views.heatmap.HeatmapState is views.STATES["heatmap"]


def test_moved_names_are_in_their_subpackage_and_the_error_says_where_to_look() -> None:
    assert aw.plots.plot_heatmap.__module__ == "attnwidgets.plots.heatmap"
    assert aw.studies.corpus_stats.__module__ == "attnwidgets.studies.corpus"
    assert aw.runner.get_runner.__module__ == "attnwidgets.runner.runner"
    with pytest.raises(AttributeError, match=r"no attribute 'plot_heatmap'.*attnwidgets\.plots"):
        aw.plot_heatmap  # noqa: B018



def test_a_study_function_is_the_function_whatever_was_imported_first() -> None:
    """A study module and a study function of one name would make ``aw.studies.<name>`` the module or the function
    depending on import order; no name is both."""
    import pkgutil

    import attnwidgets.studies as studies

    modules = {m.name for m in pkgutil.iter_modules(studies.__path__)}
    assert not modules & set(studies.__all__), sorted(modules & set(studies.__all__))
